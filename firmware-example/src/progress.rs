//! [`Log`]: the training hooks every binary shares — progress, evaluations
//! and diagnostics over defmt, for any agent.
//!
//! The training return a progress line shows is the mean of the last 100
//! training episodes — what the desktop's progress bar and learning curve
//! show — kept in a `heapless::HistoryBuf<f32, 100>` (400 bytes, no
//! allocation, the oldest return overwritten by the newest), with the number
//! of episodes finished since the previous line.

use core::ops::ControlFlow;

use heapless::HistoryBuf;
use microrl::algo::sac::SacStats;
use microrl::algo::{AcStats, Episode, UpdateStats};
use microrl::train::{EvalKind, Evaluation, Hooks, Progress};

/// An algorithm's diagnostics as they appear in a progress line: what is
/// kept between two lines, and how the line reads. Implemented for PPO's
/// (and A2C's, REINFORCE's) [`UpdateStats`] and the online actor-critic's
/// [`AcStats`].
pub trait LogStats {
    /// What is accumulated between two progress lines.
    type Acc: Copy;
    /// Nothing accumulated yet.
    const EMPTY: Self::Acc;
    /// Folds one iteration's diagnostics in.
    fn add(acc: &mut Self::Acc, stats: &Self);
    /// Logs the progress line.
    fn log(acc: &Self::Acc, line: &Line);
}

/// The algorithm-independent part of a progress line.
#[derive(Clone, Copy, Debug)]
pub struct Line {
    /// Gradient updates so far.
    pub updates: u64,
    /// Environment steps so far.
    pub steps: u64,
    /// Mean return of the last 100 training episodes, whenever they
    /// finished (NaN before the first).
    pub last_100: f32,
    /// Training episodes finished since the last line.
    pub episodes: u32,
    /// Mean of the latest quick evaluation since the last line (NaN if none).
    pub eval: f32,
}

/// PPO: the last update's `approx_kl`, `clip_fraction` and
/// `explained_variance`.
impl LogStats for UpdateStats {
    type Acc = Option<UpdateStats>;
    const EMPTY: Self::Acc = None;

    fn add(acc: &mut Self::Acc, stats: &Self) {
        *acc = Some(*stats);
    }

    fn log(acc: &Self::Acc, l: &Line) {
        let s = acc.unwrap_or_default();
        defmt::info!(
            "update {=u64} steps {=u64}: train return {=f32} (last 100 episodes; {=u32} new) eval {=f32} approx_kl {=f32} clip_fraction {=f32} explained_variance {=f32}",
            l.updates,
            l.steps,
            l.last_100,
            l.episodes,
            l.eval,
            s.approx_kl,
            s.clip_fraction,
            s.explained_variance
        );
    }
}

/// Online actor-critic (one update per step): mean `|δ|`, `V(s)` and
/// policy entropy over the steps since the last line.
impl LogStats for AcStats {
    /// Sums of `|δ|`, `V(s)`, entropy; number of steps.
    type Acc = (f32, f32, f32, u32);
    const EMPTY: Self::Acc = (0.0, 0.0, 0.0, 0);

    fn add(acc: &mut Self::Acc, stats: &Self) {
        acc.0 += stats.delta.abs();
        acc.1 += stats.value;
        acc.2 += stats.entropy;
        acc.3 += 1;
    }

    fn log(acc: &Self::Acc, l: &Line) {
        let n = acc.3.max(1) as f32;
        defmt::info!(
            "steps {=u64}: train return {=f32} (last 100 episodes; {=u32} new) eval {=f32} |delta| {=f32} value {=f32} entropy {=f32}",
            l.steps,
            l.last_100,
            l.episodes,
            l.eval,
            acc.0 / n,
            acc.1 / n,
            acc.2 / n
        );
    }
}

/// SAC (one environment step an iteration; `None` when it trained
/// nothing): the last gradient step's critic and actor losses, `α` and
/// `mean Q₁(s, a)`, and the gradient steps since the last line.
impl LogStats for Option<SacStats> {
    /// The last gradient step's diagnostics; gradient steps since the last line.
    type Acc = (Option<SacStats>, u32);
    const EMPTY: Self::Acc = (None, 0);

