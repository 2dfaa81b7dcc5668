//! Proximal policy optimisation with GAE (Schulman et al. 2017; notes 002 §9),
//! and A2C as its one-epoch special case.
//!
//! The update reads top to bottom like CleanRL's `ppo.py`:
//! 1. [`Ppo::collect`] fills the fixed-capacity [`Rollout`] with `N` steps of
//!    the current policy (observations normalised on the way in, rewards
//!    optionally scaled), bootstrapping truncated episodes from
//!    `V(final observation)`, then computes GAE advantages and the value
//!    targets `R = Â + V_old`. [`Ppo::collect_envs`] does the same from
//!    [`PpoConfig::n_envs`] environment copies side by side, `n_steps` steps
//!    each (SB3's `n_envs × n_steps` rollout), stored step-major with GAE
//!    per copy; reward scaling then keeps one discounted return per copy
//!    and one shared return normaliser, like SB3's `VecNormalize` (updated
//!    copy by copy: see [`PpoConfig::normalize_reward`]).
//! 2. [`Ppo::update`] runs `epochs` passes over the rollout; each pass
//!    shuffles the index permutation in place and walks it in `minibatches`
//!    equal minibatches. Per minibatch: optional advantage normalisation,
//!    the clipped surrogate (eq. 7), the (optionally clipped) value loss, the
//!    entropy bonus, one gradient step of Adam on actor and critic together
//!    after a global grad-norm clip. An epoch whose mean `approx_kl` exceeds
//!    `target_kl` ends the update early.
//!
//! The loss per minibatch of size `B` is (CleanRL / SB3):
//! `L = 1/B Σ [ −min(r·Â, clip(r, 1±ε)·Â) + c_v · ½(V − R)² − c_e · H ]`.
//!
//! **A2C** (Mnih et al. 2016) is the same machine with one epoch over one
//! minibatch: the ratio is then exactly 1, so the clipped surrogate's gradient
//! reduces to the vanilla `−Â ∇log π`, and `λ = 1` turns GAE into the n-step
//! return minus `V`. [`A2cConfig`] converts into that [`PpoConfig`].
//!
//! Memory: the actor and critic with Adam ([`TrainState`]), one rollout, one
//! activation cache per network, the normaliser — all fixed at compile time.
//! An error (NaN observation, reward or gradient) aborts before the next
//! optimiser step: every applied step was computed from finite data.

//!
//! The folder holds one concern a file: [`config`] (`PpoConfig`,
//! `A2cConfig`), `collect` (rollouts), `update` (the update and its
//! diagnostics), `learner` (the [`Learner`](crate::train::Learner) the
//! training loop drives and the [`Controller`](crate::policy::Controller) the policy acts through) and
//! `persist` (its part of a checkpoint).

mod collect;
pub mod config;
pub mod lagged;
mod learner;
pub(crate) mod persist;
#[cfg(test)]
mod tests;
mod update;
pub(crate) mod wrapped;

pub use config::{A2cConfig, KL_COEF_MAX, KL_COEF_MIN, PpoConfig, adapted_kl_coef};
pub use lagged::LaggedPpo;
pub use update::UpdateStats;
pub(crate) use wrapped::wraps_ppo;

use nalgebra::SVector;
use rand_core::Rng;

use super::Critic;
use super::buffer::Rollout;
use super::{Actor, Policy};
use crate::env::Env;
use crate::error::Error;
use crate::impl_params;
use crate::nn::Zeroed;
use crate::normalize::RunningNorm;
use crate::optim::{Optimizer, TrainState};
use crate::params::Params;
use crate::policy::ColouredNoise;

/// Actor and critic parameters trained together by one Adam (and serialised
/// together in a checkpoint: actor first).
#[derive(Clone, Debug, PartialEq)]
pub struct ActorCriticParams<A, C> {
    /// The actor.
    pub actor: A,
    /// The critic.
    pub critic: C,
}

impl_params!(impl[A: Params, C: Params] ActorCriticParams<A, C> { actor: A, critic: C });

