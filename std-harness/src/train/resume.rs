//! Checkpoints of a desktop run (`<out>.checkpoint/`) and `--resume`.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
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
/// The file holding the kept policy (`--keep-best`), when one was kept.
pub(crate) const CHECKPOINT_BEST: &str = "best.mrlp";

/// The kept policy's record in `progress.json`: its score (bits), the step
/// it was kept at, and the CRC-32 that ends the `best.mrlp` written beside
/// it (the three files are one unit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BestMark {
    pub(crate) score: Option<u32>,
    pub(crate) step: u64,
    pub(crate) crc32: Option<u32>,
}

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
    /// Absent from the progress files of runs before `--lag` existed: 0.
    #[serde(default)]
    pub(crate) lag: u8,
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
    /// `--keep-best` (absent from progress files written before it: 0, the
    /// last policy, as those runs kept).
    #[serde(default)]
    pub(crate) keep_best: u32,
    /// The kept policy so far.
    #[serde(default)]
    pub(crate) best: BestMark,
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
    /// The CRC-32 that ends the `state.mrlc` written beside this file: the
    /// two are one unit (absent from progress files written before they
    /// were sealed, which carry no checksum either and are refused).
    #[serde(default)]
    pub(crate) state_crc32: Option<u32>,
}

/// The field of `progress.json` that holds its own checksum.
const CHECKSUM: &str = "checksum";

/// `progress` as `progress.json`: its canonical JSON (serde_json's, keys
/// sorted, no spaces) with one more field, `checksum`, the CRC-32 of that
/// JSON as eight hex digits.
///
/// # Errors
/// The progress does not serialise.
pub(crate) fn seal(progress: &Progress) -> anyhow::Result<String> {
    let mut json = serde_json::to_value(progress)?;
    let crc = microrl::serialize::crc32(json.to_string().as_bytes());
    if let Some(object) = json.as_object_mut() {
        object.insert(CHECKSUM.into(), format!("{crc:08x}").into());
    }
    Ok(json.to_string())
}

/// Reads a `progress.json` written by [`seal`], refusing one without its
/// checksum or whose content no longer matches it.
fn unseal(bytes: &[u8], path: &Path) -> anyhow::Result<Progress> {
    let mut json: serde_json::Value =
        serde_json::from_slice(bytes).with_context(|| format!("parsing {}", path.display()))?;
    let recorded = json.as_object_mut().and_then(|o| o.remove(CHECKSUM));
    let Some(recorded) = recorded else {
        bail!(
            "{}: no checksum (written by an older microrl), so it cannot be checked against its state.mrlc: start the run again",
            path.display()
        );
    };
    let crc = format!(
        "{:08x}",
        microrl::serialize::crc32(json.to_string().as_bytes())
    );
    let recorded = recorded
        .as_str()
        .map_or_else(|| recorded.to_string(), str::to_owned);
    anyhow::ensure!(
        recorded == crc,
        "{} was edited: its checksum {recorded} does not match its content ({crc}); restore it or start the run again",
        path.display()
    );
    serde_json::from_value(json).with_context(|| format!("parsing {}", path.display()))
}

/// The CRC-32 a checkpoint ends with, if it is intact (its bytes match
/// it); `None` for a damaged one, which the core then refuses.
pub(crate) fn state_crc(state: &[u8]) -> Option<u32> {
    let (body, crc) = state.split_at_checked(state.len().checked_sub(4)?)?;
    let crc = u32::from_le_bytes(crc.try_into().ok()?);
    (microrl::serialize::crc32(body) == crc).then_some(crc)
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
    let saved = unseal(&read(CHECKPOINT_PROGRESS)?, &dir.join(CHECKPOINT_PROGRESS))?;
    // The two files are one unit: the state must be the one written with
    // this progress (a damaged state is left to the core's own check).
    if let (Some(crc), Some(recorded)) = (state_crc(&state), saved.state_crc32) {
        anyhow::ensure!(
            crc == recorded,
            "{} belongs to another run: it ends with CRC-32 {crc:08x}, and {CHECKPOINT_PROGRESS} ({} {} seed {}) was written with the state ending {recorded:08x}",
            dir.join(CHECKPOINT_STATE).display(),
            saved.algo.name(),
            saved.env.name(),
            saved.seed
        );
    }
    anyhow::ensure!(
        saved.state_crc32.is_some(),
        "{}: no `state_crc32`, so it cannot be checked against its state.mrlc: start the run again",
        dir.join(CHECKPOINT_PROGRESS).display()
    );
    anyhow::ensure!(
        saved.checkpoint_every != Some(0),
        "{}: `checkpoint_every` must be > 0 (the run's --checkpoint-every), not 0",
        dir.join(CHECKPOINT_PROGRESS).display()
    );
    let mut config =
        json_config(&saved.config).context("the checkpoint's configuration is not a table")?;
    fill_added_keys(&mut config, saved.algo.name());
    let opts = TrainOptions {
        overrides: Overrides(config),
        threshold: saved.threshold,
        eval_episodes: saved.eval_episodes,
        select_margin: saved.select_margin,
        early_stop: saved.early_stop,
        train_eval: saved.train_eval,
        keep_best: saved.keep_best,
        out: Some(out.to_path_buf()),
        progress: progress_bar,
        small: saved.small,
        lag: saved.lag,
        checkpoint_every: saved.checkpoint_every,
        plant: saved.plant.clone(),
        anchor: saved.anchor.clone(),
        weights: saved.weights,
        reward_model: saved.reward_model.clone(),
        ..TrainOptions::new(saved.env, saved.algo, saved.seed, saved.steps)
    };
    opts.check_paths(None)?;
    train_from(&opts, Some((state, saved)))
}
