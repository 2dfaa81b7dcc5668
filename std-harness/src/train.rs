//! Training, evaluation and validation on the desktop.
//!
//! Design:
//! - **Closed set of (environment, algorithm) pairs, open code.** Sizes are
//!   compile-time in microrl, so each environment has fixed actor and critic
//!   types ([`CartPolePolicy`], …) and each algorithm a fixed rollout capacity.
//!   [`train`] dispatches once on the names the user gave and then runs one
//!   generic loop, [`run`], over a [`Learner`]: the same loop for PPO, A2C,
//!   REINFORCE and the online actor-critic.
//! - **Tuned defaults.** [`Defaults`] holds the hyper-parameters per pair that
//!   make the bare command solve the task; `--config file.toml` overrides any
//!   of them ([`Overrides`]).
//! - **What "solved" means.** After every iteration (one rollout and update,
//!   or a block of online steps) the deterministic policy plays 10 quick
//!   evaluation episodes; when their mean reaches the environment's threshold,
//!   the full `eval_episodes`-episode evaluation decides. The first step at
//!   which it passes is `solved_at_step`. Quick evaluations are cheap while the
//!   policy is poor (short episodes) and only the candidate gets the full one.
//!   By default training stops there (`--no-early-stop` runs the whole budget).
//! - **Determinism.** Training and evaluation draw from two xoshiro streams
//!   seeded from `--seed`, so a run is reproducible bit for bit and the
//!   evaluation schedule does not perturb training.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use microrl::algo::{
    A2cConfig, AcConfig, Actor, ActorCritic, Cursor, Episode, Normalized, Ppo, PpoConfig,
    Reinforce, ReinforceConfig, UpdateStats, evaluate,
};
use microrl::env::{CartPole, CartPoleContinuous, Env, Pendulum};
use microrl::optim::Schedule;
use microrl::{Params, serialize};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;
use serde::{Deserialize, Serialize};

use crate::arch::{
    CartPoleContinuousPolicy, CartPoleCritic, CartPolePolicy, CartPoleSmallCritic,
    CartPoleSmallPolicy, PendulumCritic, PendulumPolicy,
};
use crate::curve::{CurveRow, LearningCurve};

/// PPO rollout length for CartPole (one minibatch = a quarter).
pub const PPO_CARTPOLE_STEPS: usize = 256;
/// PPO rollout length for the continuous tasks.
pub const PPO_CONTINUOUS_STEPS: usize = 2048;
/// A2C rollout length (n of the n-step return).
pub const A2C_STEPS: usize = 32;
/// REINFORCE keeps episodes of up to this many steps whole (CartPole's limit).
pub const REINFORCE_STEPS: usize = 500;
/// Online actor-critic steps between evaluations.
pub const AC_BLOCK: u64 = 1000;
/// Episodes of the quick evaluation that gates the full one.
pub const QUICK_EVAL_EPISODES: u32 = 10;
/// Steps between (quick) evaluations once the task is solved.
pub const SOLVED_EVAL_INTERVAL: u64 = 10_000;

/// A training task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EnvName {
    /// Gymnasium CartPole-v1, two discrete actions.
    Cartpole,
    /// CartPole with a continuous force in [−1, 1] · 10 N.
    CartpoleContinuous,
    /// Gymnasium Pendulum-v1, torque in [−2, 2].
    Pendulum,
}

impl EnvName {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            EnvName::Cartpole => "cartpole",
            EnvName::CartpoleContinuous => "cartpole-continuous",
            EnvName::Pendulum => "pendulum",
        }
    }

    /// Mean return that counts as solved.
    pub fn threshold(self) -> f32 {
        match self {
            EnvName::Cartpole => CartPole::SOLVED_RETURN,
            EnvName::CartpoleContinuous => CartPoleContinuous::SOLVED_RETURN,
            EnvName::Pendulum => Pendulum::SOLVED_RETURN,
        }
    }
}

/// A training algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algo {
    /// PPO with GAE.
    Ppo,
    /// A2C (n-step returns, one gradient step per rollout).
    A2c,
    /// Online one-step actor-critic (TD(0), O(1) memory).
    Ac,
    /// REINFORCE with a learned baseline.
    Reinforce,
}

impl Algo {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Algo::Ppo => "ppo",
            Algo::A2c => "a2c",
            Algo::Ac => "ac",
            Algo::Reinforce => "reinforce",
        }
    }
}

