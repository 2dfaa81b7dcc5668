//! `microrl plot`: the learning curves of several runs in one picture.
//!
//! A run directory (`microrl train --out DIR`) holds its curve as
//! `curve.csv` and its identity — algorithm, environment, seed, threshold —
//! in `summary.json`. [`read_run`] reads both (nothing else of the run is
//! needed, so a run whose policy was removed still plots); [`render`] draws
//! every run's training return as a line and its evaluations as markers in
//! the run's colour, with the shared threshold, through [`crate::plot`].
//!
//! Runs are only compared on one task: runs of different environments, or
//! with different thresholds, are refused rather than drawn against one
//! "solved" line that means nothing for some of them.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

use crate::curve::LearningCurve;
use crate::plot::{self, Chart, Series};
use crate::train::{CURVE_CSV_FILE, SUMMARY_FILE};

/// Run colours (matplotlib's tab10 without its green, which is the
/// threshold's); more runs than colours reuse them in order.
const PALETTE: [[u8; 3]; 9] = [
    [31, 119, 180],
    [255, 127, 14],
    [214, 39, 40],
    [148, 103, 189],
    [140, 86, 75],
    [227, 119, 194],
    [127, 127, 127],
    [188, 189, 34],
    [23, 190, 207],
];
/// The legend entries that say what lines and markers are.
const KEY_COLOR: [u8; 3] = [110, 110, 110];

/// What a run's `summary.json` says about it (the fields a plot needs).
#[derive(Clone, Debug, Deserialize)]
pub struct RunIdentity {
    /// Environment name (`cartpole`, …).
    pub env: String,
    /// Algorithm name (`ppo`, …).
    pub algo: String,
    /// Seed.
    pub seed: u64,
    /// The return at which the task counts as solved (`None`: the plant has
    /// none; `null` in the summary, or `f32::MAX` as older summaries wrote it).
    #[serde(deserialize_with = "threshold_from_json")]
    pub threshold: Option<f64>,
    /// The held-out evaluation at the end of the run.
    pub eval_mean: f64,
}

/// A summary's `threshold`: a number below `f32::MAX`, else none.
fn threshold_from_json<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let t = <Option<f64> as Deserialize>::deserialize(d)?;
    Ok(t.filter(|&t| t < f64::from(f32::MAX)))
}

/// A threshold as the plot's texts say it.
pub fn threshold_text(threshold: Option<f64>) -> String {
    threshold.map_or_else(|| "none".to_string(), |t| t.to_string())
}

/// One run directory, read.
#[derive(Clone, Debug)]
pub struct Run {
    /// The directory.
    pub dir: PathBuf,
    /// From its `summary.json`.
    pub identity: RunIdentity,
    /// Its `curve.csv`, as drawn: whole, or decimated to the picture when
    /// long ([`LearningCurve::read_csv_for_plot`]).
    pub curve: LearningCurve,
    /// The number of rows of its `curve.csv`.
    pub rows: u64,
}

impl Run {
    /// The legend text: algorithm, environment, seed.
    pub fn label(&self) -> String {
        let id = &self.identity;
        format!("{} {} seed {}", id.algo, id.env, id.seed)
    }
}

/// Reads the curve and identity of the run in `dir`.
///
/// # Errors
/// `dir` is not a directory, lacks `summary.json` or `curve.csv`, or either
/// does not parse (the error names the file).
pub fn read_run(dir: &Path) -> anyhow::Result<Run> {
    anyhow::ensure!(dir.is_dir(), "{}: not a directory", dir.display());
    for file in [SUMMARY_FILE, CURVE_CSV_FILE] {
        anyhow::ensure!(
            dir.join(file).is_file(),
            "{} is not a run directory: it has no {file} (`microrl train --out DIR` writes one)",
            dir.display()
        );
    }
    let summary = dir.join(SUMMARY_FILE);
    let text = std::fs::read_to_string(&summary)
        .with_context(|| format!("reading {}", summary.display()))?;
    let identity: RunIdentity = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a run summary", summary.display()))?;
    let (curve, rows) = LearningCurve::read_csv_for_plot(
        &dir.join(CURVE_CSV_FILE),
        plot::DEFAULT_WIDTH as usize,
        plot::DEFAULT_HEIGHT as usize,
    )?;
    Ok(Run {
        dir: dir.to_path_buf(),
        identity,
        curve,
        rows,
    })
}

