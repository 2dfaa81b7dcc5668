//! Training, evaluation and validation on the desktop: configuration and
//! hooks around the core's training loop.
//!
//! Design:
//! - **The loop is the core's.** [`train`] picks the agent type for the
//!   (environment, algorithm, `--small`) the user named — each an alias from
//!   [`microrl::agent`] — and hands it to [`microrl::train::Trainer`], the
//!   same loop the firmware runs. What lives here is configuration and
//!   [`Hooks`]: the progress bar, the learning curve, the last update's
//!   diagnostics.
//! - **Configuration is data.** The tuned defaults per (environment,
//!   algorithm, and for CartPole PPO whether it is the plain default run:
//!   [`TrainOptions::default_run`]) are the core's config structs
//!   ([`AlgoConfig`]); `--config`
//!   TOML keys are their field names, merged over the defaults and
//!   deserialised into the struct (an unknown key is an error naming it), and
//!   the agent's `init` validates every value before any rollout.
//!   `summary.json` records the full effective configuration, and
//!   `--config runs/X/summary.json` reproduces the run.
//! - **What "solved" means.** The core's rule: a quick 10-episode evaluation
//!   after every rollout (every 1 000 steps for the online actor-critic),
//!   the deciding `eval_episodes`-episode evaluation when that reaches the
//!   threshold — both on the *selection* start states — and the reported
//!   evaluation on *held-out* start states that never influenced stopping.
//!   `solved_at_step` is when the deciding evaluation passed; `eval_mean` is
//!   the held-out report.
//! - **Determinism.** Training and the two evaluation streams are xoshiro
//!   streams seeded from `--seed` (the core's `select_seed`/`report_seed`),
//!   so a run is reproducible bit for bit, on the desktop and on the MCU.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use heapless::HistoryBuf;
use microrl::algo::{
    A2cConfig, AcConfig, AcStats, GrpoConfig, LearnedReward, Ppo, PpoConfig, ReinforceConfig,
    TrpoConfig, UpdateStats,
};
use microrl::checkpoint::AgentState;
use microrl::env::EnvState;
use microrl::env::{CartPole, CartPoleContinuous, Env, Pendulum, Weighted};
use microrl::optim::Schedule;
use microrl::rng::Xoshiro128pp;
use microrl::train::{Evaluation, Hooks, Learner, RunConfig, Trainer};
use microrl::vec_env::VecEnv;
use microrl::{Params, SVector, agent, serialize};
use serde::{Deserialize, Serialize};

use crate::curve::{CurveRow, LearningCurve};

/// PPO rollout length for CartPole (one minibatch = a quarter).
pub const PPO_CARTPOLE_STEPS: usize = 256;
/// PPO rollout length for the continuous tasks.
pub const PPO_CONTINUOUS_STEPS: usize = 2048;
/// TRPO rollout length (every task): the Fisher matrix and the KL of the
/// line search are averaged over it.
pub const TRPO_STEPS: usize = 1024;
/// GRPO rollout capacity (every task): a group of 8 whole CartPole
/// episodes (8 × 500 steps) fits.
pub const GRPO_STEPS: usize = 4096;
/// A2C rollout length (n of the n-step return).
pub const A2C_STEPS: usize = 32;
/// REINFORCE keeps episodes of up to this many steps whole (CartPole's limit).
pub const REINFORCE_STEPS: usize = 500;
/// Online actor-critic: steps between evaluations.
pub const AC_EVAL_INTERVAL: u64 = 1000;
/// PPO on Pendulum: steps between evaluations (every rollout for the other
/// tasks). Pendulum's returns are heavy-tailed (a few start states the policy
/// does not yet swing up from cost −1 000 or more), so judging after every
/// 2 048-step rollout stops at the first lucky pass of a barely-good policy,
/// which then misses the held-out evaluation (11/20 seeds pass it); every
/// 20 000 steps the policy has trained further when it is judged (20/20).
pub const PENDULUM_EVAL_INTERVAL: u64 = 20_000;
/// A learning-curve row at least this often (environment steps).
const CURVE_INTERVAL: u64 = 1000;
/// The files of a run directory (`--out`).
pub const POLICY_FILE: &str = "policy.mrlp";
/// The learning curve's CSV in a run directory.
pub const CURVE_CSV_FILE: &str = "curve.csv";
/// The learning curve's plot in a run directory.
pub const CURVE_PNG_FILE: &str = "curve.png";
/// Every figure and the full configuration of a run.
pub const SUMMARY_FILE: &str = "summary.json";
/// Everything a run directory holds.
pub const RUN_FILES: [&str; 4] = [POLICY_FILE, CURVE_CSV_FILE, CURVE_PNG_FILE, SUMMARY_FILE];

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
    /// PPO-penalty: PPO without clipping, its surrogate penalised by
    /// `β·KL[π_old ‖ π]` with `β` adapted towards a target KL.
    PpoPenalty,
    /// TRPO: the natural-gradient step (conjugate gradient on Fisher-vector
    /// products) largest within a KL radius, by backtracking line search.
    Trpo,
    /// GRPO: PPO's clipped update without a critic, advantages relative
    /// to a group of episodes from the same start state.
    Grpo,
    /// GSPO: GRPO with one clipped importance ratio per episode (the
    /// geometric mean of its steps' ratios).
    Gspo,
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
            Algo::PpoPenalty => "ppo-penalty",
            Algo::Trpo => "trpo",
            Algo::Grpo => "grpo",
            Algo::Gspo => "gspo",
            Algo::A2c => "a2c",
            Algo::Ac => "ac",
            Algo::Reinforce => "reinforce",
        }
    }
}

/// Hyper-parameter overrides: a TOML table whose keys are the field names of
/// the algorithm's configuration struct (`PpoConfig`, `A2cConfig`,
/// `ReinforceConfig`, `AcConfig`), merged over the tuned defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides(pub toml::Table);

impl Overrides {
    /// Reads a TOML file of overrides, or the `config` object of a run's
    /// `summary.json` (so `--config runs/X/summary.json` reproduces run X).
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        if path.extension().is_some_and(|e| e == "json") {
            let summary: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("parsing {}", path.display()))?;
            let config = summary.get("config").with_context(|| {
                format!(
                    "{}: no `config` object (not a summary.json?)",
                    path.display()
                )
            })?;
            let table: toml::Table = serde_json::from_value(config.clone())
                .with_context(|| format!("{}: `config` is not a table", path.display()))?;
            return Ok(Overrides(table));
        }
        Self::parse(&text).with_context(|| format!("parsing {}", path.display()))
    }

    /// Parses TOML text.
    ///
    /// # Errors
    /// The TOML is malformed: one line naming the line and column.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        toml::from_str(text).map(Overrides).map_err(|e| {
            let at = e.span().map(|span| {
                let before = text.get(..span.start).unwrap_or(text);
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                format!("line {line}, column {column}: ")
            });
            anyhow::anyhow!(
                "{}{}",
                at.unwrap_or_default(),
                e.message().trim().replace('\n', " ")
            )
        })
    }
}

