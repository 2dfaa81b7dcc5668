//! PPO's unit tests.

use super::*;
use nalgebra::SVector;
use rand_core::Rng;

use crate::algo::{Actor, Cursor, Policy};
use crate::error::Error;
use crate::nn::Mlp;
use crate::optim::Schedule;
use crate::params::Params;
use crate::policy::CategoricalActor;

type Agent = Ppo<CategoricalActor<Mlp<4, 8, 2>>, Mlp<4, 8, 1>, 4, 64>;

static STATIC_AGENT: Agent = Ppo::new(PpoConfig::DEFAULT);

#[test]
fn agent_can_be_static_and_config_validates() {
    assert_eq!(STATIC_AGENT.steps, 0);
    assert!(PpoConfig::DEFAULT.validate(64).is_ok());
    assert_eq!(
        PpoConfig::DEFAULT.validate(63),
        Err(Error::config(
            "minibatches",
            "must divide the rollout length"
        ))
    );
    let bad = PpoConfig {
        gamma: 1.5,
        ..PpoConfig::DEFAULT
    };
    assert_eq!(
        bad.validate(64),
        Err(Error::config("gamma", "must be in [0, 1]"))
    );
    let a2c: PpoConfig = A2cConfig::DEFAULT.into();
    assert!(a2c.validate(5).is_ok());
    // A β schedule anneals over `total_steps` like the learning rate's.
    let constant = PpoConfig {
        total_steps: 0,
        learning_rate: Schedule::Constant(3e-4),
        noise_beta: Schedule::Constant(0.5),
        ..PpoConfig::DEFAULT
    };
    assert!(constant.validate(64).is_ok());
    let annealed = PpoConfig {
        noise_beta: Schedule::Linear {
            start: 0.5,
            end: 0.0,
        },
        ..constant
    };
    assert_eq!(
        annealed.validate(64),
        Err(Error::config(
            "total_steps",
            "must be > 0 when a schedule anneals over it"
        ))
    );
}

/// Every float field × {NaN, ±∞, negative, zero, huge}: accepted only
/// where the value means something, otherwise refused naming the field.
#[test]
fn every_invalid_value_is_refused_naming_its_field() {
    let bad = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.5, 0.0, 1e9];
    type Set = fn(&mut PpoConfig, f32);
    let fields: [(&str, Set, &[f32]); 16] = [
        ("gamma", |c, x| c.gamma = x, &[0.0]),
        ("gae_lambda", |c, x| c.gae_lambda = x, &[0.0]),
        (
            "learning_rate",
            |c, x| c.learning_rate = Schedule::Constant(x),
            &[],
        ),
        // +∞ (or huge): no clipping, how A2C and REINFORCE run on this machinery.
        (
            "clip_range",
            |c, x| c.clip_range = Schedule::Constant(x),
            &[f32::INFINITY, 1e9],
        ),
        ("ent_coef", |c, x| c.ent_coef = x, &[0.0, 1e9]),
        ("bound_coef", |c, x| c.bound_coef = x, &[0.0, 1e9]),
        (
            "noise_beta",
            |c, x| c.noise_beta = Schedule::Linear { start: 0.5, end: x },
            &[0.0],
        ),
        ("vf_coef", |c, x| c.vf_coef = x, &[0.0, 1e9]),
        ("max_grad_norm", |c, x| c.max_grad_norm = Some(x), &[1e9]),
        ("target_kl", |c, x| c.target_kl = Some(x), &[1e9]),
        ("value_clip", |c, x| c.value_clip = Some(x), &[1e9]),
        ("adam.beta1", |c, x| c.adam.beta1 = x, &[0.0]),
        ("adam.beta2", |c, x| c.adam.beta2 = x, &[0.0]),
        ("adam.eps", |c, x| c.adam.eps = x, &[]),
        ("kl_coef", |c, x| c.kl_coef = x, &[0.0]),
        (
            "kl_target",
            |c, x| {
                c.kl_coef = 1.0;
                c.kl_target = Some(x);
            },
            &[1e9],
        ),
    ];
    for (field, set, accepted) in fields {
        for x in bad {
            let mut c = PpoConfig::DEFAULT;
            set(&mut c, x);
            let result = c.validate(64);
            if accepted.iter().any(|a| a.to_bits() == x.to_bits()) {
                assert_eq!(result, Ok(()), "{field} = {x}");
            } else {
                assert!(
                    matches!(result, Err(Error::InvalidConfig { field: f, .. }) if f == field),
                    "{field} = {x}: {result:?}"
                );
            }
        }
    }
    let mut c = PpoConfig::DEFAULT;
    c.adam.eps = 1e-40; // denormal
    assert!(c.validate(64).is_err());
    c = PpoConfig {
        total_steps: 0,
        ..PpoConfig::DEFAULT
    };
    assert_eq!(
        c.validate(64),
        Err(Error::config(
            "total_steps",
            "must be > 0 when a schedule anneals over it"
        ))
    );
    c = PpoConfig {
        epochs: 0,
        ..PpoConfig::DEFAULT
    };
    assert!(matches!(
        c.validate(64),
        Err(Error::InvalidConfig {
            field: "epochs",
            ..
        })
    ));
    // A count is bounded: 65 535 passes over every rollout never end.
    c = PpoConfig {
        epochs: u16::MAX,
        ..PpoConfig::DEFAULT
    };
    assert_eq!(
        c.validate(64),
        Err(Error::config(
            "epochs",
            "must be in 1..=1000 (MAX_ITERATIONS)"
        ))
    );
    c = PpoConfig {
        minibatches: 0,
        ..PpoConfig::DEFAULT
    };
    assert!(matches!(
        c.validate(64),
        Err(Error::InvalidConfig {
            field: "minibatches",
            ..
        })
    ));
    // An adaptive β must start where halving and doubling can act.
    let adaptive = |kl_coef| PpoConfig {
        kl_coef,
        kl_target: Some(0.01),
        ..PpoConfig::DEFAULT
    };
    assert_eq!(adaptive(KL_COEF_MIN).validate(64), Ok(()));
    assert_eq!(adaptive(KL_COEF_MAX).validate(64), Ok(()));
    for beta in [0.0, KL_COEF_MIN / 2.0] {
        assert!(matches!(
            adaptive(beta).validate(64),
            Err(Error::InvalidConfig {
                field: "kl_coef",
                ..
            })
        ));
    }
    assert!(adaptive(KL_COEF_MAX * 2.0).validate(64).is_err());
    // A2C and REINFORCE run with an infinite clip range: meaningful, accepted.
    assert_eq!(A2cConfig::DEFAULT.to_ppo().validate(32), Ok(()));
}

