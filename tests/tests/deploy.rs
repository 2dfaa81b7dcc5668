//! The deployed policy acts exactly as the agent acted in its own
//! deterministic evaluation — for every algorithm × environment × option.
//!
//! Each case trains an agent briefly through the core loop, exports its
//! [`Policy`](microrl::Policy), round-trips it through the binary format (as
//! the firmware receives it) and then requires, bit for bit:
//! - the same command at every observation of a set that includes states far
//!   outside anything seen in training (`(50, −30, …)`, ±1e3) — where an
//!   observation clip or a missing actuator clip would show;
//! - the same returns over whole deterministic evaluation episodes.
//!
//! Options covered: observation normalisation on and off (off: the agent
//! feeds raw observations, so the deployed policy must not clip them), and
//! reward scaling on (it must not leak into acting).

use microrl::algo::{
    AcConfig, Controller, GrpoConfig, PpoConfig, ReinforceConfig, TrpoConfig, evaluate,
};
use microrl::env::{ActionOf, CartPole, CartPoleContinuous, Env, Pendulum};
use microrl::train::{Learner, RunConfig, Trainer};
use microrl::{Params, SVector, agent, serialize};
use rand_xoshiro::Xoshiro128PlusPlus;

/// Observations inside and far outside the training distribution.
fn observations<const OBS: usize>() -> Vec<SVector<f32, OBS>> {
    let mut r = microrl_tests::rng(99);
    let mut out = vec![SVector::<f32, OBS>::zeros()];
    let mut extreme = SVector::<f32, OBS>::zeros();
    extreme[0] = 50.0;
    extreme[1] = -30.0;
    out.push(extreme);
    out.push(SVector::<f32, OBS>::repeat(1e3));
    out.push(SVector::<f32, OBS>::repeat(-1e3));
    for scale in [0.05, 0.5, 5.0, 20.0] {
        for _ in 0..50 {
            let mut o = SVector::<f32, OBS>::zeros();
            microrl::rng::fill_normal(&mut r, o.as_mut_slice());
            out.push(o * scale);
        }
    }
    out
}

/// Trains `agent` for `steps`, exports and reloads its policy, and checks
/// that the reloaded policy acts as the agent does.
fn deploy_equals_train<L, E, const OBS: usize>(case: &str, agent: &mut L, mut env: E, steps: u64)
where
    L: Learner<E> + Controller<OBS, Action = ActionOf<E>>,
    L::Policy: Params + Controller<OBS, Action = ActionOf<E>>,
    E: Env<Obs = SVector<f32, OBS>> + Clone,
{
    let mut eval_env = env.clone();
    let config = RunConfig {
        quick_episodes: 0,
        report_episodes: 1,
        ..RunConfig::new(steps, 0.0)
    };
    let mut trainer = Trainer::<_, Xoshiro128PlusPlus>::start(agent, &mut env, config, 7)
        .unwrap_or_else(|e| panic!("{case}: {e}"));
    trainer
        .run(agent, &mut env, &mut eval_env, &mut ())
        .unwrap_or_else(|e| panic!("{case}: {e}"));

    let mut exported = Box::new(L::Policy::ZERO);
    agent.export(&mut exported);
    let blob = serialize::to_vec(&*exported).unwrap();
    let mut deployed = Box::new(L::Policy::ZERO);
    serialize::load(&mut *deployed, &blob).unwrap();

    for obs in observations::<OBS>() {
        let trained = Controller::act(agent, &obs).unwrap();
        let shipped = deployed.act(&obs).unwrap();
        // `{:?}` of f32 round-trips, so equal strings are equal bits.
        assert_eq!(
            format!("{trained:?}"),
            format!("{shipped:?}"),
            "{case}: at {obs:?}"
        );
    }
    let mut env_a = env.clone();
    let mut env_b = env.clone();
    let a = evaluate(agent, &mut env_a, 5, &mut microrl_tests::rng(3)).unwrap();
    let b = evaluate(&*deployed, &mut env_b, 5, &mut microrl_tests::rng(3)).unwrap();
    assert_eq!(
        (a.0.to_bits(), a.1.to_bits()),
        (b.0.to_bits(), b.1.to_bits()),
        "{case}: evaluation returns"
    );
}