/// Hyper-parameters a `--config` TOML file may set. Every key is optional;
/// a key the chosen algorithm does not have is an error, not silently ignored.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Overrides {
    /// Learning rate at the start (PPO, A2C, REINFORCE).
    pub learning_rate: Option<f32>,
    /// Anneal the learning rate linearly to zero.
    pub anneal_lr: Option<bool>,
    /// PPO clip range at the start.
    pub clip_range: Option<f32>,
    /// Anneal the clip range linearly to zero (PPO).
    pub anneal_clip: Option<bool>,
    /// Discount.
    pub gamma: Option<f32>,
    /// GAE λ (PPO, A2C).
    pub gae_lambda: Option<f32>,
    /// Epochs per rollout (PPO).
    pub epochs: Option<u16>,
    /// Minibatches per epoch (PPO).
    pub minibatches: Option<u16>,
    /// Per-minibatch advantage normalisation.
    pub normalize_advantages: Option<bool>,
    /// Value-loss clip range (PPO); 0 disables.
    pub value_clip: Option<f32>,
    /// Entropy coefficient.
    pub ent_coef: Option<f32>,
    /// Value-loss coefficient.
    pub vf_coef: Option<f32>,
    /// Global gradient-norm clip; 0 disables.
    pub max_grad_norm: Option<f32>,
    /// Target KL for early stopping (PPO); 0 disables.
    pub target_kl: Option<f32>,
    /// Observation normalisation.
    pub normalize_obs: Option<bool>,
    /// Reward scaling (PPO, A2C).
    pub normalize_reward: Option<bool>,
    /// Actor learning rate (AC).
    pub actor_lr: Option<f32>,
    /// Critic learning rate (AC).
    pub critic_lr: Option<f32>,
}

impl Overrides {
    /// Reads a TOML file of overrides.
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    }

    fn reject(&self, algo: Algo, keys: &[(&str, bool)]) -> anyhow::Result<()> {
        for (key, present) in keys {
            if *present {
                bail!("config key `{key}` does not apply to {}", algo.name());
            }
        }
        Ok(())
    }
}

fn schedule(start: f32, anneal: bool) -> Schedule {
    if anneal {
        Schedule::linear_to_zero(start)
    } else {
        Schedule::Constant(start)
    }
}

fn opt(x: f32) -> Option<f32> {
    (x > 0.0).then_some(x)
}

/// The tuned default configuration of every (environment, algorithm) pair,
/// with overrides applied.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Defaults {
    /// PPO, A2C and REINFORCE run on the PPO machinery.
    Ppo(PpoConfig),
    /// The online actor-critic.
    Ac(AcConfig),
}

impl Defaults {
    /// Defaults for `env` and `algo` over a budget of `steps`.
    pub fn new(env: EnvName, algo: Algo, steps: u64) -> Self {
        match algo {
            Algo::Ppo => Defaults::Ppo(match env {
                // RL Zoo's tuned CartPole hyper-parameters (γ 0.98, λ 0.8, lr and
                // clip annealed from 1e-3 / 0.2), with 10 epochs of 4 minibatches.
                EnvName::Cartpole => PpoConfig {
                    total_steps: steps,
                    ..PpoConfig::CARTPOLE
                },
                EnvName::CartpoleContinuous => PpoConfig {
                    total_steps: steps,
                    learning_rate: Schedule::linear_to_zero(1e-3),
                    gamma: 0.98,
                    gae_lambda: 0.8,
                    epochs: 10,
                    minibatches: 32,
                    ..PpoConfig::DEFAULT
                },
                // RL Zoo's Pendulum settings (γ 0.9, lr 1e-3, 10 epochs) with
                // reward scaling in place of gSDE.
                EnvName::Pendulum => PpoConfig {
                    total_steps: steps,
                    learning_rate: Schedule::linear_to_zero(1e-3),
                    gamma: 0.9,
                    gae_lambda: 0.95,
                    epochs: 10,
                    minibatches: 32,
                    normalize_reward: true,
                    ..PpoConfig::DEFAULT
                },
            }),
            Algo::A2c => Defaults::Ppo(
                A2cConfig {
                    total_steps: steps,
                    normalize_reward: env == EnvName::Pendulum,
                    gamma: if env == EnvName::Pendulum { 0.9 } else { 0.99 },
                    ..A2cConfig::DEFAULT
                }
                .to_ppo(),
            ),
            Algo::Reinforce => Defaults::Ppo(
                ReinforceConfig {
                    total_steps: steps,
                    gamma: if env == EnvName::Pendulum { 0.9 } else { 0.99 },
                    ..ReinforceConfig::DEFAULT
                }
                .into(),
            ),
            Algo::Ac => Defaults::Ac(AcConfig {
                total_steps: steps,
                gamma: if env == EnvName::Pendulum { 0.9 } else { 0.99 },
                ..AcConfig::DEFAULT
            }),
        }
    }