/// The effective configuration of a run's algorithm: the core's struct,
/// serialised with its field names (what `summary.json` records).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AlgoConfig {
    /// PPO.
    Ppo(PpoConfig),
    /// TRPO (collects and fits its critic with the PPO machinery, see
    /// [`TrpoConfig::to_ppo`]).
    Trpo(TrpoConfig),
    /// GRPO (no critic).
    Grpo(GrpoConfig),
    /// A2C (runs on the PPO machinery, see [`A2cConfig::to_ppo`]).
    A2c(A2cConfig),
    /// REINFORCE with a baseline.
    Reinforce(ReinforceConfig),
    /// The online actor-critic.
    Ac(AcConfig),
}

impl AlgoConfig {
    /// The tuned PPO settings for `env` over a budget of `steps`;
    /// `default_run`: plain PPO on the 64-64 CartPole nets (see
    /// [`TrainOptions::default_run`]).
    fn ppo_defaults(env: EnvName, steps: u64, default_run: bool) -> PpoConfig {
        match env {
            // The default run: RL Zoo's settings with fewer epochs, a larger
            // learning rate and λ 0.9, tuned for CPU time to solve on seeds
            // 10–49 (40/40 pass held-out; median 0.118 → 0.086 s, mean 0.209
            // → 0.101 s, worst 0.50 → 0.21 s, `perf stat` task-clock on one
            // core). Its neighbours (epochs 3, 5; lr 2e-3, 3e-3; λ 0.85,
            // 0.92, 0.95; γ 0.99; clip 0.3; 2 or 8 minibatches; 128-step
            // rollouts) were all slower.
            EnvName::Cartpole if default_run => PpoConfig {
                total_steps: steps,
                learning_rate: Schedule::linear_to_zero(2.5e-3),
                gae_lambda: 0.9,
                epochs: 4,
                ..PpoConfig::CARTPOLE
            },
            // RL Zoo's tuned CartPole hyper-parameters (γ 0.98, λ 0.8, lr and
            // clip annealed from 1e-3 / 0.2), with 10 epochs of 4 minibatches:
            // `--small` (the firmware's nets and protocol), `--kl-ref`,
            // `--reward-model` and PPO-penalty.
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
            // RL Zoo's Pendulum settings (lr 1e-3, reward scaling in place of
            // gSDE) with γ 0.95 and 5 epochs: swept over seeds 10–29 with the
            // evaluation every PENDULUM_EVAL_INTERVAL steps, 20/20 pass the
            // held-out evaluation at about half the CPU of γ 0.9 and 10 epochs
            // (11/20).
            EnvName::Pendulum => PpoConfig {
                total_steps: steps,
                learning_rate: Schedule::linear_to_zero(1e-3),
                gamma: 0.95,
                gae_lambda: 0.95,
                epochs: 5,
                minibatches: 32,
                normalize_reward: true,
                ..PpoConfig::DEFAULT
            },
        }
    }

    /// The tuned defaults for `env` and `algo` over a budget of `steps`
    /// (`default_run`: see [`TrainOptions::default_run`]).
    pub fn defaults(env: EnvName, algo: Algo, steps: u64, default_run: bool) -> Self {
        let pendulum = env == EnvName::Pendulum;
        let gamma = if pendulum { 0.9 } else { 0.99 };
        match algo {
            Algo::Ppo => AlgoConfig::Ppo(Self::ppo_defaults(env, steps, default_run)),
            // PPO-penalty (Schulman et al. 2017 §4): no clipping, β = 1 adapted
            // towards d_targ = 0.01, on the tuned PPO settings.
            Algo::PpoPenalty => AlgoConfig::Ppo(PpoConfig {
                clip_range: Schedule::Constant(f32::INFINITY),
                kl_coef: 1.0,
                kl_target: Some(0.01),
                ..Self::ppo_defaults(env, steps, false)
            }),
            Algo::Trpo => AlgoConfig::Trpo(TrpoConfig {
                total_steps: steps,
                gamma,
                critic_minibatches: 8,
                normalize_reward: pendulum,
                ..TrpoConfig::DEFAULT
            }),
            Algo::Grpo => AlgoConfig::Grpo(GrpoConfig {
                total_steps: steps,
                ..GrpoConfig::DEFAULT
            }),
            Algo::Gspo => AlgoConfig::Grpo(GrpoConfig {
                total_steps: steps,
                sequence_ratio: true,
                ..GrpoConfig::DEFAULT
            }),
            Algo::A2c => AlgoConfig::A2c(A2cConfig {
                total_steps: steps,
                normalize_reward: pendulum,
                gamma,
                ..A2cConfig::DEFAULT
            }),
            Algo::Reinforce => AlgoConfig::Reinforce(ReinforceConfig {
                total_steps: steps,
                gamma,
                ..ReinforceConfig::DEFAULT
            }),
            Algo::Ac => AlgoConfig::Ac(AcConfig {
                total_steps: steps,
                gamma,
                ..AcConfig::DEFAULT
            }),
        }
    }

    /// The defaults with `overrides` merged over them (nested tables such as
    /// `adam` or a `{ start, end }` schedule merge key by key).
    ///
    /// # Errors
    /// A key the algorithm does not have, or a value of the wrong type; both
    /// name the key. Value ranges are checked by the agent's `init`.
    pub fn resolve(
        env: EnvName,
        algo: Algo,
        steps: u64,
        default_run: bool,
        o: &Overrides,
    ) -> anyhow::Result<Self> {
        fn merged<T: Serialize + serde::de::DeserializeOwned>(
            defaults: &T,
            o: &Overrides,
            algo: Algo,
        ) -> anyhow::Result<T> {
            let mut table = toml::Table::try_from(defaults)?;
            for (key, value) in &o.0 {
                let Some(slot) = table.get_mut(key) else {
                    let keys: Vec<&str> = table.keys().map(String::as_str).collect();
                    bail!(
                        "config key `{key}` does not apply to {} (its keys: {})",
                        algo.name(),
                        keys.join(", ")
                    );
                };
                merge(slot, value.clone());
            }
            toml::Value::Table(table)
                .try_into()
                .map_err(|e| anyhow::anyhow!("config for {}: {e}", algo.name()))
        }
        fn merge(slot: &mut toml::Value, value: toml::Value) {
            match (slot, value) {
                (toml::Value::Table(into), toml::Value::Table(from)) => {
                    for (k, v) in from {
                        match into.get_mut(&k) {
                            Some(s) => merge(s, v),
                            None => {
                                into.insert(k, v);
                            }
                        }
                    }
                }
                (slot, value) => *slot = value,
            }
        }
        Ok(match Self::defaults(env, algo, steps, default_run) {
            AlgoConfig::Ppo(c) => AlgoConfig::Ppo(merged(&c, o, algo)?),
            AlgoConfig::Trpo(c) => AlgoConfig::Trpo(merged(&c, o, algo)?),
            AlgoConfig::Grpo(c) => AlgoConfig::Grpo(merged(&c, o, algo)?),
            AlgoConfig::A2c(c) => AlgoConfig::A2c(merged(&c, o, algo)?),
            AlgoConfig::Reinforce(c) => AlgoConfig::Reinforce(merged(&c, o, algo)?),
            AlgoConfig::Ac(c) => AlgoConfig::Ac(merged(&c, o, algo)?),
        })
    }