/// The online actor-critic's float fields × {NaN, ±∞, negative, zero, huge}.
#[test]
fn every_invalid_actor_critic_value_is_refused_naming_its_field() {
    use crate::algo::AcConfig;
    let bad = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.5, 0.0, 1e9];
    type Set = fn(&mut AcConfig, f32);
    let fields: [(&str, Set, &[f32]); 8] = [
        ("gamma", |c, x| c.gamma = x, &[0.0]),
        ("actor_lr", |c, x| c.actor_lr = Schedule::Constant(x), &[]),
        ("critic_lr", |c, x| c.critic_lr = Schedule::Constant(x), &[]),
        ("ent_coef", |c, x| c.ent_coef = x, &[0.0, 1e9]),
        ("max_grad_norm", |c, x| c.max_grad_norm = Some(x), &[1e9]),
        ("adam.beta1", |c, x| c.adam.beta1 = x, &[0.0]),
        ("adam.beta2", |c, x| c.adam.beta2 = x, &[0.0]),
        ("adam.eps", |c, x| c.adam.eps = x, &[]),
    ];
    for (field, set, accepted) in fields {
        for x in bad {
            let mut c = AcConfig::DEFAULT;
            set(&mut c, x);
            let result = c.validate();
            if accepted.iter().any(|a| a.to_bits() == x.to_bits()) {
                assert_eq!(result, Ok(()), "{field} = {x}");
            } else {
                assert!(
                    matches!(result, Err(Error::InvalidConfig { field: f, .. }) if f == field),
                    "{field} = {x}: {result:?}"
                );
            }
        }
    }
    let annealed = AcConfig {
        total_steps: 0,
        actor_lr: Schedule::linear_to_zero(1e-3),
        ..AcConfig::DEFAULT
    };
    assert!(matches!(
        annealed.validate(),
        Err(Error::InvalidConfig {
            field: "total_steps",
            ..
        })
    ));
    // The same schedule over a real budget is fine.
    let over_budget = AcConfig {
        total_steps: 10_000,
        ..annealed
    };
    assert_eq!(over_budget.validate(), Ok(()));
}

#[test]
fn the_online_actor_critic_debugs_with_its_step_count() {
    use crate::algo::{AcConfig, ActorCritic};
    let agent = std::boxed::Box::new(
        ActorCritic::<CategoricalActor<Mlp<4, 8, 2>>, Mlp<4, 8, 1>, 4>::new(AcConfig::DEFAULT),
    );
    let text = std::format!("{agent:?}");
    assert!(
        text.contains("ActorCritic") && text.contains("steps: 0"),
        "{text}"
    );
}

