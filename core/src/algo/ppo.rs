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

use nalgebra::SVector;
use rand_core::Rng;

use super::Critic;
use super::buffer::{Rollout, Transition};
use super::{Actor, Controller, Cursor, Episode, Policy};
use crate::env::{ActionSpace, Env};
use crate::error::{Error, check_finite};
use crate::impl_params;
use crate::loss::{approx_kl, approx_kl_at, clipped_surrogate, kl_penalty};
use crate::math;
use crate::nn::Zeroed;
use crate::normalize::RunningNorm;
use crate::optim::{AdamConfig, Optimizer, Schedule, TrainState};
use crate::params::Params;
use crate::rng;

/// PPO hyper-parameters. Defaults are CleanRL's `ppo.py` (for one
/// environment), except where a field says otherwise.
///
/// With the `serde` feature it (de)serialises with the field names as keys:
/// a schedule is a number (constant) or `{ start, end }` (linear), an
/// optional value is a number or `false` (off).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct PpoConfig {
    /// Environment steps the linear schedules run over. Default 100 000.
    pub total_steps: u64,
    /// Adam learning rate over training progress. Default `3e-4 → 0` (linear).
    pub learning_rate: Schedule,
    /// Clip range `ε` over training progress (a constant `+∞` switches
    /// clipping off, as A2C and REINFORCE use it). Default constant 0.2.
    pub clip_range: Schedule,
    /// Discount `γ`. Default 0.99.
    pub gamma: f32,
    /// GAE `λ`. Default 0.95.
    pub gae_lambda: f32,
    /// Passes over each rollout. Default 10.
    pub epochs: u16,
    /// Minibatches per pass (the rollout length must be a multiple). Default 4.
    pub minibatches: u16,
    /// Normalise advantages to zero mean and unit variance per minibatch. Default true.
    pub normalize_advantages: bool,
    /// Clip the value loss around `V_old` by this range (`None`: unclipped). Default `None`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub value_clip: Option<f32>,
    /// Entropy bonus coefficient `c_e`. Default 0.
    pub ent_coef: f32,
    /// Value loss coefficient `c_v` of `c_v · ½(V − R)²` (CleanRL's
    /// convention). SB3 weighs `mean((R − V)²)` without the ½: SB3's
    /// `vf_coef = c` is `2c` here (its default 0.5 is 1.0). Default 0.5.
    pub vf_coef: f32,
    /// Global L2 gradient-norm clip. Default `Some(0.5)`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub max_grad_norm: Option<f32>,
    /// Stop an update after an epoch whose mean `approx_kl` exceeds this. Default `None`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub target_kl: Option<f32>,
    /// Initial coefficient `β` of the KL penalty `β·KL[π_old ‖ π]` added to
    /// the policy loss (PPO-penalty, Schulman et al. 2017 eq. 8); 0 switches
    /// it off. PPO-penalty proper also switches clipping off
    /// (`clip_range = +∞`). Default 0.
    pub kl_coef: f32,
    /// `d_targ` of the adaptive penalty: after each update, with
    /// `d = mean KL[π_old ‖ π_new]` over the rollout, `β ← β/2` when
    /// `d < d_targ/1.5` and `β ← 2β` when `d > 1.5·d_targ` (kept within
    /// [`KL_COEF_MIN`]`..=`[`KL_COEF_MAX`]). `None`: `β` stays fixed. Default `None`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub kl_target: Option<f32>,
    /// Running observation normalisation (saved with the policy). Default true.
    pub normalize_obs: bool,
    /// Scale rewards by the running std of the discounted return
    /// (SB3's `VecNormalize(norm_reward=True)`: the return resets at every
    /// episode end, the scaled reward is clipped to ±10). With `n_envs > 1`
    /// it follows `VecNormalize` over a `VecEnv`
    /// (`stable_baselines3/common/vec_env/vec_normalize.py`,
    /// `returns = returns * gamma + reward`, `returns[dones] = 0`): one
    /// discounted return per environment copy, each reset at its own copy's
    /// episode ends ([`Cursor::discounted_return`]), and one return
    /// normaliser that every copy's return updates, in stepping order. One
    /// difference from SB3: SB3 updates its statistics once per step with
    /// all copies' returns and then scales every copy's reward by that one
    /// std; here each copy's reward is scaled right after its own return
    /// is added (the statistics after a whole step are the same; the scale
    /// of all but the last copy's rewards of the step can differ slightly).
    /// Default false.
    pub normalize_reward: bool,
    /// Adam's `β₁, β₂, ε`. Default `0.9, 0.999, 1e-5`.
    pub adam: AdamConfig,
    /// Environment copies stepped side by side per rollout (SB3's
    /// `n_envs`); each needs its own copy and cursor
    /// ([`VecEnv`](crate::vec_env::VecEnv)). Default 1.
    pub n_envs: u16,
    /// Steps collected from each copy per rollout (SB3's `n_steps`): a
    /// rollout is `n_envs × n_steps` samples, at most the capacity `N`.
    /// 0 (the default) fills the capacity: `⌊N / n_envs⌋` steps each.
    pub n_steps: u16,
}

impl PpoConfig {
    /// The defaults listed on each field.
    pub const DEFAULT: Self = Self {
        total_steps: 100_000,
        learning_rate: Schedule::linear_to_zero(3e-4),
        clip_range: Schedule::Constant(0.2),
        gamma: 0.99,
        gae_lambda: 0.95,
        epochs: 10,
        minibatches: 4,
        normalize_advantages: true,
        value_clip: None,
        ent_coef: 0.0,
        vf_coef: 0.5,
        max_grad_norm: Some(0.5),
        target_kl: None,
        kl_coef: 0.0,
        kl_target: None,
        normalize_obs: true,
        normalize_reward: false,
        adam: AdamConfig::DEFAULT,
        n_envs: 1,
        n_steps: 0,
    };

    /// Every field zero or `false` (invalid: zero epochs), the placeholder in
    /// [`Ppo::ZERO`].
    const ZERO: Self = Self {
        total_steps: 0,
        learning_rate: Schedule::Constant(0.0),
        clip_range: Schedule::Constant(0.0),
        gamma: 0.0,
        gae_lambda: 0.0,
        epochs: 0,
        minibatches: 0,
        normalize_advantages: false,
        value_clip: None,
        ent_coef: 0.0,
        vf_coef: 0.0,
        max_grad_norm: None,
        target_kl: None,
        kl_coef: 0.0,
        kl_target: None,
        normalize_obs: false,
        normalize_reward: false,
        adam: AdamConfig::ZERO,
        n_envs: 0,
        n_steps: 0,
    };

    /// Tuned for [`CartPole`](crate::env::CartPole) over 100 000 steps: RL
    /// Zoo's CartPole-v1 hyper-parameters (`γ` 0.98, `λ` 0.8, learning rate
    /// `1e-3 → 0` and clip range `0.2 → 0` annealed linearly) with 10 epochs
    /// of 4 minibatches. With a 256-step rollout it solves CartPole (100-episode
    /// deterministic mean ≥ 475) in 2k–20k steps with 4-64-64 or 4-32-32
    /// networks. Set `total_steps` to the budget: the schedules anneal over it.
    pub const CARTPOLE: Self = Self {
        learning_rate: Schedule::linear_to_zero(1e-3),
        clip_range: Schedule::linear_to_zero(0.2),
        gamma: 0.98,
        gae_lambda: 0.8,
        ..Self::DEFAULT
    };

    /// The samples of one rollout into a buffer of `capacity`:
    /// `n_envs × n_steps`, or with `n_steps = 0` the largest multiple of
    /// `n_envs` that fits (`capacity` itself for one environment). May
    /// exceed `capacity` ([`validate`](Self::validate) refuses that).
    pub const fn rollout_len(&self, capacity: usize) -> usize {
        let n_envs = self.n_envs as usize;
        if self.n_steps > 0 {
            n_envs * self.n_steps as usize
        } else {
            match capacity.checked_div(n_envs) {
                Some(steps) => steps * n_envs,
                None => 0,
            }
        }
    }