    /// The PPO machinery's configuration (PPO, A2C, REINFORCE).
    pub fn ppo(&self) -> Option<PpoConfig> {
        match *self {
            AlgoConfig::Ppo(c) => Some(c),
            AlgoConfig::Trpo(c) => Some(c.to_ppo()),
            AlgoConfig::A2c(c) => Some(c.to_ppo()),
            AlgoConfig::Reinforce(c) => Some(c.into()),
            AlgoConfig::Ac(_) | AlgoConfig::Grpo(_) => None,
        }
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
    /// Hyper-parameter overrides.
    pub overrides: Overrides,
    /// Evaluation return that counts as solved (the task's threshold by default).
    pub threshold: f32,
    /// Episodes of the deciding and of the reported evaluation (100).
    pub eval_episodes: u32,
    /// Standard errors by which the deciding evaluation must clear the
    /// threshold (`RunConfig::select_margin`).
    pub select_margin: f32,
    /// Stop as soon as the deciding evaluation passes.
    pub early_stop: bool,
    /// Evaluate during training (the quick and deciding evaluations, and
    /// with them early stop); `false`: only the reported evaluation, after
    /// the whole budget.
    pub train_eval: bool,
    /// Output directory (`None`: write nothing).
    pub out: Option<PathBuf>,
    /// Draw a progress bar on standard error.
    pub progress: bool,
    /// CartPole only: train the MCU-sized 4-32-32 actor and critic instead of 64-64.
    pub small: bool,
    /// Write a checkpoint (`<out>.checkpoint/`) every this many iterations
    /// (rollouts and updates; online steps for `ac`), so a killed run can
    /// be resumed bit for bit (`None`: no checkpoints).
    pub checkpoint_every: Option<u64>,
    /// The plant's physical parameters that differ from Gymnasium's
    /// (`CartPoleParams` / `PendulumParams` field names as keys).
    pub plant: toml::Table,
    /// PPO only: fine-tune from a reference policy, anchored to it by the
    /// per-step KL penalty (`microrl::algo::Anchored`).
    pub anchor: Option<AnchorOptions>,
    /// Multi-reward / multi-critic weights (`--reward-weights`, `--value-weights`).
    pub weights: FusionWeights,
    /// CartPole only: train on the learned reward of this Bradley–Terry
    /// model (`microrl reward-model`); evaluations use the plant's reward.
    pub reward_model: Option<PathBuf>,
}

/// `--reward-weights U,E` and `--value-weights V1,V2`: multi-reward and
/// multi-critic PPO (see `microrl::env::channels` and `microrl::algo::critic`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FusionWeights {
    /// Weights of cartpole-continuous's reward channels `(upright, effort)`;
    /// the evaluations score the plant's own reward (`upright`).
    pub reward: Option<[f32; 2]>,
    /// Two critics fused with these weights (PPO, PPO-penalty).
    pub value: Option<[f32; 2]>,
}

/// `--kl-ref POLICY --kl-beta B [--kl-target D]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnchorOptions {
    /// The reference policy file (also the starting point).
    pub reference: PathBuf,
    /// Initial (or fixed) `β`.
    pub kl_coef: f32,
    /// Target mean per-step KL for adapting `β` (`None`: fixed).
    pub kl_target: Option<f32>,
}

impl TrainOptions {
    /// `env`, `algo`, `seed` and `steps` with the defaults: the task's
    /// threshold, 100 evaluation episodes, early stop, no output, no
    /// progress bar, 64-wide networks.
    pub fn new(env: EnvName, algo: Algo, seed: u64, steps: u64) -> Self {
        Self {
            env,
            algo,
            seed,
            steps,
            overrides: Overrides::default(),
            threshold: env.threshold(),
            eval_episodes: 100,
            select_margin: microrl::train::DEFAULT_SELECT_MARGIN,
            early_stop: true,
            train_eval: true,
            out: None,
            progress: false,
            small: false,
            plant: toml::Table::new(),
            anchor: None,
            checkpoint_every: None,
            weights: FusionWeights::default(),
            reward_model: None,
        }
    }

    /// Checks the options the command line sets, naming the option: a zero
    /// `--steps` budget or `--eval-episodes`, a non-finite `--threshold`, and
    /// whatever else the core's [`RunConfig::validate`] refuses.
    ///
    /// # Errors
    /// One line naming the option and its constraint.
    pub fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.steps > 0,
            "--steps must be > 0 (the environment-step budget)"
        );
        anyhow::ensure!(
            self.eval_episodes > 0,
            "--eval-episodes must be > 0 (the episodes that decide and report \"solved\")"
        );
        anyhow::ensure!(
            self.threshold.is_finite(),
            "--threshold must be a finite number, not {}",
            self.threshold
        );
        self.run_config().validate().map_err(|e| match e {
            microrl::Error::InvalidConfig { field, reason } => {
                let option = match field {
                    "total_steps" => "--steps",
                    "select_episodes" | "report_episodes" => "--eval-episodes",
                    "threshold" => "--threshold",
                    "select_margin" => "--select-margin",
                    _ => "the run's options",
                };
                anyhow::anyhow!("invalid {option}: `{field}` {reason}")
            }
            e => anyhow::anyhow!("invalid run options: {e}"),
        })
    }

    /// Plain PPO on the 64-64 CartPole nets — no `--small`, `--kl-ref` or
    /// `--reward-model` — whose defaults are tuned for CPU time to solve
    /// (the others keep RL Zoo's settings: the firmware's protocol, and the
    /// studies that were measured with them).
    pub fn default_run(&self) -> bool {
        self.env == EnvName::Cartpole
            && self.algo == Algo::Ppo
            && !self.small
            && self.anchor.is_none()
            && self.reward_model.is_none()
    }

    /// The loop's configuration for these options.
    pub fn run_config(&self) -> RunConfig {
        RunConfig {
            eval_interval: match (self.algo, self.env) {
                (Algo::Ac, _) => AC_EVAL_INTERVAL,
                (Algo::Ppo | Algo::PpoPenalty, EnvName::Pendulum) => PENDULUM_EVAL_INTERVAL,
                _ => 1,
            },
            select_episodes: self.eval_episodes,
            select_margin: self.select_margin,
            report_episodes: self.eval_episodes,
            early_stop: self.early_stop && self.train_eval,
            quick_episodes: if self.train_eval {
                RunConfig::new(self.steps, self.threshold).quick_episodes
            } else {
                0
            },
            ..RunConfig::new(self.steps, self.threshold)
        }
    }
}

