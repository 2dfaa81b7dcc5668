//! Unit tests of `algo::trpo`.

use super::*;
use crate::agent;
use crate::env::{CartPole, Pendulum};
use crate::error::Error;
use crate::params::Params;
use crate::rng::Xoshiro128pp;
use rand_core::SeedableRng;
use std::boxed::Box;

type Discrete = agent::Trpo<CartPole, 8, 256>;
type Continuous = agent::Trpo<Pendulum, 8, 256>;

const CONFIG: TrpoConfig = TrpoConfig {
    critic_minibatches: 4,
    ..TrpoConfig::DEFAULT
};

/// Initialises `agent` on `env` and collects one rollout.
fn collect<A, C, E, const OBS: usize>(
    agent: &mut Trpo<A, C, OBS, 256>,
    mut env: E,
    seed: u64,
) -> Xoshiro128pp
where
    A: Actor<OBS>,
    C: Critic<OBS>,
    E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
{
    let mut rng = Xoshiro128pp::seed_from_u64(seed);
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    agent
        .collect(&mut env, &mut cursor, &mut rng, |_| {})
        .unwrap();
    rng
}

/// Mean exact KL[old ‖ new] over the rollout's observations.
fn mean_kl<A, C, const OBS: usize>(agent: &Trpo<A, C, OBS, 256>, old: &A) -> f32
where
    A: Actor<OBS>,
    C: Critic<OBS>,
{
    let r = &agent.inner.rollout;
    let sum: f32 = (0..r.len())
        .map(|i| old.kl(agent.actor(), &r.obs[i]).unwrap())
        .sum();
    sum / r.len() as f32
}

/// The accepted step moves the actor, keeps the exact mean KL within
/// `δ` and improves the surrogate; `approx_kl` reports that KL.
fn check_trust_region<A, C, E, const OBS: usize>(agent: &mut Trpo<A, C, OBS, 256>, env: E)
where
    A: Actor<OBS> + Clone + PartialEq + core::fmt::Debug,
    C: Critic<OBS>,
    E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
{
    let mut rng = collect(agent, env, 3);
    let old = agent.actor().clone();
    let stats = agent.update(&mut rng).unwrap();
    assert!(stats.trust_step > 0.0, "{stats:?}");
    assert_ne!(agent.actor(), &old);
    let kl = mean_kl(agent, &old);
    assert!(kl > 0.0 && kl <= CONFIG.max_kl, "KL {kl}");
    assert_eq!(stats.approx_kl, kl);
    // L(θ_old) is the mean normalised advantage, 0 up to rounding.
    assert!(-stats.policy_loss > 1e-4, "{stats:?}");
    assert!(stats.grad_norm > 0.0 && stats.epochs == CONFIG.critic_epochs);
}

#[test]
fn categorical_step_stays_in_the_trust_region_and_improves_the_surrogate() {
    let mut agent = Box::new(Discrete::new(CONFIG));
    check_trust_region(&mut *agent, CartPole::new());
}

#[test]
fn gaussian_step_stays_in_the_trust_region_and_improves_the_surrogate() {
    let mut agent = Box::new(Continuous::new(CONFIG));
    check_trust_region(&mut *agent, Pendulum::new());
}

/// With enough iterations conjugate gradient solves `(F + c·I) x = g`:
/// the residual is a small fraction of `g`.
#[test]
fn conjugate_gradient_solves_the_damped_fisher_system() {
    let mut agent = Box::new(Discrete::new(TrpoConfig {
        cg_iters: 200,
        ..CONFIG
    }));
    collect(&mut *agent, CartPole::new(), 4);
    let n = agent.inner.rollout.len();
    let (mean, inv_std) = agent.advantage_normalisation(n);
    agent
        .policy_gradient(n, mean, inv_std, &mut UpdateStats::default())
        .unwrap();
    let g = agent.inner.train.grads.actor.clone();
    agent.conjugate_gradient(n).unwrap();
    agent.fisher_product(n, true).unwrap();
    let mut residual = agent.product.clone();
    residual.add_scaled(-1.0, &g);
    let ratio = math::sqrt(residual.norm_squared() / g.norm_squared());
    assert!(ratio < 1e-3, "relative residual {ratio}");
    // Few iterations leave a larger residual: the test can tell.
    agent.config.cg_iters = 1;
    agent.inner.train.grads.actor.copy_from(&g);
    agent.conjugate_gradient(n).unwrap();
    agent.fisher_product(n, true).unwrap();
    let mut residual = agent.product.clone();
    residual.add_scaled(-1.0, &g);
    assert!(math::sqrt(residual.norm_squared() / g.norm_squared()) > 1e-2);
}

