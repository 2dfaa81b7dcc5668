//! `microrl suite`: every plant of the suite trained with the defaults,
//! scored against its classical baseline on the same held-out start states.
//!
//! A row is one (plant, algorithm): `seeds` runs of exactly what `microrl
//! train --env E --algo A --seed S --no-early-stop` does (the same agent
//! type, default configuration, step budget and evaluation protocol; see
//! [`row_options`]), then each trained
//! policy's deterministic action — the action the deployed policy takes —
//! is scored on [`HELD_OUT_EPISODES`] episodes from the held-out stream
//! ([`baseline::HELD_OUT_SEED`]), the very episodes the plant's baseline
//! controller (its committed `TUNED` gains, [`microrl::baseline`]) is
//! scored on. `learned` is the *worst* seed's mean return, and a row passes
//! when it beats `baseline`; the command fails unless every row passes.
//!
//! The runs of all rows share one pool of worker threads (every core by
//! default). `cpu_s` is the CPU time of a row's runs (training and the
//! held-out scoring), summed over its seeds, measured per thread, so it
//! does not depend on how many run at once.

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, anyhow};
use microrl::baseline::{self, HELD_OUT_SEED};
use microrl::env::{ActionOf, Env, EnvState};
use microrl::rng::Xoshiro128pp;
use microrl::train::{KeepBest, Learner, Trainer};
use microrl::{Controller, Error, Params, SVector, algo};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::commands::Report;
use crate::train::{
    Algo, AlgoConfig, EnvName, Overrides, TrainOptions, WithAgent, default_steps, with_agent,
};
use crate::tune::Dim;

#[cfg(test)]
mod tests;

/// The plants of the suite: each has a classical baseline.
pub const PLANTS: [EnvName; 5] = [
    EnvName::Acrobot,
    EnvName::MountaincarContinuous,
    EnvName::CartpoleSwingup,
    EnvName::Servo,
    EnvName::Quadrotor2d,
];

/// Held-out episodes per policy (and per baseline): the baselines' table in
/// `docs/plants.md` uses the same 200.
pub const HELD_OUT_EPISODES: u32 = 200;

/// The algorithms a row is run with when `--algo` is not given: the best
/// measured for the plant's action type (docs/plants.md, "The suite").
/// PPO for both: on the continuous plants SAC's defaults (50 000 steps,
/// about 280 CPU s a run) lost to the baseline on all four and to PPO's
/// defaults (then 500 000 steps, about 20 CPU s) on three.
pub fn default_algos(_env: EnvName) -> &'static [Algo] {
    &[Algo::Ppo]
}

/// The algorithms `microrl suite` knows how to run on `env` (those
/// `microrl tune` searches): ppo and ac everywhere, sac and td3 on the
/// continuous plants.
pub fn applies(env: EnvName, algo: Algo) -> bool {
    match algo {
        Algo::Ppo | Algo::Ac => true,
        Algo::Sac | Algo::Td3 => env.continuous(),
        _ => false,
    }
}

/// The mean return of `env`'s committed baseline controller on the
/// held-out episodes; `None` for a plant without one.
///
/// # Errors
/// The plant's refusal of a step (never with the committed gains).
pub fn baseline_held_out(env: EnvName) -> Result<Option<f32>, Error> {
    fn score<C, E, const OBS: usize>(controller: &C, mut plant: E) -> Result<f32, Error>
    where
        C: Controller<OBS, Action = ActionOf<E>> + baseline::EpisodeReset,
        E: Env<Obs = SVector<f32, OBS>>,
    {
        let mut starts = Xoshiro128PlusPlus::seed_from_u64(HELD_OUT_SEED);
        baseline::evaluate(controller, &mut plant, HELD_OUT_EPISODES, &mut starts).map(|(m, _)| m)
    }
    use microrl::env;
    Ok(Some(match env {
        EnvName::Acrobot => score(&baseline::AcrobotPfl::tuned(), env::Acrobot::new())?,
        EnvName::MountaincarContinuous => score(
            &baseline::MountainCarPump::new(baseline::MountainCarPump::TUNED),
            env::MountainCarContinuous::new(),
        )?,
        EnvName::CartpoleSwingup => score(
            &baseline::SwingUpEnergy::tuned(),
            env::CartPoleSwingUp::new(),
        )?,
        EnvName::Servo => score(&baseline::ServoPid::tuned(), env::Servo::new())?,
        EnvName::Quadrotor2d => score(&baseline::HoverCascade::tuned(), env::Quadrotor2d::new())?,
        _ => return Ok(None),
    }))
}

