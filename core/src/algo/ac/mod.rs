//! Online one-step actor-critic (Sutton & Barto 2018, §13.5; notes 004).
//!
//! After every environment step, the TD error
//! `δ = r + γ V(s′)(1 − terminated) − V(s)`
//! drives both networks at once:
//! - critic: one step on `½(V(s) − y)²` with the target `y = r + γV(s′)` held
//!   fixed (semi-gradient TD(0)), i.e. gradient `−δ ∇V(s)`;
//! - actor: one step on `−δ log π(a|s) − c_e H[π(·|s)]`.
//!
//! `δ` is computed from the critic *before* either update. A time-limit
//! truncation still bootstraps from `V(s′)` of the final observation; only
//! termination zeroes it.
//!
//! Memory is O(1) in the episode length: two [`TrainState`]s (actor and
//! critic each have their own Adam and learning rate, as the critic must
//! track faster than the actor), one activation cache per network and the
//! observation normaliser — no rollout buffer. This is the variant for the
//! smallest microcontrollers.

pub mod lagged;
mod learner;
mod persist;
#[cfg(test)]
mod tests;

use nalgebra::SVector;
use rand_core::Rng;

use super::{Actor, Cursor, Episode, Policy};
use crate::env::{ActionSpace, Env};
use crate::error::Error;
use crate::nn::{Network, gain};
use crate::normalize::RunningNorm;
use crate::optim::{AdamConfig, Optimizer, Schedule, TrainState};
use crate::params::Params;
pub use lagged::LaggedAc;

/// Online actor-critic hyper-parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct AcConfig {
    /// Environment steps the schedules run over. Default 500 000.
    pub total_steps: u64,
    /// Actor learning rate. Default constant `3e-4`.
    pub actor_lr: Schedule,
    /// Critic learning rate. Default constant `1e-3`.
    pub critic_lr: Schedule,
    /// Discount `γ`. Default 0.99.
    pub gamma: f32,
    /// Entropy bonus coefficient. Default 0.
    pub ent_coef: f32,
    /// Gradient-norm clip applied to each network separately. Default `Some(1.0)`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub max_grad_norm: Option<f32>,
    /// Running observation normalisation. Default true.
    pub normalize_obs: bool,
    /// Reward scaling by the running standard deviation of the discounted
    /// return (SB3's `VecNormalize`, [`scale_reward`](crate::normalize::scale_reward)):
    /// the critic then learns values of order one and the TD error that
    /// drives the actor has the same scale on every plant, whatever its
    /// reward's units. Default false ([`PLANT`](Self::PLANT): true).
    pub normalize_reward: bool,
    /// With `normalize_reward`: the return's statistics without SB3's
    /// assumption that rewards are of order one (see
    /// [`PpoConfig::scale_free_returns`](crate::algo::PpoConfig::scale_free_returns)).
    /// Default false.
    pub scale_free_returns: bool,
    /// Critic warm-up: for the first `critic_warmup` steps only the critic
    /// learns (the actor acts, unchanged), so the first actor steps follow a
    /// TD error from a critic that has seen the plant rather than from its
    /// random initialisation. Default 0 ([`PLANT`](Self::PLANT): 10 000).
    pub critic_warmup: u64,
    /// Start from the policy that does nothing: the actor's mean head
    /// zeroed after initialisation ([`Actor::rest_init`]),
    /// so the step-0 policy commands the actuator's rest exactly. With the
    /// trainer keeping its best evaluated policy
    /// ([`KeepBest`](crate::train::KeepBest), whose candidates include the
    /// step-0 policy) a run whose learning only made things worse returns
    /// "doing nothing", not a policy that drives the plant away. Default
    /// false ([`PLANT`](Self::PLANT): true).
    pub rest_init: bool,
    /// Adam's `β₁, β₂, ε` (both networks). Default `0.9, 0.999, 1e-5`.
    pub adam: AdamConfig,
}

impl AcConfig {
    /// Every field zero (invalid), the placeholder in [`ActorCritic::ZERO`].
    const ZERO: Self = Self {
        total_steps: 0,
        actor_lr: Schedule::Constant(0.0),
        critic_lr: Schedule::Constant(0.0),
        gamma: 0.0,
        ent_coef: 0.0,
        max_grad_norm: None,
        normalize_obs: false,
        normalize_reward: false,
        scale_free_returns: false,
        critic_warmup: 0,
        rest_init: false,
        adam: AdamConfig::ZERO,
    };

