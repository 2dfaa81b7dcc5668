//! Unit tests of `algo::grpo`.

use super::*;
use crate::agent;
use crate::env::CartPole;
use std::boxed::Box;
use std::vec::Vec;

type Agent = agent::Grpo<CartPole, 8, 1024>;

const CONFIG: GrpoConfig = GrpoConfig {
    normalize_obs: false,
    ..GrpoConfig::DEFAULT
};

#[test]
fn group_advantages_are_standardised_returns() {
    let mut out = [9.0f32; 4];
    group_advantages(&[10.0, 20.0, 30.0, 40.0], &mut out);
    // mean 25, unbiased std √(500/3) = 12.909945
    let s = 12.909_945_f32;
    for (a, r) in out.iter().zip([10.0f32, 20.0, 30.0, 40.0]) {
        assert!((a - (r - 25.0) / s).abs() < 1e-6, "{out:?}");
    }
    group_advantages(&[7.0, 7.0, 7.0], &mut out[..3]);
    assert_eq!(&out[..3], &[0.0; 3]);
    group_advantages(&[7.0], &mut out[..1]);
    assert_eq!(out[0], 0.0);
    // Two returns: ±1/√2 each (mean 2, unbiased std √2).
    group_advantages(&[1.0, 3.0], &mut out[..2]);
    assert!(
        (out[0] + core::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6,
        "{out:?}"
    );
    assert!(
        (out[1] - core::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6,
        "{out:?}"
    );
}

/// The update runs the actor over chunks of `CHUNK` samples; any chunk
/// size — one sample at a time as on a Cortex-M, a size that leaves a
/// partial last chunk, the desktop's default — gives the same weights,
/// optimiser state and statistics bit for bit, per step and per
/// sequence (GSPO).
#[test]
fn every_chunk_size_trains_the_same_bits() {
    type Actor = crate::policy::CategoricalActor<crate::nn::Mlp<4, 16, 2>>;
    fn train<const CHUNK: usize>(
        sequence_ratio: bool,
    ) -> (Grpo<Actor, 4, 1024, CHUNK>, Vec<UpdateStats>) {
        let mut agent = Box::new(Grpo::<Actor, 4, 1024, CHUNK>::new(GrpoConfig {
            sequence_ratio,
            ent_coef: 0.01,
            ..GrpoConfig::DEFAULT
        }));
        let mut env = CartPole::new();
        let mut rng = Xoshiro128pp::seed_from_u64(5);
        agent.init(&env, &mut rng).unwrap();
        let mut cursor = Cursor::start(&mut env, &mut rng);
        let mut stats = Vec::new();
        for _ in 0..3 {
            agent
                .collect(&mut env, &mut cursor, &mut rng, |_| {})
                .unwrap();
            stats.push(agent.update(&mut rng).unwrap());
        }
        (*agent, stats)
    }
    for sequence_ratio in [false, true] {
        let (one, one_stats) = train::<1>(sequence_ratio);
        let (three, three_stats) = train::<3>(sequence_ratio);
        let (default, default_stats) = train::<DEFAULT_CHUNK>(sequence_ratio);
        assert!(
            one_stats
                .iter()
                .all(|s| s.policy_loss != 0.0 && s.entropy > 0.0)
        );
        for (other, stats) in [
            (&three.train, &three_stats),
            (&default.train, &default_stats),
        ] {
            assert_eq!(&one_stats, stats, "sequence_ratio {sequence_ratio}");
            assert_eq!(
                one.train.params, other.params,
                "sequence_ratio {sequence_ratio}"
            );
            assert_eq!(
                one.train.grads, other.grads,
                "sequence_ratio {sequence_ratio}"
            );
            assert_eq!(
                one.train.optimizer, other.optimizer,
                "sequence_ratio {sequence_ratio}"
            );
        }
    }
}

/// Every member of a group starts from the same state, every step of an
/// episode carries its episode's group-relative advantage, and the
/// groups of successive collects start from different states.
#[test]
fn members_share_a_start_state_and_their_episode_advantage() {
    let mut agent = Box::new(Agent::new(GrpoConfig {
        groups: 2,
        group_size: 4,
        ..CONFIG
    }));
    let mut env = CartPole::new();
    let mut rng = Xoshiro128pp::seed_from_u64(3);
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    let mut lengths = Vec::new();
    agent
        .collect(&mut env, &mut cursor, &mut rng, |e| lengths.push(e.len))
        .unwrap();
    assert_eq!(lengths.len(), 8, "two groups of four whole episodes");
    let r = &agent.rollout;
    assert!(r.samples.is_ready() && !r.samples.is_empty());
    assert_eq!(r.samples.len(), lengths.iter().sum::<u32>() as usize);
    let mut start = 0;
    let mut firsts = Vec::new();
    for group in lengths.chunks(4) {
        let returns: Vec<f32> = group.iter().map(|&l| l as f32).collect();
        let mut expected = [0.0f32; 4];
        group_advantages(&returns, &mut expected);
        for (&len, &a) in group.iter().zip(&expected) {
            let end = start + len as usize;
            assert!(r.samples.advantages[start..end].iter().all(|&x| x == a));
            firsts.push(r.samples.obs[start]);
            start = end;
        }
    }
    assert!(firsts[..4].iter().all(|o| *o == firsts[0]));
    assert!(firsts[4..].iter().all(|o| *o == firsts[4]));
    assert_ne!(firsts[0], firsts[4]);
    assert!(lengths[..4].iter().any(|&l| l != lengths[0]), "{lengths:?}");
    assert_eq!(agent.steps(), r.samples.len() as u64);
}

/// A rollout smaller than a group cuts the member that reaches the
/// capacity and plays no further member.
#[test]
fn the_capacity_cuts_a_group() {
    let mut agent = Box::new(agent::Grpo::<CartPole, 8, 40>::new(CONFIG));
    let mut env = CartPole::new();
    let mut rng = Xoshiro128pp::seed_from_u64(4);
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    let mut episodes = 0;
    agent
        .collect(&mut env, &mut cursor, &mut rng, |_| episodes += 1)
        .unwrap();
    assert_eq!(agent.rollout.samples.len(), 40);
    assert!(episodes < 8);
    // The cut member is the last episode stored: no empty member after it.
    let r = &agent.rollout;
    assert_eq!(
        r.episodes(),
        episodes + 1,
        "the played episodes and the cut one"
    );
    let (start, end) = r.episode(r.episodes() - 1);
    assert!(start < end && end == 40, "{start}..{end}");
    agent.update(&mut rng).unwrap();
}

/// `is_empty`, `is_ready` and the update's consumption of the rollout;
/// the statistics report the learning rate and clip range used; `export`
/// copies the trained actor and the observation statistics.
#[test]
fn rollout_state_statistics_and_export() {
    let config = GrpoConfig {
        learning_rate: Schedule::Constant(2e-3),
        clip_range: Schedule::Constant(0.3),
        normalize_obs: true,
        group_size: 2,
        ..CONFIG
    };
    let mut agent = Box::new(Agent::new(config));
    let mut env = CartPole::new();
    let mut rng = Xoshiro128pp::seed_from_u64(5);
    agent.init(&env, &mut rng).unwrap();
    assert!(agent.rollout.samples.is_empty() && !agent.rollout.samples.is_ready());
    let mut cursor = Cursor::start(&mut env, &mut rng);
    agent
        .collect(&mut env, &mut cursor, &mut rng, |_| {})
        .unwrap();
    assert!(!agent.rollout.samples.is_empty() && agent.rollout.samples.is_ready());
    let stats = agent.update(&mut rng).unwrap();
    assert_eq!((stats.learning_rate, stats.clip_range), (2e-3, 0.3));
    assert!(!agent.rollout.samples.is_ready());
    assert_eq!(agent.update(&mut rng), Err(Error::RolloutIncomplete));

    let mut policy = Box::new(<crate::Deployed<Agent> as Params>::ZERO);
    agent.export(&mut policy);
    assert_eq!(&policy.actor, agent.actor());
    assert_eq!(policy.obs_norm, agent.obs_norm);
    assert!(agent.obs_norm.count[0] > 0.0, "the statistics moved");
}

/// A failed collect leaves no rollout behind (and restores the
/// observation statistics).
#[test]
fn a_failed_collect_clears_the_rollout() {
    let mut agent = Box::new(Agent::new(GrpoConfig {
        normalize_obs: true,
        ..CONFIG
    }));
    let mut env = Faulty {
        env: CartPole::new(),
        steps_left: u32::MAX,
    };
    let mut rng = Xoshiro128pp::seed_from_u64(6);
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    agent
        .collect(&mut env, &mut cursor, &mut rng, |_| {})
        .unwrap();
    let norm = agent.obs_norm.clone();
    // The plant fails mid-way through the next collect.
    env.steps_left = 30;
    assert_eq!(
        agent.collect(&mut env, &mut cursor, &mut rng, |_| {}),
        Err(Error::NonFinite)
    );
    assert!(agent.rollout.samples.is_empty() && !agent.rollout.samples.is_ready());
    assert_eq!(agent.rollout.episodes(), 0);
    assert_eq!(agent.obs_norm, norm);
    assert_eq!(agent.update(&mut rng), Err(Error::RolloutIncomplete));
}

/// CartPole whose sensor fails after `steps_left` more steps.
struct Faulty {
    env: CartPole,
    steps_left: u32,
}

impl Env for Faulty {
    type Obs = SVector<f32, 4>;
    type Space = crate::env::Discrete<2>;
    const SOLVED_RETURN: f32 = CartPole::SOLVED_RETURN;

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Self::Obs {
        self.env.reset(rng)
    }

    fn step(&mut self, action: usize) -> Result<crate::env::Step<Self::Obs>, Error> {
        if self.steps_left == 0 {
            return Err(Error::NonFinite);
        }
        self.steps_left -= 1;
        self.env.step(action)
    }
}

#[test]
fn refuses_a_missing_rollout_and_names_invalid_fields() {
    let mut agent = Box::new(Agent::new(CONFIG));
    let mut rng = Xoshiro128pp::seed_from_u64(0);
    agent.init(&CartPole::new(), &mut rng).unwrap();
    assert_eq!(agent.update(&mut rng), Err(Error::RolloutIncomplete));
    let bad = [
        (
            GrpoConfig {
                group_size: 1,
                ..CONFIG
            },
            "group_size",
        ),
        (
            GrpoConfig {
                group_size: 65,
                ..CONFIG
            },
            "group_size",
        ),
        (
            GrpoConfig {
                groups: 0,
                ..CONFIG
            },
            "groups",
        ),
        // 5 × 64 = 320 episodes > MAX_EPISODES (256).
        (
            GrpoConfig {
                groups: 5,
                group_size: 64,
                ..CONFIG
            },
            "groups",
        ),
        (
            GrpoConfig {
                epochs: 0,
                ..CONFIG
            },
            "epochs",
        ),
        (
            GrpoConfig {
                epochs: u16::MAX,
                ..CONFIG
            },
            "epochs",
        ),
        (
            GrpoConfig {
                minibatches: 0,
                ..CONFIG
            },
            "minibatches",
        ),
        (
            GrpoConfig {
                ent_coef: -1.0,
                ..CONFIG
            },
            "ent_coef",
        ),
        (
            GrpoConfig {
                max_grad_norm: Some(0.0),
                ..CONFIG
            },
            "max_grad_norm",
        ),
        (
            GrpoConfig {
                learning_rate: Schedule::Constant(f32::NAN),
                ..CONFIG
            },
            "learning_rate",
        ),
        (
            GrpoConfig {
                total_steps: 0,
                ..CONFIG
            },
            "total_steps",
        ),
    ];
    for (config, field) in bad {
        match config.validate() {
            Err(Error::InvalidConfig { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: {other:?}"),
        }
        let mut a = Box::new(Agent::new(config));
        assert!(a.init(&CartPole::new(), &mut rng).is_err(), "{field}");
    }
}

/// A few updates raise the deterministic return far above a random
/// policy's (~20).
#[test]
fn learns_cartpole() {
    let mut agent = Box::new(agent::Grpo::<CartPole, 16, 4096>::new(GrpoConfig::DEFAULT));
    let mut env = CartPole::new();
    let mut rng = Xoshiro128pp::seed_from_u64(1);
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    while agent.steps() < 15_000 {
        agent
            .collect(&mut env, &mut cursor, &mut rng, |_| {})
            .unwrap();
        agent.update(&mut rng).unwrap();
    }
    let (mean, _) = crate::algo::evaluate(&*agent, &mut CartPole::new(), 10, &mut rng).unwrap();
    assert!(mean > 200.0, "mean return {mean}");
}

/// The rollout records where every episode ends, in collection order.
#[test]
fn episode_boundaries_are_recorded() {
    let mut agent = Box::new(Agent::new(GrpoConfig {
        groups: 2,
        group_size: 3,
        ..CONFIG
    }));
    let mut env = CartPole::new();
    let mut rng = Xoshiro128pp::seed_from_u64(8);
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    let mut lengths = Vec::new();
    agent
        .collect(&mut env, &mut cursor, &mut rng, |e| lengths.push(e.len))
        .unwrap();
    let r = &agent.rollout;
    assert_eq!(r.episodes(), 6);
    let mut end = 0;
    for (e, len) in lengths.iter().enumerate() {
        end += *len as usize;
        assert_eq!(r.episode(e), (end - *len as usize, end));
    }
}

/// GSPO (sequence-level ratios) learns CartPole too.
#[test]
fn gspo_learns_cartpole() {
    let mut agent = Box::new(agent::Grpo::<CartPole, 16, 4096>::new(GrpoConfig {
        sequence_ratio: true,
        minibatches: 2,
        ..GrpoConfig::DEFAULT
    }));
    let mut env = CartPole::new();
    let mut rng = Xoshiro128pp::seed_from_u64(1);
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    while agent.steps() < 20_000 {
        agent
            .collect(&mut env, &mut cursor, &mut rng, |_| {})
            .unwrap();
        let stats = agent.update(&mut rng).unwrap();
        assert!(stats.clip_fraction <= 1.0 && stats.approx_kl >= 0.0);
    }
    let (mean, _) = crate::algo::evaluate(&*agent, &mut CartPole::new(), 10, &mut rng).unwrap();
    assert!(mean > 200.0, "mean return {mean}");
}

/// No critic: GRPO's agent is smaller than PPO's with the same actor and
/// rollout by at least the critic's parameters, gradient and Adam moments.
#[test]
fn saves_the_critic_memory() {
    use core::mem::size_of;
    type Ppo = agent::Ppo<CartPole, 32, 4096>;
    type Grpo = agent::Grpo<CartPole, 32, 4096>;
    let critic = 4 * 4 * <crate::nn::Mlp<4, 32, 1> as Params>::LEN;
    assert!(size_of::<Ppo>() >= size_of::<Grpo>() + critic);
}