    /// Applies `o` on top of the defaults for `algo`.
    pub fn apply(&mut self, algo: Algo, o: &Overrides) -> anyhow::Result<()> {
        match self {
            Defaults::Ppo(c) => {
                o.reject(
                    algo,
                    &[
                        ("actor_lr", o.actor_lr.is_some()),
                        ("critic_lr", o.critic_lr.is_some()),
                    ],
                )?;
                if algo != Algo::Ppo {
                    o.reject(
                        algo,
                        &[
                            ("clip_range", o.clip_range.is_some()),
                            ("anneal_clip", o.anneal_clip.is_some()),
                            ("epochs", o.epochs.is_some()),
                            ("minibatches", o.minibatches.is_some()),
                            ("value_clip", o.value_clip.is_some()),
                            ("target_kl", o.target_kl.is_some()),
                        ],
                    )?;
                }
                if algo == Algo::Reinforce {
                    o.reject(
                        algo,
                        &[
                            ("gae_lambda", o.gae_lambda.is_some()),
                            ("normalize_reward", o.normalize_reward.is_some()),
                        ],
                    )?;
                }
                let lr_start = o.learning_rate.unwrap_or(c.learning_rate.value(0.0));
                let lr_anneal = o
                    .anneal_lr
                    .unwrap_or(matches!(c.learning_rate, Schedule::Linear { .. }));
                c.learning_rate = schedule(lr_start, lr_anneal);
                let clip_start = o.clip_range.unwrap_or(c.clip_range.value(0.0));
                let clip_anneal = o
                    .anneal_clip
                    .unwrap_or(matches!(c.clip_range, Schedule::Linear { .. }));
                c.clip_range = schedule(clip_start, clip_anneal);
                c.gamma = o.gamma.unwrap_or(c.gamma);
                c.gae_lambda = o.gae_lambda.unwrap_or(c.gae_lambda);
                c.epochs = o.epochs.unwrap_or(c.epochs);
                c.minibatches = o.minibatches.unwrap_or(c.minibatches);
                c.normalize_advantages = o.normalize_advantages.unwrap_or(c.normalize_advantages);
                c.value_clip = o.value_clip.map_or(c.value_clip, opt);
                c.ent_coef = o.ent_coef.unwrap_or(c.ent_coef);
                c.vf_coef = o.vf_coef.unwrap_or(c.vf_coef);
                c.max_grad_norm = o.max_grad_norm.map_or(c.max_grad_norm, opt);
                c.target_kl = o.target_kl.map_or(c.target_kl, opt);
                c.normalize_obs = o.normalize_obs.unwrap_or(c.normalize_obs);
                c.normalize_reward = o.normalize_reward.unwrap_or(c.normalize_reward);
            }
            Defaults::Ac(c) => {
                o.reject(
                    algo,
                    &[
                        ("learning_rate", o.learning_rate.is_some()),
                        ("clip_range", o.clip_range.is_some()),
                        ("anneal_clip", o.anneal_clip.is_some()),
                        ("gae_lambda", o.gae_lambda.is_some()),
                        ("epochs", o.epochs.is_some()),
                        ("minibatches", o.minibatches.is_some()),
                        ("normalize_advantages", o.normalize_advantages.is_some()),
                        ("value_clip", o.value_clip.is_some()),
                        ("vf_coef", o.vf_coef.is_some()),
                        ("target_kl", o.target_kl.is_some()),
                        ("normalize_reward", o.normalize_reward.is_some()),
                    ],
                )?;
                let anneal = o
                    .anneal_lr
                    .unwrap_or(matches!(c.actor_lr, Schedule::Linear { .. }));
                c.actor_lr = schedule(o.actor_lr.unwrap_or(c.actor_lr.value(0.0)), anneal);
                c.critic_lr = schedule(o.critic_lr.unwrap_or(c.critic_lr.value(0.0)), anneal);
                c.gamma = o.gamma.unwrap_or(c.gamma);
                c.ent_coef = o.ent_coef.unwrap_or(c.ent_coef);
                c.max_grad_norm = o.max_grad_norm.map_or(c.max_grad_norm, opt);
                c.normalize_obs = o.normalize_obs.unwrap_or(c.normalize_obs);
            }
        }
        Ok(())
    }
}

