//! PPO with one rollout of policy lag: the schedule a device runs when its
//! control loop keeps acting while the learner updates.
//!
//! On a microcontroller the control loop (a timer interrupt at the plant's
//! rate) cannot wait for an update: a PPO update of a 256-step rollout takes
//! longer than a control period. So the two run side by side — the control
//! loop acts with the last *published* policy and hands every transition to
//! the learner; the learner, in the background, updates on the previous
//! rollout and publishes its result at a rollout boundary. The schedule,
//! fixed and independent of timing:
//!
//! | rollout | acted by | collected while |
//! |---|---|---|
//! | 0 | `θ₀` (the initial policy) | nothing runs |
//! | 1 | `θ₀` | update 0 runs on rollout 0 → `θ₁` |
//! | j ≥ 1 | `θ_{j−1}`, published after update j−2 | update j−1 runs on rollout j−1 → `θ_j` |
//!
//! Update `j` starts from the learner's `θ_j` but trains on data drawn by
//! `θ_{j−1}` — one update of lag. PPO's surrogate is already an importance
//! ratio `π_θ(a|s) / π_old(a|s)` over *stored* log-probabilities; storing the
//! behaviour policy's `log μ(a|s)` at acting time makes `π_old = μ`, so the
//! ratio corrects for the lag and its clip `1 ± ε` bounds the step from the
//! policy that acted (Schulman et al. 2017, eq. 7; the "decoupled" view of
//! Hilton et al. 2022, *Batch size-invariance for policy optimization*, where
//! the behaviour and the proximal policy differ).
//!
//! The pieces split along the two rhythms, so a firmware runs exactly the
//! operations the desktop runs, in the same order on each side:
//! - **control side**: [`behave`] — normalise the raw observation with the
//!   published policy's frozen statistics, sample an action with the
//!   behaviour log-probability from the control loop's own RNG stream, step
//!   the plant, and return a [`Tick`];
//! - **learner side**: [`Ppo::ingest`] — the learner drains a rollout of
//!   ticks: updates its observation statistics and normalises, evaluates its
//!   critic (values are computed at learning time, so the control loop never
//!   runs the critic), scales rewards, computes GAE; then the unchanged
//!   [`Ppo::update`], then [`Ppo::export`] into the buffer the control loop
//!   switches to at the next rollout boundary.
//!
//! The two sides share no RNG: acting draws (and episode resets) come from
//! the control loop's stream, minibatch shuffles from the learner's, so the
//! interleaving of the two in time changes no bit. [`LaggedPpo`] runs the
//! schedule on one thread — collect rollout `j` with the published policy,
//! update on rollout `j−1`, publish — and is the desktop reference a
//! firmware's learned weights are compared with bit for bit.

use nalgebra::SVector;
use rand_core::{Rng, SeedableRng};

use super::{Ppo, UpdateStats};
use crate::algo::buffer::Transition;
use crate::algo::{Actor, Critic, Cursor, Episode};
use crate::env::{ActionSpace, Env, Step};
use crate::error::{Error, check_finite};
use crate::policy::{Controller, Policy};
use crate::rng::Xoshiro128pp;

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

