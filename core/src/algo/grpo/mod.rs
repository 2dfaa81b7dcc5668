//! Group-relative policy optimisation (Shao et al. 2024, DeepSeekMath;
//! notes 004): PPO's clipped update with **no critic**.
//!
//! The baseline a critic would learn is replaced by a group: `G` episodes
//! are played from the *same* start state, and every step of episode `i`
//! gets the advantage of its whole episode relative to the group,
//!
//! `Â_i = (R_i − mean(R_1..R_G)) / (std(R_1..R_G) + ε)`,
//!
//! `R_i` the episode's undiscounted return ("outcome supervision"; `std` the
//! unbiased estimate, as `torch.std`). The update is PPO's clipped surrogate
//! with an entropy bonus over shuffled minibatches of the collected steps,
//! one Adam step per minibatch after a global grad-norm clip, averaged per
//! step (the token-level mean of DAPO / Dr. GRPO, which does not favour
//! short episodes the way GRPO's per-sequence `1/|o_i|` does).
//!
//! **GSPO** (Zheng et al. 2025, the sequence-level variant; option
//! [`GrpoConfig::sequence_ratio`]): one importance ratio per *episode*, the
//! geometric mean of its per-step ratios
//! `sᵢ = exp(1/|oᵢ| Σ_t log(π(a_t|s_t)/π_old(a_t|s_t)))`, clipped at the
//! sequence level, `L = −1/|B| Σᵢ min(sᵢ Âᵢ, clip(sᵢ, 1 ± ε) Âᵢ)` over the
//! episodes `B` of a minibatch (minibatches are then sets of whole
//! episodes). Each step's log-probability gets `∂L/∂sᵢ · sᵢ / |oᵢ|`.
//!
//! **Same start state.** A plant cannot be rewound, a simulator can: each
//! group draws one seed from the run's RNG and resets the environment from
//! an RNG seeded with it before every member, so all `G` members start from
//! the state `Env::reset` draws for that seed. (On hardware, GRPO needs a
//! plant that can be put back into a chosen state; the simulator-in-the-loop
//! use is the natural one.)
//!
//! **Memory.** No critic network, no critic gradient or Adam moments, no
//! value, return or reward arrays in the rollout: per step only the
//! observation, the action, its log-probability, the advantage and a
//! shuffle index. `microrl info` reports the saving against PPO for the
//! same actor and rollout length. The rollout must hold a whole group: a
//! member cut by the capacity `N` keeps the return it reached, and the
//! group's remaining members are not played — choose `N ≥ G ×` the plant's
//! episode limit (CartPole: 8 × 500 ≤ 4096).

mod learner;
mod persist;
#[cfg(test)]
mod tests;

use nalgebra::SVector;
use rand_core::{Rng, SeedableRng};

use super::{Actor, Cursor, DEFAULT_CHUNK, Episode, Policy, Samples, UpdateStats};
use crate::config::{check, non_negative, positive_or_off};
use crate::env::{ActionSpace, Env};
use crate::error::Error;
use crate::loss::{approx_kl_at, clipped_surrogate};
use crate::math;
use crate::nn::Zeroed;
use crate::normalize::RunningNorm;
use crate::optim::{AdamConfig, Optimizer, Schedule, TrainState};
use crate::params::Params;
use crate::rng::{self, Xoshiro128pp};

/// The most episodes a group may have.
pub const MAX_GROUP: usize = 64;
/// The most episodes one rollout may hold (`groups × group_size`).
pub const MAX_EPISODES: usize = 256;

