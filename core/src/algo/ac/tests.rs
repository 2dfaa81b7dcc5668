//! The online actor-critic's safeguards, each shown failing without it.

use super::*;
use crate::algo::Cursor;
use crate::env::{Pendulum, Step};
use crate::nn::Mlp;
use crate::policy::GaussianActor;

type Pendulum8 = ActorCritic<GaussianActor<Mlp<3, 8, 1>, 1>, Mlp<3, 8, 1>, 3>;

/// Pendulum paying its reward times `scale`: the same plant in other units.
struct Units(Pendulum, f32);

impl Env for Units {
    type Obs = SVector<f32, 3>;
    type Space = <Pendulum as Env>::Space;
    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 3> {
        self.0.reset(rng)
    }
    fn step(&mut self, action: SVector<f32, 1>) -> Result<Step<SVector<f32, 3>>, Error> {
        let mut step = self.0.step(action)?;
        step.reward *= self.1;
        Ok(step)
    }
}

/// Every scalar of every tensor, in order.
fn flat<P: Params>(p: &P) -> std::vec::Vec<f32> {
    (0..P::TENSORS).flat_map(|i| p.tensor(i).to_vec()).collect()
}

/// The largest absolute difference between two parameter sets.
fn max_diff<P: Params>(a: &P, b: &P) -> f32 {
    flat(a)
        .iter()
        .zip(flat(b))
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// `steps` online steps from seed 7 on Pendulum with rewards times `scale`.
fn trained(config: AcConfig, scale: f32, steps: usize) -> std::boxed::Box<Pendulum8> {
    let mut env = Units(Pendulum::new(), scale);
    let mut rng = crate::nn::fd::rng(7);
    let mut agent = std::boxed::Box::new(Pendulum8::new(config));
    agent.init(&env.0, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    for _ in 0..steps {
        agent.step(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
    }
    agent
}

/// Without reward scaling the actor's path depends on the reward's units
/// (the critic, with the same learning rate, lags a value 1 000 times
/// larger, so the TD error is mostly reward); with it, the same plant in
/// kilo-units trains the same actor up to rounding.
#[test]
fn normalized_rewards_make_the_actor_independent_of_the_reward_units() {
    let steps = 400;
    let raw = AcConfig {
        actor_lr: Schedule::Constant(3e-3),
        ..AcConfig::DEFAULT
    };
    let scaled = AcConfig {
        normalize_reward: true,
        ..raw
    };
    let moved = max_diff(
        &trained(raw, 1.0, 0).actor.params,
        &trained(raw, 1.0, steps).actor.params,
    );
    let raw_gap = max_diff(
        &trained(raw, 1.0, steps).actor.params,
        &trained(raw, 1000.0, steps).actor.params,
    );
    let scaled_gap = max_diff(
        &trained(scaled, 1.0, steps).actor.params,
        &trained(scaled, 1000.0, steps).actor.params,
    );
    assert!(moved > 1e-2, "the actor must learn at all: moved {moved}");
    assert!(
        raw_gap > 0.2 * moved,
        "raw rewards: units change the actor by {raw_gap} (moved {moved})"
    );
    assert!(
        scaled_gap < 1e-3 * moved,
        "scaled rewards: units change the actor by {scaled_gap} (moved {moved})"
    );
}

/// During the warm-up only the critic learns: the actor's weights and its
/// Adam moments stay as initialised; the step after it, the actor moves.
#[test]
fn the_critic_warms_up_before_the_actor_learns() {
    let config = AcConfig {
        critic_warmup: 50,
        ..AcConfig::DEFAULT
    };
    let start = trained(config, 1.0, 0);
    let warm = trained(config, 1.0, 50);
    assert_eq!(flat(&warm.actor.params), flat(&start.actor.params));
    assert_eq!(warm.actor.optimizer, start.actor.optimizer);
    assert!(max_diff(&warm.critic.params, &start.critic.params) > 0.0);
    let after = trained(config, 1.0, 51);
    assert!(max_diff(&after.actor.params, &start.actor.params) > 0.0);
    // Without a warm-up the actor learns from the first step.
    let eager = trained(AcConfig::DEFAULT, 1.0, 1);
    assert!(max_diff(&eager.actor.params, &start.actor.params) > 0.0);
}

/// A refused step restores the reward statistics with the rest: the
/// running return and its normaliser are as before the refusal.
#[test]
fn a_refused_step_leaves_the_reward_statistics_alone() {
    let config = AcConfig {
        normalize_reward: true,
        ..AcConfig::DEFAULT
    };
    let mut agent = trained(config, 1.0, 30);
    let (norm, g, steps) = (
        agent.return_norm.clone(),
        agent.discounted_return,
        agent.steps,
    );
    assert!(norm.has_statistics() && g != 0.0);
    let mut env = Units(Pendulum::new(), f32::NAN);
    let mut rng = crate::nn::fd::rng(8);
    let mut cursor = Cursor::start(&mut env, &mut rng);
    assert!(agent.step(&mut env, &mut cursor, &mut rng, |_| {}).is_err());
    assert_eq!(agent.return_norm, norm);
    assert_eq!(agent.discounted_return, g);
    assert_eq!(agent.steps, steps);
}

/// `PLANT` is `DEFAULT` with exactly its three safeguards on.
#[test]
fn the_plant_defaults_are_the_defaults_with_their_safeguards() {
    let (plant, default) = (AcConfig::PLANT, AcConfig::DEFAULT);
    assert!(plant.normalize_reward && plant.rest_init);
    assert_eq!(plant.critic_warmup, 10_000);
    assert!(!default.normalize_reward && !default.rest_init);
    assert_eq!(default.critic_warmup, 0);
    assert_eq!(
        AcConfig {
            normalize_reward: false,
            critic_warmup: 0,
            rest_init: false,
            ..plant
        },
        default
    );
    assert!(plant.validate().is_ok());
}

/// `rest_init`: the step-0 policy commands exactly 0 (Pendulum's rest
/// torque) from every observation, the hidden layers keep their
/// initialisation, and the actor leaves rest at its first step.
#[test]
fn rest_init_starts_from_doing_nothing_and_still_learns() {
    let config = AcConfig {
        rest_init: true,
        ..AcConfig::DEFAULT
    };
    let start = trained(config, 1.0, 0);
    let usual = trained(AcConfig::DEFAULT, 1.0, 0);
    let mut rng = crate::nn::fd::rng(3);
    let mut policy = crate::policy::Policy::ZERO;
    start.export(&mut policy);
    for _ in 0..100 {
        let obs = SVector::<f32, 3>::from_fn(|_, _| crate::rng::uniform_range(&mut rng, -8.0, 8.0));
        assert_eq!(
            crate::policy::Controller::act(&policy, &obs).unwrap()[0],
            0.0
        );
    }
    let hidden = <Mlp<3, 8, 1> as Params>::TENSORS - 2;
    for i in 0..hidden {
        assert_eq!(start.actor.params.tensor(i), usual.actor.params.tensor(i));
    }
    assert_ne!(flat(&start.actor.params), flat(&usual.actor.params));
    let after = trained(config, 1.0, 1);
    assert!(max_diff(&after.actor.params, &start.actor.params) > 0.0);
}
