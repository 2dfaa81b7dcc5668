//! Training algorithms: PPO with GAE (and PPO-penalty), A2C, TRPO, GRPO,
//! REINFORCE with a baseline, KL-anchored fine-tuning, the online
//! one-step actor-critic, the off-policy SAC and TD3 (with a replay
//! buffer), and a Bradley–Terry reward model learned from preferences.
//!
//! Design:
//! - **One actor interface for both action spaces.** Every algorithm trains
//!   an [`Actor`] (categorical or Gaussian) through the same five methods, so
//!   it runs the same code for discrete and continuous control.
//! - **Critics are networks** `N: Network<OBS, 1>`.
//! - **All memory is fixed at compile time.** Rollout capacities are const
//!   generics; an agent is one struct with a `const fn new` (and an all-zero
//!   `ZERO` for `.bss`) that can live in a `static` on a microcontroller.
//!   Nothing allocates.
//! - **Agents are steps, the loop is a library.** An agent exposes
//!   `collect`/`update` (or `step`) and implements [`Learner`](crate::train::Learner);
//!   [`train::Trainer`](crate::train::Trainer) drives any of them — collect,
//!   update, gated evaluation, early stop — and reports through hooks.
//! - **Acting is one function.** An agent's deterministic action
//!   ([`Controller`]) and its exported [`Policy`]'s are both
//!   [`policy::act`](crate::policy::act) on the same actor, normaliser and
//!   action space.
//! - **Errors leave weights untouched.** A NaN observation or reward stops the
//!   rollout with [`Error::NonFinite`] before any gradient is computed; a
//!   non-finite gradient is refused by the optimiser.
//!
//! Layout (as RLtools keeps each algorithm's configuration, operations and
//! persistence side by side): **one folder per algorithm**, typically
//! `mod.rs` (the agent struct, `new`/`init`, acting, and for the smaller
//! algorithms collection and update), `config.rs` where the configuration
//! is large, `collect.rs`/`update.rs` (PPO, SAC, TD3: the update in the
//! paper's order and names), `learner.rs` (its
//! [`Learner`](crate::train::Learner) and [`Controller`] impls),
//! `persist.rs` (its checkpoint section: one `agent_state!` list of the
//! saved fields, which save, load, the length and the fingerprint all
//! walk; anchored PPO extends its inner PPO agent's section), `lagged.rs`
//! where it learns while controlling, and `tests.rs` (SAC and TD3 keep
//! their PyTorch reference cases in `parity.rs`, the others in
//! `crate::update_parity`). REINFORCE and TRPO, which differ from PPO in
//! what they collect and how they update but not in what they keep, are a
//! `mod.rs` each: their accessors, learner, controller and checkpoint
//! section forward to the inner PPO agent through one macro
//! (`ppo/wrapped.rs`). The reward model ([`preference`]) is not an agent
//! and has no learner or checkpoint section. What several algorithms share lives once beside them:
//! [`buffer`] ([`Samples`], the columns every clipped-surrogate update
//! reads, and [`Rollout`], which adds a critic's), [`gae`], [`critic`],
//! [`replay`], [`offpolicy`] (twin critics, the Bellman target and their
//! regression, Polyak targets, the action scale, the off-policy loop step)
//! and [`lagged`] (learning while controlling). An algorithm is its folder
//! plus its lines here and its aliases in [`agent`](crate::agent); the CLI
//! adds its name, budget and configuration to
//! `std-harness/src/train/registry.rs` and its agent types to the dispatch
//! in `train/run.rs` and `train/agents.rs`.

pub mod ac;
pub mod anchor;
pub mod buffer;
pub mod critic;
pub mod gae;
pub mod grpo;
pub mod lagged;
pub mod offpolicy;
pub mod ppo;
pub mod preference;
pub mod reinforce;
pub mod replay;
pub mod sac;
pub mod td3;
pub mod trpo;