/// GRPO hyper-parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct GrpoConfig {
    /// Environment steps the schedules run over. Default 300 000.
    pub total_steps: u64,
    /// Episodes per group `G`, all from one start state (2..=64). Default 8.
    pub group_size: u16,
    /// Groups (start states) per update. Default 1.
    pub groups: u16,
    /// Adam learning rate over training progress. Default `1e-3 → 0` (linear).
    pub learning_rate: Schedule,
    /// Clip range `ε` over training progress. Default constant 0.2.
    pub clip_range: Schedule,
    /// Passes over each rollout, 1 to 1 000
    /// ([`MAX_ITERATIONS`](crate::config::MAX_ITERATIONS)). Default 4.
    pub epochs: u16,
    /// Minibatches per pass (the collected steps are split into this many
    /// nearly equal parts). Default 4.
    pub minibatches: u16,
    /// Entropy bonus coefficient. Default 0.
    pub ent_coef: f32,
    /// Global L2 gradient-norm clip. Default `Some(0.5)`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub max_grad_norm: Option<f32>,
    /// Running observation normalisation. Default true.
    pub normalize_obs: bool,
    /// GSPO: one clipped importance ratio per episode (the geometric mean
    /// of its steps' ratios) instead of one per step. Default false.
    pub sequence_ratio: bool,
    /// Adam's `β₁, β₂, ε`. Default `0.9, 0.999, 1e-5`.
    pub adam: AdamConfig,
}

impl GrpoConfig {
    /// The defaults listed on each field.
    pub const DEFAULT: Self = Self {
        total_steps: 300_000,
        group_size: 8,
        groups: 1,
        learning_rate: Schedule::linear_to_zero(1e-3),
        clip_range: Schedule::Constant(0.2),
        epochs: 4,
        minibatches: 4,
        ent_coef: 0.0,
        max_grad_norm: Some(0.5),
        normalize_obs: true,
        sequence_ratio: false,
        adam: AdamConfig::DEFAULT,
    };

    /// Every field zero (invalid), the placeholder in [`Grpo::ZERO`].
    const ZERO: Self = Self {
        total_steps: 0,
        group_size: 0,
        groups: 0,
        learning_rate: Schedule::Constant(0.0),
        clip_range: Schedule::Constant(0.0),
        epochs: 0,
        minibatches: 0,
        ent_coef: 0.0,
        max_grad_norm: None,
        normalize_obs: false,
        sequence_ratio: false,
        adam: AdamConfig::ZERO,
    };

    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first offending field: a group
    /// size outside `2..=MAX_GROUP`, zero groups, epochs or minibatches,
    /// invalid schedules, a negative entropy coefficient, a non-positive
    /// grad-norm clip, invalid Adam settings.
    pub fn validate(&self) -> Result<(), Error> {
        check(
            "group_size",
            (2..=MAX_GROUP).contains(&usize::from(self.group_size)),
            "must be in 2..=64",
        )?;
        check(
            "groups",
            self.groups > 0
                && usize::from(self.groups) * usize::from(self.group_size) <= MAX_EPISODES,
            "must be > 0, with groups × group_size <= 256",
        )?;
        self.learning_rate.validate("learning_rate", 1.0)?;
        self.clip_range.validate("clip_range", f32::MAX)?;
        check(
            "total_steps",
            self.total_steps > 0
                || matches!(
                    (self.learning_rate, self.clip_range),
                    (Schedule::Constant(_), Schedule::Constant(_))
                ),
            "must be > 0 when a schedule anneals over it",
        )?;
        crate::config::iterations("epochs", self.epochs)?;
        check("minibatches", self.minibatches > 0, "must be > 0")?;
        non_negative("ent_coef", self.ent_coef)?;
        positive_or_off("max_grad_norm", self.max_grad_norm)?;
        self.adam.validate()
    }
}

impl Default for GrpoConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The steps of one update's groups: per step what the clipped surrogate
/// needs ([`Samples`]), nothing for a critic, and
/// where each episode ends.
#[derive(Clone, Debug)]
pub struct GroupRollout<const OBS: usize, A, const N: usize> {
    /// Observations, actions, `log π_old`, each step's group-relative
    /// advantage (its episode's), the permutation.
    pub samples: Samples<OBS, A, N>,
    /// Where each episode ends (exclusive), in collection order.
    pub episode_ends: [u32; MAX_EPISODES],
    episodes: usize,
}

