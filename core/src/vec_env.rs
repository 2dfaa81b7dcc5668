//! Environment copies stepped side by side: SB3's `VecEnv`, without
//! allocation.
//!
//! Stable-Baselines3's PPO collects `n_steps` steps from each of `n_envs`
//! copies of the environment per rollout (`n_envs × n_steps` samples).
//! [`VecEnv`] is the caller-owned memory for that: `MAX_ENVS` copies (a
//! const capacity, like every buffer of this crate) and one [`Cursor`] per
//! copy — each copy has its own episode in progress, its own return and
//! length, so episode statistics stay per copy. How many copies a run
//! steps is the agent's run-time [`PpoConfig::n_envs`] (at most
//! `MAX_ENVS`), fixed when the run starts ([`VecEnv::start`]).
//!
//! Design (data separate from operations, as [`Trainer`] itself): a
//! `VecEnv` is plain data — it owns no RNG and steps nothing on its own.
//! [`Ppo::collect_envs`](crate::algo::Ppo::collect_envs) steps the copies in
//! use round by round (copy 0, 1, …, `n_envs − 1`, then again: the
//! step-major order of SB3's rollout buffer, so transition `t·n_envs + e` is
//! step `t` of copy `e`). The [`Trainer`] takes a `VecEnv` wherever it
//! takes one environment ([`Trainer::start`], [`Trainer::run`],
//! [`Trainer::save`], [`Trainer::resume`]; see
//! [`Envs`](crate::train::Envs)); a checkpoint holds every copy and every
//! cursor. With `n_envs = 1` the run is the single-environment run bit for
//! bit.
//!
//! Reward scaling ([`PpoConfig::normalize_reward`]) over copies keeps SB3
//! `VecNormalize`'s per-copy returns: each copy's running discounted return
//! lives in its cursor ([`Cursor::discounted_return`]), follows that copy's
//! episodes only, and is saved with it; every copy's return updates the
//! agent's one return normaliser, in stepping order (SB3 updates it once
//! per step with all copies' returns: see the field's docs).
//!
//! ```
//! use microrl::agent;
//! use microrl::algo::PpoConfig;
//! use microrl::env::CartPole;
//! use microrl::train::{RunConfig, Trainer};
//! use microrl::vec_env::VecEnv;
//! use rand_xoshiro::Xoshiro128PlusPlus;
//!
//! // RL Zoo's CartPole-v1: 8 copies × 32 steps = 256 samples per rollout.
//! type Agent = agent::Ppo<CartPole, 32, 256>;
//! let config = PpoConfig { n_envs: 8, n_steps: 32, epochs: 20, minibatches: 1, ..PpoConfig::CARTPOLE };
//! let mut agent = Box::new(Agent::new(config));
//! let mut envs = VecEnv::new([CartPole::new(); 8]);
//! let mut eval_env = CartPole::new();
//! let run = RunConfig::new(512, 475.0);
//! let mut trainer = Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut envs, run, 0)?;
//! let outcome = trainer.run(&mut *agent, &mut envs, &mut eval_env, &mut ())?;
//! assert_eq!(outcome.steps, 512);
//! # Ok::<(), microrl::Error>(())
//! ```
//!
//! [`PpoConfig::n_envs`]: crate::algo::PpoConfig::n_envs
//! [`PpoConfig::normalize_reward`]: crate::algo::PpoConfig::normalize_reward
//! [`Trainer`]: crate::train::Trainer
//! [`Trainer::start`]: crate::train::Trainer::start
//! [`Trainer::run`]: crate::train::Trainer::run
//! [`Trainer::save`]: crate::train::Trainer::save
//! [`Trainer::resume`]: crate::train::Trainer::resume

use nalgebra::SVector;
use rand_core::Rng;

use crate::algo::Cursor;
use crate::env::Env;
use crate::error::Error;

/// `MAX_ENVS` copies of environment `E` and a [`Cursor`] into each (see
/// the [module docs](self)). The first [`n_envs`](Self::n_envs) copies are
/// in use.
#[derive(Clone, Debug)]
pub struct VecEnv<E: Env, const MAX_ENVS: usize> {
    /// The copies (only the first [`n_envs`](Self::n_envs) are stepped).
    pub envs: [E; MAX_ENVS],
    /// The episode in progress on each copy.
    pub cursors: [Cursor<E::Obs>; MAX_ENVS],
    n_envs: usize,
}

