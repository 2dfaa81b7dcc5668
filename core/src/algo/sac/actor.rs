//! SAC's tanh-squashed Gaussian actor with a state-dependent `log_std`
//! (SB3's `sac.policies.Actor`).
//!
//! A shared trunk `h = T(s)` feeds two linear heads, the mean `μ = W_μ h + b_μ`
//! and the raw log standard deviation `ℓ = W_ℓ h + b_ℓ`, clamped to
//! `[LOG_STD_MIN, LOG_STD_MAX] = [−20, 2]` as SB3 clamps it. With standard
//! normal noise `ε` (reparameterisation, Haarnoja et al. 2018, eq. 11):
//!
//! ```text
//! σ = exp(clamp(ℓ, −20, 2)),   u = μ + σ ⊙ ε,   a = tanh(u)
//! log π(a|s) = Σⱼ [ log 𝒩(uⱼ; μⱼ, σⱼ) − ln(1 − aⱼ² + 10⁻⁶) ]        (eq. 26)
//! log 𝒩(uⱼ; μⱼ, σⱼ) = −½ εⱼ² − log σⱼ − ½ ln 2π
//! ```
//!
//! The correction `ln(1 − tanh²u + 10⁻⁶)` is SB3's
//! `SquashedDiagGaussianDistribution.log_prob` (its `epsilon = 1e-6`) to the
//! letter, not the exact `ln(1 − tanh²u)`: the `10⁻⁶` keeps it finite when
//! `tanh u` rounds to ±1. `(u − μ)/σ` is `ε` exactly in real arithmetic, so
//! the density is written with `ε`.
//!
//! Gradients for a loss `L(a, log π)` with `ε` held fixed (per dimension):
//!
//! ```text
//! ∂L/∂u = ∂L/∂a · (1 − a²) + ∂L/∂log π · 2a(1 − a²)/(1 − a² + 10⁻⁶)
//! ∂L/∂μ = ∂L/∂u
//! ∂L/∂ℓ = [−20 ≤ ℓ ≤ 2] · (∂L/∂u · σ ε − ∂L/∂log π)
//! ```
//!
//! (`log 𝒩` depends on `μ` not at all and on `log σ` through `−log σ` only,
//! once `u` is written as `μ + σε`; the clamp passes the gradient inside its
//! range and blocks it outside, as `torch.clamp` does.)
//!
//! The deterministic action is `tanh(μ(s))`; [`SquashedGaussianActor::deployed`]
//! gives the network that computes just that.

use nalgebra::SVector;
use rand_core::Rng;

use crate::algo::offpolicy::Explore;
use crate::error::{Error, check_all_finite, check_finite};
use crate::impl_params;
use crate::math;
use crate::nn::{Chain, Dense, DenseCache, Identity, Layer, Tanh};
use crate::params::Params;
use crate::rng;

/// SB3's lower clamp of SAC's `log_std` head.
pub const LOG_STD_MIN: f32 = -20.0;
/// SB3's upper clamp of SAC's `log_std` head.
pub const LOG_STD_MAX: f32 = 2.0;
/// The `ε` of SB3's squashing correction `ln(1 − tanh²u + ε)`.
pub const SQUASH_EPS: f32 = 1e-6;

/// A trunk `T: OBS → H` and two linear heads `H → ACT`: the mean and the raw
/// `log_std` (see the [module docs](crate::algo::sac)).
#[derive(Clone, Debug, PartialEq)]
pub struct SquashedGaussianActor<T, const H: usize, const ACT: usize> {
    /// The shared hidden layers, `latent_pi` in SB3.
    pub trunk: T,
    /// The mean head `μ`.
    pub mu: Dense<H, ACT, Identity>,
    /// The `log_std` head (clamped to `[LOG_STD_MIN, LOG_STD_MAX]` after it).
    pub log_std: Dense<H, ACT, Identity>,
}

impl_params!(impl[T: Params, const H: usize, const ACT: usize] SquashedGaussianActor<T, H, ACT> {
    trunk: T,
    mu: Dense<H, ACT, Identity>,
    log_std: Dense<H, ACT, Identity>,
});

