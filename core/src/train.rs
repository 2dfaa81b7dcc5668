//! The training loop, as a library: collect → update → gated evaluation →
//! early stop, for any agent on any environment, with no allocation.
//!
//! Design (after RLtools' `rl/loop`, in Rust terms):
//! - **Data separate from operations.** [`Trainer`] holds only the loop's
//!   own state — the [`Cursor`] into the training episode, the three RNG
//!   streams, counters and the evaluation record — and borrows the agent and
//!   the environments for each call. It is `no_std` and allocation-free; a
//!   firmware keeps it on the stack or in a `static` like everything else.
//! - **One trait per role.** An algorithm implements [`Learner`] (one
//!   *iteration*: a rollout and its update for PPO/A2C, an episode for
//!   REINFORCE, one online step for the actor-critic); the caller observes the
//!   run through [`Hooks`] — episode finished, update finished with its
//!   diagnostics, evaluation result, end of iteration (which may stop the
//!   run). The desktop harness draws its progress bar and CSV and the
//!   firmware logs over defmt from the same loop.
//! - **"Solved" is decided on one set of start states and reported on
//!   another.** Two evaluation streams: the *selection* stream plays the
//!   quick evaluation after every evaluation interval and, when that reaches
//!   the threshold, the deciding one ([`RunConfig::select_episodes`]); when
//!   that one's mean clears the threshold by a margin of standard errors
//!   ([`RunConfig::select_margin`], against the winner's curse), the
//!   run stops there (early stop) and the *report* stream — start states the
//!   stopping decision never saw — plays the evaluation that is reported
//!   ([`Outcome::report`]). A policy that only learned the selection starts
//!   shows it in the report.
//! - **Environment copies.** PPO and A2C can collect each rollout from
//!   `n_envs` copies of the environment side by side (SB3's `n_envs ×
//!   n_steps`): the caller owns the copies and their cursors in a
//!   [`VecEnv`] and drives the run with [`Trainer::start_envs`],
//!   [`Trainer::run_envs`] (and [`Trainer::save_envs`] /
//!   [`Trainer::resume_envs`] for checkpoints); with one copy that run is
//!   the single-environment run bit for bit.
//! - **Deterministic.** Given the seeds, a run is bit-identical on every
//!   platform: the loop adds no randomness of its own, and evaluation
//!   streams never perturb the training stream.
//!
//! ```
//! use microrl::agent;
//! use microrl::algo::PpoConfig;
//! use microrl::env::CartPole;
//! use microrl::train::{RunConfig, Trainer};
//! use rand_xoshiro::Xoshiro128PlusPlus;
//!
//! type Agent = agent::Ppo<CartPole, 32, 256>;
//! let mut agent = Box::new(Agent::new(PpoConfig { total_steps: 20_000, ..PpoConfig::CARTPOLE }));
//! let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
//! let config = RunConfig::new(20_000, 475.0);
//! let mut trainer = Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, config, 0)?;
//! let outcome = trainer.run(&mut *agent, &mut env, &mut eval_env, &mut ())?;
//! assert!(outcome.steps <= 20_000 + 256);
//! # Ok::<(), microrl::Error>(())
//! ```

use core::marker::PhantomData;
use core::ops::ControlFlow;

use nalgebra::SVector;
use rand_core::{Rng, SeedableRng};

use crate::algo::{Cursor, Episode, evaluate};
use crate::env::{ActionOf, Env};
use crate::error::Error;
use crate::policy::Controller;
use crate::vec_env::VecEnv;

/// What every agent offers independently of the environment it trains on.
pub trait Agent {
    /// The deployable policy type (see [`Deployed`]).
    type Policy;
    /// Diagnostics of one iteration ([`UpdateStats`] or [`AcStats`]).
    type Stats: Copy + core::fmt::Debug;

    /// Environment steps taken so far.
    fn steps(&self) -> u64;

    /// Gradient updates made by one iteration.
    fn updates_per_iteration(&self) -> u64;

    /// Copies the deployable policy into `out` (caller-owned memory).
    fn export(&self, out: &mut Self::Policy);
}

/// The deployable policy of agent type `A`: what the firmware loads and runs,
/// e.g. `Deployed<agent::Ppo<MyPlant, 64, 2048>>`.
pub type Deployed<A> = <A as Agent>::Policy;

/// A [`Controller`] of `E`'s observations and actions (implemented for every
/// such controller): how the training loop's evaluations act through a
/// [`Learner`] without a second `act` beside [`Controller::act`].
pub trait ActsIn<E: Env> {
    /// [`Controller::act`] on `E`'s observation type.
    ///
    /// # Errors
    /// As [`Controller::act`].
    fn act_in(&self, obs: &E::Obs) -> Result<ActionOf<E>, Error>;
}

