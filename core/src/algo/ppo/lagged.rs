//! PPO with one rollout of policy lag: the schedule a device runs when its
//! control loop keeps acting while the learner updates.
//!
//! On a microcontroller the control loop (a timer interrupt at the plant's
//! rate) cannot wait for an update: a PPO update of a 256-step rollout takes
//! longer than a control period. So the two run side by side on the lagged
//! schedule of [`crate::algo::lagged`], a rollout for a block: rollout `j`
//! is acted by `θ_{j−1}`, published after update `j−2`, while update `j−1`
//! runs on rollout `j−1`.
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
//! The learner side is [`Ppo::ingest`] — the learner drains a rollout of
//! ticks: updates its observation statistics and normalises, evaluates its
//! critic (values are computed at learning time, so the control loop never
//! runs the critic), scales rewards, computes GAE — then the unchanged
//! [`Ppo::update`], then [`Ppo::export`] into the buffer the control loop
//! switches to at the next rollout boundary. The control side is
//! [`behave`](crate::algo::behave). [`LaggedPpo`] is
//! [`Lagged`] around [`Ppo`]: the one-thread reference a firmware's learned
//! weights are compared with bit for bit.

use rand_core::Rng;

use super::{Ppo, UpdateStats};
use crate::algo::buffer::Transition;
use crate::algo::lagged::{Lagged, LaggedLearner, Tick};
use crate::algo::{Actor, Critic};
use crate::error::{Error, check_finite};
use crate::policy::Policy;

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize>
    Ppo<A, C, OBS, N, CHUNK>
{
    /// The learner side: fills the rollout from `ticks` — a whole rollout of
    /// [`PpoConfig::rollout_len`](super::PpoConfig::rollout_len) ticks, in
    /// the order they were acted — as [`collect`](Self::collect) would from
    /// the same steps, except that the log-probabilities are the behaviour
    /// policy's (stored in the ticks) and the values are this critic's now.
    /// Then [`update`](Self::update) trains on it.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `n_envs` unless it is 1 or
    /// `noise_beta` unless it is 0 (for a Gaussian actor), or
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
        self.check_lagged()?;
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
pub type LaggedPpo<
    A,
    C,
    const OBS: usize,
    const N: usize,
    const CHUNK: usize = { super::DEFAULT_CHUNK },
> = Lagged<Ppo<A, C, OBS, N, CHUNK>, OBS, N>;

/// The learner side per rollout: [`Ppo::ingest`], then one
/// [`update`](Ppo::update). A block is a rollout of
/// [`rollout_len`](super::PpoConfig::rollout_len) ticks; the checkpoint
/// keeps the kind (9) `LaggedPpo` had before it ran on [`Lagged`].
impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize>
    LaggedLearner<OBS> for Ppo<A, C, OBS, N, CHUNK>
{
    type Behaviour = Policy<A, OBS>;
    type Stats = UpdateStats;

    const ZERO: Self = Ppo::ZERO;
    const ZERO_BEHAVIOUR: Policy<A, OBS> = Policy::ZERO;
    const ZERO_ACTION: A::Action = A::ZERO_ACTION;
    const LAGGED_KIND: u32 = 9;

    /// Coloured noise is refused for a Gaussian actor: the control loop
    /// draws independent noise ([`behave`](crate::algo::behave)).
    fn check_lagged(&self) -> Result<(), Error> {
        let beta = self.config.noise_beta;
        if A::NOISE_DIM > 0 && (beta.value(0.0) != 0.0 || beta.value(1.0) != 0.0) {
            return Err(Error::config(
                "noise_beta",
                "must be 0 for the lagged schedule (its control loop draws independent noise)",
            ));
        }
        Ok(())
    }

    fn publish(&self, out: &mut Policy<A, OBS>) {
        self.export(out);
    }

    fn ticks_learned(&self) -> u64 {
        self.steps
    }

    /// The configured rollout length (at most the capacity `N`).
    fn block_len(&self, _capacity: usize) -> usize {
        self.config.rollout_len(N)
    }

    /// [`ingest`](Ppo::ingest), then [`update`](Ppo::update) drawing the
    /// minibatch shuffles from `rng`: one update (the count returned). A
    /// refused ingest changes nothing; a refused update leaves what
    /// [`Ppo::update`] says it leaves (the minibatch steps before the
    /// refused one, the rollout consumed).
    fn learn_block<R: Rng + ?Sized>(
        &mut self,
        ticks: &[Tick<OBS, A::Action>],
        rng: &mut R,
    ) -> Result<(UpdateStats, u64), Error> {
        self.ingest(ticks)?;
        Ok((self.update(rng)?, 1))
    }
}

#[cfg(test)]
mod tests;