/// The adaptive rule at its boundaries and bounds.
#[test]
fn the_adaptive_kl_rule_halves_doubles_and_keeps() {
    let t = 0.01f32;
    assert_eq!(adapted_kl_coef(1.0, t, t), 1.0);
    assert_eq!(adapted_kl_coef(1.0, t / 1.5, t), 1.0);
    assert_eq!(adapted_kl_coef(1.0, t * 1.5, t), 1.0);
    assert_eq!(adapted_kl_coef(1.0, 0.7 * t, t), 1.0);
    assert_eq!(adapted_kl_coef(1.0, 1.4 * t, t), 1.0);
    assert_eq!(adapted_kl_coef(1.0, 0.6 * t, t), 0.5);
    assert_eq!(adapted_kl_coef(1.0, 1.6 * t, t), 2.0);
    assert_eq!(adapted_kl_coef(1.0, -1.0, t), 0.5);
    assert_eq!(adapted_kl_coef(KL_COEF_MIN, 0.0, t), KL_COEF_MIN);
    assert_eq!(adapted_kl_coef(KL_COEF_MAX, 1.0, t), KL_COEF_MAX);
    assert_eq!(adapted_kl_coef(0.75 * KL_COEF_MAX, 1.0, t), KL_COEF_MAX);
}

/// Minibatches of one sample are not normalised (a single advantage has
/// no spread): the update with `normalize_advantages` equals the one
/// without, bit for bit.
#[test]
fn single_sample_minibatches_are_not_normalised() {
    use crate::env::CartPole;
    let run = |normalize_advantages| {
        let mut agent = std::boxed::Box::new(Agent::new(PpoConfig {
            minibatches: 64,
            epochs: 2,
            normalize_advantages,
            ..PpoConfig::DEFAULT
        }));
        let mut env = CartPole::new();
        let mut rng = crate::nn::fd::rng(12);
        agent.init(&env, &mut rng).unwrap();
        let mut cursor = Cursor::start(&mut env, &mut rng);
        agent
            .collect(&mut env, &mut cursor, &mut rng, |_| {})
            .unwrap();
        let stats = agent.update(&mut rng).unwrap();
        (agent.train.params.clone(), stats)
    };
    let (with, stats) = run(true);
    assert!(stats.policy_loss.is_finite());
    assert_eq!(with, run(false).0);
}

/// REINFORCE reports its steps and exports its policy like the PPO
/// machinery it runs on.
#[test]
fn reinforce_counts_steps_and_exports() {
    use crate::algo::{Reinforce, ReinforceConfig};
    use crate::env::CartPole;
    let mut agent = std::boxed::Box::new(Reinforce::<
        CategoricalActor<Mlp<4, 8, 2>>,
        Mlp<4, 8, 1>,
        4,
        500,
    >::new(ReinforceConfig::DEFAULT));
    let mut env = CartPole::new();
    let mut rng = crate::nn::fd::rng(13);
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    agent
        .collect(&mut env, &mut cursor, &mut rng, |_| {})
        .unwrap();
    let steps = agent.steps();
    assert!(steps > 1 && steps == agent.inner.rollout.len() as u64);
    let mut exported = <Policy<CategoricalActor<Mlp<4, 8, 2>>, 4> as Params>::ZERO;
    agent.export(&mut exported);
    assert_eq!(&exported.actor, agent.actor());
    assert_eq!(exported.obs_norm, agent.inner.obs_norm);
}

/// The tuned CartPole settings are RL Zoo's (γ 0.98, λ 0.8, lr and clip
/// annealed from 1e-3 and 0.2) on the defaults.
#[test]
fn cartpole_settings_are_rl_zoos() {
    let c = PpoConfig::CARTPOLE;
    assert_eq!(c.learning_rate, Schedule::linear_to_zero(1e-3));
    assert_eq!(c.clip_range, Schedule::linear_to_zero(0.2));
    assert_eq!((c.gamma, c.gae_lambda), (0.98, 0.8));
    assert_eq!(
        PpoConfig {
            learning_rate: PpoConfig::DEFAULT.learning_rate,
            clip_range: PpoConfig::DEFAULT.clip_range,
            gamma: PpoConfig::DEFAULT.gamma,
            gae_lambda: PpoConfig::DEFAULT.gae_lambda,
            ..c
        },
        PpoConfig::DEFAULT
    );
}

/// The CartPoleContinuous settings (the CLI's, the safety drills') are the
/// documented ones on the defaults: 200 000 steps, lr 1e-3 annealed, γ 0.98,
/// λ 0.8, 10 epochs of 32 minibatches.
#[test]
fn cartpole_continuous_settings_are_the_documented_ones() {
    let c = PpoConfig::CARTPOLE_CONTINUOUS;
    assert_eq!(c.total_steps, 200_000);
    assert_eq!(c.learning_rate, Schedule::linear_to_zero(1e-3));
    assert_eq!((c.gamma, c.gae_lambda), (0.98, 0.8));
    assert_eq!((c.epochs, c.minibatches), (10, 32));
    let d = PpoConfig::DEFAULT;
    assert_eq!(
        PpoConfig {
            total_steps: d.total_steps,
            learning_rate: d.learning_rate,
            gamma: d.gamma,
            gae_lambda: d.gae_lambda,
            minibatches: d.minibatches,
            ..c
        },
        d
    );
}