    fn add(acc: &mut Self::Acc, stats: &Self) {
        if let Some(s) = stats {
            *acc = (Some(*s), acc.1 + 1);
        }
    }

    fn log(acc: &Self::Acc, l: &Line) {
        let s = acc.0.unwrap_or_default();
        defmt::info!(
            "steps {=u64} updates {=u64}: train return {=f32} (last 100 episodes; {=u32} new) eval {=f32} critic_loss {=f32} actor_loss {=f32} alpha {=f32} q1 {=f32} ({=u32} gradient steps)",
            l.steps,
            l.updates,
            l.last_100,
            l.episodes,
            l.eval,
            s.critic_loss,
            s.actor_loss,
            s.ent_coef,
            s.q1,
            acc.1
        );
    }
}

/// The defmt-logging [`Hooks`]: a progress line whenever the step count
/// crosses a multiple of `every` (with the mean training return of the last
/// 100 episodes, the latest quick evaluation and the algorithm's
/// diagnostics, see [`LogStats`]), then a
/// line for each deciding and each reported evaluation:
/// `eval Select 100 episodes: <mean> (<f32 bits>) ± <std> at step <n>`.
#[derive(Clone, Debug)]
pub struct Log<S: LogStats> {
    every: u64,
    /// The next multiple of `every` a progress line waits for.
    next_line: u64,
    episodes: u32,
    last_100: HistoryBuf<f32, 100>,
    quick: f32,
    select: Option<Evaluation>,
    acc: S::Acc,
}

impl<S: LogStats> Log<S> {
    /// A progress line every `every` environment steps (1: after every
    /// iteration; PPO's iteration is one rollout).
    pub const fn every(every: u64) -> Self {
        Self {
            every: if every == 0 { 1 } else { every },
            next_line: if every == 0 { 1 } else { every },
            episodes: 0,
            last_100: HistoryBuf::new(),
            quick: f32::NAN,
            select: None,
            acc: S::EMPTY,
        }
    }

    /// Mean return of the last (up to) 100 training episodes, summed oldest
    /// first; NaN before the first.
    pub fn last_100_mean(&self) -> f32 {
        if self.last_100.is_empty() {
            return f32::NAN;
        }
        self.last_100.oldest_ordered().sum::<f32>() / self.last_100.len() as f32
    }
}

fn log_evaluation(e: &Evaluation) {
    defmt::info!(
        "eval {} {=u32} episodes: {=f32} ({=u32:#010x}) ± {=f32} at step {=u64}",
        e.kind,
        e.episodes,
        e.mean,
        e.mean.to_bits(),
        e.std,
        e.step
    );
}

impl<S: LogStats> Hooks<S> for Log<S> {
    fn on_episode(&mut self, episode: Episode) {
        self.episodes += 1;
        self.last_100.write(episode.ret);
    }

    fn on_update(&mut self, _steps: u64, stats: &S) {
        S::add(&mut self.acc, stats);
    }

    fn on_evaluation(&mut self, e: &Evaluation) {
        match e.kind {
            EvalKind::Quick => self.quick = e.mean,
            // After this iteration's progress line.
            EvalKind::Select => self.select = Some(*e),
            // After the last iteration.
            EvalKind::Report => log_evaluation(e),
        }
    }

    fn on_iteration(&mut self, p: &Progress) -> ControlFlow<()> {
        if p.steps >= self.next_line {
            let line = Line {
                updates: p.updates,
                steps: p.steps,
                episodes: self.episodes,
                last_100: self.last_100_mean(),
                eval: self.quick,
            };
            S::log(&self.acc, &line);
            // The first multiple of `every` beyond this step, without a
            // u64 division (a library call on the M4F).
            while self.next_line <= p.steps && self.next_line != u64::MAX {
                self.next_line = self.next_line.saturating_add(self.every);
            }
            self.episodes = 0;
            self.quick = f32::NAN;
            self.acc = S::EMPTY;
        }
        if let Some(e) = self.select.take() {
            log_evaluation(&e);
        }
        ControlFlow::Continue(())
    }
}