impl<C, E, const OBS: usize> ActsIn<E> for C
where
    C: Controller<OBS, Action = ActionOf<E>> + ?Sized,
    E: Env<Obs = SVector<f32, OBS>>,
{
    fn act_in(&self, obs: &SVector<f32, OBS>) -> Result<ActionOf<E>, Error> {
        self.act(obs)
    }
}

/// An agent borrowed as a [`Controller`] for [`evaluate`].
struct Acting<'a, L, E>(&'a L, PhantomData<E>);

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

/// An agent that trains on environment `E`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot train on `{E}`",
    label = "the agent's observation size or action space differs from the environment's",
    note = "derive the agent from the environment so the sizes agree by construction: `microrl::agent::Ppo<{E}, HIDDEN, ROLLOUT>` (or `agent::ActorCritic`, `agent::A2c`, `agent::Reinforce`)"
)]
pub trait Learner<E: Env>: Agent + ActsIn<E> {
    /// Initialises the agent for `env` (action space, weights, optimiser,
    /// statistics).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the field; nothing changes then.
    fn init<R: Rng + ?Sized>(&mut self, env: &E, rng: &mut R) -> Result<(), Error>;

    /// One iteration: a rollout and its update, an episode (REINFORCE), or
    /// one online step; finished episodes go to `on_episode`.
    ///
    /// # Errors
    /// The algorithm's errors (non-finite data, the environment's errors).
    fn iterate<R: Rng + ?Sized>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<E::Obs>,
        rng: &mut R,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<Self::Stats, Error>;

    /// Environment copies one iteration steps side by side
    /// ([`PpoConfig::n_envs`](crate::algo::PpoConfig::n_envs) for PPO and
    /// A2C; 1 for the others).
    fn n_envs(&self) -> usize {
        1
    }

