//! [`Trainer`]: the loop's own state, and start → iterate → evaluate →
//! report over any [`Learner`].

use core::marker::PhantomData;
use core::ops::ControlFlow;

use nalgebra::SVector;
use rand_core::{Rng, SeedableRng};

use crate::algo::{Cursor, evaluate};
use crate::env::{ActionOf, Env};
use crate::error::Error;
use crate::policy::Controller;

use super::*;

/// The loop's state between iterations (see the module docs).
#[derive(Clone, Debug)]
pub struct Trainer<O, R> {
    /// How the run is driven and judged.
    pub config: RunConfig,
    /// The training episode in progress (of a single-environment run; a
    /// run over a [`VecEnv`](crate::vec_env::VecEnv) keeps one cursor per copy there, and this one
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

    /// The usual start: seeds the three streams from `seed` ([`select_seed`],
    /// [`report_seed`]), initialises `agent` for the training environment
    /// from the training stream, then resets it — `envs` is one environment,
    /// or a [`VecEnv`](crate::vec_env::VecEnv) of copies (see [`Envs`]),
    /// whose agent's [`n_envs`](Learner::n_envs) copies are reset, copy 0
    /// first. With one copy the two are the same run bit for bit.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] from the run or the agent's configuration,
    /// or naming `n_envs` when the agent needs more copies than a `VecEnv`
    /// holds; neither `agent` nor `envs` changes then.
    pub fn start<L, V, E>(
        agent: &mut L,
        envs: &mut V,
        config: RunConfig,
        seed: u64,
    ) -> Result<Self, Error>
    where
        L: Learner<E>,
        V: Envs<Env = E>,
        E: Env<Obs = SVector<f32, OBS>>,
        R: SeedableRng,
    {
        config.validate()?;
        let mut rng = R::seed_from_u64(seed);
        let cursor = envs.start_run(agent, &mut rng)?;
        Ok(Self::from_parts(
            config,
            cursor,
            rng,
            R::seed_from_u64(select_seed(seed)),
            R::seed_from_u64(report_seed(seed)),
        ))
    }

    /// One iteration of `agent` on `envs` (one environment or copies, see
    /// [`Envs`]), then the evaluation due (on `eval_env`, from the
    /// selection stream).
    ///
    /// # Errors
    /// The agent's, the environment's or the evaluation's first error.
    pub fn iterate<L, V, E, H>(
        &mut self,
        agent: &mut L,
        envs: &mut V,
        eval_env: &mut E,
        hooks: &mut H,
    ) -> Result<Progress, Error>
    where
        L: Learner<E>,
        V: Envs<Env = E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
    {
        let stats = self.train_step(agent, envs, hooks)?;
        self.after_update(
            &Acting(agent, PhantomData),
            agent.steps(),
            agent.updates_per_iteration(),
            &stats,
            eval_env,
            hooks,
        )
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
        let stats = self.train_step(agent, env, hooks)?;
        let acting = Acting(agent, PhantomData);
        let (steps, updates) = (agent.steps(), agent.updates_per_iteration());
        let progress = self.after_update(&acting, steps, updates, &stats, env, hooks)?;
        if progress.evaluation.is_some() {
            self.cursor = Cursor::start(env, &mut self.rng);
        }
        Ok(progress)
    }

    /// One [`Learner::iterate`], counting episodes; returns its statistics.
    fn train_step<L, V, E, H>(
        &mut self,
        agent: &mut L,
        envs: &mut V,
        hooks: &mut H,
    ) -> Result<L::Stats, Error>
    where
        L: Learner<E>,
        V: Envs<Env = E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
    {
        let episodes = &mut self.episodes;
        let stats = envs.train(agent, &mut self.cursor, &mut self.rng, &mut |e| {
            *episodes += 1;
            hooks.on_episode(e);
        })?;
        Ok(stats)
    }

    /// The step after an update, as a step of its own: counts `updates`
    /// gradient updates, reports `stats` to [`Hooks::on_update`], then runs
    /// the evaluation gate due at `steps` — the quick evaluation of `policy`
    /// on `eval_env` from the selection stream and, when it reaches the
    /// threshold, the deciding one, which marks the run solved at `steps`
    /// when it clears the margin. [`iterate`](Self::iterate) (and so
    /// [`run`](Self::run)) calls it after every iteration with the agent
    /// itself, its [`steps`](Agent::steps) and its
    /// [`updates_per_iteration`](Agent::updates_per_iteration); a caller
    /// whose learner runs apart from its control loop calls it after each of
    /// its own updates — a device on the lagged schedule
    /// ([`LaggedPpo`](crate::algo::LaggedPpo)) passes the learner and the
    /// schedule's step count (the rollouts trained on plus the one being
    /// acted), and then [`ends_run`](Self::ends_run) and
    /// [`finish_with`](Self::finish_with): the same gate and stop rule as
    /// the desktop's run, by the same code.
    ///
    /// # Errors
    /// The evaluation's first error.
    pub fn after_update<P, E, H, S>(
        &mut self,
        policy: &P,
        steps: u64,
        updates: u64,
        stats: &S,
        eval_env: &mut E,
        hooks: &mut H,
    ) -> Result<Progress, Error>
    where
        P: Controller<OBS, Action = ActionOf<E>> + ?Sized,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<S>,
    {
        self.updates += updates;
        hooks.on_update(steps, stats);
        self.evaluate_due(policy, steps, eval_env, hooks)
    }

