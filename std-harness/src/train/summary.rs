//! The schema of `summary.json` ([`TrainSummary`]) and the standard diagnostics.

use std::path::PathBuf;

use microrl::algo::{AcStats, UpdateStats};
use microrl::train::RunConfig;
use serde::Serialize;

use super::*;

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
    /// Rollouts of policy lag (`--lag`; 1: the learn-while-controlling
    /// schedule).
    #[serde(default)]
    pub lag: u8,
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
    /// Episodes in the reported evaluation (and the deciding one:
    /// `--eval-episodes`).
    pub eval_episodes: u32,
    /// Standard errors by which the deciding evaluation had to clear the
    /// threshold (`--select-margin`).
    pub select_margin: f32,
    /// Stop at the first deciding evaluation that passes (not
    /// `--no-early-stop`).
    pub early_stop: bool,
    /// No evaluation during training, only the reported one after the
    /// whole budget (`--final-eval-only`).
    pub final_eval_only: bool,
    /// Threshold the task counts as solved at; `null` in JSON for a plant
    /// without one ([`threshold_json`]).
    #[serde(serialize_with = "threshold_as_json")]
    pub threshold: f32,
    /// First step at which the deciding evaluation (selection start states)
    /// reached the threshold.
    pub solved_at_step: Option<u64>,
    /// Mean of that deciding evaluation.
    pub select_mean: Option<f32>,
    /// Start states of each keep-best evaluation (`--keep-best`; 0: the
    /// result is the last policy).
    pub keep_best: u32,
    /// The step of the policy that is the run's result (the held-out report
    /// and `policy.mrlp`): the best evaluated one, or the last.
    pub kept_step: u64,
    /// Its mean return on the keep-best start states (`None`: the last
    /// policy, not chosen by score).
    pub kept_score: Option<f32>,
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
    /// keys): `--config summary.json` reads it back. A non-finite float
    /// (PPO-penalty's `clip_range`) is the string `"inf"`, `"-inf"` or
    /// `"nan"` (JSON has no infinity).
    #[serde(serialize_with = "config_as_json")]
    pub config: AlgoConfig,
    /// The training loop's configuration (its `threshold` as
    /// [`threshold_json`] writes it).
    #[serde(serialize_with = "run_as_json")]
    pub run: RunConfig,
    /// Where the policy was written.
    pub policy: Option<PathBuf>,
    /// The CRC-32 the policy's parameter blob ends with (8 hex digits, as `inspect` and
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

impl AsDiagnostics for Option<microrl::algo::sac::SacStats> {
    fn diagnostics(&self) -> Option<Diagnostics> {
        None
    }
}

impl AsDiagnostics for Option<microrl::algo::td3::Td3Stats> {
    fn diagnostics(&self) -> Option<Diagnostics> {
        None
    }
}

impl AsDiagnostics for AcStats {
    fn diagnostics(&self) -> Option<Diagnostics> {
        None
    }
}

/// A solved threshold as JSON: `None` (`null`) for a plant that has none —
/// its `SOLVED_RETURN` is `f32::MAX`, a return no run reaches (the suite's
/// plants, the procedural family) — else the threshold.
pub fn threshold_json(threshold: f32) -> Option<f32> {
    (threshold < f32::MAX).then_some(threshold)
}

/// A threshold field as [`threshold_json`] writes it.
pub(crate) fn threshold_as_json<S: serde::Serializer>(t: &f32, s: S) -> Result<S::Ok, S::Error> {
    threshold_json(*t).serialize(s)
}

/// [`TrainSummary::run`] with its threshold as [`threshold_json`] writes it.
fn run_as_json<S: serde::Serializer>(run: &RunConfig, s: S) -> Result<S::Ok, S::Error> {
    let mut value = serde_json::to_value(run).map_err(serde::ser::Error::custom)?;
    value["threshold"] = serde_json::json!(threshold_json(run.threshold));
    value.serialize(s)
}

/// [`TrainSummary::config`] as [`config_json`] writes it.
fn config_as_json<S: serde::Serializer>(config: &AlgoConfig, s: S) -> Result<S::Ok, S::Error> {
    config_json(config)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}
