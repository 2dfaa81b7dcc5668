//! [`KeepBest`]: the run's result is the best policy it evaluated, not the
//! last one it happened to end on.
//!
//! Design:
//! - **Why.** A long run often collapses late: the last policy of a SAC run
//!   on the ball-and-beam scored −193.8 where it had scored −7.0 five
//!   thousand steps earlier, and the online actor-critic can end far worse
//!   than the plant left alone. Keeping the best evaluated policy is the
//!   cheap guard (SB3's `EvalCallback(best_model_save_path=…)`, RL Zoo's
//!   `best_model.zip`).
//! - **Selection starts decide, held-out starts report.** Every candidate is
//!   played on the *same* [`KeepBest::episodes`] start states, drawn afresh
//!   each time from [`keep_best_seed`] of the training seed — a stream
//!   neither training, the trainer's selection gate nor its report uses —
//!   so two policies of a run are compared on equal terms. The kept policy
//!   is then reported on the report stream's start states
//!   ([`Trainer::finish_with`]), which chose nothing.
//! - **The step-0 policy is a candidate.** [`Trainer::keep_best`] is called
//!   once right after [`Trainer::start`] and after every evaluation the
//!   loop runs: a run whose learning only made things worse returns the
//!   policy it started from.
//! - **Ties keep the earlier policy; a NaN score is never kept.**
//! - **A run stopped early by its deciding evaluation returns that policy**
//!   ([`KeepBest::keep_last`]): it passed the stricter test.
//! - **The caller owns the storage** ([`KeepBest::policy`], one
//!   [`Deployed`](super::Deployed) policy; box it or put it in a `static`),
//!   and a checkpoint saves it with [`serialize`](crate::serialize) beside
//!   the run's, with [`KeepBest::score`] and [`KeepBest::step`], so a
//!   resumed run keeps the same policy bit for bit.

use core::marker::PhantomData;
use core::ops::ControlFlow;

use nalgebra::SVector;
use rand_core::{Rng, SeedableRng};

use super::{Acting, Agent, Envs, Hooks, Learner, Outcome, Trainer};
use crate::algo::evaluate;
use crate::env::{ActionOf, Env};
use crate::error::Error;
use crate::policy::Controller;

/// Start states of the keep-best evaluation, when it is on: 20, RL Zoo's
/// `n_eval_episodes` is 5 and the suite's late collapses were caught with 20.
pub const KEEP_BEST_EPISODES: u32 = 20;

/// The most episodes one keep-best evaluation may play.
pub const MAX_KEEP_BEST_EPISODES: u32 = 10_000;

/// The seed of the keep-best start states of training seed `seed`: a stream
/// that neither training, the selection gate nor the report uses (the same
/// derivation on every platform).
pub const fn keep_best_seed(seed: u64) -> u64 {
    seed ^ 0x7a4e_5eed_0000_0000
}

/// The best policy of a run so far: the first of the strictly best scores
/// on fixed keep-best start states (see the [`train`](crate::train) module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct KeepBest<P> {
    /// The kept policy (the storage as given until one is kept).
    pub policy: P,
    /// Its mean return on the keep-best start states (`None`: nothing kept).
    pub score: Option<f32>,
    /// Environment steps trained when it was kept.
    pub step: u64,
    /// Start states of each keep-best evaluation; 0 turns keeping the best
    /// off (the run's result is its last policy).
    pub episodes: u32,
    /// The training seed (the start states come from [`keep_best_seed`] of it).
    pub seed: u64,
}

impl<P> KeepBest<P> {
    /// Nothing kept yet: `storage` (e.g. `Policy::ZERO`) receives the kept
    /// policy; `episodes` start states per evaluation (0: off); `seed` the
    /// run's training seed.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `keep_best` above
    /// [`MAX_KEEP_BEST_EPISODES`].
    pub fn new(storage: P, episodes: u32, seed: u64) -> Result<Self, Error> {
        crate::config::check(
            "keep_best",
            episodes <= MAX_KEEP_BEST_EPISODES,
            "must be at most 10000 episodes",
        )?;
        Ok(Self {
            policy: storage,
            score: None,
            step: 0,
            episodes,
            seed,
        })
    }

    /// Whether keeping the best is on (`episodes > 0`).
    pub const fn is_on(&self) -> bool {
        self.episodes > 0
    }

    /// `score` at `step` beats every earlier offer (strictly; a NaN never
    /// does): then `export` writes the policy into the storage. Returns
    /// whether it did.
    pub fn offer(&mut self, score: f32, step: u64, export: impl FnOnce(&mut P)) -> bool {
        let better = match self.score {
            None => !score.is_nan(),
            Some(best) => score > best,
        };
        if better {
            export(&mut self.policy);
            self.score = Some(score);
            self.step = step;
        }
        better
    }