    /// [`iterate`](Self::iterate) over [`n_envs`](Self::n_envs) environment
    /// copies, each with its own cursor (see [`VecEnv`]). One copy (the
    /// default for single-environment algorithms) is
    /// [`iterate`](Self::iterate) on it.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `n_envs` when fewer copies or
    /// cursors than [`n_envs`](Self::n_envs) are given; otherwise as
    /// [`iterate`](Self::iterate).
    fn iterate_envs<R: Rng + ?Sized>(
        &mut self,
        envs: &mut [E],
        cursors: &mut [Cursor<E::Obs>],
        rng: &mut R,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<Self::Stats, Error> {
        match (envs, cursors) {
            ([env, ..], [cursor, ..]) if self.n_envs() == 1 => {
                self.iterate(env, cursor, rng, on_episode)
            }
            _ => Err(Error::config(
                "n_envs",
                "must be 1 for this algorithm, with one environment copy",
            )),
        }
    }
}

/// [`Agent`] and [`Learner`] for one algorithm struct generic over an actor
/// `A`, a critic `C` and `OBS` (plus its own const parameters), invoked from
/// the algorithm's own `learner.rs`: the algorithms differ only in how many
/// steps they have taken and in what one iteration is.
macro_rules! learner {
    (
        impl[$(const $param:ident: usize),*] $ty:ty,
        critic = $critic:path,
        stats = $stats:ty,
        steps = |$s0:ident| $steps:expr,
        iterate = |$s:ident, $env:ident, $cursor:ident, $rng:ident, $on_episode:ident| $iterate:expr
        $(, vectorised = { $($vectorised:item)* })?
    ) => {
        impl<A, C, const OBS: usize $(, const $param: usize)*> $crate::train::Agent for $ty
        where
            A: $crate::policy::Actor<OBS>,
            C: $critic,
        {
            type Policy = $crate::policy::Policy<A, OBS>;
            type Stats = $stats;
            fn steps(&self) -> u64 {
                let $s0 = self;
                $steps
            }
            fn updates_per_iteration(&self) -> u64 {
                1
            }
            fn export(&self, out: &mut $crate::policy::Policy<A, OBS>) {
                <$ty>::export(self, out);
            }
        }

        impl<A, C, E, const OBS: usize $(, const $param: usize)*> $crate::train::Learner<E> for $ty
        where
            A: $crate::policy::Actor<OBS>,
            C: $critic,
            E: $crate::env::Env<Obs = nalgebra::SVector<f32, OBS>, Space = A::Space>,
        {
            fn init<R: rand_core::Rng + ?Sized>(
                &mut self,
                env: &E,
                rng: &mut R,
            ) -> Result<(), $crate::Error> {
                <$ty>::init(self, env, rng)
            }
            fn iterate<R: rand_core::Rng + ?Sized>(
                &mut self,
                $env: &mut E,
                $cursor: &mut $crate::algo::Cursor<E::Obs>,
                $rng: &mut R,
                $on_episode: &mut dyn FnMut($crate::algo::Episode),
            ) -> Result<$stats, $crate::Error> {
                let $s = self;
                $iterate
            }
            $($($vectorised)*)?
        }
    };
}
pub(crate) use learner;

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
    /// [`Env::SOLVED_RETURN`]).
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

/// Where a run stands after an iteration (what [`Hooks::on_iteration`] sees).
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

/// The result of [`Trainer::run`].
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

/// Observers of a run. Every method has an empty default; `()` observes
/// nothing.
pub trait Hooks<S> {
    /// A training episode finished.
    fn on_episode(&mut self, _episode: Episode) {}
    /// An iteration's update finished, `steps` environment steps in.
    fn on_update(&mut self, _steps: u64, _stats: &S) {}
    /// An evaluation finished.
    fn on_evaluation(&mut self, _evaluation: &Evaluation) {}
    /// An iteration (and its evaluation, if any) finished; `Break` stops
    /// the run there (e.g. a wall-clock budget or an operator's stop).
    fn on_iteration(&mut self, _progress: &Progress) -> ControlFlow<()> {
        ControlFlow::Continue(())
    }
}

impl<S> Hooks<S> for () {}

/// The seed of the selection-evaluation stream derived from a training seed
/// (the same derivation on every platform).
pub const fn select_seed(seed: u64) -> u64 {
    seed ^ 0x5eed_e7a1_0000_0000
}

/// The seed of the report-evaluation stream derived from a training seed.
pub const fn report_seed(seed: u64) -> u64 {
    seed ^ 0x4e1d_0a75_0000_0000
}

/// The loop's state between iterations (see the module docs).
#[derive(Clone, Debug)]
pub struct Trainer<O, R> {
    /// How the run is driven and judged.
    pub config: RunConfig,
    /// The training episode in progress (of a single-environment run; a
    /// run over a [`VecEnv`] keeps one cursor per copy there, and this one
    /// stays [idle](Cursor::idle)).
    pub cursor: Cursor<O>,
    /// The training stream (sampling, shuffles, resets).
    pub rng: R,
    /// The selection-evaluation stream.
    pub select_rng: R,
    /// The report-evaluation stream.
    pub report_rng: R,
    /// Training episodes finished.
    pub episodes: u64,
    /// Gradient updates made.
    pub updates: u64,
    /// First step at which the deciding evaluation passed.
    pub solved_at_step: Option<u64>,
    /// The deciding evaluation that passed.
    pub selection: Option<Evaluation>,
    /// The step count at or after which the next evaluation is due.
    pub next_eval: u64,
}

impl<const OBS: usize, R: Rng> Trainer<SVector<f32, OBS>, R> {
    /// A trainer for an agent that is already initialised: checks `config`,
    /// resets `env` from `rng` and starts counting.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the [`RunConfig`] field.
    pub fn new<E: Env<Obs = SVector<f32, OBS>>>(
        config: RunConfig,
        env: &mut E,
        mut rng: R,
        select_rng: R,
        report_rng: R,
    ) -> Result<Self, Error> {
        config.validate()?;
        let cursor = Cursor::start(env, &mut rng);
        Ok(Self::from_parts(
            config, cursor, rng, select_rng, report_rng,
        ))
    }

    /// A trainer at the start of a run with the training stream `rng`
    /// already used for the agent and the resets.
    fn from_parts(
        config: RunConfig,
        cursor: Cursor<SVector<f32, OBS>>,
        rng: R,
        select_rng: R,
        report_rng: R,
    ) -> Self {
        Self {
            config,
            cursor,
            rng,
            select_rng,
            report_rng,
            episodes: 0,
            updates: 0,
            solved_at_step: None,
            selection: None,
            next_eval: config.eval_interval,
        }
    }

    /// [`start`](Self::start) for a run over environment copies (see
    /// [`VecEnv`]): seeds the three streams from `seed`, initialises `agent`
    /// for copy 0 from the training stream, then resets the agent's
    /// [`n_envs`](Learner::n_envs) copies, copy 0 first. With one copy this
    /// is [`start`](Self::start) bit for bit. The trainer's own
    /// [`cursor`](Self::cursor) stays [idle](Cursor::idle): every copy's
    /// episode is in `envs.cursors`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] from the run or the agent's configuration,
    /// or naming `n_envs` when the agent needs more copies than `MAX_ENVS`;
    /// neither `agent` nor `envs` changes then.
    pub fn start_envs<L, E, const MAX_ENVS: usize>(
        agent: &mut L,
        envs: &mut VecEnv<E, MAX_ENVS>,
        config: RunConfig,
        seed: u64,
    ) -> Result<Self, Error>
    where
        L: Learner<E>,
        E: Env<Obs = SVector<f32, OBS>>,
        R: SeedableRng,
    {
        config.validate()?;
        let n_envs = agent.n_envs();
        VecEnv::<E, MAX_ENVS>::check(n_envs)?;
        let first = envs.envs.first().ok_or(Error::config(
            "n_envs",
            "must be > 0 and at most the VecEnv's MAX_ENVS copies",
        ))?;
        let mut rng = R::seed_from_u64(seed);
        agent.init(first, &mut rng)?;
        envs.start(n_envs, &mut rng)?;
        Ok(Self::from_parts(
            config,
            Cursor::idle(),
            rng,
            R::seed_from_u64(select_seed(seed)),
            R::seed_from_u64(report_seed(seed)),
        ))
    }

