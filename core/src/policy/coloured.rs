//! Exploration noise correlated in time: "coloured" standard-normal draws
//! whose power spectrum falls as `1/f^β` (Eberhard et al. 2023, *Pink noise
//! is all you need*; for PPO, Hollenstein et al. 2024, *Colored noise in PPO:
//! improved exploration and performance through correlated action sampling*,
//! who recommend `β = 0.5` on-policy).
//!
//! A Gaussian actor explores with `u = μ + σ ⊙ ε`. With independent draws
//! `ε_t` (white noise, `β = 0`) consecutive commands cancel: on a plant that
//! integrates the command (a car in a valley, a motor's position) the noise
//! moves the state by `O(√T)` over `T` steps and a policy can fail to find a
//! reward that needs seconds of pushing one way. Coloured noise keeps every
//! `ε_t ~ 𝒩(0, 1)` — the same marginal law, so the log-probabilities PPO
//! stores and its ratio are computed as before — but with more of its power
//! at low frequencies, so the commands wander for longer one way.
//!
//! **Construction** (stateless, so no per-copy memory and nothing in a
//! checkpoint): a sum of `K` octaves of sample-and-hold Gaussian noise, the
//! idea of the Voss–McCartney pink-noise generator. Octave `k` holds one
//! `𝒩(0, 1)` value for blocks of `L_k = 2^k` steps (its phase shifted by a
//! random offset, so the blocks of different octaves do not line up), and
//! `ε_t = Σ_k w_k z_k(t)` with `Σ_k w_k² = 1` (so `ε_t ~ 𝒩(0, 1)` exactly).
//! A held block of length `L` has a spectrum flat below `1/L` and falling as
//! `1/f²` above it; weighting the octaves by `w_k² ∝ L_k^{β−1}` sums to
//! `S(f) ∝ f^{−β}` between `1/L_{K−1}` and the step rate (the integral over
//! `ln L` of `L^β/(1 + (fL)²)` scales as `f^{−β}` for `0 < β < 2`).
//!
//! Every value is a function of a key drawn once per rollout from the
//! caller's RNG, the environment copy, the step and the dimension (a
//! SplitMix64 hash, then Box–Muller), so the same seed gives the same noise
//! on every target, and a rollout's noise does not depend on how it is cut
//! into calls.

use crate::math;

/// Octaves at most (blocks up to `2^31` steps).
pub const MAX_OCTAVES: usize = 32;

/// The exploration noise of one rollout: its key and octave weights.
///
/// ```
/// use microrl::policy::ColouredNoise;
/// # use rand_core::SeedableRng;
/// # let mut rng = rand_xoshiro::Xoshiro128PlusPlus::seed_from_u64(0);
/// // β = 0.5 over a 2 048-step rollout: octaves of 1, 2, …, 2 048 steps.
/// let noise = ColouredNoise::new(0.5, 2048, &mut rng);
/// assert_eq!(noise.octaves(), 12);
/// let (mut eps_t, mut eps_next) = ([0.0f32; 2], [0.0f32; 2]);
/// noise.fill(0, 10, &mut eps_t); // copy 0, step 10, two action dimensions
/// noise.fill(0, 11, &mut eps_next);
/// assert_ne!(eps_t, eps_next);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColouredNoise {
    key: u64,
    octaves: u32,
    /// `w_k`, normalised so that `Σ w_k² = 1`.
    weights: [f32; MAX_OCTAVES],
}

impl ColouredNoise {
    /// No octave: [`fill`](Self::fill) writes zeros. The placeholder before
    /// the first rollout.
    pub const OFF: Self = Self {
        key: 0,
        octaves: 0,
        weights: [0.0; MAX_OCTAVES],
    };

    /// The noise of a rollout of `len` steps per environment copy with
    /// spectrum `1/f^beta`: octaves of `1, 2, 4, …` steps up to the first
    /// at least `len` long (`⌈log₂ len⌉ + 1` of them, at most
    /// [`MAX_OCTAVES`]), and a key drawn from `rng` (one `u64`).
    pub fn new<R: rand_core::Rng + ?Sized>(beta: f32, len: u32, rng: &mut R) -> Self {
        let octaves =
            (u32::BITS - len.saturating_sub(1).leading_zeros() + 1).min(MAX_OCTAVES as u32);
        let mut weights = [0.0; MAX_OCTAVES];
        let mut total = 0.0;
        for (k, w) in weights.iter_mut().take(octaves as usize).enumerate() {
            // w_k² ∝ L_k^{β−1} = 2^{k(β−1)} (libm's `powf` under every
            // maths backend, so the noise has the same bits everywhere).
            *w = math::powf(2.0, k as f32 * (beta - 1.0));
            total += *w;
        }
        for w in &mut weights {
            *w = math::sqrt(*w / total);
        }
        Self {
            key: rng.next_u64(),
            octaves,
            weights,
        }
    }