impl<const OBS: usize, A: Copy, const N: usize> GroupRollout<OBS, A, N> {
    /// An empty rollout; `zero_action` fills the action slots.
    pub const fn new(zero_action: A) -> Self {
        Self {
            samples: Samples::new(zero_action),
            episode_ends: [0; MAX_EPISODES],
            episodes: 0,
        }
    }

    /// Number of stored episodes (a cut one included).
    pub fn episodes(&self) -> usize {
        self.episodes
    }

    /// The steps `start..end` of episode `e`.
    fn episode(&self, e: usize) -> (usize, usize) {
        let start = if e == 0 {
            0
        } else {
            self.episode_ends[e - 1] as usize
        };
        (start, self.episode_ends[e] as usize)
    }

    /// Forgets the stored steps and episodes.
    fn clear(&mut self) {
        self.samples.clear();
        self.episodes = 0;
    }
}

/// Group-relative advantages `(Rᵢ − mean)/(std + 1e-8)` of `returns`
/// (unbiased std); all zero for fewer than two returns.
pub fn group_advantages(returns: &[f32], out: &mut [f32]) {
    let g = returns.len();
    if g < 2 {
        out.iter_mut().for_each(|a| *a = 0.0);
        return;
    }
    let mean = returns.iter().sum::<f32>() / g as f32;
    let ss: f32 = returns.iter().map(|r| (r - mean) * (r - mean)).sum();
    let inv_std = 1.0 / (math::sqrt(ss / (g - 1) as f32) + 1e-8);
    for (a, r) in out.iter_mut().zip(returns) {
        *a = (r - mean) * inv_std;
    }
}

/// A GRPO agent: actor `A` (no critic), `OBS`-dimensional observations, a
/// rollout of up to `N` steps.
pub struct Grpo<A: Actor<OBS>, const OBS: usize, const N: usize, const CHUNK: usize = DEFAULT_CHUNK>
{
    /// Hyper-parameters.
    pub config: GrpoConfig,
    /// The actor with its gradient and Adam moments.
    pub train: TrainState<A>,
    /// The action space (actuator bounds), set by [`init`](Self::init).
    pub space: A::Space,
    /// The collected groups.
    pub rollout: GroupRollout<OBS, A::Action, N>,
    /// Observation statistics (updated while collecting).
    pub obs_norm: RunningNorm<OBS>,
    /// Environment steps collected so far.
    pub steps: u64,
    /// The activations of `CHUNK` samples for the batched update passes.
    actor_batch: A::Batch<CHUNK>,
}

impl<A: Actor<OBS>, const OBS: usize, const N: usize, const CHUNK: usize> core::fmt::Debug
    for Grpo<A, OBS, N, CHUNK>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Grpo")
            .field("config", &self.config)
            .field("steps", &self.steps)
            .field("rollout_len", &self.rollout.samples.len())
            .finish_non_exhaustive()
    }
}

impl<A: Actor<OBS>, const OBS: usize, const N: usize, const CHUNK: usize> Grpo<A, OBS, N, CHUNK> {
    /// An agent with zeroed weights; call [`init`](Self::init) first.
    pub const fn new(config: GrpoConfig) -> Self {
        Self {
            train: TrainState::new(config.adam),
            config,
            space: <A::Space as Params>::ZERO,
            rollout: GroupRollout::new(A::ZERO_ACTION),
            obs_norm: RunningNorm::ZERO,
            steps: 0,
            actor_batch: <A::Batch<CHUNK> as Zeroed>::ZERO,
        }
    }

    /// All-zero storage for a `static`; see [`Ppo::ZERO`](super::Ppo::ZERO).
    pub const ZERO: Self = Self::new(GrpoConfig::ZERO);

