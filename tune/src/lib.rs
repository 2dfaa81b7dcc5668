//! Hyper-parameter search for a plant: successive halving over a documented
//! search space, several seeds per candidate, every core; candidates are
//! judged on a *tuning* stream of start states and the winner is reported
//! on *held-out* ones.
//!
//! Successive halving (Jamieson & Talwalkar 2016, the inner loop of Li et
//! al. 2018, *Hyperband*): rung 0 trains `candidates` configurations drawn
//! from the search space for `min_steps` environment steps each, on
//! `seeds` seeds; the best `1/η` (by the mean over seeds of a deterministic
//! evaluation on the tuning stream) go on to the next rung with `η` times
//! the budget, until `max_steps`. Every run starts from scratch with its
//! budget as the configuration's `total_steps`, so the schedules anneal
//! over the budget the run really has. The base configuration (the
//! defaults) runs at the last rung's budget on the same seeds and competes
//! on the same tuning stream: when it scores better than the last rung's
//! winner, the defaults are the answer (no overrides). The report gives the
//! tuned and the default held-out returns side by side.
//!
//! The held-out return is the core trainer's report evaluation: its start
//! states come from a stream the tuning never sees (`report_seed`), so
//! picking the best of many candidates on the tuning stream does not leak
//! into the number reported for it.
//!
//! A configuration is edited as its TOML table (the serde form every core
//! configuration has, and the form `microrl train --config` reads), so one
//! search works for every algorithm; [`Dim`] names the field. A candidate
//! whose configuration the core refuses (e.g. minibatches that do not
//! divide the rollout) scores −∞ and is reported with the reason.
//!
//! This crate asks nothing of `microrl` but `std` and `serde`: depending on
//! it leaves the maths backend (`fast-math`, `micromath`) the user's
//! choice, so their policies keep their bits (`tests/backend.rs`). The
//! `microrl tune` command (in `microrl-harness`) runs this search with the
//! command line's `fast-math` backend.
//!
//! From a user's crate, on a plant of their own:
//!
//! ```no_run
//! use microrl::{agent, algo::PpoConfig, env::CartPole};
//! use microrl_tune::{TuneOptions, ppo_space, tune};
//!
//! let options = TuneOptions { min_steps: 5_000, max_steps: 45_000, ..TuneOptions::DEFAULT };
//! // CartPole's commands are discrete: no noise colour to search.
//! let report = tune(ppo_space(false), PpoConfig::DEFAULT, CartPole::new, |config| {
//!     Box::new(agent::Ppo::<CartPole, 32, 256>::new(config))
//! }, &options, |_| {})?;
//! std::fs::write("tuned.toml", report.overrides_toml())?;
//! # Ok::<(), anyhow::Error>(())
//! ```

pub mod limits;
pub mod pool;

use std::marker::PhantomData;
use std::sync::Mutex;

use anyhow::{Context, anyhow};
use microrl::algo::evaluate;
use microrl::env::{ActionOf, Env};
use microrl::rng::Xoshiro128pp;
use microrl::train::{Learner, RunConfig, Trainer};
use microrl::{Controller, Error, SVector};
use rand_core::{Rng, SeedableRng};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// How a [`Dim`] is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    /// Log-uniform in `[low, high]` (learning rates).
    Log(f64, f64),
    /// One of the listed values, uniformly (discount, epochs, batch sizes).
    Choice(&'static [f64]),
}

/// One hyper-parameter of a search space: the configuration field `key`
/// (its TOML name) and how its values are drawn. An integer field takes
/// the drawn value rounded; a schedule field (a learning rate annealed
/// `start → end`) keeps its shape and is scaled so that it starts at the
/// drawn value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dim {
    /// The configuration field.
    pub key: &'static str,
    /// Its distribution.
    pub scale: Scale,
}

const fn log(key: &'static str, low: f64, high: f64) -> Dim {
    Dim {
        key,
        scale: Scale::Log(low, high),
    }
}

const fn choice(key: &'static str, values: &'static [f64]) -> Dim {
    Dim {
        key,
        scale: Scale::Choice(values),
    }
}

