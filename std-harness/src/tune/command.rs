//! `microrl tune --env E --algo A`: the [tuner](super) on a built-in plant,
//! with the plant's own defaults as the base configuration and beside the
//! winner; a progress bar, a table, and with `--out DIR` the winner as
//! `tuned.toml` (read by `microrl train --config`), the whole search as
//! `tune.json` and a plot of it as `tune.png` (each candidate's tuning
//! score against its budget).

use std::path::PathBuf;

use microrl::env::{ActionOf, Env, EnvState};
use microrl::train::Learner;
use microrl::{Controller, Params, SVector};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::{Dim, Trial, TuneOptions, TuneReport, tune};
use crate::commands::Report;
use crate::plot::{Chart, Series};
use crate::train::{Algo, AlgoConfig, EnvName, Overrides, WithAgent, with_agent};

/// Output files of `microrl tune --out DIR`.
pub const TUNE_FILES: [&str; 3] = ["tuned.toml", "tune.json", "tune.png"];

/// What `microrl tune` was asked.
#[derive(Clone, Debug)]
pub struct TuneArgs {
    /// The plant.
    pub env: EnvName,
    /// The algorithm (ppo, ac, sac, td3).
    pub algo: Algo,
    /// `--plant` parameters.
    pub plant: toml::Table,
    /// The search.
    pub options: TuneOptions,
    /// Where to write the outputs.
    pub out: Option<PathBuf>,
    /// Draw a progress bar on standard error.
    pub progress: bool,
}

/// Runs the search on a built-in plant and reports it.
///
/// # Errors
/// An algorithm the tuner has no search space for, invalid options or
/// `--plant`, an output directory that is not a run directory, a failed write.
pub fn run(args: &TuneArgs) -> anyhow::Result<Report> {
    args.options.validate()?;
    if let Some(dir) = &args.out {
        crate::atomic::check_run_dir(dir, &TUNE_FILES)?;
    }
    let base = AlgoConfig::resolve(
        args.env,
        args.algo,
        args.options.max_steps,
        false,
        &Overrides::default(),
    )?;
    with_agent(args.env, args.algo, base, &args.plant, Search(args))
}

/// `microrl tune`'s job for [`with_agent`].
struct Search<'a>(&'a TuneArgs);

impl WithAgent for Search<'_> {
    type Output = Report;
    const REFUSAL: &'static str = "microrl tune searches";
    fn run<E, L, C, const OBS: usize>(
        self,
        space: &'static [Dim],
        base: C,
        plant: E,
        make_agent: impl Fn(C) -> Box<L> + Send + Sync + Copy + 'static,
    ) -> anyhow::Result<Report>
    where
        E: Env<Obs = SVector<f32, OBS>> + EnvState + Clone + Send + Sync + 'static,
        L: Learner<E> + 'static,
        L::Policy: Params + Controller<OBS, Action = ActionOf<E>>,
        C: Clone + Send + Sync + Serialize + DeserializeOwned + 'static,
    {
        report(self.0, space, base, plant, make_agent)
    }
}

/// Runs the search with a progress bar, then writes and reports it.
fn report<E, L, C, const OBS: usize>(
    args: &TuneArgs,
    space: &[Dim],
    base: C,
    plant: E,
    make_agent: impl Fn(C) -> Box<L> + Sync,
) -> anyhow::Result<Report>
where
    E: Env<Obs = SVector<f32, OBS>> + EnvState + Clone + Sync,
    L: microrl::train::Learner<E>,
    C: Clone + Send + Sync + Serialize + serde::de::DeserializeOwned,
{
    let options = &args.options;
    let budgets = options.budgets();
    let mut alive = options.candidates;
    let mut trials = 1u64; // the base configuration's
    for _ in &budgets {
        trials += alive as u64;
        alive = (alive / options.eta).max(1);
    }
    let bar = if args.progress {
        indicatif::ProgressBar::new(trials)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} trials, {elapsed} [{msg}]")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let result = tune(
        space,
        base,
        || plant.clone(),
        make_agent,
        options,
        |trial: &Trial| {
            bar.inc(1);
            bar.set_message(format!("last score {:.2}", trial.score()));
        },
    );
    bar.finish_and_clear();
    let result = result?;
    let lines = table(args, &result);
    let json = summary(args, &result);
    if let Some(dir) = &args.out {
        let toml_text = format!(
            "# microrl tune --env {} --algo {}: the winner's values (microrl train --config)\n{}",
            args.env.name(),
            args.algo.name(),
            result.overrides_toml()
        );
        let json_text = serde_json::to_string_pretty(&json)?;
        let png = plot(args, &result)?;
        crate::atomic::write_run_dir(
            dir,
            &[
                (TUNE_FILES[0], toml_text.as_bytes()),
                (TUNE_FILES[1], json_text.as_bytes()),
                (TUNE_FILES[2], &png),
            ],
        )?;
    }
    Ok(Report { lines, json })
}