/// A PPO (or A2C) agent: actor `A`, critic `C`, `OBS`-dimensional
/// observations and a rollout of `N` steps, all in one fixed-size struct.
///
/// Name it from the environment with [`agent::Ppo`](crate::agent::Ppo)
/// (`agent::Ppo<MyPlant, 64, 2048>`) unless the networks are custom.
///
/// `CHUNK` is the number of samples the update runs through each network
/// layer at a time ([`Layer::forward_batch`](crate::nn::Layer::forward_batch)):
/// more is faster on a desktop, fewer saves RAM on a microcontroller
/// (the agent keeps the activations of `CHUNK` samples for each network).
/// The results do not depend on it, bit for bit.
pub struct Ppo<
    A: Actor<OBS>,
    C: Critic<OBS>,
    const OBS: usize,
    const N: usize,
    const CHUNK: usize = DEFAULT_CHUNK,
> {
    /// Hyper-parameters.
    pub config: PpoConfig,
    /// Actor and critic ([`ActorCriticParams`]) with gradients and Adam moments.
    pub train: TrainState<ActorCriticParams<A, C>>,
    /// The action space (actuator bounds), set by [`init`](Self::init).
    pub space: A::Space,
    /// The current rollout.
    pub rollout: Rollout<OBS, A::Action, N>,
    /// Observation statistics (updated while collecting).
    pub obs_norm: RunningNorm<OBS>,
    /// Statistics of the discounted return, for reward scaling (shared by
    /// every environment copy).
    pub return_norm: RunningNorm<1>,
    /// The running discounted return `Σ γ^k r` of the current episode with
    /// one environment (`n_envs = 1`); with more, each copy's is its
    /// cursor's ([`Cursor::discounted_return`](crate::algo::Cursor::discounted_return)) and this stays as it was.
    pub discounted_return: f32,
    /// The current KL penalty coefficient `β` (set from
    /// [`PpoConfig::kl_coef`] by [`init`](Self::init), adapted after each
    /// update when [`PpoConfig::kl_target`] is set).
    pub kl_coef: f32,
    /// Environment steps collected so far.
    pub steps: u64,
    /// The current rollout's exploration noise when
    /// [`PpoConfig::noise_beta`] is above 0 (drawn at the rollout's start,
    /// so never part of a checkpoint).
    pub(crate) noise: ColouredNoise,
    pub(crate) actor_cache: A::Cache,
    pub(crate) critic_cache: C::Cache,
    actor_batch: A::Batch<CHUNK>,
    critic_batch: C::Batch<CHUNK>,
}