    /// Makes the agent's current policy the result regardless of scores:
    /// keeping the best is off, or the run stopped early on a deciding
    /// evaluation that passed. The score stays (the last policy's was not
    /// measured on the keep-best starts).
    pub fn keep_last<A: Agent<Policy = P>>(&mut self, agent: &A) {
        agent.export(&mut self.policy);
        self.step = agent.steps();
    }

    /// The run's result once it has ended: [`keep_last`](Self::keep_last)
    /// unless keeping the best is on, something was kept, and the run did
    /// not stop early on its deciding evaluation (`stopped_solved`).
    pub fn settle<A: Agent<Policy = P>>(&mut self, agent: &A, stopped_solved: bool) {
        if !self.is_on() || self.score.is_none() || stopped_solved {
            self.keep_last(agent);
        }
    }
}

impl<const OBS: usize, R: Rng + SeedableRng> Trainer<SVector<f32, OBS>, R> {
    /// Plays `agent`'s current policy on `best`'s start states (see
    /// [`KeepBest`]) and keeps it if it scores best so far. Does nothing
    /// while keeping the best is off. Call it right after
    /// [`start`](Self::start) (the step-0 policy) and after every
    /// [`iterate`](Self::iterate) whose [`Progress::evaluation`](super::Progress::evaluation)
    /// is `Some`; at the end, [`KeepBest::settle`] and report the kept
    /// policy with [`finish_with`](Self::finish_with).
    ///
    /// Draws nothing from the trainer's streams: the run's training bits
    /// are those of the same run without it.
    ///
    /// # Errors
    /// The evaluation's first error; `best` is unchanged then.
    pub fn keep_best<L, E>(
        &self,
        agent: &L,
        eval_env: &mut E,
        best: &mut KeepBest<L::Policy>,
    ) -> Result<bool, Error>
    where
        L: Learner<E>,
        E: Env<Obs = SVector<f32, OBS>>,
    {
        if !best.is_on() {
            return Ok(false);
        }
        let mut starts = R::seed_from_u64(keep_best_seed(best.seed));
        let (mean, _) = evaluate(
            &Acting(agent, PhantomData),
            eval_env,
            best.episodes,
            &mut starts,
        )?;
        Ok(best.offer(mean, agent.steps(), |p| agent.export(p)))
    }

    /// [`run_with`](Self::run_with), keeping the best: after every
    /// iteration that ran an evaluation, [`keep_best`](Self::keep_best);
    /// at the end the last policy too if it was not evaluated, then
    /// [`KeepBest::settle`] and the reported evaluation of the kept policy
    /// ([`finish_with`](Self::finish_with)) — the outcome's `report` and
    /// `best.policy` are the run's result. `between(trainer, agent, envs,
    /// hooks, best)` runs after every iteration that does not end the run
    /// (the place for a checkpoint, which saves `best` too).
    ///
    /// Call [`keep_best`](Self::keep_best) once after
    /// [`start`](Self::start) first (the step-0 policy), not after a resume.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn run_keeping_best<L, V, E, H, F>(
        &mut self,
        agent: &mut L,
        envs: &mut V,
        eval_env: &mut E,
        hooks: &mut H,
        best: &mut KeepBest<L::Policy>,
        mut between: F,
    ) -> Result<Outcome, Error>
    where
        L: Learner<E>,
        L::Policy: Controller<OBS, Action = ActionOf<E>>,
        V: Envs<Env = E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
        F: FnMut(&Self, &L, &V, &mut H, &KeepBest<L::Policy>) -> ControlFlow<()>,
    {
        let (mut stopped_solved, mut evaluated_last) = (false, true);
        while agent.steps() < self.config.total_steps {
            let progress = self.iterate(agent, envs, eval_env, hooks)?;
            evaluated_last = progress.evaluation.is_some();
            if evaluated_last {
                self.keep_best(agent, eval_env, best)?;
            }
            if self.ends_run(&progress, hooks) {
                stopped_solved = self.config.early_stop && progress.solved_at_step.is_some();
                break;
            }
            if between(self, agent, envs, hooks, best).is_break() {
                break;
            }
        }
        if !evaluated_last && !stopped_solved {
            // The last policy was not evaluated: it is a candidate too.
            self.keep_best(agent, eval_env, best)?;
        }
        best.settle(agent, stopped_solved);
        self.finish_with(&best.policy, best.step, eval_env, hooks)
    }
}
