//! `microrl bench`: every plant of a family split trained with each
//! algorithm's preset and with SB3's defaults reproduced in microrl, scored
//! against the plant's classical baseline on the same held-out start states.
//!
//! The question a default must answer is not "does it fit the suite" but
//! "does it hold on plants nobody tuned it on". So the plants come from the
//! procedural family ([`microrl::env::family`]) in three fixed splits — tune
//! on `dev`, confirm on `validation`, report on `test` — and each plant gets:
//! - its **baseline**: the better of a tuned PID and a tuned LQI
//!   ([`microrl::baseline::family::fit`]) on the tuning start states,
//!   scored on [`HELD_OUT_EPISODES`] held-out ones
//!   ([`HELD_OUT_SEED`](microrl::baseline::HELD_OUT_SEED));
//! - per algorithm, `seeds` runs of its **preset** (`microrl train --env
//!   family --plant seed=S --algo A --steps N --no-early-stop`, exactly
//!   what a user gets) and `seeds` runs of the **reference**: SB3's
//!   defaults reproduced in microrl ([`PpoConfig::SB3`] for PPO and the
//!   online actor-critic, which SB3 does not have; SB3's own defaults,
//!   `SacConfig::DEFAULT` and `Td3Config::DEFAULT`, for SAC and TD3);
//! - the **worst seed**'s held-out mean return of each, its cost ratio to
//!   the baseline's (`learned cost / baseline cost`, every reward being a
//!   cost: 1 = equal, below 1 = better than the baseline) and CPU seconds.
//!
//! The summary per algorithm counts the plants where the preset beats the
//! baseline, where it is no worse than the reference, where it is within
//! 10 % of the reference's cost, and the median cost ratio. All runs of all
//! plants share one pool of worker threads (every core by default).

use std::path::{Path, PathBuf};

use anyhow::Context;
use microrl::SVector;
use microrl::algo::PpoConfig;
use microrl::baseline::HELD_OUT_SEED;
use microrl::baseline::family::{FamilyLqr, FamilyPid, fit_lqr, fit_pid, score_on};
use microrl::env::ActionOf;
use microrl::env::family::{
    FamilyEnv, Plant1, Plant2, PlantDiscrete, PlantParams, Split, generate,
};
use microrl::{Controller, rng::Xoshiro128pp};
use rand_core::SeedableRng;
use serde::Serialize;
use serde_json::json;

use crate::commands::Report;
use crate::plot;
use crate::suite::{HELD_OUT_EPISODES, Job, Jobs, run_jobs};
use crate::train::{Algo, AlgoConfig, EnvName, Overrides, with_agent};

#[cfg(test)]
mod tests;

/// What `microrl bench` was asked.
#[derive(Clone, Debug)]
pub struct BenchArgs {
    /// The split.
    pub split: Split,
    /// The algorithms (empty: ppo).
    pub algos: Vec<Algo>,
    /// Training seeds per (plant, configuration).
    pub seeds: u64,
    /// Environment steps per run instead of [`bench_steps`].
    pub steps: Option<u64>,
    /// Only the split's first `plants` plants (a quick run).
    pub plants: Option<usize>,
    /// Worker threads (0: every core).
    pub threads: usize,
    /// Draw a progress bar on standard error.
    pub progress: bool,
    /// Write `bench.png` and `bench.json` here.
    pub out: Option<PathBuf>,
    /// Configuration keys merged over every preset (`--config`: a candidate
    /// preset put to the split); the reference rows keep SB3's defaults.
    pub overrides: Overrides,
    /// An earlier `bench.json` whose reference rows are taken instead of
    /// running them again (the same plant, algorithm, budget and number of
    /// seeds; training is deterministic, so they are the rows this build
    /// would compute; a row not found there runs).
    pub reference_from: Option<PathBuf>,
    /// Every plant's `cost_scale` times this (1: as generated): a preset's
    /// ratios should not move with it.
    pub reward_scale: f64,
    /// Every plant's `obs_unit` times this (1: as generated).
    pub obs_scale: f64,
    /// Every run's result is its best evaluated policy on this many
    /// keep-best start states, as `microrl train` keeps it
    /// ([`microrl::train::KeepBest`]); 0: its last policy. The reference rows
    /// keep theirs by the same rule.
    pub keep_best: u32,
}

