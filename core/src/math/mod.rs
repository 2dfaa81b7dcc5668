//! Scalar maths with the same bits on every platform.
//!
//! A policy trained on the desktop must choose the same actions on a Cortex-M4F.
//! Rust's `f32::exp` and friends call the platform's libm (glibc on Linux, a
//! different implementation on the MCU), whose last-bit rounding differs, so
//! microrl never uses them. Every transcendental function goes through this
//! module, which calls the pure-Rust [`libm`] crate — the same source compiled
//! for both targets, pure `f32` arithmetic (no soft-float `f64` on the M4F).
//!
//! Three tiers for [`exp`] and [`tanh`], chosen by features:
//!
//! | feature | [`exp`], [`tanh`] | error | for |
//! |---|---|---|---|
//! | none | libm's `expf`, `tanhf` | ≤ 1 ulp | everything |
//! | `fast-math` | [`fast`]: pure-`f32` polynomial/rational approximations | ≤ `1.5e-7` relative, `6e-7` absolute | training and inference, about twice as fast as libm |
//! | `micromath` | `micro`: the `micromath` crate's `exp`, a `tanh` built on it | ≤ `2.4e-3` relative, `3.3e-4` absolute | inference only, on FPU-less MCUs (Cortex-M0) |
//!
//! `micromath` takes precedence over `fast-math` if both are on. Every tier
//! is deterministic across platforms: only `+ − × ÷`, comparisons and bit
//! manipulation, no fused multiply-add. Each tier's error is measured and
//! tested in its module.
//!
//! `+ − × ÷` and `sqrt` are correctly rounded by IEEE 754 everywhere; Rust does
//! not contract `a * b + c` into a fused multiply-add, so plain arithmetic is
//! already bit-identical between x86-64 and thumbv7em.

pub mod fast;
#[cfg(feature = "micromath")]
pub mod micro;

/// Which tier computes [`exp`] and [`tanh`]: the build's is [`BACKEND`].
///
/// Two tiers give the same network different last bits (`fast-math` is
/// within `1.5e-7` of libm, about 1 ulp — enough for another action where
/// two logits are nearly tied, and another run after a few updates), so the
/// policy and checkpoint formats record the backend that wrote them
/// ([`serialize`](crate::serialize), [`checkpoint`](crate::checkpoint)):
/// a policy loaded under another backend is reported as
/// [`Error::Backend`](crate::Error::Backend) (accepted explicitly by
/// [`serialize::load_any_backend`](crate::serialize::load_any_backend)), a
/// checkpoint resumed under another backend is refused.
///
/// The header stores [`code`](Self::code) in the `u16` that format 1 kept
/// reserved (and zero). Code 0 is `fast-math`, the backend of every file
/// microrl's own tools wrote before the field existed — the `microrl` CLI
/// and the firmware build the core with `fast-math` — so those files keep
/// their bytes and their meaning; a file of the default (libm) build now
/// carries 1. A legacy file from a default-feature crate of one's own reads
/// as `fast-math` (re-save it to record libm).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MathBackend {
    /// The `fast-math` feature: [`fast::exp`], [`fast::tanh`]. Code 0.
    FastMath,
    /// No maths feature: the `libm` crate's `expf`, `tanhf`. Code 1.
    Libm,
    /// The `micromath` feature (inference only). Code 2.
    Micromath,
}

impl MathBackend {
    /// Every backend, in code order.
    pub const ALL: [MathBackend; 3] = [Self::FastMath, Self::Libm, Self::Micromath];

    /// The value stored in a file's header.
    pub const fn code(self) -> u16 {
        match self {
            Self::FastMath => 0,
            Self::Libm => 1,
            Self::Micromath => 2,
        }
    }

    /// The backend of header value `code`; `None` for a value this release
    /// does not know (a file from a newer writer).
    pub const fn from_code(code: u16) -> Option<Self> {
        match code {
            0 => Some(Self::FastMath),
            1 => Some(Self::Libm),
            2 => Some(Self::Micromath),
            _ => None,
        }
    }