    /// The usual start: seeds the three streams from `seed` ([`select_seed`],
    /// [`report_seed`]), initialises `agent` for `env` from the training
    /// stream, then resets `env`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] from the run or the agent's configuration.
    pub fn start<L, E>(
        agent: &mut L,
        env: &mut E,
        config: RunConfig,
        seed: u64,
    ) -> Result<Self, Error>
    where
        L: Learner<E>,
        E: Env<Obs = SVector<f32, OBS>>,
        R: SeedableRng,
    {
        config.validate()?;
        let mut rng = R::seed_from_u64(seed);
        agent.init(env, &mut rng)?;
        Self::new(
            config,
            env,
            rng,
            R::seed_from_u64(select_seed(seed)),
            R::seed_from_u64(report_seed(seed)),
        )
    }

    /// One iteration of `agent` on `env`, then the evaluation due (on
    /// `eval_env`, from the selection stream).
    ///
    /// # Errors
    /// The agent's, the environment's or the evaluation's first error.
    pub fn iterate<L, E, H>(
        &mut self,
        agent: &mut L,
        env: &mut E,
        eval_env: &mut E,
        hooks: &mut H,
    ) -> Result<Progress, Error>
    where
        L: Learner<E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
    {
        self.train_step(agent, env, hooks)?;
        self.evaluate_due(agent, eval_env, hooks)
    }

    /// [`iterate`](Self::iterate) with one environment — a real plant, of
    /// which there is only one: the evaluation runs on `env` itself, and the
    /// training episode it interrupted is then restarted (its partial return
    /// is dropped; the rollout in progress is unaffected, evaluations happen
    /// between updates).
    ///
    /// # Errors
    /// As [`iterate`](Self::iterate).
    pub fn iterate_single<L, E, H>(
        &mut self,
        agent: &mut L,
        env: &mut E,
        hooks: &mut H,
    ) -> Result<Progress, Error>
    where
        L: Learner<E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
    {
        self.train_step(agent, env, hooks)?;
        let progress = self.evaluate_due(agent, env, hooks)?;
        if progress.evaluation.is_some() {
            self.cursor = Cursor::start(env, &mut self.rng);
        }
        Ok(progress)
    }

    /// [`iterate`](Self::iterate) over the environment copies in use in
    /// `envs` ([`Learner::iterate_envs`]), then the evaluation due (on
    /// `eval_env`, from the selection stream).
    ///
    /// # Errors
    /// As [`iterate`](Self::iterate).
    pub fn iterate_envs<L, E, H, const MAX_ENVS: usize>(
        &mut self,
        agent: &mut L,
        envs: &mut VecEnv<E, MAX_ENVS>,
        eval_env: &mut E,
        hooks: &mut H,
    ) -> Result<Progress, Error>
    where
        L: Learner<E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
    {
        let (copies, cursors) = envs.in_use();
        let episodes = &mut self.episodes;
        let stats = agent.iterate_envs(copies, cursors, &mut self.rng, &mut |e| {
            *episodes += 1;
            hooks.on_episode(e);
        })?;
        self.count_update(agent, &stats, hooks);
        self.evaluate_due(agent, eval_env, hooks)
    }

    /// One [`Learner::iterate`], counting episodes and updates.
    fn train_step<L, E, H>(
        &mut self,
        agent: &mut L,
        env: &mut E,
        hooks: &mut H,
    ) -> Result<(), Error>
    where
        L: Learner<E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
    {
        let episodes = &mut self.episodes;
        let stats = agent.iterate(env, &mut self.cursor, &mut self.rng, &mut |e| {
            *episodes += 1;
            hooks.on_episode(e);
        })?;
        self.count_update(agent, &stats, hooks);
        Ok(())
    }

    /// Counts an iteration's updates and reports its statistics.
    fn count_update<L: Agent, H: Hooks<L::Stats>>(
        &mut self,
        agent: &L,
        stats: &L::Stats,
        hooks: &mut H,
    ) {
        self.updates += agent.updates_per_iteration();
        hooks.on_update(agent.steps(), stats);
    }

