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
//! `ε_t = Σ_k w_k z_k(t)` with `Σ_k w_k² = 1` (so `ε_t ~ 𝒩(0, 1)` over
//! keys). Octave `k`'s power `w_k²` lies, at a density of about `w_k²·L_k`,
//! below the frequency `1/(2L_k)` and falls off above it; so the spectrum at
//! `f ≈ 1/(2L_j)` is that of the octaves `k ≤ j`, `S_j ≈ Σ_{k≤j} w_k² L_k`.
//! Asking `S_j ∝ L_j^β` telescopes to the weights
//! `w_0² ∝ 1`, `w_k² ∝ (L_k^β − L_{k−1}^β)/L_k = 2^{k(β−1)}·(1 − 2^{−β})`:
//! `S(f) ∝ f^{−β}` from `1/(2L_{K−1})` up to the step rate, exactly white
//! (`w_k = 0` for `k ≥ 1`) at `β = 0` and equal weights but the first
//! (`½`) for pink noise, `β = 1`. Measured (tests below): the lag-1
//! correlation is 0.32 at `β = 0.5` and 0.79 at `β = 1`, about those of a
//! true `1/f^β` process over 2 048 steps.
//!
//! Cost: `K × ACT` Box–Muller draws a step (12 for one actuator over a
//! 2 048-step rollout), against one per two dimensions for white noise; no
//! memory beyond the rollout's key and three weights.
//!
//! Every value is a function of a key drawn once per rollout from the
//! caller's RNG, the environment copy, the step and the dimension (a
//! SplitMix64 hash, then Box–Muller, through libm), so the same seed gives
//! the same noise on every target.

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
    /// `w_0`, the white octave's weight.
    w0: f32,
    /// `w_1`; octave `k + 1`'s weight is `w_k·ratio` from there on.
    w1: f32,
    /// `√(2^{β−1})`, the weight ratio of consecutive octaves after the first.
    ratio: f32,
}

impl ColouredNoise {
    /// No octave: [`fill`](Self::fill) writes zeros. The placeholder before
    /// the first rollout.
    pub const OFF: Self = Self {
        key: 0,
        octaves: 0,
        w0: 0.0,
        w1: 0.0,
        ratio: 0.0,
    };