/// The plant defaults (the CLI's on every suite plant) are the documented
/// ones on the defaults: 32 minibatches (SB3's minibatch of 64 on a
/// 2 048-step rollout), the bound loss at 1e-4, coloured noise annealed to
/// white, reward scaling and the suite's budget, and for discrete commands a constant
/// learning rate; `DEFAULT` has no bound loss and white
/// noise, so the runs pinned on it keep their bits.
#[test]
fn plant_settings_are_the_documented_ones() {
    let (c, d) = (PpoConfig::PLANT, PpoConfig::DEFAULT);
    assert_eq!((c.minibatches, c.bound_coef), (32, 1e-4));
    assert!(c.normalize_reward && !d.normalize_reward);
    assert!(c.scale_free_returns && !d.scale_free_returns);
    assert_eq!((c.total_steps, d.total_steps), (1_000_000, 100_000));
    assert_eq!(
        PpoConfig {
            learning_rate: c.learning_rate,
            ..PpoConfig::PLANT_DISCRETE
        },
        c
    );
    assert_eq!(
        PpoConfig::PLANT_DISCRETE.learning_rate,
        Schedule::Constant(3e-4)
    );
    assert_eq!(c.learning_rate, Schedule::linear_to_zero(3e-4));
    assert_eq!(
        c.noise_beta,
        Schedule::Linear {
            start: 0.5,
            end: 0.0
        }
    );
    assert_eq!(d.bound_coef, 0.0);
    assert_eq!(d.noise_beta, Schedule::Constant(0.0));
    assert!(c.validate(2048).is_ok());
    assert_eq!(
        PpoConfig {
            total_steps: d.total_steps,
            minibatches: d.minibatches,
            bound_coef: d.bound_coef,
            noise_beta: d.noise_beta,
            normalize_reward: d.normalize_reward,
            scale_free_returns: d.scale_free_returns,
            ..c
        },
        d
    );
}

/// A collect counts its steps, fills the rollout, and refuses value
/// targets beyond what a gradient may carry (rewards huge but finite).
#[test]
fn collect_counts_steps_and_refuses_overflowing_returns() {
    use crate::env::{CartPole, Env, Step};
    let mut agent = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
    let mut env = CartPole::new();
    let mut rng = crate::nn::fd::rng(8);
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    agent
        .collect(&mut env, &mut cursor, &mut rng, |_| {})
        .unwrap();
    assert_eq!((agent.steps, agent.rollout.len()), (64, 64));
    agent
        .collect(&mut env, &mut cursor, &mut rng, |_| {})
        .unwrap();
    assert_eq!(agent.steps, 128);
    let text = std::format!("{agent:?}");
    assert!(
        text.contains("Ppo") && text.contains("steps: 128"),
        "{text}"
    );

    /// CartPole paying 1e30 per step.
    struct Huge(CartPole);
    impl Env for Huge {
        type Obs = SVector<f32, 4>;
        type Space = crate::env::Discrete<2>;
        const SOLVED_RETURN: f32 = 0.0;
        fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 4> {
            self.0.reset(rng)
        }
        fn step(&mut self, action: usize) -> Result<Step<SVector<f32, 4>>, Error> {
            let mut step = self.0.step(action)?;
            step.reward = 1e30;
            Ok(step)
        }
    }
    let mut huge = Huge(CartPole::new());
    let mut cursor = Cursor::start(&mut huge, &mut rng);
    let before = agent.steps;
    assert_eq!(
        agent.collect(&mut huge, &mut cursor, &mut rng, |_| {}),
        Err(Error::ValueOverflow)
    );
    assert_eq!(agent.steps, before);
}

