//! Adam (Kingma & Ba, 2015, Algorithm 1) with bias correction, in PyTorch's
//! arrangement (what SB3 and CleanRL use):
//!
//! ```text
//! m ← β₁ m + (1 − β₁) g
//! v ← β₂ v + (1 − β₂) g²
//! θ ← θ − (lr / (1 − β₁ᵗ)) · m / (√v / √(1 − β₂ᵗ) + ε)
//! ```
//!
//! `ε` defaults to `1e-5`, SB3's PPO setting (PyTorch's own default is `1e-8`).

use super::{Optimizer, check_gradient, check_lr};
use crate::error::Error;
use crate::math;
use crate::params::Params;

/// Adam's hyper-parameters (the learning rate is passed to each step, so a
/// [`Schedule`](super::Schedule) can drive it).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct AdamConfig {
    /// Decay of the first-moment estimate. Default `0.9`.
    pub beta1: f32,
    /// Decay of the second-moment estimate. Default `0.999`.
    pub beta2: f32,
    /// Added to the denominator for numerical stability. Default `1e-5` (SB3).
    pub eps: f32,
}

impl AdamConfig {
    /// `β₁ = 0.9`, `β₂ = 0.999`, `ε = 1e-5`.
    pub const DEFAULT: Self = Self {
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-5,
    };

    /// Checks `β₁, β₂ ∈ [0, 1)` and a normal `ε ∈ (0, 1]`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the field otherwise.
    pub fn validate(&self) -> Result<(), Error> {
        let beta_ok = |b: f32| (0.0..1.0).contains(&b);
        if !beta_ok(self.beta1) {
            return Err(Error::config("adam.beta1", "must be in [0, 1)"));
        }
        if !beta_ok(self.beta2) {
            return Err(Error::config("adam.beta2", "must be in [0, 1)"));
        }
        // A denormal ε flushes to zero on some FPUs; ε > 1 swamps every step.
        if !(self.eps.is_normal() && self.eps > 0.0 && self.eps <= 1.0) {
            return Err(Error::config(
                "adam.eps",
                "must be a normal number in (0, 1]",
            ));
        }
        Ok(())
    }
}

impl AdamConfig {
    /// Every field zero (invalid: `ε = 0`): the placeholder inside the
    /// agents' `ZERO` values, which `init` replaces.
    pub(crate) const ZERO: Self = Self {
        beta1: 0.0,
        beta2: 0.0,
        eps: 0.0,
    };
}

impl Default for AdamConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Adam's state for parameters of type `P`: two moment estimates shaped like
/// `P` and the step count.
#[derive(Clone, Debug, PartialEq)]
pub struct Adam<P> {
    /// First-moment (mean) estimate `m`.
    pub m: P,
    /// Second-moment (uncentred variance) estimate `v`.
    pub v: P,
    /// Number of steps taken, `t`.
    pub t: u32,
    /// Hyper-parameters.
    pub config: AdamConfig,
}

impl<P: Params> Adam<P> {
    /// Zero moments at step 0; `const` so the state can live in a `static`.
    pub const fn new(config: AdamConfig) -> Self {
        Self {
            m: P::ZERO,
            v: P::ZERO,
            t: 0,
            config,
        }
    }
}