/// The damped product is `F v + c·v`.
#[test]
fn damping_adds_c_times_the_vector() {
    let mut agent = Box::new(Discrete::new(CONFIG));
    collect(&mut *agent, CartPole::new(), 6);
    let n = agent.inner.rollout.len();
    crate::nn::fd::randomise(&mut agent.step, &mut crate::nn::fd::rng(1), 1.0);
    agent.config.cg_damping = 0.0;
    agent.fisher_product(n, true).unwrap();
    let undamped = agent.product.clone();
    agent.config.cg_damping = 0.25;
    agent.fisher_product(n, true).unwrap();
    let mut k = 0;
    while let Some(damped) = agent.product.get_flat(k) {
        let expected = undamped.get_flat(k).unwrap() + 0.25 * agent.step.get_flat(k).unwrap();
        assert!(
            (damped - expected).abs() <= 1e-6 * expected.abs().max(1.0),
            "{k}"
        );
        k += 1;
    }
    assert!(k > 100);
}

/// Zero advantages give `g = 0`: no step is taken, the actor is unchanged.
#[test]
fn no_improving_step_leaves_the_actor_unchanged() {
    let mut agent = Box::new(Discrete::new(TrpoConfig {
        normalize_advantages: false,
        ..CONFIG
    }));
    let mut rng = collect(&mut *agent, CartPole::new(), 5);
    agent.inner.rollout.advantages.fill(0.0);
    let old = agent.actor().clone();
    let stats = agent.update(&mut rng).unwrap();
    assert_eq!(agent.actor(), &old);
    assert_eq!((stats.trust_step, stats.approx_kl), (0.0, 0.0));
}

