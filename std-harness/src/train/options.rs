//! What `microrl train` was asked to do ([`TrainOptions`]).

use std::path::{Path, PathBuf};

use microrl::train::RunConfig;
use serde::{Deserialize, Serialize};

use super::*;

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
    /// Keep the best evaluated policy (the run's result and its report): the
    /// start states of each keep-best evaluation
    /// ([`microrl::train::KeepBest`]; default
    /// [`KEEP_BEST_EPISODES`](microrl::train::KEEP_BEST_EPISODES)); 0 keeps
    /// the last policy. Off without evaluations during training
    /// (`train_eval = false`).
    pub keep_best: u32,
    /// Output directory (`None`: write nothing).
    pub out: Option<PathBuf>,
    /// Draw a progress bar on standard error.
    pub progress: bool,
    /// CartPole only: train the MCU-sized 4-32-32 actor and critic instead of 64-64.
    pub small: bool,
    /// PPO, `ac`, SAC and TD3 only: policy lag (0 or 1). With 1, the agent
    /// runs the schedule of a device that learns while it controls
    /// (`microrl::algo::Lagged`: a rollout a block for PPO, blocks of
    /// [`AC_LAG_BLOCK`](super::AC_LAG_BLOCK) ticks for `ac`,
    /// [`OFFPOLICY_LAG_BLOCK`](super::OFFPOLICY_LAG_BLOCK) for SAC and
    /// TD3): rollout (block) `j` is acted by the policy published after
    /// update (block) `j − 2`.
    pub lag: u8,
    /// Write a checkpoint (`<out>.checkpoint/`) every this many iterations
    /// (rollouts and updates; online steps for `ac`, environment steps for
    /// SAC and TD3; blocks with `--lag 1`), so a killed run can
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
            keep_best: microrl::train::KEEP_BEST_EPISODES,
            out: None,
            progress: false,
            small: false,
            lag: 0,
            plant: toml::Table::new(),
            anchor: None,
            checkpoint_every: None,
            weights: FusionWeights::default(),
            reward_model: None,
        }
    }

    /// Checks the options the command line sets, naming the option: a
    /// `--steps` budget or `--eval-episodes` of zero or above its bound
    /// ([`MAX_STEPS`](crate::limits::MAX_STEPS),
    /// [`MAX_EPISODES`](crate::limits::MAX_EPISODES)), a non-finite `--threshold`, a
    /// zero `--checkpoint-every` or one without an output directory, and
    /// whatever else the core's [`RunConfig::validate`] refuses.
    ///
    /// # Errors
    /// One line naming the option and its constraint.
    pub fn check(&self) -> anyhow::Result<()> {
        use crate::limits::{MAX_EPISODES, MAX_STEPS};
        anyhow::ensure!(
            self.steps > 0,
            "--steps must be > 0 (the environment-step budget)"
        );
        anyhow::ensure!(
            self.steps <= MAX_STEPS,
            "--steps must be at most {MAX_STEPS} (the environment-step budget), got {}",
            self.steps
        );
        anyhow::ensure!(
            self.eval_episodes > 0,
            "--eval-episodes must be > 0 (the episodes that decide and report \"solved\")"
        );
        anyhow::ensure!(
            self.eval_episodes <= MAX_EPISODES,
            "--eval-episodes must be at most {MAX_EPISODES}, got {}",
            self.eval_episodes
        );
        anyhow::ensure!(
            self.threshold.is_finite(),
            "--threshold must be a finite number, not {}",
            self.threshold
        );
        anyhow::ensure!(
            self.keep_best <= microrl::train::MAX_KEEP_BEST_EPISODES,
            "--keep-best must be at most {} episodes, not {}",
            microrl::train::MAX_KEEP_BEST_EPISODES,
            self.keep_best
        );
        anyhow::ensure!(
            self.checkpoint_every != Some(0),
            "--checkpoint-every must be > 0 (iterations between checkpoints)"
        );
        anyhow::ensure!(
            self.checkpoint_every.is_none() || self.out.is_some(),
            "--checkpoint-every needs an output directory (--out): checkpoints are written next to it"
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

    /// Refuses an output directory that is, or holds, one of the run's
    /// inputs (`config`, `--kl-ref`, `--reward-model`): it is replaced whole.
    ///
    /// # Errors
    /// One line naming both options.
    pub fn check_paths(&self, config: Option<&Path>) -> anyhow::Result<()> {
        let Some(out) = &self.out else {
            return Ok(());
        };
        crate::paths::check_distinct(
            &[("--out", out, crate::paths::Role::RunDir)],
            &[
                ("--config", config),
                (
                    "--kl-ref",
                    self.anchor.as_ref().map(|a| a.reference.as_path()),
                ),
                ("--reward-model", self.reward_model.as_deref()),
            ],
        )
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

    /// Start states of each keep-best evaluation: [`keep_best`](Self::keep_best),
    /// or 0 (the last policy) when nothing is evaluated during training.
    pub fn keep_best_episodes(&self) -> u32 {
        if self.train_eval { self.keep_best } else { 0 }
    }

    /// Why a SAC or TD3 run of these options would make no update at all:
    /// its budget ends before the first environment step past
    /// `learning_starts` that is a multiple of `train_freq` (the first
    /// update; SB3's schedule). `None` for every other run. A training run
    /// ([`train`]) says it on standard error as a `warning:` once its options
    /// and configuration are accepted; `microrl validate` refuses it (a gate
    /// over untrained policies says nothing).
    ///
    /// # Errors
    /// A configuration that does not resolve ([`AlgoConfig::resolve`]).
    pub fn no_update(&self) -> anyhow::Result<Option<String>> {
        let config = AlgoConfig::resolve(
            self.env,
            self.algo,
            self.steps,
            self.default_run(),
            &self.overrides,
        )?;
        // A configuration the agent refuses is refused by the run, naming
        // the field: nothing to warn about.
        let (cap, batch) = (OFFPOLICY_CAP, OFFPOLICY_BATCH);
        let (name, schedule) = match config {
            AlgoConfig::Sac(c) if c.validate(cap, batch).is_ok() => ("SAC", c.schedule()),
            AlgoConfig::Td3(c) if c.validate(cap, batch).is_ok() => ("TD3", c.schedule()),
            _ => return Ok(None),
        };
        let (starts, freq) = (
            u64::from(schedule.learning_starts),
            u64::from(schedule.train_freq.max(1)),
        );
        // Updates follow steps s in (learning_starts, steps] with s % train_freq == 0.
        if self.steps / freq > starts / freq {
            return Ok(None);
        }
        Ok(Some(format!(
            "--steps {} ends before {name}'s first update (the first step past learning_starts = {starts} that is a multiple of train_freq = {freq}): the run makes no update and its policy is the untrained actor; raise --steps or lower learning_starts",
            self.steps
        )))
    }

    /// The loop's configuration for these options.
    pub fn run_config(&self) -> RunConfig {
        RunConfig {
            eval_interval: match (self.algo, self.env) {
                (Algo::Ac, _) => AC_EVAL_INTERVAL,
                (Algo::Sac | Algo::Td3, _) => OFFPOLICY_EVAL_INTERVAL,
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
