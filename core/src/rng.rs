//! Random variates drawn from any [`rand_core::Rng`].
//!
//! microrl never owns a random number generator: every function that needs
//! randomness takes `&mut R where R: Rng`, so the caller chooses the generator
//! (a hardware TRNG-seeded PRNG on the MCU, a seeded xoshiro on the desktop) and
//! the same seed reproduces the same run bit for bit. The conversions below use
//! only integer operations and libm, so a seeded run gives the same floats on
//! x86-64 and on a Cortex-M4F.
//!
//! For checkpoints ([`checkpoint`](crate::checkpoint)) a generator must also
//! expose its state: [`RngState`]. [`Xoshiro128pp`] is xoshiro128++ with that
//! trait — the same stream, bit for bit, as `rand_xoshiro::Xoshiro128PlusPlus`
//! for the same seed (`seed_from_u64` through SplitMix64 included), so a run
//! seeded with either draws the same numbers, and only this one can be saved
//! and resumed mid-stream.

use core::convert::Infallible;

use rand_core::{Rng, SeedableRng, TryRng};

use crate::error::Error;
use crate::math;

/// A generator whose complete state can be saved and restored (what a
/// [`checkpoint`](crate::checkpoint) needs of the training loop's RNG streams).
pub trait RngState: Sized {
    /// Number of `u32` words of state (at most
    /// [`MAX_RNG_WORDS`](crate::checkpoint::MAX_RNG_WORDS)).
    const WORDS: usize;
    /// Writes the state into `out` (`out.len() == WORDS`).
    fn save_state(&self, out: &mut [u32]);
    /// The generator in state `s` (`s.len() == WORDS`).
    ///
    /// # Errors
    /// [`Error::Truncated`] for a wrong length, [`Error::InvalidState`] for a
    /// state the generator cannot be in (e.g. all-zero for xoshiro).
    fn from_state(s: &[u32]) -> Result<Self, Error>;
}

/// xoshiro128++ (Blackman & Vigna), bit-identical to
/// `rand_xoshiro::Xoshiro128PlusPlus` 0.8 — `from_seed` (with its all-zero
/// seed fallback), `seed_from_u64` (SplitMix64), `next_u32`, `next_u64` (two
/// `u32`s, low first) and `fill_bytes` — plus [`RngState`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Xoshiro128pp {
    s: [u32; 4],
}

impl Xoshiro128pp {
    /// The first 16 bytes of SplitMix64(0)'s output: what an all-zero seed
    /// is replaced with (as rand_xoshiro does).
    const ZERO_SEED_FALLBACK: [u8; 16] = [
        0xaf, 0xcd, 0x1d, 0x7b, 0x39, 0xa8, 0x20, 0xe2, 0xf4, 0x65, 0xb9, 0xa1, 0x6a, 0x9e, 0x78,
        0x6e,
    ];

    /// The generator [`from_seed`](SeedableRng::from_seed)`([0; 16])` gives
    /// (the fixed non-zero fallback state): a `const` placeholder for
    /// storage that is seeded later, e.g. in a `static`.
    pub const UNSEEDED: Self = {
        let b = Self::ZERO_SEED_FALLBACK;
        Self {
            s: [
                u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
                u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
                u32::from_le_bytes([b[12], b[13], b[14], b[15]]),
            ],
        }
    };

    #[inline]
    fn next(&mut self) -> u32 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(7).wrapping_add(s[0]);
        let t = s[1] << 9;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(11);
        result
    }
}

impl TryRng for Xoshiro128pp {
    type Error = Infallible;

    #[inline]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(self.next())
    }

    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let low = u64::from(self.next());
        let high = u64::from(self.next());
        Ok((high << 32) | low)
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        let mut chunks = dst.chunks_exact_mut(4);
        for chunk in &mut chunks {
            chunk.copy_from_slice(&self.next().to_le_bytes());
        }
        let rem = chunks.into_remainder();
        if !rem.is_empty() {
            let word = self.next().to_le_bytes();
            rem.copy_from_slice(&word[..rem.len()]);
        }
        Ok(())
    }
}