/// Advantage normalisation uses the unbiased std from two samples on,
/// and leaves a single sample (or normalisation off) as it is.
#[test]
fn advantages_are_normalised_from_two_samples_on() {
    let mut agent = Box::new(Discrete::new(CONFIG));
    agent.inner.rollout.advantages[..3].copy_from_slice(&[1.0, 3.0, 8.0]);
    // Two samples: mean 2, unbiased std √2.
    let (mean, inv_std) = agent.advantage_normalisation(2);
    assert_eq!(mean, 2.0);
    assert!(
        (inv_std - core::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6,
        "{inv_std}"
    );
    // Three: mean 4, unbiased std √13.
    let (mean, inv_std) = agent.advantage_normalisation(3);
    assert_eq!(mean, 4.0);
    assert!(
        (inv_std - 1.0 / crate::math::sqrt(13.0)).abs() < 1e-6,
        "{inv_std}"
    );
    assert_eq!(agent.advantage_normalisation(1), (0.0, 1.0));
    agent.config.normalize_advantages = false;
    assert_eq!(agent.advantage_normalisation(3), (0.0, 1.0));
}

/// `steps` counts the collected steps; `export` copies the updated
/// actor and the observation statistics; an empty rollout is refused
/// naming the critic's minibatches.
#[test]
fn steps_export_and_an_empty_rollout() {
    let mut agent = Box::new(Discrete::new(CONFIG));
    let mut rng = collect(&mut *agent, CartPole::new(), 6);
    assert_eq!(agent.steps(), 256);
    agent.update(&mut rng).unwrap();
    let mut policy = Box::new(<crate::Deployed<Discrete> as crate::Params>::ZERO);
    agent.export(&mut policy);
    assert_eq!(&policy.actor, agent.actor());
    assert_eq!(policy.obs_norm, agent.inner.obs_norm);
    assert!(policy.obs_norm.count[0] > 0.0);
    assert!(matches!(
        CONFIG.validate(0),
        Err(Error::InvalidConfig {
            field: "critic_minibatches",
            ..
        })
    ));
}

#[test]
fn refuses_a_missing_rollout_and_names_invalid_fields() {
    let mut agent = Box::new(Discrete::new(CONFIG));
    let mut rng = Xoshiro128pp::seed_from_u64(0);
    agent.init(&CartPole::new(), &mut rng).unwrap();
    assert_eq!(agent.update(&mut rng), Err(Error::RolloutIncomplete));
    let bad = [
        (
            TrpoConfig {
                max_kl: 0.0,
                ..CONFIG
            },
            "max_kl",
        ),
        (
            TrpoConfig {
                max_kl: f32::NAN,
                ..CONFIG
            },
            "max_kl",
        ),
        (
            TrpoConfig {
                cg_iters: 0,
                ..CONFIG
            },
            "cg_iters",
        ),
        (
            TrpoConfig {
                cg_iters: u16::MAX,
                ..CONFIG
            },
            "cg_iters",
        ),
        (
            TrpoConfig {
                critic_epochs: u16::MAX,
                ..CONFIG
            },
            "critic_epochs",
        ),
        (
            TrpoConfig {
                cg_damping: -1.0,
                ..CONFIG
            },
            "cg_damping",
        ),
        (
            TrpoConfig {
                line_search_steps: 0,
                ..CONFIG
            },
            "line_search_steps",
        ),
        (
            TrpoConfig {
                line_search_shrink: 1.0,
                ..CONFIG
            },
            "line_search_shrink",
        ),
        (
            TrpoConfig {
                line_search_shrink: 0.0,
                ..CONFIG
            },
            "line_search_shrink",
        ),
        (
            TrpoConfig {
                gamma: 1.5,
                ..CONFIG
            },
            "gamma",
        ),
        (
            TrpoConfig {
                gae_lambda: -0.1,
                ..CONFIG
            },
            "gae_lambda",
        ),
        (
            TrpoConfig {
                critic_epochs: 0,
                ..CONFIG
            },
            "critic_epochs",
        ),
        (
            TrpoConfig {
                critic_minibatches: 3,
                ..CONFIG
            },
            "critic_minibatches",
        ),
        (
            TrpoConfig {
                critic_learning_rate: Schedule::Constant(-1.0),
                ..CONFIG
            },
            "critic_learning_rate",
        ),
    ];
    for (config, field) in bad {
        match config.validate(256) {
            Err(Error::InvalidConfig { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: {other:?}"),
        }
        let mut a = Box::new(Discrete::new(config));
        assert!(a.init(&CartPole::new(), &mut rng).is_err(), "{field}");
    }
    assert!(TrpoConfig::DEFAULT.validate(2048).is_ok());
}

/// A few updates on CartPole raise the deterministic return well above
/// a random policy's (~20).
#[test]
fn learns_cartpole() {
    type Agent = agent::Trpo<CartPole, 16, 1024>;
    let mut agent = Box::new(Agent::new(TrpoConfig {
        critic_minibatches: 8,
        ..TrpoConfig::DEFAULT
    }));
    let mut env = CartPole::new();
    let mut rng = Xoshiro128pp::seed_from_u64(11);
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    for _ in 0..8 {
        agent
            .collect(&mut env, &mut cursor, &mut rng, |_| {})
            .unwrap();
        agent.update(&mut rng).unwrap();
    }
    let (mean, _) = crate::algo::evaluate(&*agent, &mut CartPole::new(), 10, &mut rng).unwrap();
    assert!(mean > 200.0, "mean return {mean}");
}