pub use ac::{AcConfig, AcStats, ActorCritic, LaggedAc};
pub use anchor::{AnchorConfig, Anchored};
pub use buffer::{Rollout, Samples};
pub use critic::{Critic, Critics};
pub use grpo::{Grpo, GrpoConfig};
pub use lagged::{Behave, Lagged, LaggedLearner, Tick, TickLearner, behave};
pub use ppo::{
    A2cConfig, DEFAULT_CHUNK, KL_COEF_MAX, KL_COEF_MIN, LaggedPpo, Ppo, PpoConfig, UpdateStats,
};
pub use preference::{
    LearnedReward, Preference, RewardConfig, RewardLearner, RewardModel, Segment,
};
pub use reinforce::{Reinforce, ReinforceConfig};
pub use replay::{ReplayBuffer, ReplayMark};
pub use sac::{Sac, SacConfig};
pub use td3::{Td3, Td3Config};
pub use trpo::{Trpo, TrpoConfig};

pub use crate::policy::{Actor, Controller, HeadCache, Policy};

use nalgebra::SVector;
use rand_core::Rng;

use crate::env::{ActionOf, Env, Step};
use crate::error::{Error, check_all_finite, check_finite};
use crate::math;
use crate::nn::{Layer, Network};

/// Return and length of a finished episode.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Episode {
    /// Undiscounted sum of rewards.
    pub ret: f32,
    /// Number of steps.
    pub len: u32,
}

/// The environment-side state a training loop carries between steps: the
/// current raw observation and the running return of the current episode
/// (and, for PPO's reward scaling over copies, the copy's discounted return,
/// which a refused collection rolls back with the agent).
///
/// The counters cannot overflow or stall: the return is accumulated in `f64`
/// (exact for integer rewards up to 2⁵³, where an `f32` sum stops growing at
/// 2²⁴ = 16 777 216) and reported in [`Episode::ret`] as `f32`, saturated to
/// `±f32::MAX`; the episode length saturates at `u32::MAX` (an endless episode
/// of 2³² steps keeps reporting `u32::MAX` instead of panicking or wrapping to
/// 0) and the total step count at `u64::MAX`.
#[derive(Clone, Debug, PartialEq)]
pub struct Cursor<O> {
    /// The observation the agent acts on next (raw, unnormalised).
    pub obs: O,
    /// Return of the current episode so far (accumulated in `f64`).
    pub ret: f64,
    /// Length of the current episode so far (saturating at `u32::MAX`).
    pub len: u32,
    /// Environment steps taken in total (saturating at `u64::MAX`).
    pub steps: u64,
    /// The running discounted return `Σ γ^k r` of this copy's current
    /// episode, for PPO's reward scaling over environment copies
    /// ([`PpoConfig::n_envs`] > 1; SB3 `VecNormalize`'s per-environment
    /// `returns`). With one environment the agent keeps it
    /// ([`Ppo::discounted_return`]) and this stays 0.
    pub discounted_return: f32,
}

impl<const OBS: usize> Cursor<SVector<f32, OBS>> {
    /// A cursor into no episode yet (zero observation and counters): the
    /// placeholder of an environment copy not yet started.
    pub fn idle() -> Self {
        Self {
            obs: SVector::zeros(),
            ret: 0.0,
            len: 0,
            steps: 0,
            discounted_return: 0.0,
        }
    }

    /// Resets `env` and starts counting.
    pub fn start<E: Env<Obs = SVector<f32, OBS>>, R: Rng + ?Sized>(
        env: &mut E,
        rng: &mut R,
    ) -> Self {
        Self {
            obs: env.reset(rng),
            ret: 0.0,
            len: 0,
            steps: 0,
            discounted_return: 0.0,
        }
    }

    /// Steps `env`, checks the reward and accumulates the episode statistics;
    /// on `terminated || truncated` resets `env`, reports the episode to
    /// `on_episode` and continues from the new first observation. Returns the
    /// step (with the *pre-reset* final observation).
    ///
    /// # Errors
    /// The environment's error, or [`Error::NonFinite`] for a non-finite
    /// reward or observation; the cursor is unchanged on error.
    pub fn advance<E: Env<Obs = SVector<f32, OBS>>, R: Rng + ?Sized>(
        &mut self,
        env: &mut E,
        action: ActionOf<E>,
        rng: &mut R,
        on_episode: &mut impl FnMut(Episode),
    ) -> Result<Step<SVector<f32, OBS>>, Error> {
        let step = env.step(action)?;
        check_finite(step.reward)?;
        check_all_finite(step.obs.as_slice())?;
        self.ret += f64::from(step.reward);
        self.len = self.len.saturating_add(1);
        self.steps = self.steps.saturating_add(1);
        if step.done() {
            on_episode(Episode {
                ret: saturating_f32(self.ret),
                len: self.len,
            });
            self.obs = env.reset(rng);
            self.ret = 0.0;
            self.len = 0;
        } else {
            self.obs = step.obs;
        }
        Ok(step)
    }
}

