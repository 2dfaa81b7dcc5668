//! The `micromath` tier: the coarsest and smallest `exp`/`tanh`, for running
//! an exported policy on an MCU without an FPU (Cortex-M0/M0+), where every
//! `f32` operation is a software routine.
//!
//! [`exp`] is `micromath`'s `F32Ext::exp`: `x·log2(e)` split into integer and
//! fraction, a degree-4 Taylor polynomial of `e^(fraction·ln 2)`, the
//! integer written into the exponent bits. `micromath` has no `tanh`, so
//! [`tanh`] is built on that `exp`: `tanh|x| = 1 − 2/(e^{2|x|} + 1)`, the sign
//! restored (odd symmetry exact), `x` itself below `|x| < 2^-12` (where
//! `tanh x = x` to `f32` precision but the formula cancels) and `±1` beyond
//! `|x| > 9`. Both use only `+ − × ÷`, comparisons and bit manipulation: the
//! same bits on every target, no fused multiply-add.
//!
//! Measured against libm over a dense grid (the tests below assert these
//! bounds; `cargo test -p microrl --features micromath math::micro --
//! --nocapture` prints the figures):
//!
//! | function | domain | maximum error | [`super::fast`], for comparison |
//! |---|---|---|---|
//! | [`exp`] | `[-87, 88]` (the same on `[-20, 0]`, softmax's range) | relative `2.4e-3` | `8e-8` |
//! | [`tanh`] | all `f32` | absolute `3.3e-4` (relative `1.0e-3` where `|tanh| ≥ 0.1`) | `5e-7` |
//!
//! Enough for **inference** — a network's hidden activations move by at most
//! `3.3e-4`, and deterministic actions hardly change (`docs/design.md`,
//! Cargo features, has the evaluation returns) — and **not** for
//! training: the gradient checks compare backward passes with finite
//! differences to `1e-3`, and the desktop/MCU bit identity of training
//! assumes the libm or fast-math tier on both sides.

use micromath::F32Ext;

/// `e^x` by `micromath` (relative error ≤ `2.5e-3` on `[-87, 88]`); NaN
/// maps to NaN, `+∞` above about 88.7, `0` below about −88.
#[inline]
pub fn exp(x: f32) -> f32 {
    if x.is_nan() {
        return x;
    }
    F32Ext::exp(x)
}

/// `tanh(x)` from `micromath`'s `exp` (absolute error ≤ `4e-4`); odd,
/// saturating to `±1` beyond `|x| > 9`, NaN maps to NaN.
#[inline]
pub fn tanh(x: f32) -> f32 {
    /// Beyond this `1 − tanh|x| < 3e-8`: `±1` in `f32`.
    const SATURATE: f32 = 9.0;
    /// Below this `tanh x = x` in `f32` (the cubic term is under half an ulp).
    const LINEAR: f32 = 1.0 / 4096.0;
    let a = x.abs();
    if a.is_nan() || a < LINEAR {
        return x;
    }
    let t = if a > SATURATE {
        1.0
    } else {
        1.0 - 2.0 / (exp(2.0 * a) + 1.0)
    };
    if x < 0.0 { -t } else { t }
}

#[cfg(test)]
mod tests {
    use std::println;

    use super::*;

    /// Evenly spaced points on `[lo, hi]`.
    fn grid(lo: f32, hi: f32, n: usize) -> impl Iterator<Item = f32> {
        (0..=n).map(move |i| lo + (hi - lo) * (i as f32 / n as f32))
    }

    /// Maximum relative error of `exp` against libm's `expf` on `[lo, hi]`.
    fn exp_error(lo: f32, hi: f32) -> f64 {
        grid(lo, hi, 1_000_000)
            .map(|x| {
                let reference = f64::from(libm::expf(x));
                ((f64::from(exp(x)) - reference) / reference).abs()
            })
            .fold(0.0, f64::max)
    }

    #[test]
    fn exp_error_against_libm() {
        let softmax = exp_error(-20.0, 0.0);
        let std = exp_error(-20.0, 20.0);
        let all = exp_error(-87.0, 88.0);
        println!(
            "micromath exp vs libm expf, max relative error: [-20, 0] {softmax:.2e}, [-20, 20] {std:.2e}, [-87, 88] {all:.2e}"
        );
        assert!(all <= 2.5e-3, "{all:e}");
        assert!(softmax <= all && std <= all);
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(f32::NAN).is_nan());
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
    }

    #[test]
    fn tanh_error_against_libm() {
        let (mut worst_abs, mut worst_rel) = (0.0f64, 0.0f64);
        for x in grid(-12.0, 12.0, 2_000_000).chain(grid(-1e-3, 1e-3, 100_000)) {
            let reference = f64::from(libm::tanhf(x));
            let err = (f64::from(tanh(x)) - reference).abs();
            worst_abs = worst_abs.max(err);
            if reference.abs() >= 0.1 {
                worst_rel = worst_rel.max(err / reference.abs());
            }
        }
        println!(
            "micromath-based tanh vs libm tanhf: max absolute error {worst_abs:.2e}, max relative error {worst_rel:.2e} where |tanh| >= 0.1"
        );
        assert!(worst_abs <= 4e-4, "{worst_abs:e}");
        assert!(worst_rel <= 1.1e-3, "{worst_rel:e}");
    }

    #[test]
    fn tanh_special_values() {
        assert_eq!(tanh(0.0), 0.0);
        assert_eq!(tanh(1e-5), 1e-5);
        assert_eq!(tanh(1e30), 1.0);
        assert_eq!(tanh(f32::NEG_INFINITY), -1.0);
        assert!(tanh(f32::NAN).is_nan());
        for x in grid(-10.0, 10.0, 1000) {
            assert_eq!(tanh(-x), -tanh(x));
            assert!(tanh(x).abs() <= 1.0);
        }
    }
}