/// The result of one training run (the `--json` object of `microrl train`,
/// and `summary.json`).
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
    /// The 4-32-32 CartPole networks (`--small`).
    pub small: bool,
    /// The plant parameters that differ from Gymnasium's (`--plant`).
    pub plant: toml::Table,
    /// The reference policy and KL coefficient of a fine-tune (`--kl-ref`).
    pub anchor: Option<AnchorOptions>,
    /// Reward-channel and critic fusion weights.
    pub weights: FusionWeights,
    /// The learned reward model trained on (`--reward-model`).
    pub reward_model: Option<PathBuf>,
    /// Environment steps actually taken.
    pub steps_run: u64,
    /// Wall-clock seconds of the whole run (training and evaluations).
    pub wall_s: f64,
    /// Mean return of the reported evaluation (held-out start states).
    pub eval_mean: f32,
    /// Standard deviation of those returns.
    pub eval_std: f32,
    /// Episodes in the reported evaluation.
    pub eval_episodes: u32,
    /// Threshold the task counts as solved at.
    pub threshold: f32,
    /// First step at which the deciding evaluation (selection start states)
    /// reached the threshold.
    pub solved_at_step: Option<u64>,
    /// Mean of that deciding evaluation.
    pub select_mean: Option<f32>,
    /// Solved on held-out start states: the deciding evaluation passed and
    /// the reported one reaches the threshold too.
    pub solved: bool,
    /// Training episodes finished.
    pub episodes: u64,
    /// Gradient updates (rollouts, or online steps for `ac`).
    pub updates: u64,
    /// Diagnostics of the last update (rollout-based algorithms).
    pub last_update: Option<Diagnostics>,
    /// The algorithm's full effective configuration (its field names as
    /// keys): `--config summary.json` reads it back.
    pub config: AlgoConfig,
    /// The training loop's configuration.
    pub run: RunConfig,
    /// Where the policy was written.
    pub policy: Option<PathBuf>,
    /// The CRC-32 the policy file ends with (8 hex digits, as `inspect` and
    /// `init` print it): which policy this summary describes.
    pub policy_crc32: Option<String>,
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
    /// KL penalty coefficient `β` used (PPO-penalty; 0 otherwise).
    pub kl_coef: f32,
    /// Mean per-step `log π − log π_ref` of the rollout (a `--kl-ref`
    /// fine-tune; 0 otherwise).
    pub kl_reference: f32,
}

/// Iteration statistics the harness can summarise.
pub trait AsDiagnostics {
    /// The PPO diagnostics, if these statistics have them.
    fn diagnostics(&self) -> Option<Diagnostics>;
}

impl AsDiagnostics for UpdateStats {
    fn diagnostics(&self) -> Option<Diagnostics> {
        Some(Diagnostics {
            policy_loss: self.policy_loss,
            value_loss: self.value_loss,
            entropy: self.entropy,
            approx_kl: self.approx_kl,
            clip_fraction: self.clip_fraction,
            explained_variance: self.explained_variance,
            epochs: self.epochs,
            learning_rate: self.learning_rate,
            kl_coef: self.kl_coef,
            kl_reference: self.kl_reference,
        })
    }
}

impl AsDiagnostics for AcStats {
    fn diagnostics(&self) -> Option<Diagnostics> {
        None
    }
}

/// The harness's observers of the core loop: progress bar, learning curve,
/// last diagnostics.
struct Observer {
    start: Instant,
    bar: Option<indicatif::ProgressBar>,
    budget: u64,
    /// The last 100 training returns (the bar's and the curve's mean).
    recent: HistoryBuf<f32, 100>,
    curve: LearningCurve,
    last_update: Option<Diagnostics>,
    last_eval: f32,
    next_row: u64,
}

impl Observer {
    /// The observer's state and the run's options, for a checkpoint.
    fn save(
        &self,
        opts: &TrainOptions,
        config: &AlgoConfig,
        iterations: u64,
        wall_s: f64,
    ) -> anyhow::Result<String> {
        let bits = |x: Option<f64>| x.map(f64::to_bits);
        let progress = Progress {
            env: opts.env,
            algo: opts.algo,
            seed: opts.seed,
            steps: opts.steps,
            small: opts.small,
            threshold: opts.threshold,
            eval_episodes: opts.eval_episodes,
            select_margin: opts.select_margin,
            early_stop: opts.early_stop,
            train_eval: opts.train_eval,
            checkpoint_every: opts.checkpoint_every,
            plant: opts.plant.clone(),
            anchor: opts.anchor.clone(),
            weights: opts.weights,
            reward_model: opts.reward_model.clone(),
            config: serde_json::to_value(config)?,
            iterations,
            recent: self.recent.oldest_ordered().map(|r| r.to_bits()).collect(),
            curve: self
                .curve
                .rows()
                .iter()
                .map(|r| {
                    (
                        r.step,
                        r.episodes,
                        r.mean_return.to_bits(),
                        bits(r.eval_mean),
                        bits(r.eval_std),
                        r.wall_s.to_bits(),
                    )
                })
                .collect(),
            last_update: self.last_update.map(|d| {
                [
                    d.policy_loss,
                    d.value_loss,
                    d.entropy,
                    d.approx_kl,
                    d.clip_fraction,
                    d.explained_variance,
                    d.learning_rate,
                    d.kl_coef,
                    d.kl_reference,
                ]
                .map(f32::to_bits)
            }),
            epochs: self.last_update.map(|d| d.epochs),
            last_eval: self.last_eval.to_bits(),
            next_row: self.next_row,
            wall_s,
        };
        Ok(serde_json::to_string(&progress)?)
    }