/// The reference rows of an earlier bench: `(plant, reference algorithm)`
/// to the per-seed returns, CPU seconds and budget.
type Earlier = std::collections::HashMap<(u64, String), (Vec<f32>, f64, u64)>;

/// Reads [`BenchArgs::reference_from`].
fn earlier_references(path: &Path, scales: (f64, f64), keep_best: u32) -> anyhow::Result<Earlier> {
    let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let json: serde_json::Value =
        serde_json::from_slice(&text).with_context(|| format!("parsing {}", path.display()))?;
    let scale = |k: &str| {
        json.get(k)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(1.0)
    };
    anyhow::ensure!(
        (scale("reward_scale"), scale("obs_scale")) == scales,
        "{}: its plants were scaled by reward_scale {} and obs_scale {}, not {} and {}",
        path.display(),
        scale("reward_scale"),
        scale("obs_scale"),
        scales.0,
        scales.1
    );
    // Benches written before keeping the best scored the last policy.
    let kept = json
        .get("keep_best")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    anyhow::ensure!(
        kept == u64::from(keep_best),
        "{}: its runs kept the best policy on {kept} start states (0: the last policy), not {keep_best}",
        path.display()
    );
    let rows = json["rows"]
        .as_array()
        .with_context(|| format!("{}: not a bench.json (no rows)", path.display()))?;
    let mut out = Earlier::new();
    for row in rows {
        let field = |k: &str| {
            row.get(k)
                .with_context(|| format!("{}: a row without `{k}`", path.display()))
        };
        let plant = field("plant")?.as_u64().context("`plant` is not a seed")?;
        // Keyed by the reference's algorithm: ac's reference is ppo's.
        let algo = match field("algo")?.as_str().context("`algo` is not a name")? {
            "ac" => "ppo",
            other => other,
        }
        .to_string();
        let steps = field("steps")?.as_u64().context("`steps` is not a count")?;
        let cpu = field("sb3_defaults_cpu_s")?.as_f64().unwrap_or(0.0);
        let per_seed = field("sb3_defaults_per_seed")?
            .as_array()
            .context("`sb3_defaults_per_seed` is not a list")?
            .iter()
            .map(|v| v.as_f64().map_or(f32::NEG_INFINITY, |x| x as f32))
            .collect();
        out.insert((plant, algo), (per_seed, cpu, steps));
    }
    Ok(out)
}

/// The files `--out` receives.
pub const OUT_FILES: [&str; 2] = ["bench.json", "bench.png"];

/// The budget of a bench run of `algo` when `--steps` is not given: 300 000
/// environment steps for the on-policy learners (300 to 3 000 episodes of a
/// family plant), 50 000 for SAC and TD3 (their suite budget).
pub fn bench_steps(algo: Algo) -> u64 {
    match algo {
        Algo::Sac | Algo::Td3 => 50_000,
        _ => 300_000,
    }
}

/// The CLI task of a family plant: `family`, `family-2` or `family-discrete`.
pub fn env_of(p: &PlantParams) -> EnvName {
    match (p.inputs, p.discrete) {
        (2, _) => EnvName::Family2,
        (_, true) => EnvName::FamilyDiscrete,
        _ => EnvName::Family,
    }
}

/// The reference configuration of `algo`: SB3's defaults reproduced in
/// microrl (PPO's for the online actor-critic).
pub fn reference(env: EnvName, algo: Algo, steps: u64) -> (Algo, AlgoConfig) {
    match algo {
        Algo::Sac | Algo::Td3 => (algo, AlgoConfig::defaults(env, algo, steps, false)),
        _ => (
            Algo::Ppo,
            AlgoConfig::Ppo(PpoConfig {
                total_steps: steps,
                ..PpoConfig::SB3
            }),
        ),
    }
}

