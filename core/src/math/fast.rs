//! Fast `f32` approximations of `exp` and `tanh` for MCUs.
//!
//! Both use only `+ − × ÷`, comparisons and bit manipulation, so they give the
//! same bits on x86-64 and on a Cortex-M4F and need no `f64` (which the M4F's
//! FPU lacks). They are always compiled; the `fast-math` feature makes
//! [`crate::math::exp`] and [`crate::math::tanh`] use them.
//!
//! Stated error bounds (checked by the tests at the bottom of this file against
//! an `f64` reference on a dense grid):
//!
//! | function | domain | maximum error |
//! |---|---|---|
//! | [`exp`] | `[-87, 88]` | relative `1.5e-7` (measured `8.1e-8`; libm's `expf`: `7.7e-8`) |
//! | [`tanh`] | all `f32` | absolute `6e-7`, relative `1e-6` (measured `5.0e-7` for both) |

/// `e^x` by Cody–Waite range reduction and a degree-6 minimax polynomial
/// (the coefficients of Cephes' `expf`).
///
/// `x = k·ln2 + r` with `|r| ≤ ln2/2`, `e^x = 2^k · P(r)`.
/// Maximum relative error `1.5e-7` on `[-87, 88]`; returns `+∞` above
/// `88.72284`, `0` below `-103.97` and NaN for NaN.
#[inline]
pub fn exp(x: f32) -> f32 {
    const LOG2E: f32 = core::f32::consts::LOG2_E;
    // ln 2 split into a part exact in few bits and a correction (Cody–Waite).
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let k = super::floor(x * LOG2E + 0.5);
    let r = x - k * LN2_HI - k * LN2_LO;
    let z = r * r;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let y = p * z + r + 1.0;
    // Scale by 2^k in two steps so neither factor over- or underflows:
    // 2^k₁ · 2^(k − k₁), k₁ = ⌊k/2⌋, with k ∈ [−150, 128] on the range
    // kept below.
    let scaled = scale_by_pow2(y, k);
    // The special cases last, as selections: a loop of `exp`s vectorises
    // (the values computed for them above are discarded).
    if x.is_nan() {
        x
    } else if x > 88.722_84 {
        f32::INFINITY
    } else if x < -103.972_08 {
        0.0
    } else {
        scaled
    }
}

/// `y · 2^k₁ · 2^(k − k₁)` with `k₁ = ⌊k/2⌋`, for an integer-valued `k`
/// in `[−150, 128]` (other `k` give unspecified values). On a Cortex-M
/// through `i32` (`k >> 1`); elsewhere in `f32` arithmetic, exact for these
/// integers — the same factors, so the same bits — because a loop over
/// Rust's saturating `f32 → i32` conversion does not vectorise.
#[inline]
fn scale_by_pow2(y: f32, k: f32) -> f32 {
    #[cfg(target_arch = "arm")]
    {
        let k = k as i32;
        let k1 = k >> 1;
        y * pow2i(k1) * pow2i(k - k1)
    }
    #[cfg(not(target_arch = "arm"))]
    {
        let k1 = super::floor(k * 0.5);
        y * pow2f(k1) * pow2f(k - k1)
    }
}

/// `2^k` for `-126 ≤ k ≤ 127`, built from the exponent bits.
#[cfg(any(target_arch = "arm", test))]
#[inline]
fn pow2i(k: i32) -> f32 {
    f32::from_bits(((k + 127) as u32) << 23)
}

/// `2^k` for an integer-valued `-126 ≤ k ≤ 127`, as `pow2i` without the
/// conversion: `k + (2²³ + 127)` is exact and holds `k + 127` in its low
/// mantissa bits, which the shift moves into the exponent field.
#[cfg(not(target_arch = "arm"))]
#[inline]
fn pow2f(k: f32) -> f32 {
    const MAGIC: f32 = 8_388_608.0 + 127.0;
    f32::from_bits((k + MAGIC).to_bits() << 23)
}

/// [`tanh`]'s input clamp `C`: beyond `±C` the result is `±1`.
pub const TANH_CLAMP: f32 = 7.905_311;
/// [`tanh`]'s numerator coefficients `α₀ … α₆` (of `x, x³, …, x¹³`).
pub const TANH_ALPHA: [f32; 7] = [
    4.893_524_6e-3,
    6.372_619_3e-4,
    1.485_722_4e-5,
    5.122_297e-8,
    -8.604_672e-11,
    2.000_188e-13,
    -2.760_768_5e-16,
];
/// [`tanh`]'s denominator coefficients `β₀ … β₃` (of `1, x², x⁴, x⁶`).
pub const TANH_BETA: [f32; 4] = [4.893_525e-3, 2.268_434_6e-3, 1.185_347e-4, 1.198_258_4e-6];