    /// Back to the state [`save`](Self::save) recorded.
    fn restore(&mut self, p: &Progress) {
        let float = |b: Option<u64>| b.map(f64::from_bits);
        self.recent = HistoryBuf::new();
        self.recent
            .extend(p.recent.iter().map(|&b| f32::from_bits(b)));
        self.curve = LearningCurve::new();
        for &(step, episodes, mean, eval_mean, eval_std, wall) in &p.curve {
            self.curve.push(CurveRow {
                step,
                episodes,
                mean_return: f64::from_bits(mean),
                eval_mean: float(eval_mean),
                eval_std: float(eval_std),
                wall_s: f64::from_bits(wall),
            });
        }
        self.last_update = p.last_update.map(|b| {
            let f = b.map(f32::from_bits);
            Diagnostics {
                policy_loss: f[0],
                value_loss: f[1],
                entropy: f[2],
                approx_kl: f[3],
                clip_fraction: f[4],
                explained_variance: f[5],
                learning_rate: f[6],
                kl_coef: f[7],
                kl_reference: f[8],
                epochs: p.epochs.unwrap_or(0),
            }
        });
        self.last_eval = f32::from_bits(p.last_eval);
        self.next_row = p.next_row;
    }

    fn recent_mean(&self) -> f64 {
        if self.recent.is_empty() {
            return f64::NAN;
        }
        let sum: f64 = self.recent.oldest_ordered().map(|&r| f64::from(r)).sum();
        sum / self.recent.len() as f64
    }
}

impl<S: AsDiagnostics> Hooks<S> for Observer {
    fn on_episode(&mut self, episode: microrl::algo::Episode) {
        self.recent.write(episode.ret);
    }

    fn on_update(&mut self, _steps: u64, stats: &S) {
        if let Some(d) = stats.diagnostics() {
            self.last_update = Some(d);
        }
    }

    fn on_evaluation(&mut self, evaluation: &Evaluation) {
        self.last_eval = evaluation.mean;
    }

    fn on_iteration(&mut self, p: &microrl::train::Progress) -> ControlFlow<()> {
        if p.evaluation.is_some() || p.steps >= self.next_row {
            self.next_row = (p.steps / CURVE_INTERVAL + 1) * CURVE_INTERVAL;
            self.curve.push(CurveRow {
                step: p.steps,
                episodes: p.episodes,
                mean_return: self.recent_mean(),
                eval_mean: p.evaluation.map(|e| f64::from(e.mean)),
                eval_std: p.evaluation.map(|e| f64::from(e.std)),
                wall_s: self.start.elapsed().as_secs_f64(),
            });
        }
        if let Some(bar) = &self.bar {
            bar.set_position(p.steps.min(self.budget));
            bar.set_message(format!(
                "return {:>7.1}  eval {:>7.1}{}",
                self.recent_mean(),
                self.last_eval,
                if p.solved_at_step.is_some() {
                    "  solved"
                } else {
                    ""
                }
            ));
        }
        ControlFlow::Continue(())
    }
}

/// Trains as `opts` says, writes the outputs and returns the summary.
pub fn train(opts: &TrainOptions) -> anyhow::Result<TrainSummary> {
    train_from(opts, None)
}

/// The checkpoint directory of a run written to `out`: `<out>.checkpoint/`.
pub fn checkpoint_dir(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".checkpoint");
    out.with_file_name(name)
}

/// The file of a checkpoint directory holding the core's checkpoint.
const CHECKPOINT_STATE: &str = "state.mrlc";
/// The file holding the options and the harness's own progress (curve so far).
const CHECKPOINT_PROGRESS: &str = "progress.json";

/// Everything besides the core's checkpoint that a resumed run needs to end
/// exactly as the uninterrupted one: the options it was started with and
/// the harness's observer state. Floats are stored as their bits (NaN-safe,
/// exact).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Progress {
    env: EnvName,
    algo: Algo,
    seed: u64,
    steps: u64,
    small: bool,
    threshold: f32,
    eval_episodes: u32,
    /// Absent from the progress files of checkpoint formats 2 and 3, which
    /// the core then refuses by their version (a clearer error than a
    /// missing JSON field).
    #[serde(default)]
    select_margin: f32,
    early_stop: bool,
    /// Absent from progress files written before `--final-eval-only`.
    #[serde(default = "yes")]
    train_eval: bool,
    checkpoint_every: Option<u64>,
    #[serde(default)]
    plant: toml::Table,
    #[serde(default)]
    anchor: Option<AnchorOptions>,
    #[serde(default)]
    weights: FusionWeights,
    #[serde(default)]
    reward_model: Option<PathBuf>,
    /// The resolved algorithm configuration (field names as keys).
    config: serde_json::Value,
    iterations: u64,
    recent: Vec<u32>,
    /// `(step, episodes, mean_return, eval_mean, eval_std, wall_s)` bits.
    curve: Vec<SavedRow>,
    last_update: Option<[u32; 9]>,
    epochs: Option<u16>,
    last_eval: u32,
    next_row: u64,
    wall_s: f64,
}

/// `true`, the serde default of [`Progress::train_eval`].
fn yes() -> bool {
    true
}

/// A learning-curve row with its floats as bits.
type SavedRow = (u64, u64, u64, Option<u64>, Option<u64>, u64);

/// `microrl train --resume DIR`: continues the run whose checkpoint is in
/// `<DIR>.checkpoint/` with the options it was started with; the outputs are
/// those of the uninterrupted run (but for wall-clock times).
pub fn resume(out: &Path, progress_bar: bool) -> anyhow::Result<TrainSummary> {
    let dir = checkpoint_dir(out);
    let read = |name: &str| {
        std::fs::read(dir.join(name))
            .with_context(|| format!("no checkpoint to resume in {} ({name})", dir.display()))
    };
    let state = read(CHECKPOINT_STATE)?;
    let saved: Progress = serde_json::from_slice(&read(CHECKPOINT_PROGRESS)?)
        .with_context(|| format!("parsing {}", dir.join(CHECKPOINT_PROGRESS).display()))?;
    let config: toml::Table = serde_json::from_value(saved.config.clone())
        .context("the checkpoint's configuration is not a table")?;
    let opts = TrainOptions {
        overrides: Overrides(config),
        threshold: saved.threshold,
        eval_episodes: saved.eval_episodes,
        select_margin: saved.select_margin,
        early_stop: saved.early_stop,
        train_eval: saved.train_eval,
        out: Some(out.to_path_buf()),
        progress: progress_bar,
        small: saved.small,
        checkpoint_every: saved.checkpoint_every,
        plant: saved.plant.clone(),
        anchor: saved.anchor.clone(),
        weights: saved.weights,
        reward_model: saved.reward_model.clone(),
        ..TrainOptions::new(saved.env, saved.algo, saved.seed, saved.steps)
    };
    train_from(&opts, Some((state, saved)))
}

