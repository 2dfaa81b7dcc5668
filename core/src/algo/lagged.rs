//! Learning while controlling: what every lagged schedule shares, and the
//! one-thread reference [`Lagged`] of the learners that learn tick by tick
//! (the online actor-critic, SAC, TD3).
//!
//! On a device the control loop (a timer interrupt at the plant's rate)
//! cannot wait for the learner, so the two run side by side. The control
//! loop acts every tick with the last *published* behaviour ([`Behave`]:
//! an on-policy learner's [`Policy`], an off-policy learner's
//! [`Explorer`](crate::algo::offpolicy::Explorer)) and hands the learner a
//! [`Tick`]; the learner ([`TickLearner`]) takes the ticks of a whole block
//! of `BLOCK` control periods, learns from each in order, and publishes at
//! the next block boundary. The schedule, fixed and independent of timing:
//!
//! | block | acted by | learned from while |
//! |---|---|---|
//! | 0 | `θ₀` (the initial behaviour) | nothing runs |
//! | 1 | `θ₀` | the learner steps through block 0 → `θ₁` |
//! | j ≥ 1 | `θ_{j−1}`, published after block j−2 | the learner steps through block j−1 → `θ_j` |
//!
//! How each learner treats data drawn by a behaviour one block old is its
//! own: the online actor-critic weights its TD step by a truncated
//! importance ratio ([`crate::algo::ac::lagged`]); SAC and TD3 need no
//! correction, their replay buffer holds off-policy data by design
//! ([`crate::algo::offpolicy`]). PPO's schedule, a rollout in
//! place of a block and one update per rollout, is
//! [`LaggedPpo`](crate::algo::LaggedPpo).
//!
//! **Random streams.** The control loop draws its actions and episode
//! resets from its own stream, seeded from one draw of the training stream
//! at `init` ([`init_lagged`]); the learner draws (an off-policy
//! learner's minibatches) from the training stream. The interleaving of the
//! two in time changes no bit, so a firmware's learned weights equal
//! [`Lagged`]'s bit for bit (`firmware-example`'s `rt::lagged`).

mod persist;
#[cfg(test)]
mod tests;

use nalgebra::SVector;
use rand_core::{Rng, SeedableRng};

use super::ppo::lagged::{Pending, Tick, behave};
use super::{Actor, Cursor, Episode};
use crate::env::{ActionSpace, Env};
use crate::error::Error;
use crate::policy::{Controller, Policy};
use crate::rng::Xoshiro128pp;
use crate::train::{Agent, Learner};

/// What a control loop acts with on a lagged schedule: the published
/// policy of an on-policy learner ([`Policy`], through [`behave`]) or the
/// exploring actor of an off-policy one
/// ([`Explorer`](crate::algo::offpolicy::Explorer)). One tick:
/// draw an action for `cursor.obs` from `rng` (the control loop's stream),
/// step the plant `env`, advance `cursor` (resetting `env` from `rng` at an
/// episode's end, reported to `on_episode`) and return the [`Tick`] the
/// learner ingests. `step` is the tick's index in the schedule, from 0:
/// the ticks learned from before its block plus its place in the block
/// (an off-policy learner acts uniformly at random for its first
/// `learning_starts`).
pub trait Behave<const OBS: usize> {
    /// The plant's action space.
    type Space: ActionSpace;

    /// One tick (see the [trait](Behave) docs).
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite observation or network output,
    /// and the environment's errors; the cursor is unchanged then.
    fn behave<E, R>(
        &self,
        step: u64,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        on_episode: &mut impl FnMut(Episode),
    ) -> Result<Tick<OBS, <Self::Space as ActionSpace>::Action>, Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = Self::Space>,
        R: Rng + ?Sized;
}

/// [`behave`]: the step count plays no part.
impl<A: Actor<OBS>, const OBS: usize> Behave<OBS> for Policy<A, OBS> {
    type Space = A::Space;

    fn behave<E, R>(
        &self,
        _step: u64,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        on_episode: &mut impl FnMut(Episode),
    ) -> Result<Tick<OBS, A::Action>, Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        behave(self, env, cursor, rng, on_episode)
    }
}

/// The action type a [`Behave`] acts in.
pub type ActionOf<B, const OBS: usize> = <<B as Behave<OBS>>::Space as ActionSpace>::Action;

/// The learner side of a lagged schedule that learns tick by tick: what a
/// device's learner task runs on each block the control loop queued, and
/// what [`Lagged`] runs on one thread. Implemented by
/// [`ActorCritic`](crate::algo::ActorCritic), [`Sac`](crate::algo::Sac)
/// and [`Td3`](crate::algo::Td3).
pub trait TickLearner<const OBS: usize>: Sized {
    /// What the control loop acts with.
    type Behaviour: Behave<OBS>;
    /// What the trainer is given per block.
    type Stats: Copy + core::fmt::Debug;