/// What [`SquashedGaussianActor::sample_train`] records for the backward pass.
#[derive(Clone, Debug, PartialEq)]
pub struct SquashedCache<C, const H: usize, const ACT: usize> {
    /// The trunk's activations.
    pub trunk: C,
    /// The mean head's input and output.
    pub mu: DenseCache<H, ACT>,
    /// The `log_std` head's input and (unclamped) output.
    pub log_std: DenseCache<H, ACT>,
    /// `σ = exp(clamp(ℓ))`.
    pub std: SVector<f32, ACT>,
    /// The noise `ε`.
    pub eps: SVector<f32, ACT>,
    /// The squashed action `a = tanh(u)`.
    pub action: SVector<f32, ACT>,
}

/// `(σ, a, log π)` from the heads' outputs and the noise (module docs).
fn squash<const ACT: usize>(
    mu: &SVector<f32, ACT>,
    log_std_raw: &SVector<f32, ACT>,
    eps: &SVector<f32, ACT>,
) -> (SVector<f32, ACT>, SVector<f32, ACT>, f32) {
    let mut std = SVector::<f32, ACT>::zeros();
    let mut action = SVector::<f32, ACT>::zeros();
    let mut log_prob = 0.0f32;
    for j in 0..ACT {
        let log_std = math::clamp(log_std_raw[j], LOG_STD_MIN, LOG_STD_MAX);
        std[j] = math::exp(log_std);
        let u = mu[j] + std[j] * eps[j];
        let a = math::tanh(u);
        action[j] = a;
        let gaussian = -0.5 * eps[j] * eps[j] - log_std - 0.5 * math::LN_2PI;
        log_prob += gaussian - math::ln(1.0 - a * a + SQUASH_EPS);
    }
    (std, action, log_prob)
}

impl<T, const OBS: usize, const H: usize, const ACT: usize> SquashedGaussianActor<T, H, ACT>
where
    T: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, H>>,
{
    /// A zeroed cache.
    pub const ZERO_CACHE: SquashedCache<T::Cache, H, ACT> = SquashedCache {
        trunk: T::ZERO_CACHE,
        mu: DenseCache::ZERO,
        log_std: DenseCache::ZERO,
        std: <SVector<f32, ACT> as Params>::ZERO,
        eps: <SVector<f32, ACT> as Params>::ZERO,
        action: <SVector<f32, ACT> as Params>::ZERO,
    };

    /// The deterministic action `tanh(μ(s))` in `[−1, 1]`.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite observation or mean.
    pub fn mode(&self, obs: &SVector<f32, OBS>) -> Result<SVector<f32, ACT>, Error> {
        check_all_finite(obs.as_slice())?;
        let mu = self.mu.forward(&self.trunk.forward(obs));
        check_all_finite(mu.as_slice())?;
        Ok(mu.map(math::tanh))
    }

    /// The action `a = tanh(μ + σε)` for the noise `ε` and its `log π(a|s)`,
    /// without recording anything (the target's `a′ ~ π(s′)`, exploration).
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite observation, noise, head
    /// output or log-probability.
    pub fn sample_with(
        &self,
        obs: &SVector<f32, OBS>,
        eps: &SVector<f32, ACT>,
    ) -> Result<(SVector<f32, ACT>, f32), Error> {
        check_all_finite(obs.as_slice())?;
        check_all_finite(eps.as_slice())?;
        let h = self.trunk.forward(obs);
        let (mu, log_std) = (self.mu.forward(&h), self.log_std.forward(&h));
        check_all_finite(mu.as_slice())?;
        check_all_finite(log_std.as_slice())?;
        let (_, action, log_prob) = squash(&mu, &log_std, eps);
        check_finite(log_prob)?;
        Ok((action, log_prob))
    }

    /// [`sample_with`](Self::sample_with), recording what
    /// [`backward`](Self::backward) needs in `cache`: the same bits.
    ///
    /// # Errors
    /// As [`sample_with`](Self::sample_with); `cache` then holds scratch
    /// values that `backward` must not be called with.
    pub fn sample_train(
        &self,
        obs: &SVector<f32, OBS>,
        eps: &SVector<f32, ACT>,
        cache: &mut SquashedCache<T::Cache, H, ACT>,
    ) -> Result<(SVector<f32, ACT>, f32), Error> {
        check_all_finite(obs.as_slice())?;
        check_all_finite(eps.as_slice())?;
        let h = self.trunk.forward_train(obs, &mut cache.trunk);
        let mu = self.mu.forward_train(&h, &mut cache.mu);
        let log_std = self.log_std.forward_train(&h, &mut cache.log_std);
        check_all_finite(mu.as_slice())?;
        check_all_finite(log_std.as_slice())?;
        let (std, action, log_prob) = squash(&mu, &log_std, eps);
        check_finite(log_prob)?;
        cache.std = std;
        cache.eps = *eps;
        cache.action = action;
        Ok((action, log_prob))
    }

    /// Adds into `grad` the gradient of a loss with `∂L/∂a = d_action` and
    /// `∂L/∂log π = d_log_prob` at the sample recorded in `cache` (module
    /// docs for the formulas).
    pub fn backward(
        &self,
        cache: &SquashedCache<T::Cache, H, ACT>,
        d_action: &SVector<f32, ACT>,
        d_log_prob: f32,
        grad: &mut Self,
    ) {
        let mut d_mu = SVector::<f32, ACT>::zeros();
        let mut d_log_std = SVector::<f32, ACT>::zeros();
        for j in 0..ACT {
            let a = cache.action[j];
            let one_minus_a2 = 1.0 - a * a;
            let d_u = d_action[j] * one_minus_a2
                + d_log_prob * (2.0 * a * one_minus_a2 / (one_minus_a2 + SQUASH_EPS));
            d_mu[j] = d_u;
            let raw = cache.log_std.output[j];
            if (LOG_STD_MIN..=LOG_STD_MAX).contains(&raw) {
                d_log_std[j] = d_u * cache.std[j] * cache.eps[j] - d_log_prob;
            }
        }
        let d_h_mu = self.mu.backward(&cache.mu, &d_mu, &mut grad.mu);
        let d_h_log_std = self
            .log_std
            .backward(&cache.log_std, &d_log_std, &mut grad.log_std);
        self.trunk
            .backward(&cache.trunk, &(d_h_mu + d_h_log_std), &mut grad.trunk);
    }
}