/// The plants `microrl suite` trains when none is named: every plant of
/// [`PLANTS`] that one of `algos` applies to (all of them for no `algos`,
/// each plant's [`default_algos`]) — `--algo sac` trains the continuous
/// ones.
pub fn plants_for(algos: &[Algo]) -> Vec<EnvName> {
    PLANTS
        .into_iter()
        .filter(|&env| algos.is_empty() || algos.iter().any(|&algo| applies(env, algo)))
        .collect()
}

/// The rows of `env`: the `requested` algorithms that apply to it (none
/// requested: its [`default_algos`]).
///
/// # Errors
/// When none of the requested algorithms applies to `env`, naming them.
pub fn row_algos(env: EnvName, requested: &[Algo]) -> anyhow::Result<Vec<Algo>> {
    if requested.is_empty() {
        return Ok(default_algos(env).to_vec());
    }
    let algos: Vec<Algo> = requested
        .iter()
        .copied()
        .filter(|&algo| applies(env, algo))
        .collect();
    anyhow::ensure!(
        !algos.is_empty(),
        "microrl suite runs ppo and ac on every plant, sac and td3 on the continuous ones: not {} on {}",
        requested
            .iter()
            .map(|a| a.name())
            .collect::<Vec<_>>()
            .join(" or "),
        env.name()
    );
    Ok(algos)
}

/// What `microrl suite` was asked.
#[derive(Clone, Debug)]
pub struct SuiteArgs {
    /// The plants (default: [`PLANTS`]).
    pub envs: Vec<EnvName>,
    /// The algorithms (empty: [`default_algos`] of each plant).
    pub algos: Vec<Algo>,
    /// Training seeds per row (0, 1, …).
    pub seeds: u64,
    /// Environment steps per run instead of each row's default budget.
    pub steps: Option<u64>,
    /// Configuration keys merged over every row's defaults (`--config`; a
    /// tuned configuration put to the whole suite).
    pub overrides: Overrides,
    /// Score the policy that did best on the keep-best evaluations of the
    /// run (this many fixed start states after every evaluation the trainer
    /// runs, default [`KEEP_BEST_EPISODES`]), not the last one; 0 scores the
    /// last policy.
    pub keep_best: u32,
    /// Worker threads (0: every core).
    pub threads: usize,
    /// Draw a progress bar on standard error.
    pub progress: bool,
}

/// One (plant, algorithm) row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    /// The plant (`--env`).
    pub plant: &'static str,
    /// The algorithm (`--algo`).
    pub algo: &'static str,
    /// Training seeds.
    pub seeds: u64,
    /// The baseline's held-out mean return.
    pub baseline: f32,
    /// The worst seed's held-out mean return (`-inf` if a run failed).
    pub learned: f32,
    /// The mean over seeds of the held-out mean returns.
    pub learned_mean: f32,
    /// Each seed's held-out mean return.
    pub per_seed: Vec<f32>,
    /// Environment steps per run (the budget).
    pub steps: u64,
    /// CPU seconds of the row's runs, summed over seeds.
    pub cpu_s: f64,
    /// `learned > baseline`.
    pub beats: bool,
    /// The first failed run's error.
    pub error: Option<String>,
}

/// Episodes of the keep-best evaluation (the core's; see [`KeepBest`]).
pub use microrl::train::KEEP_BEST_EPISODES;

/// A finished job: its row, its held-out mean return or error, its CPU
/// seconds.
pub(crate) type Done = (usize, anyhow::Result<f32>, f64);

/// One seed's run, ready to go to a worker thread.
pub(crate) type Job = Box<dyn FnOnce() -> anyhow::Result<f32> + Send>;

/// Builds a row's jobs for [`with_agent`].
pub(crate) struct Jobs {
    pub(crate) env: EnvName,
    pub(crate) algo: Algo,
    pub(crate) steps: u64,
    pub(crate) seeds: u64,
    pub(crate) keep_best: u32,
}

impl WithAgent for Jobs {
    type Output = Vec<Job>;
    const REFUSAL: &'static str = "microrl suite runs";
    fn run<E, L, C, const OBS: usize>(
        self,
        _space: &'static [Dim],
        base: C,
        plant: E,
        make_agent: impl Fn(C) -> Box<L> + Send + Sync + Copy + 'static,
    ) -> anyhow::Result<Vec<Job>>
    where
        E: Env<Obs = SVector<f32, OBS>> + EnvState + Clone + Send + Sync + 'static,
        L: Learner<E> + 'static,
        L::Policy: Params + Controller<OBS, Action = ActionOf<E>>,
        C: Clone + Send + Sync + Serialize + DeserializeOwned + 'static,
    {
        // A refused configuration or option is the command's error, before
        // any run: not a row that loses.
        let row = || format!("suite row {} {}", self.env.name(), self.algo.name());
        row_options(self.env, self.algo, 0, self.steps)
            .check()
            .with_context(row)?;
        crate::train::check_configuration(&mut *make_agent(base.clone()), &plant)
            .with_context(row)?;
        Ok((0..self.seeds)
            .map(|seed| {
                let (plant, base) = (plant.clone(), base.clone());
                let options = TrainOptions {
                    keep_best: self.keep_best,
                    ..row_options(self.env, self.algo, seed, self.steps)
                };
                Box::new(move || {
                    let mut agent = make_agent(base);
                    train_and_score(&mut *agent, plant, &options)
                }) as Job
            })
            .collect())
    }
}