/// PPO's search space: the learning rate, `γ`, `λ`, epochs, minibatches
/// and the entropy bonus — the knobs SB3 and CleanRL users turn — and the
/// colour `β` of the exploration noise (`noise_beta`: white, `0.5`, pink; a
/// plant that integrates the command may need correlated exploration to
/// find its reward at all, one that must hold a precise state is better
/// off without; no effect on a discrete plant's categorical actor). The
/// network width is a const generic of the agent type, so it is the
/// caller's choice, not the search's.
pub const PPO_SPACE: [Dim; 7] = [
    log("learning_rate", 1e-4, 3e-3),
    choice("gamma", &[0.9, 0.95, 0.98, 0.99, 0.995]),
    choice("gae_lambda", &[0.8, 0.9, 0.95, 0.98]),
    choice("epochs", &[4.0, 10.0, 20.0]),
    choice("minibatches", &[4.0, 8.0, 16.0, 32.0]),
    choice("ent_coef", &[0.0, 1e-3, 1e-2]),
    choice("noise_beta", &[0.0, 0.5, 1.0]),
];

/// The part of [`PPO_SPACE`] that moves a plant's actor: all of it for
/// continuous commands, all but `noise_beta` (the last dimension) for
/// discrete ones, whose categorical actor samples the same without it — a
/// tuned configuration then names no setting that did nothing.
pub fn ppo_space(continuous: bool) -> &'static [Dim] {
    if continuous {
        &PPO_SPACE
    } else {
        &PPO_SPACE[..PPO_SPACE.len() - 1]
    }
}

/// SAC's search space: learning rate, `γ`, `τ` and the minibatch size.
pub const SAC_SPACE: [Dim; 4] = [
    log("learning_rate", 1e-4, 3e-3),
    choice("gamma", &[0.9, 0.95, 0.98, 0.99]),
    choice("tau", &[0.005, 0.01, 0.02, 0.05]),
    choice("batch_size", &[64.0, 128.0, 256.0]),
];

/// TD3's search space: SAC's plus the target policy smoothing noise.
pub const TD3_SPACE: [Dim; 5] = [
    log("learning_rate", 1e-4, 3e-3),
    choice("gamma", &[0.9, 0.95, 0.98, 0.99]),
    choice("tau", &[0.005, 0.01, 0.02, 0.05]),
    choice("batch_size", &[64.0, 128.0, 256.0]),
    choice("target_policy_noise", &[0.1, 0.2, 0.3]),
];

/// The online actor-critic's search space: both learning rates, `γ` and
/// the entropy bonus.
pub const AC_SPACE: [Dim; 4] = [
    log("actor_lr", 1e-5, 1e-3),
    log("critic_lr", 1e-4, 3e-3),
    choice("gamma", &[0.9, 0.95, 0.98, 0.99]),
    choice("ent_coef", &[0.0, 1e-3, 1e-2]),
];

/// The search's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TuneOptions {
    /// Configurations drawn for rung 0, 1 to 1 024
    /// ([`MAX_CANDIDATES`](crate::limits::MAX_CANDIDATES)). Default 27.
    pub candidates: usize,
    /// Keep the best `1/η` at each rung, and multiply the budget by `η`:
    /// 2 to 1 024 ([`MAX_ETA`](crate::limits::MAX_ETA)). Default 3.
    pub eta: usize,
    /// Environment steps of rung 0, 1 to `max_steps`. Default 10 000.
    pub min_steps: u64,
    /// The budget of the last rung (at most; the rungs stop before
    /// exceeding it), at most 10⁹ ([`MAX_STEPS`](crate::limits::MAX_STEPS)).
    /// Default 90 000.
    pub max_steps: u64,
    /// Training seeds per candidate (`0..seeds`), 1 to 1 024
    /// ([`MAX_SEEDS`](crate::limits::MAX_SEEDS)). Default 3.
    pub seeds: u64,
    /// Episodes of each deterministic evaluation on the tuning stream, 1 to
    /// 10 000 ([`MAX_EPISODES`](crate::limits::MAX_EPISODES)). Default 20.
    pub tuning_episodes: u32,
    /// Episodes of the held-out report, 1 to 10 000. Default 100.
    pub report_episodes: u32,
    /// Worker threads (0: every core). Default 0.
    pub threads: usize,
    /// The seed that draws the candidates. Default 0.
    pub seed: u64,
}