/// A vectorised collection runs up to `CHUNK` copies' network passes
/// together (`prepare_round`) and must give the rollout, statistics,
/// draws and errors of one copy at a time: with observation and reward
/// normalisation, time-limit truncations (their bootstrap values read
/// the normaliser as of their own copy) and a copy whose observation
/// turns NaN mid-round, `CHUNK` = 1 (every copy on its own), 3 (groups
/// of 3 and 1) and 32 (all 4 together) agree bit for bit.
#[test]
fn vectorised_collection_is_copy_by_copy() {
    use crate::env::{Env, Pendulum, Step};
    use crate::policy::GaussianActor;
    /// Pendulum cut after 5 steps; copy `faulty`'s 14th observation is NaN.
    struct Short {
        env: Pendulum,
        t: u32,
        steps: u32,
        faulty: bool,
    }
    impl Env for Short {
        type Obs = SVector<f32, 3>;
        type Space = <Pendulum as Env>::Space;
        const SOLVED_RETURN: f32 = 0.0;
        fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 3> {
            self.t = 0;
            self.env.reset(rng)
        }
        fn step(&mut self, action: SVector<f32, 1>) -> Result<Step<SVector<f32, 3>>, Error> {
            let mut step = self.env.step(action)?;
            self.t += 1;
            self.steps += 1;
            step.truncated |= self.t == 5;
            if self.faulty && self.steps == 14 {
                step.obs[1] = f32::NAN;
            }
            Ok(step)
        }
    }
    fn run<const CHUNK: usize>(faulty: Option<usize>) -> std::string::String {
        type Actor = GaussianActor<Mlp<3, 8, 1>, 1>;
        let config = PpoConfig {
            normalize_obs: true,
            normalize_reward: true,
            n_envs: 4,
            n_steps: 8,
            minibatches: 2,
            epochs: 2,
            ..PpoConfig::DEFAULT
        };
        let mut agent = std::boxed::Box::new(Ppo::<Actor, Mlp<3, 8, 1>, 3, 32, CHUNK>::new(config));
        let mut rng = crate::nn::fd::rng(77);
        let mut envs: [Short; 4] = core::array::from_fn(|e| Short {
            env: Pendulum::new(),
            t: 0,
            steps: 0,
            faulty: faulty == Some(e),
        });
        agent.init(&envs[0].env, &mut rng).unwrap();
        let mut cursors: [Cursor<SVector<f32, 3>>; 4] =
            core::array::from_fn(|e| Cursor::start(&mut envs[e], &mut rng));
        let mut log = std::string::String::new();
        for _ in 0..3 {
            let result = agent.collect_envs(&mut envs, &mut cursors, &mut rng, |_| {});
            let r = &agent.rollout;
            let bits =
                |v: &[f32]| -> std::vec::Vec<u32> { v.iter().map(|x| x.to_bits()).collect() };
            let obs: std::vec::Vec<u32> = r.obs[..r.len()]
                .iter()
                .flat_map(|o| bits(o.as_slice()))
                .collect();
            log += &std::format!(
                "{result:?} {obs:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {}\n",
                bits(&r.log_probs[..r.len()]),
                bits(&r.values[..r.len()]),
                bits(&r.rewards[..r.len()]),
                bits(&r.final_values[..r.len()]),
                bits(&r.returns[..r.len()]),
                bits(agent.obs_norm.mean.as_slice()),
                bits(agent.return_norm.var.as_slice()),
                envs.iter().map(|e| e.steps).collect::<std::vec::Vec<_>>(),
                rng.next_u32(),
            );
            if result.is_ok() {
                // The last round's copies went through the batched
                // passes: their network inputs are in the actor's batch
                // (the last group of `CHUNK` copies', from its first
                // sample on).
                let last = r.len() - 4 + 3 / CHUNK * CHUNK;
                let group = &r.obs[last..r.len()];
                let batch = Actor::batch_inputs(&mut agent.actor_batch);
                assert_eq!(&batch[..group.len()], group, "CHUNK {CHUNK}");
                agent.update(&mut rng).unwrap();
            }
        }
        log
    }
    for faulty in [None, Some(0), Some(2), Some(3)] {
        let one = run::<1>(faulty);
        assert_eq!(run::<3>(faulty), one, "faulty copy {faulty:?}");
        assert_eq!(run::<32>(faulty), one, "faulty copy {faulty:?}");
        assert_eq!(one.contains("Err(NonFinite)"), faulty.is_some(), "{one}");
    }
}

/// Value targets `Â + V_old` beyond 1e15 are refused even when every
/// advantage is usable: a critic stuck at 1.5e15 on the never-terminating
/// pendulum gives `Â ≈ −0.01·V` (fine) and `R ≈ 1.49e15` (not).
#[test]
fn overflowing_value_targets_are_refused_on_their_own() {
    use crate::env::Pendulum;
    let mut agent = std::boxed::Box::new(crate::agent::Ppo::<Pendulum, 8, 64>::new(PpoConfig {
        normalize_obs: false,
        ..PpoConfig::DEFAULT
    }));
    let mut env = Pendulum::new();
    let mut rng = crate::nn::fd::rng(5);
    agent.init(&env, &mut rng).unwrap();
    let head = &mut agent.train.params.critic.second.second;
    head.weight.fill(0.0);
    head.bias[0] = 1.5e15;
    let mut cursor = Cursor::start(&mut env, &mut rng);
    assert_eq!(
        agent.collect(&mut env, &mut cursor, &mut rng, |_| {}),
        Err(Error::ValueOverflow)
    );
}