impl<E: Env<Obs = SVector<f32, OBS>>, const OBS: usize, const MAX_ENVS: usize> VecEnv<E, MAX_ENVS> {
    /// The copies `envs`, none in use yet ([`start`](Self::start) resets
    /// them).
    pub fn new(envs: [E; MAX_ENVS]) -> Self {
        Self {
            envs,
            cursors: core::array::from_fn(|_| Cursor::idle()),
            n_envs: 0,
        }
    }

    /// The copies in use.
    pub fn n_envs(&self) -> usize {
        self.n_envs
    }

    /// Puts the first `n_envs` copies in use and resets them, copy 0 first,
    /// from `rng` (one [`Cursor::start`] each, so with one copy exactly what
    /// a single-environment run does).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `n_envs` when it is 0 or more than
    /// `MAX_ENVS`; nothing changes then.
    pub fn start<R: Rng + ?Sized>(&mut self, n_envs: usize, rng: &mut R) -> Result<(), Error> {
        Self::check(n_envs)?;
        for (env, cursor) in self.envs.iter_mut().zip(&mut self.cursors).take(n_envs) {
            *cursor = Cursor::start(env, rng);
        }
        self.n_envs = n_envs;
        Ok(())
    }

    /// The copies in use and their cursors, for
    /// [`Ppo::collect_envs`](crate::algo::Ppo::collect_envs).
    pub fn in_use(&mut self) -> (&mut [E], &mut [Cursor<SVector<f32, OBS>>]) {
        let n = self.n_envs.min(MAX_ENVS);
        (&mut self.envs[..n], &mut self.cursors[..n])
    }

    /// `n_envs` copies fit.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `n_envs`.
    pub(crate) fn check(n_envs: usize) -> Result<(), Error> {
        crate::config::check(
            "n_envs",
            n_envs > 0 && n_envs <= MAX_ENVS,
            "must be > 0 and at most the VecEnv's MAX_ENVS copies",
        )
    }

