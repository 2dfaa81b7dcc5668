//! Fixed-capacity rollout storage.
//!
//! [`Rollout`] holds up to `N` transitions as parallel arrays (structure of
//! arrays, so GAE and the minibatch loops stream through `f32` slices) plus
//! the advantages and returns computed from them. Its capacity is a const
//! generic; `Rollout::new` is a `const fn`, so a rollout can be a `static` on
//! a microcontroller. Memory: `N · (4·OBS + size_of::<A>() + 26)` bytes, plus
//! a `u16` shuffle index per transition.
//!
//! The columns every clipped-surrogate update reads (observation, action,
//! `log π_old`, advantage, the minibatch permutation) are one type,
//! [`Samples`]; a [`Rollout`] adds the critic's columns (values, rewards,
//! episode ends, bootstrap values, returns) and dereferences to its samples;
//! GRPO's group rollout holds them as its `samples` beside the episodes'
//! bounds.
//!
//! Observations are stored *as the networks saw them* (normalised), so the
//! update re-evaluates exactly the inputs the rollout acted on.
//!
//! A rollout is *ready* once its advantages are computed and until an update
//! consumes it: an update is refused on a rollout that is incomplete (a
//! refused `collect` discards its partial rollout) or already trained on.

use nalgebra::SVector;

use super::Actor;
use super::gae::{Trajectory, gae_strided};
use crate::error::Error;

/// What every policy-gradient update trains on, per step: the observation,
/// the action, `log π_old(a|s)` and the advantage; the minibatch
/// permutation; how many steps are stored and whether they await an update.
///
/// [`Rollout`] (PPO and its family: these columns and a critic's; it
/// dereferences to them) and GRPO's group rollout (these columns as its
/// `samples`, and the episodes' bounds) share it, so the clipped-surrogate
/// loops read one layout.
#[derive(Clone, Debug)]
pub struct Samples<const OBS: usize, A, const N: usize> {
    /// Observations the actor saw (normalised).
    pub obs: [SVector<f32, OBS>; N],
    /// Actions taken (for Gaussian policies, the raw unclipped sample).
    pub actions: [A; N],
    /// `log π_old(a|s)` at collection time.
    pub log_probs: [f32; N],
    /// Advantages `Â_t`, once computed.
    pub advantages: [f32; N],
    /// Minibatch index permutation (shuffled in place each epoch).
    pub indices: [u16; N],
    pub(crate) len: usize,
    /// Advantages computed and not yet trained on.
    pub(crate) ready: bool,
}

impl<const OBS: usize, A: Copy, const N: usize> Samples<OBS, A, N> {
    const CAPACITY_FITS_U16: () = assert!(N <= u16::MAX as usize + 1, "rollout capacity > 65536");

    /// No steps; `zero_action` fills the action slots.
    pub const fn new(zero_action: A) -> Self {
        let () = Self::CAPACITY_FITS_U16;
        Self {
            obs: [SVector::from_array_storage(nalgebra::ArrayStorage([[0.0; OBS]; 1])); N],
            actions: [zero_action; N],
            log_probs: [0.0; N],
            advantages: [0.0; N],
            indices: [0; N],
            len: 0,
            ready: false,
        }
    }

    /// Number of stored steps.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No steps stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// All `N` slots are used.
    pub fn is_full(&self) -> bool {
        self.len == N
    }

    /// Complete: advantages computed and not yet trained on (an update
    /// consumes the rollout; a refused `collect` leaves none).
    pub fn is_ready(&self) -> bool {
        self.ready
    }

    /// Marks the rollout as trained on: the next update needs a new one.
    pub fn consume(&mut self) {
        self.ready = false;
    }

    /// Forgets the stored steps (the memory is reused).
    pub fn clear(&mut self) {
        self.len = 0;
        self.ready = false;
    }

    /// The minibatch view of a clipped-surrogate update: writes the
    /// observations of the samples `chunk` names (at most `CHUNK`, in that
    /// order) into the actor's batch inputs and returns their actions, ready
    /// for [`Actor::evaluate_batch`] and [`Actor::backward_batch`] on the
    /// first `chunk.len()`.
    pub(crate) fn load_chunk<Pi, const CHUNK: usize>(
        &self,
        batch: &mut Pi::Batch<CHUNK>,
        chunk: &[u16],
    ) -> [A; CHUNK]
    where
        Pi: Actor<OBS, Action = A>,
    {
        let mut actions = [Pi::ZERO_ACTION; CHUNK];
        let inputs = Pi::batch_inputs(batch);
        for ((input, action), &i) in inputs.iter_mut().zip(&mut actions).zip(chunk) {
            let i = usize::from(i);
            *input = self.obs[i];
            *action = self.actions[i];
        }
        actions
    }
}

