//! TD3: delayed actor and target updates, refusals change nothing, runs are
//! reproducible, the deployed policy acts as the agent, and Pendulum is
//! learned.

use std::boxed::Box;
use std::vec::Vec;

use nalgebra::SVector;

use super::*;
use crate::algo::offpolicy::Draws;
use crate::algo::offpolicy::OffPolicy;
use crate::algo::sac::tests::Faulty;
use crate::algo::{Controller, Cursor};
use crate::nn::fd;

type Small = Td3Mlp<3, 1, 4, 8, 64, 8>;

fn small_config() -> Td3Config {
    Td3Config {
        buffer_size: 64,
        learning_starts: 10,
        batch_size: 8,
        action_noise: Some(0.1),
        ..Td3Config::DEFAULT
    }
}

fn snapshot(agent: &Small) -> [Vec<f64>; 4] {
    [
        fd::flatten(&agent.actor.params),
        fd::flatten(&agent.actor_target),
        fd::flatten(&agent.critic.params),
        fd::flatten(&agent.critic_target),
    ]
}

fn filled(
    seed: u64,
    steps: usize,
) -> (
    Box<Small>,
    Faulty,
    Cursor<SVector<f32, 3>>,
    rand_xoshiro::Xoshiro128PlusPlus,
) {
    let mut rng = fd::rng(seed);
    let mut agent = Box::new(Small::new(small_config()));
    let mut env = Faulty::new(u32::MAX);
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    for _ in 0..steps {
        agent.step(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
    }
    (agent, env, cursor, rng)
}

#[test]
fn the_actor_and_the_targets_move_every_policy_delay_updates() {
    let (mut agent, _, _, mut rng) = filled(1, 10);
    assert_eq!(agent.n_updates, 0);
    let before = snapshot(&agent);
    let stats = agent.update(&mut rng).unwrap();
    let after = snapshot(&agent);
    assert_eq!(stats.actor_loss, None);
    assert_eq!(
        (&after[0], &after[1], &after[3]),
        (&before[0], &before[1], &before[3])
    );
    assert_ne!(after[2], before[2]);
    let stats = agent.update(&mut rng).unwrap();
    let second = snapshot(&agent);
    assert!(stats.actor_loss.is_some());
    for (a, b) in second.iter().zip(&after) {
        assert_ne!(a, b);
    }
    assert_eq!(agent.n_updates, 2);
}

#[test]
fn a_nan_reward_or_observation_changes_nothing() {
    for nan_obs in [false, true] {
        let mut rng = fd::rng(2);
        let mut agent = Box::new(Small::new(small_config()));
        let mut env = Faulty {
            nan_obs,
            ..Faulty::new(25)
        };
        agent.init(&env, &mut rng).unwrap();
        let mut cursor = Cursor::start(&mut env, &mut rng);
        for _ in 0..25 {
            agent.step(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
        }
        let before = (snapshot(&agent), agent.steps, agent.n_updates);
        let replay = agent.replay.clone();
        let cursor_before = cursor.clone();
        assert_eq!(
            agent.step(&mut env, &mut cursor, &mut rng, |_| {}),
            Err(Error::NonFinite)
        );
        assert_eq!((snapshot(&agent), agent.steps, agent.n_updates), before);
        assert_eq!(agent.replay, replay);
        assert_eq!(cursor, cursor_before);
    }
}

#[test]
fn same_seed_same_weights_bit_for_bit() {
    let run = |seed| snapshot(&filled(seed, 40).0);
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
}

#[test]
fn refused_minibatches_change_nothing() {
    let (mut agent, _, _, _) = filled(3, 5);
    let before = (snapshot(&agent), agent.n_updates);
    let mut draws = Draws::<1, 8>::ZERO;
    draws.len = 3;
    draws.indices[2] = 5;
    assert!(matches!(
        agent.update_with(&draws),
        Err(Error::InvalidInput { .. })
    ));
    draws.len = 0;
    assert!(matches!(
        agent.update_with(&draws),
        Err(Error::InvalidInput { .. })
    ));
    assert_eq!((snapshot(&agent), agent.n_updates), before);
}

#[test]
fn exploration_noise_is_clipped_and_the_deployed_policy_acts_as_the_agent() {
    let (agent, _, _, mut rng) = filled(4, 20);
    let obs = SVector::<f32, 3>::new(0.2, -0.4, 0.9);
    let mean = agent.actor.params.forward(&obs);
    let (a, command) = agent.explore(&obs, &mut rng).unwrap();
    assert!(a[0] != mean[0] && (-1.0..=1.0).contains(&a[0]));
    assert_eq!(command, crate::algo::offpolicy::to_bounds(&agent.space, &a));
    let policy = agent.policy();
    type P = TanhPolicy<Chain<Dense<3, 8, Relu>, Chain<Dense<8, 8, Relu>, Dense<8, 1, Tanh>>>, 1>;
    let mut blob = [0u8; crate::serialize::encoded_len::<P>()];
    crate::serialize::save(&policy, &mut blob).unwrap();
    let mut loaded = P::ZERO;
    crate::serialize::load(&mut loaded, &blob).unwrap();
    for k in 0..10 {
        let obs = SVector::<f32, 3>::new(0.3 * k as f32 - 1.0, 0.5, -0.1 * k as f32);
        assert_eq!(loaded.act(&obs).unwrap(), agent.act(&obs).unwrap());
    }
    assert_eq!(
        agent.act(&SVector::<f32, 3>::new(0.0, f32::NAN, 0.0)),
        Err(Error::NonFinite)
    );
}

/// TD3 on Gymnasium's Pendulum-v1, 64-64 networks: a deterministic mean
/// return ≥ −200 over 20 held-out start states within `TD3_PENDULUM_STEPS`
/// environment steps (`cargo test --release -p microrl --lib
/// td3_learns_pendulum -- --ignored --nocapture`).
const TD3_PENDULUM_STEPS: u64 = 20_000;

#[test]
#[ignore = "trains for several seconds; run with --release -- --ignored"]
fn td3_learns_pendulum() {
    type Agent = Td3Mlp<3, 1, 4, 64, 20_000, 256>;
    let (steps, mean) =
        crate::algo::sac::tests::train_until_solved("TD3", TD3_PENDULUM_STEPS, || {
            Agent::boxed(Td3Config {
                learning_starts: 1000,
                ..Td3Config::PENDULUM
            })
        });
    assert!(mean >= -200.0, "held-out mean {mean} after {steps} steps");
}

/// [`exported_policy_acts_as`](crate::algo::sac::tests::exported_policy_acts_as)
/// for TD3.
#[test]
fn exported_policy_acts_as_the_trained_agent() {
    type Agent = crate::agent::Td3<crate::env::Pendulum, 16, 256, 32, 4>;
    let agent = Agent::boxed(Td3Config {
        buffer_size: 256,
        learning_starts: 50,
        batch_size: 32,
        ..Td3Config::PENDULUM
    });
    crate::algo::sac::tests::exported_policy_acts_as(agent, Agent::policy);
}

/// Exploration is `clip(μ(s) + σε, −1, 1)` with `ε` the next `ACT` standard
/// normals of the caller's stream (SB3's `NormalActionNoise`): each action
/// equals that formula computed here from a clone of the stream, a large
/// `σ` clips at both bounds, and without noise the stream is not drawn
/// from and the action is `μ(s)`.
#[test]
fn exploration_adds_scaled_gaussian_noise_and_clips() {
    let (mut agent, _, _, mut rng) = filled(4, 0);
    let obs = SVector::<f32, 3>::new(0.3, -0.8, 1.2);
    let mean = agent.actor.params.forward(&obs)[0];
    let (mut low, mut high) = (0, 0);
    for sigma in [0.1f32, 3.0] {
        agent.config.action_noise = Some(sigma);
        for _ in 0..200 {
            let mut twin = rng.clone();
            let mut eps = [0.0f32];
            crate::rng::fill_normal(&mut twin, &mut eps);
            let expected = (mean + sigma * eps[0]).clamp(-1.0, 1.0);
            let (action, command) = agent.explore(&obs, &mut rng).unwrap();
            assert_eq!(action[0].to_bits(), expected.to_bits(), "σ = {sigma}");
            assert_eq!(command, to_bounds(&agent.space, &action));
            low += usize::from(action[0] == -1.0);
            high += usize::from(action[0] == 1.0);
        }
    }
    assert!(
        low > 10 && high > 10,
        "σ = 3 clips at both bounds: {low}, {high}"
    );
    agent.config.action_noise = None;
    let before = rng.clone();
    let (action, _) = agent.explore(&obs, &mut rng).unwrap();
    assert_eq!(action[0], mean);
    assert_eq!(rng, before, "no noise, no draw");
}

/// The reported `mean Q₁(s, a)` is the critic's before its step, over the
/// minibatch's stored transitions.
#[test]
fn stats_report_the_minibatch_mean_q1() {
    let (mut agent, _, _, _) = filled(3, 12);
    let mut draws = Draws::<1, 8>::ZERO;
    draws.len = 3;
    draws.indices[..3].copy_from_slice(&[0, 5, 2]);
    let q1 = agent.critic.params.q1.clone();
    let expected = (0..3)
        .map(|k| {
            let t = agent.replay.get(draws.indices[k] as usize).unwrap();
            let x = crate::algo::offpolicy::critic_input::<3, 1, 4>(&t.obs, &t.action);
            f64::from(crate::nn::Layer::forward(&q1, &x)[0])
        })
        .sum::<f64>()
        / 3.0;
    let stats = agent.update_with(&draws).unwrap();
    assert!(
        (f64::from(stats.q1) - expected).abs() <= 1e-5 * (1.0 + expected.abs()),
        "q1 {} vs {expected}",
        stats.q1
    );
    assert_ne!(agent.critic.params.q1, q1, "the critic step moved Q₁");
}

/// `boxed(config)` is `new(config)` field by field (the all-zero validity
/// the heap constructor rests on).
#[test]
fn boxed_is_new() {
    type SmallTd3 = crate::agent::Td3<crate::env::Pendulum, 16, 256, 32, 4>;
    let config = crate::algo::Td3Config {
        action_noise: Some(0.1),
        ..crate::algo::Td3Config::PENDULUM
    };
    let (boxed, new) = (SmallTd3::boxed(config), Box::new(SmallTd3::new(config)));
    assert_eq!(boxed.config, new.config);
    assert_eq!(boxed.actor, new.actor);
    assert_eq!(boxed.actor_target, new.actor_target);
    assert_eq!(boxed.critic, new.critic);
    assert_eq!(boxed.critic_target, new.critic_target);
    assert_eq!(boxed.replay, new.replay);
    assert_eq!(boxed.space, new.space);
    assert_eq!((boxed.steps, boxed.n_updates), (new.steps, new.n_updates));
    assert_eq!(boxed.actor_cache, new.actor_cache);
    assert_eq!(boxed.critic_cache, new.critic_cache);
    assert_eq!(boxed.critic_next, new.critic_next);
}