/// The rollout acted since the last update, awaiting its own: on a device,
/// what the queue between the two rhythms holds.
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

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize>
    Ppo<A, C, OBS, N, CHUNK>
{
    /// The schedule's start, for a learner kept apart from its control loop
    /// (a device): [`init`](Ppo::init) for `env` from `rng`, then the
    /// control loop's own stream (actions, episode resets) seeded from one
    /// draw of `rng` and returned — exactly what
    /// [`LaggedPpo`]'s `init` does (it calls this), so a device's learner
    /// and control loop start where the one-thread reference starts. The
    /// policy `θ₀` the control loop first acts with is then
    /// [`export`](Ppo::export)ed.
    ///
    /// # Errors
    /// As [`init`](Ppo::init); `rng` is then not drawn from for the stream.
    pub fn init_lagged<E, R>(&mut self, env: &E, rng: &mut R) -> Result<Xoshiro128pp, Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.init(env, rng)?;
        Ok(Xoshiro128pp::seed_from_u64(rng.next_u64()))
    }

    /// The learner side: fills the rollout from `ticks` — a whole rollout of
    /// [`PpoConfig::rollout_len`](super::PpoConfig::rollout_len) ticks, in
    /// the order they were acted — as [`collect`](Self::collect) would from
    /// the same steps, except that the log-probabilities are the behaviour
    /// policy's (stored in the ticks) and the values are this critic's now.
    /// Then [`update`](Self::update) trains on it.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `n_envs` unless it is 1, or
    /// [`Error::RolloutIncomplete`] unless `ticks` holds exactly one
    /// rollout; [`Error::NonFinite`] for a non-finite observation, reward or
    /// value; [`Error::ValueOverflow`] as for `collect`. A refused ingest
    /// changes nothing in the agent (the normalisers and the discounted
    /// return are restored, the partial rollout is discarded).
    pub fn ingest(&mut self, ticks: &[Tick<OBS, A::Action>]) -> Result<(), Error> {
        if self.config.n_envs != 1 {
            return Err(Error::config(
                "n_envs",
                "must be 1 for the lagged schedule (one control loop)",
            ));
        }
        let Some(last) = ticks.last() else {
            return Err(Error::RolloutIncomplete);
        };
        if ticks.len() != self.config.rollout_len(N) {
            return Err(Error::RolloutIncomplete);
        }
        let saved = (
            self.obs_norm.clone(),
            self.return_norm.clone(),
            self.discounted_return,
        );
        let result = self
            .ingest_ticks(ticks)
            .and_then(|()| self.finish_rollout(core::iter::once(&last.next_obs)));
        if result.is_err() {
            (self.obs_norm, self.return_norm, self.discounted_return) = saved;
            self.rollout.clear();
        }
        result
    }

    /// The per-tick half of [`ingest`](Self::ingest).
    fn ingest_ticks(&mut self, ticks: &[Tick<OBS, A::Action>]) -> Result<(), Error> {
        self.rollout.clear();
        for tick in ticks {
            let obs = if self.config.normalize_obs {
                self.obs_norm.update_normalize(&tick.obs)?
            } else {
                self.observe(&tick.obs)?
            };
            let value = self.train.params.critic.value(&obs);
            check_finite(value)?;
            check_finite(tick.log_prob)?;
            check_finite(tick.reward)?;
            let done = tick.terminated || tick.truncated;
            let reward = Self::scale_reward(
                &self.config,
                &mut self.return_norm,
                &mut self.discounted_return,
                tick.reward,
                done,
            )?;
            let final_value = if tick.truncated {
                self.train
                    .params
                    .critic
                    .value(&self.observe(&tick.next_obs)?)
            } else {
                0.0
            };
            self.rollout.push(Transition {
                obs,
                action: tick.action,
                log_prob: tick.log_prob,
                value,
                reward,
                terminated: tick.terminated,
                truncated: tick.truncated,
                final_value,
            })?;
        }
        Ok(())
    }
}

/// [`Ppo`] run on the lagged schedule (see the [module](self) docs) on one
/// thread: each iteration collects a rollout with the *published* policy
/// while — in the schedule's time — the learner updates on the previous
/// rollout, then publishes. The desktop reference of a firmware whose
/// control loop learns while it acts (`microrl train --lag 1`).
///
/// Memory: the agent, the published [`Policy`] (the control loop's copy)
/// and one rollout of [`Tick`]s (on a device, the queue between the two
/// rhythms).
pub struct LaggedPpo<
    A: Actor<OBS>,
    C: Critic<OBS>,
    const OBS: usize,
    const N: usize,
    const CHUNK: usize = { super::DEFAULT_CHUNK },
