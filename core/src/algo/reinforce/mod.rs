//! REINFORCE with a learned baseline (Williams 1992; notes 001/004).
//!
//! After each episode, every step's Monte-Carlo return
//! `G_t = Σ_k γ^k r_{t+k}` is compared with the critic's baseline `V(s_t)`,
//! and one gradient step is taken on
//! `L = 1/T Σ_t [ −(G_t − V(s_t)) log π(a_t|s_t) + c_v · ½(V(s_t) − G_t)² − c_e H ]`.
//! The baseline reduces the variance of the policy gradient without biasing
//! it (it does not depend on the action).
//!
//! Implementation: the Monte-Carlo advantage `G_t − V(s_t)` is GAE with
//! `λ = 1` over a rollout that ends with the episode, and one epoch over one
//! minibatch makes PPO's ratio exactly 1, so the clipped surrogate's gradient
//! is `−Â ∇log π`. [`Reinforce`] therefore wraps the [`Ppo`] machinery with
//! episode-bounded collection: one code path, one set of gradient checks. The
//! rollout capacity `N` is the longest episode kept whole (500 for CartPole);
//! an episode cut by the capacity or by a time limit bootstraps from the
//! critic, as for truncation.

use nalgebra::SVector;
use rand_core::Rng;

use super::Critic;
use super::ppo::{Ppo, PpoConfig, UpdateStats};
use super::{Actor, Cursor, Episode};
use crate::env::Env;
use crate::error::Error;
use crate::optim::{AdamConfig, Schedule};

/// REINFORCE hyper-parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct ReinforceConfig {
    /// Environment steps the learning-rate schedule runs over. Default 500 000.
    pub total_steps: u64,
    /// Learning rate. Default constant `1e-3`.
    pub learning_rate: Schedule,
    /// Discount `γ`. Default 0.99.
    pub gamma: f32,
    /// Entropy bonus coefficient. Default 0.
    pub ent_coef: f32,
    /// Baseline (value) loss coefficient. Default 0.5.
    pub vf_coef: f32,
    /// Normalise `G_t − V(s_t)` over the episode. Default true.
    pub normalize_advantages: bool,
    /// Global gradient-norm clip. Default `Some(0.5)`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub max_grad_norm: Option<f32>,
    /// Running observation normalisation. Default true.
    pub normalize_obs: bool,
    /// Adam's `β₁, β₂, ε`. Default `0.9, 0.999, 1e-5`.
    pub adam: AdamConfig,
}

impl ReinforceConfig {
    /// The defaults listed on each field.
    pub const DEFAULT: Self = Self {
        total_steps: 500_000,
        learning_rate: Schedule::Constant(1e-3),
        gamma: 0.99,
        ent_coef: 0.0,
        vf_coef: 0.5,
        normalize_advantages: true,
        max_grad_norm: Some(0.5),
        normalize_obs: true,
        adam: AdamConfig::DEFAULT,
    };
}

impl Default for ReinforceConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl From<ReinforceConfig> for PpoConfig {
    /// `λ = 1`, one epoch over one minibatch, no clipping.
    fn from(c: ReinforceConfig) -> Self {
        config_to_ppo(c)
    }
}

/// A REINFORCE agent with a learned baseline; episodes up to `N` steps are
/// kept whole.
#[derive(Debug)]
pub struct Reinforce<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> {
    /// The shared actor-critic machinery (configured by [`ReinforceConfig`]).
    pub inner: Ppo<A, C, OBS, N>,
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> Reinforce<A, C, OBS, N> {
    /// An agent with zeroed weights; call [`init`](Self::init) first.
    pub const fn new(config: ReinforceConfig) -> Self {
        Self {
            inner: Ppo::new(config_to_ppo(config)),
        }
    }

    /// Initialises the agent for `env` (see [`Ppo::init`]).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for an invalid configuration.
    pub fn init<E, R>(&mut self, env: &E, rng: &mut R) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.inner.init(env, rng)
    }

    /// All-zero storage for a `static`; see [`Ppo::ZERO`].
    pub const ZERO: Self = Self { inner: Ppo::ZERO };

    /// Runs one episode (or `N` steps, whichever ends first) and computes the
    /// Monte-Carlo advantages.
    ///
    /// # Errors
    /// As [`Ppo::collect`].
    pub fn collect<E, R>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        on_episode: impl FnMut(Episode),
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.inner
            .collect_until(env, cursor, rng, on_episode, true, |_, _, _| Ok(0.0))
    }

    /// One policy-gradient step on the collected episode.
    ///
    /// # Errors
    /// As [`Ppo::update`].
    pub fn update<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Result<UpdateStats, Error> {
        self.inner.update(rng)
    }
}

// REINFORCE: one iteration is an episode (at most `N` steps) and its
// update; the checkpoint section is the inner agent's, kind 2.
super::ppo::wraps_ppo!(Reinforce, kind: 2, loading(|_agent, _reader| {}));

/// `From` is not `const`; this is the same conversion for [`Reinforce::new`].
const fn config_to_ppo(c: ReinforceConfig) -> PpoConfig {
    PpoConfig {
        total_steps: c.total_steps,
        learning_rate: c.learning_rate,
        clip_range: Schedule::Constant(f32::INFINITY),
        gamma: c.gamma,
        gae_lambda: 1.0,
        epochs: 1,
        minibatches: 1,
        normalize_advantages: c.normalize_advantages,
        value_clip: None,
        ent_coef: c.ent_coef,
        bound_coef: 0.0,
        noise_beta: Schedule::Constant(0.0),
        vf_coef: c.vf_coef,
        max_grad_norm: c.max_grad_norm,
        target_kl: None,
        kl_coef: 0.0,
        kl_target: None,
        normalize_obs: c.normalize_obs,
        normalize_reward: false,
        scale_free_returns: false,
        adam: c.adam,
        n_envs: 1,
        n_steps: 0,
    }
}