/// `n_steps = 0` fills the buffer with whole rounds of every copy (3
/// copies in 64 slots: 21 rounds, 63 samples); `n_envs = 0` is refused
/// by its own check, naming `n_envs`.
#[test]
fn rollout_len_fills_whole_rounds_and_zero_copies_are_refused() {
    let three = PpoConfig {
        n_envs: 3,
        ..PpoConfig::DEFAULT
    };
    assert_eq!(three.rollout_len(64), 63);
    assert_eq!(
        PpoConfig {
            n_steps: 5,
            ..three
        }
        .rollout_len(64),
        15
    );
    let zero = PpoConfig {
        n_envs: 0,
        ..PpoConfig::DEFAULT
    };
    assert_eq!(zero.rollout_len(64), 0);
    assert_eq!(
        zero.validate(64),
        Err(Error::config("n_envs", "must be > 0"))
    );
}

/// The overflow check is on the value targets `Â + V_old` themselves: a
/// critic stuck at 7e14 on terminating CartPole episodes gives
/// `Â ≈ −V` at each episode end, so `R ≈ r` (usable) while `Â − V`
/// would be beyond 1e15 — that rollout is collected.
#[test]
fn large_values_with_usable_value_targets_are_collected() {
    use crate::env::CartPole;
    let mut agent = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
    let mut env = CartPole::new();
    let mut rng = crate::nn::fd::rng(5);
    agent.init(&env, &mut rng).unwrap();
    let head = &mut agent.train.params.critic.second.second;
    head.weight.fill(0.0);
    head.bias[0] = 7e14;
    let mut cursor = Cursor::start(&mut env, &mut rng);
    agent
        .collect(&mut env, &mut cursor, &mut rng, |_| {})
        .unwrap();
    let r = &agent.rollout;
    assert!(r.terminated[..64].iter().any(|&t| t));
    assert!(r.advantages[..64].iter().any(|a| a.abs() > 5e14));
    assert!(r.returns[..64].iter().all(|x| x.abs() <= 1e15));
}

/// The first check of `minibatches` is its own: zero is "must be > 0".
#[test]
fn zero_minibatches_is_refused_as_zero() {
    let config = PpoConfig {
        minibatches: 0,
        ..PpoConfig::DEFAULT
    };
    assert_eq!(
        config.validate(64),
        Err(Error::config("minibatches", "must be > 0"))
    );
    // An empty rollout is refused, though 0 is a multiple of anything.
    assert_eq!(
        PpoConfig::DEFAULT.validate(0),
        Err(Error::config(
            "minibatches",
            "must divide the rollout length"
        ))
    );
}

/// `export` copies the actor, the normaliser and the action space into
/// caller memory: the same policy `policy()` returns.
#[test]
fn exported_policies_equal_the_agents_own() {
    use crate::algo::{AcConfig, ActorCritic};
    use crate::env::CartPole;
    let env = CartPole::new();
    let mut rng = crate::nn::fd::rng(3);
    let mut ac = std::boxed::Box::new(
        ActorCritic::<CategoricalActor<Mlp<4, 8, 2>>, Mlp<4, 8, 1>, 4>::new(AcConfig::DEFAULT),
    );
    ac.init(&env, &mut rng).unwrap();
    ac.obs_norm
        .update(&SVector::<f32, 4>::new(1.0, 2.0, 3.0, 4.0))
        .unwrap();
    let mut out = Policy::ZERO;
    ac.export(&mut out);
    assert_eq!(out, ac.policy());
    assert!(out.actor.net.first.weight.norm() > 0.0);
    assert!(out.obs_norm.has_statistics());
    let mut ppo = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
    ppo.init(&env, &mut rng).unwrap();
    let mut out = Policy::ZERO;
    ppo.export(&mut out);
    assert_eq!(out, ppo.policy());
    assert!(out.actor.net.first.weight.norm() > 0.0);
    // TRPO's and REINFORCE's forwarding (algo/ppo/wrapped.rs).
    let mut trpo = std::boxed::Box::new(crate::agent::Trpo::<CartPole, 8, 256>::new(
        crate::algo::TrpoConfig::DEFAULT,
    ));
    trpo.init(&env, &mut rng).unwrap();
    let mut out = Policy::ZERO;
    trpo.export(&mut out);
    assert_eq!(out, trpo.policy());
    assert_eq!(out, trpo.inner.policy());
    assert!(out.actor.net.first.weight.norm() > 0.0);
    let mut reinforce = std::boxed::Box::new(crate::agent::Reinforce::<CartPole, 8, 256>::new(
        crate::algo::ReinforceConfig::DEFAULT,
    ));
    reinforce.init(&env, &mut rng).unwrap();
    let mut out = Policy::ZERO;
    reinforce.export(&mut out);
    assert_eq!(out, reinforce.policy());
    assert_eq!(out, reinforce.inner.policy());
}

