//! Learning while controlling: the one schedule every lagged learner runs
//! — PPO with a rollout for a block, the online actor-critic, SAC and TD3
//! with a block of control periods — and its one-thread reference
//! [`Lagged`].
//!
//! On a device the control loop (a timer interrupt at the plant's rate)
//! cannot wait for the learner, so the two run side by side. The control
//! loop acts every tick with the last *published* behaviour ([`Behave`]:
//! an on-policy learner's [`Policy`], an off-policy learner's
//! [`Explorer`](crate::algo::offpolicy::Explorer)) and hands the learner a
//! [`Tick`]; the learner ([`LaggedLearner`]) takes the ticks of a whole
//! block, learns from them, and publishes at the next block boundary. The
//! schedule, fixed and independent of timing:
//!
//! | block | acted by | learned from while |
//! |---|---|---|
//! | 0 | `θ₀` (the initial behaviour) | nothing runs |
//! | 1 | `θ₀` | the learner learns from block 0 → `θ₁` |
//! | j ≥ 1 | `θ_{j−1}`, published after block j−2 | the learner learns from block j−1 → `θ_j` |
//!
//! How each learner treats data drawn by a behaviour one block old is its
//! own: PPO's clipped ratio is taken against the stored behaviour
//! log-probabilities ([`crate::algo::ppo::lagged`]); the online
//! actor-critic weights its TD step by a truncated importance ratio
//! ([`crate::algo::ac::lagged`]); SAC and TD3 need no correction, their
//! replay buffer holds off-policy data by design
//! ([`crate::algo::offpolicy`]). A learner that learns tick by tick
//! ([`TickLearner`]: all but PPO, whose update needs the whole rollout)
//! lets a device's learner task take each tick as it is queued.
//!
//! The pieces split along the two rhythms, so a firmware runs exactly the
//! operations the desktop runs, in the same order on each side: the
//! control side is [`Behave::behave`]; the learner side is
//! [`LaggedLearner::learn_block`] (or [`TickLearner::ingest_tick`] per
//! tick) and [`LaggedLearner::publish`].
//!
//! **Random streams.** The control loop draws its actions and episode
//! resets from its own stream, seeded from one draw of the training stream
//! at `init` ([`init_lagged`]); the learner draws (minibatch shuffles and
//! samples) from the training stream. The interleaving of the two in time
//! changes no bit, so a firmware's learned weights equal [`Lagged`]'s bit
//! for bit (`firmware-example`'s `learn-rt` and `rt::lagged`).

mod persist;
#[cfg(test)]
pub(crate) use persist::TickAction;
#[cfg(test)]
mod tests;

use nalgebra::SVector;
use rand_core::{Rng, SeedableRng};

use super::{Actor, Cursor, Episode};
use crate::env::{ActionSpace, Env, Step};
use crate::error::{Error, check_finite};
use crate::policy::{Controller, Policy};
use crate::rng::Xoshiro128pp;
use crate::train::{Agent, Learner};

/// One control tick as the control loop hands it to the learner: the raw
/// observation acted on, the action drawn (the raw sample, before the
/// actuator clip), its behaviour log-probability `log μ(a|s)`, and the step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tick<const OBS: usize, A> {
    /// The raw (unnormalised) observation the action was drawn for.
    pub obs: SVector<f32, OBS>,
    /// The action drawn (unclipped, as the rollout stores it).
    pub action: A,
    /// `log μ(a|s)` under the policy that acted.
    pub log_prob: f32,
    /// The plant's reward.
    pub reward: f32,
    /// The episode ended in a terminal state.
    pub terminated: bool,
    /// The episode was cut by a time limit.
    pub truncated: bool,
    /// The observation after the step (before any reset): bootstraps a
    /// truncated episode, and the rollout's last tick's bootstraps the rest.
    pub next_obs: SVector<f32, OBS>,
}