    /// Initialises the agent for `env`: action space, actor weights
    /// (orthogonal, output gain 0.01), Adam, normaliser, step count.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for an invalid configuration; nothing is
    /// changed then.
    pub fn init<E, R>(&mut self, env: &E, rng: &mut R) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.config.validate()?;
        self.space = env.action_space();
        self.train.params.init(rng);
        self.train.zero_grad();
        self.train.optimizer.config = self.config.adam;
        self.train.optimizer.reset();
        self.obs_norm = RunningNorm::ZERO;
        self.steps = 0;
        self.rollout.clear();
        Ok(())
    }

    /// The actor.
    pub fn actor(&self) -> &A {
        &self.train.params
    }

    /// Environment steps collected so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Copies the deployable policy into `out`.
    pub fn export(&self, out: &mut Policy<A, OBS>) {
        out.actor.copy_from(&self.train.params);
        out.obs_norm.copy_from(&self.obs_norm);
        out.space = self.space;
    }

    /// Plays `groups` groups of `group_size` episodes, each group from one
    /// start state, and computes their group-relative advantages.
    /// `on_episode` hears about every finished episode; `cursor` counts the
    /// steps (its current episode is abandoned: every member starts with a
    /// reset).
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite observation, reward or network
    /// output; the environment's own errors. A refused collect restores the
    /// normaliser and discards the partial rollout.
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
        let saved = self.obs_norm.clone();
        let result = self.collect_groups(env, cursor, rng, on_episode);
        if result.is_err() {
            self.obs_norm = saved;
            self.rollout.clear();
        }
        result
    }

    fn collect_groups<E, R>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        mut on_episode: impl FnMut(Episode),
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.rollout.clear();
        let group_size = usize::from(self.config.group_size);
        'groups: for _ in 0..self.config.groups {
            let seed = rng.next_u64();
            let mut returns = [0.0f32; MAX_GROUP];
            let mut ends = [0usize; MAX_GROUP];
            let mut members = 0;
            let group_start = self.rollout.samples.len;
            while members < group_size && self.rollout.samples.len < N {
                cursor.obs = env.reset(&mut Xoshiro128pp::seed_from_u64(seed));
                (cursor.ret, cursor.len) = (0.0, 0);
                let mut ret = 0.0f64;
                while self.rollout.samples.len < N {
                    let obs = if self.config.normalize_obs {
                        self.obs_norm.update_normalize(&cursor.obs)?
                    } else {
                        self.obs_norm.normalize(&cursor.obs)?
                    };
                    let (action, log_prob) = self.train.params.sample(&obs, rng)?;
                    let command = self.space.command(&action);
                    let step = cursor.advance(env, command, rng, &mut on_episode)?;
                    let i = self.rollout.samples.len;
                    self.rollout.samples.obs[i] = obs;
                    self.rollout.samples.actions[i] = action;
                    self.rollout.samples.log_probs[i] = log_prob;
                    self.rollout.samples.len = i + 1;
                    ret += f64::from(step.reward);
                    if step.done() {
                        break;
                    }
                }
                returns[members] = ret as f32;
                ends[members] = self.rollout.samples.len;
                members += 1;
                let e = self.rollout.episodes;
                self.rollout.episode_ends[e] = self.rollout.samples.len as u32;
                self.rollout.episodes = e + 1;
            }
            let mut advantages = [0.0f32; MAX_GROUP];
            group_advantages(&returns[..members], &mut advantages[..members]);
            let mut start = group_start;
            for (&end, &a) in ends[..members].iter().zip(&advantages[..members]) {
                self.rollout.samples.advantages[start..end].fill(a);
                start = end;
            }
            if self.rollout.samples.len == N {
                break 'groups;
            }
        }
        if !self.rollout.samples.advantages[..self.rollout.samples.len]
            .iter()
            .all(|a| a.is_finite())
        {
            return Err(Error::NonFinite);
        }
        self.steps = self.steps.saturating_add(self.rollout.samples.len as u64);
        self.rollout.samples.ready = true;
        Ok(())
    }

    /// PPO's clipped update on the collected groups (see the module docs).
    ///
    /// # Errors
    /// [`Error::RolloutIncomplete`] without a fresh complete rollout,
    /// [`Error::InvalidConfig`] for an invalid configuration — both before
    /// anything changes; [`Error::NonFinite`] or
    /// [`Error::GradientOverflow`] mid-update: the failing minibatch step is
    /// not applied, the steps before it stay applied; the rollout is
    /// consumed either way.
    pub fn update<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Result<UpdateStats, Error> {
        let c = self.config;
        if !self.rollout.samples.ready {
            return Err(Error::RolloutIncomplete);
        }
        c.validate()?;
        self.rollout.samples.ready = false;
        let n = self.rollout.samples.len;
        let progress_steps = self.steps.saturating_sub(n as u64);
        let lr = c.learning_rate.at(progress_steps, c.total_steps);
        let clip = c.clip_range.at(progress_steps, c.total_steps);
        let mut stats = UpdateStats {
            learning_rate: lr,
            clip_range: clip,
            ..UpdateStats::default()
        };
        if c.sequence_ratio {
            self.update_sequences(lr, clip, &mut stats, rng)?;
            return Ok(stats);
        }
        for (i, slot) in self.rollout.samples.indices[..n].iter_mut().enumerate() {
            *slot = i as u16;
        }
        let minibatches = usize::from(c.minibatches);
        let (mut samples, mut steps) = (0u32, 0u32);
        for epoch in 0..c.epochs {
            rng::shuffle(rng, &mut self.rollout.samples.indices[..n]);
            for m in 0..minibatches {
                let (start, end) = (m * n / minibatches, (m + 1) * n / minibatches);
                if start == end {
                    continue;
                }
                let inv_batch = 1.0 / (end - start) as f32;
                self.train.zero_grad();
                // The minibatch in chunks of `CHUNK` samples, the actor run
                // one layer at a time over a chunk (the same bits as sample
                // by sample: `nn::batch`).
                for chunk in self.rollout.samples.indices[start..end].chunks(CHUNK) {
                    let n = chunk.len();
                    let actions =
                        (self.rollout.samples).load_chunk::<A, CHUNK>(&mut self.actor_batch, chunk);
                    let actor = &self.train.params;
                    let mut evaluated = [(0.0f32, 0.0f32); CHUNK];
                    actor.evaluate_batch(&mut self.actor_batch, &actions[..n], &mut evaluated)?;
                    let mut d_log_probs = [0.0f32; CHUNK];
                    for ((&i, &(log_prob, entropy)), d) in
                        chunk.iter().zip(&evaluated).zip(&mut d_log_probs)
                    {
                        let i = usize::from(i);
                        let old = self.rollout.samples.log_probs[i];
                        let s = clipped_surrogate(
                            log_prob,
                            old,
                            self.rollout.samples.advantages[i],
                            clip,
                        );
                        *d = s.d_log_prob * inv_batch;
                        stats.policy_loss += s.loss;
                        stats.entropy += entropy;
                        stats.approx_kl += approx_kl_at(log_prob - old, s.ratio);
                        stats.clip_fraction += f32::from(u8::from(s.clipped));
                        samples += 1;
                    }
                    actor.backward_batch(
                        &mut self.actor_batch,
                        &actions[..n],
                        &d_log_probs[..n],
                        -c.ent_coef * inv_batch,
                        None,
                        &mut self.train.grads,
                    );
                }
                stats.grad_norm += self.train.apply(lr, c.max_grad_norm)?;
                steps += 1;
            }
            stats.epochs = epoch + 1;
        }
        stats.average(samples, steps);
        Ok(stats)
    }
}

