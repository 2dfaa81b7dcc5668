//! Global gradient-norm clipping (`torch.nn.utils.clip_grad_norm_`).
//!
//! The L2 norm is taken over *all* tensors together; if it exceeds
//! `max_norm`, every gradient is scaled by `max_norm / (norm + 1e-6)`, so the
//! direction is kept and the norm is bounded by `max_norm`.

use crate::error::Error;
use crate::math;
use crate::params::Params;

/// Scales `grads` so their global L2 norm is at most `max_norm`; returns the
/// norm before clipping.
///
/// # Errors
/// [`Error::NonFinite`] if the norm is NaN or infinite (the gradients are left
/// unchanged), [`Error::InvalidConfig`] if `max_norm` is negative or NaN.
pub fn clip_grad_norm<P: Params>(grads: &mut P, max_norm: f32) -> Result<f32, Error> {
    if max_norm.is_nan() || max_norm < 0.0 {
        return Err(Error::config("max_grad_norm", "must be >= 0"));
    }
    let norm = math::sqrt(grads.norm_squared());
    if !norm.is_finite() {
        return Err(Error::NonFinite);
    }
    let clip_coef = max_norm / (norm + 1e-6);
    if clip_coef < 1.0 {
        grads.scale(clip_coef);
    }
    Ok(norm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::{Mlp, fd};

    #[test]
    fn bounds_the_global_norm() {
        let mut grads = Mlp::<4, 16, 2>::ZERO;
        fd::randomise(&mut grads, &mut fd::rng(1), 3.0);
        let direction = grads.clone();
        let before = clip_grad_norm(&mut grads, 0.5).unwrap();
        assert!(before > 0.5);
        let after = math::sqrt(grads.norm_squared());
        assert!(after <= 0.5 * (1.0 + 1e-6) && after > 0.499, "{after}");
        // Same direction: grads = c · direction with c > 0.
        let c = grads.first.bias[0] / direction.first.bias[0];
        let mut residual = grads.clone();
        residual.add_scaled(-c, &direction);
        assert!(residual.norm_squared() < 1e-10);
    }

    /// A zero bound is a bound (every gradient becomes zero); a negative or
    /// NaN one is refused with the gradient untouched.
    #[test]
    fn zero_bound_zeroes_and_negative_bound_is_refused() {
        let mut grads = Mlp::<2, 4, 1>::ZERO;
        fd::randomise(&mut grads, &mut fd::rng(3), 1.0);
        let before = grads.clone();
        for bad in [-1.0, -f32::MIN_POSITIVE, f32::NAN] {
            assert!(matches!(
                clip_grad_norm(&mut grads, bad),
                Err(Error::InvalidConfig {
                    field: "max_grad_norm",
                    ..
                })
            ));
            assert_eq!(grads, before);
        }
        let norm = clip_grad_norm(&mut grads, 0.0).unwrap();
        assert!(norm > 0.0);
        assert_eq!(grads.norm_squared(), 0.0);
    }

    #[test]
    fn leaves_small_gradients_alone() {
        let mut grads = Mlp::<2, 4, 1>::ZERO;
        fd::randomise(&mut grads, &mut fd::rng(2), 0.01);
        let before = grads.clone();
        clip_grad_norm(&mut grads, 10.0).unwrap();
        assert_eq!(grads, before);
    }

    #[test]
    fn rejects_non_finite() {
        let mut grads = Mlp::<2, 4, 1>::ZERO;
        grads.second.second.bias[0] = f32::NAN;
        assert_eq!(clip_grad_norm(&mut grads, 1.0), Err(Error::NonFinite));
        assert_eq!(
            clip_grad_norm(&mut grads, f32::NAN),
            Err(Error::config("max_grad_norm", "must be >= 0"))
        );
    }
}