/// One (plant, algorithm) row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The plant's generator seed (`--env ENV --plant seed=S`).
    pub plant: u64,
    /// Its class.
    pub class: &'static str,
    /// Its CLI task.
    pub env: &'static str,
    /// The baseline's held-out mean return.
    pub baseline: f32,
    /// The baseline's law (`pid` or `lqi`).
    pub baseline_law: &'static str,
    /// The tuned PID's held-out mean return (the baseline when it won).
    pub pid: f32,
    /// Doing nothing's (the actuator's rest command throughout).
    pub idle: f32,
    /// The algorithm.
    pub algo: &'static str,
    /// The preset's worst seed's held-out mean return (`-inf`: a run failed).
    pub learned_worst: f32,
    /// Each seed's.
    pub learned_per_seed: Vec<f32>,
    /// The reference's worst seed.
    pub sb3_defaults_worst: f32,
    /// Each seed's.
    pub sb3_defaults_per_seed: Vec<f32>,
    /// `learned cost / baseline cost` of the worst seed.
    pub ratio: f64,
    /// The same for the reference.
    pub sb3_defaults_ratio: f64,
    /// Environment steps per run.
    pub steps: u64,
    /// CPU seconds of the preset's runs (all seeds).
    pub cpu_s: f64,
    /// CPU seconds of the reference's runs.
    pub sb3_defaults_cpu_s: f64,
    /// The first failed run's error.
    pub error: Option<String>,
}

/// The summary of one algorithm over the split.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Plants run.
    pub plants: usize,
    /// Plants where the preset's worst seed beats the baseline.
    pub beats_baseline: usize,
    /// Plants where it is no worse than the reference's worst seed.
    pub beats_sb3_defaults: usize,
    /// Plants where its cost is at most 1.1 times the reference's.
    pub within_10pct_of_sb3_defaults: usize,
    /// The median of `ratio`.
    pub median_ratio: f64,
    /// The median of the reference's ratio.
    pub sb3_defaults_median_ratio: f64,
    /// Plants where the reference beats the baseline.
    pub sb3_defaults_beats_baseline: usize,
    /// Plants where the preset beats the tuned PID.
    pub beats_pid: usize,
    /// Plants where the reference beats the tuned PID.
    pub sb3_defaults_beats_pid: usize,
    /// Plants where the preset's worst seed ends worse than doing nothing.
    pub worse_than_idle: usize,
}

/// The cost ratio of `learned` to `baseline` returns (both costs, ≤ 0):
/// `learned / baseline`, ∞ for a failed run.
pub fn cost_ratio(learned: f32, baseline: f32) -> f64 {
    if learned.is_finite() {
        f64::from(learned) / f64::from(baseline)
    } else {
        f64::INFINITY
    }
}

/// A plant's classical controllers, scored on the held-out starts.
#[derive(Clone, Copy, Debug)]
struct Classical {
    /// The baseline's law (`pid` or `lqi`: the better on the tuning starts).
    law: &'static str,
    /// The baseline's held-out mean return.
    baseline: f32,
    /// The tuned PID's (the law a user without a model writes).
    pid: f32,
    /// Doing nothing's: the actuator's rest command throughout.
    idle: f32,
}

