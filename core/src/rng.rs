//! Random variates drawn from any [`rand_core::Rng`].
//!
//! microrl never owns a random number generator: every function that needs
//! randomness takes `&mut R where R: Rng`, so the caller chooses the generator
//! (a hardware TRNG-seeded PRNG on the MCU, a seeded xoshiro on the desktop) and
//! the same seed reproduces the same run bit for bit. The conversions below use
//! only integer operations and libm, so a seeded run gives the same floats on
//! x86-64 and on a Cortex-M4F.

use rand_core::Rng;

use crate::math;

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

    #[test]
    fn fill_normal_handles_odd_lengths() {
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(4);
        let mut out = [f32::NAN; 5];
        fill_normal(&mut rng, &mut out);
        assert!(out.iter().all(|z| z.is_finite()));
    }
}