impl<P: Params> Optimizer<P> for Adam<P> {
    fn step(&mut self, params: &mut P, grads: &P, lr: f32) -> Result<(), Error> {
        check_lr(lr)?;
        self.config.validate()?;
        check_gradient(grads)?;
        let AdamConfig { beta1, beta2, eps } = self.config;
        self.t = self.t.saturating_add(1);
        let t = self.t as f32;
        let bias_correction1 = 1.0 - math::powf(beta1, t);
        let bias_correction2_sqrt = math::sqrt(1.0 - math::powf(beta2, t));
        let step_size = lr / bias_correction1;
        for i in 0..P::TENSORS {
            let g = grads.tensor(i);
            let m = self.m.tensor_mut(i);
            let v = self.v.tensor_mut(i);
            let p = params.tensor_mut(i);
            for (((p, &g), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
                *m = beta1 * *m + (1.0 - beta1) * g;
                *v = beta2 * *v + (1.0 - beta2) * g * g;
                let denom = math::sqrt(*v) / bias_correction2_sqrt + eps;
                *p -= step_size * *m / denom;
            }
        }
        Ok(())
    }

    fn reset(&mut self) {
        self.m.set_zero();
        self.v.set_zero();
        self.t = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::SVector;

    type P = SVector<f32, 2>;

    /// Two steps computed by hand (in f64) from the textbook formulas, with
    /// SB3's tiny `ε` and with an `ε` as large as the gradients (where `+ε`
    /// and `−ε`, or `ε` inside or outside the square root, differ).
    #[test]
    fn matches_hand_computed_steps() {
        two_hand_computed_steps(1e-8);
        two_hand_computed_steps(0.5);
    }

    fn two_hand_computed_steps(eps: f64) {
        let config = AdamConfig {
            beta1: 0.9,
            beta2: 0.999,
            eps: eps as f32,
        };
        let mut adam = Adam::<P>::new(config);
        let mut theta = P::new(1.0, -2.0);
        let lr = 0.1;

        // Step 1, g = (0.5, -4): m = 0.1 g, v = 0.001 g², m̂ = g, v̂ = g²,
        // θ ← θ − 0.1 · g / (|g| + ε).
        adam.step(&mut theta, &P::new(0.5, -4.0), lr).unwrap();
        let expected1 = [
            1.0 - 0.1 * 0.5 / (0.5 + eps),
            -2.0 + 0.1 * 4.0 / (4.0 + eps),
        ];
        assert!((theta[0] as f64 - expected1[0]).abs() < 1e-6);
        assert!((theta[1] as f64 - expected1[1]).abs() < 1e-6);
        assert_eq!(adam.t, 1);

        // Step 2, g = (1, 2):
        // m = 0.9·(0.05, -0.4) + 0.1·(1, 2) = (0.145, -0.16)
        // v = 0.999·(0.00025, 0.016) + 0.001·(1, 4) = (0.00124975, 0.019984)
        // m̂ = m / 0.19, v̂ = v / 0.001999
        adam.step(&mut theta, &P::new(1.0, 2.0), lr).unwrap();
        let m = [0.145f64, -0.16];
        let v = [0.001_249_75f64, 0.019_984];
        for i in 0..2 {
            let m_hat = m[i] / (1.0 - 0.9f64.powi(2));
            let v_hat = v[i] / (1.0 - 0.999f64.powi(2));
            let expected = expected1[i] - 0.1 * m_hat / (v_hat.sqrt() + eps);
            assert!(
                (theta[i] as f64 - expected).abs() < 1e-5,
                "{i}: {} vs {expected}",
                theta[i]
            );
            assert!((adam.m[i] as f64 - m[i]).abs() < 1e-7);
            // 1 − β₂ is 0.000_999_987 in f32: agreement to 1e-4 relative, not better.
            assert!(
                (adam.v[i] as f64 - v[i]).abs() < 1e-4 * v[i],
                "{} vs {}",
                adam.v[i],
                v[i]
            );
        }
    }

    #[test]
    fn default_eps_is_sb3() {
        assert_eq!(AdamConfig::default().eps, 1e-5);
        assert_eq!(AdamConfig::default().beta1, 0.9);
        assert_eq!(AdamConfig::default().beta2, 0.999);
    }

    #[test]
    fn rejects_bad_input_without_side_effects() {
        let mut adam = Adam::<P>::new(AdamConfig::default());
        let mut theta = P::new(1.0, 1.0);
        assert_eq!(
            adam.step(&mut theta, &P::new(f32::NAN, 0.0), 0.1),
            Err(Error::NonFinite)
        );
        assert_eq!(
            adam.step(&mut theta, &P::new(1.0, 0.0), -0.1),
            Err(Error::config(
                "learning_rate",
                "must be finite and in [0, 1e3]"
            ))
        );
        adam.config.beta1 = 1.0;
        assert_eq!(
            adam.step(&mut theta, &P::new(1.0, 0.0), 0.1),
            Err(Error::config("adam.beta1", "must be in [0, 1)"))
        );
        assert_eq!(theta, P::new(1.0, 1.0));
        assert_eq!(adam.t, 0);
        assert_eq!(adam.m, P::zeros());
    }

    #[test]
    fn reset_clears_state() {
        let mut adam = Adam::<P>::new(AdamConfig::default());
        let mut theta = P::new(1.0, 1.0);
        adam.step(&mut theta, &P::new(1.0, 1.0), 0.1).unwrap();
        adam.reset();
        assert_eq!((adam.t, adam.m, adam.v), (0, P::zeros(), P::zeros()));
    }
}