    /// The quick (and, when it passes, the deciding) evaluation if one is due.
    fn evaluate_due<L, E, H>(
        &mut self,
        agent: &L,
        eval_env: &mut E,
        hooks: &mut H,
    ) -> Result<Progress, Error>
    where
        L: Learner<E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
    {
        let c = self.config;
        let steps = agent.steps();
        // Additions only (no 64-bit division: a few hundred bytes less flash
        // on a 32-bit MCU): the next multiple of the interval past `steps`.
        let due = c.quick_episodes > 0 && steps >= self.next_eval;
        if due {
            if self.solved_at_step.is_some() {
                self.next_eval = steps.saturating_add(c.solved_eval_interval);
            } else {
                while self.next_eval <= steps {
                    self.next_eval = self.next_eval.saturating_add(c.eval_interval);
                }
            }
        }
        let mut evaluation = None;
        if due {
            let acting = Acting(agent, PhantomData);
            let (mean, std) = evaluate(&acting, eval_env, c.quick_episodes, &mut self.select_rng)?;
            let quick = Evaluation {
                kind: EvalKind::Quick,
                step: steps,
                episodes: c.quick_episodes,
                mean,
                std,
            };
            hooks.on_evaluation(&quick);
            evaluation = Some(quick);
            if self.solved_at_step.is_none() && mean >= c.threshold {
                let (mean, std) =
                    evaluate(&acting, eval_env, c.select_episodes, &mut self.select_rng)?;
                let select = Evaluation {
                    kind: EvalKind::Select,
                    step: steps,
                    episodes: c.select_episodes,
                    mean,
                    std,
                };
                hooks.on_evaluation(&select);
                if c.lower_bound(mean, std) >= c.threshold {
                    self.solved_at_step = Some(steps);
                    self.selection = Some(select);
                    self.next_eval = steps.saturating_add(c.solved_eval_interval);
                }
                evaluation = Some(select);
            }
        }
        Ok(Progress {
            steps,
            episodes: self.episodes,
            updates: self.updates,
            solved_at_step: self.solved_at_step,
            evaluation,
        })
    }

    /// The reported evaluation: [`RunConfig::report_episodes`] deterministic
    /// episodes on `eval_env` from the report stream.
    ///
    /// # Errors
    /// The evaluation's first error.
    pub fn report<L, E>(&mut self, agent: &L, eval_env: &mut E) -> Result<Evaluation, Error>
    where
        L: Learner<E>,
        E: Env<Obs = SVector<f32, OBS>>,
    {
        let episodes = self.config.report_episodes;
        let acting = Acting(agent, PhantomData);
        let (mean, std) = evaluate(&acting, eval_env, episodes, &mut self.report_rng)?;
        Ok(Evaluation {
            kind: EvalKind::Report,
            step: agent.steps(),
            episodes,
            mean,
            std,
        })
    }

    /// Iterates until the budget is spent, the deciding evaluation passes
    /// (with early stop) or a hook breaks; then the reported evaluation.
    /// (With one environment, e.g. a real plant, see
    /// [`run_single`](Self::run_single).)
    ///
    /// # Errors
    /// The first error of an iteration or an evaluation; the agent keeps
    /// every update made before it.
    pub fn run<L, E, H>(
        &mut self,
        agent: &mut L,
        env: &mut E,
        eval_env: &mut E,
        hooks: &mut H,
    ) -> Result<Outcome, Error>
    where
        L: Learner<E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
    {
        self.drive(agent, env, Some(eval_env), hooks, |_, _, _, _| {
            ControlFlow::Continue(())
        })
    }

    /// [`run`](Self::run), calling `between(trainer, agent, env, hooks)` after
    /// every iteration that does not end the run — the place to save a
    /// checkpoint ([`Trainer::save`](crate::checkpoint)) or to feed a
    /// watchdog; `Break` stops the run there (then the reported evaluation
    /// as usual).
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn run_with<L, E, H, F>(
        &mut self,
        agent: &mut L,
        env: &mut E,
        eval_env: &mut E,
        hooks: &mut H,
        between: F,
    ) -> Result<Outcome, Error>
    where
        L: Learner<E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
        F: FnMut(&Self, &L, &E, &mut H) -> ControlFlow<()>,
    {
        self.drive(agent, env, Some(eval_env), hooks, between)
    }

    /// [`run`](Self::run) on a single environment (see
    /// [`iterate_single`](Self::iterate_single)); the reported evaluation
    /// also runs on it.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn run_single<L, E, H>(
        &mut self,
        agent: &mut L,
        env: &mut E,
        hooks: &mut H,
    ) -> Result<Outcome, Error>
    where
        L: Learner<E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
    {
        self.drive(agent, env, None, hooks, |_, _, _, _| {
            ControlFlow::Continue(())
        })
    }