/// `x` as `f32`, saturated to `±f32::MAX` instead of overflowing to `±∞`
/// (a NaN stays NaN).
fn saturating_f32(x: f64) -> f32 {
    const MAX: f64 = f32::MAX as f64;
    if x > MAX {
        f32::MAX
    } else if x < -MAX {
        -f32::MAX
    } else {
        x as f32
    }
}

/// The step cap per episode of [`evaluate`]: 1 000 000 steps, 2 000 times
/// Gymnasium's CartPole-v1 limit (500) and 5 000 times Pendulum-v1's (200),
/// so only an environment that never terminates or truncates reaches it.
pub const EVAL_MAX_STEPS: u32 = 1_000_000;

/// Mean and standard deviation of the returns of `episodes` deterministic
/// episodes of `policy` on `env` (the episodes' start states drawn from `rng`),
/// each capped at [`EVAL_MAX_STEPS`] steps: [`evaluate_capped`] with that cap.
///
/// # Errors
/// As [`evaluate_capped`].
pub fn evaluate<P, E, R, const OBS: usize>(
    policy: &P,
    env: &mut E,
    episodes: u32,
    rng: &mut R,
) -> Result<(f32, f32), Error>
where
    P: Controller<OBS, Action = ActionOf<E>> + ?Sized,
    E: Env<Obs = SVector<f32, OBS>>,
    R: Rng + ?Sized,
{
    evaluate_capped(policy, env, episodes, EVAL_MAX_STEPS, rng)
}

/// Mean and standard deviation of the returns of `episodes` deterministic
/// episodes of `policy` on `env` (the episodes' start states drawn from
/// `rng`), refusing an episode that runs `max_steps` steps without
/// terminating or being truncated — an environment that never ends would
/// otherwise hang the caller (on an MCU, the whole firmware).
///
/// Returns are accumulated in `f64` and reported as `f32` saturated to
/// `±f32::MAX`; `episodes = 0` gives `(0, 0)`.
///
/// # Errors
/// [`Error::InvalidConfig`] for `max_steps = 0`; [`Error::EpisodeTooLong`]
/// when an episode reaches `max_steps` steps without ending;
/// [`Error::NonFinite`] for a non-finite reward; otherwise the first error
/// from the policy or the environment.
pub fn evaluate_capped<P, E, R, const OBS: usize>(
    policy: &P,
    env: &mut E,
    episodes: u32,
    max_steps: u32,
    rng: &mut R,
) -> Result<(f32, f32), Error>
where
    P: Controller<OBS, Action = ActionOf<E>> + ?Sized,
    E: Env<Obs = SVector<f32, OBS>>,
    R: Rng + ?Sized,
{
    if max_steps == 0 {
        return Err(Error::config("max_steps", "must be > 0"));
    }
    let (mut sum, mut sum_sq) = (0.0f64, 0.0f64);
    for _ in 0..episodes {
        let mut obs = env.reset(rng);
        let mut ret = 0.0f64;
        let mut steps = 0u32;
        loop {
            if steps == max_steps {
                return Err(Error::EpisodeTooLong { max_steps });
            }
            let step = env.step(policy.act(&obs)?)?;
            check_finite(step.reward)?;
            steps += 1;
            ret += f64::from(step.reward);
            obs = step.obs;
            if step.done() {
                break;
            }
        }
        sum += ret;
        sum_sq += ret * ret;
    }
    let n = f64::from(episodes.max(1));
    let mean = sum / n;
    let var = (sum_sq / n - mean * mean).max(0.0);
    // As before, the square root is libm's in f32 (`math`), never platform maths.
    Ok((saturating_f32(mean), math::sqrt(saturating_f32(var))))
}