impl<const OBS: usize, A: Copy> Tick<OBS, A> {
    /// The tick of `action` (drawn with `log_prob`) taken in `obs`, and
    /// the plant's `step`.
    pub fn acted(
        obs: SVector<f32, OBS>,
        action: A,
        log_prob: f32,
        step: &Step<SVector<f32, OBS>>,
    ) -> Self {
        Self {
            obs,
            action,
            log_prob,
            reward: step.reward,
            terminated: step.terminated,
            truncated: step.truncated,
            next_obs: step.obs,
        }
    }

    /// A zeroed tick with `action` (storage initialiser, e.g. for a `static` queue).
    pub const fn zero(action: A) -> Self {
        let zero = SVector::from_array_storage(nalgebra::ArrayStorage([[0.0; OBS]; 1]));
        Self {
            obs: zero,
            action,
            log_prob: 0.0,
            reward: 0.0,
            terminated: false,
            truncated: false,
            next_obs: zero,
        }
    }
}

/// The block acted since the last one learned from, awaiting its turn: on
/// a device, what the queue between the two rhythms holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Pending<const OBS: usize, A, const N: usize> {
    /// The ticks, in the order they were acted.
    pub ticks: [Tick<OBS, A>; N],
    /// How many ticks are filled, from the first.
    pub len: usize,
}

impl<const OBS: usize, A: Copy, const N: usize> Pending<OBS, A, N> {
    /// Empty, every slot a zeroed tick with `action`.
    pub const fn new(action: A) -> Self {
        Self {
            ticks: [Tick::zero(action); N],
            len: 0,
        }
    }

    /// The filled ticks.
    pub fn ticks(&self) -> &[Tick<OBS, A>] {
        &self.ticks[..self.len.min(N)]
    }
}

/// The control side of one tick: `policy` (the published one) draws an
/// action for `cursor.obs` from `rng` (the control loop's stream), the
/// plant `env` takes its actuator command, and `cursor` advances (resetting
/// `env` from `rng` at an episode's end, reported to `on_episode`).
///
/// # Errors
/// [`Error::NonFinite`] for a non-finite observation or network output, and
/// the environment's errors; the cursor is unchanged then.
pub fn behave<A, E, R, const OBS: usize>(
    policy: &Policy<A, OBS>,
    env: &mut E,
    cursor: &mut Cursor<SVector<f32, OBS>>,
    rng: &mut R,
    on_episode: &mut impl FnMut(Episode),
) -> Result<Tick<OBS, A::Action>, Error>
where
    A: Actor<OBS>,
    E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
    R: Rng + ?Sized,
{
    let obs = cursor.obs;
    let input = policy.obs_norm.normalize(&obs)?;
    let (action, log_prob) = policy.actor.sample(&input, rng)?;
    check_finite(log_prob)?;
    let step = cursor.advance(env, policy.space.command(&action), rng, on_episode)?;
    Ok(Tick::acted(obs, action, log_prob, &step))
}

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

/// The learner side of a lagged schedule: what a device's learner task
/// runs on each block the control loop queued, and what [`Lagged`] runs on
/// one thread. Implemented by [`Ppo`](crate::algo::Ppo) (a block is a
/// rollout, learned by one update) and by every [`TickLearner`].
pub trait LaggedLearner<const OBS: usize>: Sized {
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
    /// The checkpoint kind of [`Lagged`] around this learner (its layout is
    /// the same for every learner; the kind tells them apart).
    const LAGGED_KIND: u32 = 10;

    /// Refuses a configuration the control loop cannot honour, before
    /// [`Lagged`]'s `init` changes anything. The default accepts.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the setting.
    fn check_lagged(&self) -> Result<(), Error> {
        Ok(())
    }

    /// Copies what the control loop acts with into `out`.
    fn publish(&self, out: &mut Self::Behaviour);

    /// Ticks learned from so far.
    fn ticks_learned(&self) -> u64;

    /// Ticks in a block, given the schedule's capacity of `capacity` ticks
    /// (all of it, unless the learner's configuration says fewer;
    /// [`Lagged`] acts between 1 and `capacity` whatever this says).
    fn block_len(&self, capacity: usize) -> usize {
        capacity
    }