    /// [`run`](Self::run) over the environment copies in use in `envs`
    /// (started by [`start_envs`](Self::start_envs) or
    /// [`resume_envs`](Self::resume_envs)).
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn run_envs<L, E, H, const MAX_ENVS: usize>(
        &mut self,
        agent: &mut L,
        envs: &mut VecEnv<E, MAX_ENVS>,
        eval_env: &mut E,
        hooks: &mut H,
    ) -> Result<Outcome, Error>
    where
        L: Learner<E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
    {
        self.run_envs_with(agent, envs, eval_env, hooks, |_, _, _, _| {
            ControlFlow::Continue(())
        })
    }

    /// [`run_with`](Self::run_with) over the environment copies in use in
    /// `envs`: `between(trainer, agent, envs, hooks)` after every iteration
    /// that does not end the run (the place for
    /// [`save_envs`](Self::save_envs)).
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn run_envs_with<L, E, H, F, const MAX_ENVS: usize>(
        &mut self,
        agent: &mut L,
        envs: &mut VecEnv<E, MAX_ENVS>,
        eval_env: &mut E,
        hooks: &mut H,
        mut between: F,
    ) -> Result<Outcome, Error>
    where
        L: Learner<E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
        F: FnMut(&Self, &L, &VecEnv<E, MAX_ENVS>, &mut H) -> ControlFlow<()>,
    {
        while agent.steps() < self.config.total_steps {
            let progress = self.iterate_envs(agent, envs, eval_env, hooks)?;
            let stop = self.ends_run(&progress, hooks);
            if stop || between(self, agent, envs, hooks).is_break() {
                break;
            }
        }
        self.finish(agent, eval_env, hooks)
    }

    /// Whether the run ends after an iteration: a hook breaks, or (with
    /// early stop) the deciding evaluation passed.
    fn ends_run<S, H: Hooks<S>>(&self, progress: &Progress, hooks: &mut H) -> bool {
        hooks.on_iteration(progress).is_break()
            || (self.config.early_stop && progress.solved_at_step.is_some())
    }

    /// The training loop of one environment ([`run_envs_with`](Self::run_envs_with)
    /// is the same loop over copies): iterate until the budget is spent, the
    /// deciding evaluation passes (with early stop), a hook or `between`
    /// breaks; then the reported evaluation (on `env` itself without an
    /// `eval_env`).
    fn drive<L, E, H, F>(
        &mut self,
        agent: &mut L,
        env: &mut E,
        mut eval_env: Option<&mut E>,
        hooks: &mut H,
        mut between: F,
    ) -> Result<Outcome, Error>
    where
        L: Learner<E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
        F: FnMut(&Self, &L, &E, &mut H) -> ControlFlow<()>,
    {
        while agent.steps() < self.config.total_steps {
            let progress = match eval_env.as_deref_mut() {
                Some(eval_env) => self.iterate(agent, env, eval_env, hooks)?,
                None => self.iterate_single(agent, env, hooks)?,
            };
            let stop = self.ends_run(&progress, hooks);
            if stop || between(self, agent, env, hooks).is_break() {
                break;
            }
        }
        match eval_env {
            Some(eval_env) => self.finish(agent, eval_env, hooks),
            None => self.finish(agent, env, hooks),
        }
    }