    /// The noise of a rollout of `len` steps per environment copy with
    /// spectrum `1/f^beta`: octaves of `1, 2, 4, …` steps up to the first
    /// at least `len` long (`⌈log₂ len⌉ + 1` of them, at most
    /// [`MAX_OCTAVES`]), and a key drawn from `rng` (one `u64`).
    pub fn new<R: rand_core::Rng + ?Sized>(beta: f32, len: u32, rng: &mut R) -> Self {
        let octaves =
            (u32::BITS - len.saturating_sub(1).leading_zeros() + 1).min(MAX_OCTAVES as u32);
        // Unnormalised powers (module docs): `p_0 = 1`,
        // `p_k = 2^{k(β−1)}·(1 − 2^{−β})`, a geometric series from `k = 1`
        // (libm's `powf` under every maths backend: the same bits everywhere).
        let r = math::powf(2.0, beta - 1.0);
        let p1 = r * (1.0 - math::powf(2.0, -beta));
        let (mut total, mut p) = (1.0, p1);
        for _ in 1..octaves {
            total += p;
            p *= r;
        }
        Self {
            key: rng.next_u64(),
            octaves,
            w0: math::sqrt(1.0 / total),
            w1: math::sqrt(p1 / total),
            ratio: math::sqrt(r),
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
        let mut w = self.w0;
        for k in 0..self.octaves {
            let octave = mix(stream.wrapping_add(u64::from(k)));
            // A random phase in 0..2^k, so octaves' block edges differ.
            let phase = (octave as u32) & ((1u32 << k) - 1);
            let block = (u64::from(t) + u64::from(phase)) >> k;
            let held = mix(octave ^ mix(block.wrapping_add(0x5851_f42d_4c95_7f2d)));
            for (d, e) in eps.iter_mut().enumerate() {
                *e += w * normal(mix(held.wrapping_add(d as u64)));
            }
            w = if k == 0 { self.w1 } else { w * self.ratio };
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
    const PINNED_HASH: u64 = 0xa3cb_0b34_b6cb_12c6;

    fn noise(beta: f32, len: u32, seed: u64) -> ColouredNoise {
        ColouredNoise::new(
            beta,
            len,
            &mut crate::rng::Xoshiro128pp::seed_from_u64(seed),
        )
    }

    /// The weights [`ColouredNoise::fill`] applies, octave by octave.
    fn weights(n: &ColouredNoise) -> std::vec::Vec<f32> {
        let mut w = n.w0;
        (0..n.octaves)
            .map(|k| {
                let this = w;
                w = if k == 0 { n.w1 } else { w * n.ratio };
                this
            })
            .collect()
    }

    /// `⌈log₂ len⌉ + 1` octaves, the last at least `len` long; weights of
    /// unit total power in the module docs' ratios: `w_1²/w_0² =
    /// 2^{β−1}(1 − 2^{−β})`, then `2^{β−1}` an octave (equal for pink
    /// noise, `w_0² = 2·w_1²`), and nothing past the white octave as β → 0.
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
        for beta in [0.25f32, 0.5, 1.0, 1.5, 2.0] {
            let w = weights(&noise(beta, 2048, 0));
            assert_eq!(w.len(), 12);
            let power: f32 = w.iter().map(|w| w * w).sum();
            assert!((power - 1.0).abs() < 1e-5, "β {beta}: Σw² = {power}");
            let r = 2f32.powf(beta - 1.0);
            let first = (w[1] / w[0]).powi(2);
            assert!(
                (first - r * (1.0 - 2f32.powf(-beta))).abs() < 1e-5,
                "β {beta}"
            );
            for k in 1..11 {
                assert!(
                    ((w[k + 1] / w[k]).powi(2) - r).abs() < 1e-5,
                    "β {beta}, k {k}"
                );
            }
        }
        let pink = weights(&noise(1.0, 64, 0));
        assert!(
            pink[1..]
                .iter()
                .all(|&w| (w * w * 2.0 - pink[0] * pink[0]).abs() < 1e-6)
        );
        let nearly_white = weights(&noise(1e-4, 2048, 0));
        assert!(
            nearly_white[1..].iter().all(|&w| w < 1e-2),
            "{nearly_white:?}"
        );
        let mut eps = [1.0; 3];
        ColouredNoise::OFF.fill(0, 0, &mut eps);
        assert_eq!(eps, [0.0; 3]);
    }

    /// Standard normal marginals (mean 0, variance 1 over many keys), and the
    /// `1/f^β` spectrum's signature in the time domain: the variance of a
    /// `T`-step mean scales as `T^{β−1}` (white noise: `1/T`), so from 16 to
    /// 256 steps it falls by `16^{β−1}` — 1/16 for white, 1/4 at `β = 0.5`,
    /// measured 0.064 and 0.226; and the lag-1 correlation of a true `1/f^β`
    /// process over 2 048 steps (about 0.01, 0.36 and 0.78 at β = 0.01, 0.5
    /// and 1; measured 0.004, 0.316 and 0.790).
    #[test]
    fn marginals_are_standard_and_the_spectrum_is_coloured() {
        // Over 400 rollouts of 2 048 steps, 1 dimension: mean, variance,
        // lag-1 correlation, variance of 16- and of 256-step means.
        let stats = |beta: f32| {
            let (mut sum, mut sq, mut lag1, mut n) = (0.0f64, 0.0, 0.0, 0.0);
            let mut means = [(16usize, 0.0f64, 0.0f64), (256, 0.0, 0.0)];
            for seed in 0..400 {
                let noise = noise(beta, 2048, seed);
                let mut series = std::vec::Vec::with_capacity(2048);
                for t in 0..2048u32 {
                    let mut e = [0.0f32];
                    noise.fill((seed % 3) as u32, t, &mut e);
                    series.push(f64::from(e[0]));
                }
                for (t, &e) in series.iter().enumerate() {
                    sum += e;
                    sq += e * e;
                    if t > 0 {
                        lag1 += e * series[t - 1];
                    }
                    n += 1.0;
                }
                for (len, sum_sq, count) in &mut means {
                    for window in series.chunks_exact(*len) {
                        *sum_sq += (window.iter().sum::<f64>() / *len as f64).powi(2);
                        *count += 1.0;
                    }
                }
            }
            let [short, long] = means.map(|(_, sum_sq, count)| sum_sq / count);
            (sum / n, sq / n, lag1 / n, long / short)
        };
        for (beta, lag1_range) in [(0.01, 0.0..0.05), (0.5, 0.2..0.45), (1.0, 0.65..0.9)] {
            let (mean, var, lag1, fall) = stats(beta);
            assert!(mean.abs() < 0.03, "β {beta}: mean {mean}");
            assert!((var - 1.0).abs() < 0.03, "β {beta}: variance {var}");
            assert!(
                lag1_range.contains(&lag1),
                "β {beta}: lag-1 correlation {lag1}"
            );
            // Pink noise over 12 octaves: a 256-step mean keeps the top 4,
            // a 16-step one the top 8, so it falls by about ½ (1 only over
            // an unbounded range of octaves).
            let expected = if beta < 1.0 {
                16f64.powf(f64::from(beta) - 1.0)
            } else {
                0.5
            };
            assert!(
                (fall / expected - 1.0).abs() < 0.25,
                "β {beta}: {fall} against {expected}"
            );
        }
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
