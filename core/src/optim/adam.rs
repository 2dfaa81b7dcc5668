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

impl<P: Params> Adam<P> {
    /// The parameters one [`step`](Optimizer::step) from `grads` with
    /// learning rate `lr` would leave, written into `out`; `params` and the
    /// optimiser state are not changed. The arithmetic is `step`'s, element
    /// for element, so a `step` taken afterwards from the same state and
    /// gradient writes exactly these bits into `params` — how SAC and TD3
    /// train their actor through the critics' next parameters before
    /// committing either step.
    ///
    /// # Errors
    /// As [`step`](Optimizer::step) (`out` is then not written).
    pub fn staged(&self, params: &P, grads: &P, lr: f32, out: &mut P) -> Result<(), Error> {
        let step = self.step_constants(grads, lr)?;
        for i in 0..P::TENSORS {
            let (g, m, v, p) = (
                grads.tensor(i),
                self.m.tensor(i),
                self.v.tensor(i),
                params.tensor(i),
            );
            let out = out.tensor_mut(i);
            for ((((out, &p), &g), &m), &v) in out.iter_mut().zip(p).zip(g).zip(m).zip(v) {
                (*out, _, _) = step.element(p, m, v, g);
            }
        }
        Ok(())
    }

    /// Checks `lr`, the configuration and `grads` (what makes a step
    /// refuse), then the constants of step `t + 1`.
    fn step_constants(&self, grads: &P, lr: f32) -> Result<StepConstants, Error> {
        check_lr(lr)?;
        self.config.validate()?;
        check_gradient(grads)?;
        let AdamConfig { beta1, beta2, eps } = self.config;
        let t = self.t.saturating_add(1) as f32;
        Ok(StepConstants {
            beta1,
            beta2,
            eps,
            step_size: lr / (1.0 - math::powf(beta1, t)),
            bias_correction2_sqrt: math::sqrt(1.0 - math::powf(beta2, t)),
        })
    }
}

/// What one Adam step applies to every element: the decays, `ε`, the
/// bias-corrected step size `lr / (1 − β₁ᵗ)` and `√(1 − β₂ᵗ)`.
struct StepConstants {
    beta1: f32,
    beta2: f32,
    eps: f32,
    step_size: f32,
    bias_correction2_sqrt: f32,
}

impl StepConstants {
    /// One element's step: `(θ′, m′, v′)` from `(θ, m, v, g)` — the only
    /// place the update's arithmetic is written, for [`Adam::step`] and
    /// [`Adam::staged`] alike.
    #[inline(always)]
    fn element(&self, p: f32, m: f32, v: f32, g: f32) -> (f32, f32, f32) {
        let m = self.beta1 * m + (1.0 - self.beta1) * g;
        let v = self.beta2 * v + (1.0 - self.beta2) * g * g;
        let denom = math::sqrt(v) / self.bias_correction2_sqrt + self.eps;
        (p - self.step_size * m / denom, m, v)
    }
}

impl<P: Params> Optimizer<P> for Adam<P> {
    fn step(&mut self, params: &mut P, grads: &P, lr: f32) -> Result<(), Error> {
        let step = self.step_constants(grads, lr)?;
        self.t = self.t.saturating_add(1);
        for i in 0..P::TENSORS {
            let g = grads.tensor(i);
            let m = self.m.tensor_mut(i);
            let v = self.v.tensor_mut(i);
            let p = params.tensor_mut(i);
            for (((p, &g), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
                (*p, *m, *v) = step.element(*p, *m, *v, g);
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

    /// `staged` writes the bits the next `step` writes into the
    /// parameters, changes nothing, and refuses what `step` refuses.
    #[test]
    fn staged_parameters_are_the_next_steps_bits() {
        let mut adam = Adam::<SVector<f32, 5>>::new(AdamConfig::DEFAULT);
        let mut theta = SVector::<f32, 5>::new(0.3, -1.7, 2.5e-3, 11.0, -0.0);
        for k in 0..20u8 {
            let g = SVector::<f32, 5>::from_fn(|i, _| {
                libm::sinf(f32::from(k) * 1.3 + i as f32) * 10f32.powi(i as i32 - 2)
            });
            let (before, state) = (theta, adam.clone());
            let mut staged = SVector::<f32, 5>::zeros();
            adam.staged(&theta, &g, 3e-4, &mut staged).unwrap();
            assert_eq!((theta, &adam), (before, &state));
            adam.step(&mut theta, &g, 3e-4).unwrap();
            let bits = |x: &SVector<f32, 5>| x.map(f32::to_bits);
            assert_eq!(bits(&staged), bits(&theta), "step {k}");
        }
        let mut out = SVector::<f32, 5>::repeat(7.0);
        let nan = SVector::<f32, 5>::repeat(f32::NAN);
        assert_eq!(
            adam.staged(&theta, &nan, 1e-3, &mut out),
            Err(Error::NonFinite)
        );
        let g = SVector::<f32, 5>::repeat(1.0);
        assert!(adam.staged(&theta, &g, -1.0, &mut out).is_err());
        assert_eq!(out, SVector::<f32, 5>::repeat(7.0));
    }

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