    /// Ends a run driven by [`iterate`](Self::iterate) calls of the
    /// caller's own (e.g. with checkpoints between them): the reported
    /// evaluation, passed to `hooks`, and the outcome — what
    /// [`run`](Self::run) returns.
    ///
    /// # Errors
    /// The evaluation's first error.
    pub fn finish<L, E, H>(
        &mut self,
        agent: &L,
        eval_env: &mut E,
        hooks: &mut H,
    ) -> Result<Outcome, Error>
    where
        L: Learner<E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
    {
        let report = self.report(agent, eval_env)?;
        hooks.on_evaluation(&report);
        Ok(Outcome {
            steps: agent.steps(),
            episodes: self.episodes,
            updates: self.updates,
            solved_at_step: self.solved_at_step,
            selection: self.selection,
            report,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::{Ppo, PpoConfig};
    use crate::env::{Discrete, Step};
    use crate::nn::Mlp;
    use crate::policy::CategoricalActor;
    use rand_xoshiro::Xoshiro128PlusPlus;

    /// Episodes of 4 steps whose every reward is the start state `u ∈ [0, 1)`
    /// drawn at reset: an episode's return identifies its start state.
    #[derive(Clone, Default)]
    struct Starts {
        u: f32,
        t: u32,
    }

    impl Env for Starts {
        type Obs = SVector<f32, 2>;
        type Space = Discrete<2>;
        const SOLVED_RETURN: f32 = 0.0;
        fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 2> {
            self.u = crate::rng::uniform(rng);
            self.t = 0;
            SVector::<f32, 2>::new(self.u, 0.0)
        }
        fn step(&mut self, _action: usize) -> Result<Step<SVector<f32, 2>>, Error> {
            self.t += 1;
            Ok(Step {
                obs: SVector::<f32, 2>::new(self.u, self.t as f32),
                reward: self.u,
                terminated: self.t == 4,
                truncated: false,
            })
        }
    }

    type Agent = Ppo<CategoricalActor<Mlp<2, 4, 2>>, Mlp<2, 4, 1>, 2, 16>;

    #[derive(Default)]
    struct Count {
        episodes: u64,
        updates: u64,
        evaluations: std::vec::Vec<Evaluation>,
        stop_after: Option<u64>,
        iterations: u64,
    }

    impl<S> Hooks<S> for Count {
        fn on_episode(&mut self, _: Episode) {
            self.episodes += 1;
        }
        fn on_update(&mut self, _: u64, _: &S) {
            self.updates += 1;
        }
        fn on_evaluation(&mut self, e: &Evaluation) {
            self.evaluations.push(*e);
        }
        fn on_iteration(&mut self, _: &Progress) -> ControlFlow<()> {
            self.iterations += 1;
            if self.stop_after == Some(self.iterations) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
    }

    /// A whole run of a fresh agent on [`Starts`] with `config` and `seed`.
    fn run_on_starts(config: RunConfig, seed: u64) -> (Outcome, Count) {
        let mut agent = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
        let (mut env, mut eval_env) = (Starts::default(), Starts::default());
        let mut trainer =
            Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, config, seed).unwrap();
        let mut hooks = Count::default();
        let outcome = trainer
            .run(&mut *agent, &mut env, &mut eval_env, &mut hooks)
            .unwrap();
        (outcome, hooks)
    }

    fn mean_return(seed: u64, skip: u32, episodes: u32) -> f32 {
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
        let mut env = Starts::default();
        for _ in 0..skip {
            env.reset(&mut rng);
        }
        // As `evaluate` sums: every step's reward and every return in f64.
        let sum: f64 = (0..episodes)
            .map(|_| {
                let u = f64::from(env.reset(&mut rng)[0]);
                ((u + u) + u) + u
            })
            .sum();
        (sum / f64::from(episodes)) as f32
    }

    /// The deciding evaluation must clear the threshold by `select_margin`
    /// standard errors: a mean that reaches it is not enough.
    #[test]
    fn the_deciding_mean_must_clear_the_threshold_by_the_margin() {
        let bound = RunConfig {
            select_episodes: 4,
            select_margin: 2.0,
            ..RunConfig::new(1, 0.0)
        };
        assert_eq!(bound.lower_bound(10.0, 3.0), 7.0);
        // Seed 0: the first quick evaluation (the selection stream's first 3
        // start states) passes, and the deciding one (the next 5) has its
        // mean exactly at the threshold.
        let (quick, threshold) = (
            mean_return(select_seed(0), 0, 3),
            mean_return(select_seed(0), 3, 5),
        );
        assert!(quick > threshold);
        let run = |select_margin: f32| {
            let config = RunConfig {
                eval_interval: 1,
                quick_episodes: 3,
                select_episodes: 5,
                select_margin,
                ..RunConfig::new(64, threshold)
            };
            let (outcome, hooks) = run_on_starts(config, 0);
            let decided = hooks
                .evaluations
                .iter()
                .filter(|e| e.kind == EvalKind::Select)
                .count();
            (outcome, decided)
        };
        let (plain, decided) = run(0.0);
        assert_eq!(
            (plain.solved_at_step, plain.steps, decided),
            (Some(16), 16, 1)
        );
        // The same first deciding evaluation, refused: its mean is the
        // threshold and its standard deviation is not 0.
        let (margin, decided) = run(1.0);
        assert!(decided >= 1);
        assert_eq!((margin.solved_at_step, margin.steps), (None, 64));
        assert!(margin.selection.is_none());
    }

    /// The loop stops at the first deciding evaluation that passes, and the
    /// reported evaluation plays start states from its own stream.
    #[test]
    fn stops_on_selection_and_reports_on_held_out_starts() {
        let config = RunConfig {
            eval_interval: 1,
            quick_episodes: 3,
            select_episodes: 5,
            report_episodes: 7,
            ..RunConfig::new(1_000, 0.0)
        };
        let (outcome, hooks) = run_on_starts(config, 11);
        // Every return is ≥ 0: solved at the first evaluation, after one rollout.
        assert_eq!(outcome.solved_at_step, Some(16));
        assert_eq!((outcome.steps, outcome.updates, hooks.updates), (16, 1, 1));
        assert_eq!(outcome.episodes, 4);
        assert_eq!(hooks.episodes, 4);
        let kinds: std::vec::Vec<EvalKind> = hooks.evaluations.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [EvalKind::Quick, EvalKind::Select, EvalKind::Report]);
        // The selection stream: 3 quick episodes, then 5 deciding ones.
        let select = outcome.selection.unwrap();
        assert_eq!(select.mean, mean_return(select_seed(11), 3, 5));
        // The report stream: its own start states.
        assert_eq!(outcome.report.episodes, 7);
        assert_eq!(outcome.report.mean, mean_return(report_seed(11), 0, 7));
        assert_ne!(outcome.report.mean, mean_return(select_seed(11), 8, 7));
        assert!(outcome.solved(0.0));
        assert!(!outcome.solved(3.9));
    }

    #[test]
    fn a_hook_can_stop_the_run_and_the_budget_ends_it() {
        let config = RunConfig {
            quick_episodes: 0,
            ..RunConfig::new(160, 0.0)
        };
        let run = |stop_after| {
            let mut agent = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
            let (mut env, mut eval_env) = (Starts::default(), Starts::default());
            let mut trainer =
                Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, config, 1).unwrap();
            let mut hooks = Count {
                stop_after,
                ..Count::default()
            };
            trainer
                .run(&mut *agent, &mut env, &mut eval_env, &mut hooks)
                .unwrap()
        };
        assert_eq!(run(Some(3)).steps, 48);
        let full = run(None);
        assert_eq!((full.steps, full.solved_at_step), (160, None));
    }

    /// `between` runs after every iteration that does not end the run, and
    /// can stop it.
    #[test]
    fn run_with_calls_between_iterations_and_can_stop() {
        let config = RunConfig {
            quick_episodes: 0,
            ..RunConfig::new(160, 0.0)
        };
        let mut agent = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
        let (mut env, mut eval_env) = (Starts::default(), Starts::default());
        let mut trainer =
            Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, config, 1).unwrap();
        let mut seen = std::vec::Vec::new();
        let outcome = trainer
            .run_with(
                &mut *agent,
                &mut env,
                &mut eval_env,
                &mut (),
                |t, a, _, _| {
                    seen.push((t.updates, a.steps));
                    if seen.len() == 3 {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                },
            )
            .unwrap();
        assert_eq!(seen, [(1, 16), (2, 32), (3, 48)]);
        assert_eq!(outcome.steps, 48);
    }

    /// One environment: evaluations run on it and the training episode
    /// restarts; the run is still deterministic.
    #[test]
    fn a_single_plant_serves_training_and_evaluation() {
        let run = || {
            let mut agent = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
            let mut env = Starts::default();
            let config = RunConfig {
                eval_interval: 32,
                early_stop: false,
                solved_eval_interval: 32,
                ..RunConfig::new(128, 0.0)
            };
            let mut trainer =
                Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, config, 5).unwrap();
            let mut hooks = Count::default();
            let outcome = trainer
                .run_single(&mut *agent, &mut env, &mut hooks)
                .unwrap();
            (outcome, hooks.evaluations.len())
        };
        let (outcome, evaluations) = run();
        assert_eq!(outcome.steps, 128);
        assert_eq!(outcome.solved_at_step, Some(32));
        // Quick + deciding at 32, quick at 64, 96, 128, and the report.
        assert_eq!(evaluations, 6);
        assert_eq!(run().0, outcome);
    }