/// Checks that `runs` can share one picture: at least one, all of one
/// environment and one threshold.
///
/// # Errors
/// No runs, or two runs on different environments or thresholds (naming
/// both directories).
pub fn check_comparable(runs: &[Run]) -> anyhow::Result<()> {
    let first = runs.first().context("no run to plot")?;
    for run in &runs[1..] {
        let (a, b) = (&first.identity, &run.identity);
        anyhow::ensure!(
            a.env == b.env,
            "{} is a {} run but {} is a {} run: plot runs of one environment together",
            first.dir.display(),
            a.env,
            run.dir.display(),
            b.env
        );
        anyhow::ensure!(
            a.threshold == b.threshold,
            "{} has threshold {} but {} has threshold {}: plot runs judged by one threshold together",
            first.dir.display(),
            threshold_text(a.threshold),
            run.dir.display(),
            threshold_text(b.threshold)
        );
    }
    Ok(())
}

/// The runs' curves in one PNG of `width` x `height`: each run's training
/// return (mean of the last 100 episodes) as a line and its evaluation
/// means as markers, in the run's colour, with the shared threshold.
///
/// # Errors
/// The runs are not comparable ([`check_comparable`]), or the plot cannot
/// be drawn at that size.
pub fn render(runs: &[Run], width: u32, height: u32) -> anyhow::Result<Vec<u8>> {
    check_comparable(runs)?;
    let mut labels: Vec<String> = runs.iter().map(Run::label).collect();
    // Two runs with one label (the same seed twice): name the directories.
    for i in 0..runs.len() {
        if labels.iter().filter(|l| **l == labels[i]).count() > 1 {
            labels[i] = format!("{} ({})", runs[i].label(), runs[i].dir.display());
        }
    }
    let lines: Vec<Vec<(f64, f64)>> = runs
        .iter()
        .map(|r| {
            let rows = r.curve.rows().iter();
            rows.map(|row| (row.step as f64, row.mean_return)).collect()
        })
        .collect();
    let evals: Vec<Vec<(f64, f64)>> = runs
        .iter()
        .map(|r| {
            let rows = r.curve.rows().iter();
            rows.filter_map(|row| row.eval_mean.map(|m| (row.step as f64, m)))
                .collect()
        })
        .collect();
    let mut series = Vec::with_capacity(2 * runs.len() + 1);
    for (i, label) in labels.iter().enumerate() {
        series.push(Series {
            label: "",
            points: &evals[i],
            color: PALETTE[i % PALETTE.len()],
            markers: true,
        });
        series.push(Series {
            label,
            points: &lines[i],
            color: PALETTE[i % PALETTE.len()],
            markers: false,
        });
    }
    // What lines and markers mean, once for every run.
    series.push(Series {
        label: "lines: train return (mean of last 100)",
        points: &[],
        color: KEY_COLOR,
        markers: false,
    });
    if evals.iter().any(|e| !e.is_empty()) {
        series.push(Series {
            label: "markers: eval return (mean)",
            points: &[],
            color: KEY_COLOR,
            markers: true,
        });
    }
    let identity = &runs[0].identity;
    let title = format!(
        "{}: {} run{}",
        identity.env,
        runs.len(),
        if runs.len() == 1 { "" } else { "s" }
    );
    let threshold_label = format!("threshold {}", threshold_text(identity.threshold));
    let chart = Chart {
        title: &title,
        x_label: "environment steps",
        y_label: "episode return",
        series: &series,
        threshold: identity.threshold.map(|t| (t, threshold_label.as_str())),
    };
    plot::render_png(&chart, width, height)
}
