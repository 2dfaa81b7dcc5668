//! Unit tests of `algo::anchor`.

use super::*;
use crate::agent;
use crate::algo::PpoConfig;
use crate::env::CartPole;
use crate::rng::Xoshiro128pp;
use rand_core::SeedableRng;
use std::boxed::Box;

type Plain = agent::Ppo<CartPole, 8, 64>;
type Anchor = agent::Anchored<CartPole, 8, 64>;

const CONFIG: PpoConfig = PpoConfig {
    total_steps: 4_096,
    ..PpoConfig::CARTPOLE
};

/// Fine-tuning keeps the reference's observation statistics frozen.
const FINE_TUNE: PpoConfig = PpoConfig {
    normalize_obs: false,
    ..CONFIG
};

/// A reference policy: PPO trained for a few rollouts.
fn reference() -> Box<crate::Deployed<Plain>> {
    let mut ppo = Box::new(Plain::new(CONFIG));
    let mut env = CartPole::new();
    let mut rng = Xoshiro128pp::seed_from_u64(1);
    ppo.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    for _ in 0..4 {
        ppo.collect(&mut env, &mut cursor, &mut rng, |_| {})
            .unwrap();
        ppo.update(&mut rng).unwrap();
    }
    let mut out = Box::new(<crate::Deployed<Plain> as Params>::ZERO);
    ppo.export(&mut out);
    out
}

fn anchored(reference: &crate::Deployed<Plain>, anchor: AnchorConfig) -> Box<Anchor> {
    let mut a = Box::new(Anchor::ZERO);
    a.ppo.config = FINE_TUNE;
    a.anchor = anchor;
    a.reference.copy_from(reference);
    a
}

fn fixed(kl_coef: f32) -> AnchorConfig {
    AnchorConfig {
        kl_coef,
        kl_target: None,
    }
}

/// The mean per-step KL to the reference over `iterations` anchored
/// iterations (their mean).
fn fine_tune(a: &mut Anchor, iterations: usize) -> f32 {
    let mut env = CartPole::new();
    let mut rng = Xoshiro128pp::seed_from_u64(2);
    a.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    let mut kl = 0.0;
    for _ in 0..iterations {
        kl += a
            .iterate(&mut env, &mut cursor, &mut rng, |_| {})
            .unwrap()
            .kl_reference;
    }
    kl / iterations as f32
}

#[test]
fn debug_names_the_agent_and_its_coefficient() {
    let mut a = Box::new(Anchor::ZERO);
    a.kl_coef = 0.25;
    let text = std::format!("{a:?}");
    assert!(
        text.contains("Anchored") && text.contains("kl_coef: 0.25"),
        "{text}"
    );
}

/// Steps and the exported policy are the PPO agent's.
#[test]
fn steps_and_export_are_the_fine_tuned_agents() {
    let r = reference();
    let mut a = anchored(&r, fixed(0.5));
    fine_tune(&mut a, 2);
    assert_eq!(a.steps(), 128);
    let mut out = Box::new(<crate::Deployed<Plain> as Params>::ZERO);
    a.export(&mut out);
    assert_eq!(&out.actor, a.ppo.actor());
    assert_ne!(out.actor, r.actor);
    assert_eq!(out.obs_norm, r.obs_norm);
}

