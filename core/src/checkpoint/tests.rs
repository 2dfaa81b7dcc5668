//! Checkpoint round trips, refusals and bit-identical resumes.

use super::*;
use crate::agent;
use crate::algo::replay::ReplayBuffer;
use crate::algo::{AcConfig, PpoConfig, ReinforceConfig};
use crate::algo::{Actor, ActorCritic, Anchored, Critic, Cursor, Grpo, Ppo, Reinforce, Trpo};
use crate::algo::{SacConfig, Td3Config};
use crate::env::Env;
use crate::env::{CartPole, CartPoleContinuous, Pendulum};
use crate::error::Error;
use crate::nn::Network;
use crate::optim::TrainState;
use crate::params::Params;
use crate::rng::Xoshiro128pp;
use crate::train::Outcome;
use crate::train::{Learner, RunConfig, Trainer};
use crate::vec_env::VecEnv;
use nalgebra::SVector;
use std::boxed::Box;
use std::vec;
use std::vec::Vec;

type PpoAgent = agent::Ppo<CartPole, 8, 64>;
type AcAgent = agent::ActorCritic<CartPole, 8>;
type ReinforceAgent = agent::Reinforce<CartPole, 8, 512>;
type T = Trainer<SVector<f32, 4>, Xoshiro128pp>;