/// `V(s)` of a critic network.
#[inline]
pub(crate) fn value<C: Network<OBS, 1>, const OBS: usize>(
    critic: &C,
    obs: &SVector<f32, OBS>,
) -> f32 {
    critic.forward(obs)[0]
}

/// Shorthand for the critic's training cache type.
pub type CriticCache<C> = <C as Layer>::Cache;

#[cfg(test)]
mod tests {
    use super::*;

    /// A plant whose episode `k` (counted from its resets) pays `k + 1` per
    /// step for `k + 2` steps: returns 2, 6, 12, 20 — mean 10, population
    /// variance 146 − 100 = 46.
    struct Staircase {
        episode: u32,
        step: u32,
    }

    impl Env for Staircase {
        type Obs = SVector<f32, 1>;
        type Space = crate::env::Discrete<2>;
        const SOLVED_RETURN: f32 = 0.0;

        fn reset<R: Rng + ?Sized>(&mut self, _rng: &mut R) -> SVector<f32, 1> {
            self.episode += 1;
            self.step = 0;
            SVector::from([0.0])
        }

        fn step(&mut self, _action: usize) -> Result<Step<SVector<f32, 1>>, Error> {
            self.step += 1;
            Ok(Step {
                obs: SVector::from([0.0]),
                reward: self.episode as f32,
                terminated: self.step == self.episode + 1,
                truncated: false,
            })
        }
    }

    /// An episode that never ends is refused after exactly `max_steps` steps.
    #[test]
    fn an_endless_episode_is_refused_at_the_cap() {
        struct Endless(u32);
        impl Env for Endless {
            type Obs = SVector<f32, 1>;
            type Space = crate::env::Discrete<2>;
            const SOLVED_RETURN: f32 = 0.0;
            fn reset<R: Rng + ?Sized>(&mut self, _rng: &mut R) -> SVector<f32, 1> {
                SVector::from([0.0])
            }
            fn step(&mut self, _action: usize) -> Result<Step<SVector<f32, 1>>, Error> {
                self.0 += 1;
                Ok(Step {
                    obs: SVector::from([0.0]),
                    reward: 1.0,
                    terminated: false,
                    truncated: false,
                })
            }
        }
        let policy = |_: &SVector<f32, 1>| -> Result<usize, Error> { Ok(1) };
        let mut env = Endless(0);
        let mut rng = crate::nn::fd::rng(1);
        assert_eq!(
            evaluate_capped(&policy, &mut env, 3, 10, &mut rng),
            Err(Error::EpisodeTooLong { max_steps: 10 })
        );
        assert_eq!(env.0, 10);
    }

    #[test]
    fn evaluation_reports_the_mean_and_population_std_of_returns() {
        let policy = |_: &SVector<f32, 1>| -> Result<usize, Error> { Ok(0) };
        let mut env = Staircase {
            episode: 0,
            step: 0,
        };
        let mut rng = crate::nn::fd::rng(1);
        let (mean, std) = evaluate(&policy, &mut env, 4, &mut rng).unwrap();
        assert_eq!(mean, 10.0);
        assert!((std - 46f32.sqrt()).abs() < 1e-6, "{std}");
        // No episodes: (0, 0).
        assert_eq!(
            evaluate(&policy, &mut env, 0, &mut rng).unwrap(),
            (0.0, 0.0)
        );
    }

    #[test]
    fn episode_returns_saturate_instead_of_overflowing() {
        let max = f64::from(f32::MAX);
        assert_eq!(saturating_f32(1e300), f32::MAX);
        assert_eq!(saturating_f32(-1e300), -f32::MAX);
        assert_eq!(saturating_f32(max), f32::MAX);
        assert_eq!(saturating_f32(-max), -f32::MAX);
        assert_eq!(saturating_f32(-2.5), -2.5);
        assert_eq!(saturating_f32(123.0), 123.0);
        assert!(saturating_f32(f64::NAN).is_nan());
    }
    use crate::env::{Discrete, Step};
    use crate::nn::{Mlp, fd};
    use crate::normalize::RunningNorm;
    use crate::params::Params;
    use crate::policy::{CategoricalActor, Gaussian, GaussianActor};
    use std::vec::Vec;