/// What `microrl train` was asked to do.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    /// Task.
    pub env: EnvName,
    /// Algorithm.
    pub algo: Algo,
    /// Seed of the training and evaluation RNG streams.
    pub seed: u64,
    /// Environment-step budget.
    pub steps: u64,
    /// Optional TOML overrides.
    pub overrides: Overrides,
    /// Evaluation return that counts as solved (the task's threshold by default).
    pub threshold: f32,
    /// Episodes of the deciding evaluation (100).
    pub eval_episodes: u32,
    /// Stop as soon as the deciding evaluation passes.
    pub early_stop: bool,
    /// Output directory (`None`: write nothing).
    pub out: Option<PathBuf>,
    /// Draw a progress bar on standard error.
    pub progress: bool,
    /// CartPole only: train the MCU-sized 4-32-32 actor and critic
    /// ([`CartPoleSmallPolicy`], [`CartPoleSmallCritic`]) instead of 64-64.
    pub small: bool,
}

/// The result of one training run (the `--json` object of `microrl train`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrainSummary {
    /// Task name.
    pub env: &'static str,
    /// Algorithm name.
    pub algo: &'static str,
    /// Seed.
    pub seed: u64,
    /// Step budget.
    pub steps: u64,
    /// Environment steps actually taken.
    pub steps_run: u64,
    /// Wall-clock seconds of the whole run (training and evaluations).
    pub wall_s: f64,
    /// Mean return of the final deterministic evaluation.
    pub eval_mean: f32,
    /// Standard deviation of those returns.
    pub eval_std: f32,
    /// Episodes in the final evaluation.
    pub eval_episodes: u32,
    /// Threshold the task counts as solved at.
    pub threshold: f32,
    /// First step at which the full deterministic evaluation reached the threshold.
    pub solved_at_step: Option<u64>,
    /// Training episodes finished.
    pub episodes: u64,
    /// Gradient updates (rollouts, or online steps for `ac`).
    pub updates: u64,
    /// Diagnostics of the last update (rollout-based algorithms).
    pub last_update: Option<Diagnostics>,
    /// Where the policy was written.
    pub policy: Option<PathBuf>,
    /// Where the learning curve (CSV) was written.
    pub curve_csv: Option<PathBuf>,
    /// Where the learning-curve plot (PNG) was written.
    pub curve_png: Option<PathBuf>,
}

/// The standard PPO diagnostics of one update (CleanRL's names).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Diagnostics {
    /// Clipped-surrogate loss.
    pub policy_loss: f32,
    /// Value loss.
    pub value_loss: f32,
    /// Policy entropy.
    pub entropy: f32,
    /// `mean((r − 1) − log r)`.
    pub approx_kl: f32,
    /// Fraction of clipped ratios.
    pub clip_fraction: f32,
    /// `1 − Var(R − V)/Var(R)`.
    pub explained_variance: f32,
    /// Epochs run (target-KL may stop early).
    pub epochs: u16,
    /// Learning rate used.
    pub learning_rate: f32,
}

impl From<UpdateStats> for Diagnostics {
    fn from(u: UpdateStats) -> Self {
        Diagnostics {
            policy_loss: u.policy_loss,
            value_loss: u.value_loss,
            entropy: u.entropy,
            approx_kl: u.approx_kl,
            clip_fraction: u.clip_fraction,
            explained_variance: u.explained_variance,
            epochs: u.epochs,
            learning_rate: u.learning_rate,
        }
    }
}

/// One algorithm behind the harness loop.
pub trait Learner<const OBS: usize> {
    /// The trained (and exported) policy type.
    type Policy: Actor<OBS> + Clone;
    /// Environment steps taken so far.
    fn steps(&self) -> u64;
    /// Runs one iteration (collect + update, or a block of online steps).
    fn iterate<E: Env<OBS, Action = <Self::Policy as Actor<OBS>>::Action>>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<OBS>,
        rng: &mut Xoshiro128PlusPlus,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<Option<UpdateStats>, microrl::Error>;
    /// Number of gradient updates made by one iteration.
    fn updates_per_iteration(&self) -> u64;
    /// The deployable policy.
    fn policy(&self) -> Normalized<Self::Policy, OBS>;
}