    /// Every byte zero, the configuration included (a `static` initialiser).
    const ZERO: Self;
    /// A behaviour with every byte zero (a `static` initialiser).
    const ZERO_BEHAVIOUR: Self::Behaviour;
    /// An action with every byte zero (a `static` queue's initialiser).
    const ZERO_ACTION: ActionOf<Self::Behaviour, OBS>;
    /// A block's statistics before its first tick.
    const NO_STATS: Self::Stats;

    /// Copies what the control loop acts with into `out`.
    fn publish(&self, out: &mut Self::Behaviour);

    /// Ticks learned from so far.
    fn ticks_learned(&self) -> u64;

    /// Learns from one tick (drawing from `rng` if the learner needs
    /// randomness), folds its statistics into the block's `stats`, and
    /// returns the gradient steps it made.
    ///
    /// # Errors
    /// The learner's refusal of the tick or of an update.
    fn ingest_tick<R: Rng + ?Sized>(
        &mut self,
        tick: &Tick<OBS, ActionOf<Self::Behaviour, OBS>>,
        rng: &mut R,
        stats: &mut Self::Stats,
    ) -> Result<u64, Error>;

    /// A block's statistics from its `ticks` ticks' fold.
    fn block_stats(stats: Self::Stats, ticks: usize) -> Self::Stats;
}

/// The schedule's start, for a learner kept apart from its control loop (a
/// device): the learner's [`init`](Learner::init) for `env` from `rng`,
/// then the control loop's own stream seeded from one draw of `rng` and
/// returned — what [`Lagged`]'s `init` does. The behaviour the control loop
/// first acts with is then [`publish`](TickLearner::publish)ed.
///
/// # Errors
/// As the learner's `init`; `rng` is then not drawn from for the stream.
pub fn init_lagged<L, E, R>(learner: &mut L, env: &E, rng: &mut R) -> Result<Xoshiro128pp, Error>
where
    L: Learner<E>,
    E: Env,
    R: Rng + ?Sized,
{
    learner.init(env, rng)?;
    Ok(Xoshiro128pp::seed_from_u64(rng.next_u64()))
}

/// A [`TickLearner`] run on the lagged schedule (see the [module](self)
/// docs) on one thread: each iteration acts a block of `BLOCK` ticks with
/// the *published* behaviour while — in the schedule's time — the learner
/// steps through the previous block, then publishes. The desktop reference
/// of a firmware whose control loop learns while it acts
/// ([`LaggedAc`](crate::agent::LaggedAc),
/// [`LaggedSac`](crate::agent::LaggedSac),
/// [`LaggedTd3`](crate::agent::LaggedTd3)).
///
/// Memory: the learner, the published behaviour (the control loop's copy)
/// and one block of [`Tick`]s (on a device, the queue between the two
/// rhythms).
pub struct Lagged<L: TickLearner<OBS>, const OBS: usize, const BLOCK: usize> {
    /// The learner.
    pub learner: L,
    /// What the control loop acts with (published after each block).
    pub published: L::Behaviour,
    /// The block acted since the last one learned from, awaiting its turn.
    pub pending: Pending<OBS, ActionOf<L::Behaviour, OBS>, BLOCK>,
    /// The control loop's RNG stream (actions, episode resets), seeded from
    /// the training stream by [`init`](Learner::init).
    pub acting_rng: Xoshiro128pp,
    /// Behaviours published so far.
    pub published_count: u64,
    /// Gradient steps of the last iteration (the trainer's update count;
    /// not saved in a checkpoint: the next iteration sets it).
    pub updates: u64,
}

impl<L: TickLearner<OBS>, const OBS: usize, const BLOCK: usize> Lagged<L, OBS, BLOCK> {
    const BLOCK_POSITIVE: () = assert!(BLOCK > 0, "Lagged: BLOCK must be at least 1 tick");

    /// The schedule around `learner` (`init` before training).
    pub const fn new(learner: L) -> Self {
        let () = Self::BLOCK_POSITIVE;
        Self {
            learner,
            published: L::ZERO_BEHAVIOUR,
            pending: Pending::new(L::ZERO_ACTION),
            acting_rng: Xoshiro128pp::UNSEEDED,
            published_count: 0,
            updates: 0,
        }
    }

    /// Every byte zero, the learner's configuration included.
    pub const ZERO: Self = Self::new(L::ZERO);