/// A plant's baseline and tuned PID ([`Classical`]).
fn baseline_of(p: &PlantParams) -> anyhow::Result<Classical> {
    fn score<P, const OBS: usize>(plant: P) -> anyhow::Result<Classical>
    where
        P: FamilyEnv<Obs = SVector<f32, OBS>>,
        FamilyPid<P>: Controller<OBS, Action = ActionOf<P>>,
        FamilyLqr<P>: Controller<OBS, Action = ActionOf<P>>,
    {
        let (pid, pid_tuning) = fit_pid(&plant);
        let pid_held_out = score_on(&pid, &plant, HELD_OUT_EPISODES, HELD_OUT_SEED)?;
        let p = plant.description();
        let rest = P::command(&p, [p.u_rest(); 2]);
        let idle = |_: &SVector<f32, OBS>| Ok::<_, microrl::Error>(rest);
        let mut env = plant.clone();
        let mut starts = Xoshiro128pp::seed_from_u64(HELD_OUT_SEED);
        let idle = microrl::algo::evaluate(&idle, &mut env, HELD_OUT_EPISODES, &mut starts)?.0;
        Ok(match fit_lqr(&plant) {
            Some((lqr, tuning)) if tuning > pid_tuning => Classical {
                law: "lqi",
                baseline: score_on(&lqr, &plant, HELD_OUT_EPISODES, HELD_OUT_SEED)?,
                pid: pid_held_out,
                idle,
            },
            _ => Classical {
                law: "pid",
                baseline: pid_held_out,
                pid: pid_held_out,
                idle,
            },
        })
    }
    match env_of(p) {
        EnvName::Family2 => score(Plant2::with_params(*p)?),
        EnvName::FamilyDiscrete => score(PlantDiscrete::with_params(*p)?),
        _ => score(Plant1::with_params(*p)?),
    }
}

/// A cell of the bench: `seeds` runs of one configuration on one plant.
struct Cell {
    plant: usize,
    per_seed: Vec<f32>,
    cpu_s: f64,
    error: Option<String>,
}

impl Cell {
    fn worst(&self) -> f32 {
        self.per_seed.iter().copied().fold(f32::INFINITY, f32::min)
    }
}