/// `N` transitions with `OBS`-dimensional observations and actions of type
/// `A`: the policy's [`Samples`] (which it dereferences to) and the
/// critic's columns.
#[derive(Clone, Debug)]
pub struct Rollout<const OBS: usize, A, const N: usize> {
    /// Observations, actions, `log π_old`, advantages, the permutation.
    pub samples: Samples<OBS, A, N>,
    /// `V_old(s)` at collection time.
    pub values: [f32; N],
    /// Rewards (after any reward scaling).
    pub rewards: [f32; N],
    /// The step ended its episode in a terminal state.
    pub terminated: [bool; N],
    /// The step ended its episode by a time limit.
    pub truncated: [bool; N],
    /// `V(final observation)` of truncated steps, for bootstrapping.
    pub final_values: [f32; N],
    /// Value targets `Â_t + V_old(s_t)`, for `t < len` once the rollout is
    /// ready. PPO's collection over environment copies keeps each copy's
    /// saved discounted return in its first slots until the rollout is
    /// complete (to restore them if the collection fails), so the slots
    /// hold value targets only while the rollout is ready.
    pub returns: [f32; N],
}

impl<const OBS: usize, A, const N: usize> core::ops::Deref for Rollout<OBS, A, N> {
    type Target = Samples<OBS, A, N>;

    fn deref(&self) -> &Samples<OBS, A, N> {
        &self.samples
    }
}

impl<const OBS: usize, A, const N: usize> core::ops::DerefMut for Rollout<OBS, A, N> {
    fn deref_mut(&mut self) -> &mut Samples<OBS, A, N> {
        &mut self.samples
    }
}

impl<const OBS: usize, A: Copy, const N: usize> Rollout<OBS, A, N> {
    /// An empty rollout; `zero_action` fills the action slots.
    pub const fn new(zero_action: A) -> Self {
        Self {
            samples: Samples::new(zero_action),
            values: [0.0; N],
            rewards: [0.0; N],
            terminated: [false; N],
            truncated: [false; N],
            final_values: [0.0; N],
            returns: [0.0; N],
        }
    }