impl<A, C, const OBS: usize, const N: usize> Learner<OBS> for Ppo<A, C, OBS, N>
where
    A: Actor<OBS> + Clone,
    C: microrl::nn::Network<OBS, 1>,
{
    type Policy = A;
    fn steps(&self) -> u64 {
        self.steps
    }
    fn iterate<E: Env<OBS, Action = A::Action>>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<OBS>,
        rng: &mut Xoshiro128PlusPlus,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<Option<UpdateStats>, microrl::Error> {
        self.collect(env, cursor, rng, on_episode)?;
        self.update(rng).map(Some)
    }
    fn updates_per_iteration(&self) -> u64 {
        1
    }
    fn policy(&self) -> Normalized<A, OBS> {
        Ppo::policy(self)
    }
}

impl<A, C, const OBS: usize, const N: usize> Learner<OBS> for Reinforce<A, C, OBS, N>
where
    A: Actor<OBS> + Clone,
    C: microrl::nn::Network<OBS, 1>,
{
    type Policy = A;
    fn steps(&self) -> u64 {
        Reinforce::steps(self)
    }
    fn iterate<E: Env<OBS, Action = A::Action>>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<OBS>,
        rng: &mut Xoshiro128PlusPlus,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<Option<UpdateStats>, microrl::Error> {
        self.collect(env, cursor, rng, on_episode)?;
        self.update(rng).map(Some)
    }
    fn updates_per_iteration(&self) -> u64 {
        1
    }
    fn policy(&self) -> Normalized<A, OBS> {
        Reinforce::policy(self)
    }
}

impl<A, C, const OBS: usize> Learner<OBS> for ActorCritic<A, C, OBS>
where
    A: Actor<OBS> + Clone,
    C: microrl::nn::Network<OBS, 1>,
{
    type Policy = A;
    fn steps(&self) -> u64 {
        self.steps
    }
    fn iterate<E: Env<OBS, Action = A::Action>>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<OBS>,
        rng: &mut Xoshiro128PlusPlus,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<Option<UpdateStats>, microrl::Error> {
        for _ in 0..AC_BLOCK {
            self.step(env, cursor, rng, &mut *on_episode)?;
        }
        Ok(None)
    }
    fn updates_per_iteration(&self) -> u64 {
        AC_BLOCK
    }
    fn policy(&self) -> Normalized<A, OBS> {
        ActorCritic::policy(self)
    }
}