fn train_from(
    opts: &TrainOptions,
    resumed: Option<(Vec<u8>, Progress)>,
) -> anyhow::Result<TrainSummary> {
    opts.check()?;
    if let Some(dir) = &opts.out {
        // Refuse an --out that is not a run before training, not after.
        crate::atomic::check_run_dir(dir, &RUN_FILES)?;
    }
    let config = AlgoConfig::resolve(
        opts.env,
        opts.algo,
        opts.steps,
        opts.default_run(),
        &opts.overrides,
    )?;
    if opts.small && opts.env != EnvName::Cartpole {
        bail!(
            "--small is the 4-32-32 CartPole architecture; it does not apply to {}",
            opts.env.name()
        );
    }
    if opts.anchor.is_some() && opts.algo != Algo::Ppo {
        bail!("--kl-ref fine-tunes with PPO: use --algo ppo");
    }
    if opts.weights.reward.is_some() && opts.env != EnvName::CartpoleContinuous {
        bail!(
            "--reward-weights: {} has one reward channel; cartpole-continuous has two (upright, effort)",
            opts.env.name()
        );
    }
    if opts.reward_model.is_some() && opts.env != EnvName::Cartpole {
        bail!("--reward-model: the learned reward is CartPole's; use --env cartpole");
    }
    if opts.reward_model.is_some() && opts.anchor.is_some() {
        bail!("--reward-model and --kl-ref do not combine");
    }
    if let Some(w) = opts.weights.value {
        if !matches!(opts.algo, Algo::Ppo | Algo::PpoPenalty) || opts.anchor.is_some() {
            bail!(
                "--value-weights fuses PPO's critics: use --algo ppo or ppo-penalty, without --kl-ref"
            );
        }
        microrl::env::channels::check_weights("value_weights", &w)
            .map_err(|e| anyhow::anyhow!("invalid --value-weights: {e}"))?;
    }
    // One agent type per (environment, algorithm, width); the loop is generic.
    macro_rules! go {
        ($agent:ty, $env:expr, $eval:expr) => {{
            let mut agent: Box<$agent> = Box::new(<$agent>::ZERO);
            run(opts, config, &mut *agent, $env, $eval, resumed)
        }};
    }
    macro_rules! go_critics {
        ($agent:ty, $env:expr, $eval:expr, $weights:expr) => {{
            let mut agent: Box<$agent> = Box::new(<$agent>::ZERO);
            agent.train.params.critic.weights = $weights;
            run(opts, config, &mut *agent, $env, $eval, resumed)
        }};
    }
    macro_rules! go_anchored {
        ($agent:ty, $env:expr, $anchor:expr) => {{
            let anchor: &AnchorOptions = $anchor;
            let mut agent: Box<$agent> = Box::new(<$agent>::ZERO);
            let blob = std::fs::read(&anchor.reference)
                .with_context(|| format!("reading {}", anchor.reference.display()))?;
            microrl::serialize::load(&mut agent.reference, &blob).map_err(|e| {
                anyhow::anyhow!(
                    "--kl-ref {}: not a policy of this task and width ({e})",
                    anchor.reference.display()
                )
            })?;
            agent.anchor = microrl::algo::AnchorConfig {
                kl_coef: anchor.kl_coef,
                kl_target: anchor.kl_target,
            };
            run(opts, config, &mut *agent, $env, $env, resumed)
        }};
    }
    macro_rules! by_algo {
        ($env_ty:ty, $h:literal, $ppo_n:expr, $env:expr) => {
            by_algo!($env_ty, $h, $ppo_n, $env, $env)
        };
        ($env_ty:ty, $h:literal, $ppo_n:expr, $env:expr, $eval:expr) => {
            match (opts.algo, opts.weights.value) {
                (Algo::Ppo, _) if opts.anchor.is_some() => go_anchored!(
                    agent::Anchored<$env_ty, $h, { $ppo_n }>,
                    $env,
                    opts.anchor.as_ref().expect("checked")
                ),
                (Algo::Ppo | Algo::PpoPenalty, Some(w)) => {
                    go_critics!(agent::PpoCritics<$env_ty, $h, { $ppo_n }, 2>, $env, $eval, w)
                }
                (Algo::Ppo | Algo::PpoPenalty, None) => {
                    go!(agent::Ppo<$env_ty, $h, { $ppo_n }>, $env, $eval)
                }
                (Algo::Trpo, _) => go!(agent::Trpo<$env_ty, $h, TRPO_STEPS>, $env, $eval),
                (Algo::Grpo | Algo::Gspo, _) => go!(agent::Grpo<$env_ty, $h, GRPO_STEPS>, $env, $eval),
                (Algo::A2c, _) => go!(agent::A2c<$env_ty, $h, A2C_STEPS>, $env, $eval),
                (Algo::Reinforce, _) => {
                    go!(agent::Reinforce<$env_ty, $h, REINFORCE_STEPS>, $env, $eval)
                }
                (Algo::Ac, _) => go!(agent::ActorCritic<$env_ty, $h>, $env, $eval),
            }
        };
    }
    if let Some(path) = &opts.reward_model {
        // Trained on the learned reward, judged on the plant's own.
        let model = crate::preference::load(path)?;
        let plant = cartpole_plant(&opts.plant)?;
        let learned = LearnedReward::new(plant, model.clone());
        let scored = LearnedReward::scored_by_plant(plant, model);
        type Learned = LearnedReward<CartPole, crate::preference::RewardNet>;
        return if opts.small {
            by_algo!(
                Learned,
                32,
                PPO_CARTPOLE_STEPS,
                learned.clone(),
                scored.clone()
            )
        } else {
            by_algo!(
                Learned,
                64,
                PPO_CARTPOLE_STEPS,
                learned.clone(),
                scored.clone()
            )
        };
    }
    match (opts.env, opts.small) {
        (EnvName::Cartpole, true) => {
            by_algo!(
                CartPole,
                32,
                PPO_CARTPOLE_STEPS,
                cartpole_plant(&opts.plant)?
            )
        }
        (EnvName::Cartpole, false) => {
            by_algo!(
                CartPole,
                64,
                PPO_CARTPOLE_STEPS,
                cartpole_plant(&opts.plant)?
            )
        }
        (EnvName::CartpoleContinuous, _) => {
            let plant = CartPoleContinuous::with_params(plant_params(&opts.plant)?)
                .map_err(|e| anyhow::anyhow!("invalid --plant: {e}"))?;
            match opts.weights.reward {
                None => by_algo!(CartPoleContinuous, 64, PPO_CONTINUOUS_STEPS, plant),
                // Trained on the fused channels, judged on the plant's own
                // reward (the upright channel alone, exactly).
                Some(w) => by_algo!(
                    Weighted<CartPoleContinuous, 2>,
                    64,
                    PPO_CONTINUOUS_STEPS,
                    Weighted::new(plant, w)
                        .map_err(|e| anyhow::anyhow!("invalid --reward-weights: {e}"))?,
                    Weighted::new(plant, [1.0, 0.0]).expect("valid weights")
                ),
            }
        }
        (EnvName::Pendulum, _) => by_algo!(
            Pendulum,
            64,
            PPO_CONTINUOUS_STEPS,
            Pendulum::with_params(plant_params(&opts.plant)?)
                .map_err(|e| anyhow::anyhow!("invalid --plant: {e}"))?
        ),
    }
}