    /// Appends one transition.
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] when the rollout is full.
    pub fn push(&mut self, t: Transition<OBS, A>) -> Result<(), Error> {
        let i = self.samples.len;
        if i >= N {
            return Err(Error::BufferTooSmall);
        }
        self.samples.obs[i] = t.obs;
        self.samples.actions[i] = t.action;
        self.samples.log_probs[i] = t.log_prob;
        self.values[i] = t.value;
        self.rewards[i] = t.reward;
        self.terminated[i] = t.terminated;
        self.truncated[i] = t.truncated;
        self.final_values[i] = t.final_value;
        self.samples.len = i + 1;
        Ok(())
    }

    /// Fills `advantages` by GAE (see [`gae`](super::gae)) and
    /// `returns = advantages + values` for the stored transitions, with
    /// `last_value = V(observation after the last step)`.
    pub fn compute_advantages(&mut self, last_value: f32, gamma: f32, lambda: f32) {
        // One environment: `gae` is `gae_strided` over environment 0 of 1.
        self.env_advantages(0, 1, last_value, gamma, lambda);
        self.compute_returns();
    }

    /// [`compute_advantages`](Self::compute_advantages) for environment
    /// `env` of a rollout that interleaves `n_envs` environments step-major
    /// (transition `t·n_envs + env` is step `t` of environment `env`; see
    /// [`gae_strided`]), with `last_value = V(that
    /// environment's observation after its last step)`. Call it once per
    /// environment; the rollout is ready after the first call.
    pub fn compute_env_advantages(
        &mut self,
        env: usize,
        n_envs: usize,
        last_value: f32,
        gamma: f32,
        lambda: f32,
    ) {
        self.samples.ready = self.samples.len > 0;
        self.env_advantages(env, n_envs, last_value, gamma, lambda);
        for t in (env..self.samples.len).step_by(n_envs.max(1)) {
            self.returns[t] = self.samples.advantages[t] + self.values[t];
        }
    }

    /// The `advantages` half of
    /// [`compute_env_advantages`](Self::compute_env_advantages): `returns`
    /// is not written and the rollout is not made ready
    /// ([`compute_returns`](Self::compute_returns) does both, for every
    /// environment at once).
    pub(crate) fn env_advantages(
        &mut self,
        env: usize,
        n_envs: usize,
        last_value: f32,
        gamma: f32,
        lambda: f32,
    ) {
        let n = self.len;
        let traj = Trajectory {
            rewards: &self.rewards[..n],
            values: &self.values[..n],
            terminated: &self.terminated[..n],
            truncated: &self.truncated[..n],
            final_values: &self.final_values[..n],
            last_value,
        };
        gae_strided(
            &traj,
            env,
            n_envs,
            gamma,
            lambda,
            &mut self.samples.advantages[..n],
        );
    }

    /// The value targets `returns = advantages + values` of every stored
    /// transition, after [`env_advantages`](Self::env_advantages) ran for
    /// every environment; the rollout is then ready (if not empty).
    pub(crate) fn compute_returns(&mut self) {
        self.samples.ready = self.samples.len > 0;
        let n = self.samples.len;
        for t in 0..n {
            self.returns[t] = self.samples.advantages[t] + self.values[t];
        }
    }

    /// `1 − Var(R − V_old) / Var(R)` over the stored transitions: how much of
    /// the return's variance the critic explained (1 is perfect, ≤ 0 is no
    /// better than a constant). NaN-free: returns 0 when `Var(R) = 0`.
    pub fn explained_variance(&self) -> f32 {
        let n = self.len;
        if n == 0 {
            return 0.0;
        }
        let (var_r, var_diff) = (
            variance(self.returns[..n].iter().copied()),
            variance((0..n).map(|t| self.returns[t] - self.values[t])),
        );
        if var_r <= 0.0 {
            0.0
        } else {
            1.0 - var_diff / var_r
        }
    }
}

/// Population variance of a sequence (two passes over an iterator that can be cloned).
fn variance(xs: impl Iterator<Item = f32> + Clone) -> f32 {
    let (mut n, mut sum) = (0u32, 0.0f32);
    for x in xs.clone() {
        n += 1;
        sum += x;
    }
    if n == 0 {
        return 0.0;
    }
    let mean = sum / n as f32;
    xs.map(|x| (x - mean) * (x - mean)).sum::<f32>() / n as f32
}

/// One step of experience, as pushed into a [`Rollout`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transition<const OBS: usize, A> {
    /// The (normalised) observation acted on.
    pub obs: SVector<f32, OBS>,
    /// The action taken.
    pub action: A,
    /// `log π(a|s)` at collection time.
    pub log_prob: f32,
    /// `V(s)` at collection time.
    pub value: f32,
    /// The reward received.
    pub reward: f32,
    /// Episode ended in a terminal state.
    pub terminated: bool,
    /// Episode ended by a time limit.
    pub truncated: bool,
    /// `V(final observation)` if truncated, else 0.
    pub final_value: f32,
}

#[cfg(test)]
mod tests {
    use super::*;

    static STATIC_ROLLOUT: Rollout<4, usize, 128> = Rollout::new(0);

    /// Explained variance against a two-pass `f64` computation on uneven data.
    #[test]
    fn explained_variance_is_one_minus_the_residual_share() {
        let mut r = Rollout::<1, usize, 8>::new(0);
        assert!(r.is_empty());
        let rewards = [1.0, -2.0, 0.5, 3.0, 0.0, -1.5, 2.0, 0.25];
        let values = [0.3, -1.0, 1.0, 2.0, 0.5, -2.0, 1.0, 0.0];
        for (&reward, &value) in rewards.iter().zip(&values) {
            r.push(transition(reward, value)).unwrap();
        }
        assert!(!r.is_empty());
        r.compute_advantages(0.7, 0.9, 0.8);
        let var = |xs: &[f64]| {
            let mean = xs.iter().sum::<f64>() / xs.len() as f64;
            xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / xs.len() as f64
        };
        let returns: std::vec::Vec<f64> = r.returns.iter().map(|&x| f64::from(x)).collect();
        let residual: std::vec::Vec<f64> = (0..8)
            .map(|t| f64::from(r.returns[t]) - f64::from(values[t]))
            .collect();
        let expected = 1.0 - var(&residual) / var(&returns);
        assert!(
            (f64::from(r.explained_variance()) - expected).abs() < 1e-5,
            "{} vs {expected}",
            r.explained_variance()
        );
        assert!(expected < 0.99 && expected > -5.0);
    }