macro_rules! rollout_cases {
    ($env_ty:ty, $env:expr, $n:literal, $steps:expr) => {{
        for normalize_obs in [true, false] {
            for normalize_reward in [false, true] {
                let name = |algo: &str| {
                    format!(
                        "{algo} {} normalize_obs={normalize_obs} normalize_reward={normalize_reward}",
                        stringify!($env_ty)
                    )
                };
                let mut ppo = Box::new(agent::Ppo::<$env_ty, 16, $n>::new(PpoConfig {
                    normalize_obs,
                    normalize_reward,
                    epochs: 2,
                    ..PpoConfig::DEFAULT
                }));
                deploy_equals_train(&name("ppo"), &mut *ppo, $env, $steps);
                let a2c = microrl::algo::A2cConfig {
                    normalize_obs,
                    normalize_reward,
                    ..microrl::algo::A2cConfig::DEFAULT
                };
                let mut a2c = Box::new(agent::A2c::<$env_ty, 16, 32>::new(a2c.to_ppo()));
                deploy_equals_train(&name("a2c"), &mut *a2c, $env, $steps);
            }
            let mut reinforce = Box::new(agent::Reinforce::<$env_ty, 16, 500>::new(
                ReinforceConfig {
                    normalize_obs,
                    ..ReinforceConfig::DEFAULT
                },
            ));
            let case = format!("reinforce {} normalize_obs={normalize_obs}", stringify!($env_ty));
            deploy_equals_train(&case, &mut *reinforce, $env, $steps);
            let mut trpo = Box::new(agent::Trpo::<$env_ty, 16, 256>::new(TrpoConfig {
                normalize_obs,
                critic_minibatches: 4,
                ..TrpoConfig::DEFAULT
            }));
            let case = format!("trpo {} normalize_obs={normalize_obs}", stringify!($env_ty));
            deploy_equals_train(&case, &mut *trpo, $env, $steps);
            let mut grpo = Box::new(agent::Grpo::<$env_ty, 16, 1024>::new(GrpoConfig {
                normalize_obs,
                ..GrpoConfig::DEFAULT
            }));
            let case = format!("grpo {} normalize_obs={normalize_obs}", stringify!($env_ty));
            deploy_equals_train(&case, &mut *grpo, $env, $steps);
            let mut ac = Box::new(agent::ActorCritic::<$env_ty, 16>::new(AcConfig {
                normalize_obs,
                ..AcConfig::DEFAULT
            }));
            let case = format!("ac {} normalize_obs={normalize_obs}", stringify!($env_ty));
            deploy_equals_train(&case, &mut *ac, $env, $steps);
        }
    }};
}

#[test]
fn cartpole_every_algorithm_and_option() {
    rollout_cases!(CartPole, CartPole::new(), 256, 1024);
}

#[test]
fn continuous_cartpole_every_algorithm_and_option() {
    rollout_cases!(CartPoleContinuous, CartPoleContinuous::new(), 256, 1024);
}

#[test]
fn pendulum_every_algorithm_and_option() {
    rollout_cases!(Pendulum, Pendulum::new(), 256, 1024);
}

/// The reported bug: with `normalize_obs = false` the agent feeds the raw
/// observation; the deployed policy must not clip it to ±10 either, and the
/// deployed Gaussian policy's command is the mean clipped to the actuator
/// bounds — what the environment received in training.
#[test]
fn raw_observations_are_not_clipped_and_commands_are_bounded() {
    let mut agent = Box::new(agent::Ppo::<Pendulum, 16, 256>::new(PpoConfig {
        normalize_obs: false,
        ..PpoConfig::DEFAULT
    }));
    deploy_equals_train("pendulum raw", &mut *agent, Pendulum::new(), 512);
    // Push the mean past the actuator bounds: the agent's command and the
    // deployed one must both be the clipped mean.
    agent.train.params.actor.net.second.second.bias[0] += 5.0;
    let blob = serialize::to_vec(&agent.policy()).unwrap();
    let mut policy = Box::new(agent::Policy::<Pendulum, 16>::ZERO);
    serialize::load(&mut *policy, &blob).unwrap();
    assert!(!policy.obs_norm.has_statistics(), "never updated");
    let far = SVector::<f32, 3>::new(50.0, -30.0, 0.0);
    let clipped = SVector::<f32, 3>::new(10.0, -10.0, 0.0);
    let mean = |o: &SVector<f32, 3>| agent.actor().mean(o).unwrap()[0];
    // The network sees (50, −30, 0), not (10, −10, 0).
    assert_ne!(mean(&far), mean(&clipped));
    let mut above = 0;
    for obs in observations::<3>() {
        let command = policy.act(&obs).unwrap()[0];
        assert_eq!(command, mean(&obs).clamp(-2.0, 2.0), "at {obs:?}");
        assert_eq!(command, Controller::act(&*agent, &obs).unwrap()[0]);
        above += usize::from(mean(&obs) > 2.0);
    }
    assert!(above > 0, "no observation exercised the bound");
}