/// The plant parameters of `table` merged over Gymnasium's (`T`'s `Default`).
///
/// # Errors
/// A key `T` does not have, or a value that is not a number, named.
pub fn plant_params<T>(table: &toml::Table) -> anyhow::Result<T>
where
    T: Serialize + serde::de::DeserializeOwned + Default,
{
    let mut merged = toml::Table::try_from(T::default())?;
    for (key, value) in table {
        if !merged.contains_key(key) {
            let known: Vec<&str> = merged.keys().map(String::as_str).collect();
            bail!(
                "invalid --plant: no parameter `{key}` (known: {})",
                known.join(", ")
            );
        }
        merged.insert(key.clone(), value.clone());
    }
    toml::Value::Table(merged)
        .try_into()
        .map_err(|e: toml::de::Error| anyhow::anyhow!("invalid --plant: {}", e.message().trim()))
}

/// CartPole with `--plant`'s parameters.
///
/// # Errors
/// As [`plant_params`], and `CartPoleParams::validate`'s refusal.
pub fn cartpole_plant(table: &toml::Table) -> anyhow::Result<CartPole> {
    CartPole::with_params(plant_params(table)?).map_err(|e| anyhow::anyhow!("invalid --plant: {e}"))
}

/// Sets an agent's configuration from the resolved [`AlgoConfig`].
pub trait Configure {
    /// Installs `config`.
    ///
    /// # Errors
    /// `config` is for another kind of agent.
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()>;
}

impl<A, C, const OBS: usize, const N: usize> Configure for Ppo<A, C, OBS, N>
where
    A: microrl::policy::Actor<OBS>,
    C: microrl::algo::Critic<OBS>,
{
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()> {
        self.config = config
            .ppo()
            .context("the online actor-critic's config given to a rollout agent")?;
        Ok(())
    }
}

impl<A, C, const OBS: usize, const N: usize> Configure for microrl::algo::Anchored<A, C, OBS, N>
where
    A: microrl::policy::Actor<OBS>,
    C: microrl::algo::Critic<OBS>,
{
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()> {
        self.ppo.configure(config)
    }
}

impl<A, C, const OBS: usize, const N: usize> Configure for microrl::algo::Reinforce<A, C, OBS, N>
where
    A: microrl::policy::Actor<OBS>,
    C: microrl::algo::Critic<OBS>,
{
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()> {
        self.inner.configure(config)
    }
}

impl<A, C, const OBS: usize, const N: usize> Configure for microrl::algo::Trpo<A, C, OBS, N>
where
    A: microrl::policy::Actor<OBS>,
    C: microrl::algo::Critic<OBS>,
{
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()> {
        match config {
            AlgoConfig::Trpo(c) => {
                self.config = c;
                self.inner.config = c.to_ppo();
                Ok(())
            }
            _ => bail!("another algorithm's config given to TRPO"),
        }
    }
}

impl<A, const OBS: usize, const N: usize, const CHUNK: usize> Configure
    for microrl::algo::Grpo<A, OBS, N, CHUNK>
where
    A: microrl::policy::Actor<OBS>,
{
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()> {
        match config {
            AlgoConfig::Grpo(c) => {
                self.config = c;
                Ok(())
            }
            _ => bail!("another algorithm's config given to GRPO"),
        }
    }
}

impl<A, C, const OBS: usize> Configure for microrl::algo::ActorCritic<A, C, OBS>
where
    A: microrl::policy::Actor<OBS>,
    C: microrl::nn::Network<OBS, 1>,
{
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()> {
        match config {
            AlgoConfig::Ac(c) => {
                self.config = c;
                Ok(())
            }
            _ => bail!("a rollout algorithm's config given to the online actor-critic"),
        }
    }
}

/// The most environment copies a run can step side by side (`n_envs`):
/// RL Zoo's largest setting (LunarLander, Acrobot, MountainCar).
pub const MAX_ENVS: usize = 16;