/// Trains as `opts` says, writes the outputs and returns the summary.
pub fn train(opts: &TrainOptions) -> anyhow::Result<TrainSummary> {
    let mut config = Defaults::new(opts.env, opts.algo, opts.steps);
    config.apply(opts.algo, &opts.overrides)?;
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(opts.seed);

    macro_rules! ppo_like {
        ($agent:ty, $make:expr, $env:expr) => {{
            let mut agent: Box<$agent> = Box::new($make);
            agent.init(&mut rng).map_err(anyhow::Error::msg)?;
            run(opts, &mut *agent, $env, $env, rng)
        }};
    }
    let ppo = match config {
        Defaults::Ppo(c) => c,
        Defaults::Ac(_) => PpoConfig::DEFAULT,
    };
    let ac = match config {
        Defaults::Ac(c) => c,
        Defaults::Ppo(_) => AcConfig::DEFAULT,
    };
    type CpPpo = Ppo<CartPolePolicy, CartPoleCritic, 4, PPO_CARTPOLE_STEPS>;
    type CcPpo = Ppo<CartPoleContinuousPolicy, CartPoleCritic, 4, PPO_CONTINUOUS_STEPS>;
    type PdPpo = Ppo<PendulumPolicy, PendulumCritic, 3, PPO_CONTINUOUS_STEPS>;
    type CpA2c = Ppo<CartPolePolicy, CartPoleCritic, 4, A2C_STEPS>;
    type CcA2c = Ppo<CartPoleContinuousPolicy, CartPoleCritic, 4, A2C_STEPS>;
    type PdA2c = Ppo<PendulumPolicy, PendulumCritic, 3, A2C_STEPS>;
    type CpRf = Reinforce<CartPolePolicy, CartPoleCritic, 4, REINFORCE_STEPS>;
    type CcRf = Reinforce<CartPoleContinuousPolicy, CartPoleCritic, 4, REINFORCE_STEPS>;
    type PdRf = Reinforce<PendulumPolicy, PendulumCritic, 3, REINFORCE_STEPS>;
    type CpAc = ActorCritic<CartPolePolicy, CartPoleCritic, 4>;
    type SmPpo = Ppo<CartPoleSmallPolicy, CartPoleSmallCritic, 4, PPO_CARTPOLE_STEPS>;
    type SmA2c = Ppo<CartPoleSmallPolicy, CartPoleSmallCritic, 4, A2C_STEPS>;
    type SmRf = Reinforce<CartPoleSmallPolicy, CartPoleSmallCritic, 4, REINFORCE_STEPS>;
    type SmAc = ActorCritic<CartPoleSmallPolicy, CartPoleSmallCritic, 4>;
    if opts.small {
        return match (opts.env, opts.algo) {
            (EnvName::Cartpole, Algo::Ppo) => ppo_like!(SmPpo, Ppo::new(ppo), CartPole::new()),
            (EnvName::Cartpole, Algo::A2c) => ppo_like!(SmA2c, Ppo::new(ppo), CartPole::new()),
            (EnvName::Cartpole, Algo::Reinforce) => ppo_like!(
                SmRf,
                Reinforce {
                    inner: Ppo::new(ppo)
                },
                CartPole::new()
            ),
            (EnvName::Cartpole, Algo::Ac) => {
                ppo_like!(SmAc, ActorCritic::new(ac), CartPole::new())
            }
            (env, _) => anyhow::bail!(
                "--small is the 4-32-32 CartPole architecture; it does not apply to {}",
                env.name()
            ),
        };
    }
    type CcAc = ActorCritic<CartPoleContinuousPolicy, CartPoleCritic, 4>;
    type PdAc = ActorCritic<PendulumPolicy, PendulumCritic, 3>;
    match (opts.env, opts.algo) {
        (EnvName::Cartpole, Algo::Ppo) => ppo_like!(CpPpo, Ppo::new(ppo), CartPole::new()),
        (EnvName::CartpoleContinuous, Algo::Ppo) => {
            ppo_like!(CcPpo, Ppo::new(ppo), CartPoleContinuous::new())
        }
        (EnvName::Pendulum, Algo::Ppo) => ppo_like!(PdPpo, Ppo::new(ppo), Pendulum::new()),
        (EnvName::Cartpole, Algo::A2c) => ppo_like!(CpA2c, Ppo::new(ppo), CartPole::new()),
        (EnvName::CartpoleContinuous, Algo::A2c) => {
            ppo_like!(CcA2c, Ppo::new(ppo), CartPoleContinuous::new())
        }
        (EnvName::Pendulum, Algo::A2c) => ppo_like!(PdA2c, Ppo::new(ppo), Pendulum::new()),
        (EnvName::Cartpole, Algo::Reinforce) => ppo_like!(
            CpRf,
            Reinforce {
                inner: Ppo::new(ppo)
            },
            CartPole::new()
        ),
        (EnvName::CartpoleContinuous, Algo::Reinforce) => {
            ppo_like!(
                CcRf,
                Reinforce {
                    inner: Ppo::new(ppo)
                },
                CartPoleContinuous::new()
            )
        }
        (EnvName::Pendulum, Algo::Reinforce) => ppo_like!(
            PdRf,
            Reinforce {
                inner: Ppo::new(ppo)
            },
            Pendulum::new()
        ),
        (EnvName::Cartpole, Algo::Ac) => ppo_like!(CpAc, ActorCritic::new(ac), CartPole::new()),
        (EnvName::CartpoleContinuous, Algo::Ac) => {
            ppo_like!(CcAc, ActorCritic::new(ac), CartPoleContinuous::new())
        }
        (EnvName::Pendulum, Algo::Ac) => ppo_like!(PdAc, ActorCritic::new(ac), Pendulum::new()),
    }
}

/// Mean of the last (up to) 100 training returns.
fn recent_mean(recent: &VecDeque<f32>) -> f64 {
    if recent.is_empty() {
        return f64::NAN;
    }
    recent.iter().map(|&r| f64::from(r)).sum::<f64>() / recent.len() as f64
}