/// The `microrl train` options of a row's run: `--env E --algo A --seed S
/// --steps N --no-early-stop`. The whole budget is trained: the suite asks
/// how good the policy gets, and a plant's "solved" threshold (Acrobot's
/// −100) can be below its baseline.
pub fn row_options(env: EnvName, algo: Algo, seed: u64, steps: u64) -> TrainOptions {
    TrainOptions {
        early_stop: false,
        ..TrainOptions::new(env, algo, seed, steps)
    }
}

/// Trains `agent` as `microrl train` would with `options` (its loop
/// configuration, evaluation and early stop) and returns the trained
/// policy's held-out mean return.
///
/// With `options.keep_best` > 0 the policy that scored best on that many
/// fixed start states (the step-0 policy, the one after every evaluation the
/// trainer runs and the last; [`KeepBest`]) is scored, as `microrl train`
/// keeps it.
fn train_and_score<E, L, const OBS: usize>(
    agent: &mut L,
    plant: E,
    options: &TrainOptions,
) -> anyhow::Result<f32>
where
    E: Env<Obs = SVector<f32, OBS>> + Clone,
    L: Learner<E>,
    L::Policy: Params + Controller<OBS, Action = ActionOf<E>>,
{
    let (mut env, mut eval_env) = (plant.clone(), plant.clone());
    let config = options.run_config();
    let mut trainer = Trainer::<_, Xoshiro128pp>::start(agent, &mut env, config, options.seed)?;
    let episodes = options.keep_best_episodes();
    let mut best = Box::new(KeepBest::new(L::Policy::ZERO, episodes, options.seed)?);
    trainer.keep_best(agent, &mut eval_env, &mut best)?;
    trainer.run_keeping_best(
        agent,
        &mut env,
        &mut eval_env,
        &mut (),
        &mut best,
        |_, _, _, _, _| ControlFlow::Continue(()),
    )?;
    let mut starts = Xoshiro128PlusPlus::seed_from_u64(HELD_OUT_SEED);
    let (mean, _) = algo::evaluate(&best.policy, &mut eval_env, HELD_OUT_EPISODES, &mut starts)?;
    Ok(mean)
}