impl TuneOptions {
    /// The defaults listed on each field.
    pub const DEFAULT: Self = Self {
        candidates: 27,
        eta: 3,
        min_steps: 10_000,
        max_steps: 90_000,
        seeds: 3,
        tuning_episodes: 20,
        report_episodes: 100,
        threads: 0,
        seed: 0,
    };

    /// The rungs' budgets: `min_steps · η^k` up to `max_steps` (just
    /// `min_steps` for options [`validate`](Self::validate) refuses: an
    /// `η` below 2 or a zero `min_steps` would never grow).
    pub fn budgets(&self) -> Vec<u64> {
        let mut budgets = vec![self.min_steps];
        if self.eta < 2 || self.min_steps == 0 {
            return budgets;
        }
        while let Some(next) = budgets
            .last()
            .and_then(|b| b.checked_mul(self.eta as u64))
            .filter(|&b| b <= self.max_steps)
        {
            budgets.push(next);
        }
        budgets
    }

    /// Checks every setting against its range, naming the field and its
    /// `microrl tune` option: `candidates` in
    /// `1..=`[`MAX_CANDIDATES`](crate::limits::MAX_CANDIDATES), `eta` in
    /// `2..=`[`MAX_ETA`](crate::limits::MAX_ETA), `min_steps` in
    /// `1..=max_steps`, `max_steps` at most
    /// [`MAX_STEPS`](crate::limits::MAX_STEPS), `seeds` in
    /// `1..=`[`MAX_SEEDS`](crate::limits::MAX_SEEDS), both evaluations in
    /// `1..=`[`MAX_EPISODES`](crate::limits::MAX_EPISODES) episodes.
    /// [`tune`] calls it before drawing anything.
    ///
    /// # Errors
    /// One line naming the first setting out of range, its bound and its value.
    pub fn validate(&self) -> anyhow::Result<()> {
        use crate::limits::{MAX_CANDIDATES, MAX_EPISODES, MAX_ETA, MAX_SEEDS, MAX_STEPS};
        fn range<T: PartialOrd + std::fmt::Display>(
            field: &str,
            option: &str,
            value: T,
            low: T,
            high: T,
        ) -> anyhow::Result<()> {
            anyhow::ensure!(
                low <= value && value <= high,
                "{field} ({option}) must be in {low}..={high}, got {value}"
            );
            Ok(())
        }
        range(
            "candidates",
            "--candidates",
            self.candidates,
            1,
            MAX_CANDIDATES,
        )?;
        range("eta", "--eta", self.eta, 2, MAX_ETA)?;
        range("max_steps", "--max-steps", self.max_steps, 1, MAX_STEPS)?;
        range(
            "min_steps",
            "--min-steps",
            self.min_steps,
            1,
            self.max_steps,
        )?;
        range("seeds", "--seeds", self.seeds, 1, MAX_SEEDS)?;
        range(
            "tuning_episodes",
            "tuning episodes",
            self.tuning_episodes,
            1,
            MAX_EPISODES,
        )?;
        range(
            "report_episodes",
            "report episodes",
            self.report_episodes,
            1,
            MAX_EPISODES,
        )
    }
}

impl Default for TuneOptions {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// One candidate at one rung: its per-seed tuning and held-out means.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Trial {
    /// The rung (0 first); `None` for the base configuration's run.
    pub rung: Option<usize>,
    /// The candidate (index into [`TuneReport::candidates`]).
    pub candidate: usize,
    /// Environment steps each seed trained.
    pub steps: u64,
    /// Mean return on the tuning stream, per seed (−∞ for a refused run).
    pub tuning: Vec<f32>,
    /// Held-out report mean, per seed (−∞ for a refused run).
    pub held_out: Vec<f32>,
    /// Why a run was refused, if one was.
    pub error: Option<String>,
    /// CPU-independent wall seconds of the slowest seed.
    pub wall_s: f64,
}

impl Trial {
    /// The score that ranks candidates: the mean over seeds of the tuning
    /// means.
    pub fn score(&self) -> f32 {
        mean(&self.tuning)
    }
}

fn mean(xs: &[f32]) -> f32 {
    if xs.is_empty() {
        f32::NEG_INFINITY
    } else {
        xs.iter().sum::<f32>() / xs.len() as f32
    }
}