/// The generic training loop behind every (environment, algorithm) pair.
fn run<L, E, const OBS: usize>(
    opts: &TrainOptions,
    agent: &mut L,
    mut env: E,
    mut eval_env: E,
    mut rng: Xoshiro128PlusPlus,
) -> anyhow::Result<TrainSummary>
where
    L: Learner<OBS>,
    E: Env<OBS, Action = <L::Policy as Actor<OBS>>::Action>,
{
    let start = Instant::now();
    let threshold = opts.threshold;
    let mut eval_rng = Xoshiro128PlusPlus::seed_from_u64(opts.seed ^ 0x5eed_e7a1_0000_0000);
    let bar = progress_bar(opts);

    let mut cursor = Cursor::start(&mut env, &mut rng);
    let mut recent: VecDeque<f32> = VecDeque::with_capacity(100);
    let (mut episodes, mut updates) = (0u64, 0u64);
    let mut curve = LearningCurve::new();
    let mut solved_at_step = None;
    let mut last_eval: Option<(f32, f32)> = None;
    let (mut steps_before, mut last_shown) = (0u64, f32::NAN);

    let mut last_update = None;
    while agent.steps() < opts.steps {
        last_update = agent
            .iterate(&mut env, &mut cursor, &mut rng, &mut |e: Episode| {
                episodes += 1;
                if recent.len() == 100 {
                    recent.pop_front();
                }
                recent.push_back(e.ret);
            })
            .map_err(|e| anyhow::anyhow!("training failed at step {}: {e}", agent.steps()))?
            .map(Diagnostics::from);
        updates += agent.updates_per_iteration();

        // Until solved: a quick evaluation after every iteration, and the full
        // one when the quick one reaches the threshold. Afterwards (with
        // --no-early-stop) only a quick evaluation every SOLVED_EVAL_INTERVAL
        // steps, for the curve.
        let steps_now = agent.steps();
        let eval = if solved_at_step.is_none()
            || steps_now / SOLVED_EVAL_INTERVAL != steps_before / SOLVED_EVAL_INTERVAL
        {
            let policy = agent.policy();
            let quick = evaluate(&policy, &mut eval_env, QUICK_EVAL_EPISODES, &mut eval_rng)
                .map_err(anyhow::Error::msg)?;
            if solved_at_step.is_none() && quick.0 >= threshold {
                let full = evaluate(&policy, &mut eval_env, opts.eval_episodes, &mut eval_rng)
                    .map_err(anyhow::Error::msg)?;
                if full.0 >= threshold {
                    solved_at_step = Some(steps_now);
                    last_eval = Some(full);
                }
                Some(full)
            } else {
                Some(quick)
            }
        } else {
            None
        };
        steps_before = steps_now;
        if let Some(e) = eval {
            last_shown = e.0;
        }
        curve.push(CurveRow {
            step: steps_now,
            episodes,
            mean_return: recent_mean(&recent),
            eval_mean: eval.map(|e| f64::from(e.0)),
            eval_std: eval.map(|e| f64::from(e.1)),
            wall_s: start.elapsed().as_secs_f64(),
        });
        if let Some(bar) = &bar {
            bar.set_position(agent.steps().min(opts.steps));
            bar.set_message(format!(
                "return {:>7.1}  eval {:>7.1}{}",
                recent_mean(&recent),
                last_shown,
                if solved_at_step.is_some() {
                    "  solved"
                } else {
                    ""
                }
            ));
        }
        if opts.early_stop && solved_at_step.is_some() {
            break;
        }
    }
    let policy = agent.policy();
    // The final evaluation: the deciding one if training stopped on it.
    let (eval_mean, eval_std) = match (opts.early_stop, last_eval) {
        (true, Some(e)) => e,
        _ => evaluate(&policy, &mut eval_env, opts.eval_episodes, &mut eval_rng)
            .map_err(anyhow::Error::msg)?,
    };
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }

    let mut summary = TrainSummary {
        env: opts.env.name(),
        algo: opts.algo.name(),
        seed: opts.seed,
        steps: opts.steps,
        steps_run: agent.steps(),
        wall_s,
        eval_mean,
        eval_std,
        eval_episodes: opts.eval_episodes,
        threshold,
        solved_at_step,
        episodes,
        updates,
        last_update,
        policy: None,
        curve_csv: None,
        curve_png: None,
    };
    if let Some(dir) = &opts.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let policy_path = dir.join("policy.mrlp");
        let blob = serialize::to_vec(&policy).map_err(anyhow::Error::msg)?;
        std::fs::write(&policy_path, blob)
            .with_context(|| format!("writing {}", policy_path.display()))?;
        let csv = dir.join("curve.csv");
        curve.write_csv(&csv)?;
        let png = dir.join("curve.png");
        let title = format!(
            "{} {} seed {}",
            opts.algo.name(),
            opts.env.name(),
            opts.seed
        );
        curve.write_png(&png, &title, Some(f64::from(threshold)))?;
        summary.policy = Some(policy_path);
        summary.curve_csv = Some(csv);
        summary.curve_png = Some(png);
        let json = serde_json::to_string_pretty(&summary)?;
        std::fs::write(dir.join("summary.json"), json)?;
    }
    Ok(summary)
}