/// The reported KL is the rollout's mean per-step `log π − log π_ref`,
/// recomputed here from the stored observations, actions and
/// log-probabilities.
#[test]
fn the_reported_kl_is_the_rollouts_mean_log_ratio() {
    let r = reference();
    let mut a = anchored(&r, fixed(0.5));
    fine_tune(&mut a, 2);
    let mut env = CartPole::new();
    let mut rng = Xoshiro128pp::seed_from_u64(9);
    let mut cursor = Cursor::start(&mut env, &mut rng);
    let stats = a.iterate(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
    let roll = &a.ppo.rollout;
    let mut cache =
        <crate::policy::CategoricalActor<crate::nn::Mlp<4, 8, 2>> as Actor<4>>::ZERO_CACHE;
    let mut sum = 0.0f64;
    for i in 0..roll.len() {
        let (log_ref, _) = r
            .actor
            .evaluate(&roll.obs[i], &roll.actions[i], &mut cache)
            .unwrap();
        sum += f64::from(roll.log_probs[i] - log_ref);
        // CartPole's reward of 1, charged β·(log π − log π_ref).
        assert_eq!(roll.rewards[i], 1.0 - 0.5 * (roll.log_probs[i] - log_ref));
    }
    let mean = (sum / roll.len() as f64) as f32;
    assert!(mean.abs() > 1e-3, "the policy has moved: {mean}");
    assert!(
        (stats.kl_reference - mean).abs() <= 1e-5 * mean.abs().max(1.0),
        "{} vs {mean}",
        stats.kl_reference
    );
}

#[test]
fn init_starts_from_the_reference() {
    let r = reference();
    let mut a = anchored(&r, AnchorConfig::DEFAULT);
    let mut rng = Xoshiro128pp::seed_from_u64(2);
    a.init(&CartPole::new(), &mut rng).unwrap();
    assert_eq!(a.ppo.actor(), &r.actor);
    assert_eq!(a.ppo.obs_norm, r.obs_norm);
    assert_eq!(a.kl_coef, 0.1);
    // The first rollout's policy is the reference: no divergence.
    let kl = fine_tune(&mut anchored(&r, AnchorConfig::DEFAULT), 1);
    assert!(kl.abs() < 1e-6, "{kl}");
    // An invalid anchor is refused before anything changes.
    let mut bad = anchored(&r, fixed(-1.0));
    assert!(matches!(
        bad.init(&CartPole::new(), &mut rng),
        Err(Error::InvalidConfig {
            field: "anchor.kl_coef",
            ..
        })
    ));
    assert_eq!(bad.ppo.steps, 0);
}

/// β = 0 is plain PPO started from the reference, bit for bit.
#[test]
fn a_zero_coefficient_is_plain_ppo() {
    let r = reference();
    let mut a = anchored(&r, fixed(0.0));
    fine_tune(&mut a, 3);

    let mut plain = Box::new(Plain::new(FINE_TUNE));
    let mut env = CartPole::new();
    let mut rng = Xoshiro128pp::seed_from_u64(2);
    plain.init(&env, &mut rng).unwrap();
    plain.train.params.actor.copy_from(&r.actor);
    plain.obs_norm.copy_from(&r.obs_norm);
    let mut cursor = Cursor::start(&mut env, &mut rng);
    for _ in 0..3 {
        plain
            .collect(&mut env, &mut cursor, &mut rng, |_| {})
            .unwrap();
        plain.update(&mut rng).unwrap();
    }
    assert_eq!(plain.train.params, a.ppo.train.params);
}

/// Every stored reward is the plant's minus `β·(log π − log π_ref)`, and
/// the penalty holds the policy nearer the reference.
#[test]
fn the_penalty_keeps_the_policy_near_the_reference() {
    let r = reference();
    let beta = 20.0;
    let mut a = anchored(&r, fixed(beta));
    fine_tune(&mut a, 2);
    let mut env = CartPole::new();
    let mut rng = Xoshiro128pp::seed_from_u64(3);
    let mut cursor = Cursor::start(&mut env, &mut rng);
    let stats = a.iterate(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
    let roll = &a.ppo.rollout;
    let mut kl_sum = 0.0f32;
    let mut cache = <<Anchor as crate::train::Agent>::Policy as PolicyCache>::cache();
    for t in 0..roll.len() {
        // With frozen statistics the stored observation is what the
        // reference saw.
        let (log_ref, _) = r
            .actor
            .evaluate(&roll.obs[t], &roll.actions[t], &mut cache)
            .unwrap();
        assert_eq!(
            roll.rewards[t],
            1.0 - beta * (roll.log_probs[t] - log_ref),
            "step {t}"
        );
        kl_sum += roll.log_probs[t] - log_ref;
    }
    // The reported KL is the rollout's mean per-step log-ratio.
    assert_eq!(stats.kl_reference, kl_sum / roll.len() as f32);

    let free = fine_tune(&mut anchored(&r, fixed(0.0)), 8);
    let held = fine_tune(&mut anchored(&r, fixed(beta)), 8);
    assert!(free > 0.0 && held < 0.5 * free, "free {free}, held {held}");
}

/// The adaptive rule, step by step against the reported KL: halved while
/// the policy is still the reference (KL ≈ 0 < target/1.5), doubled once
/// it has moved past 1.5 × target.
#[test]
fn the_coefficient_adapts_towards_the_target() {
    let target = 1e-4;
    let mut a = anchored(
        &reference(),
        AnchorConfig {
            kl_coef: 0.01,
            kl_target: Some(target),
        },
    );
    let mut env = CartPole::new();
    let mut rng = Xoshiro128pp::seed_from_u64(2);
    a.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    let (mut halved, mut doubled) = (false, false);
    for _ in 0..8 {
        let before = a.kl_coef;
        let kl = a
            .iterate(&mut env, &mut cursor, &mut rng, |_| {})
            .unwrap()
            .kl_reference;
        let expected = if kl < target / 1.5 {
            halved = true;
            (before * 0.5).max(KL_COEF_MIN)
        } else if kl > target * 1.5 {
            doubled = true;
            (before * 2.0).min(KL_COEF_MAX)
        } else {
            before
        };
        assert_eq!(a.kl_coef, expected, "KL {kl}");
    }
    assert!(halved && doubled);
}

/// The actor's cache type, for evaluating a reference in tests.
trait PolicyCache {
    type Cache;
    fn cache() -> Self::Cache;
}

impl<A: Actor<OBS>, const OBS: usize> PolicyCache for Policy<A, OBS> {
    type Cache = A::Cache;
    fn cache() -> A::Cache {
        A::ZERO_CACHE
    }
}