#[test]
fn online_actor_critic_refuses_before_any_step() {
    use crate::algo::AcConfig;
    for (config, field) in [
        (
            AcConfig {
                actor_lr: Schedule::Constant(-1e-3),
                ..AcConfig::DEFAULT
            },
            "actor_lr",
        ),
        (
            AcConfig {
                actor_lr: Schedule::Constant(f32::NAN),
                ..AcConfig::DEFAULT
            },
            "actor_lr",
        ),
        (
            AcConfig {
                critic_lr: Schedule::Constant(0.0),
                ..AcConfig::DEFAULT
            },
            "critic_lr",
        ),
        (
            AcConfig {
                gamma: 1.5,
                ..AcConfig::DEFAULT
            },
            "gamma",
        ),
        (
            AcConfig {
                max_grad_norm: Some(-1.0),
                ..AcConfig::DEFAULT
            },
            "max_grad_norm",
        ),
    ] {
        assert!(
            matches!(config.validate(), Err(Error::InvalidConfig { field: f, .. }) if f == field),
            "{config:?}"
        );
    }
}

/// The failure mode the bound loss addresses (`PpoConfig::bound_coef`): a
/// plant whose best command is the upper bound (a one-step episode from a
/// fixed state, reward = the clipped command). Every sample past the bound
/// earns the same, so plain PPO's Gaussian mean drifts on past it with
/// nothing pulling it back (2.8 half-ranges out after 600 updates here):
/// from there a plant that needs a command inside the range gets none of
/// the samples that would show it (`P(u < 1) ≈ 2·10⁻⁴` at σ = 0.49). With
/// the bound loss the mean stays by the soft bound, and the deployed
/// command is still the bound.
#[test]
fn the_bound_loss_keeps_the_mean_by_the_bound() {
    use crate::env::{Continuous, Env, Step};
    use crate::policy::{GaussianActor, SOFT_BOUND};
    struct Bandit;
    impl Env for Bandit {
        type Obs = SVector<f32, 1>;
        type Space = Continuous<1>;
        const SOLVED_RETURN: f32 = 0.0;
        fn reset<R: Rng + ?Sized>(&mut self, _rng: &mut R) -> SVector<f32, 1> {
            SVector::from_element(1.0)
        }
        fn step(&mut self, a: SVector<f32, 1>) -> Result<Step<SVector<f32, 1>>, Error> {
            Ok(Step {
                obs: SVector::from_element(1.0),
                reward: a[0],
                terminated: true,
                truncated: false,
            })
        }
    }
    type Bounded = Ppo<GaussianActor<Mlp<1, 8, 1>, 1>, Mlp<1, 8, 1>, 1, 64>;
    // The mean after 600 updates (over seeds 1–6: 1.9–2.9 without the
    // bound loss, 1.11–1.45 with c_b = 1e-4, at most 1.1 with 1e-2).
    fn run(bound_coef: f32, seed: u64) -> f32 {
        let config = PpoConfig {
            learning_rate: Schedule::Constant(3e-3),
            normalize_obs: false,
            minibatches: 2,
            bound_coef,
            ..PpoConfig::DEFAULT
        };
        let mut agent = std::boxed::Box::new(Bounded::new(config));
        let mut rng = crate::nn::fd::rng(seed);
        agent.init(&Bandit, &mut rng).unwrap();
        let mut cursor = Cursor::start(&mut Bandit, &mut rng);
        for _ in 0..600 {
            agent
                .collect(&mut Bandit, &mut cursor, &mut rng, |_| {})
                .unwrap();
            agent.update(&mut rng).unwrap();
        }
        agent
            .train
            .params
            .actor
            .mean(&SVector::from_element(1.0))
            .unwrap()[0]
    }
    let drifted = run(0.0, 1);
    assert!(drifted > 2.0, "{drifted}");
    for coef in [1e-4, 1e-2] {
        let held = run(coef, 1);
        assert!((1.0..SOFT_BOUND + 0.25).contains(&held), "{coef}: {held}");
    }
}