/// [`Ppo`]'s default `CHUNK`: samples per batched pass of the update.
///
/// 32 on a desktop CPU: the fastest of 8, 32 and 64 for 64-wide networks
/// (CPU seconds of `kernel_work update 300`, x86-64-v3 build: 1.17 s at 32
/// against 1.23 s at 8; longer runs of samples keep the weight-gradient
/// kernel's register block busy and cost `(I + 2·O)·CHUNK` floats a layer).
/// 1 on a Cortex-M (32-bit ARM), where the batched passes run the per-sample
/// kernels one sample at a time anyway (see [`nn::batch`](crate::nn::batch)),
/// so more samples per pass would only cost RAM. The results are the same
/// bits either way.
pub const DEFAULT_CHUNK: usize = if cfg!(target_arch = "arm") { 1 } else { 32 };

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize>
    core::fmt::Debug for Ppo<A, C, OBS, N, CHUNK>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Ppo")
            .field("config", &self.config)
            .field("steps", &self.steps)
            .field("rollout_len", &self.rollout.len())
            .finish_non_exhaustive()
    }
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize>
    Ppo<A, C, OBS, N, CHUNK>
{
    /// An agent with zeroed weights; call [`init`](Self::init) before training.
    /// `const`, so the whole agent can be a `static` on a microcontroller.
    pub const fn new(config: PpoConfig) -> Self {
        Self {
            train: TrainState::new(config.adam),
            config,
            space: <A::Space as Params>::ZERO,
            rollout: Rollout::new(A::ZERO_ACTION),
            obs_norm: RunningNorm::ZERO,
            return_norm: RunningNorm::ZERO,
            discounted_return: 0.0,
            kl_coef: config.kl_coef,
            steps: 0,
            noise: ColouredNoise::OFF,
            actor_cache: A::ZERO_CACHE,
            critic_cache: C::ZERO_CACHE,
            actor_batch: <A::Batch<CHUNK> as Zeroed>::ZERO,
            critic_batch: <C::Batch<CHUNK> as Zeroed>::ZERO,
        }
    }

    /// An agent whose every byte is zero, configuration included — for
    /// `static` storage on a microcontroller: a `static` initialised with it
    /// lands in `.bss`, so it costs no flash image and is never built on the
    /// stack (a `Ppo::new(config)` moved into a `static` at run time can pass
    /// through a stack temporary as large as the agent). Set
    /// [`config`](Self::config), then [`init`](Self::init) works in place;
    /// `init` rejects the zero configuration itself.
    ///
    /// ```
    /// use microrl::algo::PpoConfig;
    /// # use rand_core::SeedableRng;
    /// use microrl::env::CartPole;
    /// type Agent = microrl::agent::Ppo<CartPole, 32, 256>;
    /// // On an MCU: `static AGENT: ConstStaticCell<Agent> = ConstStaticCell::new(Agent::ZERO);`
    /// let mut agent = Box::new(Agent::ZERO);
    /// # let mut rng = rand_xoshiro::Xoshiro128PlusPlus::seed_from_u64(0);
    /// let env = CartPole::new();
    /// assert!(agent.init(&env, &mut rng).is_err()); // the zero configuration is invalid
    /// agent.config = PpoConfig::CARTPOLE;
    /// assert!(agent.init(&env, &mut rng).is_ok());
    /// ```
    pub const ZERO: Self = Self::new(PpoConfig::ZERO);

    /// Initialises the agent for `env`: its action space (actuator bounds),
    /// the weights (orthogonal: actor output gain 0.01, critic output gain
    /// 1), Adam, the normalisers and the step count, all in place (no stack
    /// temporary the size of a network). Environment copies' discounted
    /// returns live in their caller-owned cursors: restart the copies too
    /// ([`VecEnv::start`](crate::vec_env::VecEnv::start), which
    /// [`Trainer::start`](crate::train::Trainer::start) calls).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] if the configuration does not
    /// [`validate`](PpoConfig::validate) for a rollout of `N`; nothing is
    /// changed then.
    pub fn init<E, R>(&mut self, env: &E, rng: &mut R) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.config.validate(N)?;
        self.train.params.critic.validate()?;
        self.space = env.action_space();
        self.train.params.actor.init(rng);
        self.train.params.critic.init(rng);
        self.train.zero_grad();
        self.train.optimizer.config = self.config.adam;
        self.train.optimizer.reset();
        self.obs_norm = RunningNorm::ZERO;
        self.return_norm = RunningNorm::ZERO;
        self.discounted_return = 0.0;
        self.kl_coef = self.config.kl_coef;
        self.steps = 0;
        self.rollout.clear();
        Ok(())
    }

    /// The actor.
    pub fn actor(&self) -> &A {
        &self.train.params.actor
    }

    /// The critic.
    pub fn critic(&self) -> &C {
        &self.train.params.critic
    }

    /// Copies the deployable policy — the actor, the (frozen) observation
    /// statistics and the action space — into `out` (caller-owned memory).
    pub fn export(&self, out: &mut Policy<A, OBS>) {
        out.actor.copy_from(&self.train.params.actor);
        out.obs_norm.copy_from(&self.obs_norm);
        out.space = self.space;
    }

    /// A deployable copy (see [`export`](Self::export)).
    pub fn policy(&self) -> Policy<A, OBS>
    where
        A: Clone,
    {
        Policy {
            actor: self.train.params.actor.clone(),
            obs_norm: self.obs_norm.clone(),
            space: self.space,
        }
    }
}