/// The values of candidate `c` as `key=value` pairs.
fn values(report: &TuneReport<impl Sized>, candidate: usize) -> String {
    report
        .candidates
        .get(candidate)
        .map(|table| {
            table
                .iter()
                .map(|(k, v)| format!("{k}={}", compact(v)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| "defaults".into())
}

/// A TOML value on one line (a schedule as its start).
fn compact(value: &toml::Value) -> String {
    match value {
        toml::Value::Float(x) => format!("{x:.4}"),
        toml::Value::Table(t) => t
            .get("start")
            .map_or_else(|| value.to_string(), |s| format!("{}→", compact(s))),
        other => other.to_string(),
    }
}

fn mean(xs: &[f32]) -> f32 {
    xs.iter().sum::<f32>() / xs.len().max(1) as f32
}

/// The human-readable table: each rung's candidates by score, then the
/// winner against the defaults on held-out start states.
fn table(args: &TuneArgs, report: &TuneReport<impl Sized>) -> Vec<String> {
    let mut lines = vec![format!(
        "tune {} on {}: {} candidates × {} seeds, budgets {:?}, keep 1/{} each rung",
        args.algo.name(),
        args.env.name(),
        args.options.candidates,
        args.options.seeds,
        report.budgets,
        args.options.eta
    )];
    lines.push(format!(
        "{:>5} {:>4} {:>8} {:>10} {:>10}  values",
        "rung", "cand", "steps", "tuning", "held-out"
    ));
    for t in &report.trials {
        let rung = t.rung.map_or_else(|| "base".into(), |r| r.to_string());
        let cand = t
            .rung
            .map_or_else(|| "-".into(), |_| t.candidate.to_string());
        let mut line = format!(
            "{rung:>5} {cand:>4} {:>8} {:>10.2} {:>10.2}  {}",
            t.steps,
            t.score(),
            mean(&t.held_out),
            values(report, t.candidate)
        );
        if let Some(e) = &t.error {
            line.push_str(&format!("  (refused: {e})"));
        }
        lines.push(line);
    }
    if let (Some(best), Some(base)) = (report.best_trial(), report.base_trial()) {
        let winner = if report.best_candidate == super::DEFAULTS {
            "the defaults (no candidate scored better on the tuning starts)".to_string()
        } else {
            format!(
                "candidate {} ({})",
                report.best_candidate,
                values(report, report.best_candidate)
            )
        };
        lines.push(format!(
            "best: {winner} — held-out {:.2} (worst seed {:.2}) against the defaults' {:.2} (worst seed {:.2}) at {} steps",
            mean(&best.held_out),
            best.held_out.iter().copied().fold(f32::INFINITY, f32::min),
            mean(&base.held_out),
            base.held_out.iter().copied().fold(f32::INFINITY, f32::min),
            best.steps
        ));
    }
    lines
}

/// `tune.json` and the `--json` line.
fn summary(args: &TuneArgs, report: &TuneReport<impl Serialize>) -> serde_json::Value {
    let held_out = |t: Option<&Trial>| t.map(|t| mean(&t.held_out));
    json!({
        "command": "tune",
        "env": args.env.name(),
        "algo": args.algo.name(),
        "options": {
            "candidates": args.options.candidates, "eta": args.options.eta,
            "min_steps": args.options.min_steps, "max_steps": args.options.max_steps,
            "seeds": args.options.seeds, "tuning_episodes": args.options.tuning_episodes,
            "report_episodes": args.options.report_episodes, "seed": args.options.seed,
        },
        "budgets": report.budgets,
        "candidates": report.candidates,
        "trials": report.trials,
        "best_candidate": report.best_candidate,
        "best_overrides": report.best_overrides,
        "best": report.best,
        "tuned_held_out": held_out(report.best_trial()),
        "default_held_out": held_out(report.base_trial()),
    })
}

/// `tune.png`: each candidate's tuning score at each budget it reached.
fn plot(args: &TuneArgs, report: &TuneReport<impl Sized>) -> anyhow::Result<Vec<u8>> {
    let mut points: Vec<(usize, Vec<(f64, f64)>)> = Vec::new();
    for t in report.trials.iter().filter(|t| t.rung.is_some()) {
        let score = f64::from(t.score());
        if !score.is_finite() {
            continue;
        }
        match points.iter_mut().find(|(c, _)| *c == t.candidate) {
            Some((_, p)) => p.push((t.steps as f64, score)),
            None => points.push((t.candidate, vec![(t.steps as f64, score)])),
        }
    }
    let labels: Vec<String> = points
        .iter()
        .map(|(c, _)| {
            if *c == report.best_candidate {
                format!("candidate {c} (best)")
            } else {
                format!("candidate {c}")
            }
        })
        .collect();
    let series: Vec<Series> = points
        .iter()
        .zip(&labels)
        .map(|((c, p), label)| Series {
            label,
            points: p,
            color: if *c == report.best_candidate {
                [214, 39, 40]
            } else {
                [160, 160, 160]
            },
            markers: true,
        })
        .collect();
    let title = format!(
        "microrl tune {} on {}: tuning score by budget",
        args.algo.name(),
        args.env.name()
    );
    let default = report.base_trial().map(|t| f64::from(t.score()));
    crate::plot::render_png(
        &Chart {
            title: &title,
            x_label: "environment steps",
            y_label: "mean return (tuning starts)",
            series: &series,
            threshold: default.map(|d| (d, "defaults")),
        },
        crate::plot::DEFAULT_WIDTH,
        crate::plot::DEFAULT_HEIGHT,
    )
}