/// `tanh(x)` by a 13/6-degree rational approximation on `[-7.905, 7.905]`
/// (the coefficients used by Eigen's `ptanh_float`), saturating to `±1` beyond.
///
/// Maximum absolute error `6e-7`, maximum relative error `1e-6`, over all of
/// `f32`. Odd symmetry holds exactly. NaN maps to NaN. No branches.
#[inline]
pub fn tanh(x: f32) -> f32 {
    const CLAMP: f32 = TANH_CLAMP;
    const ALPHA: [f32; 7] = TANH_ALPHA;
    const BETA: [f32; 4] = TANH_BETA;
    // Branch-free (NaN passes through `clamp`), so a loop over a vector of
    // pre-activations vectorises.
    let xc = x.clamp(-CLAMP, CLAMP);
    let x2 = xc * xc;
    let mut p = ALPHA[6];
    for &a in ALPHA[..6].iter().rev() {
        p = p * x2 + a;
    }
    let p = p * xc;
    let q = ((BETA[3] * x2 + BETA[2]) * x2 + BETA[1]) * x2 + BETA[0];
    (p / q).clamp(-1.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Evenly spaced points on `[lo, hi]`.
    fn grid(lo: f32, hi: f32, n: usize) -> impl Iterator<Item = f32> {
        (0..=n).map(move |i| lo + (hi - lo) * (i as f32 / n as f32))
    }

    #[test]
    fn exp_relative_error_bound() {
        let mut worst = 0.0f64;
        for x in grid(-87.0, 88.0, 2_000_000) {
            let reference = libm::exp(x as f64);
            let rel = ((exp(x) as f64 - reference) / reference).abs();
            worst = worst.max(rel);
        }
        assert!(worst <= 1.5e-7, "max relative error {worst:e}");
    }

    #[cfg(not(target_arch = "arm"))]
    #[test]
    fn pow2f_is_pow2i_on_the_whole_range() {
        for k in -126..=127 {
            assert_eq!(pow2f(k as f32).to_bits(), pow2i(k).to_bits(), "k = {k}");
        }
    }

    #[test]
    fn scaling_matches_the_integer_form_for_every_reachable_k() {
        for k in -150..=128 {
            let k1 = k >> 1;
            for y in [1.0f32, 1.5, 0.75, 1.999_999_9] {
                let expected = y * pow2i(k1) * pow2i(k - k1);
                assert_eq!(
                    scale_by_pow2(y, k as f32).to_bits(),
                    expected.to_bits(),
                    "k = {k}"
                );
            }
        }
    }

    /// `exp` with the early returns and the `i32` scaling it was written
    /// with first: the reference its bits must keep.
    fn exp_reference(x: f32) -> f32 {
        if x.is_nan() {
            return x;
        }
        if x > 88.722_84 {
            return f32::INFINITY;
        }
        if x < -103.972_08 {
            return 0.0;
        }
        let k = crate::math::floor(x * core::f32::consts::LOG2_E + 0.5);
        let r = x - k * 0.693_359_4 - k * -2.121_944_4e-4;
        let z = r * r;
        let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2)
            * r
            + 1.666_666_5e-1)
            * r
            + 0.5;
        let y = p * z + r + 1.0;
        let k = k as i32;
        let k1 = k >> 1;
        y * pow2i(k1) * pow2i(k - k1)
    }

    #[test]
    fn exp_keeps_the_bits_of_the_integer_scaling() {
        let specials = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            88.722_84,
            -103.972_08,
            0.0,
            -0.0,
        ];
        for x in grid(-110.0, 95.0, 4_000_000).chain(specials) {
            let (got, want) = (exp(x), exp_reference(x));
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "x = {x}"
            );
        }
    }

    #[test]
    fn exp_special_values() {
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(100.0), f32::INFINITY);
        assert_eq!(exp(-200.0), 0.0);
        assert!(exp(f32::NAN).is_nan());
        // Near the overflow and underflow edges the two-step scaling stays finite.
        assert!(exp(88.7).is_finite());
        assert!(exp(-100.0) > 0.0);
    }

    #[test]
    fn tanh_error_bound() {
        let (mut worst_abs, mut worst_rel) = (0.0f64, 0.0f64);
        for x in grid(-12.0, 12.0, 2_000_000).chain(grid(-1e-3, 1e-3, 100_000)) {
            let reference = libm::tanh(x as f64);
            let err = (tanh(x) as f64 - reference).abs();
            worst_abs = worst_abs.max(err);
            if reference != 0.0 {
                worst_rel = worst_rel.max(err / reference.abs());
            }
        }
        assert!(worst_abs <= 6e-7, "max absolute error {worst_abs:e}");
        assert!(worst_rel <= 1e-6, "max relative error {worst_rel:e}");
    }

    #[test]
    fn tanh_special_values() {
        assert_eq!(tanh(0.0), 0.0);
        assert_eq!(tanh(1e30), 1.0);
        assert_eq!(tanh(-1e30), -1.0);
        assert_eq!(tanh(f32::INFINITY), 1.0);
        assert!(tanh(f32::NAN).is_nan());
        for x in grid(-9.0, 9.0, 1000) {
            assert_eq!(tanh(-x), -tanh(x));
        }
    }
}