    /// Learns from one block of ticks, in the order they were acted (drawing
    /// from `rng` if the learner needs randomness); returns the block's
    /// statistics and the updates it made (the trainer's count: a tick
    /// learner's gradient steps, one per PPO update).
    ///
    /// # Errors
    /// The learner's refusal of the block, a tick or an update; what a
    /// refusal leaves learned is the learner's to say.
    fn learn_block<R: Rng + ?Sized>(
        &mut self,
        ticks: &[Tick<OBS, ActionOf<Self::Behaviour, OBS>>],
        rng: &mut R,
    ) -> Result<(Self::Stats, u64), Error>;
}

/// A [`LaggedLearner`] that learns tick by tick, so that a device's learner
/// task takes each tick as the control loop queues it. Implemented by
/// [`ActorCritic`](crate::algo::ActorCritic), [`Sac`](crate::algo::Sac)
/// and [`Td3`](crate::algo::Td3); their
/// [`learn_block`](LaggedLearner::learn_block) is [`learn_ticks`].
pub trait TickLearner<const OBS: usize>: LaggedLearner<OBS> {
    /// A block's statistics before its first tick.
    const NO_STATS: Self::Stats;

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

/// A [`TickLearner`]'s [`learn_block`](LaggedLearner::learn_block): one
/// [`ingest_tick`](TickLearner::ingest_tick) per tick, in order, then the
/// block's [`block_stats`](TickLearner::block_stats) and the gradient steps
/// summed.
///
/// # Errors
/// The first tick's refusal; the ticks before it stay learned (each tick is
/// learned in turn, a block is not transactional).
pub fn learn_ticks<L, R, const OBS: usize>(
    learner: &mut L,
    ticks: &[Tick<OBS, ActionOf<L::Behaviour, OBS>>],
    rng: &mut R,
) -> Result<(L::Stats, u64), Error>
where
    L: TickLearner<OBS>,
    R: Rng + ?Sized,
{
    let (mut stats, mut updates) = (L::NO_STATS, 0);
    for tick in ticks {
        updates += learner.ingest_tick(tick, rng, &mut stats)?;
    }
    Ok((L::block_stats(stats, ticks.len()), updates))
}

/// The schedule's start, for a learner kept apart from its control loop (a
/// device): the learner's [`init`](Learner::init) for `env` from `rng`,
/// then the control loop's own stream seeded from one draw of `rng` and
/// returned — what [`Lagged`]'s `init` does. The behaviour the control loop
/// first acts with is then [`publish`](LaggedLearner::publish)ed.
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

/// A [`LaggedLearner`] run on the lagged schedule (see the [module](self)
/// docs) on one thread: each iteration acts a block of ticks with the
/// *published* behaviour while — in the schedule's time — the learner
/// learns from the previous block, then publishes. The desktop reference
/// of a firmware whose control loop learns while it acts
/// ([`LaggedPpo`](crate::agent::LaggedPpo),
/// [`LaggedAc`](crate::agent::LaggedAc),
/// [`LaggedSac`](crate::agent::LaggedSac),
/// [`LaggedTd3`](crate::agent::LaggedTd3); `microrl train --lag 1`).
///
/// `BLOCK` is the capacity of a block; the learner's
/// [`block_len`](LaggedLearner::block_len) says how many ticks of it a
/// block fills (PPO: its configured rollout length).
///
/// Memory: the learner, the published behaviour (the control loop's copy)
/// and one block of [`Tick`]s (on a device, the queue between the two
/// rhythms).
pub struct Lagged<L: LaggedLearner<OBS>, const OBS: usize, const BLOCK: usize> {
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
    /// Updates of the last iteration (the trainer's update count: gradient
    /// steps of a tick learner, one per PPO update; not saved in a
    /// checkpoint: the next iteration sets it).
    pub updates: u64,
}

impl<L: LaggedLearner<OBS>, const OBS: usize, const BLOCK: usize> Lagged<L, OBS, BLOCK> {
    pub(crate) const BLOCK_POSITIVE: () =
        assert!(BLOCK > 0, "Lagged: BLOCK must be at least 1 tick");

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

