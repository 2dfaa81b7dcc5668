//! The loop's configuration ([`RunConfig`]) and what it reports
//! ([`Evaluation`], [`Progress`], [`Outcome`]).

use crate::error::Error;

/// [`RunConfig::select_margin`]'s default, in standard errors.
pub const DEFAULT_SELECT_MARGIN: f32 = 3.0;

#[cfg(feature = "serde")]
const fn default_select_margin() -> f32 {
    DEFAULT_SELECT_MARGIN
}

/// How a run is driven and judged. Every field has a default (see
/// [`RunConfig::new`]); with the `serde` feature it (de)serialises with the
/// field names as keys.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct RunConfig {
    /// Environment-step budget; the run ends at the first iteration that
    /// reaches it.
    pub total_steps: u64,
    /// Mean evaluation return that counts as solved (e.g.
    /// [`Env::SOLVED_RETURN`](crate::env::Env::SOLVED_RETURN)).
    pub threshold: f32,
    /// Evaluate after the first iteration that crosses each multiple of this
    /// many environment steps, until solved. Default 1 000; `1` evaluates
    /// after every iteration (every rollout, for PPO).
    pub eval_interval: u64,
    /// Once solved (only without early stop; for the learning curve),
    /// evaluate every this many steps. Default 10 000.
    pub solved_eval_interval: u64,
    /// Episodes of the quick evaluation (selection stream) that gates the
    /// deciding one; 0 disables evaluation during training. Default 10.
    pub quick_episodes: u32,
    /// Episodes of the deciding evaluation (selection stream). Default 100.
    pub select_episodes: u32,
    /// How many standard errors the deciding evaluation's mean must clear the
    /// threshold by: the run is solved when [`RunConfig::lower_bound`]
    /// `= mean − select_margin · std / √select_episodes ≥ threshold`. Default
    /// 3.0; 0 decides on the mean alone.
    ///
    /// Stopping at the first of many evaluations whose plain mean crosses the
    /// threshold picks the luckiest: its start states flatter the policy, and
    /// the held-out report then falls short (the winner's curse). The margin
    /// is a one-sided lower confidence bound on the mean return over start
    /// states (z = 3: about 99.9 % for one evaluation; a run plays many, so
    /// the margin is wide); a policy that solves every start (std 0) stops at
    /// the same evaluation as without it.
    #[cfg_attr(feature = "serde", serde(default = "default_select_margin"))]
    pub select_margin: f32,
    /// Episodes of the reported evaluation (report stream, start states the
    /// stopping decision never saw). Default 100.
    pub report_episodes: u32,
    /// Stop at the first deciding evaluation that reaches the threshold.
    /// Default true.
    pub early_stop: bool,
}

impl RunConfig {
    /// A budget and a threshold with the defaults listed on each field.
    pub const fn new(total_steps: u64, threshold: f32) -> Self {
        Self {
            total_steps,
            threshold,
            eval_interval: 1_000,
            solved_eval_interval: 10_000,
            quick_episodes: 10,
            select_episodes: 100,
            select_margin: DEFAULT_SELECT_MARGIN,
            report_episodes: 100,
            early_stop: true,
        }
    }

    /// The lower confidence bound `mean − select_margin · std / √select_episodes`
    /// of a deciding evaluation with this `mean` and `std`: the run is solved
    /// when it reaches the threshold.
    pub fn lower_bound(&self, mean: f32, std: f32) -> f32 {
        let standard_error = std / crate::math::sqrt(self.select_episodes.max(1) as f32);
        mean - self.select_margin * standard_error
    }

    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the field: a zero budget or interval,
    /// a non-finite threshold, a negative or non-finite `select_margin`, no
    /// deciding or reported episodes while
    /// evaluation is on (a gate that cannot fail is no gate).
    pub fn validate(&self) -> Result<(), Error> {
        use crate::config::check;
        check("total_steps", self.total_steps > 0, "must be > 0")?;
        check("threshold", self.threshold.is_finite(), "must be finite")?;
        crate::config::non_negative("select_margin", self.select_margin)?;
        check("eval_interval", self.eval_interval > 0, "must be > 0")?;
        check(
            "solved_eval_interval",
            self.solved_eval_interval > 0,
            "must be > 0",
        )?;
        check(
            "select_episodes",
            self.quick_episodes == 0 || self.select_episodes > 0,
            "must be > 0 while quick_episodes > 0",
        )?;
        check("report_episodes", self.report_episodes > 0, "must be > 0")
    }
}

/// Which evaluation a result comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EvalKind {
    /// The quick gate (selection stream).
    Quick,
    /// The deciding evaluation (selection stream).
    Select,
    /// The reported evaluation (report stream).
    Report,
}

/// One deterministic evaluation.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Evaluation {
    /// Which one.
    pub kind: EvalKind,
    /// Environment steps trained when it ran.
    pub step: u64,
    /// Episodes played.
    pub episodes: u32,
    /// Mean return.
    pub mean: f32,
    /// Standard deviation of the returns.
    pub std: f32,
}

impl core::fmt::Display for EvalKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.pad(match self {
            EvalKind::Quick => "quick",
            EvalKind::Select => "deciding",
            EvalKind::Report => "held-out",
        })
    }
}

/// `held-out eval at step 20480: 500.0 ± 0.0 (100 episodes)`.
impl core::fmt::Display for Evaluation {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} eval at step {}: {:.1} ± {:.1} ({} episodes)",
            self.kind, self.step, self.mean, self.std, self.episodes
        )
    }
}

/// Where a run stands after an iteration (what [`Hooks::on_iteration`](crate::train::Hooks::on_iteration) sees).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Progress {
    /// Environment steps so far.
    pub steps: u64,
    /// Training episodes finished.
    pub episodes: u64,
    /// Gradient updates so far.
    pub updates: u64,
    /// First step at which the deciding evaluation reached the threshold.
    pub solved_at_step: Option<u64>,
    /// The evaluation this iteration ran (the deciding one if it ran,
    /// otherwise the quick one), if any.
    pub evaluation: Option<Evaluation>,
}

/// The result of [`Trainer::run`](crate::train::Trainer::run).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Outcome {
    /// Environment steps taken.
    pub steps: u64,
    /// Training episodes finished.
    pub episodes: u64,
    /// Gradient updates made.
    pub updates: u64,
    /// First step at which the deciding evaluation (selection stream)
    /// reached the threshold; `None` if it never did.
    pub solved_at_step: Option<u64>,
    /// The deciding evaluation that passed, if any.
    pub selection: Option<Evaluation>,
    /// The reported evaluation on held-out start states (report stream).
    pub report: Evaluation,
}

impl Outcome {
    /// Solved on held-out start states: the deciding evaluation passed and
    /// the reported one reaches `threshold` too.
    pub fn solved(&self, threshold: f32) -> bool {
        self.solved_at_step.is_some() && self.report.mean >= threshold
    }
}