    fn transition(reward: f32, value: f32) -> Transition<1, usize> {
        Transition {
            obs: SVector::<f32, 1>::new(0.0),
            action: 0,
            log_prob: 0.0,
            value,
            reward,
            terminated: false,
            truncated: false,
            final_value: 0.0,
        }
    }

    /// An empty rollout is never ready to train on, whichever way its
    /// advantages are computed (one environment, one of several, or the
    /// advantages then every environment's returns at once); a computed
    /// one is, until consumed.
    #[test]
    fn readiness_needs_transitions_and_ends_with_consumption() {
        type R = Rollout<2, usize, 4>;
        let computations: [fn(&mut R); 3] = [
            |r| r.compute_advantages(0.0, 0.99, 0.95),
            |r| r.compute_env_advantages(0, 1, 0.0, 0.99, 0.95),
            |r| {
                r.env_advantages(0, 1, 0.0, 0.99, 0.95);
                r.compute_returns();
            },
        ];
        for (i, compute) in computations.into_iter().enumerate() {
            let mut r = R::new(0);
            compute(&mut r);
            assert!(!r.is_ready(), "{i}");
            r.push(Transition {
                obs: SVector::<f32, 2>::zeros(),
                action: 1,
                log_prob: -0.7,
                value: 0.0,
                reward: 1.0,
                terminated: true,
                truncated: false,
                final_value: 0.0,
            })
            .unwrap();
            compute(&mut r);
            assert!(r.is_ready(), "{i}");
            r.consume();
            assert!(!r.is_ready(), "{i}");
        }
    }

    #[test]
    fn push_until_full_then_refuse() {
        assert!(STATIC_ROLLOUT.is_empty());
        let mut r = Rollout::<1, usize, 3>::new(0);
        for _ in 0..3 {
            assert!(!r.is_full());
            r.push(transition(1.0, 0.0)).unwrap();
        }
        assert!(r.is_full());
        assert_eq!(r.push(transition(1.0, 0.0)), Err(Error::BufferTooSmall));
        assert_eq!(r.len(), 3);
        r.clear();
        assert!(r.is_empty());
    }

    #[test]
    fn returns_are_advantages_plus_values_and_ev_is_one_for_a_perfect_critic() {
        let mut r = Rollout::<1, usize, 4>::new(0);
        // γ = 1, λ = 1, no bootstrap: perfect critic values are the reward-to-go.
        for v in [4.0, 3.0, 2.0, 1.0] {
            r.push(transition(1.0, v)).unwrap();
        }
        r.compute_advantages(0.0, 1.0, 1.0);
        assert_eq!(r.returns, [4.0, 3.0, 2.0, 1.0]);
        assert_eq!(r.advantages, [0.0; 4]);
        assert_eq!(r.explained_variance(), 1.0);
    }

    /// Per environment, `compute_env_advantages` is `env_advantages` then
    /// the value targets: on two interleaved environments its returns
    /// are `advantages + values`, the bits `compute_returns` gives.
    #[test]
    fn env_returns_are_advantages_plus_values() {
        let mut a = Rollout::<1, usize, 6>::new(0);
        for (reward, value) in [
            (1.0, 0.5),
            (2.0, -1.0),
            (0.5, 2.0),
            (1.5, 0.25),
            (3.0, 1.0),
            (-1.0, 4.0),
        ] {
            a.push(transition(reward, value)).unwrap();
        }
        let mut b = a.clone();
        for env in 0..2 {
            a.compute_env_advantages(env, 2, 0.75, 0.9, 0.8);
            b.env_advantages(env, 2, 0.75, 0.9, 0.8);
        }
        b.compute_returns();
        assert_eq!((a.advantages, a.returns), (b.advantages, b.returns));
        for t in 0..6 {
            assert_eq!(a.returns[t], a.advantages[t] + a.values[t], "{t}");
            assert_ne!(a.advantages[t], 0.0, "{t}");
        }
    }
}