    /// The quick (and, when it passes, the deciding) evaluation of `policy`
    /// if one is due at `steps`.
    fn evaluate_due<P, E, H, S>(
        &mut self,
        policy: &P,
        steps: u64,
        eval_env: &mut E,
        hooks: &mut H,
    ) -> Result<Progress, Error>
    where
        P: Controller<OBS, Action = ActionOf<E>> + ?Sized,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<S>,
    {
        let c = self.config;
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
            let (mean, std) = evaluate(policy, eval_env, c.quick_episodes, &mut self.select_rng)?;
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
                    evaluate(policy, eval_env, c.select_episodes, &mut self.select_rng)?;
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
        self.report_with(&Acting(agent, PhantomData), agent.steps(), eval_env)
    }

    /// [`report`](Self::report) of `policy` at `steps` (see
    /// [`after_update`](Self::after_update)).
    ///
    /// # Errors
    /// The evaluation's first error.
    pub fn report_with<P, E>(
        &mut self,
        policy: &P,
        steps: u64,
        eval_env: &mut E,
    ) -> Result<Evaluation, Error>
    where
        P: Controller<OBS, Action = ActionOf<E>> + ?Sized,
        E: Env<Obs = SVector<f32, OBS>>,
    {
        let episodes = self.config.report_episodes;
        let (mean, std) = evaluate(policy, eval_env, episodes, &mut self.report_rng)?;
        Ok(Evaluation {
            kind: EvalKind::Report,
            step: steps,
            episodes,
            mean,
            std,
        })
    }

    /// Iterates until the budget is spent, the deciding evaluation passes
    /// (with early stop) or a hook breaks; then the reported evaluation.
    /// `envs` is one environment or copies ([`Envs`]). (With one
    /// environment and no other to evaluate on, e.g. a real plant, see
    /// [`run_single`](Self::run_single).)
    ///
    /// # Errors
    /// The first error of an iteration or an evaluation; the agent keeps
    /// every update made before it.
    pub fn run<L, V, E, H>(
        &mut self,
        agent: &mut L,
        envs: &mut V,
        eval_env: &mut E,
        hooks: &mut H,
    ) -> Result<Outcome, Error>
    where
        L: Learner<E>,
        V: Envs<Env = E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
    {
        self.run_with(agent, envs, eval_env, hooks, |_, _, _, _| {
            ControlFlow::Continue(())
        })
    }

    /// [`run`](Self::run), calling `between(trainer, agent, envs, hooks)`
    /// after every iteration that does not end the run — the place to save
    /// a checkpoint ([`Trainer::save`](crate::checkpoint)) or to feed a
    /// watchdog; `Break` stops the run there (then the reported evaluation
    /// as usual).
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub fn run_with<L, V, E, H, F>(
        &mut self,
        agent: &mut L,
        envs: &mut V,
        eval_env: &mut E,
        hooks: &mut H,
        mut between: F,
    ) -> Result<Outcome, Error>
    where
        L: Learner<E>,
        V: Envs<Env = E>,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<L::Stats>,
        F: FnMut(&Self, &L, &V, &mut H) -> ControlFlow<()>,
    {
        while agent.steps() < self.config.total_steps {
            let progress = self.iterate(agent, envs, eval_env, hooks)?;
            if self.ends_run(&progress, hooks) || between(self, agent, envs, hooks).is_break() {
                break;
            }
        }
        self.finish(agent, eval_env, hooks)
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
        while agent.steps() < self.config.total_steps {
            let progress = self.iterate_single(agent, env, hooks)?;
            if self.ends_run(&progress, hooks) {
                break;
            }
        }
        self.finish(agent, env, hooks)
    }

    /// Whether the run ends after an iteration: a hook breaks
    /// ([`Hooks::on_iteration`], called here once per iteration), or (with
    /// early stop) the deciding evaluation passed. (The budget is checked
    /// before the next iteration: `progress.steps >= config.total_steps`.)
    pub fn ends_run<S, H: Hooks<S>>(&self, progress: &Progress, hooks: &mut H) -> bool {
        hooks.on_iteration(progress).is_break()
            || (self.config.early_stop && progress.solved_at_step.is_some())
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
        self.finish_with(&Acting(agent, PhantomData), agent.steps(), eval_env, hooks)
    }

    /// [`finish`](Self::finish) with `policy` at `steps` (see
    /// [`after_update`](Self::after_update)).
    ///
    /// # Errors
    /// The evaluation's first error.
    pub fn finish_with<P, E, H, S>(
        &mut self,
        policy: &P,
        steps: u64,
        eval_env: &mut E,
        hooks: &mut H,
    ) -> Result<Outcome, Error>
    where
        P: Controller<OBS, Action = ActionOf<E>> + ?Sized,
        E: Env<Obs = SVector<f32, OBS>>,
        H: Hooks<S>,
    {
        let report = self.report_with(policy, steps, eval_env)?;
        hooks.on_evaluation(&report);
        Ok(Outcome {
            steps,
            episodes: self.episodes,
            updates: self.updates,
            solved_at_step: self.solved_at_step,
            selection: self.selection,
            report,
        })
    }
}