/// The candidate index of the base configuration (the defaults) in
/// trials and as [`TuneReport::best_candidate`].
pub const DEFAULTS: usize = usize::MAX;

/// What the search found.
#[derive(Clone, Debug, Serialize)]
pub struct TuneReport<C> {
    /// The best configuration (the base with the winner's values).
    pub best: C,
    /// The winner's values as configuration overrides.
    pub best_overrides: toml::Table,
    /// Index of the winner in [`candidates`](Self::candidates), or
    /// [`DEFAULTS`] when the base configuration scored best on the tuning
    /// stream.
    pub best_candidate: usize,
    /// Every candidate's drawn values.
    pub candidates: Vec<toml::Table>,
    /// Every rung's trials, then the base configuration's.
    pub trials: Vec<Trial>,
    /// The rungs' budgets.
    pub budgets: Vec<u64>,
}

impl<C> TuneReport<C> {
    /// The winner's trial at the last rung (the base configuration's when
    /// the defaults won).
    pub fn best_trial(&self) -> Option<&Trial> {
        if self.best_candidate == DEFAULTS {
            return self.base_trial();
        }
        self.trials
            .iter()
            .filter(|t| t.rung.is_some() && t.candidate == self.best_candidate)
            .max_by_key(|t| t.steps)
    }

    /// The base configuration's trial.
    pub fn base_trial(&self) -> Option<&Trial> {
        self.trials.iter().find(|t| t.rung.is_none())
    }

    /// The winner's values as a TOML file `microrl train --config` reads.
    pub fn overrides_toml(&self) -> String {
        toml::to_string(&self.best_overrides).unwrap_or_default()
    }
}

/// Draws candidate `i`'s values.
fn draw(space: &[Dim], rng: &mut Xoshiro128pp) -> Vec<(&'static str, f64)> {
    space
        .iter()
        .map(|dim| {
            let value = match dim.scale {
                Scale::Log(low, high) => {
                    let u = f64::from(rng.next_u32()) / f64::from(u32::MAX);
                    (low.ln() + u * (high.ln() - low.ln())).exp()
                }
                Scale::Choice(values) => {
                    values[microrl::rng::below(rng, values.len() as u32) as usize]
                }
            };
            (dim.key, value)
        })
        .collect()
}

/// `base` with `values` written into its TOML form: integers for integer
/// fields, a schedule scaled to start at the value, floats otherwise.
fn apply<C: Serialize + DeserializeOwned>(
    base: &C,
    values: &[(&'static str, f64)],
    total_steps: u64,
) -> anyhow::Result<(C, toml::Table)> {
    let mut table = toml::Table::try_from(base).context("configuration to TOML")?;
    let mut overrides = toml::Table::new();
    for &(key, value) in values {
        let new = match table.get(key) {
            Some(toml::Value::Integer(_)) => toml::Value::Integer(value.round() as i64),
            Some(toml::Value::Table(schedule)) => {
                let get = |k: &str| schedule.get(k).and_then(toml::Value::as_float);
                match (get("start"), get("end")) {
                    (Some(start), Some(end)) if start != 0.0 => {
                        let mut scaled = schedule.clone();
                        scaled.insert("start".into(), toml::Value::Float(value));
                        scaled.insert("end".into(), toml::Value::Float(end * value / start));
                        toml::Value::Table(scaled)
                    }
                    _ => toml::Value::Float(value),
                }
            }
            Some(_) => toml::Value::Float(value),
            None => return Err(anyhow!("the configuration has no field `{key}`")),
        };
        table.insert(key.into(), new.clone());
        overrides.insert(key.into(), new);
    }
    if table.contains_key("total_steps") {
        let steps = i64::try_from(total_steps).context("total_steps beyond i64")?;
        table.insert("total_steps".into(), toml::Value::Integer(steps));
    }
    let config = table.try_into().context("TOML back to the configuration")?;
    Ok((config, overrides))
}

/// A learner seen as a [`Controller`]: its deterministic action, the one
/// its own evaluation takes and its exported policy takes.
pub struct Acting<'a, L, E>(&'a L, PhantomData<E>);

impl<L, E> std::fmt::Debug for Acting<'_, L, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Acting")
    }
}