    type Net3 = Mlp<3, 8, 3>;
    type Net1 = Mlp<3, 8, 1>;

    fn log_softmax(z: &[f64]) -> Vec<f64> {
        let max = z.iter().cloned().fold(f64::MIN, f64::max);
        let lse = max + z.iter().map(|x| (x - max).exp()).sum::<f64>().ln();
        z.iter().map(|x| x - lse).collect()
    }

    /// ∂(α log π(a|s) + β H)/∂θ of the categorical actor against central
    /// differences of an independent f64 forward pass.
    #[test]
    fn categorical_actor_backward_matches_finite_differences() {
        let mut rng = fd::rng(11);
        let mut actor = CategoricalActor { net: Net3::ZERO };
        fd::randomise(&mut actor, &mut rng, 0.5);
        let obs = SVector::<f32, 3>::new(0.3, -0.7, 1.1);
        let (alpha, beta) = (0.8f32, -0.3f32);
        for action in 0..3 {
            let mut cache = <CategoricalActor<Net3> as Actor<3>>::ZERO_CACHE;
            actor.evaluate(&obs, &action, &mut cache).unwrap();
            let mut grad = CategoricalActor { net: Net3::ZERO };
            actor.backward(&cache, &action, alpha, beta, &mut grad);
            let x: Vec<f64> = obs.iter().map(|&v| v as f64).collect();
            let numeric = fd::numerical_gradient(&fd::flatten(&actor), |theta| {
                let lp = log_softmax(&Net3::reference_forward(theta, &x));
                let h: f64 = -lp.iter().map(|l| l.exp() * l).sum::<f64>();
                alpha as f64 * lp[action] + beta as f64 * h
            });
            fd::assert_close("categorical actor", &fd::flatten(&grad), &numeric);
        }
    }

    /// The same for the Gaussian actor, including the `log_std` parameters.
    #[test]
    fn gaussian_actor_backward_matches_finite_differences() {
        type Actor3 = GaussianActor<Net3, 3>;
        let mut rng = fd::rng(12);
        let mut actor = Actor3 {
            net: Net3::ZERO,
            head: Gaussian::with_log_std(0.0),
        };
        fd::randomise(&mut actor, &mut rng, 0.5);
        let obs = SVector::<f32, 3>::new(-0.4, 0.9, 0.2);
        let action = SVector::<f32, 3>::new(0.5, -1.0, 0.1);
        let (alpha, beta) = (-1.3f32, 0.6f32);
        let mut cache = <Actor3 as Actor<3>>::ZERO_CACHE;
        actor.evaluate(&obs, &action, &mut cache).unwrap();
        let mut grad = Actor3::ZERO;
        actor.backward(&cache, &action, alpha, beta, &mut grad);
        let x: Vec<f64> = obs.iter().map(|&v| v as f64).collect();
        let numeric = fd::numerical_gradient(&fd::flatten(&actor), |theta| {
            let (net, log_std) = theta.split_at(Net3::LEN);
            let mean = Net3::reference_forward(net, &x);
            let (mut lp, mut h) = (0.0, 0.0);
            for i in 0..3 {
                let z = (action[i] as f64 - mean[i]) / log_std[i].exp();
                lp += -0.5 * z * z - log_std[i] - 0.5 * (2.0 * core::f64::consts::PI).ln();
                h += 0.5 + 0.5 * (2.0 * core::f64::consts::PI).ln() + log_std[i];
            }
            alpha as f64 * lp + beta as f64 * h
        });
        fd::assert_close("gaussian actor", &fd::flatten(&grad), &numeric);
    }