/// FNV-1a over the bits of every scalar of `p`.
fn digest<P: Params>(h: &mut u64, p: &P) {
    for i in 0..P::TENSORS {
        for &x in p.tensor(i) {
            for b in x.to_bits().to_le_bytes() {
                *h = (*h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
            }
        }
    }
}

fn digest_train<P: Params>(h: &mut u64, s: &TrainState<P>) {
    digest(h, &s.params);
    digest(h, &s.optimizer.m);
    digest(h, &s.optimizer.v);
    *h ^= u64::from(s.optimizer.t).wrapping_mul(0x9e37_79b9);
}

/// Everything a checkpoint restores, hashed.
trait Digest {
    fn digest(&self) -> u64;
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize> Digest
    for Ppo<A, C, OBS, N, CHUNK>
{
    fn digest(&self) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325;
        digest_train(&mut h, &self.train);
        digest(&mut h, &self.space);
        digest(&mut h, &self.obs_norm);
        digest(&mut h, &self.return_norm);
        h ^= u64::from(self.discounted_return.to_bits()) << 7;
        h ^= u64::from(self.kl_coef.to_bits()) << 23;
        h ^ self.steps.rotate_left(17)
    }
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> Digest
    for Anchored<A, C, OBS, N>
{
    fn digest(&self) -> u64 {
        let mut h = self.ppo.digest();
        digest(&mut h, &self.reference);
        h ^ (u64::from(self.kl_coef.to_bits()) << 29)
    }
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> Digest
    for Reinforce<A, C, OBS, N>
{
    fn digest(&self) -> u64 {
        self.inner.digest()
    }
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> Digest
    for Trpo<A, C, OBS, N>
{
    fn digest(&self) -> u64 {
        self.inner.digest()
    }
}

impl<A: Actor<OBS>, const OBS: usize, const N: usize, const CHUNK: usize> Digest
    for Grpo<A, OBS, N, CHUNK>
{
    fn digest(&self) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325;
        digest_train(&mut h, &self.train);
        digest(&mut h, &self.space);
        digest(&mut h, &self.obs_norm);
        h ^ self.steps.rotate_left(17)
    }
}

impl<L, const OBS: usize, const BLOCK: usize> Digest for crate::algo::Lagged<L, OBS, BLOCK>
where
    L: crate::algo::LaggedLearner<OBS> + Digest,
    L::Behaviour: Field,
    crate::algo::lagged::ActionOf<L::Behaviour, OBS>: crate::algo::lagged::TickAction,
{
    fn digest(&self) -> u64 {
        let mut h = self.learner.digest();
        // The published behaviour and the pending block (actions, flags,
        // next observations) as their sections save them.
        for b in super::field_bytes(&self.published)
            .into_iter()
            .chain(super::field_bytes(&self.pending))
        {
            h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        h ^= rand_core::Rng::next_u64(&mut self.acting_rng.clone()).rotate_left(29);
        h ^ self.published_count.rotate_left(9)
    }
}

impl<A: Actor<OBS>, C: Network<OBS, 1>, const OBS: usize> Digest for ActorCritic<A, C, OBS> {
    fn digest(&self) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325;
        digest_train(&mut h, &self.actor);
        digest_train(&mut h, &self.critic);
        digest(&mut h, &self.space);
        digest(&mut h, &self.obs_norm);
        digest(&mut h, &self.return_norm);
        h ^= u64::from(self.discounted_return.to_bits()) << 7;
        h ^ self.steps.rotate_left(17)
    }
}

/// Everything SAC and TD3 save, hashed: their checkpoint sections' bytes
/// (every replay slot, the rings' counters, the targets, `log α`, Adam's
/// states and the step counters).
fn digest_section<S: AgentState>(s: &S) -> u64 {
    state_bytes(s).iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

impl Digest for SacAgent {
    fn digest(&self) -> u64 {
        digest_section(self)
    }
}

impl Digest for Td3Agent {
    fn digest(&self) -> u64 {
        digest_section(self)
    }
}

fn run_config(total_steps: u64, eval_interval: u64, threshold: f32) -> RunConfig {
    RunConfig {
        eval_interval,
        solved_eval_interval: eval_interval,
        quick_episodes: 2,
        select_episodes: 3,
        report_episodes: 4,
        // A threshold a young policy passes, so the checkpoints after
        // it carry `solved_at_step` and the selection; no early stop, so
        // the run goes on to the budget. A margin of one standard error
        // (not the default's three) over only 4 deciding episodes.
        select_margin: 1.0,
        early_stop: false,
        ..RunConfig::new(total_steps, threshold)
    }
}

/// Runs `fresh()` to the end uninterrupted, and again with a checkpoint
/// after each of `stops` iterations, resumed into a fresh agent,
/// environment and trainer: the final agent state (digest), the final
/// training environment state and the outcome must be bit-identical.
fn resume_is_bit_identical<L, E, const OBS: usize>(
    fresh: impl Fn() -> Box<L>,
    config: RunConfig,
    stops: &[u64],
) where
    L: Learner<E> + AgentState + Digest,
    E: Env<Obs = SVector<f32, OBS>> + EnvState + Default + Copy + PartialEq + core::fmt::Debug,
{
    let reference = {
        let mut agent = fresh();
        let (mut env, mut eval_env) = (E::default(), E::default());
        let mut trainer =
            Trainer::<SVector<f32, OBS>, Xoshiro128pp>::start(&mut *agent, &mut env, config, 7)
                .unwrap();
        let outcome = trainer
            .run(&mut *agent, &mut env, &mut eval_env, &mut ())
            .unwrap();
        (agent.digest(), outcome, env)
    };
    assert!(
        reference.1.solved_at_step.is_some(),
        "the run should pass its (low) threshold: {:?}",
        reference.1
    );
    let mut buf = vec![0u8; Trainer::<SVector<f32, OBS>, Xoshiro128pp>::checkpoint_len::<L, E>()];
    for &stop in stops {
        let mut agent = fresh();
        let (mut env, mut eval_env) = (E::default(), E::default());
        let mut trainer =
            Trainer::<SVector<f32, OBS>, Xoshiro128pp>::start(&mut *agent, &mut env, config, 7)
                .unwrap();
        for _ in 0..stop {
            trainer
                .iterate(&mut *agent, &mut env, &mut eval_env, &mut ())
                .unwrap();
        }
        assert_eq!(trainer.save(&*agent, &env, &mut buf), Ok(buf.len()));
        let saved = (agent.digest(), env, trainer);

        let mut agent = fresh();
        let (mut env, mut eval_env) = (E::default(), E::default());
        let mut trainer =
            Trainer::<SVector<f32, OBS>, Xoshiro128pp>::resume(&mut *agent, &mut env, &buf)
                .unwrap();
        // Restored as saved, field by field ...
        assert_eq!(agent.digest(), saved.0);
        assert_eq!(env, saved.1);
        let t = &saved.2;
        assert_eq!(trainer.cursor, t.cursor);
        assert_eq!(trainer.config, t.config);
        assert_eq!((trainer.episodes, trainer.updates), (t.episodes, t.updates));
        assert_eq!(
            (trainer.solved_at_step, trainer.selection),
            (t.solved_at_step, t.selection)
        );
        assert_eq!(trainer.next_eval, t.next_eval);
        assert_eq!(
            (&trainer.rng, &trainer.select_rng, &trainer.report_rng),
            (&t.rng, &t.select_rng, &t.report_rng)
        );
        // ... and the rest of the run is the uninterrupted run's.
        let outcome: Outcome = trainer
            .run(&mut *agent, &mut env, &mut eval_env, &mut ())
            .unwrap();
        assert_eq!(outcome, reference.1, "outcome after resuming at {stop}");
        assert_eq!(
            agent.digest(),
            reference.0,
            "agent after resuming at {stop}"
        );
        assert_eq!(env, reference.2, "environment after resuming at {stop}");
    }
}

#[test]
fn ppo_resumes_bit_identically() {
    let config = PpoConfig {
        total_steps: 2_048,
        normalize_obs: true,
        normalize_reward: true,
        ..PpoConfig::CARTPOLE
    };
    resume_is_bit_identical::<_, CartPole, 4>(
        || Box::new(PpoAgent::new(config)),
        run_config(2_048, 256, 12.0),
        &[1, 3, 7, 20],
    );
}

/// The lagged schedule stopped after 1, 3, 7 and 20 iterations — each
/// stop with a pending rollout acted by the policy before the last
/// publish — resumes bit for bit: the learner, the published policy, the
/// pending ticks and the control loop's RNG stream.
#[test]
fn lagged_ppo_resumes_bit_identically() {
    type Lagged = crate::algo::LaggedPpo<
        crate::policy::CategoricalActor<crate::nn::Mlp<4, 8, 2>>,
        crate::nn::Mlp<4, 8, 1>,
        4,
        64,
    >;
    let config = PpoConfig {
        total_steps: 2_048,
        normalize_obs: true,
        normalize_reward: true,
        ..PpoConfig::CARTPOLE
    };
    resume_is_bit_identical::<_, CartPole, 4>(
        || Box::new(Lagged::new(Ppo::new(config))),
        run_config(2_048, 256, 12.0),
        &[1, 3, 7, 20],
    );
}

const MAX: usize = 4;
type Envs = VecEnv<CartPole, MAX>;

/// PPO with `config` over 3 environment copies (of a `VecEnv` of 4: one
/// spare) stopped after 1, 3, 7 and 20 iterations, saved, resumed into
/// a fresh agent, fresh copies and a fresh trainer: the rest of the run
/// ends bit-identical to the uninterrupted one — agent, every copy,
/// every cursor (its discounted return included), outcome. Returns the
/// last checkpoint and a fresh agent, copies and evaluation copy.
fn copies_resume_bit_identically(
    config: PpoConfig,
) -> (Vec<u8>, impl Fn() -> (Box<PpoAgent>, Envs, CartPole)) {
    let run = run_config(2_016, 240, 12.0);
    let fresh = move || {
        (
            Box::new(PpoAgent::new(config)),
            Envs::new([CartPole::new(); MAX]),
            CartPole::new(),
        )
    };
    let reference = {
        let (mut agent, mut envs, mut eval_env) = fresh();
        let mut trainer = T::start(&mut *agent, &mut envs, run, 7).unwrap();
        let outcome = trainer
            .run(&mut *agent, &mut envs, &mut eval_env, &mut ())
            .unwrap();
        (agent.digest(), outcome, envs)
    };
    assert!(reference.1.solved_at_step.is_some(), "{:?}", reference.1);
    assert_eq!(reference.1.steps, 2_016);
    // The three copies ran their own episodes.
    let r = &reference.2;
    assert!(r.cursors[..3].iter().all(|c| c.steps == 2_016 / 3));
    assert!(r.envs[0] != r.envs[1] && r.envs[1] != r.envs[2]);
    let mut buf = vec![0u8; T::checkpoint_len::<PpoAgent, VecEnv<CartPole, MAX>>()];
    for stop in [1, 3, 7, 20] {
        let (mut agent, mut envs, mut eval_env) = fresh();
        let mut trainer = T::start(&mut *agent, &mut envs, run, 7).unwrap();
        for _ in 0..stop {
            trainer
                .iterate(&mut *agent, &mut envs, &mut eval_env, &mut ())
                .unwrap();
        }
        assert_eq!(trainer.save(&*agent, &envs, &mut buf), Ok(buf.len()));
        let saved = (agent.digest(), envs.clone());
        // Mid-episode copies carry a discounted return exactly when
        // rewards are scaled.
        let returns = saved.1.cursors.each_ref().map(|c| c.discounted_return);
        assert_eq!(
            returns[..3].iter().any(|&g| g != 0.0),
            config.normalize_reward,
            "{returns:?}"
        );

        let (mut agent, mut envs, mut eval_env) = fresh();
        let mut trainer = T::resume(&mut *agent, &mut envs, &buf).unwrap();
        assert_eq!(agent.digest(), saved.0);
        assert_eq!((envs.envs, &envs.cursors), (saved.1.envs, &saved.1.cursors));
        assert_eq!(envs.n_envs(), 3);
        let outcome = trainer
            .run(&mut *agent, &mut envs, &mut eval_env, &mut ())
            .unwrap();
        assert_eq!(outcome, reference.1, "outcome after resuming at {stop}");
        assert_eq!(
            agent.digest(),
            reference.0,
            "agent after resuming at {stop}"
        );
        assert_eq!(
            envs.envs, reference.2.envs,
            "copies after resuming at {stop}"
        );
        assert_eq!(
            envs.cursors, reference.2.cursors,
            "cursors after resuming at {stop}"
        );
    }
    (buf, fresh)
}

/// With reward scaling each copy's discounted return resumes with its
/// cursor (format `VERSION_ENVS`; the same checkpoint as format
/// `VERSION` is refused).
#[test]
fn ppo_over_environment_copies_with_reward_scaling_resumes_bit_identically() {
    let config = PpoConfig {
        total_steps: 2_016,
        n_envs: 3,
        n_steps: 16,
        normalize_reward: true,
        ..PpoConfig::CARTPOLE
    };
    let (mut buf, fresh) = copies_resume_bit_identically(config);
    assert_eq!(buf[4..6], VERSION_ENVS.to_le_bytes());
    buf[4..6].copy_from_slice(&VERSION.to_le_bytes());
    recrc(&mut buf);
    let (mut agent, mut envs, _) = fresh();
    assert_eq!(
        T::resume(&mut *agent, &mut envs, &buf).err(),
        Some(Error::UnsupportedVersion)
    );
}

/// Copies without reward scaling resume bit for bit too, and a refused
/// resume changes nothing.
#[test]
fn ppo_over_environment_copies_resumes_bit_identically() {
    let config = PpoConfig {
        total_steps: 2_016,
        n_envs: 3,
        n_steps: 16,
        ..PpoConfig::CARTPOLE
    };
    let (buf, fresh) = copies_resume_bit_identically(config);
    // Refused without change: another number of copies, and a copy's
    // state it cannot be in (the last copy's, after the others have
    // been checked).
    let (mut agent, _, _) = fresh();
    let before = agent.digest();
    // Several copies into one environment, and one environment's
    // checkpoint into several copies: another shape, not another format.
    let mut single = CartPole::new();
    assert_eq!(
        T::resume(&mut *agent, &mut single, &buf).err(),
        Some(Error::ShapeMismatch)
    );
    let mut one = Box::new(PpoAgent::new(PpoConfig::CARTPOLE));
    let mut env = CartPole::new();
    let mut trainer = T::start(&mut *one, &mut env, run_config(1_024, 64, 12.0), 3).unwrap();
    trainer
        .iterate(&mut *one, &mut env, &mut CartPole::new(), &mut ())
        .unwrap();
    let mut single_buf = vec![0u8; T::checkpoint_len::<PpoAgent, CartPole>()];
    assert_eq!(
        trainer.save(&*one, &env, &mut single_buf),
        Ok(single_buf.len())
    );
    assert_eq!(single_buf[4..6], VERSION.to_le_bytes());
    let mut copies = Envs::new([CartPole::new(); MAX]);
    assert_eq!(
        T::resume(&mut *one, &mut copies, &single_buf).err(),
        Some(Error::ShapeMismatch)
    );
    let mut three = VecEnv::new([CartPole::new(); 3]);
    assert_eq!(
        T::resume(&mut *agent, &mut three, &buf).err(),
        Some(Error::ShapeMismatch)
    );
    let mut two = VecEnv::new([CartPole::new(); 2]);
    assert!(matches!(
        T::resume(&mut *agent, &mut two, &buf),
        Err(Error::InvalidConfig {
            field: "n_envs",
            ..
        })
    ));
    let mut bad = buf.clone();
    let last_copy = bad.len() - 4 - 8 * CartPole::WORDS;
    bad[last_copy..last_copy + 8].copy_from_slice(&f64::NAN.to_bits().to_le_bytes());
    recrc(&mut bad);
    let mut envs = Envs::new([CartPole::new(); MAX]);
    assert!(T::resume(&mut *agent, &mut envs, &bad).is_err());
    assert_eq!(agent.digest(), before);
    assert!(envs.envs.iter().all(|e| *e == CartPole::new()));
    assert!(envs.cursors.iter().all(|c| *c == Cursor::idle()));
    assert_eq!(envs.n_envs(), 0);
}

/// PPO-penalty: the adaptive KL coefficient is state that must resume.
#[test]
fn ppo_penalty_resumes_bit_identically() {
    let config = PpoConfig {
        total_steps: 2_048,
        clip_range: crate::optim::Schedule::Constant(f32::INFINITY),
        kl_coef: 1.0,
        kl_target: Some(0.01),
        ..PpoConfig::CARTPOLE
    };
    resume_is_bit_identical::<_, CartPole, 4>(
        || Box::new(PpoAgent::new(config)),
        run_config(2_048, 256, 12.0),
        &[1, 3, 6],
    );
    // β moved during those iterations (otherwise this checks nothing new).
    let mut agent = Box::new(PpoAgent::new(config));
    let mut env = CartPole::new();
    let mut rng = <crate::rng::Xoshiro128pp as rand_core::SeedableRng>::seed_from_u64(5);
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = crate::algo::Cursor::start(&mut env, &mut rng);
    for _ in 0..3 {
        agent
            .collect(&mut env, &mut cursor, &mut rng, |_| {})
            .unwrap();
        agent.update(&mut rng).unwrap();
    }
    assert_ne!(agent.kl_coef, 1.0);
}

/// KL-anchored PPO: the reference policy and the adapted `β` resume too
/// (the fresh agent's reference is zero: it can only come back from the
/// checkpoint).
#[test]
fn anchored_ppo_resumes_bit_identically() {
    use crate::algo::AnchorConfig;
    type Anchored = agent::Anchored<CartPole, 8, 64>;
    let config = PpoConfig {
        total_steps: 2_048,
        ..PpoConfig::CARTPOLE
    };
    // A reference: a freshly initialised policy of the same shape.
    let mut reference = <crate::Deployed<Anchored> as Params>::ZERO;
    {
        let mut ppo = Box::new(PpoAgent::new(config));
        let mut rng = <Xoshiro128pp as rand_core::SeedableRng>::seed_from_u64(9);
        ppo.init(&CartPole::new(), &mut rng).unwrap();
        ppo.export(&mut reference);
    }
    let fresh = |with_reference: bool| {
        let mut a = Box::new(Anchored::ZERO);
        a.ppo.config = config;
        a.anchor = AnchorConfig {
            kl_coef: 0.5,
            kl_target: Some(0.002),
        };
        if with_reference {
            a.reference.copy_from(&reference);
        }
        a
    };
    // The uninterrupted run and the runs that are stopped start from the
    // reference; resumed ones get it from the checkpoint only.
    let started = std::cell::Cell::new(0u32);
    resume_is_bit_identical::<_, CartPole, 4>(
        || {
            started.set(started.get() + 1);
            // Calls alternate: the reference run, then (stopped, resumed) pairs.
            fresh(started.get() == 1 || started.get().is_multiple_of(2))
        },
        run_config(2_048, 256, 12.0),
        &[1, 4],
    );
}

/// Continuous actions: a Gaussian actor (its `log_std` saved and
/// checked against its domain) and actuator bounds, on the pendulum.
#[test]
fn ppo_on_pendulum_resumes_bit_identically() {
    let config = PpoConfig {
        total_steps: 1_024,
        normalize_reward: true,
        ..PpoConfig::DEFAULT
    };
    resume_is_bit_identical::<_, Pendulum, 3>(
        || Box::new(agent::Ppo::<Pendulum, 8, 64>::new(config)),
        run_config(1_024, 256, -2_000.0),
        &[1, 5, 9],
    );
}

#[test]
fn actor_critic_resumes_bit_identically() {
    // The plant defaults: the reward statistics and the running return are
    // part of the checkpoint, and resumes fall either side of the warm-up.
    let config = AcConfig {
        total_steps: 3_000,
        critic_warmup: 1_000,
        ..AcConfig::PLANT
    };
    resume_is_bit_identical::<_, CartPole, 4>(
        || Box::new(AcAgent::new(config)),
        run_config(3_000, 500, 12.0),
        &[1, 3, 7, 777, 1_500],
    );
}

/// The online actor-critic on the lagged schedule (blocks of 100 ticks),
/// with the plant defaults: stopped before the first block, mid-warm-up,
/// after it and late, saved and resumed bit for bit — the pending block,
/// the published policy and the control loop's stream included.
#[test]
fn lagged_actor_critic_resumes_bit_identically() {
    let config = AcConfig {
        total_steps: 3_000,
        critic_warmup: 1_000,
        ..AcConfig::PLANT
    };
    resume_is_bit_identical::<_, CartPole, 4>(
        || {
            Box::new(agent::LaggedAc::<CartPole, 8, 100>::new(
                crate::algo::ActorCritic::new(config),
            ))
        },
        run_config(3_000, 500, 12.0),
        &[1, 3, 9, 20],
    );
}

type SacAgent = agent::Sac<Pendulum, 16, 2048, 32, 4>;
type Td3Agent = agent::Td3<Pendulum, 16, 2048, 32, 4>;

/// A ring of 1 000 (of 2 048) that wraps during the 1 500 steps.
const SAC_CONFIG: SacConfig = SacConfig {
    buffer_size: 1_000,
    learning_starts: 100,
    batch_size: 32,
    ..SacConfig::PENDULUM
};

/// One iteration is one step: stopped before the warm-up ends, after it,
/// and after the ring has wrapped, SAC resumes bit for bit — the replay
/// ring, `log α` and its Adam state, the targets, the update count.
#[test]
fn sac_resumes_bit_identically() {
    resume_is_bit_identical::<_, Pendulum, 3>(
        || SacAgent::boxed(SAC_CONFIG),
        run_config(1_500, 500, -2_000.0),
        &[1, 150, 777, 1_101],
    );
}

/// TD3 stopped between the critic and the delayed actor updates (an odd
/// update count at 1 101 steps) resumes in phase.
#[test]
fn td3_resumes_bit_identically() {
    let config = Td3Config {
        buffer_size: 1_000,
        learning_starts: 100,
        batch_size: 32,
        ..Td3Config::PENDULUM
    };
    resume_is_bit_identical::<_, Pendulum, 3>(
        || Td3Agent::boxed(config),
        run_config(1_500, 500, -2_000.0),
        &[1, 150, 777, 1_101],
    );
}

/// SAC and TD3 on the lagged schedule (blocks of 50 ticks), stopped after
/// the warm-up's block, mid-run and after the ring has wrapped, resume bit
/// for bit: the learner's section, the published actor, the pending block,
/// the control loop's stream.
#[test]
fn lagged_sac_and_td3_resume_bit_identically() {
    resume_is_bit_identical::<_, Pendulum, 3>(
        || agent::LaggedSac::<Pendulum, 16, 2048, 32, 4, 50>::boxed(SAC_CONFIG),
        run_config(1_500, 500, -2_000.0),
        &[1, 3, 16, 23],
    );
    let config = Td3Config {
        buffer_size: 1_000,
        learning_starts: 100,
        batch_size: 32,
        ..Td3Config::PENDULUM
    };
    resume_is_bit_identical::<_, Pendulum, 3>(
        || agent::LaggedTd3::<Pendulum, 16, 2048, 32, 4, 50>::boxed(config),
        run_config(1_500, 500, -2_000.0),
        &[1, 3, 16, 23],
    );
}

/// `LaggedAc` became `algo::Lagged` over the actor-critic with the same
/// checkpoint section: the fingerprint and length of two of its types,
/// pinned at the values the dedicated `LaggedAc` had, so its checkpoints
/// still resume.
#[test]
fn lagged_actor_critic_checkpoints_keep_their_layout() {
    type A = agent::LaggedAc<CartPole, 8, 100>;
    type B = agent::LaggedAc<crate::env::Servo, 8, 250>;
    assert_eq!(<A as AgentState>::fingerprint(), 0x2c3c_d366);
    assert_eq!(<A as AgentState>::LEN, 8_464);
    assert_eq!(<B as AgentState>::fingerprint(), 0x1d17_1ccd);
    assert_eq!(<B as AgentState>::LEN, 13_312);
}

/// The lagged PPO checkpoints' fingerprints and lengths, pinned at the
/// values they had before PPO ran on the shared [`Lagged`](crate::algo::Lagged)
/// shell (kind 9 kept): a checkpoint written before still loads.
#[test]
fn lagged_ppo_checkpoints_keep_their_layout() {
    type A = agent::LaggedPpo<CartPole, 32, 256>;
    type B = agent::LaggedPpo<Pendulum, 64, 2048>;
    assert_eq!(<A as AgentState>::fingerprint(), 0x5ff8_4b72);
    assert_eq!(<A as AgentState>::LEN, 47_920);
    assert_eq!(<B as AgentState>::fingerprint(), 0x4300_ba5d);
    assert_eq!(<B as AgentState>::LEN, 207_536);
}

/// REINFORCE's and TRPO's sections are the inner PPO agent's under their
/// own kinds (2 and 5): the same length, fingerprints of their own, pinned.
#[test]
fn reinforce_and_trpo_checkpoints_keep_their_layout() {
    type Inner = agent::Ppo<CartPole, 8, 256>;
    type R = agent::Reinforce<CartPole, 8, 256>;
    type Tr = agent::Trpo<CartPole, 8, 256>;
    assert_eq!((<R as AgentState>::KIND, <Tr as AgentState>::KIND), (2, 5));
    assert_eq!(<R as AgentState>::LEN, <Inner as AgentState>::LEN);
    assert_eq!(<Tr as AgentState>::LEN, <Inner as AgentState>::LEN);
    let inner = <Inner as AgentState>::fingerprint();
    assert_eq!(<R as AgentState>::fingerprint(), fold(inner, 2));
    assert_eq!(<Tr as AgentState>::fingerprint(), fold(inner, 5));
    assert_eq!(<R as AgentState>::fingerprint(), 0x4d39_8e1d);
    assert_eq!(<Tr as AgentState>::fingerprint(), 0xd0ee_b6a4);
}

/// The lagged SAC and TD3 checkpoints' fingerprints and lengths, pinned:
/// a change of their layout (the published explorer's section included)
/// must be a deliberate one.
#[test]
fn lagged_sac_and_td3_checkpoints_keep_their_layout() {
    type A = agent::LaggedSac<Pendulum, 16, 2048, 32, 4, 50>;
    type B = agent::LaggedTd3<Pendulum, 16, 2048, 32, 4, 50>;
    assert_eq!(<A as AgentState>::fingerprint(), 0x6700_4478);
    assert_eq!(<A as AgentState>::LEN, 93_556);
    assert_eq!(<B as AgentState>::fingerprint(), 0x7935_3324);
    assert_eq!(<B as AgentState>::LEN, 94_688);
}

/// The trainer counts SAC's gradient steps: none in the warm-up, then one
/// per step (`train_freq = 1`).
#[test]
fn the_trainer_counts_sac_updates() {
    let mut agent = SacAgent::boxed(SAC_CONFIG);
    let (mut env, mut eval_env) = (Pendulum::default(), Pendulum::default());
    let mut trainer = Trainer::<SVector<f32, 3>, Xoshiro128pp>::start(
        &mut *agent,
        &mut env,
        run_config(300, 500, -2_000.0),
        7,
    )
    .unwrap();
    for _ in 0..100 {
        trainer
            .iterate(&mut *agent, &mut env, &mut eval_env, &mut ())
            .unwrap();
    }
    assert_eq!((trainer.updates, agent.n_updates), (0, 0));
    let outcome = trainer
        .run(&mut *agent, &mut env, &mut eval_env, &mut ())
        .unwrap();
    assert_eq!(
        (outcome.steps, outcome.updates, agent.n_updates),
        (300, 200, 200)
    );
}

/// A SAC checkpoint with a bad replay ring — an action outside `[−1, 1]`,
/// a position past the stored transitions — is refused, and the agent it
/// was loaded into is unchanged.
#[test]
fn a_bad_replay_ring_is_refused_without_change() {
    type Run = Trainer<SVector<f32, 3>, Xoshiro128pp>;
    let start = |seed| {
        let mut agent = SacAgent::boxed(SAC_CONFIG);
        let (mut env, mut eval_env) = (Pendulum::default(), Pendulum::default());
        let mut trainer = Run::start(
            &mut *agent,
            &mut env,
            run_config(1_500, 500, -2_000.0),
            seed,
        )
        .unwrap();
        for _ in 0..150 {
            trainer
                .iterate(&mut *agent, &mut env, &mut eval_env, &mut ())
                .unwrap();
        }
        (agent, env, trainer)
    };
    let (agent, env, trainer) = start(7);
    let mut buf = vec![0u8; Run::checkpoint_len::<SacAgent, Pendulum>()];
    trainer.save(&*agent, &env, &mut buf).unwrap();
    // The ring comes after the actor, the critics, their targets and
    // `log α`, and before the bounds (8 bytes) and two counters.
    let agent_at = HEADER_LEN + trainer_len(3, 4);
    let replay_at = agent_at + <SacAgent as AgentState>::LEN
        - 16
        - 8
        - <ReplayBuffer<3, 1, 2048> as Field>::LEN;
    let slot_len = 4 * (3 + 1 + 1 + 3) + 4;
    let action_at = |i: usize| replay_at + 12 + i * slot_len + 4 * 3;
    assert_eq!(
        buf[replay_at..replay_at + 12],
        [232, 3, 0, 0, 150, 0, 0, 0, 150, 0, 0, 0]
    );
    let (mut dest, mut dest_env, _) = start(99);
    let before = (dest.digest(), dest_env);
    let mut damaged: Vec<(Vec<u8>, Error)> = Vec::new();
    let mut bad = buf.clone();
    bad[action_at(17)..action_at(17) + 4].copy_from_slice(&1.5f32.to_le_bytes());
    damaged.push((
        bad,
        Error::OutOfDomain {
            tensor: 1,
            reason: "replay actions must lie in [-1, 1]",
        },
    ));
    // A slot past the stored ones is checked too.
    let mut bad = buf.clone();
    bad[action_at(2047)..action_at(2047) + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    damaged.push((bad, Error::NonFinite));
    let mut bad = buf.clone();
    bad[replay_at + 8..replay_at + 12].copy_from_slice(&151u32.to_le_bytes());
    damaged.push((
        bad,
        Error::InvalidState {
            what: "replay size, length or position out of range",
        },
    ));
    let mut bad = buf.clone();
    bad[replay_at..replay_at + 4].copy_from_slice(&2049u32.to_le_bytes());
    damaged.push((
        bad,
        Error::InvalidState {
            what: "replay size, length or position out of range",
        },
    ));
    for (mut bad, err) in damaged {
        recrc(&mut bad);
        assert_eq!(
            Run::resume(&mut *dest, &mut dest_env, &bad).err(),
            Some(err)
        );
        assert_eq!((dest.digest(), dest_env), before);
    }
    assert!(Run::resume(&mut *dest, &mut dest_env, &buf).is_ok());
    assert_eq!(dest.digest(), agent.digest());
    // Checkpoints of SAC and TD3 of the same shapes are not each other's.
    let mut td3 = Td3Agent::boxed(Td3Config::PENDULUM);
    assert_eq!(
        Run::resume(&mut *td3, &mut Pendulum::default(), &buf).err(),
        Some(Error::ShapeMismatch)
    );
}

/// TRPO: the natural-gradient step and the critic's Adam resume (the
/// CG vectors and `θ_old` are rebuilt by every update).
#[test]
fn trpo_resumes_bit_identically() {
    let config = crate::algo::TrpoConfig {
        total_steps: 2_048,
        critic_minibatches: 4,
        ..crate::algo::TrpoConfig::DEFAULT
    };
    resume_is_bit_identical::<_, CartPole, 4>(
        || Box::new(agent::Trpo::<CartPole, 8, 256>::new(config)),
        run_config(2_048, 256, 12.0),
        &[1, 3, 6],
    );
}

/// A TRPO checkpoint refused by the environment's section leaves the
/// inner PPO agent's configuration as it was; a committed load makes it
/// follow TRPO's (changed since construction).
#[test]
fn a_refused_trpo_load_keeps_the_inner_configuration() {
    type Agent = agent::Trpo<CartPole, 8, 256>;
    let config = crate::algo::TrpoConfig {
        total_steps: 2_048,
        critic_minibatches: 4,
        ..crate::algo::TrpoConfig::DEFAULT
    };
    let mut agent = Box::new(Agent::new(config));
    let (mut env, mut eval_env) = (CartPole::default(), CartPole::default());
    let mut trainer = T::start(&mut *agent, &mut env, run_config(2_048, 256, 12.0), 7).unwrap();
    trainer
        .iterate(&mut *agent, &mut env, &mut eval_env, &mut ())
        .unwrap();
    let mut buf = vec![0u8; T::checkpoint_len::<Agent, CartPole>()];
    trainer.save(&*agent, &env, &mut buf).unwrap();
    let mut dest = Box::new(Agent::new(config));
    dest.config.critic_learning_rate = crate::optim::Schedule::Constant(5e-4);
    let before = dest.inner.config;
    let counter_at = buf.len() - 4 - 2 * 8;
    let mut bad = buf.clone();
    bad[counter_at..counter_at + 8].copy_from_slice(&0.5f64.to_le_bytes());
    recrc(&mut bad);
    let mut dest_env = CartPole::default();
    assert!(T::resume(&mut *dest, &mut dest_env, &bad).is_err());
    assert_eq!(dest.inner.config, before);
    assert!(T::resume(&mut *dest, &mut dest_env, &buf).is_ok());
    assert_eq!(dest.inner.config, dest.config.to_ppo());
    assert_ne!(dest.inner.config, before);
}

/// GRPO: the actor with Adam, the normaliser and the step count.
#[test]
fn grpo_resumes_bit_identically() {
    let config = crate::algo::GrpoConfig {
        total_steps: 3_000,
        ..crate::algo::GrpoConfig::DEFAULT
    };
    resume_is_bit_identical::<_, CartPole, 4>(
        || Box::new(agent::Grpo::<CartPole, 8, 1024>::new(config)),
        run_config(3_000, 200, 12.0),
        &[1, 3, 6],
    );
}

#[test]
fn reinforce_resumes_bit_identically() {
    let config = ReinforceConfig {
        total_steps: 3_000,
        ..ReinforceConfig::default()
    };
    resume_is_bit_identical::<_, CartPole, 4>(
        || Box::new(ReinforceAgent::new(config)),
        run_config(3_000, 500, 12.0),
        &[1, 3, 7],
    );
}

/// A PPO run on CartPole stopped after 3 iterations, checkpointed.
fn saved_ppo() -> (Box<PpoAgent>, CartPole, T, Vec<u8>) {
    let config = PpoConfig {
        total_steps: 1_024,
        normalize_reward: true,
        ..PpoConfig::CARTPOLE
    };
    let mut agent = Box::new(PpoAgent::new(config));
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let mut trainer = T::start(&mut *agent, &mut env, run_config(1_024, 64, 12.0), 3).unwrap();
    for _ in 0..3 {
        trainer
            .iterate(&mut *agent, &mut env, &mut eval_env, &mut ())
            .unwrap();
    }
    let mut buf = vec![0u8; checkpoint_len::<PpoAgent, CartPole, Xoshiro128pp>()];
    trainer.save(&*agent, &env, &mut buf).unwrap();
    (agent, env, trainer, buf)
}

/// A destination with a state of its own (another seed), to check that
/// a refused resume leaves it untouched.
fn destination() -> (Box<PpoAgent>, CartPole) {
    let (agent, env, ..) = {
        let config = PpoConfig {
            total_steps: 1_024,
            ..PpoConfig::CARTPOLE
        };
        let mut agent = Box::new(PpoAgent::new(config));
        let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
        let mut trainer = T::start(&mut *agent, &mut env, run_config(1_024, 64, 12.0), 99).unwrap();
        trainer
            .iterate(&mut *agent, &mut env, &mut eval_env, &mut ())
            .unwrap();
        (agent, env, trainer)
    };
    (agent, env)
}

fn refused(bytes: &[u8]) -> Error {
    let (mut agent, mut env) = destination();
    let (before, env_before) = (agent.digest(), env);
    let err = T::resume(&mut *agent, &mut env, bytes).unwrap_err();
    assert_eq!(
        agent.digest(),
        before,
        "agent changed by a refused resume ({err:?})"
    );
    assert_eq!(env, env_before, "env changed by a refused resume ({err:?})");
    err
}

/// Rewrites the CRC after a deliberate edit (to reach the checks after it).
fn recrc(bytes: &mut [u8]) {
    let n = bytes.len();
    let crc = crc32(&bytes[..n - 4]);
    bytes[n - 4..].copy_from_slice(&crc.to_le_bytes());
}

/// Formats 2 and 3 (before the run configuration held the deciding
/// margin) are refused, and so is a margin the configuration forbids.
#[test]
fn older_formats_and_a_negative_margin_are_refused() {
    let (_, _, _, buf) = saved_ppo();
    for old in [2u16, 3] {
        let mut bad = buf.clone();
        bad[4..6].copy_from_slice(&old.to_le_bytes());
        recrc(&mut bad);
        assert_eq!(refused(&bad), Error::UnsupportedVersion, "format {old}");
    }
    // The margin follows total_steps, threshold, both intervals, the
    // quick and the deciding episodes.
    let margin_at = HEADER_LEN + 8 + 4 + 8 + 8 + 4 + 4;
    assert_eq!(buf[margin_at..margin_at + 4], 1.0f32.to_le_bytes());
    let mut bad = buf.clone();
    bad[margin_at..margin_at + 4].copy_from_slice(&(-1.0f32).to_le_bytes());
    recrc(&mut bad);
    assert_eq!(
        refused(&bad),
        Error::config("select_margin", "must be finite and >= 0")
    );
}

/// A checkpoint records the build's maths backend; one of every other
/// backend (the header field written directly, as that build would) is
/// refused naming both, before anything is changed; the build's own
/// resumes. Code 0 — every checkpoint from before the field — is
/// `fast-math`.
#[test]
fn a_checkpoint_of_another_backend_is_refused_without_change() {
    use crate::math::{BACKEND, MathBackend};
    let (_, _, _, buf) = saved_ppo();
    assert_eq!(buf[6..8], BACKEND.code().to_le_bytes());
    for backend in MathBackend::ALL {
        let mut file = buf.clone();
        file[6..8].copy_from_slice(&backend.code().to_le_bytes());
        recrc(&mut file);
        if backend == BACKEND {
            let (mut agent, mut env) = destination();
            assert!(T::resume(&mut *agent, &mut env, &file).is_ok());
        } else {
            let err = refused(&file);
            assert_eq!(
                err,
                Error::Backend {
                    file: backend,
                    build: BACKEND
                }
            );
            let text = std::format!("{err}");
            assert!(
                text.contains(backend.name()) && text.contains(BACKEND.name()),
                "{text}"
            );
        }
    }
    assert_eq!(MathBackend::from_code(0), Some(MathBackend::FastMath));
    assert_eq!(
        file_info(&buf),
        Ok(FileInfo {
            version: VERSION,
            backend: BACKEND,
            len: buf.len() as u32
        })
    );
    // A code no release knows is another format.
    let mut file = buf.clone();
    file[6..8].copy_from_slice(&7u16.to_le_bytes());
    recrc(&mut file);
    assert_eq!(refused(&file), Error::UnsupportedVersion);
    assert_eq!(file_info(&file), Err(Error::UnsupportedVersion));
}

#[test]
fn damaged_checkpoints_are_refused_without_change() {
    let (_, _, _, buf) = saved_ppo();
    // Every single-byte corruption.
    for i in 0..buf.len() {
        let mut bad = buf.clone();
        bad[i] ^= 0x5a;
        let err = refused(&bad);
        assert!(
            matches!(
                err,
                Error::BadMagic
                    | Error::UnsupportedVersion
                    | Error::ChecksumMismatch
                    | Error::Truncated
                    | Error::TrailingBytes
            ),
            "byte {i}: {err:?}"
        );
    }
    // Every truncation, and a trailing byte.
    for n in [
        0,
        3,
        10,
        HEADER_LEN,
        HEADER_LEN + 4,
        buf.len() / 2,
        buf.len() - 1,
    ] {
        assert_eq!(refused(&buf[..n]), Error::Truncated, "length {n}");
    }
    let mut long = buf.clone();
    long.push(0);
    assert_eq!(refused(&long), Error::TrailingBytes);
    // Values out of range behind a valid CRC.
    let mut bad = buf.clone();
    let env_at = buf.len() - 4 - 8 * CartPole::WORDS;
    bad[env_at + 8 * 4..env_at + 8 * 5].copy_from_slice(&0.5f64.to_le_bytes());
    recrc(&mut bad);
    assert!(matches!(refused(&bad), Error::InvalidState { .. }));
    let mut bad = buf.clone();
    let agent_at = HEADER_LEN + trainer_len(4, 4);
    bad[agent_at..agent_at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    recrc(&mut bad);
    assert_eq!(refused(&bad), Error::NonFinite);
    let mut bad = buf.clone();
    let rng_at = HEADER_LEN + trainer_len(4, 4) - 48;
    bad[rng_at..rng_at + 16].fill(0);
    recrc(&mut bad);
    assert!(matches!(refused(&bad), Error::InvalidState { .. }));
    // The env's refusal comes after every agent check, and still changes
    // nothing; the undamaged checkpoint is accepted by the same destination.
    let (mut agent, mut env) = destination();
    assert!(T::resume(&mut *agent, &mut env, &buf).is_ok());
}

#[test]
fn checkpoints_of_other_types_are_refused() {
    let (_, _, _, buf) = saved_ppo();
    // Another hidden size, another algorithm, another RNG word count.
    let mut wider = Box::new(agent::Ppo::<CartPole, 16, 64>::new(PpoConfig::CARTPOLE));
    let mut other_n = Box::new(agent::Ppo::<CartPole, 8, 128>::new(PpoConfig::CARTPOLE));
    let mut ac = Box::new(AcAgent::new(AcConfig::DEFAULT));
    let mut env = CartPole::new();
    assert_eq!(
        T::resume(&mut *wider, &mut env, &buf).unwrap_err(),
        Error::ShapeMismatch
    );
    assert_eq!(
        T::resume(&mut *other_n, &mut env, &buf).unwrap_err(),
        Error::ShapeMismatch
    );
    assert_eq!(
        T::resume(&mut *ac, &mut env, &buf).unwrap_err(),
        Error::ShapeMismatch
    );
    assert_eq!(env, CartPole::new());
    // Same agent layout, another environment (tag in the header).
    let mut bad = buf.clone();
    bad[28..32].copy_from_slice(&Pendulum::TAG.to_le_bytes());
    recrc(&mut bad);
    assert_eq!(refused(&bad), Error::ShapeMismatch);
    // The header really separates lookalikes.
    assert_ne!(CartPole::TAG, CartPoleContinuous::TAG);
    assert_ne!(
        <agent::Ppo<CartPole, 8, 64> as AgentState>::fingerprint(),
        <agent::Ppo<CartPoleContinuous, 8, 64> as AgentState>::fingerprint()
    );
    // Another format's magic.
    let mut bad = buf.clone();
    bad[..4].copy_from_slice(b"MRLP");
    assert_eq!(refused(&bad), Error::BadMagic);
}

/// The lagged actor-critic's fingerprint separates what its checkpoint
/// cannot be loaded across: the critic's width alone (in the learner's own
/// section), the block length, and the plain actor-critic.
#[test]
fn lagged_actor_critic_fingerprints_separate_their_shapes() {
    use crate::algo::LaggedAc;
    use crate::nn::Mlp;
    use crate::policy::GaussianActor;
    type G = GaussianActor<Mlp<3, 8, 1>, 1>;
    let f = <LaggedAc<G, Mlp<3, 8, 1>, 3, 10> as AgentState>::fingerprint();
    assert_ne!(
        f,
        <LaggedAc<G, Mlp<3, 16, 1>, 3, 10> as AgentState>::fingerprint()
    );
    assert_ne!(
        f,
        <LaggedAc<G, Mlp<3, 8, 1>, 3, 20> as AgentState>::fingerprint()
    );
    assert_ne!(
        f,
        <ActorCritic<G, Mlp<3, 8, 1>, 3> as AgentState>::fingerprint()
    );
}

#[test]
fn save_refuses_without_writing() {
    let (mut agent, mut env, trainer, buf) = saved_ppo();
    // Too small.
    let mut small = vec![0xeeu8; buf.len() - 1];
    assert_eq!(
        trainer.save(&*agent, &env, &mut small),
        Err(Error::BufferTooSmall)
    );
    assert!(small.iter().all(|&b| b == 0xee));
    // Mid-iteration: a collected rollout awaiting its update.
    let mut cursor = trainer.cursor.clone();
    let mut rng = trainer.rng.clone();
    agent
        .collect(&mut env, &mut cursor, &mut rng, |_| {})
        .unwrap();
    let mut out = vec![0xeeu8; buf.len() + 8];
    assert_eq!(
        trainer.save(&*agent, &env, &mut out),
        Err(Error::MidIteration)
    );
    assert!(out.iter().all(|&b| b == 0xee));
    // A non-finite value that a resume would refuse.
    agent.update(&mut rng).unwrap();
    agent.discounted_return = f32::NAN;
    assert_eq!(trainer.save(&*agent, &env, &mut out), Err(Error::NonFinite));
    assert!(out.iter().all(|&b| b == 0xee));
    agent.discounted_return = 0.0;
    assert_eq!(trainer.save(&*agent, &env, &mut out), Ok(buf.len()));
    assert_eq!(&out[buf.len()..], &[0xee; 8]);
}

#[test]
fn new_errors_display() {
    use std::string::ToString;
    assert_eq!(
        Error::InvalidState { what: "flag" }.to_string(),
        "invalid saved state: flag"
    );
    assert!(Error::MidIteration.to_string().contains("mid-iteration"));
    use crate::math::MathBackend;
    assert_eq!(
        Error::Backend {
            file: MathBackend::FastMath,
            build: MathBackend::Libm
        }
        .to_string(),
        "written with the `fast-math` maths backend, this build computes with `libm` (actions can differ in the last bit)"
    );
}

#[test]
fn environments_round_trip_their_state() {
    fn round_trip<E: Env + EnvState + Clone + PartialEq + core::fmt::Debug>(
        mut env: E,
        action: crate::env::ActionOf<E>,
    ) {
        let mut rng = Xoshiro128pp::seed_from_u64(5);
        env.reset(&mut rng);
        for _ in 0..7 {
            env.step(action).unwrap();
        }
        let mut words = [0.0; MAX_ENV_WORDS];
        env.save_state(&mut words[..E::WORDS]);
        let mut copy = env.clone();
        copy.reset(&mut rng);
        copy.restore_state(&words[..E::WORDS]).unwrap();
        assert_eq!(copy, env);
        assert_eq!(copy.step(action).unwrap(), env.step(action).unwrap());
        let before = copy.clone();
        assert_eq!(
            copy.restore_state(&words[..E::WORDS - 1]),
            Err(Error::Truncated)
        );
        words[0] = f64::NAN;
        assert_eq!(
            copy.restore_state(&words[..E::WORDS]),
            Err(Error::NonFinite)
        );
        assert_eq!(copy, before);
    }
    use rand_core::SeedableRng;
    round_trip(CartPole::new(), 1);
    round_trip(CartPoleContinuous::new(), SVector::from([0.3]));
    round_trip(Pendulum::new(), SVector::from([0.7]));
    let mut env = CartPole::new();
    let mut words = [0.0; 6];
    words[4] = 1e10;
    assert!(matches!(
        env.restore_state(&words),
        Err(Error::InvalidState { .. })
    ));
    words[4] = 3.0;
    words[5] = 2.0;
    assert!(matches!(
        env.restore_state(&words),
        Err(Error::InvalidState { .. })
    ));
    assert_eq!(env, CartPole::new());
}

/// A lagged checkpoint refused by the environment's section (read after
/// the agent's dry pass) leaves the agent as it was, its publish count
/// included.
#[test]
fn a_lagged_checkpoint_refused_by_the_environment_changes_nothing() {
    type Lagged = agent::LaggedAc<CartPole, 8, 100>;
    type Run = Trainer<SVector<f32, 4>, Xoshiro128pp>;
    let config = AcConfig {
        total_steps: 3_000,
        critic_warmup: 1_000,
        ..AcConfig::PLANT
    };
    let run = |iterations| {
        let mut agent = Box::new(Lagged::new(crate::algo::ActorCritic::new(config)));
        let (mut env, mut eval_env) = (CartPole::default(), CartPole::default());
        let mut trainer = Run::start(&mut *agent, &mut env, run_config(3_000, 500, 12.0), 7)
            .expect("a valid run");
        for _ in 0..iterations {
            trainer
                .iterate(&mut *agent, &mut env, &mut eval_env, &mut ())
                .expect("an iteration");
        }
        (agent, env, trainer)
    };
    let (agent, env, trainer) = run(9);
    let mut buf = vec![0u8; Run::checkpoint_len::<Lagged, CartPole>()];
    trainer.save(&*agent, &env, &mut buf).expect("a checkpoint");
    let (mut dest, mut dest_env, _) = run(3);
    assert_ne!(dest.published_count, agent.published_count);
    let before = (dest.digest(), dest_env);
    // The environment's words end 4 bytes (the CRC) before the end; its
    // step counter is the fifth of six.
    let counter_at = buf.len() - 4 - 2 * 8;
    let mut bad = buf.clone();
    bad[counter_at..counter_at + 8].copy_from_slice(&0.5f64.to_le_bytes());
    recrc(&mut bad);
    assert_eq!(
        Run::resume(&mut *dest, &mut dest_env, &bad).err(),
        Some(Error::InvalidState {
            what: "step counter is not an integer in 0..=u32::MAX",
        })
    );
    assert_eq!((dest.digest(), dest_env), before);
    assert!(Run::resume(&mut *dest, &mut dest_env, &buf).is_ok());
    assert_eq!(dest.digest(), agent.digest());
}