    /// The defaults listed on each field.
    pub const DEFAULT: Self = Self {
        total_steps: 500_000,
        actor_lr: Schedule::Constant(3e-4),
        critic_lr: Schedule::Constant(1e-3),
        gamma: 0.99,
        ent_coef: 0.0,
        max_grad_norm: Some(1.0),
        normalize_obs: true,
        normalize_reward: false,
        scale_free_returns: false,
        critic_warmup: 0,
        rest_init: false,
        adam: AdamConfig::DEFAULT,
    };

    /// The defaults for a plant of your own: [`DEFAULT`](Self::DEFAULT) with
    /// its three safeguards on — rewards scaled by the running spread of the
    /// return (`normalize_reward`), a 10 000-step critic warm-up
    /// (`critic_warmup`) and a start from doing nothing (`rest_init`, which
    /// with the trainer's keep-best makes "doing nothing" the floor). `microrl train --algo ac` uses it on every plant
    /// but CartPole and Pendulum, whose `DEFAULT` runs (the firmware's) are
    /// pinned bit for bit. On the suite's plants it turns the divergence of
    /// `DEFAULT` (the servo's worst seed −155 against a PID's −9.4) into a
    /// policy near the baseline (docs/plants.md, "The suite").
    pub const PLANT: Self = Self {
        normalize_reward: true,
        critic_warmup: 10_000,
        rest_init: true,
        ..Self::DEFAULT
    };

    /// Checks every field before the agent touches anything.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the field: `γ ∉ [0, 1]`, a learning
    /// rate that is not finite and positive (or anneals below zero, or over
    /// `total_steps = 0`), a negative entropy coefficient, a non-positive
    /// gradient clip or invalid Adam settings.
    pub fn validate(&self) -> Result<(), Error> {
        use crate::config::{check, non_negative, positive_or_off, unit};
        unit("gamma", self.gamma)?;
        self.actor_lr.validate("actor_lr", 1.0)?;
        self.critic_lr.validate("critic_lr", 1.0)?;
        let anneals = !matches!(
            (self.actor_lr, self.critic_lr),
            (Schedule::Constant(_), Schedule::Constant(_))
        );
        check(
            "total_steps",
            self.total_steps > 0 || !anneals,
            "must be > 0 when a schedule anneals over it",
        )?;
        non_negative("ent_coef", self.ent_coef)?;
        positive_or_off("max_grad_norm", self.max_grad_norm)?;
        self.adam.validate()
    }
}

impl Default for AcConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What one online step did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AcStats {
    /// The TD error `δ`.
    pub delta: f32,
    /// `V(s)` before the update.
    pub value: f32,
    /// Policy entropy at `s`.
    pub entropy: f32,
}

/// An online actor-critic agent: actor `A`, critic `C`, nothing else.
///
/// Name it from the environment with
/// [`agent::ActorCritic`](crate::agent::ActorCritic) (`agent::ActorCritic<MyPlant, 32>`)
/// unless the networks are custom.
pub struct ActorCritic<A: Actor<OBS>, C: Network<OBS, 1>, const OBS: usize> {
    /// Hyper-parameters.
    pub config: AcConfig,
    /// The action space (actuator bounds), set by [`init`](Self::init).
    pub space: A::Space,
    /// The actor with its gradient and Adam state.
    pub actor: TrainState<A>,
    /// The critic with its gradient and Adam state.
    pub critic: TrainState<C>,
    /// Observation statistics.
    pub obs_norm: RunningNorm<OBS>,
    /// Statistics of the discounted return (`normalize_reward`).
    pub return_norm: RunningNorm<1>,
    /// The running discounted return `G` of the current episode
    /// (`normalize_reward`).
    pub discounted_return: f32,
    /// Environment steps taken.
    pub steps: u64,
    actor_cache: A::Cache,
    critic_cache: C::Cache,
}

impl<A: Actor<OBS>, C: Network<OBS, 1>, const OBS: usize> core::fmt::Debug
    for ActorCritic<A, C, OBS>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ActorCritic")
            .field("config", &self.config)
            .field("steps", &self.steps)
            .finish_non_exhaustive()
    }
}

impl<A: Actor<OBS>, C: Network<OBS, 1>, const OBS: usize> ActorCritic<A, C, OBS> {
    /// An agent with zeroed weights; call [`init`](Self::init) first.
    pub const fn new(config: AcConfig) -> Self {
        Self {
            actor: TrainState::new(config.adam),
            critic: TrainState::new(config.adam),
            config,
            space: <A::Space as Params>::ZERO,
            obs_norm: RunningNorm::ZERO,
            return_norm: RunningNorm::ZERO,
            discounted_return: 0.0,
            steps: 0,
            actor_cache: A::ZERO_CACHE,
            critic_cache: C::ZERO_CACHE,
        }
    }