> {
    /// The learner.
    pub ppo: Ppo<A, C, OBS, N, CHUNK>,
    /// The policy the control loop acts with (published after each update).
    pub published: Policy<A, OBS>,
    /// The rollout acted since the last update, awaiting its own.
    pub pending: Pending<OBS, A::Action, N>,
    /// The control loop's RNG stream (actions, episode resets), seeded from
    /// the training stream by [`init`](crate::train::Learner::init).
    pub acting_rng: Xoshiro128pp,
    /// Policies published so far.
    pub published_count: u64,
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize>
    LaggedPpo<A, C, OBS, N, CHUNK>
{
    /// An agent with zeroed weights and `config`; `init` before training.
    pub const fn new(config: super::PpoConfig) -> Self {
        Self {
            ppo: Ppo::new(config),
            published: Policy::ZERO,
            pending: Pending::new(A::ZERO_ACTION),
            acting_rng: Xoshiro128pp::UNSEEDED,
            published_count: 0,
        }
    }

    /// Every byte zero, the configuration included (see [`Ppo::ZERO`]).
    pub const ZERO: Self = Self::new(super::PpoConfig::ZERO);

    /// The control side of one rollout: `len` ticks acted by the published
    /// policy into [`pending`](Self::pending).
    fn act_rollout<E>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
    {
        let len = self.ppo.config.rollout_len(N);
        self.pending.len = 0;
        let mut on_episode = |e: Episode| on_episode(e);
        for slot in &mut self.pending.ticks[..len] {
            *slot = behave(
                &self.published,
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

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize>
    crate::train::Agent for LaggedPpo<A, C, OBS, N, CHUNK>
{
    type Policy = Policy<A, OBS>;
    type Stats = UpdateStats;

    /// Steps acted: those trained on plus the rollout awaiting its update.
    fn steps(&self) -> u64 {
        self.ppo.steps + self.pending.len as u64
    }

    fn updates_per_iteration(&self) -> u64 {
        1
    }

    /// The learner's latest policy — after an iteration, the published one.
    fn export(&self, out: &mut Policy<A, OBS>) {
        self.ppo.export(out);
    }
}

impl<A, C, E, const OBS: usize, const N: usize, const CHUNK: usize> crate::train::Learner<E>
    for LaggedPpo<A, C, OBS, N, CHUNK>
where
    A: Actor<OBS>,
    C: Critic<OBS>,
    E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
{
    /// [`Ppo::init`], then publishes `θ₀` and seeds the control loop's
    /// stream from one draw of `rng`.
    fn init<R: Rng + ?Sized>(&mut self, env: &E, rng: &mut R) -> Result<(), Error> {
        self.acting_rng = self.ppo.init_lagged(env, rng)?;
        self.ppo.export(&mut self.published);
        self.pending.len = 0;
        self.published_count = 0;
        Ok(())
    }

    /// One update of the schedule: the first iteration first acts rollout 0
    /// with `θ₀`; then the learner takes the pending rollout, the control
    /// loop acts the next one with the published policy, the update runs,
    /// and its policy is published for the rollout after.
    ///
    /// # Errors
    /// As [`Ppo::ingest`], [`Ppo::update`] and [`behave`]. On an error the
    /// weights are unchanged; an error while acting discards the partial
    /// rollout (the next iteration acts anew).
    fn iterate<R: Rng + ?Sized>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<E::Obs>,
        rng: &mut R,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<UpdateStats, Error> {
        let len = self.ppo.config.rollout_len(N);
        if self.pending.len != len {
            self.act_rollout(env, cursor, on_episode)?;
        }
        self.ppo.ingest(self.pending.ticks())?;
        // From here the learner holds rollout j−1; the control loop acts
        // rollout j with the published policy meanwhile.
        self.act_rollout(env, cursor, on_episode)?;
        let stats = self.ppo.update(rng)?;
        self.ppo.export(&mut self.published);
        self.published_count += 1;
        Ok(stats)
    }
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize>
    Controller<OBS> for LaggedPpo<A, C, OBS, N, CHUNK>
{
    type Action = A::Action;

    /// The learner's policy, deterministic (what evaluation and the
    /// exported policy act with).
    fn act(&self, obs: &SVector<f32, OBS>) -> Result<A::Action, Error> {
        self.ppo.act(obs)
    }
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize>
    core::fmt::Debug for LaggedPpo<A, C, OBS, N, CHUNK>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LaggedPpo")
            .field("ppo", &self.ppo)
            .field("pending", &self.pending.len)
            .field("published_count", &self.published_count)
            .finish_non_exhaustive()
    }
}

mod persist;
pub(crate) use persist::TickAction;
#[cfg(test)]
mod tests;