    /// The control side of one block: `BLOCK` ticks acted by the published
    /// behaviour into [`pending`](Self::pending), each told its index since
    /// the run began.
    fn act_block<E>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = <L::Behaviour as Behave<OBS>>::Space>,
    {
        self.pending.len = 0;
        let first = self.learner.ticks_learned();
        let mut on_episode = |e: Episode| on_episode(e);
        for (i, slot) in (0u64..).zip(self.pending.ticks.iter_mut()) {
            *slot = self.published.behave(
                first + i,
                env,
                cursor,
                &mut self.acting_rng,
                &mut on_episode,
            )?;
            self.pending.len += 1;
        }
        Ok(())
    }
}

impl<L: TickLearner<OBS> + Agent, const OBS: usize, const BLOCK: usize> Agent
    for Lagged<L, OBS, BLOCK>
{
    type Policy = L::Policy;
    type Stats = <L as TickLearner<OBS>>::Stats;

    /// Steps acted: those learned from plus the block awaiting its turn.
    fn steps(&self) -> u64 {
        self.learner.ticks_learned() + self.pending.len as u64
    }

    /// The gradient steps made through the last block.
    fn updates_per_iteration(&self) -> u64 {
        self.updates
    }

    /// The learner's deployable policy — after an iteration, the one
    /// published.
    fn export(&self, out: &mut L::Policy) {
        self.learner.export(out);
    }
}

impl<L, E, const OBS: usize, const BLOCK: usize> Learner<E> for Lagged<L, OBS, BLOCK>
where
    L: TickLearner<OBS> + Learner<E> + Controller<OBS, Action = ActionOf<L::Behaviour, OBS>>,
    E: Env<Obs = SVector<f32, OBS>, Space = <L::Behaviour as Behave<OBS>>::Space>,
{
    /// The learner's `init`, then the control loop's stream seeded from one
    /// draw of `rng` ([`init_lagged`]) and `θ₀` published.
    fn init<R: Rng + ?Sized>(&mut self, env: &E, rng: &mut R) -> Result<(), Error> {
        self.acting_rng = init_lagged(&mut self.learner, env, rng)?;
        self.learner.publish(&mut self.published);
        self.pending.len = 0;
        self.published_count = 0;
        self.updates = 0;
        Ok(())
    }

    /// One block of the schedule: the first iteration first acts block 0
    /// with `θ₀`; then the learner steps through the pending block (one
    /// [`ingest_tick`](TickLearner::ingest_tick) per tick, in order, drawing
    /// from `rng`) while the control loop acts the next one with the
    /// published behaviour, and the learner's is published for the block
    /// after. Returns the block's statistics
    /// ([`block_stats`](TickLearner::block_stats)).
    ///
    /// # Errors
    /// As [`TickLearner::ingest_tick`] and [`Behave::behave`]. The block's
    /// ticks before the refused one stay learned (each tick is learned in
    /// turn, the block is not transactional); the rest of the block is
    /// discarded and nothing is published. An error while acting discards
    /// the partial block (the next iteration acts anew).
    fn iterate<R: Rng + ?Sized>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<E::Obs>,
        rng: &mut R,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<Self::Stats, Error> {
        if self.pending.len != BLOCK {
            self.act_block(env, cursor, on_episode)?;
        }
        let (mut stats, mut updates) = (L::NO_STATS, 0);
        for tick in &self.pending.ticks {
            match self.learner.ingest_tick(tick, rng, &mut stats) {
                Ok(n) => updates += n,
                Err(e) => {
                    self.pending.len = 0;
                    return Err(e);
                }
            }
        }
        // The control loop acts block j with the behaviour published after
        // block j − 2 while the learner stepped through block j − 1.
        self.act_block(env, cursor, on_episode)?;
        self.learner.publish(&mut self.published);
        self.published_count += 1;
        self.updates = updates;
        Ok(L::block_stats(stats, BLOCK))
    }
}

impl<L, const OBS: usize, const BLOCK: usize> Controller<OBS> for Lagged<L, OBS, BLOCK>
where
    L: TickLearner<OBS> + Controller<OBS>,
{
    type Action = L::Action;

    /// The learner's deterministic action (what evaluation and the
    /// exported policy act with).
    fn act(&self, obs: &SVector<f32, OBS>) -> Result<L::Action, Error> {
        self.learner.act(obs)
    }
}

impl<L, const OBS: usize, const BLOCK: usize> core::fmt::Debug for Lagged<L, OBS, BLOCK>
where
    L: TickLearner<OBS> + core::fmt::Debug,
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Lagged")
            .field("learner", &self.learner)
            .field("pending", &self.pending.len)
            .field("published_count", &self.published_count)
            .field("updates", &self.updates)
            .finish_non_exhaustive()
    }
}