/// Runs the core loop on one concrete agent and writes the outputs.
///
/// The training environment is always a [`VecEnv`] of [`MAX_ENVS`] copies
/// of `env`, of which the agent's `n_envs` (1 unless a PPO/A2C
/// configuration says otherwise) are stepped: with one copy the run is the
/// single-environment run bit for bit.
fn run<L, E, const OBS: usize>(
    opts: &TrainOptions,
    config: AlgoConfig,
    agent: &mut L,
    env: E,
    mut eval_env: E,
    resumed: Option<(Vec<u8>, Progress)>,
) -> anyhow::Result<TrainSummary>
where
    L: Learner<E> + Configure + AgentState,
    L::Policy: Params,
    L::Stats: AsDiagnostics,
    E: Env<Obs = SVector<f32, OBS>> + EnvState + Clone,
{
    let start = Instant::now();
    agent.configure(config)?;
    let mut envs: Box<VecEnv<E, MAX_ENVS>> =
        Box::new(VecEnv::new(std::array::from_fn(|_| env.clone())));
    let run_config = opts.run_config();
    let mut observer = Observer {
        start,
        bar: progress_bar(opts),
        budget: opts.steps,
        recent: HistoryBuf::new(),
        curve: LearningCurve::new(),
        last_update: None,
        last_eval: f32::NAN,
        next_row: 0,
    };
    type Run<const OBS: usize> = Trainer<SVector<f32, OBS>, Xoshiro128pp>;
    let (mut trainer, mut iterations, wall_before) = match resumed {
        None => {
            let trainer = Run::<OBS>::start_envs(agent, &mut *envs, run_config, opts.seed)
                .map_err(anyhow::Error::msg)?;
            (trainer, 0, 0.0)
        }
        Some((state, saved)) => {
            let trainer = Run::<OBS>::resume_envs(agent, &mut *envs, &state)
                .map_err(|e| anyhow::anyhow!("resuming from the checkpoint: {e}"))?;
            anyhow::ensure!(
                trainer.config == run_config,
                "the checkpoint's run configuration differs from its options"
            );
            observer.restore(&saved);
            (trainer, saved.iterations, saved.wall_s)
        }
    };
    // The core loop, with a checkpoint between iterations.
    let mut checkpoint_error = None;
    let checkpoint =
        |trainer: &Run<OBS>, agent: &L, envs: &VecEnv<E, MAX_ENVS>, observer: &mut Observer| {
            iterations += 1;
            let (Some(every), Some(out)) = (opts.checkpoint_every, &opts.out) else {
                return ControlFlow::Continue(());
            };
            if iterations % every != 0 {
                return ControlFlow::Continue(());
            }
            let elapsed = wall_before + start.elapsed().as_secs_f64();
            let written = (|| -> anyhow::Result<()> {
                let mut state = vec![0u8; Run::<OBS>::checkpoint_len_envs::<L, E, MAX_ENVS>()];
                let len = trainer
                    .save_envs(agent, envs, &mut state)
                    .map_err(|e| anyhow::anyhow!("writing a checkpoint: {e}"))?;
                let progress = observer.save(opts, &config, iterations, elapsed)?;
                crate::atomic::write_run_dir(
                    &checkpoint_dir(out),
                    &[
                        (CHECKPOINT_STATE, &state[..len]),
                        (CHECKPOINT_PROGRESS, progress.as_bytes()),
                    ],
                )
            })();
            match written {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    checkpoint_error = Some(e);
                    ControlFlow::Break(())
                }
            }
        };
    let outcome = trainer
        .run_envs_with(agent, &mut *envs, &mut eval_env, &mut observer, checkpoint)
        .map_err(|e| anyhow::anyhow!("training failed at step {}: {e}", agent.steps()))?;
    if let Some(e) = checkpoint_error {
        return Err(e);
    }
    let wall_s = wall_before + start.elapsed().as_secs_f64();
    if let Some(bar) = observer.bar.take() {
        bar.finish_and_clear();
    }

    let mut summary = TrainSummary {
        env: opts.env.name(),
        algo: opts.algo.name(),
        seed: opts.seed,
        steps: opts.steps,
        small: opts.small,
        plant: opts.plant.clone(),
        anchor: opts.anchor.clone(),
        weights: opts.weights,
        reward_model: opts.reward_model.clone(),
        steps_run: outcome.steps,
        wall_s,
        eval_mean: outcome.report.mean,
        eval_std: outcome.report.std,
        eval_episodes: outcome.report.episodes,
        threshold: opts.threshold,
        solved_at_step: outcome.solved_at_step,
        select_mean: outcome.selection.map(|e| e.mean),
        solved: outcome.solved(opts.threshold),
        episodes: outcome.episodes,
        updates: outcome.updates,
        last_update: observer.last_update,
        config,
        run: run_config,
        policy: None,
        policy_crc32: None,
        curve_csv: None,
        curve_png: None,
    };
    if let Some(dir) = &opts.out {
        let mut policy = Box::new(L::Policy::ZERO);
        agent.export(&mut policy);
        let blob = serialize::to_vec(&*policy).map_err(anyhow::Error::msg)?;
        let csv = observer.curve.to_csv();
        let title = format!(
            "{} {} seed {}",
            opts.algo.name(),
            opts.env.name(),
            opts.seed
        );
        let png = observer.curve.render_png(
            &title,
            Some(f64::from(opts.threshold)),
            crate::plot::DEFAULT_WIDTH,
            crate::plot::DEFAULT_HEIGHT,
        )?;
        summary.policy = Some(dir.join(POLICY_FILE));
        summary.policy_crc32 = Some(format!(
            "{:08x}",
            serialize::crc32(&blob[..blob.len().saturating_sub(4)])
        ));
        summary.curve_csv = Some(dir.join(CURVE_CSV_FILE));
        summary.curve_png = Some(dir.join(CURVE_PNG_FILE));
        let json = serde_json::to_string_pretty(&summary)?;
        // All four files appear together, replacing a previous run whole.
        crate::atomic::write_run_dir(
            dir,
            &[
                (POLICY_FILE, &blob),
                (CURVE_CSV_FILE, csv.as_bytes()),
                (CURVE_PNG_FILE, &png),
                (SUMMARY_FILE, json.as_bytes()),
            ],
        )?;
        // The run is complete: its checkpoint is no longer needed.
        let ckpt = checkpoint_dir(dir);
        if ckpt.is_dir() {
            std::fs::remove_dir_all(&ckpt)
                .with_context(|| format!("removing {}", ckpt.display()))?;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The PPO configuration `microrl train` resolves for `opts`.
    fn ppo(opts: &TrainOptions) -> PpoConfig {
        let resolved = AlgoConfig::resolve(
            opts.env,
            opts.algo,
            opts.steps,
            opts.default_run(),
            &opts.overrides,
        );
        match resolved {
            Ok(AlgoConfig::Ppo(c)) => c,
            other => panic!("not a PPO configuration: {other:?}"),
        }
    }

    /// Plain PPO on the 64-64 CartPole nets gets the settings tuned for time
    /// to solve; `--small` (the firmware's protocol, whose policy file the
    /// firmware tests pin), `--kl-ref`, `--reward-model` and PPO-penalty keep
    /// RL Zoo's, with which their figures were measured.
    #[test]
    fn only_the_default_run_gets_the_time_tuned_settings() {
        let plain = TrainOptions::new(EnvName::Cartpole, Algo::Ppo, 0, 100_000);
        let zoo = PpoConfig {
            total_steps: 100_000,
            ..PpoConfig::CARTPOLE
        };
        assert_eq!(
            ppo(&plain),
            PpoConfig {
                learning_rate: Schedule::linear_to_zero(2.5e-3),
                gae_lambda: 0.9,
                epochs: 4,
                ..zoo
            }
        );
        let small = TrainOptions {
            small: true,
            ..plain.clone()
        };
        let rewarded = TrainOptions {
            reward_model: Some(PathBuf::from("rm.mrlp")),
            ..plain.clone()
        };
        let anchored = TrainOptions {
            anchor: Some(AnchorOptions {
                reference: PathBuf::from("ref.mrlp"),
                kl_coef: 0.1,
                kl_target: None,
            }),
            ..plain.clone()
        };
        for opts in [&small, &rewarded, &anchored] {
            assert!(!opts.default_run());
            assert_eq!(ppo(opts), zoo);
        }
        let penalty = TrainOptions::new(EnvName::Cartpole, Algo::PpoPenalty, 0, 100_000);
        assert_eq!(ppo(&penalty).epochs, 10);
        let pendulum = TrainOptions::new(EnvName::Pendulum, Algo::Ppo, 0, 300_000);
        assert!(!pendulum.default_run());
    }
}