impl SeedableRng for Xoshiro128pp {
    type Seed = [u8; 16];

    /// The state read from `seed` as four little-endian `u32`s; an all-zero
    /// seed (a state xoshiro never leaves) is replaced by a fixed non-zero one.
    fn from_seed(seed: [u8; 16]) -> Self {
        let seed = if seed.iter().any(|&b| b != 0) {
            seed
        } else {
            Self::ZERO_SEED_FALLBACK
        };
        let mut s = [0u32; 4];
        for (w, chunk) in s.iter_mut().zip(seed.chunks_exact(4)) {
            *w = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        }
        Self { s }
    }

    /// Seeds from two SplitMix64 outputs (little-endian), as rand_xoshiro does.
    fn seed_from_u64(seed: u64) -> Self {
        let mut x = seed;
        let mut splitmix = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&splitmix().to_le_bytes());
        bytes[8..].copy_from_slice(&splitmix().to_le_bytes());
        Self::from_seed(bytes)
    }
}

impl RngState for Xoshiro128pp {
    const WORDS: usize = 4;

    fn save_state(&self, out: &mut [u32]) {
        for (o, &s) in out.iter_mut().zip(&self.s) {
            *o = s;
        }
    }

    fn from_state(s: &[u32]) -> Result<Self, Error> {
        let s: [u32; 4] = s.try_into().map_err(|_| Error::Truncated)?;
        if s == [0; 4] {
            return Err(Error::InvalidState {
                what: "xoshiro128++ state is all-zero",
            });
        }
        Ok(Self { s })
    }
}