impl<'a, L, E> Acting<'a, L, E> {
    /// `learner` as a controller on `E`.
    pub fn new(learner: &'a L) -> Self {
        Self(learner, PhantomData)
    }
}

impl<L, E, const OBS: usize> Controller<OBS> for Acting<'_, L, E>
where
    L: Learner<E>,
    E: Env<Obs = SVector<f32, OBS>>,
{
    type Action = ActionOf<E>;
    fn act(&self, obs: &SVector<f32, OBS>) -> Result<ActionOf<E>, Error> {
        self.0.act_in(obs)
    }
}

/// The seed of the tuning stream of training seed `seed`: neither the
/// trainer's selection nor its report stream.
///
/// The keep-best stream ([`microrl::train::keep_best_seed`]): a candidate
/// is tuned on the start states its runs keep their best policy on.
pub const fn tuning_seed(seed: u64) -> u64 {
    microrl::train::keep_best_seed(seed)
}

/// Trains one seed for `steps` and returns (tuning mean, held-out mean).
fn run_one<E, L, C, const OBS: usize>(
    config: C,
    steps: u64,
    seed: u64,
    options: &TuneOptions,
    make_env: &(impl Fn() -> E + Sync),
    make_agent: &(impl Fn(C) -> Box<L> + Sync),
) -> Result<(f32, f32), Error>
where
    E: Env<Obs = SVector<f32, OBS>>,
    L: Learner<E>,
{
    let mut agent = make_agent(config);
    let (mut env, mut eval_env) = (make_env(), make_env());
    let mut run = RunConfig::new(steps, E::SOLVED_RETURN);
    run.early_stop = false;
    run.eval_interval = steps;
    run.solved_eval_interval = steps;
    run.report_episodes = options.report_episodes;
    let mut trainer = Trainer::<_, Xoshiro128pp>::start(&mut *agent, &mut env, run, seed)?;
    let outcome = trainer.run(&mut *agent, &mut env, &mut eval_env, &mut ())?;
    let mut starts = Xoshiro128pp::seed_from_u64(tuning_seed(seed));
    let (tuning, _) = evaluate(
        &Acting(&*agent, PhantomData::<E>),
        &mut eval_env,
        options.tuning_episodes,
        &mut starts,
    )?;
    Ok((tuning, outcome.report.mean))
}

/// One seed's run: its (tuning, held-out) means or the refusal, and its
/// wall seconds; `None` until it finished.
type Slot = Option<(Result<(f32, f32), Error>, f64)>;

/// Runs `jobs` (candidate, config) × seeds on the worker threads and
/// returns one trial per job, in order.
#[allow(clippy::too_many_arguments)]
fn run_rung<E, L, C, const OBS: usize>(
    rung: Option<usize>,
    jobs: &[(usize, C)],
    steps: u64,
    options: &TuneOptions,
    make_env: &(impl Fn() -> E + Sync),
    make_agent: &(impl Fn(C) -> Box<L> + Sync),
    progress: &(impl Fn(&Trial) + Sync),
) -> Vec<Trial>
where
    E: Env<Obs = SVector<f32, OBS>>,
    L: Learner<E>,
    C: Clone + Send + Sync,
{
    let seeds = options.seeds as usize;
    let total = jobs.len() * seeds;
    let results: Mutex<Vec<Slot>> = Mutex::new(vec![None; total]);
    pool::for_each_index(total, options.threads, |k| {
        let (job, seed) = (k / seeds, (k % seeds) as u64);
        let started = std::time::Instant::now();
        let result = run_one(
            jobs[job].1.clone(),
            steps,
            seed,
            options,
            make_env,
            make_agent,
        );
        let wall = started.elapsed().as_secs_f64();
        let complete = {
            let mut slots = results.lock().unwrap_or_else(|e| e.into_inner());
            slots[k] = Some((result, wall));
            let first = job * seeds;
            slots[first..first + seeds]
                .iter()
                .all(Option::is_some)
                .then(|| trial(rung, jobs[job].0, steps, &slots[first..first + seeds]))
        };
        if let Some(t) = complete {
            progress(&t);
        }
    });
    let slots = results.into_inner().unwrap_or_else(|e| e.into_inner());
    jobs.iter()
        .enumerate()
        .map(|(j, (candidate, _))| {
            trial(rung, *candidate, steps, &slots[j * seeds..(j + 1) * seeds])
        })
        .collect()
}

