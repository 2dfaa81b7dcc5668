//! Rollout collection: one environment or `n_envs` copies side by side,
//! observations normalised and rewards scaled on the way in, then GAE.

use nalgebra::SVector;
use rand_core::Rng;

use super::{Ppo, PpoConfig};
use crate::algo::Critic;
use crate::algo::buffer::Transition;
use crate::algo::{Actor, Cursor, Episode};
use crate::env::{ActionSpace, Env};
use crate::error::{Error, check_finite};
use crate::normalize::RunningNorm;
use crate::policy::ColouredNoise;

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize>
    Ppo<A, C, OBS, N, CHUNK>
{
    /// The observation as the networks see it, without updating statistics
    /// (the identity while the normaliser is empty, e.g. `normalize_obs = false`).
    pub(super) fn observe(&self, obs: &SVector<f32, OBS>) -> Result<SVector<f32, OBS>, Error> {
        self.obs_norm.normalize(obs)
    }

    /// Reward scaling when `normalize_reward` is set: see
    /// [`normalize::scale_reward`](crate::normalize::scale_reward), with the
    /// discounted return `G` of the environment copy that paid `r`.
    pub(super) fn scale_reward(
        config: &PpoConfig,
        return_norm: &mut RunningNorm<1>,
        discounted_return: &mut f32,
        reward: f32,
        done: bool,
    ) -> Result<f32, Error> {
        if !config.normalize_reward {
            return Ok(reward);
        }
        crate::normalize::scale_reward(
            config.gamma,
            return_norm,
            discounted_return,
            reward,
            done,
            config.scale_free_returns,
        )
    }

    /// Collects a rollout of [`PpoConfig::rollout_len`]`(N)` steps (all `N`
    /// by default) from `env`, continuing from `cursor`, then computes
    /// advantages and returns. `on_episode` hears about every finished
    /// episode. (With `n_envs > 1`, see [`collect_envs`](Self::collect_envs).)
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `n_envs` unless it is 1 (before
    /// anything changes); [`Error::NonFinite`] for a non-finite observation,
    /// reward or network output; the environment's own errors. A refused
    /// collect changes nothing in the agent: the weights are never touched,
    /// the normalisers and the discounted returns (with copies, every
    /// cursor's) are restored and the partial rollout is discarded (so
    /// `update` then refuses with [`Error::RolloutIncomplete`]).
    pub fn collect<E, R>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        on_episode: impl FnMut(Episode),
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.collect_until(env, cursor, rng, on_episode, false, |_, _, _| Ok(0.0))
    }

    /// Collects a rollout from `n_envs` environment copies side by side
    /// (SB3's vectorised collection): `n_steps` rounds, each stepping
    /// `envs[0], …, envs[n_envs − 1]` once in order, each continuing from its
    /// own cursor in `cursors`. The rollout is stored step-major —
    /// transition `t·n_envs + e` is step `t` of copy `e` — and GAE runs per
    /// copy along its own steps, bootstrapping each from its own last
    /// observation ([`gae_strided`](crate::algo::gae::gae_strided)). Copies beyond
    /// `n_envs` are not touched. With `n_envs = 1` this is
    /// [`collect`](Self::collect), bit for bit.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `n_envs` when fewer than `n_envs`
    /// copies or cursors are given, or `n_steps` when the rollout exceeds
    /// `N` (before anything changes); otherwise as
    /// [`collect`](Self::collect), with the same guarantees.
    pub fn collect_envs<E, R>(
        &mut self,
        envs: &mut [E],
        cursors: &mut [Cursor<SVector<f32, OBS>>],
        rng: &mut R,
        on_episode: impl FnMut(Episode),
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.collect_transaction(envs, cursors, rng, on_episode, false, |_, _, _| Ok(0.0))
    }

    /// [`collect`](Self::collect) with a per-step reward penalty: before
    /// each step, `penalty(raw_obs, action, log_prob)` is given the raw
    /// observation, the sampled action and its log-probability, and its
    /// result is subtracted from the plant's reward (before reward scaling).
    /// Episode returns reported to `on_episode` stay the plant's.
    ///
    /// This is how [`Anchored`](crate::algo::Anchored) penalises the divergence
    /// from a reference policy, `β·(log π(a|s) − log π_ref(a|s))`.
    ///
    /// # Errors
    /// As [`collect`](Self::collect), and the penalty's own error (raised
    /// before the step is taken), with the same guarantees.
    pub fn collect_shaped<E, R>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        on_episode: impl FnMut(Episode),
        penalty: impl FnMut(&SVector<f32, OBS>, &A::Action, f32) -> Result<f32, Error>,
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.collect_until(env, cursor, rng, on_episode, false, penalty)
    }

    /// [`collect`](Self::collect), optionally stopping early at the end of
    /// the first episode (REINFORCE's episode-by-episode updates).
    ///
    /// Transactional for the agent: on an error the observation and return
    /// statistics and the discounted returns are restored and the partial
    /// rollout is discarded, so the agent is as before the call (the
    /// environment and the rest of `cursor` have moved on — they follow the
    /// plant).
    pub(crate) fn collect_until<E, R>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        on_episode: impl FnMut(Episode),
        stop_at_episode_end: bool,
        penalty: impl FnMut(&SVector<f32, OBS>, &A::Action, f32) -> Result<f32, Error>,
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        if self.config.n_envs != 1 {
            return Err(Error::config(
                "n_envs",
                "must be 1 to collect from one environment (collect_envs, Trainer::run)",
            ));
        }
        self.collect_transaction(
            core::slice::from_mut(env),
            core::slice::from_mut(cursor),
            rng,
            on_episode,
            stop_at_episode_end,
            penalty,
        )
    }

    /// The shape checks, then [`collect_rollout`](Self::collect_rollout)
    /// with the agent restored on error (see
    /// [`collect_until`](Self::collect_until)).
    fn collect_transaction<E, R>(
        &mut self,
        envs: &mut [E],
        cursors: &mut [Cursor<SVector<f32, OBS>>],
        rng: &mut R,
        on_episode: impl FnMut(Episode),
        stop_at_episode_end: bool,
        penalty: impl FnMut(&SVector<f32, OBS>, &A::Action, f32) -> Result<f32, Error>,
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        let n_envs = usize::from(self.config.n_envs);
        if n_envs == 0 || envs.len() < n_envs || cursors.len() < n_envs {
            return Err(Error::config(
                "n_envs",
                "must be > 0 and at most the environment copies given",
            ));
        }
        if self.config.rollout_len(N) > N {
            return Err(Error::config(
                "n_steps",
                "n_envs × n_steps must not exceed the rollout capacity N",
            ));
        }
        let saved = (
            self.obs_norm.clone(),
            self.return_norm.clone(),
            self.discounted_return,
            self.noise,
        );
        // The copies' discounted returns (n_envs > 1) are saved in the
        // rollout's value targets, which `collect_rollout` writes only after
        // its last fallible step: copy `e`'s in `returns[e]` (every copy
        // stepped has `e` < the rollout length ≤ `N`).
        for (saved, cursor) in self.rollout.returns.iter_mut().zip(&cursors[..n_envs]) {
            *saved = cursor.discounted_return;
        }
        let result = self.collect_rollout(
            &mut envs[..n_envs],
            &mut cursors[..n_envs],
            rng,
            on_episode,
            stop_at_episode_end,
            penalty,
        );
        if result.is_err() {
            (
                self.obs_norm,
                self.return_norm,
                self.discounted_return,
                self.noise,
            ) = saved;
            for (cursor, &saved) in cursors[..n_envs].iter_mut().zip(&self.rollout.returns) {
                cursor.discounted_return = saved;
            }
            self.rollout.clear();
        }
        result
    }

    /// The rollout proper: `envs` and `cursors` are the `n_envs` copies in
    /// use (checked by the caller).
    fn collect_rollout<E, R>(
        &mut self,
        envs: &mut [E],
        cursors: &mut [Cursor<SVector<f32, OBS>>],
        rng: &mut R,
        mut on_episode: impl FnMut(Episode),
        stop_at_episode_end: bool,
        mut penalty: impl FnMut(&SVector<f32, OBS>, &A::Action, f32) -> Result<f32, Error>,
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.rollout.clear();
        let len = self.config.rollout_len(N);
        let n_envs = cursors.len();
        // β at the progress before this rollout, as the update's schedules.
        let beta = self
            .config
            .noise_beta
            .at(self.steps, self.config.total_steps);
        self.noise = if beta > 0.0 && A::NOISE_DIM > 0 {
            // One key per rollout, octaves up to each copy's share of it.
            let steps = u32::try_from(len / n_envs).unwrap_or(u32::MAX);
            ColouredNoise::new(beta, steps, rng)
        } else {
            ColouredNoise::OFF
        };
        // On a desktop, with several copies, the network passes of up to
        // `CHUNK` copies run together, one layer at a time (`nn::batch`),
        // before their actions are drawn and their steps taken in the
        // copies' order: the same bits, draws and errors as one copy at a
        // time. (A Cortex-M runs its batched passes sample by sample, so
        // there it keeps the plain loop, and the flash it saves.)
        let batched = cfg!(not(target_arch = "arm")) && n_envs > 1 && !stop_at_episode_end;
        let mut values = [0.0f32; CHUNK];
        // Step-major, as SB3 steps its `VecEnv`: one round steps every copy.
        'rollout: while self.rollout.len() < len {
            let groups = envs
                .chunks_mut(CHUNK.max(1))
                .zip(cursors.chunks_mut(CHUNK.max(1)));
            for (envs, cursors) in groups {
                let prepared = if batched {
                    self.prepare_round(cursors, &mut values)
                } else {
                    0
                };
                for (k, (env, cursor)) in envs.iter_mut().zip(cursors.iter_mut()).enumerate() {
                    let sampled = (k < prepared).then_some((k, values[k]));
                    let done = self.collect_step(
                        env,
                        cursor,
                        rng,
                        &mut on_episode,
                        &mut penalty,
                        n_envs,
                        sampled,
                    )?;
                    if stop_at_episode_end && done {
                        break 'rollout;
                    }
                }
            }
        }
        self.finish_rollout(cursors.iter().map(|cursor| &cursor.obs))
    }

    /// The end of every rollout: GAE per copy, each bootstrapping from its
    /// own next (raw) observation in `next_obs` (one per copy, in order),
    /// the overflow check, the value targets and the step count.
    pub(super) fn finish_rollout<'o>(
        &mut self,
        next_obs: impl ExactSizeIterator<Item = &'o SVector<f32, OBS>>,
    ) -> Result<(), Error> {
        let n_envs = next_obs.len();
        for (e, obs) in next_obs.enumerate() {
            let last_value = self.train.params.critic.value(&self.observe(obs)?);
            self.rollout.env_advantages(
                e,
                n_envs,
                last_value,
                self.config.gamma,
                self.config.gae_lambda,
            );
        }
        // Value targets `Â + V_old` whose square (the value loss) or whose
        // gradients would overflow are refused here, before any update can
        // half-apply — and before `returns` is written (see
        // `collect_transaction`).
        let r = &self.rollout;
        let usable = |x: f32| x.is_finite() && x.abs() <= crate::optim::MAX_GRADIENT;
        if !(0..r.len()).all(|t| usable(r.advantages[t] + r.values[t]) && usable(r.advantages[t])) {
            return Err(Error::ValueOverflow);
        }
        self.rollout.compute_returns();
        self.steps += self.rollout.len() as u64;
        Ok(())
    }

    /// The network passes of one round of the copies behind `cursors` (at
    /// most `CHUNK`), together: each copy's network input — normalised, and
    /// the statistics updated, on a copy of the observation normaliser, so
    /// that [`collect_step`](Self::collect_step) repeats the same update on
    /// the agent's own — into the actor's batch, the actor's pass
    /// ([`Actor::sample_batch`]) and the critic's values into `values`.
    /// Returns how many copies were prepared: those before the first whose
    /// observation is refused (whose `collect_step` then refuses it).
    fn prepare_round(
        &mut self,
        cursors: &[Cursor<SVector<f32, OBS>>],
        values: &mut [f32; CHUNK],
    ) -> usize {
        let mut ahead = self.config.normalize_obs.then(|| self.obs_norm.clone());
        let inputs = A::batch_inputs(&mut self.actor_batch);
        let mut n = 0;
        for (input, cursor) in inputs.iter_mut().zip(cursors) {
            let obs = match &mut ahead {
                Some(norm) => norm.update_normalize(&cursor.obs),
                None => self.obs_norm.normalize(&cursor.obs),
            };
            let Ok(obs) = obs else { break };
            *input = obs;
            n += 1;
        }
        let obs = *inputs;
        self.train
            .params
            .actor
            .sample_batch(&mut self.actor_batch, n);
        self.train
            .params
            .critic
            .values_batch(&mut self.critic_batch, &obs[..n], &mut values[..n]);
        n
    }

    /// One step of one copy: its network input, action (drawn, or from
    /// `sampled = (k, value)`: sample `k` of [`prepare_round`](Self::prepare_round)
    /// with its value), penalty, step, reward scaling and transition.
    /// Returns whether the episode ended.
    #[allow(clippy::too_many_arguments)]
    fn collect_step<E, R>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        on_episode: &mut impl FnMut(Episode),
        penalty: &mut impl FnMut(&SVector<f32, OBS>, &A::Action, f32) -> Result<f32, Error>,
        n_envs: usize,
        sampled: Option<(usize, f32)>,
    ) -> Result<bool, Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        let obs = if self.config.normalize_obs {
            self.obs_norm.update_normalize(&cursor.obs)?
        } else {
            self.observe(&cursor.obs)?
        };
        // This step's place in the rollout: copy `e` of round `t`, `(e, t)`.
        let taken = self.rollout.len();
        let at = ((taken % n_envs) as u32, (taken / n_envs) as u32);
        let coloured = self.noise.octaves() > 0;
        let actor = &self.train.params.actor;
        let ((action, log_prob), v) = match sampled {
            Some((k, v)) if coloured => (
                actor.sample_at_coloured(&mut self.actor_batch, k, &self.noise, at, rng)?,
                v,
            ),
            Some((k, v)) => (actor.sample_at(&mut self.actor_batch, k, rng)?, v),
            None if coloured => (
                actor.sample_coloured(&obs, &self.noise, at, rng)?,
                self.train.params.critic.value(&obs),
            ),
            None => (
                actor.sample(&obs, rng)?,
                self.train.params.critic.value(&obs),
            ),
        };
        check_finite(v)?;
        let penalty = penalty(&cursor.obs, &action, log_prob)?;
        check_finite(penalty)?;
        // The plant receives the command; the rollout keeps the raw sample.
        let command = self.space.command(&action);
        let step = cursor.advance(env, command, rng, on_episode)?;
        // Each copy's own discounted return (SB3 `VecNormalize`'s
        // per-environment `returns`), one shared normaliser.
        let discounted_return = if n_envs == 1 {
            &mut self.discounted_return
        } else {
            &mut cursor.discounted_return
        };
        let reward = Self::scale_reward(
            &self.config,
            &mut self.return_norm,
            discounted_return,
            step.reward - penalty,
            step.done(),
        )?;
        let final_value = if step.truncated {
            self.train.params.critic.value(&self.observe(&step.obs)?)
        } else {
            0.0
        };
        self.rollout.push(Transition {
            obs,
            action,
            log_prob,
            value: v,
            reward,
            terminated: step.terminated,
            truncated: step.truncated,
            final_value,
        })?;
        Ok(step.done())
    }
}