    /// The feature's name: `"libm"` (the default), `"fast-math"` or `"micromath"`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::FastMath => "fast-math",
            Self::Libm => "libm",
            Self::Micromath => "micromath",
        }
    }
}

impl core::fmt::Display for MathBackend {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// The backend this build computes with (`micromath` takes precedence over
/// `fast-math`, as in [`exp`]).
#[cfg(feature = "micromath")]
pub const BACKEND: MathBackend = MathBackend::Micromath;
/// The backend this build computes with (`micromath` takes precedence over
/// `fast-math`, as in [`exp`]).
#[cfg(all(feature = "fast-math", not(feature = "micromath")))]
pub const BACKEND: MathBackend = MathBackend::FastMath;
/// The backend this build computes with (`micromath` takes precedence over
/// `fast-math`, as in [`exp`]).
#[cfg(not(any(feature = "fast-math", feature = "micromath")))]
pub const BACKEND: MathBackend = MathBackend::Libm;

/// `x` limited to `[low, high]`: `low` if `x < low`, `high` if `x > high`,
/// else `x` (so a NaN `x` stays NaN).
///
/// The same result as `f32::clamp` whenever that does not panic, but never
/// panics: `f32::clamp` asserts `low <= high` and keeps a formatted panic —
/// with all of `core::fmt`'s float printing, ~20 KB of flash — wherever the
/// bounds are not compile-time constants. A misordered range here returns
/// `high` for `x > high`, otherwise `low` or `x`, and the caller's validation
/// (e.g. [`PpoConfig::validate`](crate::algo::PpoConfig::validate)) is what
/// rejects such configurations.
#[inline]
pub fn clamp(x: f32, low: f32, high: f32) -> f32 {
    if x < low {
        low
    } else if x > high {
        high
    } else {
        x
    }
}

/// `ln(2π)`, the normalising constant of the Gaussian log-density.
pub const LN_2PI: f32 = 1.837_877_1;

/// `e^x`. libm's `expf` (≤ 1 ulp), [`fast::exp`] with `fast-math`, or
/// `micro::exp` with `micromath`.
///
/// Never inlined on a Cortex-M: its dozen call sites (softmax,
/// log-densities, ratios, KL terms) would each carry a copy of `expf`, ~250 B
/// of flash apiece, for a call's worth of saved instructions. Elsewhere it
/// may be: a desktop update calls it about ten times per sample.
#[cfg_attr(target_arch = "arm", inline(never))]
#[cfg_attr(not(target_arch = "arm"), inline)]
pub fn exp(x: f32) -> f32 {
    #[cfg(feature = "micromath")]
    {
        micro::exp(x)
    }
    #[cfg(all(feature = "fast-math", not(feature = "micromath")))]
    {
        fast::exp(x)
    }
    #[cfg(not(any(feature = "fast-math", feature = "micromath")))]
    {
        libm::expf(x)
    }
}

/// `e^x − 1` from `x` and `e_x = e^x` computed already (a ratio `r = e^x`
/// whose logarithm is known): the Taylor polynomial
/// `x + x²/2 + x³/6 + x⁴/24 + x⁵/120 + x⁶/720` for `|x| < 0.1` (truncation
/// below `|x|⁷/5040 < 2·10⁻¹¹·|x|`, far under `f32` resolution), where
/// `e_x − 1` would cancel; `e_x − 1` beyond, where the cancellation costs at
/// most one `f32` ulp of 1.1. No second exponential (and no libm `expm1f`
/// in an MCU's flash).
///
/// For `|x| < 0.1` the result is `x + t` with `t ≥ 0` computed separately, so
/// `exp_m1(x, e_x) − x ≥ 0` holds exactly in `f32` (rounding is monotonic).
#[inline(never)]
pub fn exp_m1(x: f32, e_x: f32) -> f32 {
    if x.abs() < 0.1 {
        let p = 1.0 / 24.0 + x * (1.0 / 120.0 + x * (1.0 / 720.0));
        let t = x * x * (0.5 + x * (1.0 / 6.0 + x * p));
        x + t
    } else {
        e_x - 1.0
    }
}

/// Hyperbolic tangent. libm's `tanhf`, [`fast::tanh`] with `fast-math`, or
/// `micro::tanh` with `micromath`.
#[inline]
pub fn tanh(x: f32) -> f32 {
    #[cfg(feature = "micromath")]
    {
        micro::tanh(x)
    }
    #[cfg(all(feature = "fast-math", not(feature = "micromath")))]
    {
        fast::tanh(x)
    }
    #[cfg(not(any(feature = "fast-math", feature = "micromath")))]
    {
        libm::tanhf(x)
    }
}

/// Natural logarithm (libm's `logf`).
#[inline]
pub fn ln(x: f32) -> f32 {
    libm::logf(x)
}

/// `ln(1 + x)`, accurate for small `x` (libm's `log1pf`).
#[inline]
pub fn ln_1p(x: f32) -> f32 {
    libm::log1pf(x)
}

/// Square root (correctly rounded, so every implementation gives the same
/// bits).
///
/// With `std` it is `f32::sqrt`, which the compiler knows: a loop of them
/// (Adam's step) becomes vector square roots. libm's `sqrtf` is an opaque
/// scalar instruction on x86-64 and keeps such loops scalar.
#[inline]
pub fn sqrt(x: f32) -> f32 {
    #[cfg(feature = "std")]
    return x.sqrt();
    #[cfg(not(feature = "std"))]
    libm::sqrtf(x)
}

/// The largest integer `≤ x` (exact, so every implementation gives the same
/// bits).
///
/// With `std` it is `f32::floor`, one rounding instruction where the CPU
/// has one (SSE4.1, AVX) instead of a call to libm's bit-twiddling
/// `floorf`; [`exp`] uses it for its range reduction.
#[inline]
pub fn floor(x: f32) -> f32 {
    #[cfg(feature = "std")]
    return x.floor();
    #[cfg(not(feature = "std"))]
    libm::floorf(x)
}

/// `x^y` (libm's `powf`).
#[inline]
pub fn powf(x: f32, y: f32) -> f32 {
    libm::powf(x, y)
}

/// Cosine (libm's `cosf`).
#[inline]
pub fn cos(x: f32) -> f32 {
    libm::cosf(x)
}

/// Sine (libm's `sinf`).
#[inline]
pub fn sin(x: f32) -> f32 {
    libm::sinf(x)
}

/// `softplus(x) = ln(1 + e^x)`, computed without overflow for large `|x|`.
#[inline]
pub fn softplus(x: f32) -> f32 {
    // softplus(x) = max(x, 0) + ln(1 + e^{-|x|}).
    let pos = if x > 0.0 { x } else { 0.0 };
    pos + ln_1p(exp(-x.abs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softplus_is_stable() {
        assert_eq!(softplus(1e4), 1e4);
        assert_eq!(softplus(-1e4), 0.0);
        assert!((softplus(0.0) - core::f32::consts::LN_2).abs() < 1e-7);
    }

    #[test]
    fn backend_codes_round_trip() {
        for b in MathBackend::ALL {
            assert_eq!(MathBackend::from_code(b.code()), Some(b));
        }
        assert_eq!(MathBackend::from_code(3), None);
        // Code 0 is what format 1 wrote (reserved, zero): fast-math, the
        // backend of the CLI and the firmware.
        assert_eq!(MathBackend::from_code(0), Some(MathBackend::FastMath));
        #[cfg(not(any(feature = "fast-math", feature = "micromath")))]
        assert_eq!(BACKEND, MathBackend::Libm);
        #[cfg(all(feature = "fast-math", not(feature = "micromath")))]
        assert_eq!(BACKEND, MathBackend::FastMath);
        #[cfg(feature = "micromath")]
        assert_eq!(BACKEND, MathBackend::Micromath);
    }

    #[test]
    fn ln_2pi_constant() {
        let reference = (2.0 * core::f64::consts::PI).ln();
        assert!((LN_2PI as f64 - reference).abs() < 1e-7);
    }
}