impl<A: Actor<OBS>, const OBS: usize, const N: usize, const CHUNK: usize> Grpo<A, OBS, N, CHUNK> {
    /// `(log π(a_t|s_t), H)` of the consecutive collected steps `steps` (at
    /// most `CHUNK`), the actor run over them as one batch; its activations
    /// stay in the batch for `backward_batch`.
    fn evaluate_steps(
        &mut self,
        steps: core::ops::Range<usize>,
    ) -> Result<[(f32, f32); CHUNK], Error> {
        let n = steps.len();
        A::batch_inputs(&mut self.actor_batch)[..n]
            .copy_from_slice(&self.rollout.samples.obs[steps.clone()]);
        let mut evaluated = [(0.0f32, 0.0f32); CHUNK];
        self.train.params.evaluate_batch(
            &mut self.actor_batch,
            &self.rollout.samples.actions[steps],
            &mut evaluated,
        )?;
        Ok(evaluated)
    }

    /// GSPO's update: minibatches of whole episodes, one clipped ratio each.
    fn update_sequences<R: Rng + ?Sized>(
        &mut self,
        lr: f32,
        clip: f32,
        stats: &mut UpdateStats,
        rng: &mut R,
    ) -> Result<(), Error> {
        let c = self.config;
        let episodes = self.rollout.episodes;
        for (e, slot) in self.rollout.samples.indices[..episodes]
            .iter_mut()
            .enumerate()
        {
            *slot = e as u16;
        }
        let minibatches = usize::from(c.minibatches);
        let (mut sequences, mut samples, mut steps) = (0u32, 0u32, 0u32);
        for epoch in 0..c.epochs {
            rng::shuffle(rng, &mut self.rollout.samples.indices[..episodes]);
            for m in 0..minibatches {
                let (first, last) = (m * episodes / minibatches, (m + 1) * episodes / minibatches);
                if first == last {
                    continue;
                }
                let inv_batch = 1.0 / (last - first) as f32;
                self.train.zero_grad();
                for k in first..last {
                    let e = usize::from(self.rollout.samples.indices[k]);
                    let (start, end) = self.rollout.episode(e);
                    let inv_len = 1.0 / (end - start) as f32;
                    // Pass 1: the sequence's mean log-ratio (its steps in
                    // chunks of `CHUNK`, summed in step order).
                    let mut log_ratio_sum = 0.0f32;
                    for first in (start..end).step_by(CHUNK) {
                        let steps_here = first..end.min(first + CHUNK);
                        let evaluated = self.evaluate_steps(steps_here.clone())?;
                        for (i, &(log_prob, _)) in steps_here.zip(&evaluated) {
                            log_ratio_sum += log_prob - self.rollout.samples.log_probs[i];
                        }
                    }
                    let advantage = self.rollout.samples.advantages[start];
                    let s = clipped_surrogate(log_ratio_sum * inv_len, 0.0, advantage, clip);
                    // Pass 2: ∂L/∂log π_t = ∂L/∂log s · 1/|o|, per step.
                    let d_log_prob = s.d_log_prob * inv_len * inv_batch;
                    for first in (start..end).step_by(CHUNK) {
                        let steps_here = first..end.min(first + CHUNK);
                        let n = steps_here.len();
                        let evaluated = self.evaluate_steps(steps_here.clone())?;
                        for (i, &(log_prob, entropy)) in steps_here.clone().zip(&evaluated) {
                            let log_ratio = log_prob - self.rollout.samples.log_probs[i];
                            stats.entropy += entropy;
                            stats.approx_kl += approx_kl_at(log_ratio, math::exp(log_ratio));
                            samples += 1;
                        }
                        self.train.params.backward_batch(
                            &mut self.actor_batch,
                            &self.rollout.samples.actions[steps_here],
                            &[d_log_prob; CHUNK][..n],
                            -c.ent_coef * inv_len * inv_batch,
                            None,
                            &mut self.train.grads,
                        );
                    }
                    stats.policy_loss += s.loss;
                    stats.clip_fraction += f32::from(u8::from(s.clipped));
                    sequences += 1;
                }
                stats.grad_norm += self.train.apply(lr, c.max_grad_norm)?;
                steps += 1;
            }
            stats.epochs = epoch + 1;
        }
        let per_sequence = 1.0 / sequences.max(1) as f32;
        let per_sample = 1.0 / samples.max(1) as f32;
        stats.policy_loss *= per_sequence;
        stats.clip_fraction *= per_sequence;
        stats.entropy *= per_sample;
        stats.approx_kl *= per_sample;
        stats.grad_norm /= steps.max(1) as f32;
        Ok(())
    }
}