    /// Checks every field for a rollout buffer of `capacity` samples (the
    /// rollout is [`rollout_len`](Self::rollout_len)`(capacity)` of them),
    /// before any rollout is collected.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first offending field and its
    /// constraint: `γ, λ ∉ [0, 1]`, a learning-rate or clip-range schedule that
    /// is not finite and positive at the start or negative at the end, zero
    /// epochs or minibatches, zero `n_envs`, `n_envs × n_steps` beyond
    /// `capacity` (named `n_steps`), a rollout that is not a multiple of
    /// `minibatches`, negative or non-finite coefficients, a non-positive
    /// grad-norm clip, value clip or target KL, invalid Adam settings.
    pub fn validate(&self, capacity: usize) -> Result<(), Error> {
        use crate::config::{check, non_negative, positive_or_off, unit};
        unit("gamma", self.gamma)?;
        unit("gae_lambda", self.gae_lambda)?;
        self.learning_rate.validate("learning_rate", 1.0)?;
        if !matches!(self.clip_range, Schedule::Constant(c) if c == f32::INFINITY) {
            self.clip_range.validate("clip_range", f32::MAX)?;
        }
        let anneals = !matches!(
            (self.learning_rate, self.clip_range),
            (Schedule::Constant(_), Schedule::Constant(_))
        );
        check(
            "total_steps",
            self.total_steps > 0 || !anneals,
            "must be > 0 when a schedule anneals over it",
        )?;
        check("epochs", self.epochs > 0, "must be > 0")?;
        check("minibatches", self.minibatches > 0, "must be > 0")?;
        check("n_envs", self.n_envs > 0, "must be > 0")?;
        let rollout_len = self.rollout_len(capacity);
        check(
            "n_steps",
            rollout_len <= capacity,
            "n_envs × n_steps must not exceed the rollout capacity N",
        )?;
        check(
            "minibatches",
            rollout_len > 0 && rollout_len.is_multiple_of(usize::from(self.minibatches)),
            "must divide the rollout length",
        )?;
        non_negative("ent_coef", self.ent_coef)?;
        non_negative("vf_coef", self.vf_coef)?;
        positive_or_off("max_grad_norm", self.max_grad_norm)?;
        positive_or_off("target_kl", self.target_kl)?;
        positive_or_off("value_clip", self.value_clip)?;
        let kl_floor = if self.kl_target.is_some() {
            KL_COEF_MIN
        } else {
            0.0
        };
        check(
            "kl_coef",
            (kl_floor..=KL_COEF_MAX).contains(&self.kl_coef),
            "must be in [0, 1e5], and >= 1e-5 when kl_target adapts it",
        )?;
        positive_or_off("kl_target", self.kl_target)?;
        self.adam.validate()
    }
}

impl Default for PpoConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The smallest adaptive KL coefficient: halving stops here, so `β` can
/// always double back (a `β` halved to 0 would stay 0).
pub const KL_COEF_MIN: f32 = 1e-5;
/// The largest KL coefficient (doubling stops here).
pub const KL_COEF_MAX: f32 = 1e5;

/// PPO's adaptive KL rule (Schulman et al. 2017, §4): `β/2` when the
/// measured KL `d < d_targ/1.5`, `2β` when `d > 1.5·d_targ`, `β` in between
/// (the boundaries included), kept within [`KL_COEF_MIN`]`..=`[`KL_COEF_MAX`].
/// Used by PPO-penalty and by [`Anchored`](super::Anchored).
pub fn adapted_kl_coef(kl_coef: f32, d: f32, target: f32) -> f32 {
    if d < target / 1.5 {
        (kl_coef * 0.5).max(KL_COEF_MIN)
    } else if d > target * 1.5 {
        (kl_coef * 2.0).min(KL_COEF_MAX)
    } else {
        kl_coef
    }
}

/// A2C hyper-parameters; defaults are SB3's A2C (with Adam instead of RMSprop).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct A2cConfig {
    /// Environment steps the learning-rate schedule runs over. Default 500 000.
    pub total_steps: u64,
    /// Learning rate over training progress. Default constant `7e-4`.
    pub learning_rate: Schedule,
    /// Discount `γ`. Default 0.99.
    pub gamma: f32,
    /// `λ` of the advantage estimate; 1 gives n-step returns. Default 1.
    pub gae_lambda: f32,
    /// Entropy bonus coefficient. Default 0.
    pub ent_coef: f32,
    /// Value loss coefficient. Default 0.5.
    pub vf_coef: f32,
    /// Global gradient-norm clip. Default `Some(0.5)`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub max_grad_norm: Option<f32>,
    /// Normalise advantages over the rollout. Default false.
    pub normalize_advantages: bool,
    /// Running observation normalisation. Default true.
    pub normalize_obs: bool,
    /// Reward scaling by the discounted-return std. Default false.
    pub normalize_reward: bool,
    /// Adam's `β₁, β₂, ε`. Default `0.9, 0.999, 1e-5`.
    pub adam: AdamConfig,
}

impl A2cConfig {
    /// The defaults listed on each field.
    pub const DEFAULT: Self = Self {
        total_steps: 500_000,
        learning_rate: Schedule::Constant(7e-4),
        gamma: 0.99,
        gae_lambda: 1.0,
        ent_coef: 0.0,
        vf_coef: 0.5,
        max_grad_norm: Some(0.5),
        normalize_advantages: false,
        normalize_obs: true,
        normalize_reward: false,
        adam: AdamConfig::DEFAULT,
    };
}

impl Default for A2cConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl A2cConfig {
    /// The equivalent [`PpoConfig`]: one epoch, one minibatch, no clipping
    /// (`const`, so an A2C agent can be a `static`).
    pub const fn to_ppo(self) -> PpoConfig {
        let c = self;
        PpoConfig {
            total_steps: c.total_steps,
            learning_rate: c.learning_rate,
            clip_range: Schedule::Constant(f32::INFINITY),
            gamma: c.gamma,
            gae_lambda: c.gae_lambda,
            epochs: 1,
            minibatches: 1,
            normalize_advantages: c.normalize_advantages,
            value_clip: None,
            ent_coef: c.ent_coef,
            vf_coef: c.vf_coef,
            max_grad_norm: c.max_grad_norm,
            target_kl: None,
            kl_coef: 0.0,
            kl_target: None,
            normalize_obs: c.normalize_obs,
            normalize_reward: c.normalize_reward,
            adam: c.adam,
            n_envs: 1,
            n_steps: 0,
        }
    }
}

impl From<A2cConfig> for PpoConfig {
    fn from(c: A2cConfig) -> Self {
        c.to_ppo()
    }
}

/// Diagnostics of one [`Ppo::update`], averaged over every sample (losses)
/// or every minibatch (gradient norm) it processed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UpdateStats {
    /// Policy loss: the clipped surrogate, plus the KL penalty `β·k₃` when
    /// [`PpoConfig::kl_coef`] is on.
    pub policy_loss: f32,
    /// Value loss `½(V − R)²`.
    pub value_loss: f32,
    /// Policy entropy.
    pub entropy: f32,
    /// `mean((r − 1) − log r)`, the KL estimate between old and new policy.
    pub approx_kl: f32,
    /// Fraction of samples with `|r − 1| > ε`.
    pub clip_fraction: f32,
    /// `1 − Var(R − V_old)/Var(R)` over the rollout.
    pub explained_variance: f32,
    /// Mean gradient norm before clipping.
    pub grad_norm: f32,
    /// Epochs run (fewer than configured after a target-KL stop).
    pub epochs: u16,
    /// Learning rate used.
    pub learning_rate: f32,
    /// Clip range used.
    pub clip_range: f32,
    /// KL penalty coefficient `β` used (0: no penalty).
    pub kl_coef: f32,
    /// Mean per-step `log π(a|s) − log π_ref(a|s)` over the rollout, the
    /// KL to the reference policy of an [`Anchored`](super::Anchored) agent
    /// (0 for other agents).
    pub kl_reference: f32,
    /// TRPO: the accepted step as a fraction `shrinkᵏ` of the full
    /// natural-gradient step (0: every line-search candidate was refused;
    /// 0 for other agents).
    pub trust_step: f32,
}