    /// The bound loss through the batched backward pass: for two samples,
    /// one mean inside the soft bound and one past it (a narrow,
    /// off-centre range), the gradient of `α·Σ log π + w·Σ L_bound` against
    /// central differences of an f64 reference, and the returned loss.
    #[test]
    fn gaussian_bound_loss_matches_finite_differences() {
        use crate::env::Continuous;
        use crate::nn::Zeroed;
        use crate::policy::SOFT_BOUND;
        type Actor3 = GaussianActor<Net3, 3>;
        let mut rng = fd::rng(12);
        let mut actor = Actor3 {
            net: Net3::ZERO,
            head: Gaussian::with_log_std(-0.3),
        };
        fd::randomise(&mut actor, &mut rng, 0.5);
        let space = Continuous {
            low: [-0.2, 0.1, -0.05],
            high: [0.1, 0.3, 0.05],
        };
        let inputs = [
            SVector::<f32, 3>::new(-0.4, 0.9, 0.2),
            SVector::<f32, 3>::new(0.01, -0.02, 0.03),
        ];
        let actions = [
            SVector::<f32, 3>::new(0.5, -1.0, 0.1),
            SVector::<f32, 3>::new(-0.2, 0.3, 0.0),
        ];
        let (alpha, weight) = (-0.7f32, 0.9f32);
        let mut batch = std::boxed::Box::new(<<Actor3 as Actor<3>>::Batch<2> as Zeroed>::ZERO);
        <Actor3 as Actor<3>>::batch_inputs(&mut batch).copy_from_slice(&inputs);
        let mut out = [(0.0f32, 0.0f32); 2];
        actor
            .evaluate_batch(&mut batch, &actions, &mut out)
            .unwrap();
        let mut grad = Actor3::ZERO;
        let bound_loss = actor.backward_batch(
            &mut batch,
            &actions,
            &[alpha; 2],
            0.0,
            Some((&space, weight)),
            &mut grad,
        );
        let reference = |theta: &[f64]| -> (f64, f64) {
            let (net, log_std) = theta.split_at(Net3::LEN);
            let (mut lp, mut bound) = (0.0, 0.0);
            for (obs, action) in inputs.iter().zip(&actions) {
                let x: Vec<f64> = obs.iter().map(|&v| v as f64).collect();
                let mean = Net3::reference_forward(net, &x);
                for i in 0..3 {
                    let z = (action[i] as f64 - mean[i]) / log_std[i].exp();
                    lp += -0.5 * z * z - log_std[i] - 0.5 * (2.0 * core::f64::consts::PI).ln();
                    let (low, high) = (space.low[i] as f64, space.high[i] as f64);
                    let u = (mean[i] - 0.5 * (high + low)) / (0.5 * (high - low));
                    let excess = (u.abs() - SOFT_BOUND as f64).max(0.0);
                    bound += excess * excess;
                }
            }
            (lp, bound)
        };
        let theta = fd::flatten(&actor);
        let (_, expected_loss) = reference(&theta);
        assert!(
            expected_loss > 0.1,
            "a mean past the bound: {expected_loss}"
        );
        assert!((f64::from(bound_loss) - expected_loss).abs() < 1e-4 * expected_loss);
        let numeric = fd::numerical_gradient(&theta, |theta| {
            let (lp, bound) = reference(theta);
            alpha as f64 * lp + weight as f64 * bound
        });
        fd::assert_close("gaussian bound loss", &fd::flatten(&grad), &numeric);
    }

    /// A 3-observation task whose reward turns NaN after `nan_after` steps.
    struct Faulty {
        t: u32,
        nan_after: u32,
    }

    impl Env for Faulty {
        type Obs = SVector<f32, 3>;
        type Space = Discrete<3>;
        const SOLVED_RETURN: f32 = 0.0;
        fn reset<R: Rng + ?Sized>(&mut self, _rng: &mut R) -> SVector<f32, 3> {
            SVector::<f32, 3>::new(0.1, 0.2, 0.3)
        }
        fn step(&mut self, action: usize) -> Result<Step<SVector<f32, 3>>, Error> {
            if action >= 3 {
                return Err(Error::InvalidAction);
            }
            self.t += 1;
            let reward = if self.t > self.nan_after {
                f32::NAN
            } else {
                action as f32
            };
            let obs = SVector::<f32, 3>::new(self.t as f32 * 0.01, 0.0, -0.1);
            Ok(Step {
                obs,
                reward,
                terminated: self.t.is_multiple_of(7),
                truncated: self.t.is_multiple_of(11),
            })
        }
    }