/// With `noise_beta` above 0 every sampled action is `μ + σ ⊙ ε` with `ε`
/// the rollout's [`ColouredNoise`](crate::policy::ColouredNoise) — its key
/// the rollout's first draw, copy `e` of round `t` at `(e, t)` — on one
/// environment and on four copies through the batched passes (`CHUNK` 32)
/// or one at a time (`CHUNK` 1), with β following its schedule; where the
/// schedule reaches 0 the draws are white again (no action at its mean,
/// which a missing `ε` would give).
#[test]
fn coloured_noise_drives_the_samples() {
    use crate::env::Pendulum;
    use crate::policy::{ColouredNoise, GaussianActor};
    type Actor = GaussianActor<Mlp<3, 8, 1>, 1>;
    fn run<const CHUNK: usize>(n_envs: u16, beta: Schedule) {
        let config = PpoConfig {
            n_envs,
            minibatches: 2,
            epochs: 1,
            total_steps: 64,
            noise_beta: beta,
            ..PpoConfig::DEFAULT
        };
        let mut agent = std::boxed::Box::new(Ppo::<Actor, Mlp<3, 8, 1>, 3, 32, CHUNK>::new(config));
        let mut rng = crate::nn::fd::rng(5);
        let mut envs: [Pendulum; 4] = core::array::from_fn(|_| Pendulum::new());
        agent.init(&envs[0], &mut rng).unwrap();
        let mut cursors: [Cursor<SVector<f32, 3>>; 4] =
            core::array::from_fn(|e| Cursor::start(&mut envs[e], &mut rng));
        let n = usize::from(n_envs);
        for round in 0..3u64 {
            let expected_beta = beta.at(round * 32, 64);
            let mut ahead = rng.clone();
            let noise = ColouredNoise::new(expected_beta, (32 / n) as u32, &mut ahead);
            agent
                .collect_envs(&mut envs[..n], &mut cursors[..n], &mut rng, |_| {})
                .unwrap();
            let actor = agent.actor();
            let r = &agent.rollout;
            for i in 0..r.len() {
                let mut eps = SVector::<f32, 1>::zeros();
                noise.fill((i % n) as u32, (i / n) as u32, eps.as_mut_slice());
                let mean = actor.mode(&r.obs[i]).unwrap();
                let at = std::format!("n_envs {n}, CHUNK {CHUNK}, β {expected_beta}, step {i}");
                if expected_beta > 0.0 {
                    assert_eq!(r.actions[i], actor.head.raw_from_noise(&mean, &eps), "{at}");
                } else {
                    assert_ne!(r.actions[i], mean, "{at}");
                }
            }
            agent.update(&mut rng).unwrap();
        }
    }
    let annealed = Schedule::Linear {
        start: 1.0,
        end: 0.0,
    };
    for beta in [Schedule::Constant(0.5), annealed] {
        run::<32>(1, beta);
        run::<32>(4, beta);
        run::<1>(4, beta);
    }
}

/// A categorical actor has no Gaussian noise to colour: `noise_beta`
/// draws no key and changes nothing, bit for bit.
#[test]
fn coloured_noise_leaves_a_categorical_actor_alone() {
    use crate::env::CartPole;
    let run = |beta: f32| {
        let config = PpoConfig {
            noise_beta: Schedule::Constant(beta),
            ..PpoConfig::DEFAULT
        };
        let mut agent = std::boxed::Box::new(Agent::new(config));
        let mut rng = crate::nn::fd::rng(9);
        let mut env = CartPole::new();
        agent.init(&env, &mut rng).unwrap();
        let mut cursor = Cursor::start(&mut env, &mut rng);
        for _ in 0..2 {
            agent
                .collect(&mut env, &mut cursor, &mut rng, |_| {})
                .unwrap();
            agent.update(&mut rng).unwrap();
        }
        (
            agent.rollout.actions,
            agent.train.params.clone(),
            rng.next_u32(),
        )
    };
    assert!(run(0.0) == run(1.0));
}

/// The failure mode coloured noise addresses: on a plant that integrates
/// the command, independent draws cancel. An untrained policy (mean ≈ 0,
/// σ = 1) on MountainCarContinuous reaches the flag in 1 of 40 episodes
/// with white noise, in 12 with β = 0.5 and in 23 with pink noise (β = 1),
/// whose commands push one way long enough to rock the car up the hill.
#[test]
fn coloured_noise_finds_the_mountain_cars_flag() {
    use crate::env::MountainCarContinuous;
    use crate::policy::GaussianActor;
    type Car = Ppo<GaussianActor<Mlp<2, 8, 1>, 1>, Mlp<2, 8, 1>, 2, 1000>;
    fn flags(beta: f32) -> usize {
        let config = PpoConfig {
            noise_beta: Schedule::Constant(beta),
            minibatches: 1,
            ..PpoConfig::DEFAULT
        };
        let mut agent = std::boxed::Box::new(Car::new(config));
        let mut rng = crate::nn::fd::rng(3);
        let mut env = MountainCarContinuous::new();
        agent.init(&env, &mut rng).unwrap();
        let mut cursor = Cursor::start(&mut env, &mut rng);
        let (mut episodes, mut flags) = (0, 0);
        while episodes < 40 {
            agent
                .collect(&mut env, &mut cursor, &mut rng, |e| {
                    episodes += 1;
                    flags += usize::from(e.ret > 0.0);
                })
                .unwrap();
        }
        flags
    }
    let (white, half, pink) = (flags(0.0), flags(0.5), flags(1.0));
    std::println!("flags in 40 episodes: white {white}, β 0.5 {half}, pink {pink}");
    assert!(white <= 2, "white {white}");
    assert!(half >= 8 && pink >= 16, "β 0.5 {half}, pink {pink}");
}