impl UpdateStats {
    /// Turns the sums of the per-sample terms (losses, entropy, KL, clip
    /// count) over `samples` samples and of the gradient norms over `steps`
    /// optimiser steps into means.
    pub(crate) fn average(&mut self, samples: u32, steps: u32) {
        let per_sample = 1.0 / samples.max(1) as f32;
        self.policy_loss *= per_sample;
        self.value_loss *= per_sample;
        self.entropy *= per_sample;
        self.approx_kl *= per_sample;
        self.clip_fraction *= per_sample;
        self.grad_norm /= steps.max(1) as f32;
    }
}

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
    /// cursor's ([`Cursor::discounted_return`]) and this stays as it was.
    pub discounted_return: f32,
    /// The current KL penalty coefficient `β` (set from
    /// [`PpoConfig::kl_coef`] by [`init`](Self::init), adapted after each
    /// update when [`PpoConfig::kl_target`] is set).
    pub kl_coef: f32,
    /// Environment steps collected so far.
    pub steps: u64,
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
    /// [`Trainer::start_envs`](crate::train::Trainer::start_envs) calls).
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

    /// The observation as the networks see it, without updating statistics
    /// (the identity while the normaliser is empty, e.g. `normalize_obs = false`).
    fn observe(&self, obs: &SVector<f32, OBS>) -> Result<SVector<f32, OBS>, Error> {
        self.obs_norm.normalize(obs)
    }

    /// Reward scaling (SB3's `VecNormalize`): `clip(r / √(Var[G] + ε), ±10)`
    /// with `G ← γG + r` the running discounted return of the environment
    /// copy that paid `r` (`discounted_return`), the one `return_norm`
    /// updated with every copy's every `G`, and `G` reset after every episode
    /// end of its copy (terminated or truncated). Gymnasium's
    /// `NormalizeReward` differs: it resets `G` only on termination and does
    /// not clip.
    fn scale_reward(
        config: &PpoConfig,
        return_norm: &mut RunningNorm<1>,
        discounted_return: &mut f32,
        reward: f32,
        done: bool,
    ) -> Result<f32, Error> {
        if !config.normalize_reward {
            return Ok(reward);
        }
        *discounted_return = *discounted_return * config.gamma + reward;
        return_norm.update(&SVector::<f32, 1>::new(*discounted_return))?;
        if done {
            *discounted_return = 0.0;
        }
        let scaled = reward / math::sqrt(return_norm.var[0] + crate::normalize::EPSILON);
        Ok(scaled.clamp(-crate::normalize::CLIP, crate::normalize::CLIP))
    }

    /// Collects a rollout of [`PpoConfig::rollout_len`]`(N)` steps (all `N`
    /// by default) from `env`, continuing from `cursor`, then computes
    /// advantages and returns. `on_episode` hears about every finished
    /// episode. (With `n_envs > 1`, see [`collect_envs`](Self::collect_envs).)
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `n_envs` unless it is 1 (before
    /// anything changes); [`Error::NonFinite`] for a non-finite observation,
    /// reward or network output; the environment's own errors. A refused
    /// collect changes nothing in the agent: the weights are never touched,
    /// the normalisers and the discounted returns (with copies, every
    /// cursor's) are restored and the partial rollout is discarded (so
    /// `update` then refuses with [`Error::RolloutIncomplete`]).
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
        self.collect_until(env, cursor, rng, on_episode, false, |_, _, _| Ok(0.0))
    }

    /// Collects a rollout from `n_envs` environment copies side by side
    /// (SB3's vectorised collection): `n_steps` rounds, each stepping
    /// `envs[0], …, envs[n_envs − 1]` once in order, each continuing from its
    /// own cursor in `cursors`. The rollout is stored step-major —
    /// transition `t·n_envs + e` is step `t` of copy `e` — and GAE runs per
    /// copy along its own steps, bootstrapping each from its own last
    /// observation ([`gae_strided`](super::gae::gae_strided)). Copies beyond
    /// `n_envs` are not touched. With `n_envs = 1` this is
    /// [`collect`](Self::collect), bit for bit.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `n_envs` when fewer than `n_envs`
    /// copies or cursors are given, or `n_steps` when the rollout exceeds
    /// `N` (before anything changes); otherwise as
    /// [`collect`](Self::collect), with the same guarantees.
    pub fn collect_envs<E, R>(
        &mut self,
        envs: &mut [E],
        cursors: &mut [Cursor<SVector<f32, OBS>>],
        rng: &mut R,
        on_episode: impl FnMut(Episode),
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.collect_transaction(envs, cursors, rng, on_episode, false, |_, _, _| Ok(0.0))
    }

    /// [`collect`](Self::collect) with a per-step reward penalty: before
    /// each step, `penalty(raw_obs, action, log_prob)` is given the raw
    /// observation, the sampled action and its log-probability, and its
    /// result is subtracted from the plant's reward (before reward scaling).
    /// Episode returns reported to `on_episode` stay the plant's.
    ///
    /// This is how [`Anchored`](super::Anchored) penalises the divergence
    /// from a reference policy, `β·(log π(a|s) − log π_ref(a|s))`.
    ///
    /// # Errors
    /// As [`collect`](Self::collect), and the penalty's own error (raised
    /// before the step is taken), with the same guarantees.
    pub fn collect_shaped<E, R>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        on_episode: impl FnMut(Episode),
        penalty: impl FnMut(&SVector<f32, OBS>, &A::Action, f32) -> Result<f32, Error>,
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.collect_until(env, cursor, rng, on_episode, false, penalty)
    }

    /// [`collect`](Self::collect), optionally stopping early at the end of
    /// the first episode (REINFORCE's episode-by-episode updates).
    ///
    /// Transactional for the agent: on an error the observation and return
    /// statistics and the discounted returns are restored and the partial
    /// rollout is discarded, so the agent is as before the call (the
    /// environment and the rest of `cursor` have moved on — they follow the
    /// plant).
    pub(crate) fn collect_until<E, R>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        on_episode: impl FnMut(Episode),
        stop_at_episode_end: bool,
        penalty: impl FnMut(&SVector<f32, OBS>, &A::Action, f32) -> Result<f32, Error>,
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        if self.config.n_envs != 1 {
            return Err(Error::config(
                "n_envs",
                "must be 1 to collect from one environment (collect_envs, Trainer::run_envs)",
            ));
        }
        self.collect_transaction(
            core::slice::from_mut(env),
            core::slice::from_mut(cursor),
            rng,
            on_episode,
            stop_at_episode_end,
            penalty,
        )
    }

    /// The shape checks, then [`collect_rollout`](Self::collect_rollout)
    /// with the agent restored on error (see
    /// [`collect_until`](Self::collect_until)).
    fn collect_transaction<E, R>(
        &mut self,
        envs: &mut [E],
        cursors: &mut [Cursor<SVector<f32, OBS>>],
        rng: &mut R,
        on_episode: impl FnMut(Episode),
        stop_at_episode_end: bool,
        penalty: impl FnMut(&SVector<f32, OBS>, &A::Action, f32) -> Result<f32, Error>,
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        let n_envs = usize::from(self.config.n_envs);
        if n_envs == 0 || envs.len() < n_envs || cursors.len() < n_envs {
            return Err(Error::config(
                "n_envs",
                "must be > 0 and at most the environment copies given",
            ));
        }
        if self.config.rollout_len(N) > N {
            return Err(Error::config(
                "n_steps",
                "n_envs × n_steps must not exceed the rollout capacity N",
            ));
        }
        let saved = (
            self.obs_norm.clone(),
            self.return_norm.clone(),
            self.discounted_return,
        );
        // The copies' discounted returns (n_envs > 1) are saved in the
        // rollout's value targets, which `collect_rollout` writes only after
        // its last fallible step: copy `e`'s in `returns[e]` (every copy
        // stepped has `e` < the rollout length ≤ `N`).
        for (saved, cursor) in self.rollout.returns.iter_mut().zip(&cursors[..n_envs]) {
            *saved = cursor.discounted_return;
        }
        let result = self.collect_rollout(
            &mut envs[..n_envs],
            &mut cursors[..n_envs],
            rng,
            on_episode,
            stop_at_episode_end,
            penalty,
        );
        if result.is_err() {
            (self.obs_norm, self.return_norm, self.discounted_return) = saved;
            for (cursor, &saved) in cursors[..n_envs].iter_mut().zip(&self.rollout.returns) {
                cursor.discounted_return = saved;
            }
            self.rollout.clear();
        }
        result
    }

    /// The rollout proper: `envs` and `cursors` are the `n_envs` copies in
    /// use (checked by the caller).
    fn collect_rollout<E, R>(
        &mut self,
        envs: &mut [E],
        cursors: &mut [Cursor<SVector<f32, OBS>>],
        rng: &mut R,
        mut on_episode: impl FnMut(Episode),
        stop_at_episode_end: bool,
        mut penalty: impl FnMut(&SVector<f32, OBS>, &A::Action, f32) -> Result<f32, Error>,
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.rollout.clear();
        let len = self.config.rollout_len(N);
        let n_envs = cursors.len();
        // On a desktop, with several copies, the network passes of up to
        // `CHUNK` copies run together, one layer at a time (`nn::batch`),
        // before their actions are drawn and their steps taken in the
        // copies' order: the same bits, draws and errors as one copy at a
        // time. (A Cortex-M runs its batched passes sample by sample, so
        // there it keeps the plain loop, and the flash it saves.)
        let batched = cfg!(not(target_arch = "arm")) && n_envs > 1 && !stop_at_episode_end;
        let mut values = [0.0f32; CHUNK];
        // Step-major, as SB3 steps its `VecEnv`: one round steps every copy.
        'rollout: while self.rollout.len() < len {
            let groups = envs
                .chunks_mut(CHUNK.max(1))
                .zip(cursors.chunks_mut(CHUNK.max(1)));
            for (envs, cursors) in groups {
                let prepared = if batched {
                    self.prepare_round(cursors, &mut values)
                } else {
                    0
                };
                for (k, (env, cursor)) in envs.iter_mut().zip(cursors.iter_mut()).enumerate() {
                    let sampled = (k < prepared).then_some((k, values[k]));
                    let done = self.collect_step(
                        env,
                        cursor,
                        rng,
                        &mut on_episode,
                        &mut penalty,
                        n_envs,
                        sampled,
                    )?;
                    if stop_at_episode_end && done {
                        break 'rollout;
                    }
                }
            }
        }
        // GAE per copy, each bootstrapping from its own next observation.
        for (e, cursor) in cursors.iter().enumerate() {
            let last_value = self.train.params.critic.value(&self.observe(&cursor.obs)?);
            self.rollout.env_advantages(
                e,
                n_envs,
                last_value,
                self.config.gamma,
                self.config.gae_lambda,
            );
        }
        // Value targets `Â + V_old` whose square (the value loss) or whose
        // gradients would overflow are refused here, before any update can
        // half-apply — and before `returns` is written (see
        // `collect_transaction`).
        let r = &self.rollout;
        let usable = |x: f32| x.is_finite() && x.abs() <= crate::optim::MAX_GRADIENT;
        if !(0..r.len()).all(|t| usable(r.advantages[t] + r.values[t]) && usable(r.advantages[t])) {
            return Err(Error::ValueOverflow);
        }
        self.rollout.compute_returns();
        self.steps += self.rollout.len() as u64;
        Ok(())
    }

    /// The network passes of one round of the copies behind `cursors` (at
    /// most `CHUNK`), together: each copy's network input — normalised, and
    /// the statistics updated, on a copy of the observation normaliser, so
    /// that [`collect_step`](Self::collect_step) repeats the same update on
    /// the agent's own — into the actor's batch, the actor's pass
    /// ([`Actor::sample_batch`]) and the critic's values into `values`.
    /// Returns how many copies were prepared: those before the first whose
    /// observation is refused (whose `collect_step` then refuses it).
    fn prepare_round(
        &mut self,
        cursors: &[Cursor<SVector<f32, OBS>>],
        values: &mut [f32; CHUNK],
    ) -> usize {
        let mut ahead = self.config.normalize_obs.then(|| self.obs_norm.clone());
        let inputs = A::batch_inputs(&mut self.actor_batch);
        let mut n = 0;
        for (input, cursor) in inputs.iter_mut().zip(cursors) {
            let obs = match &mut ahead {
                Some(norm) => norm.update_normalize(&cursor.obs),
                None => self.obs_norm.normalize(&cursor.obs),
            };
            let Ok(obs) = obs else { break };
            *input = obs;
            n += 1;
        }
        let obs = *inputs;
        self.train
            .params
            .actor
            .sample_batch(&mut self.actor_batch, n);
        self.train
            .params
            .critic
            .values_batch(&mut self.critic_batch, &obs[..n], &mut values[..n]);
        n
    }

    /// One step of one copy: its network input, action (drawn, or from
    /// `sampled = (k, value)`: sample `k` of [`prepare_round`](Self::prepare_round)
    /// with its value), penalty, step, reward scaling and transition.
    /// Returns whether the episode ended.
    #[allow(clippy::too_many_arguments)]
    fn collect_step<E, R>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        on_episode: &mut impl FnMut(Episode),
        penalty: &mut impl FnMut(&SVector<f32, OBS>, &A::Action, f32) -> Result<f32, Error>,
        n_envs: usize,
        sampled: Option<(usize, f32)>,
    ) -> Result<bool, Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        let obs = if self.config.normalize_obs {
            self.obs_norm.update_normalize(&cursor.obs)?
        } else {
            self.observe(&cursor.obs)?
        };
        let ((action, log_prob), v) = match sampled {
            Some((k, v)) => (
                self.train
                    .params
                    .actor
                    .sample_at(&mut self.actor_batch, k, rng)?,
                v,
            ),
            None => (
                self.train.params.actor.sample(&obs, rng)?,
                self.train.params.critic.value(&obs),
            ),
        };
        check_finite(v)?;
        let penalty = penalty(&cursor.obs, &action, log_prob)?;
        check_finite(penalty)?;
        // The plant receives the command; the rollout keeps the raw sample.
        let command = self.space.command(&action);
        let step = cursor.advance(env, command, rng, on_episode)?;
        // Each copy's own discounted return (SB3 `VecNormalize`'s
        // per-environment `returns`), one shared normaliser.
        let discounted_return = if n_envs == 1 {
            &mut self.discounted_return
        } else {
            &mut cursor.discounted_return
        };
        let reward = Self::scale_reward(
            &self.config,
            &mut self.return_norm,
            discounted_return,
            step.reward - penalty,
            step.done(),
        )?;
        let final_value = if step.truncated {
            self.train.params.critic.value(&self.observe(&step.obs)?)
        } else {
            0.0
        };
        self.rollout.push(Transition {
            obs,
            action,
            log_prob,
            value: v,
            reward,
            terminated: step.terminated,
            truncated: step.truncated,
            final_value,
        })?;
        Ok(step.done())
    }

    /// One PPO update on the collected rollout (see the module docs).
    ///
    /// # Errors
    /// [`Error::RolloutIncomplete`] without a complete rollout that has not
    /// been trained on yet, [`Error::InvalidConfig`] for an invalid
    /// configuration — both before anything changes; [`Error::NonFinite`] or
    /// [`Error::GradientOverflow`] for a non-finite network output or an
    /// unusable gradient mid-update: the failing minibatch step is not
    /// applied, the finite steps before it stay applied, and the rollout is
    /// consumed either way.
    pub fn update<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Result<UpdateStats, Error> {
        let c = self.config;
        let n = self.rollout.len();
        if !self.rollout.is_ready() {
            return Err(Error::RolloutIncomplete);
        }
        c.validate(n)?;
        self.train.params.critic.validate()?;
        // Trained on once: a second update needs a new rollout.
        self.rollout.consume();
        // Schedules are evaluated at the progress *before* this rollout (CleanRL).
        let progress_steps = self.steps.saturating_sub(n as u64);
        let lr = c.learning_rate.at(progress_steps, c.total_steps);
        let clip = c.clip_range.at(progress_steps, c.total_steps);
        let batch = n / usize::from(c.minibatches);
        let inv_batch = 1.0 / batch as f32;

        for (i, slot) in self.rollout.indices[..n].iter_mut().enumerate() {
            *slot = i as u16;
        }
        let beta = self.kl_coef;
        let mut stats = UpdateStats {
            explained_variance: self.rollout.explained_variance(),
            learning_rate: lr,
            clip_range: clip,
            kl_coef: beta,
            ..UpdateStats::default()
        };
        let (mut samples, mut steps) = (0u32, 0u32);
        for epoch in 0..c.epochs {
            rng::shuffle(rng, &mut self.rollout.indices[..n]);
            let mut epoch_kl = 0.0f32;
            for start in (0..n).step_by(batch) {
                // Advantage normalisation over the minibatch (unbiased std, as torch).
                let (mean, inv_std) = if c.normalize_advantages && batch > 1 {
                    let idx = &self.rollout.indices[start..start + batch];
                    let adv = |k: &u16| self.rollout.advantages[usize::from(*k)];
                    let mean = idx.iter().map(adv).sum::<f32>() * inv_batch;
                    let ss: f32 = idx.iter().map(|k| (adv(k) - mean) * (adv(k) - mean)).sum();
                    (mean, 1.0 / (math::sqrt(ss / (batch - 1) as f32) + 1e-8))
                } else {
                    (0.0, 1.0)
                };

                self.train.zero_grad();
                // The minibatch in chunks of `CHUNK` samples, each network
                // run one layer at a time over a chunk (the same bits as
                // sample by sample: `nn::batch`).
                for chunk in self.rollout.indices[start..start + batch].chunks(CHUNK) {
                    let n = chunk.len();
                    let mut actions = [A::ZERO_ACTION; CHUNK];
                    let (mut old_values, mut returns) = ([0.0f32; CHUNK], [0.0f32; CHUNK]);
                    let inputs = A::batch_inputs(&mut self.actor_batch);
                    for (s, &i) in chunk.iter().enumerate() {
                        let i = usize::from(i);
                        inputs[s] = self.rollout.obs[i];
                        actions[s] = self.rollout.actions[i];
                        old_values[s] = self.rollout.values[i];
                        returns[s] = self.rollout.returns[i];
                    }
                    let obs = *inputs;
                    let actor = &self.train.params.actor;
                    let mut evaluated = [(0.0f32, 0.0f32); CHUNK];
                    actor.evaluate_batch(&mut self.actor_batch, &actions[..n], &mut evaluated)?;
                    let mut d_log_probs = [0.0f32; CHUNK];
                    for ((&i, &(log_prob, entropy)), d) in
                        chunk.iter().zip(&evaluated).zip(&mut d_log_probs)
                    {
                        let i = usize::from(i);
                        let advantage = (self.rollout.advantages[i] - mean) * inv_std;
                        let log_ratio = log_prob - self.rollout.log_probs[i];
                        let s =
                            clipped_surrogate(log_prob, self.rollout.log_probs[i], advantage, clip);
                        // PPO-penalty's β·KL term (off, and not evaluated, at β = 0).
                        let (penalty_loss, d_log_prob) = if beta > 0.0 {
                            let p = kl_penalty(log_ratio, s.ratio, beta);
                            (p.loss, s.d_log_prob + p.d_log_prob)
                        } else {
                            (0.0, s.d_log_prob)
                        };
                        *d = d_log_prob * inv_batch;
                        let kl = approx_kl_at(log_ratio, s.ratio);
                        epoch_kl += kl;
                        stats.policy_loss += s.loss + penalty_loss;
                        stats.entropy += entropy;
                        stats.approx_kl += kl;
                        stats.clip_fraction += f32::from(u8::from(s.clipped));
                        samples += 1;
                    }
                    actor.backward_batch(
                        &mut self.actor_batch,
                        &actions[..n],
                        &d_log_probs[..n],
                        -c.ent_coef * inv_batch,
                        &mut self.train.grads.actor,
                    );

                    let mut value_losses = [0.0f32; CHUNK];
                    self.train.params.critic.fit_batch(
                        &mut self.critic_batch,
                        &obs[..n],
                        &old_values[..n],
                        &returns[..n],
                        c.value_clip,
                        c.vf_coef,
                        inv_batch,
                        &mut value_losses,
                        &mut self.train.grads.critic,
                    );
                    for &value_loss in &value_losses[..n] {
                        stats.value_loss += value_loss;
                    }
                }
                stats.grad_norm += self.train.apply(lr, c.max_grad_norm)?;
                steps += 1;
            }
            stats.epochs = epoch + 1;
            if c.target_kl
                .is_some_and(|target| epoch_kl / n as f32 > target)
            {
                break;
            }
        }
        if let Some(target) = c.kl_target {
            self.adapt_kl_coef(target)?;
        }
        stats.average(samples, steps);
        Ok(stats)
    }
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize>
    Ppo<A, C, OBS, N, CHUNK>
{
    /// PPO-penalty's adaptive rule (Schulman et al. 2017, §4): with
    /// `d = mean_t k₃` of the updated policy against the rollout's
    /// log-probabilities, halve `β` when `d < d_targ/1.5`, double it when
    /// `d > 1.5·d_targ`, within [`KL_COEF_MIN`]`..=`[`KL_COEF_MAX`].
    ///
    /// # Errors
    /// [`Error::NonFinite`] if the updated actor gives a non-finite
    /// log-probability; `β` is then unchanged.
    fn adapt_kl_coef(&mut self, target: f32) -> Result<(), Error> {
        let n = self.rollout.len();
        let mut sum = 0.0f32;
        for i in 0..n {
            let (log_prob, _) = self.train.params.actor.evaluate(
                &self.rollout.obs[i],
                &self.rollout.actions[i],
                &mut self.actor_cache,
            )?;
            sum += approx_kl(log_prob - self.rollout.log_probs[i]);
        }
        let d = sum / n.max(1) as f32;
        check_finite(d)?;
        self.kl_coef = adapted_kl_coef(self.kl_coef, d, target);
        Ok(())
    }
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize>
    Controller<OBS> for Ppo<A, C, OBS, N, CHUNK>
{
    type Action = A::Action;

    /// What [`policy`](Self::policy)`().act(obs)` returns, without the copy.
    fn act(&self, obs: &SVector<f32, OBS>) -> Result<A::Action, Error> {
        crate::policy::act(&self.train.params.actor, &self.obs_norm, &self.space, obs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::Mlp;
    use crate::policy::CategoricalActor;

    type Agent = Ppo<CategoricalActor<Mlp<4, 8, 2>>, Mlp<4, 8, 1>, 4, 64>;
    use crate::error::Error;

    static STATIC_AGENT: Agent = Ppo::new(PpoConfig::DEFAULT);

    #[test]
    fn agent_can_be_static_and_config_validates() {
        assert_eq!(STATIC_AGENT.steps, 0);
        assert!(PpoConfig::DEFAULT.validate(64).is_ok());
        assert_eq!(
            PpoConfig::DEFAULT.validate(63),
            Err(Error::config(
                "minibatches",
                "must divide the rollout length"
            ))
        );
        let bad = PpoConfig {
            gamma: 1.5,
            ..PpoConfig::DEFAULT
        };
        assert_eq!(
            bad.validate(64),
            Err(Error::config("gamma", "must be in [0, 1]"))
        );
        let a2c: PpoConfig = A2cConfig::DEFAULT.into();
        assert!(a2c.validate(5).is_ok());
    }

    /// Every float field × {NaN, ±∞, negative, zero, huge}: accepted only
    /// where the value means something, otherwise refused naming the field.
    #[test]
    fn every_invalid_value_is_refused_naming_its_field() {
        let bad = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.5, 0.0, 1e9];
        type Set = fn(&mut PpoConfig, f32);
        let fields: [(&str, Set, &[f32]); 14] = [
            ("gamma", |c, x| c.gamma = x, &[0.0]),
            ("gae_lambda", |c, x| c.gae_lambda = x, &[0.0]),
            (
                "learning_rate",
                |c, x| c.learning_rate = Schedule::Constant(x),
                &[],
            ),
            // +∞ (or huge): no clipping, how A2C and REINFORCE run on this machinery.
            (
                "clip_range",
                |c, x| c.clip_range = Schedule::Constant(x),
                &[f32::INFINITY, 1e9],
            ),
            ("ent_coef", |c, x| c.ent_coef = x, &[0.0, 1e9]),
            ("vf_coef", |c, x| c.vf_coef = x, &[0.0, 1e9]),
            ("max_grad_norm", |c, x| c.max_grad_norm = Some(x), &[1e9]),
            ("target_kl", |c, x| c.target_kl = Some(x), &[1e9]),
            ("value_clip", |c, x| c.value_clip = Some(x), &[1e9]),
            ("adam.beta1", |c, x| c.adam.beta1 = x, &[0.0]),
            ("adam.beta2", |c, x| c.adam.beta2 = x, &[0.0]),
            ("adam.eps", |c, x| c.adam.eps = x, &[]),
            ("kl_coef", |c, x| c.kl_coef = x, &[0.0]),
            (
                "kl_target",
                |c, x| {
                    c.kl_coef = 1.0;
                    c.kl_target = Some(x);
                },
                &[1e9],
            ),
        ];
        for (field, set, accepted) in fields {
            for x in bad {
                let mut c = PpoConfig::DEFAULT;
                set(&mut c, x);
                let result = c.validate(64);
                if accepted.iter().any(|a| a.to_bits() == x.to_bits()) {
                    assert_eq!(result, Ok(()), "{field} = {x}");
                } else {
                    assert!(
                        matches!(result, Err(Error::InvalidConfig { field: f, .. }) if f == field),
                        "{field} = {x}: {result:?}"
                    );
                }
            }
        }
        let mut c = PpoConfig::DEFAULT;
        c.adam.eps = 1e-40; // denormal
        assert!(c.validate(64).is_err());
        c = PpoConfig {
            total_steps: 0,
            ..PpoConfig::DEFAULT
        };
        assert_eq!(
            c.validate(64),
            Err(Error::config(
                "total_steps",
                "must be > 0 when a schedule anneals over it"
            ))
        );
        c = PpoConfig {
            epochs: 0,
            ..PpoConfig::DEFAULT
        };
        assert!(matches!(
            c.validate(64),
            Err(Error::InvalidConfig {
                field: "epochs",
                ..
            })
        ));
        c = PpoConfig {
            minibatches: 0,
            ..PpoConfig::DEFAULT
        };
        assert!(matches!(
            c.validate(64),
            Err(Error::InvalidConfig {
                field: "minibatches",
                ..
            })
        ));
        // An adaptive β must start where halving and doubling can act.
        let adaptive = |kl_coef| PpoConfig {
            kl_coef,
            kl_target: Some(0.01),
            ..PpoConfig::DEFAULT
        };
        assert_eq!(adaptive(KL_COEF_MIN).validate(64), Ok(()));
        assert_eq!(adaptive(KL_COEF_MAX).validate(64), Ok(()));
        for beta in [0.0, KL_COEF_MIN / 2.0] {
            assert!(matches!(
                adaptive(beta).validate(64),
                Err(Error::InvalidConfig {
                    field: "kl_coef",
                    ..
                })
            ));
        }
        assert!(adaptive(KL_COEF_MAX * 2.0).validate(64).is_err());
        // A2C and REINFORCE run with an infinite clip range: meaningful, accepted.
        assert_eq!(A2cConfig::DEFAULT.to_ppo().validate(32), Ok(()));
    }

    /// The online actor-critic's float fields × {NaN, ±∞, negative, zero, huge}.
    #[test]
    fn every_invalid_actor_critic_value_is_refused_naming_its_field() {
        use crate::algo::AcConfig;
        let bad = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.5, 0.0, 1e9];
        type Set = fn(&mut AcConfig, f32);
        let fields: [(&str, Set, &[f32]); 8] = [
            ("gamma", |c, x| c.gamma = x, &[0.0]),
            ("actor_lr", |c, x| c.actor_lr = Schedule::Constant(x), &[]),
            ("critic_lr", |c, x| c.critic_lr = Schedule::Constant(x), &[]),
            ("ent_coef", |c, x| c.ent_coef = x, &[0.0, 1e9]),
            ("max_grad_norm", |c, x| c.max_grad_norm = Some(x), &[1e9]),
            ("adam.beta1", |c, x| c.adam.beta1 = x, &[0.0]),
            ("adam.beta2", |c, x| c.adam.beta2 = x, &[0.0]),
            ("adam.eps", |c, x| c.adam.eps = x, &[]),
        ];
        for (field, set, accepted) in fields {
            for x in bad {
                let mut c = AcConfig::DEFAULT;
                set(&mut c, x);
                let result = c.validate();
                if accepted.iter().any(|a| a.to_bits() == x.to_bits()) {
                    assert_eq!(result, Ok(()), "{field} = {x}");
                } else {
                    assert!(
                        matches!(result, Err(Error::InvalidConfig { field: f, .. }) if f == field),
                        "{field} = {x}: {result:?}"
                    );
                }
            }
        }
        let annealed = AcConfig {
            total_steps: 0,
            actor_lr: Schedule::linear_to_zero(1e-3),
            ..AcConfig::DEFAULT
        };
        assert!(matches!(
            annealed.validate(),
            Err(Error::InvalidConfig {
                field: "total_steps",
                ..
            })
        ));
        // The same schedule over a real budget is fine.
        let over_budget = AcConfig {
            total_steps: 10_000,
            ..annealed
        };
        assert_eq!(over_budget.validate(), Ok(()));
    }

    #[test]
    fn the_online_actor_critic_debugs_with_its_step_count() {
        use crate::algo::{AcConfig, ActorCritic};
        let agent = std::boxed::Box::new(ActorCritic::<
            CategoricalActor<Mlp<4, 8, 2>>,
            Mlp<4, 8, 1>,
            4,
        >::new(AcConfig::DEFAULT));
        let text = std::format!("{agent:?}");
        assert!(
            text.contains("ActorCritic") && text.contains("steps: 0"),
            "{text}"
        );
    }

    /// The adaptive rule at its boundaries and bounds.
    #[test]
    fn the_adaptive_kl_rule_halves_doubles_and_keeps() {
        let t = 0.01f32;
        assert_eq!(adapted_kl_coef(1.0, t, t), 1.0);
        assert_eq!(adapted_kl_coef(1.0, t / 1.5, t), 1.0);
        assert_eq!(adapted_kl_coef(1.0, t * 1.5, t), 1.0);
        assert_eq!(adapted_kl_coef(1.0, 0.7 * t, t), 1.0);
        assert_eq!(adapted_kl_coef(1.0, 1.4 * t, t), 1.0);
        assert_eq!(adapted_kl_coef(1.0, 0.6 * t, t), 0.5);
        assert_eq!(adapted_kl_coef(1.0, 1.6 * t, t), 2.0);
        assert_eq!(adapted_kl_coef(1.0, -1.0, t), 0.5);
        assert_eq!(adapted_kl_coef(KL_COEF_MIN, 0.0, t), KL_COEF_MIN);
        assert_eq!(adapted_kl_coef(KL_COEF_MAX, 1.0, t), KL_COEF_MAX);
        assert_eq!(adapted_kl_coef(0.75 * KL_COEF_MAX, 1.0, t), KL_COEF_MAX);
    }

    /// Minibatches of one sample are not normalised (a single advantage has
    /// no spread): the update with `normalize_advantages` equals the one
    /// without, bit for bit.
    #[test]
    fn single_sample_minibatches_are_not_normalised() {
        use crate::env::CartPole;
        let run = |normalize_advantages| {
            let mut agent = std::boxed::Box::new(Agent::new(PpoConfig {
                minibatches: 64,
                epochs: 2,
                normalize_advantages,
                ..PpoConfig::DEFAULT
            }));
            let mut env = CartPole::new();
            let mut rng = crate::nn::fd::rng(12);
            agent.init(&env, &mut rng).unwrap();
            let mut cursor = Cursor::start(&mut env, &mut rng);
            agent
                .collect(&mut env, &mut cursor, &mut rng, |_| {})
                .unwrap();
            let stats = agent.update(&mut rng).unwrap();
            (agent.train.params.clone(), stats)
        };
        let (with, stats) = run(true);
        assert!(stats.policy_loss.is_finite());
        assert_eq!(with, run(false).0);
    }

    /// REINFORCE reports its steps and exports its policy like the PPO
    /// machinery it runs on.
    #[test]
    fn reinforce_counts_steps_and_exports() {
        use crate::algo::{Reinforce, ReinforceConfig};
        use crate::env::CartPole;
        let mut agent = std::boxed::Box::new(Reinforce::<
            CategoricalActor<Mlp<4, 8, 2>>,
            Mlp<4, 8, 1>,
            4,
            500,
        >::new(ReinforceConfig::DEFAULT));
        let mut env = CartPole::new();
        let mut rng = crate::nn::fd::rng(13);
        agent.init(&env, &mut rng).unwrap();
        let mut cursor = Cursor::start(&mut env, &mut rng);
        agent
            .collect(&mut env, &mut cursor, &mut rng, |_| {})
            .unwrap();
        let steps = agent.steps();
        assert!(steps > 1 && steps == agent.inner.rollout.len() as u64);
        let mut exported = <Policy<CategoricalActor<Mlp<4, 8, 2>>, 4> as Params>::ZERO;
        agent.export(&mut exported);
        assert_eq!(&exported.actor, agent.actor());
        assert_eq!(exported.obs_norm, agent.inner.obs_norm);
    }

    /// The tuned CartPole settings are RL Zoo's (γ 0.98, λ 0.8, lr and clip
    /// annealed from 1e-3 and 0.2) on the defaults.
    #[test]
    fn cartpole_settings_are_rl_zoos() {
        let c = PpoConfig::CARTPOLE;
        assert_eq!(c.learning_rate, Schedule::linear_to_zero(1e-3));
        assert_eq!(c.clip_range, Schedule::linear_to_zero(0.2));
        assert_eq!((c.gamma, c.gae_lambda), (0.98, 0.8));
        assert_eq!(
            PpoConfig {
                learning_rate: PpoConfig::DEFAULT.learning_rate,
                clip_range: PpoConfig::DEFAULT.clip_range,
                gamma: PpoConfig::DEFAULT.gamma,
                gae_lambda: PpoConfig::DEFAULT.gae_lambda,
                ..c
            },
            PpoConfig::DEFAULT
        );
    }

    /// A collect counts its steps, fills the rollout, and refuses value
    /// targets beyond what a gradient may carry (rewards huge but finite).
    #[test]
    fn collect_counts_steps_and_refuses_overflowing_returns() {
        use crate::env::{CartPole, Env, Step};
        let mut agent = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
        let mut env = CartPole::new();
        let mut rng = crate::nn::fd::rng(8);
        agent.init(&env, &mut rng).unwrap();
        let mut cursor = Cursor::start(&mut env, &mut rng);
        agent
            .collect(&mut env, &mut cursor, &mut rng, |_| {})
            .unwrap();
        assert_eq!((agent.steps, agent.rollout.len()), (64, 64));
        agent
            .collect(&mut env, &mut cursor, &mut rng, |_| {})
            .unwrap();
        assert_eq!(agent.steps, 128);
        let text = std::format!("{agent:?}");
        assert!(
            text.contains("Ppo") && text.contains("steps: 128"),
            "{text}"
        );

        /// CartPole paying 1e30 per step.
        struct Huge(CartPole);
        impl Env for Huge {
            type Obs = SVector<f32, 4>;
            type Space = crate::env::Discrete<2>;
            const SOLVED_RETURN: f32 = 0.0;
            fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 4> {
                self.0.reset(rng)
            }
            fn step(&mut self, action: usize) -> Result<Step<SVector<f32, 4>>, Error> {
                let mut step = self.0.step(action)?;
                step.reward = 1e30;
                Ok(step)
            }
        }
        let mut huge = Huge(CartPole::new());
        let mut cursor = Cursor::start(&mut huge, &mut rng);
        let before = agent.steps;
        assert_eq!(
            agent.collect(&mut huge, &mut cursor, &mut rng, |_| {}),
            Err(Error::ValueOverflow)
        );
        assert_eq!(agent.steps, before);
    }

    /// A vectorised collection runs up to `CHUNK` copies' network passes
    /// together (`prepare_round`) and must give the rollout, statistics,
    /// draws and errors of one copy at a time: with observation and reward
    /// normalisation, time-limit truncations (their bootstrap values read
    /// the normaliser as of their own copy) and a copy whose observation
    /// turns NaN mid-round, `CHUNK` = 1 (every copy on its own), 3 (groups
    /// of 3 and 1) and 32 (all 4 together) agree bit for bit.
    #[test]
    fn vectorised_collection_is_copy_by_copy() {
        use crate::env::{Env, Pendulum, Step};
        use crate::policy::GaussianActor;
        /// Pendulum cut after 5 steps; copy `faulty`'s 14th observation is NaN.
        struct Short {
            env: Pendulum,
            t: u32,
            steps: u32,
            faulty: bool,
        }
        impl Env for Short {
            type Obs = SVector<f32, 3>;
            type Space = <Pendulum as Env>::Space;
            const SOLVED_RETURN: f32 = 0.0;
            fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 3> {
                self.t = 0;
                self.env.reset(rng)
            }
            fn step(&mut self, action: SVector<f32, 1>) -> Result<Step<SVector<f32, 3>>, Error> {
                let mut step = self.env.step(action)?;
                self.t += 1;
                self.steps += 1;
                step.truncated |= self.t == 5;
                if self.faulty && self.steps == 14 {
                    step.obs[1] = f32::NAN;
                }
                Ok(step)
            }
        }
        fn run<const CHUNK: usize>(faulty: Option<usize>) -> std::string::String {
            type Actor = GaussianActor<Mlp<3, 8, 1>, 1>;
            let config = PpoConfig {
                normalize_obs: true,
                normalize_reward: true,
                n_envs: 4,
                n_steps: 8,
                minibatches: 2,
                epochs: 2,
                ..PpoConfig::DEFAULT
            };
            let mut agent =
                std::boxed::Box::new(Ppo::<Actor, Mlp<3, 8, 1>, 3, 32, CHUNK>::new(config));
            let mut rng = crate::nn::fd::rng(77);
            let mut envs: [Short; 4] = core::array::from_fn(|e| Short {
                env: Pendulum::new(),
                t: 0,
                steps: 0,
                faulty: faulty == Some(e),
            });
            agent.init(&envs[0].env, &mut rng).unwrap();
            let mut cursors: [Cursor<SVector<f32, 3>>; 4] =
                core::array::from_fn(|e| Cursor::start(&mut envs[e], &mut rng));
            let mut log = std::string::String::new();
            for _ in 0..3 {
                let result = agent.collect_envs(&mut envs, &mut cursors, &mut rng, |_| {});
                let r = &agent.rollout;
                let bits =
                    |v: &[f32]| -> std::vec::Vec<u32> { v.iter().map(|x| x.to_bits()).collect() };
                let obs: std::vec::Vec<u32> = r.obs[..r.len()]
                    .iter()
                    .flat_map(|o| bits(o.as_slice()))
                    .collect();
                log += &std::format!(
                    "{result:?} {obs:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {}\n",
                    bits(&r.log_probs[..r.len()]),
                    bits(&r.values[..r.len()]),
                    bits(&r.rewards[..r.len()]),
                    bits(&r.final_values[..r.len()]),
                    bits(&r.returns[..r.len()]),
                    bits(agent.obs_norm.mean.as_slice()),
                    bits(agent.return_norm.var.as_slice()),
                    envs.iter().map(|e| e.steps).collect::<std::vec::Vec<_>>(),
                    rng.next_u32(),
                );
                if result.is_ok() {
                    // The last round's copies went through the batched
                    // passes: their network inputs are in the actor's batch
                    // (the last group of `CHUNK` copies', from its first
                    // sample on).
                    let last = r.len() - 4 + 3 / CHUNK * CHUNK;
                    let group = &r.obs[last..r.len()];
                    let batch = Actor::batch_inputs(&mut agent.actor_batch);
                    assert_eq!(&batch[..group.len()], group, "CHUNK {CHUNK}");
                    agent.update(&mut rng).unwrap();
                }
            }
            log
        }
        for faulty in [None, Some(0), Some(2), Some(3)] {
            let one = run::<1>(faulty);
            assert_eq!(run::<3>(faulty), one, "faulty copy {faulty:?}");
            assert_eq!(run::<32>(faulty), one, "faulty copy {faulty:?}");
            assert_eq!(one.contains("Err(NonFinite)"), faulty.is_some(), "{one}");
        }
    }

    /// Value targets `Â + V_old` beyond 1e15 are refused even when every
    /// advantage is usable: a critic stuck at 1.5e15 on the never-terminating
    /// pendulum gives `Â ≈ −0.01·V` (fine) and `R ≈ 1.49e15` (not).
    #[test]
    fn overflowing_value_targets_are_refused_on_their_own() {
        use crate::env::Pendulum;
        let mut agent =
            std::boxed::Box::new(crate::agent::Ppo::<Pendulum, 8, 64>::new(PpoConfig {
                normalize_obs: false,
                ..PpoConfig::DEFAULT
            }));
        let mut env = Pendulum::new();
        let mut rng = crate::nn::fd::rng(5);
        agent.init(&env, &mut rng).unwrap();
        let head = &mut agent.train.params.critic.second.second;
        head.weight.fill(0.0);
        head.bias[0] = 1.5e15;
        let mut cursor = Cursor::start(&mut env, &mut rng);
        assert_eq!(
            agent.collect(&mut env, &mut cursor, &mut rng, |_| {}),
            Err(Error::ValueOverflow)
        );
    }

    /// `n_steps = 0` fills the buffer with whole rounds of every copy (3
    /// copies in 64 slots: 21 rounds, 63 samples); `n_envs = 0` is refused
    /// by its own check, naming `n_envs`.
    #[test]
    fn rollout_len_fills_whole_rounds_and_zero_copies_are_refused() {
        let three = PpoConfig {
            n_envs: 3,
            ..PpoConfig::DEFAULT
        };
        assert_eq!(three.rollout_len(64), 63);
        assert_eq!(
            PpoConfig {
                n_steps: 5,
                ..three
            }
            .rollout_len(64),
            15
        );
        let zero = PpoConfig {
            n_envs: 0,
            ..PpoConfig::DEFAULT
        };
        assert_eq!(zero.rollout_len(64), 0);
        assert_eq!(
            zero.validate(64),
            Err(Error::config("n_envs", "must be > 0"))
        );
    }

    /// The overflow check is on the value targets `Â + V_old` themselves: a
    /// critic stuck at 7e14 on terminating CartPole episodes gives
    /// `Â ≈ −V` at each episode end, so `R ≈ r` (usable) while `Â − V`
    /// would be beyond 1e15 — that rollout is collected.
    #[test]
    fn large_values_with_usable_value_targets_are_collected() {
        use crate::env::CartPole;
        let mut agent = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
        let mut env = CartPole::new();
        let mut rng = crate::nn::fd::rng(5);
        agent.init(&env, &mut rng).unwrap();
        let head = &mut agent.train.params.critic.second.second;
        head.weight.fill(0.0);
        head.bias[0] = 7e14;
        let mut cursor = Cursor::start(&mut env, &mut rng);
        agent
            .collect(&mut env, &mut cursor, &mut rng, |_| {})
            .unwrap();
        let r = &agent.rollout;
        assert!(r.terminated[..64].iter().any(|&t| t));
        assert!(r.advantages[..64].iter().any(|a| a.abs() > 5e14));
        assert!(r.returns[..64].iter().all(|x| x.abs() <= 1e15));
    }

    /// The first check of `minibatches` is its own: zero is "must be > 0".
    #[test]
    fn zero_minibatches_is_refused_as_zero() {
        let config = PpoConfig {
            minibatches: 0,
            ..PpoConfig::DEFAULT
        };
        assert_eq!(
            config.validate(64),
            Err(Error::config("minibatches", "must be > 0"))
        );
        // An empty rollout is refused, though 0 is a multiple of anything.
        assert_eq!(
            PpoConfig::DEFAULT.validate(0),
            Err(Error::config(
                "minibatches",
                "must divide the rollout length"
            ))
        );
    }

    /// `export` copies the actor, the normaliser and the action space into
    /// caller memory: the same policy `policy()` returns.
    #[test]
    fn exported_policies_equal_the_agents_own() {
        use crate::algo::{AcConfig, ActorCritic};
        use crate::env::CartPole;
        let env = CartPole::new();
        let mut rng = crate::nn::fd::rng(3);
        let mut ac = std::boxed::Box::new(ActorCritic::<
            CategoricalActor<Mlp<4, 8, 2>>,
            Mlp<4, 8, 1>,
            4,
        >::new(AcConfig::DEFAULT));
        ac.init(&env, &mut rng).unwrap();
        ac.obs_norm
            .update(&SVector::<f32, 4>::new(1.0, 2.0, 3.0, 4.0))
            .unwrap();
        let mut out = Policy::ZERO;
        ac.export(&mut out);
        assert_eq!(out, ac.policy());
        assert!(out.actor.net.first.weight.norm() > 0.0);
        assert!(out.obs_norm.has_statistics());
        let mut ppo = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
        ppo.init(&env, &mut rng).unwrap();
        let mut out = Policy::ZERO;
        ppo.export(&mut out);
        assert_eq!(out, ppo.policy());
        assert!(out.actor.net.first.weight.norm() > 0.0);
    }

    #[test]
    fn online_actor_critic_refuses_before_any_step() {
        use crate::algo::AcConfig;
        for (config, field) in [
            (
                AcConfig {
                    actor_lr: Schedule::Constant(-1e-3),
                    ..AcConfig::DEFAULT
                },
                "actor_lr",
            ),
            (
                AcConfig {
                    actor_lr: Schedule::Constant(f32::NAN),
                    ..AcConfig::DEFAULT
                },
                "actor_lr",
            ),
            (
                AcConfig {
                    critic_lr: Schedule::Constant(0.0),
                    ..AcConfig::DEFAULT
                },
                "critic_lr",
            ),
            (
                AcConfig {
                    gamma: 1.5,
                    ..AcConfig::DEFAULT
                },
                "gamma",
            ),
            (
                AcConfig {
                    max_grad_norm: Some(-1.0),
                    ..AcConfig::DEFAULT
                },
                "max_grad_norm",
            ),
        ] {
            assert!(
                matches!(config.validate(), Err(Error::InvalidConfig { field: f, .. }) if f == field),
                "{config:?}"
            );
        }
    }
}