/// Uniform `f32` in `[0, 1)`, with 24 random bits (every value a multiple of 2⁻²⁴).
#[inline]
pub fn uniform<R: Rng + ?Sized>(rng: &mut R) -> f32 {
    (rng.next_u32() >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// Uniform `f32` in `[low, high)`.
#[inline]
pub fn uniform_range<R: Rng + ?Sized>(rng: &mut R, low: f32, high: f32) -> f32 {
    low + (high - low) * uniform(rng)
}

/// Two independent standard normal variates by the Box–Muller transform.
///
/// `u1 ∈ (0, 1]` (so `ln u1` is finite), `u2 ∈ [0, 1)`:
/// `z0 = √(−2 ln u1)·cos(2π u2)`, `z1 = √(−2 ln u1)·sin(2π u2)`.
#[inline]
pub fn normal_pair<R: Rng + ?Sized>(rng: &mut R) -> (f32, f32) {
    let u1 = 1.0 - uniform(rng);
    let u2 = uniform(rng);
    let radius = math::sqrt(-2.0 * math::ln(u1));
    let angle = core::f32::consts::TAU * u2;
    (radius * math::cos(angle), radius * math::sin(angle))
}

/// Fills `out` with independent standard normal variates (one Box–Muller pair
/// per two elements; an odd last element discards the pair's second value).
pub fn fill_normal<R: Rng + ?Sized>(rng: &mut R, out: &mut [f32]) {
    let mut chunks = out.chunks_exact_mut(2);
    for pair in &mut chunks {
        let (z0, z1) = normal_pair(rng);
        pair[0] = z0;
        pair[1] = z1;
    }
    if let [last] = chunks.into_remainder() {
        *last = normal_pair(rng).0;
    }
}

/// Uniform integer in `0..n` without modulo bias (Lemire's multiply-and-reject).
/// Returns 0 when `n == 0`.
#[inline]
pub fn below<R: Rng + ?Sized>(rng: &mut R, n: u32) -> u32 {
    if n == 0 {
        return 0;
    }
    let threshold = n.wrapping_neg() % n;
    loop {
        let m = u64::from(rng.next_u32()) * u64::from(n);
        if (m as u32) >= threshold {
            return (m >> 32) as u32;
        }
    }
}

/// In-place Fisher–Yates shuffle.
pub fn shuffle<T, R: Rng + ?Sized>(rng: &mut R, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        let j = below(rng, (i + 1) as u32) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro128PlusPlus;

    #[test]
    fn uniform_is_in_range_and_centred() {
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(1);
        let n = 100_000;
        let mut sum = 0.0f64;
        for _ in 0..n {
            let u = uniform(&mut rng);
            assert!((0.0..1.0).contains(&u));
            sum += u as f64;
        }
        assert!((sum / n as f64 - 0.5).abs() < 5e-3);
    }

    #[test]
    fn below_is_unbiased_and_bounded() {
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(2);
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            counts[below(&mut rng, 6) as usize] += 1;
        }
        for c in counts {
            assert!((c as i32 - 10_000).abs() < 400, "{counts:?}");
        }
        assert_eq!(below(&mut rng, 0), 0);
        assert_eq!(below(&mut rng, 1), 0);
    }

    #[test]
    fn shuffle_is_a_seeded_permutation() {
        let mut a = [0u16; 64];
        for (i, x) in a.iter_mut().enumerate() {
            *x = i as u16;
        }
        let mut b = a;
        shuffle(&mut Xoshiro128PlusPlus::seed_from_u64(3), &mut a);
        shuffle(&mut Xoshiro128PlusPlus::seed_from_u64(3), &mut b);
        assert_eq!(a, b, "same seed, same permutation");
        let mut sorted = a;
        sorted.sort_unstable();
        assert!(sorted.iter().enumerate().all(|(i, &x)| x as usize == i));
        assert_ne!(&a[..], &sorted[..]);
    }

    /// `Xoshiro128pp` draws what `rand_xoshiro::Xoshiro128PlusPlus` draws,
    /// for every seeding route and every draw width, and survives a state
    /// round trip mid-stream.
    #[test]
    fn xoshiro128pp_matches_rand_xoshiro() {
        use rand_core::Rng as _;
        let seeds = (0..200u64)
            .map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ k)
            .chain([0, 1, u64::MAX, 0x5eed_e7a1_0000_0000]);
        for seed in seeds {
            let mut ours = Xoshiro128pp::seed_from_u64(seed);
            let mut theirs = Xoshiro128PlusPlus::seed_from_u64(seed);
            for i in 0..300 {
                match i % 3 {
                    0 => assert_eq!(ours.next_u32(), theirs.next_u32(), "seed {seed}"),
                    1 => assert_eq!(ours.next_u64(), theirs.next_u64(), "seed {seed}"),
                    _ => {
                        let (mut a, mut b) = ([0u8; 7], [0u8; 7]);
                        ours.fill_bytes(&mut a);
                        theirs.fill_bytes(&mut b);
                        assert_eq!(a, b, "seed {seed}");
                    }
                }
            }
            // Saved and restored mid-stream, the stream continues unchanged.
            let mut state = [0u32; 4];
            ours.save_state(&mut state);
            let mut resumed = Xoshiro128pp::from_state(&state).unwrap();
            for _ in 0..50 {
                let x = theirs.next_u32();
                assert_eq!(resumed.next_u32(), x);
                assert_eq!(ours.next_u32(), x);
            }
        }
        for seed in [[0u8; 16], [1; 16], core::array::from_fn(|i| i as u8)] {
            let mut ours = Xoshiro128pp::from_seed(seed);
            let mut theirs = Xoshiro128PlusPlus::from_seed(seed);
            for _ in 0..100 {
                assert_eq!(ours.next_u32(), theirs.next_u32());
            }
        }
        assert!(matches!(
            Xoshiro128pp::from_state(&[0; 4]),
            Err(Error::InvalidState { .. })
        ));
        assert_eq!(Xoshiro128pp::from_state(&[1; 3]), Err(Error::Truncated));
    }

    #[test]
    fn fill_normal_handles_odd_lengths() {
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(4);
        let mut out = [f32::NAN; 5];
        fill_normal(&mut rng, &mut out);
        assert!(out.iter().all(|z| z.is_finite()));
    }
}