fn progress_bar(opts: &TrainOptions) -> Option<indicatif::ProgressBar> {
    if !opts.progress {
        return None;
    }
    let bar = indicatif::ProgressBar::new(opts.steps);
    let style = indicatif::ProgressStyle::with_template(
        "{prefix} [{elapsed_precise}] {bar:30} {pos:>7}/{len:7} {msg}",
    )
    .map(|s| s.progress_chars("=> "))
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_prefix(format!("{} {}", opts.algo.name(), opts.env.name()));
    Some(bar)
}

/// The result of `microrl eval`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EvalSummary {
    /// Task name.
    pub env: &'static str,
    /// Episodes played.
    pub episodes: u32,
    /// Mean return.
    pub mean: f32,
    /// Standard deviation of the returns.
    pub std: f32,
    /// Threshold the task counts as solved at.
    pub threshold: f32,
    /// `mean >= threshold`.
    pub solved: bool,
}

/// Loads `blob` as the policy type trained for `env` and plays `episodes`
/// deterministic episodes.
pub fn eval(env: EnvName, blob: &[u8], episodes: u32, seed: u64) -> anyhow::Result<EvalSummary> {
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
    let (mean, std) = match env {
        EnvName::Cartpole if is_small_cartpole(blob) => {
            eval_blob::<CartPoleSmallPolicy, _, 4>(blob, CartPole::new(), episodes, &mut rng)?
        }
        EnvName::Cartpole => {
            eval_blob::<CartPolePolicy, _, 4>(blob, CartPole::new(), episodes, &mut rng)?
        }
        EnvName::CartpoleContinuous => eval_blob::<CartPoleContinuousPolicy, _, 4>(
            blob,
            CartPoleContinuous::new(),
            episodes,
            &mut rng,
        )?,
        EnvName::Pendulum => {
            eval_blob::<PendulumPolicy, _, 3>(blob, Pendulum::new(), episodes, &mut rng)?
        }
    };
    let threshold = env.threshold();
    Ok(EvalSummary {
        env: env.name(),
        episodes,
        mean,
        std,
        threshold,
        solved: mean >= threshold,
    })
}

/// Loads a [`Normalized`] policy of type `P` from `blob`.
pub fn load_policy<P: Params, const OBS: usize>(
    blob: &[u8],
) -> anyhow::Result<Box<Normalized<P, OBS>>> {
    let mut policy = Box::new(Normalized::<P, OBS>::ZERO);
    serialize::load(&mut *policy, blob).map_err(|e| anyhow::anyhow!("loading policy: {e}"))?;
    Ok(policy)
}

fn eval_blob<P, E, const OBS: usize>(
    blob: &[u8],
    mut env: E,
    episodes: u32,
    rng: &mut Xoshiro128PlusPlus,
) -> anyhow::Result<(f32, f32)>
where
    P: Actor<OBS>,
    E: Env<OBS, Action = P::Action>,
{
    let policy = load_policy::<P, OBS>(blob)?;
    evaluate(&*policy, &mut env, episodes, rng).map_err(anyhow::Error::msg)
}

/// Whether `blob` has the length of a 4-32-32-2 CartPole policy file (the
/// `--small` architecture); its header is checked when it is loaded.
pub fn is_small_cartpole(blob: &[u8]) -> bool {
    blob.len() == serialize::encoded_len::<Normalized<CartPoleSmallPolicy, 4>>()
}

/// Encoded length of the policy file `microrl train` writes for `env`
/// (the default architecture; `small` for the 4-32-32 CartPole one).
pub fn policy_blob_len(env: EnvName, small: bool) -> usize {
    match env {
        EnvName::Cartpole if small => {
            serialize::encoded_len::<Normalized<CartPoleSmallPolicy, 4>>()
        }
        EnvName::Cartpole => serialize::encoded_len::<Normalized<CartPolePolicy, 4>>(),
        EnvName::CartpoleContinuous => {
            serialize::encoded_len::<Normalized<CartPoleContinuousPolicy, 4>>()
        }
        EnvName::Pendulum => serialize::encoded_len::<Normalized<PendulumPolicy, 3>>(),
    }
}