    #[test]
    fn run_config_refuses_vacuous_gates() {
        let ok = RunConfig::new(100, 1.0);
        assert_eq!(ok.validate(), Ok(()));
        for (c, field) in [
            (
                RunConfig {
                    total_steps: 0,
                    ..ok
                },
                "total_steps",
            ),
            (
                RunConfig {
                    threshold: f32::NAN,
                    ..ok
                },
                "threshold",
            ),
            (
                RunConfig {
                    eval_interval: 0,
                    ..ok
                },
                "eval_interval",
            ),
            (
                RunConfig {
                    select_episodes: 0,
                    ..ok
                },
                "select_episodes",
            ),
            (
                RunConfig {
                    report_episodes: 0,
                    ..ok
                },
                "report_episodes",
            ),
        ] {
            assert!(
                matches!(c.validate(), Err(Error::InvalidConfig { field: f, .. }) if f == field),
                "{c:?}"
            );
        }
    }

    #[test]
    fn evaluations_display_for_logs() {
        let e = Evaluation {
            kind: EvalKind::Report,
            step: 2048,
            episodes: 100,
            mean: 500.0,
            std: 0.0,
        };
        assert_eq!(
            std::format!("{e}"),
            "held-out eval at step 2048: 500.0 ± 0.0 (100 episodes)"
        );
    }
}
