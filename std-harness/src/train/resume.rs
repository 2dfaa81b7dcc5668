//! Checkpoints of a desktop run (`<out>.checkpoint/`) and `--resume`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::*;

/// The checkpoint directory of a run written to `out`: `<out>.checkpoint/`.
pub fn checkpoint_dir(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".checkpoint");
    out.with_file_name(name)
}

/// The file of a checkpoint directory holding the core's checkpoint.
pub(crate) const CHECKPOINT_STATE: &str = "state.mrlc";
/// The file holding the options and the harness's own progress (curve so far).
pub(crate) const CHECKPOINT_PROGRESS: &str = "progress.json";

/// Everything besides the core's checkpoint that a resumed run needs to end
/// exactly as the uninterrupted one: the options it was started with and
/// the harness's observer state. Floats are stored as their bits (NaN-safe,
/// exact).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Progress {
    pub(crate) env: EnvName,
    pub(crate) algo: Algo,
    pub(crate) seed: u64,
    pub(crate) steps: u64,
    pub(crate) small: bool,
    pub(crate) threshold: f32,
    pub(crate) eval_episodes: u32,
    /// Absent from the progress files of checkpoint formats 2 and 3, which
    /// the core then refuses by their version (a clearer error than a
    /// missing JSON field).
    #[serde(default)]
    pub(crate) select_margin: f32,
    pub(crate) early_stop: bool,
    /// Absent from progress files written before `--final-eval-only`.
    #[serde(default = "yes")]
    pub(crate) train_eval: bool,
    pub(crate) checkpoint_every: Option<u64>,
    #[serde(default)]
    pub(crate) plant: toml::Table,
    #[serde(default)]
    pub(crate) anchor: Option<AnchorOptions>,
    #[serde(default)]
    pub(crate) weights: FusionWeights,
    #[serde(default)]
    pub(crate) reward_model: Option<PathBuf>,
    /// The resolved algorithm configuration (field names as keys).
    pub(crate) config: serde_json::Value,
    pub(crate) iterations: u64,
    pub(crate) recent: Vec<u32>,
    /// `(step, episodes, mean_return, eval_mean, eval_std, wall_s)` bits.
    pub(crate) curve: Vec<SavedRow>,
    pub(crate) last_update: Option<[u32; 9]>,
    pub(crate) epochs: Option<u16>,
    pub(crate) last_eval: u32,
    pub(crate) next_row: u64,
    pub(crate) wall_s: f64,
}

/// `true`, the serde default of [`Progress::train_eval`].
pub(crate) fn yes() -> bool {
    true
}

/// A learning-curve row with its floats as bits.
pub(crate) type SavedRow = (u64, u64, u64, Option<u64>, Option<u64>, u64);

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
    anyhow::ensure!(
        saved.checkpoint_every != Some(0),
        "{}: `checkpoint_every` must be > 0 (the run's --checkpoint-every), not 0",
        dir.join(CHECKPOINT_PROGRESS).display()
    );
    let config =
        json_config(&saved.config).context("the checkpoint's configuration is not a table")?;
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