/// Runs the bench.
///
/// # Errors
/// An empty selection, or a configuration the core refuses (named). A
/// failed run is not an error: its row records it.
pub fn run(args: &BenchArgs) -> anyhow::Result<Report> {
    anyhow::ensure!(args.seeds > 0, "--seeds must be at least 1");
    if let Some(dir) = &args.out {
        crate::atomic::check_run_dir(dir, &OUT_FILES)?;
    }
    let algos = if args.algos.is_empty() {
        vec![Algo::Ppo]
    } else {
        args.algos.clone()
    };
    for &algo in &algos {
        anyhow::ensure!(
            matches!(algo, Algo::Ppo | Algo::Ac | Algo::Sac | Algo::Td3),
            "microrl bench runs ppo, ac, sac and td3: not {}",
            algo.name()
        );
    }
    let earlier = match &args.reference_from {
        Some(path) => {
            earlier_references(path, (args.reward_scale, args.obs_scale), args.keep_best)?
        }
        None => Earlier::new(),
    };
    let count = args
        .plants
        .unwrap_or(args.split.len())
        .min(args.split.len());
    anyhow::ensure!(count > 0, "--plants must be at least 1");
    let plants: Vec<(u64, PlantParams)> = (0..count)
        .filter_map(|i| args.split.seed(i))
        .map(|s| {
            let mut p = generate(s);
            p.cost_scale *= args.reward_scale;
            p.obs_unit *= args.obs_scale;
            (s, p)
        })
        .collect();

    // Every plant's baseline, on the pool.
    type Slot = std::sync::Mutex<Option<anyhow::Result<Classical>>>;
    let baselines: Vec<Slot> = plants.iter().map(|_| std::sync::Mutex::new(None)).collect();
    crate::pool::for_each_index(plants.len(), args.threads, |i| {
        let result = baseline_of(&plants[i].1);
        *baselines[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    });
    let baselines: Vec<Classical> = baselines
        .into_iter()
        .zip(&plants)
        .map(|(b, (seed, _))| {
            b.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or_else(|| Err(anyhow::anyhow!("not computed")))
                .with_context(|| format!("the baseline of family plant {seed}"))
        })
        .collect::<anyhow::Result<_>>()?;

    // The cells: each (plant, configuration) once; a reference shared by
    // two algorithms (PPO's for ppo and ac) runs once.
    let mut cells: Vec<Cell> = Vec::new();
    let mut keys: Vec<(usize, &'static str, String)> = Vec::new();
    let mut jobs: Vec<(usize, Job)> = Vec::new();
    // (plant, algo) -> (preset cell, reference cell, steps)
    let mut layout: Vec<(usize, Algo, usize, usize, u64)> = Vec::new();
    let mut cell_of = |plant: usize,
                       algo: Algo,
                       config: AlgoConfig,
                       kind: &'static str,
                       steps: u64,
                       cells: &mut Vec<Cell>,
                       jobs: &mut Vec<(usize, Job)>|
     -> anyhow::Result<usize> {
        let key = (plant, kind, serde_json::to_string(&config)?);
        if let Some(i) = keys.iter().position(|k| *k == key) {
            return Ok(i);
        }
        let (seed, p) = plants[plant];
        let env = env_of(&p);
        let mut table = toml::Table::new();
        table.insert("seed".into(), toml::Value::Integer(seed as i64));
        table.insert("reward_scale".into(), toml::Value::Float(args.reward_scale));
        table.insert("obs_scale".into(), toml::Value::Float(args.obs_scale));
        let runs = with_agent(
            env,
            algo,
            config,
            &table,
            Jobs {
                env,
                algo,
                steps,
                seeds: args.seeds,
                keep_best: args.keep_best,
            },
        )?;
        let index = cells.len();
        jobs.extend(runs.into_iter().map(|j| (index, j)));
        cells.push(Cell {
            plant,
            per_seed: Vec::new(),
            cpu_s: 0.0,
            error: None,
        });
        keys.push(key);
        Ok(index)
    };
    for (i, (_, p)) in plants.iter().enumerate() {
        let env = env_of(p);
        for &algo in &algos {
            // ppo and ac on every plant, sac and td3 on the continuous ones.
            if !crate::suite::applies(env, algo) {
                continue;
            }
            // As `microrl train`: `--steps`, else `--config`'s `total_steps`,
            // else the bench's budget; the reference runs as many.
            let mut overrides = args.overrides.clone();
            let (steps, _) =
                overrides.budget(args.steps, || bench_steps(algo), Path::new("--config"))?;
            let preset = AlgoConfig::resolve(env, algo, steps, false, &overrides)?;
            let preset = cell_of(i, algo, preset, algo.name(), steps, &mut cells, &mut jobs)?;
            let (ref_algo, config) = reference(env, algo, steps);
            let known = earlier
                .get(&(plants[i].0, ref_algo.name().to_string()))
                .filter(|(per_seed, _, s)| *s == steps && per_seed.len() as u64 == args.seeds);
            let reference = match known {
                Some((per_seed, cpu_s, _)) => {
                    cells.push(Cell {
                        plant: i,
                        per_seed: per_seed.clone(),
                        cpu_s: *cpu_s,
                        error: None,
                    });
                    cells.len() - 1
                }
                None => cell_of(i, ref_algo, config, "sb3", steps, &mut cells, &mut jobs)?,
            };
            layout.push((i, algo, preset, reference, steps));
        }
    }
    for (cell, result, cpu_s) in run_jobs(jobs, args.threads, args.progress) {
        let c = &mut cells[cell];
        c.cpu_s += cpu_s;
        match result {
            Ok(mean) => c.per_seed.push(mean),
            Err(e) => {
                c.per_seed.push(f32::NEG_INFINITY);
                c.error.get_or_insert_with(|| format!("{e:#}"));
            }
        }
    }
    let rows: Vec<Row> = layout
        .iter()
        .map(|&(i, algo, preset, reference, steps)| {
            let (seed, p) = plants[i];
            let Classical {
                law,
                baseline,
                pid,
                idle,
            } = baselines[i];
            let (a, r) = (&cells[preset], &cells[reference]);
            debug_assert_eq!((a.plant, r.plant), (i, i));
            Row {
                plant: seed,
                class: p.class.name(),
                env: env_of(&p).name(),
                baseline,
                baseline_law: law,
                pid,
                idle,
                algo: algo.name(),
                learned_worst: a.worst(),
                learned_per_seed: a.per_seed.clone(),
                sb3_defaults_worst: r.worst(),
                sb3_defaults_per_seed: r.per_seed.clone(),
                ratio: cost_ratio(a.worst(), baseline),
                sb3_defaults_ratio: cost_ratio(r.worst(), baseline),
                steps,
                cpu_s: a.cpu_s,
                sb3_defaults_cpu_s: r.cpu_s,
                error: a.error.clone().or_else(|| r.error.clone()),
            }
        })
        .collect();
    let summary: Vec<(&'static str, Summary)> = algos
        .iter()
        .map(|&algo| {
            (
                algo.name(),
                summarise(rows.iter().filter(|r| r.algo == algo.name())),
            )
        })
        .collect();
    if let Some(dir) = &args.out {
        write_outputs(dir, args, &rows, &summary)?;
    }
    Ok(report(args, plants.len(), &rows, &summary))
}

/// The median of `xs` (NaN for none; ∞ counts as the largest).
fn median(mut xs: Vec<f64>) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        0.5 * (xs[n / 2 - 1] + xs[n / 2])
    }
}

/// The [`Summary`] of `rows`.
pub fn summarise<'a>(rows: impl Iterator<Item = &'a Row> + Clone) -> Summary {
    let count = |f: &dyn Fn(&Row) -> bool| rows.clone().filter(|r| f(r)).count();
    Summary {
        plants: rows.clone().count(),
        beats_baseline: count(&|r| r.learned_worst > r.baseline),
        beats_sb3_defaults: count(&|r| r.learned_worst >= r.sb3_defaults_worst),
        within_10pct_of_sb3_defaults: count(&|r| {
            // Costs are −returns: learned cost ≤ 1.1 · reference cost.
            f64::from(r.learned_worst) >= 1.1 * f64::from(r.sb3_defaults_worst)
        }),
        median_ratio: median(rows.clone().map(|r| r.ratio).collect()),
        sb3_defaults_median_ratio: median(rows.clone().map(|r| r.sb3_defaults_ratio).collect()),
        sb3_defaults_beats_baseline: count(&|r| r.sb3_defaults_worst > r.baseline),
        beats_pid: count(&|r| r.learned_worst > r.pid),
        sb3_defaults_beats_pid: count(&|r| r.sb3_defaults_worst > r.pid),
        worse_than_idle: count(&|r| r.learned_worst < r.idle),
    }
}