    /// Sets the copies in use after a checkpoint restored them.
    pub(crate) fn set_n_envs(&mut self, n_envs: usize) {
        self.n_envs = n_envs;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo::{Episode, PpoConfig};
    use crate::env::{CartPole, Discrete, Step};
    use crate::nn::Mlp;
    use crate::params::Params;
    use crate::policy::CategoricalActor;
    use crate::rng::Xoshiro128pp as Xoshiro128PlusPlus;
    use crate::train::{RunConfig, Trainer};
    use rand_core::SeedableRng;
    use std::boxed::Box;
    use std::vec::Vec;

    type Agent = crate::algo::Ppo<CategoricalActor<Mlp<4, 8, 2>>, Mlp<4, 8, 1>, 4, 64>;
    type Run = Trainer<SVector<f32, 4>, Xoshiro128PlusPlus>;

    /// Episodes of `len` steps paying 1 per step (NaN at step `nan_at` of
    /// an episode, if not 0); the observation carries the copy's `len` and
    /// the step within the episode.
    #[derive(Clone, Debug, PartialEq)]
    struct Fixed {
        len: u32,
        t: u32,
        nan_at: u32,
    }

    fn fixed(len: u32) -> Fixed {
        Fixed {
            len,
            t: 0,
            nan_at: 0,
        }
    }

    impl Env for Fixed {
        type Obs = SVector<f32, 2>;
        type Space = Discrete<2>;
        const SOLVED_RETURN: f32 = 0.0;
        fn reset<R: Rng + ?Sized>(&mut self, _rng: &mut R) -> SVector<f32, 2> {
            self.t = 0;
            SVector::<f32, 2>::new(self.len as f32, 0.0)
        }
        fn step(&mut self, _action: usize) -> Result<Step<SVector<f32, 2>>, Error> {
            self.t += 1;
            Ok(Step {
                obs: SVector::<f32, 2>::new(self.len as f32, self.t as f32),
                reward: if self.t == self.nan_at { f32::NAN } else { 1.0 },
                // Copy 1 (len 3) is cut by a time limit, the others terminate.
                terminated: self.t == self.len && self.len != 3,
                truncated: self.t == self.len && self.len == 3,
            })
        }
    }

    /// Each copy keeps its own episode: the episodes reported are each
    /// copy's own (length and return), the rollout is step-major with each
    /// copy's episode ends at `t·n_envs + e`, and the cursors count their
    /// copy's steps.
    #[test]
    fn copies_keep_their_own_episodes_step_major() {
        type Small = crate::algo::Ppo<CategoricalActor<Mlp<2, 4, 2>>, Mlp<2, 4, 1>, 2, 24>;
        let mut agent = Box::new(Small::new(PpoConfig {
            n_envs: 3,
            n_steps: 8,
            minibatches: 2,
            ..PpoConfig::DEFAULT
        }));
        let mut envs = VecEnv::new([2, 3, 5].map(fixed));
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(3);
        agent.init(&envs.envs[0], &mut rng).unwrap();
        envs.start(3, &mut rng).unwrap();
        let mut episodes: Vec<Episode> = Vec::new();
        let (copies, cursors) = envs.in_use();
        agent
            .collect_envs(copies, cursors, &mut rng, |e| episodes.push(e))
            .unwrap();
        assert_eq!((agent.steps, agent.rollout.len()), (24, 24));
        // 8 steps each: 4 episodes of 2, 2 of 3, 1 of 5, in stepping order.
        let lens: Vec<u32> = episodes.iter().map(|e| e.len).collect();
        assert_eq!(lens, [2, 3, 2, 5, 2, 3, 2]);
        assert!(episodes.iter().all(|e| e.ret == e.len as f32));
        for t in 0..8 {
            for (e, len) in [2usize, 3, 5].into_iter().enumerate() {
                let i = t * 3 + e;
                let ends = (t + 1) % len == 0;
                assert_eq!(agent.rollout.terminated[i], ends && len != 3, "{t} {e}");
                assert_eq!(agent.rollout.truncated[i], ends && len == 3, "{t} {e}");
            }
        }
        let steps: Vec<u64> = envs.cursors.iter().map(|c| c.steps).collect();
        assert_eq!(steps, [8, 8, 8]);
        assert_eq!((envs.cursors[0].len, envs.cursors[2].len), (0, 3));
        assert!(agent.update(&mut rng).unwrap().policy_loss.is_finite());
    }

    type Pair = crate::algo::Ppo<CategoricalActor<Mlp<2, 4, 2>>, Mlp<2, 4, 1>, 2, 10>;

    /// Two copies of [`Fixed`] (episodes of 2 and 3 steps) with reward
    /// scaling at `γ = 0.5`, after one rollout of 5 steps each.
    fn scaled_two_copies() -> (Box<Pair>, VecEnv<Fixed, 2>, Xoshiro128PlusPlus) {
        let mut agent = Box::new(Pair::new(PpoConfig {
            n_envs: 2,
            n_steps: 5,
            minibatches: 1,
            gamma: 0.5,
            normalize_reward: true,
            ..PpoConfig::DEFAULT
        }));
        let mut envs = VecEnv::new([2, 3].map(fixed));
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(4);
        agent.init(&envs.envs[0], &mut rng).unwrap();
        envs.start(2, &mut rng).unwrap();
        let (copies, cursors) = envs.in_use();
        agent
            .collect_envs(copies, cursors, &mut rng, |_| {})
            .unwrap();
        (agent, envs, rng)
    }

    /// Reward scaling over copies is SB3 `VecNormalize`'s: each copy's
    /// discounted return follows its own episodes (reset at its own
    /// episode ends), the one return normaliser folds in every copy's
    /// return in stepping order, and each reward is divided by the
    /// normaliser's std just after its own return was folded in.
    #[test]
    fn reward_scaling_keeps_one_discounted_return_per_copy() {
        let (agent, envs, _) = scaled_two_copies();
        // G ← 0.5·G + 1, by hand. Copy 0 (episodes of 2): 1, 1.5 | 1, 1.5 | 1.
        // Copy 1 (episodes of 3): 1, 1.5, 1.75 | 1, 1.5. Step-major:
        let returns = [1.0, 1.0, 1.5, 1.5, 1.0, 1.75, 1.5, 1.0, 1.0, 1.5];
        let mut norm = crate::normalize::RunningNorm::<1>::ZERO;
        for (i, g) in returns.into_iter().enumerate() {
            norm.update(&SVector::<f32, 1>::new(g)).unwrap();
            let std = crate::math::sqrt(norm.var[0] + crate::normalize::EPSILON);
            let clip = crate::normalize::CLIP;
            let scaled = (1.0 / std).clamp(-clip, clip);
            assert_eq!(agent.rollout.rewards[i].to_bits(), scaled.to_bits(), "{i}");
        }
        assert_eq!(agent.return_norm, norm);
        // The last rewards are scaled, not clipped: the check has teeth.
        assert!(
            agent.rollout.rewards[9] < 9.0,
            "{}",
            agent.rollout.rewards[9]
        );
        // Each copy carries its own return into the next rollout: copy 0
        // is one step into its third episode, copy 1 two into its second.
        let carried = envs.cursors.each_ref().map(|c| c.discounted_return);
        assert_eq!(carried, [1.0, 1.5]);
        assert_eq!(agent.discounted_return, 0.0);
    }

    /// A refused collect over copies restores every copy's discounted
    /// return with the shared normaliser, even when refused after GAE (a
    /// critic stuck at 1.5e15: value targets beyond a gradient).
    #[test]
    fn refused_collect_restores_every_copys_discounted_return() {
        let (mut agent, mut envs, mut rng) = scaled_two_copies();
        agent.update(&mut rng).unwrap();
        let head = &mut agent.train.params.critic.second.second;
        head.weight.fill(0.0);
        head.bias[0] = 1.5e15;
        let before = (agent.return_norm.clone(), agent.steps);
        let (copies, cursors) = envs.in_use();
        assert_eq!(
            agent.collect_envs(copies, cursors, &mut rng, |_| {}),
            Err(Error::ValueOverflow)
        );
        let carried = envs.cursors.each_ref().map(|c| c.discounted_return);
        assert_eq!(carried, [1.0, 1.5]);
        assert_eq!((agent.return_norm.clone(), agent.steps), before);
        assert!(!agent.rollout.is_ready());
    }

    /// A collect refused in the middle of a round (copy 1's reward is NaN
    /// after copy 0 has stepped and folded its return in) restores what
    /// the agent owns: both copies' discounted returns, the shared return
    /// normaliser, the observation normaliser and the step count. (The
    /// cursors' observations and counters follow the plants, which did
    /// step.)
    #[test]
    fn collect_refused_mid_round_restores_every_copy() {
        let (mut agent, mut envs, mut rng) = scaled_two_copies();
        agent.update(&mut rng).unwrap();
        // Copy 1 is at step 2 of its episode: its next reward is NaN.
        envs.envs[1].nan_at = 3;
        let state = |agent: &Pair| {
            (
                agent.return_norm.clone(),
                agent.obs_norm.clone(),
                agent.steps,
            )
        };
        let before = state(&agent);
        let (copies, cursors) = envs.in_use();
        assert_eq!(
            agent.collect_envs(copies, cursors, &mut rng, |_| {}),
            Err(Error::NonFinite)
        );
        assert_eq!(state(&agent), before);
        let carried = envs.cursors.each_ref().map(|c| c.discounted_return);
        assert_eq!(carried, [1.0, 1.5]);
        // Copy 0 did step (and ended its episode) before copy 1 refused.
        assert_eq!(envs.cursors[0].steps, 6);
        assert!(!agent.rollout.is_ready());
    }

    /// Every scalar of the agent's parameters and Adam state, as bits.
    fn bits(a: &Agent) -> Vec<u32> {
        fn push<P: Params>(out: &mut Vec<u32>, p: &P) {
            for i in 0..P::TENSORS {
                out.extend(p.tensor(i).iter().map(|x| x.to_bits()));
            }
        }
        let p = &a.train;
        let mut out = Vec::new();
        for t in [&p.params, &p.optimizer.m, &p.optimizer.v] {
            push(&mut out, t);
        }
        out.extend(a.obs_norm.mean.iter().map(|x| x.to_bits()));
        out.push(p.optimizer.t);
        out
    }

    /// With `n_envs = 1` the run over copies is the single-environment run,
    /// bit for bit: weights, Adam, normaliser, outcome, the environment and
    /// the cursor, and the same checkpoint bytes.
    #[test]
    fn one_copy_is_the_single_environment_run_bit_for_bit() {
        let config = PpoConfig {
            total_steps: 1_280,
            ..PpoConfig::CARTPOLE
        };
        let run = RunConfig {
            eval_interval: 128,
            quick_episodes: 2,
            select_episodes: 2,
            report_episodes: 3,
            early_stop: false,
            ..RunConfig::new(1_280, 20.0)
        };
        let mut single = Box::new(Agent::new(config));
        let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
        let mut trainer = Run::start(&mut *single, &mut env, run, 9).unwrap();
        let outcome = trainer
            .run(&mut *single, &mut env, &mut eval_env, &mut ())
            .unwrap();

        let mut copies = Box::new(Agent::new(config));
        let mut envs = VecEnv::new([CartPole::new(); 3]);
        let mut eval_env = CartPole::new();
        let mut vec_trainer = Run::start(&mut *copies, &mut envs, run, 9).unwrap();
        let vec_outcome = vec_trainer
            .run(&mut *copies, &mut envs, &mut eval_env, &mut ())
            .unwrap();
        assert_eq!(envs.n_envs(), 1);
        assert_eq!(vec_outcome, outcome);
        assert_eq!(bits(&copies), bits(&single));
        assert_eq!(copies.steps, single.steps);
        assert_eq!(envs.envs[0], env);
        assert_eq!(envs.cursors[0], trainer.cursor);
        assert_eq!(vec_trainer.rng, trainer.rng);
        // Copies not in use are never touched.
        assert_eq!(envs.envs[1], CartPole::new());
        assert_eq!(envs.cursors[1], Cursor::idle());

        // A one-copy checkpoint is the single checkpoint, byte for byte.
        let mut one = VecEnv::new([env]);
        one.cursors[0] = trainer.cursor.clone();
        let mut a = std::vec![0u8; Run::checkpoint_len::<Agent, VecEnv<CartPole, 1>>()];
        let mut b = std::vec![0u8; Run::checkpoint_len::<Agent, CartPole>()];
        assert_eq!(trainer.save(&*single, &one, &mut a), Ok(a.len()));
        assert_eq!(trainer.save(&*single, &env, &mut b), Ok(b.len()));
        assert_eq!(a, b);
    }

    /// Refused configurations name their field and change nothing: not
    /// the agent, not the copies, not the cursors.
    #[test]
    fn refused_configurations_name_the_field_and_change_nothing() {
        let run = RunConfig::new(1_000, 1.0);
        for (config, field) in [
            (
                PpoConfig {
                    n_envs: 0,
                    ..PpoConfig::DEFAULT
                },
                "n_envs",
            ),
            // 5 copies do not fit a VecEnv of 4.
            (
                PpoConfig {
                    n_envs: 5,
                    n_steps: 8,
                    ..PpoConfig::DEFAULT
                },
                "n_envs",
            ),
            // 4 × 17 = 68 > 64.
            (
                PpoConfig {
                    n_envs: 4,
                    n_steps: 17,
                    ..PpoConfig::DEFAULT
                },
                "n_steps",
            ),
            // 3 × 10 = 30 samples in 4 minibatches.
            (
                PpoConfig {
                    n_envs: 3,
                    n_steps: 10,
                    ..PpoConfig::DEFAULT
                },
                "minibatches",
            ),
        ] {
            let mut agent = Box::new(Agent::new(config));
            let before = bits(&agent);
            let mut envs = VecEnv::new([CartPole::new(); 4]);
            let result = Run::start(&mut *agent, &mut envs, run, 1);
            assert!(
                matches!(result, Err(Error::InvalidConfig { field: f, .. }) if f == field),
                "{config:?}: {result:?}"
            );
            assert_eq!(bits(&agent), before, "{field}");
            assert_eq!((agent.steps, envs.n_envs()), (0, 0));
            assert!(envs.envs.iter().all(|e| *e == CartPole::new()));
            assert!(envs.cursors.iter().all(|c| *c == Cursor::idle()));
        }
        // The defaults are one copy filling the buffer: 64 samples.
        assert_eq!(PpoConfig::DEFAULT.rollout_len(64), 64);
        // The single-environment collect refuses more than one copy, before
        // anything changes.
        let mut agent = Box::new(Agent::new(PpoConfig {
            n_envs: 2,
            ..PpoConfig::DEFAULT
        }));
        let mut env = CartPole::new();
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(2);
        agent.init(&env, &mut rng).unwrap();
        let before = bits(&agent);
        let mut cursor = Cursor::start(&mut env, &mut rng);
        let saved = (env, cursor.clone());
        assert!(matches!(
            agent.collect(&mut env, &mut cursor, &mut rng, |_| {}),
            Err(Error::InvalidConfig {
                field: "n_envs",
                ..
            })
        ));
        assert_eq!((bits(&agent), env, cursor), (before, saved.0, saved.1));
        // So does a collect given fewer copies than n_envs.
        let mut envs = [CartPole::new()];
        let mut cursors = [Cursor::idle()];
        assert!(matches!(
            agent.collect_envs(&mut envs, &mut cursors, &mut rng, |_| {}),
            Err(Error::InvalidConfig {
                field: "n_envs",
                ..
            })
        ));
        assert_eq!(agent.steps, 0);
    }

    /// `collect_envs` checks the copies it is given against the agent's
    /// configuration as it is now (a public field, changeable after
    /// `init`): no copies in use, fewer copies or fewer cursors than
    /// `n_envs`, or a rollout beyond `N` are refused naming the field,
    /// before anything changes; more copies and cursors than `n_envs`, and
    /// a rollout short of `N`, are collected (the spare copy untouched).
    #[test]
    fn collect_envs_refuses_copies_that_do_not_fit_before_anything_changes() {
        let config = PpoConfig {
            n_envs: 2,
            n_steps: 8,
            minibatches: 1,
            ..PpoConfig::DEFAULT
        };
        let mut agent = Box::new(Agent::new(config));
        let mut envs = VecEnv::new([CartPole::new(); 3]);
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(6);
        agent.init(&envs.envs[0], &mut rng).unwrap();
        envs.start(3, &mut rng).unwrap();
        let before = (bits(&agent), envs.clone(), rng.clone());
        // (n_envs, n_steps, copies given, cursors given, field refused)
        for (n_envs, n_steps, copies, cursors, field) in [
            (0, 8, 3, 3, "n_envs"),
            (2, 8, 1, 3, "n_envs"),
            (2, 8, 3, 1, "n_envs"),
            // 2 × 33 = 66 > 64.
            (2, 33, 3, 3, "n_steps"),
        ] {
            agent.config = PpoConfig {
                n_envs,
                n_steps,
                ..config
            };
            let result = agent.collect_envs(
                &mut envs.envs[..copies],
                &mut envs.cursors[..cursors],
                &mut rng,
                |_| {},
            );
            assert!(
                matches!(result, Err(Error::InvalidConfig { field: f, .. }) if f == field),
                "{n_envs} {n_steps} {copies} {cursors}: {result:?}"
            );
            assert_eq!((bits(&agent), agent.steps), (before.0.clone(), 0));
            assert_eq!(
                (&envs.envs, &envs.cursors),
                (&before.1.envs, &before.1.cursors)
            );
            assert_eq!(rng, before.2);
        }
        agent.config = config;
        let (copies, cursors) = envs.in_use();
        agent
            .collect_envs(copies, cursors, &mut rng, |_| {})
            .unwrap();
        assert_eq!((agent.rollout.len(), agent.steps), (16, 16));
        assert_eq!(
            (envs.envs[2], &envs.cursors[2]),
            (before.1.envs[2], &before.1.cursors[2])
        );
    }
}