fn trial(rung: Option<usize>, candidate: usize, steps: u64, slots: &[Slot]) -> Trial {
    let mut t = Trial {
        rung,
        candidate,
        steps,
        tuning: Vec::new(),
        held_out: Vec::new(),
        error: None,
        wall_s: 0.0,
    };
    for slot in slots.iter().flatten() {
        let (result, wall) = slot;
        t.wall_s = t.wall_s.max(*wall);
        match result {
            Ok((tuning, held_out)) => {
                t.tuning.push(*tuning);
                t.held_out.push(*held_out);
            }
            Err(e) => {
                t.tuning.push(f32::NEG_INFINITY);
                t.held_out.push(f32::NEG_INFINITY);
                t.error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    t
}

/// Successive halving over `space` from `base` (see the [module](self)
/// docs): `make_env` builds the plant, `make_agent` an agent with a
/// configuration. `progress` hears about every finished trial (a progress
/// bar, a log line).
///
/// # Errors
/// Options [`TuneOptions::validate`] refuses, or a field of `space` the configuration does not have.
/// Refused runs do not fail the search: they score −∞ with their reason.
pub fn tune<E, L, C, const OBS: usize>(
    space: &[Dim],
    base: C,
    make_env: impl Fn() -> E + Sync,
    make_agent: impl Fn(C) -> Box<L> + Sync,
    options: &TuneOptions,
    progress: impl Fn(&Trial) + Sync,
) -> anyhow::Result<TuneReport<C>>
where
    E: Env<Obs = SVector<f32, OBS>>,
    L: Learner<E>,
    C: Clone + Send + Sync + Serialize + DeserializeOwned,
{
    options.validate()?;
    let budgets = options.budgets();
    let mut rng = Xoshiro128pp::seed_from_u64(options.seed);
    let drawn: Vec<_> = (0..options.candidates)
        .map(|_| draw(space, &mut rng))
        .collect();
    let candidates = drawn
        .iter()
        .map(|values| Ok(apply(&base, values, budgets[0])?.1))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut alive: Vec<usize> = (0..candidates.len()).collect();
    let mut trials = Vec::new();
    for (rung, &steps) in budgets.iter().enumerate() {
        let jobs: Vec<(usize, C)> = alive
            .iter()
            .map(|&c| Ok((c, apply(&base, &drawn[c], steps)?.0)))
            .collect::<anyhow::Result<_>>()?;
        let mut rung_trials = run_rung(
            Some(rung),
            &jobs,
            steps,
            options,
            &make_env,
            &make_agent,
            &progress,
        );
        rung_trials.sort_by(|a, b| b.score().total_cmp(&a.score()));
        let keep = (alive.len() / options.eta).max(1);
        alive = rung_trials.iter().take(keep).map(|t| t.candidate).collect();
        trials.extend(rung_trials);
    }
    let best_candidate = alive[0];
    let last = *budgets.last().unwrap_or(&options.min_steps);
    let (base_config, _) = apply(&base, &[], last)?;
    let base_trials = run_rung(
        None,
        &[(DEFAULTS, base_config)],
        last,
        options,
        &make_env,
        &make_agent,
        &progress,
    );
    // The defaults compete on the same tuning stream: if they score better
    // than the last rung's winner, they are the answer.
    let winner_score = trials
        .iter()
        .filter(|t| t.rung == Some(budgets.len() - 1) && t.candidate == best_candidate)
        .map(Trial::score)
        .next()
        .unwrap_or(f32::NEG_INFINITY);
    let defaults_win = base_trials
        .first()
        .is_some_and(|t| t.score() > winner_score);
    trials.extend(base_trials);
    if defaults_win {
        let (best, _) = apply(&base, &[], last)?;
        return Ok(TuneReport {
            best,
            best_overrides: toml::Table::new(),
            best_candidate: DEFAULTS,
            candidates,
            trials,
            budgets,
        });
    }
    let (best, _) = apply(&base, &drawn[best_candidate], last)?;
    Ok(TuneReport {
        best,
        best_overrides: candidates[best_candidate].clone(),
        best_candidate,
        candidates,
        trials,
        budgets,
    })
}

#[cfg(test)]
mod tests;
