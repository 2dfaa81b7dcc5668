//! Element-wise activation functions as zero-sized types.
//!
//! An activation is a type parameter of [`Dense`](super::Dense), so the choice
//! costs nothing at run time and is part of the network's type (and of its
//! serialised header, through [`Activation::ID`]). The backward pass needs the
//! derivative only as a function of the activation's *output* `y`, which the
//! layer cache already stores: `tanh′ = 1 − y²`, `relu′ = [y > 0]`, `id′ = 1`.

use crate::math;

/// An element-wise non-linearity with a derivative expressible in its output.
pub trait Activation: Copy + Default + core::fmt::Debug {
    /// Identifier stored in the serialised header (low byte of the weight tag).
    const ID: u32;
    /// `y = f(z)`.
    fn apply(z: f32) -> f32;
    /// `f′(z)` expressed through `y = f(z)`.
    fn derivative_from_output(y: f32) -> f32;
    /// `f(z)` in `f64`: the reference for gradient checks.
    #[cfg(test)]
    fn reference(z: f64) -> f64;
}

/// The identity, for output layers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Identity;

/// Hyperbolic tangent (the usual choice for PPO policies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tanh;

/// Rectified linear unit, `max(z, 0)`. The derivative at `z = 0` is taken as 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Relu;

impl Activation for Identity {
    #[cfg(test)]
    fn reference(z: f64) -> f64 {
        z
    }
    const ID: u32 = 0;
    #[inline(always)]
    fn apply(z: f32) -> f32 {
        z
    }
    #[inline(always)]
    fn derivative_from_output(_y: f32) -> f32 {
        1.0
    }
}

impl Activation for Tanh {
    #[cfg(test)]
    fn reference(z: f64) -> f64 {
        libm::tanh(z)
    }
    const ID: u32 = 1;
    #[inline(always)]
    fn apply(z: f32) -> f32 {
        math::tanh(z)
    }
    #[inline(always)]
    fn derivative_from_output(y: f32) -> f32 {
        1.0 - y * y
    }
}

impl Activation for Relu {
    #[cfg(test)]
    fn reference(z: f64) -> f64 {
        z.max(0.0)
    }
    const ID: u32 = 2;
    #[inline(always)]
    fn apply(z: f32) -> f32 {
        if z > 0.0 { z } else { 0.0 }
    }
    #[inline(always)]
    fn derivative_from_output(y: f32) -> f32 {
        if y > 0.0 { 1.0 } else { 0.0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Central difference of `f` in f64 against the analytic derivative.
    fn check<A: Activation>(reference: fn(f64) -> f64, points: &[f32]) {
        for &z in points {
            let h = 1e-6;
            let z64 = z as f64;
            let fd = (reference(z64 + h) - reference(z64 - h)) / (2.0 * h);
            let analytic = A::derivative_from_output(A::apply(z)) as f64;
            let err = (analytic - fd).abs() / fd.abs().max(1e-3);
            assert!(
                err < 1e-3,
                "{:?} at z={z}: analytic {analytic}, fd {fd}",
                A::default()
            );
            assert!((A::apply(z) as f64 - reference(z64)).abs() < 2e-6);
        }
    }

    const POINTS: [f32; 9] = [-3.0, -1.2, -0.5, -0.01, 0.013, 0.3, 0.9, 2.0, 4.5];

    #[test]
    fn tanh_gradient() {
        check::<Tanh>(libm::tanh, &POINTS);
    }

    #[test]
    fn relu_gradient() {
        check::<Relu>(|z| z.max(0.0), &POINTS);
    }

    #[test]
    fn identity_gradient() {
        check::<Identity>(|z| z, &POINTS);
    }

    #[test]
    fn ids_are_distinct() {
        assert_ne!(Identity::ID, Tanh::ID);
        assert_ne!(Tanh::ID, Relu::ID);
        assert_ne!(Identity::ID, Relu::ID);
    }
}