    /// An agent whose every byte is zero, configuration included, for
    /// `static` storage (it lands in `.bss`); see [`Ppo::ZERO`](crate::algo::Ppo::ZERO).
    /// Set [`config`](Self::config), then [`init`](Self::init).
    pub const ZERO: Self = Self::new(AcConfig::ZERO);

    /// Initialises the agent for `env`: its action space, the weights
    /// (orthogonal), both optimisers and the statistics, in place.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for an invalid configuration; nothing is
    /// changed then.
    pub fn init<E, R>(&mut self, env: &E, rng: &mut R) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.config.validate()?;
        self.space = env.action_space();
        self.actor.params.init(rng);
        if self.config.rest_init {
            self.actor.params.rest_init();
        }
        self.critic
            .params
            .init_orthogonal(rng, gain::HIDDEN, gain::VALUE);
        self.actor.optimizer.config = self.config.adam;
        self.actor.optimizer.reset();
        self.critic.optimizer.config = self.config.adam;
        self.critic.optimizer.reset();
        self.obs_norm = RunningNorm::ZERO;
        self.return_norm = RunningNorm::ZERO;
        self.discounted_return = 0.0;
        self.steps = 0;
        Ok(())
    }

    /// The actor.
    pub fn actor(&self) -> &A {
        &self.actor.params
    }

    /// The critic.
    pub fn critic(&self) -> &C {
        &self.critic.params
    }

    /// The observation as the networks see it (the identity while the
    /// normaliser is empty, e.g. with `normalize_obs = false`).
    fn observe(&self, obs: &SVector<f32, OBS>) -> Result<SVector<f32, OBS>, Error> {
        self.obs_norm.normalize(obs)
    }

    /// Acts once in `env` from `cursor` and updates critic and actor from the
    /// TD error of that transition.
    ///
    /// Transactional for the agent: every input, both gradients and both
    /// learning rates are checked before either network changes, and on any
    /// error the observation statistics and the step count are restored — a
    /// refused step changes nothing in the agent (the environment and
    /// `cursor` have moved on with the plant).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for an invalid configuration,
    /// [`Error::NonFinite`] for a non-finite observation, reward, TD error,
    /// network output or gradient, [`Error::GradientOverflow`] for an
    /// unusable gradient, and the environment's own errors.
    pub fn step<E, R>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        on_episode: impl FnMut(Episode),
    ) -> Result<AcStats, Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.transaction(|s| s.try_step(env, cursor, rng, on_episode))
    }

    /// Runs `f` (one online step) after validating the configuration; on
    /// its error the statistics it may have moved (observation and return
    /// normalisers, the running return, the step count) are restored, so a
    /// refused step changes nothing in the agent (the weights move only
    /// after every check passed).
    fn transaction<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.config.validate()?;
        let saved = (
            self.obs_norm.clone(),
            self.return_norm.clone(),
            self.discounted_return,
            self.steps,
        );
        let result = f(self);
        if result.is_err() {
            (
                self.obs_norm,
                self.return_norm,
                self.discounted_return,
                self.steps,
            ) = saved;
        }
        result
    }

    fn try_step<E, R>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        mut on_episode: impl FnMut(Episode),
    ) -> Result<AcStats, Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        let c = self.config;
        let obs = if c.normalize_obs {
            self.obs_norm.update_normalize(&cursor.obs)?
        } else {
            self.observe(&cursor.obs)?
        };
        let (action, _) = self.actor.params.sample(&obs, rng)?;
        let step = cursor.advance(env, self.space.command(&action), rng, &mut on_episode)?;
        self.learn(&obs, &action, &step, None)
    }

    /// Copies the deployable policy — actor, frozen normaliser, action
    /// space — into `out` (caller-owned memory).
    pub fn export(&self, out: &mut Policy<A, OBS>) {
        out.actor.copy_from(&self.actor.params);
        out.obs_norm.copy_from(&self.obs_norm);
        out.space = self.space;
    }

    /// A deployable copy of the policy (see [`export`](Self::export)).
    pub fn policy(&self) -> Policy<A, OBS>
    where
        A: Clone,
    {
        Policy {
            actor: self.actor.params.clone(),
            obs_norm: self.obs_norm.clone(),
            space: self.space,
        }
    }
}