    /// The number of octaves.
    pub fn octaves(&self) -> u32 {
        self.octaves
    }

    /// Writes `ε_t` of environment copy `copy` at step `t` of the rollout,
    /// one value per element of `eps` (each `𝒩(0, 1)`, independent across
    /// dimensions and copies).
    pub fn fill(&self, copy: u32, t: u32, eps: &mut [f32]) {
        eps.fill(0.0);
        let stream = mix(self.key ^ mix(u64::from(copy)));
        for (k, &w) in self.weights.iter().take(self.octaves as usize).enumerate() {
            let octave = mix(stream.wrapping_add(k as u64));
            // A random phase in 0..2^k, so octaves' block edges differ.
            let phase = (octave as u32) & ((1u32 << k) - 1);
            let block = (u64::from(t) + u64::from(phase)) >> k;
            let held = mix(octave ^ mix(block.wrapping_add(0x5851_f42d_4c95_7f2d)));
            for (d, e) in eps.iter_mut().enumerate() {
                *e += w * normal(mix(held.wrapping_add(d as u64)));
            }
        }
    }
}

/// The SplitMix64 finaliser (Steele et al. 2014): a bijective 64-bit mix,
/// after adding the golden-ratio increment.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One standard normal from 64 random bits: Box–Muller on two 24-bit
/// uniforms, `u1 ∈ (0, 1]`, `u2 ∈ [0, 1)`, as [`rng::normal_pair`](crate::rng::normal_pair).
fn normal(bits: u64) -> f32 {
    let uniform = |b: u32| (b >> 8) as f32 * (1.0 / 16_777_216.0);
    let u1 = 1.0 - uniform(bits as u32);
    let u2 = uniform((bits >> 32) as u32);
    math::sqrt(-2.0 * math::ln(u1)) * math::cos(core::f32::consts::TAU * u2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;

    /// [`the_noise_is_pinned_bit_for_bit`]'s hash.
    const PINNED_HASH: u64 = 0x30f8_0b0b_4ef4_52b1;

    fn noise(beta: f32, len: u32, seed: u64) -> ColouredNoise {
        ColouredNoise::new(
            beta,
            len,
            &mut crate::rng::Xoshiro128pp::seed_from_u64(seed),
        )
    }

    /// `⌈log₂ len⌉ + 1` octaves, the last at least `len` long; weights of
    /// unit total power, falling with the octave for β < 1, equal for β = 1.
    #[test]
    fn octaves_cover_the_rollout_with_unit_power() {
        for (len, octaves) in [
            (1, 1),
            (2, 2),
            (3, 3),
            (4, 3),
            (5, 4),
            (2048, 12),
            (2049, 13),
        ] {
            assert_eq!(noise(0.5, len, 0).octaves(), octaves, "len {len}");
        }
        assert_eq!(noise(0.5, u32::MAX, 0).octaves(), 32);
        for beta in [0.25, 0.5, 1.0, 1.5] {
            let n = noise(beta, 2048, 0);
            let power: f32 = n.weights.iter().map(|w| w * w).sum();
            assert!((power - 1.0).abs() < 1e-5, "β {beta}: Σw² = {power}");
            let w = &n.weights[..12];
            let ratio = (w[1] / w[0]).powi(2);
            assert!((ratio - 2f32.powf(beta - 1.0)).abs() < 1e-5, "β {beta}");
            assert!(w.windows(2).all(|p| p[1] <= p[0] * 1.000_001 || beta > 1.0));
        }
        assert!(noise(0.5, 8, 0).weights[4..].iter().all(|&w| w == 0.0));
        let mut eps = [1.0; 3];
        ColouredNoise::OFF.fill(0, 0, &mut eps);
        assert_eq!(eps, [0.0; 3]);
    }

    /// Standard normal marginals (mean 0, variance 1 over many keys), and a
    /// spectrum that grows towards low frequencies with β: the variance of a
    /// window's mean falls as `T^{β−1}` (white noise: `1/T`).
    #[test]
    fn marginals_are_standard_and_the_spectrum_is_coloured() {
        // Sample statistics over 400 rollouts of 2 048 steps, 1 dimension.
        let stats = |beta: f32| {
            let (mut sum, mut sq, mut window_sq, mut lag1, mut n) = (0.0f64, 0.0, 0.0, 0.0, 0.0);
            let mut windows = 0.0;
            for seed in 0..400 {
                let noise = noise(beta, 2048, seed);
                let mut prev = 0.0f64;
                let mut window = 0.0f64;
                for t in 0..2048u32 {
                    let mut e = [0.0f32];
                    noise.fill((seed % 3) as u32, t, &mut e);
                    let e = f64::from(e[0]);
                    sum += e;
                    sq += e * e;
                    if t > 0 {
                        lag1 += e * prev;
                    }
                    prev = e;
                    n += 1.0;
                    window += e;
                    if t % 256 == 255 {
                        window_sq += (window / 256.0).powi(2);
                        windows += 1.0;
                        window = 0.0;
                    }
                }
            }
            (sum / n, sq / n, lag1 / n, window_sq / windows)
        };
        let mut last_window = 0.0;
        for beta in [0.5, 1.0] {
            let (mean, var, lag1, window_var) = stats(beta);
            assert!(mean.abs() < 0.03, "β {beta}: mean {mean}");
            assert!((var - 1.0).abs() < 0.03, "β {beta}: variance {var}");
            // Correlated: white noise has lag-1 correlation 0 and a
            // 256-step mean of variance 1/256 ≈ 0.0039.
            assert!(lag1 > 0.3, "β {beta}: lag-1 correlation {lag1}");
            assert!(
                window_var > 10.0 / 256.0,
                "β {beta}: window variance {window_var}"
            );
            assert!(
                window_var > last_window,
                "redder noise, more low-frequency power"
            );
            last_window = window_var;
        }
        // 1/f^β: the window variance scales as T^{β−1}; for pink (β = 1)
        // it hardly falls with the window.
        let (_, _, _, pink) = stats(1.0);
        assert!(pink > 0.1, "pink window variance {pink}");
    }

    /// The noise is a fixed function of its key, copy, step and dimension:
    /// these bits, on every target (`f32` Box–Muller through libm).
    #[test]
    fn the_noise_is_pinned_bit_for_bit() {
        let n = noise(0.5, 64, 1);
        let mut hash = 0u64;
        for copy in 0..3 {
            for t in 0..70 {
                let mut e = [0.0f32; 2];
                n.fill(copy, t, &mut e);
                for x in e {
                    hash = hash.rotate_left(5) ^ u64::from(x.to_bits());
                }
            }
        }
        assert_eq!(hash, PINNED_HASH, "{hash:#x}");
    }

    /// Copies, dimensions and keys are independent streams; the same key,
    /// copy and step give the same value.
    #[test]
    fn streams_are_independent_and_reproducible() {
        let a = noise(0.5, 256, 7);
        let b = noise(0.5, 256, 8);
        let draw = |n: &ColouredNoise, copy, t| {
            let mut e = [0.0f32; 2];
            n.fill(copy, t, &mut e);
            e
        };
        assert_eq!(draw(&a, 0, 5), draw(&noise(0.5, 256, 7), 0, 5));
        assert_ne!(draw(&a, 0, 5), draw(&b, 0, 5));
        assert_ne!(draw(&a, 0, 5), draw(&a, 1, 5));
        let e = draw(&a, 0, 5);
        assert_ne!(e[0], e[1]);
        // Cross-correlation of two copies (and of two dimensions) ≈ 0.
        let (mut copies, mut dims) = (0.0f64, 0.0f64);
        for t in 0..20_000u32 {
            let (x, y) = (draw(&a, 0, t), draw(&a, 1, t));
            copies += f64::from(x[0]) * f64::from(y[0]);
            dims += f64::from(x[0]) * f64::from(x[1]);
        }
        // Long-range correlation makes a 20 000-step mean noisy; 0.2 is
        // far from the 1.0 of a shared stream.
        assert!((copies / 20_000.0).abs() < 0.2, "copies {copies}");
        assert!((dims / 20_000.0).abs() < 0.2, "dims {dims}");
    }
}