/// Exploration: `ε ~ 𝒩(0, I)` ([`rng::fill_normal`] of `ACT` values), then
/// [`sample_with`](SquashedGaussianActor::sample_with) — SAC's
/// `a ~ π(·|s)` (Haarnoja et al. 2018, eq. 11, with the tanh squash of
/// appendix C).
impl<T, const OBS: usize, const H: usize, const ACT: usize> Explore<OBS, ACT>
    for SquashedGaussianActor<T, H, ACT>
where
    T: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, H>>,
{
    const ZERO_ACTOR: Self = <Self as Params>::ZERO;

    fn explore<R: Rng + ?Sized>(
        &self,
        obs: &SVector<f32, OBS>,
        rng: &mut R,
    ) -> Result<(SVector<f32, ACT>, f32), Error> {
        let mut eps = SVector::<f32, ACT>::zeros();
        rng::fill_normal(rng, eps.as_mut_slice());
        self.sample_with(obs, &eps)
    }
}

impl<T: Clone, const H: usize, const ACT: usize> SquashedGaussianActor<T, H, ACT> {
    /// The deterministic policy as one network, `s ↦ tanh(μ(s))`: the trunk
    /// and the mean head with a `tanh` activation (the `log_std` head is
    /// not needed to act). Its output has the same bits as
    /// [`mode`](Self::mode)'s.
    pub fn deployed(&self) -> Chain<T, Dense<H, ACT, Tanh>> {
        Chain {
            first: self.trunk.clone(),
            second: Dense::from_parts(self.mu.weight, self.mu.bias),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::offpolicy::torch_default_init;
    use crate::nn::{Relu, fd};
    use std::vec::Vec;

    type Trunk = Chain<Dense<3, 8, Relu>, Dense<8, 8, Relu>>;
    type Actor = SquashedGaussianActor<Trunk, 8, 2>;

    fn actor(seed: u64) -> Actor {
        let mut actor = Actor::ZERO;
        torch_default_init(&mut actor, &mut fd::rng(seed));
        actor
    }

    /// `f64` reference of `(a, log π)` from the flat parameters.
    fn reference(theta: &[f64], obs: &[f64], eps: &[f64]) -> (Vec<f64>, f64) {
        let (trunk, heads) = theta.split_at(Trunk::LEN);
        let (mu_head, ls_head) = heads.split_at(<Dense<8, 2>>::LEN);
        let h = Trunk::reference_forward(trunk, obs);
        let mu = <Dense<8, 2>>::reference_forward(mu_head, &h);
        let ls = <Dense<8, 2>>::reference_forward(ls_head, &h);
        let mut log_prob = 0.0;
        let mut action = Vec::new();
        for j in 0..2 {
            let ls = ls[j].clamp(-20.0, 2.0);
            let u = mu[j] + ls.exp() * eps[j];
            let a = u.tanh();
            let z = (u - mu[j]) / ls.exp();
            log_prob += -0.5 * z * z
                - ls
                - 0.5 * (2.0 * core::f64::consts::PI).ln()
                - (1.0 - a * a + 1e-6).ln();
            action.push(a);
        }
        (action, log_prob)
    }

    /// `∂(c·a + k·log π)/∂θ` through the reparameterised, squashed sample,
    /// against central differences of the `f64` reference.
    #[test]
    fn squashed_sample_gradient_matches_finite_differences() {
        let mut rng = fd::rng(3);
        for (seed, eps) in [(1, [0.3f32, -1.2]), (2, [1.7, 0.4]), (4, [-0.6, 2.1])] {
            let mut actor = actor(seed);
            fd::randomise_biases(&mut actor, &mut rng);
            let obs = SVector::<f32, 3>::new(0.5, -0.9, 1.3);
            let eps = SVector::<f32, 2>::from_column_slice(&eps);
            let (c, k) = (SVector::<f32, 2>::new(0.7, -1.1), -0.4f32);
            let mut cache = Actor::ZERO_CACHE;
            let (a, log_prob) = actor.sample_train(&obs, &eps, &mut cache).unwrap();
            assert_eq!((a, log_prob), actor.sample_with(&obs, &eps).unwrap());
            let mut grad = Actor::ZERO;
            actor.backward(&cache, &c, k, &mut grad);
            let obs64: Vec<f64> = obs.iter().map(|&x| f64::from(x)).collect();
            let eps64: Vec<f64> = eps.iter().map(|&x| f64::from(x)).collect();
            let (a64, lp64) = reference(&fd::flatten(&actor), &obs64, &eps64);
            assert!((f64::from(log_prob) - lp64).abs() < 1e-5 * lp64.abs().max(1.0));
            assert!((f64::from(a[0]) - a64[0]).abs() < 1e-6);
            let numeric = fd::numerical_gradient(&fd::flatten(&actor), |theta| {
                let (a, lp) = reference(theta, &obs64, &eps64);
                f64::from(c[0]) * a[0] + f64::from(c[1]) * a[1] + f64::from(k) * lp
            });
            fd::assert_close("squashed actor", &fd::flatten(&grad), &numeric);
        }
    }

    /// Outside the clamp the `log_std` head gets no gradient (as `torch.clamp`).
    #[test]
    fn clamped_log_std_blocks_the_gradient() {
        let mut actor = actor(5);
        actor.log_std.bias = SVector::<f32, 2>::new(30.0, -40.0);
        let obs = SVector::<f32, 3>::new(0.1, 0.2, 0.3);
        let eps = SVector::<f32, 2>::new(0.5, -0.5);
        let mut cache = Actor::ZERO_CACHE;
        actor.sample_train(&obs, &eps, &mut cache).unwrap();
        assert_eq!(cache.std[0], math::exp(LOG_STD_MAX));
        assert_eq!(cache.std[1], math::exp(LOG_STD_MIN));
        let mut grad = Actor::ZERO;
        actor.backward(&cache, &SVector::<f32, 2>::new(1.0, 1.0), 1.0, &mut grad);
        assert_eq!(grad.log_std.norm_squared(), 0.0);
        assert!(grad.mu.norm_squared() > 0.0);
    }

    #[test]
    fn deployed_network_is_the_mode_bit_for_bit() {
        let actor = actor(6);
        let net = actor.deployed();
        for obs in [
            SVector::<f32, 3>::new(0.5, -0.9, 1.3),
            SVector::<f32, 3>::new(-2.0, 0.1, 0.0),
        ] {
            assert_eq!(net.forward(&obs), actor.mode(&obs).unwrap());
        }
        assert_eq!(
            actor.mode(&SVector::<f32, 3>::new(f32::NAN, 0.0, 0.0)),
            Err(Error::NonFinite)
        );
    }
}
