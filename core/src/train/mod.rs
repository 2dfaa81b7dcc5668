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
//!   [`VecEnv`](crate::vec_env::VecEnv) and passes it to the same
//!   [`Trainer::start`], [`Trainer::run`], [`Trainer::save`] and
//!   [`Trainer::resume`] as one environment ([`Envs`]); with one copy that
//!   run is the single-environment run bit for bit. A single-environment
//!   user's types never mention `MAX_ENVS`.
//! - **The best policy, not the last.** [`KeepBest`] keeps the policy
//!   that scored best on fixed start states of its own stream (the step-0
//!   policy included) and the report plays it: a run that collapses late,
//!   or only made things worse, returns its best.
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

mod best;
mod config;
mod envs;
mod trainer;

pub use best::*;
pub use config::*;
pub use envs::Envs;
pub use trainer::*;

use core::marker::PhantomData;
use core::ops::ControlFlow;

use nalgebra::SVector;
use rand_core::Rng;

use crate::algo::{Cursor, Episode};
use crate::env::{ActionOf, Env};
use crate::error::Error;
use crate::policy::Controller;

/// What every agent offers independently of the environment it trains on.
pub trait Agent {
    /// The deployable policy type (see [`Deployed`]).
    type Policy;
    /// Diagnostics of one iteration ([`UpdateStats`](crate::algo::UpdateStats) or [`AcStats`](crate::algo::AcStats)).
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

/// An agent borrowed as a [`Controller`] for [`evaluate`](crate::algo::evaluate).
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
    /// copies, each with its own cursor (see [`VecEnv`](crate::vec_env::VecEnv)). One copy (the
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
/// the algorithm's own `learner.rs` (REINFORCE's and TRPO's through
/// `algo/ppo/wrapped.rs`): the algorithms differ only in how many
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

#[cfg(test)]
mod tests;