/// Runs the suite; the verdict is `true` iff every row beats its baseline.
///
/// # Errors
/// A plant without a baseline, an algorithm that does not apply to a plant,
/// an option out of range (`seeds` above [`MAX_SEEDS`](crate::limits::MAX_SEEDS),
/// `steps` 0 or above [`MAX_STEPS`](crate::limits::MAX_STEPS), `keep_best`
/// above [`MAX_EPISODES`](crate::limits::MAX_EPISODES)), or a configuration a
/// row's agent refuses (naming the field) — all before any run. A failed
/// run is not an error: its row fails.
pub fn run(args: &SuiteArgs) -> anyhow::Result<(Report, bool)> {
    use crate::limits::{MAX_EPISODES, MAX_SEEDS, MAX_STEPS};
    anyhow::ensure!(
        (1..=MAX_SEEDS).contains(&args.seeds),
        "--seeds must be in 1..={MAX_SEEDS}, got {}",
        args.seeds
    );
    anyhow::ensure!(
        args.steps.is_none_or(|s| (1..=MAX_STEPS).contains(&s)),
        "--steps must be in 1..={MAX_STEPS} (environment steps per run), got {}",
        args.steps.unwrap_or_default()
    );
    anyhow::ensure!(
        args.keep_best <= MAX_EPISODES,
        "--keep-best must be at most {MAX_EPISODES} episodes, got {}",
        args.keep_best
    );
    let mut rows = Vec::new();
    let mut jobs: Vec<(usize, Job)> = Vec::new();
    for &env in &args.envs {
        let baseline = baseline_held_out(env)
            .with_context(|| format!("the {} baseline", env.name()))?
            .ok_or_else(|| {
                anyhow!(
                    "{} has no classical baseline; the suite's plants: {}",
                    env.name(),
                    PLANTS.map(EnvName::name).join(", ")
                )
            })?;
        for algo in row_algos(env, &args.algos)? {
            // As `microrl train`: `--steps`, else `--config`'s
            // `total_steps`, else the row's budget (the schedules anneal over
            // the steps run).
            let mut overrides = args.overrides.clone();
            let (steps, _) = overrides.budget(
                args.steps,
                || default_steps(env, algo),
                Path::new("--config"),
            )?;
            let base = AlgoConfig::resolve(env, algo, steps, false, &overrides)?;
            let row_jobs = with_agent(
                env,
                algo,
                base,
                &toml::Table::new(),
                Jobs {
                    env,
                    algo,
                    steps,
                    seeds: args.seeds,
                    keep_best: args.keep_best,
                },
            )?;
            jobs.extend(row_jobs.into_iter().map(|j| (rows.len(), j)));
            rows.push(Row {
                plant: env.name(),
                algo: algo.name(),
                seeds: args.seeds,
                baseline,
                learned: f32::NEG_INFINITY,
                learned_mean: f32::NEG_INFINITY,
                per_seed: Vec::new(),
                steps,
                cpu_s: 0.0,
                beats: false,
                error: None,
            });
        }
    }
    let results = run_jobs(jobs, args.threads, args.progress);
    for (row, result, cpu_s) in results {
        let r = &mut rows[row];
        r.cpu_s += cpu_s;
        match result {
            Ok(mean) => r.per_seed.push(mean),
            Err(e) => {
                r.per_seed.push(f32::NEG_INFINITY);
                r.error.get_or_insert_with(|| format!("{e:#}"));
            }
        }
    }
    for r in &mut rows {
        r.learned = r.per_seed.iter().copied().fold(f32::INFINITY, f32::min);
        r.learned_mean = r.per_seed.iter().sum::<f32>() / r.per_seed.len().max(1) as f32;
        r.beats = r.error.is_none() && r.learned > r.baseline;
    }
    let pass = rows.iter().all(|r| r.beats);
    Ok((report(&rows, pass), pass))
}

/// Runs `jobs` on `threads` workers (0: every core); returns each job's
/// row, result and CPU seconds, in the order of `jobs`.
pub(crate) fn run_jobs(jobs: Vec<(usize, Job)>, threads: usize, progress: bool) -> Vec<Done> {
    let total = jobs.len();
    let bar = if progress {
        indicatif::ProgressBar::new(total as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {elapsed}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let queue: Vec<Mutex<Option<(usize, Job)>>> =
        jobs.into_iter().map(|j| Mutex::new(Some(j))).collect();
    let done: Mutex<Vec<Option<Done>>> = Mutex::new((0..total).map(|_| None).collect());
    crate::pool::for_each_index(total, threads, |k| {
        let taken = queue[k].lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some((row, job)) = taken else { return };
        let clock = cpu_time::ThreadTime::now();
        let result = job();
        let cpu_s = clock.elapsed().as_secs_f64();
        done.lock().unwrap_or_else(|e| e.into_inner())[k] = Some((row, result, cpu_s));
        bar.inc(1);
    });
    bar.finish_and_clear();
    done.into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .flatten()
        .collect()
}

/// The table and the `--json` object.
fn report(rows: &[Row], pass: bool) -> Report {
    let mut lines = vec![format!(
        "microrl suite: held-out mean return over {HELD_OUT_EPISODES} episodes (seed {HELD_OUT_SEED}), learned = worst seed"
    )];
    lines.push(format!(
        "{:<24} {:<5} {:>5} {:>10} {:>10} {:>10} {:>9} {:>8}  verdict",
        "plant", "algo", "seeds", "baseline", "learned", "mean", "steps", "cpu_s"
    ));
    for r in rows {
        let verdict = match (&r.error, r.beats) {
            (Some(e), _) => format!("FAIL ({e})"),
            (None, true) => "beats".to_string(),
            (None, false) => "below".to_string(),
        };
        lines.push(format!(
            "{:<24} {:<5} {:>5} {:>10.3} {:>10.3} {:>10.3} {:>9} {:>8.1}  {verdict}",
            r.plant, r.algo, r.seeds, r.baseline, r.learned, r.learned_mean, r.steps, r.cpu_s
        ));
    }
    let beating = rows.iter().filter(|r| r.beats).count();
    lines.push(format!(
        "{beating}/{} rows beat their baseline{}",
        rows.len(),
        if pass { "" } else { ": FAIL" }
    ));
    Report {
        lines,
        json: json!({ "command": "suite", "pass": pass, "rows": rows }),
    }
}