/// `bench.json` (the report's JSON) and `bench.png` (each plant's cost
/// ratio to its baseline, log scale, per algorithm and for the reference).
fn write_outputs(
    dir: &Path,
    args: &BenchArgs,
    rows: &[Row],
    summary: &[(&'static str, Summary)],
) -> anyhow::Result<()> {
    let plants = rows
        .iter()
        .map(|r| r.plant)
        .collect::<std::collections::BTreeSet<_>>();
    let index = |seed: u64| plants.iter().position(|&s| s == seed).unwrap_or(0) as f64;
    let colors = [
        [31, 119, 180],
        [214, 39, 40],
        [148, 103, 189],
        [140, 86, 75],
    ];
    type Owned = (String, Vec<(f64, f64)>, [u8; 3]);
    let mut owned: Vec<Owned> = Vec::new();
    for (k, (algo, _)) in summary.iter().enumerate() {
        let points = rows
            .iter()
            .filter(|r| r.algo == *algo)
            .map(|r| (index(r.plant), r.ratio.log10()))
            .collect();
        owned.push((format!("{algo} preset"), points, colors[k % colors.len()]));
    }
    let reference: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (index(r.plant), r.sb3_defaults_ratio.log10()))
        .collect();
    owned.push(("SB3 defaults".into(), reference, [255, 127, 14]));
    let series: Vec<plot::Series> = owned
        .iter()
        .map(|(label, points, color)| plot::Series {
            label,
            points,
            color: *color,
            markers: true,
        })
        .collect();
    let title = format!(
        "microrl bench --split {}: worst seed's cost / baseline's",
        args.split.name()
    );
    let png = plot::render_png(
        &plot::Chart {
            title: &title,
            x_label: "plant (split order)",
            y_label: "log10(cost ratio), below 0 beats the baseline",
            series: &series,
            threshold: Some((0.0, "baseline")),
        },
        plot::DEFAULT_WIDTH,
        plot::DEFAULT_HEIGHT,
    )?;
    let json = report(args, plants.len(), rows, summary).json;
    let json = serde_json::to_string_pretty(&json)?;
    crate::atomic::write_run_dir(
        dir,
        &[(OUT_FILES[0], json.as_bytes()), (OUT_FILES[1], &png)],
    )
}

/// The table and the `--json` object.
fn report(
    args: &BenchArgs,
    plants: usize,
    rows: &[Row],
    summary: &[(&'static str, Summary)],
) -> Report {
    let split = args.split;
    let mut lines = vec![format!(
        "microrl bench --split {}: {plants} family plants, held-out mean return over {HELD_OUT_EPISODES} episodes (seed {HELD_OUT_SEED}), worst seed; ratio = cost / baseline's",
        split.name()
    )];
    lines.push(format!(
        "{:>6} {:<18} {:<4} {:>11} {:>11} {:<4} {:>11} {:>11} {:>8} {:>8} {:>8}",
        "plant",
        "class",
        "law",
        "baseline",
        "pid",
        "algo",
        "preset",
        "sb3",
        "ratio",
        "sb3",
        "cpu_s"
    ));
    for r in rows {
        lines.push(format!(
            "{:>6} {:<18} {:<4} {:>11.4e} {:>11.4e} {:<4} {:>11.4e} {:>11.4e} {:>8.3} {:>8.3} {:>8.1}{}",
            r.plant,
            r.class,
            r.baseline_law,
            r.baseline,
            r.pid,
            r.algo,
            r.learned_worst,
            r.sb3_defaults_worst,
            r.ratio,
            r.sb3_defaults_ratio,
            r.cpu_s + r.sb3_defaults_cpu_s,
            r.error
                .as_deref()
                .map(|e| format!("  FAIL ({e})"))
                .unwrap_or_default()
        ));
    }
    for (algo, s) in summary {
        lines.push(format!(
            "{algo}: beats the baseline on {}/{} (the tuned PID on {}), no worse than SB3's defaults on {}/{} (within 10 %: {}), median ratio {:.3} (SB3's defaults {:.3}, beating the baseline on {}, the PID on {})",
            s.beats_baseline,
            s.plants,
            s.beats_pid,
            s.beats_sb3_defaults,
            s.plants,
            s.within_10pct_of_sb3_defaults,
            s.median_ratio,
            s.sb3_defaults_median_ratio,
            s.sb3_defaults_beats_baseline,
            s.sb3_defaults_beats_pid
        ));
        if s.worse_than_idle > 0 {
            lines.push(format!(
                "{algo}: worse than doing nothing on {}/{} plants",
                s.worse_than_idle, s.plants
            ));
        }
    }
    let summary_json: serde_json::Map<String, serde_json::Value> = summary
        .iter()
        .map(|(algo, s)| ((*algo).to_string(), json!(s)))
        .collect();
    Report {
        lines,
        json: json!({
            "command": "bench",
            "split": split.name(),
            "plants": plants,
            "reward_scale": args.reward_scale,
            "obs_scale": args.obs_scale,
            "keep_best": args.keep_best,
            "rows": rows,
            "summary": summary_json,
        }),
    }
}