    type Agent = Ppo<CategoricalActor<Net3>, Net1, 3, 32>;

    #[test]
    fn nan_reward_is_an_error_and_leaves_weights_untouched() {
        let mut rng = fd::rng(13);
        let mut agent = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
        agent
            .init(&Faulty { t: 0, nan_after: 0 }, &mut rng)
            .unwrap();
        let mut env = Faulty {
            t: 0,
            nan_after: 40,
        };
        let mut cursor = Cursor::start(&mut env, &mut rng);
        agent
            .collect(&mut env, &mut cursor, &mut rng, |_| {})
            .unwrap();
        agent.update(&mut rng).unwrap();
        let before = agent.train.params.clone();
        assert_eq!(
            agent.collect(&mut env, &mut cursor, &mut rng, |_| {}),
            Err(Error::NonFinite)
        );
        assert_eq!(agent.train.params, before);

        let mut ac = std::boxed::Box::new(ActorCritic::<CategoricalActor<Net3>, Net1, 3>::new(
            AcConfig::DEFAULT,
        ));
        ac.init(&Faulty { t: 0, nan_after: 0 }, &mut rng).unwrap();
        let mut env = Faulty { t: 0, nan_after: 5 };
        let mut cursor = Cursor::start(&mut env, &mut rng);
        for _ in 0..5 {
            ac.step(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
        }
        let (actor, critic) = (ac.actor.params.clone(), ac.critic.params.clone());
        assert_eq!(
            ac.step(&mut env, &mut cursor, &mut rng, |_| {}),
            Err(Error::NonFinite)
        );
        assert_eq!(
            (ac.actor.params.clone(), ac.critic.params.clone()),
            (actor, critic)
        );
    }

    #[test]
    fn same_seed_same_weights_bit_for_bit() {
        let run = |seed| {
            let mut rng = fd::rng(seed);
            let mut agent = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
            agent
                .init(&Faulty { t: 0, nan_after: 0 }, &mut rng)
                .unwrap();
            let mut env = Faulty {
                t: 0,
                nan_after: u32::MAX,
            };
            let mut cursor = Cursor::start(&mut env, &mut rng);
            let mut returns = Vec::new();
            for _ in 0..3 {
                agent
                    .collect(&mut env, &mut cursor, &mut rng, |e| returns.push(e.ret))
                    .unwrap();
                agent.update(&mut rng).unwrap();
            }
            (fd::flatten(&agent.train.params), returns)
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5).0, run(6).0);
    }

    #[test]
    fn online_critic_moves_toward_the_td_target() {
        let mut rng = fd::rng(14);
        let mut ac = std::boxed::Box::new(ActorCritic::<CategoricalActor<Net3>, Net1, 3>::new(
            AcConfig {
                normalize_obs: false,
                ..AcConfig::DEFAULT
            },
        ));
        ac.init(&Faulty { t: 0, nan_after: 0 }, &mut rng).unwrap();
        let mut env = Faulty {
            t: 0,
            nan_after: u32::MAX,
        };
        let mut cursor = Cursor::start(&mut env, &mut rng);
        let obs = cursor.obs;
        let v_before = value(&ac.critic.params, &obs);
        let stats = ac.step(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
        let v_after = value(&ac.critic.params, &obs);
        assert_eq!(stats.value, v_before);
        // The update moves V(s) in the direction of δ.
        assert_eq!(
            (v_after - v_before).signum(),
            stats.delta.signum(),
            "{stats:?}"
        );
    }

    #[test]
    fn evaluate_reports_mean_and_std() {
        let policy = Policy {
            actor: CategoricalActor { net: Net3::ZERO },
            obs_norm: RunningNorm::ZERO,
            space: Discrete::<3>,
        };
        let mut env = Faulty {
            t: 0,
            nan_after: u32::MAX,
        };
        let (mean, std) = evaluate(&policy, &mut env, 3, &mut fd::rng(1)).unwrap();
        // Zero logits: mode is action 0, reward 0 for every step.
        assert_eq!((mean, std), (0.0, 0.0));
    }
}