    /// Ticks in a block: the learner's [`block_len`](LaggedLearner::block_len)
    /// of the capacity `BLOCK`, between 1 (every iteration acts) and `BLOCK`.
    fn block_len(&self) -> usize {
        self.learner.block_len(BLOCK).clamp(1, BLOCK)
    }

    /// The control side of one block: a block of ticks acted by the
    /// published behaviour into [`pending`](Self::pending), each told its
    /// index since the run began.
    pub(crate) fn act_block<E>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = <L::Behaviour as Behave<OBS>>::Space>,
    {
        let len = self.block_len();
        self.pending.len = 0;
        let first = self.learner.ticks_learned();
        let mut on_episode = |e: Episode| on_episode(e);
        for (i, slot) in (0u64..).zip(self.pending.ticks[..len].iter_mut()) {
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

impl<L: LaggedLearner<OBS> + Agent, const OBS: usize, const BLOCK: usize> Agent
    for Lagged<L, OBS, BLOCK>
{
    type Policy = L::Policy;
    type Stats = <L as LaggedLearner<OBS>>::Stats;

    /// Steps acted: those learned from plus the block awaiting its turn.
    fn steps(&self) -> u64 {
        self.learner.ticks_learned() + self.pending.len as u64
    }

    /// The updates made through the last block.
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
    L: LaggedLearner<OBS> + Learner<E> + Controller<OBS, Action = ActionOf<L::Behaviour, OBS>>,
    E: Env<Obs = SVector<f32, OBS>, Space = <L::Behaviour as Behave<OBS>>::Space>,
{
    /// The learner's `init`, then the control loop's stream seeded from one
    /// draw of `rng` ([`init_lagged`]) and `θ₀` published — unless the
    /// learner refuses the schedule ([`check_lagged`](LaggedLearner::check_lagged)).
    fn init<R: Rng + ?Sized>(&mut self, env: &E, rng: &mut R) -> Result<(), Error> {
        self.learner.check_lagged()?;
        self.acting_rng = init_lagged(&mut self.learner, env, rng)?;
        self.learner.publish(&mut self.published);
        self.pending.len = 0;
        self.published_count = 0;
        self.updates = 0;
        Ok(())
    }

    /// One block of the schedule: the first iteration first acts block 0
    /// with `θ₀`; then the learner learns from the pending block
    /// ([`learn_block`](LaggedLearner::learn_block), drawing from `rng`)
    /// while the control loop acts the next one with the published
    /// behaviour, and the learner's is published for the block after.
    /// Returns the block's statistics.
    ///
    /// # Errors
    /// As [`LaggedLearner::learn_block`] and [`Behave::behave`]. A refused
    /// block is discarded (its steps no longer count) and nothing is
    /// published; what the learner keeps of it is its own to say (PPO: a
    /// refused ingest nothing, a refused update as [`Ppo::update`](crate::algo::Ppo::update);
    /// a [`TickLearner`]: the ticks before the refused one). An error while
    /// acting the next block discards the partial block, and the learner's
    /// behaviour is still published (the next iteration acts anew with it).
    fn iterate<R: Rng + ?Sized>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<E::Obs>,
        rng: &mut R,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<Self::Stats, Error> {
        if self.pending.len != self.block_len() {
            self.act_block(env, cursor, on_episode)?;
        }
        let (stats, updates) = match self.learner.learn_block(self.pending.ticks(), rng) {
            Ok(learned) => learned,
            Err(e) => {
                self.pending.len = 0;
                return Err(e);
            }
        };
        // The control loop acts block j with the behaviour published after
        // block j − 2 while the learner learned from block j − 1. (The two
        // draw from separate streams, so acting after learning changes no
        // bit.)
        let acted = self.act_block(env, cursor, on_episode);
        self.learner.publish(&mut self.published);
        self.published_count += 1;
        self.updates = updates;
        acted.map(|()| stats)
    }
}

impl<L, const OBS: usize, const BLOCK: usize> Controller<OBS> for Lagged<L, OBS, BLOCK>
where
    L: LaggedLearner<OBS> + Controller<OBS>,
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
    L: LaggedLearner<OBS> + core::fmt::Debug,
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
