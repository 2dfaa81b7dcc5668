//! Action distributions and inference-only policies.
//!
//! A *distribution head* turns a network output into actions and supplies the
//! log-probabilities, entropies and gradients that policy-gradient losses need:
//! [`Categorical`] for discrete actions (the network outputs logits) and
//! [`Gaussian`] for continuous ones (the network outputs the mean; the head
//! owns a learnable `log_std`).
//!
//! [`CategoricalPolicy`] and [`GaussianPolicy`] are the deployment copies: the
//! parameters and nothing else — no gradients, caches or optimiser moments —
//! with a forward pass that needs no scratch memory. They validate the
//! observation and the network output, so a NaN from a broken sensor becomes
//! [`Error::NonFinite`] instead of a NaN actuator command.

mod categorical;
mod gaussian;

pub use categorical::Categorical;
pub use gaussian::{Gaussian, GaussianGrad, clip_action};

use nalgebra::SVector;
use rand_core::Rng;

use crate::error::{Error, check_all_finite};
use crate::impl_params;
use crate::nn::Layer;
use crate::params::Params;

/// A discrete-action policy for deployment: a network producing logits.
#[derive(Clone, Debug, PartialEq)]
pub struct CategoricalPolicy<N> {
    /// Maps an observation to action logits.
    pub net: N,
}

impl_params!(impl[N: Params] CategoricalPolicy<N> { net: N });

impl<N, const OBS: usize, const ACT: usize> CategoricalPolicy<N>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
{
    /// The action distribution at `obs`.
    ///
    /// # Errors
    /// [`Error::NonFinite`] if the observation or the resulting logits are not finite.
    pub fn distribution(&self, obs: &SVector<f32, OBS>) -> Result<Categorical<ACT>, Error> {
        check_all_finite(obs.as_slice())?;
        Categorical::from_logits(&self.net.forward(obs))
    }

    /// The deterministic (most probable) action: what evaluation and deployment use.
    ///
    /// # Errors
    /// As [`distribution`](Self::distribution).
    pub fn act(&self, obs: &SVector<f32, OBS>) -> Result<usize, Error> {
        Ok(self.distribution(obs)?.mode())
    }

    /// A sampled action and its log-probability.
    ///
    /// # Errors
    /// As [`distribution`](Self::distribution).
    pub fn sample<R: Rng + ?Sized>(
        &self,
        obs: &SVector<f32, OBS>,
        rng: &mut R,
    ) -> Result<(usize, f32), Error> {
        let dist = self.distribution(obs)?;
        let action = dist.sample(rng);
        Ok((action, dist.log_probs()[action]))
    }
}

/// A continuous-action policy for deployment: a network producing the mean of
/// a diagonal Gaussian, and the Gaussian's `log_std`.
#[derive(Clone, Debug, PartialEq)]
pub struct GaussianPolicy<N, const ACT: usize> {
    /// Maps an observation to the action mean.
    pub net: N,
    /// The state-independent `log_std`.
    pub head: Gaussian<ACT>,
}

impl_params!(impl[N: Params, const ACT: usize] GaussianPolicy<N, ACT> { net: N, head: Gaussian<ACT> });

impl<N, const OBS: usize, const ACT: usize> GaussianPolicy<N, ACT>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
{
    /// The mean action `μ(obs)`.
    ///
    /// # Errors
    /// [`Error::NonFinite`] if the observation or the mean is not finite.
    pub fn mean(&self, obs: &SVector<f32, OBS>) -> Result<SVector<f32, ACT>, Error> {
        check_all_finite(obs.as_slice())?;
        let mean = self.net.forward(obs);
        check_all_finite(mean.as_slice())?;
        Ok(mean)
    }

    /// The deterministic action `μ(obs)` (unsquashed; clip the copy sent to
    /// the plant with [`clip_action`]).
    ///
    /// # Errors
    /// As [`mean`](Self::mean).
    pub fn act(&self, obs: &SVector<f32, OBS>) -> Result<SVector<f32, ACT>, Error> {
        self.mean(obs)
    }

    /// The deterministic action of a tanh-squashed policy, `tanh(μ(obs))`.
    ///
    /// # Errors
    /// As [`mean`](Self::mean).
    pub fn act_squashed(&self, obs: &SVector<f32, OBS>) -> Result<SVector<f32, ACT>, Error> {
        Ok(Gaussian::squash(&self.mean(obs)?))
    }

    /// A raw sample `u ~ 𝒩(μ(obs), σ²)` and its log-probability.
    ///
    /// # Errors
    /// As [`mean`](Self::mean).
    pub fn sample<R: Rng + ?Sized>(
        &self,
        obs: &SVector<f32, OBS>,
        rng: &mut R,
    ) -> Result<(SVector<f32, ACT>, f32), Error> {
        let mean = self.mean(obs)?;
        let raw = self.head.sample(&mean, rng);
        Ok((raw, self.head.log_prob(&mean, &raw)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::{Mlp, fd, gain};

    #[test]
    fn categorical_policy_acts_and_rejects_nan() {
        let mut policy = CategoricalPolicy {
            net: Mlp::<4, 16, 2>::ZERO,
        };
        policy
            .net
            .init_orthogonal(&mut fd::rng(1), gain::HIDDEN, gain::POLICY);
        let obs = SVector::<f32, 4>::new(0.01, -0.02, 0.03, 0.04);
        let action = policy.act(&obs).unwrap();
        assert!(action < 2);
        let (sampled, log_prob) = policy.sample(&obs, &mut fd::rng(2)).unwrap();
        assert!(sampled < 2 && log_prob <= 0.0);
        // The policy head's 0.01 gain makes the initial policy near-uniform.
        let probs = policy.distribution(&obs).unwrap().probs();
        assert!((probs[0] - 0.5).abs() < 0.05);
        let bad = SVector::<f32, 4>::new(0.0, f32::NAN, 0.0, 0.0);
        assert_eq!(policy.act(&bad), Err(Error::NonFinite));
        assert_eq!(
            CategoricalPolicy::<Mlp<4, 16, 2>>::LEN,
            Mlp::<4, 16, 2>::LEN
        );
    }

    #[test]
    fn gaussian_policy_acts_and_rejects_infinity() {
        let mut policy = GaussianPolicy {
            net: Mlp::<3, 8, 1>::ZERO,
            head: Gaussian::with_log_std(-0.5),
        };
        policy
            .net
            .init_orthogonal(&mut fd::rng(3), gain::HIDDEN, gain::POLICY);
        let obs = SVector::<f32, 3>::new(1.0, 0.0, -0.5);
        let mean = policy.act(&obs).unwrap();
        assert!(policy.act_squashed(&obs).unwrap()[0].abs() < 1.0);
        let (raw, log_prob) = policy.sample(&obs, &mut fd::rng(4)).unwrap();
        assert_eq!(log_prob, policy.head.log_prob(&mean, &raw));
        let bad = SVector::<f32, 3>::new(f32::INFINITY, 0.0, 0.0);
        assert_eq!(policy.act(&bad), Err(Error::NonFinite));
        assert_eq!(GaussianPolicy::<Mlp<3, 8, 1>, 1>::TENSORS, 7);
    }
}
