//! SAC: refusals change nothing, runs are reproducible, the actor's loss
//! gradient through the critics' input matches finite differences, and
//! Pendulum is learned.

use std::boxed::Box;
use std::vec::Vec;

use nalgebra::SVector;
use rand_core::Rng;
use rand_xoshiro::Xoshiro128PlusPlus;

use super::*;
use crate::algo::offpolicy::{Draws, OffPolicy, critic_input};
use crate::algo::{Controller, Cursor, evaluate};
use crate::env::{Continuous, Env, Pendulum, Step};
use crate::error::check_all_finite;
use crate::nn::fd;

/// A 3-observation plant with one actuator in `[−2, 2]` whose reward turns
/// NaN (or observation, with `nan_obs`) after `nan_after` steps; it
/// terminates every 7 steps and truncates every 11.
#[derive(Clone, Debug)]
pub(crate) struct Faulty {
    pub t: u32,
    pub nan_after: u32,
    pub nan_obs: bool,
}

impl Faulty {
    pub(crate) fn new(nan_after: u32) -> Self {
        Self {
            t: 0,
            nan_after,
            nan_obs: false,
        }
    }
}

impl Env for Faulty {
    type Obs = SVector<f32, 3>;
    type Space = Continuous<1>;
    const SOLVED_RETURN: f32 = 0.0;
    fn action_space(&self) -> Continuous<1> {
        Continuous::symmetric(2.0)
    }
    fn reset<R: Rng + ?Sized>(&mut self, _rng: &mut R) -> SVector<f32, 3> {
        SVector::<f32, 3>::new(0.1, -0.2, 0.3)
    }
    fn step(&mut self, action: SVector<f32, 1>) -> Result<Step<SVector<f32, 3>>, Error> {
        check_all_finite(action.as_slice())?;
        self.t += 1;
        let bad = self.t > self.nan_after;
        let x = self.t as f32 * 0.01;
        let obs = SVector::<f32, 3>::new(
            if bad && self.nan_obs { f32::NAN } else { x },
            action[0] * 0.5,
            -x,
        );
        let reward = if bad && !self.nan_obs {
            f32::NAN
        } else {
            -action[0] * action[0]
        };
        Ok(Step {
            obs,
            reward,
            terminated: self.t.is_multiple_of(7),
            truncated: self.t.is_multiple_of(11),
        })
    }
}

type Small = SacMlp<3, 1, 4, 8, 64, 8>;

fn small_config() -> SacConfig {
    SacConfig {
        buffer_size: 64,
        learning_starts: 10,
        batch_size: 8,
        ..SacConfig::DEFAULT
    }
}

/// Every weight (actor, critics, targets, `log α`) and the counters.
type Snapshot = ([Vec<f64>; 4], u64, u64, usize);

fn snapshot(agent: &Small) -> Snapshot {
    (
        [
            fd::flatten(&agent.actor.params),
            fd::flatten(&agent.critic.params),
            fd::flatten(&agent.critic_target),
            fd::flatten(&agent.log_alpha.params),
        ],
        agent.steps,
        agent.n_updates,
        agent.replay.len(),
    )
}

/// The first `learning_starts` actions are uniform in `[−1, 1]`, drawn
/// from the caller's RNG one per step (Pendulum steps draw nothing else);
/// from then on the agent explores with its own actor.
#[test]
fn warm_up_actions_are_uniform_draws_then_the_actor_explores() {
    let mut rng = fd::rng(5);
    let mut agent = Small::boxed(small_config());
    let mut env = Pendulum::new();
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    let mut expected = rng.clone();
    let warm_up = small_config().learning_starts as usize;
    let uniform: Vec<f32> = (0..=warm_up)
        .map(|_| crate::rng::uniform_range(&mut expected, -1.0, 1.0))
        .collect();
    for _ in 0..=warm_up {
        agent.step(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
    }
    let stored: Vec<f32> = (0..=warm_up)
        .map(|i| agent.replay.get(i).unwrap().action[0])
        .collect();
    assert_eq!(stored[..warm_up], uniform[..warm_up]);
    assert!(stored.iter().any(|&a| a < 0.0) && stored.iter().any(|&a| a > 0.0));
    assert_ne!(
        stored[warm_up], uniform[warm_up],
        "step learning_starts explores"
    );
}

#[test]
fn a_nan_reward_or_observation_changes_nothing() {
    for nan_obs in [false, true] {
        let mut rng = fd::rng(1);
        let mut agent = Small::boxed(small_config());
        let mut env = Faulty {
            nan_obs,
            ..Faulty::new(30)
        };
        agent.init(&env, &mut rng).unwrap();
        let mut cursor = Cursor::start(&mut env, &mut rng);
        let mut updates = 0;
        for _ in 0..30 {
            updates += usize::from(
                agent
                    .step(&mut env, &mut cursor, &mut rng, |_| {})
                    .unwrap()
                    .is_some(),
            );
        }
        assert_eq!(updates, 20);
        let before = snapshot(&agent);
        let replay = agent.replay.clone();
        let cursor_before = cursor.clone();
        assert_eq!(
            agent.step(&mut env, &mut cursor, &mut rng, |_| {}),
            Err(Error::NonFinite)
        );
        assert_eq!(snapshot(&agent), before);
        assert_eq!(agent.replay, replay);
        assert_eq!(cursor, cursor_before);
    }
}

#[test]
fn same_seed_same_weights_bit_for_bit() {
    let run = |seed| {
        let mut rng = fd::rng(seed);
        let mut agent = Small::boxed(small_config());
        let mut env = Faulty::new(u32::MAX);
        agent.init(&env, &mut rng).unwrap();
        let mut cursor = Cursor::start(&mut env, &mut rng);
        let mut returns = Vec::new();
        for _ in 0..60 {
            agent
                .step(&mut env, &mut cursor, &mut rng, |e| returns.push(e.ret))
                .unwrap();
        }
        (snapshot(&agent), returns)
    };
    assert_eq!(run(5), run(5));
    assert_ne!(run(5).0, run(6).0);
}

#[test]
fn fixed_alpha_is_not_learned_and_targets_follow_the_interval() {
    let mut rng = fd::rng(2);
    let config = SacConfig {
        ent_coef: EntCoef::Fixed(0.2),
        target_update_interval: 2,
        tau: 1.0,
        ..small_config()
    };
    let mut agent = Small::boxed(config);
    let mut env = Faulty::new(u32::MAX);
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    for _ in 0..10 {
        agent.step(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
    }
    // Update 0: the targets copy the critics (τ = 1); update 1: they stay.
    let stats = agent.update(&mut rng).unwrap();
    assert_eq!((stats.ent_coef, stats.ent_coef_loss), (0.2, 0.0));
    assert_eq!(
        fd::flatten(&agent.critic_target),
        fd::flatten(&agent.critic.params)
    );
    agent.update(&mut rng).unwrap();
    assert_ne!(
        fd::flatten(&agent.critic_target),
        fd::flatten(&agent.critic.params)
    );
    assert_eq!(agent.alpha(), 0.2);
    assert_eq!(agent.log_alpha.optimizer.t, 0);
}

/// A fixed `α` (SB3's `ent_coef = 0.05`) holds over a whole run of
/// updates — `log α` and its Adam state keep their initial bits, every
/// update reports that `α` — and it is the `α` the actor's gradient uses:
/// `∂J_π/∂θ = g_Q + α g_H` on one minibatch is affine in the configured
/// `α` (zero learning rate, so the three agents see the same weights).
#[test]
fn a_fixed_alpha_never_moves_and_weights_the_actor_entropy_gradient() {
    let fixed = |alpha| SacConfig {
        ent_coef: EntCoef::Fixed(alpha),
        ..small_config()
    };
    let mut rng = fd::rng(11);
    let mut agent = Small::boxed(fixed(0.05));
    let mut env = Faulty::new(u32::MAX);
    agent.init(&env, &mut rng).unwrap();
    let log_alpha = agent.log_alpha.clone();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    for _ in 0..60 {
        agent.step(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
        let stats = agent.update(&mut rng).unwrap();
        assert_eq!(stats.ent_coef.to_bits(), 0.05f32.to_bits());
        assert_eq!(stats.ent_coef_loss, 0.0);
    }
    assert!(agent.n_updates > 60);
    assert_eq!(agent.log_alpha, log_alpha);
    assert_eq!(agent.alpha().to_bits(), 0.05f32.to_bits());

    let mut draws = Draws::<1, 8>::ZERO;
    draws.draw(&mut rng, 8, agent.replay.len(), true).unwrap();
    let gradient = |alpha: f32| {
        let mut a = Small::boxed(SacConfig {
            learning_rate: 0.0,
            ..fixed(alpha)
        });
        a.actor = agent.actor.clone();
        a.critic = agent.critic.clone();
        a.critic_target = agent.critic_target.clone();
        a.replay = agent.replay.clone();
        a.space = agent.space;
        a.update_with(&draws).unwrap();
        fd::flatten(&a.actor.grads)
    };
    let (g0, g1, g2) = (gradient(0.0), gradient(0.5), gradient(1.0));
    let entropy_part: f64 = g0.iter().zip(&g1).map(|(a, b)| (b - a).abs()).sum();
    assert!(entropy_part > 1e-6, "α does not reach the actor's gradient");
    for ((a, b), c) in g0.iter().zip(&g1).zip(&g2) {
        // g(1) − g(½) = g(½) − g(0): the entropy term is α times one vector.
        assert!(
            ((c - b) - (b - a)).abs() <= 1e-5 * (1.0 + c.abs()),
            "{a} {b} {c}"
        );
    }
}

#[test]
fn refused_minibatches_and_configs_change_nothing() {
    let mut rng = fd::rng(3);
    let mut agent = Small::boxed(small_config());
    let mut env = Faulty::new(u32::MAX);
    agent.init(&env, &mut rng).unwrap();
    assert!(matches!(
        agent.update(&mut rng),
        Err(Error::InvalidInput { .. })
    ));
    let mut cursor = Cursor::start(&mut env, &mut rng);
    for _ in 0..5 {
        agent.step(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
    }
    let before = snapshot(&agent);
    let mut draws = Draws::<1, 8>::ZERO;
    draws.len = 2;
    draws.indices[1] = 5;
    assert!(matches!(
        agent.update_with(&draws),
        Err(Error::InvalidInput { .. })
    ));
    assert_eq!(snapshot(&agent), before);
    agent.config.batch_size = 9;
    assert!(matches!(
        agent.step(&mut env, &mut cursor, &mut rng, |_| {}),
        Err(Error::InvalidConfig {
            field: "batch_size",
            ..
        })
    ));
    assert_eq!(snapshot(&agent), before);
}

/// The actor step's gradient — through the squashed sample, the smaller
/// critic's input and the entropy term — against central differences of
/// an `f64` reference of `J_π` on two samples.
#[test]
fn actor_gradient_through_the_critics_matches_finite_differences() {
    type Trunk = Chain<Dense<3, 8, Relu>, Dense<8, 8, Relu>>;
    type Q = Mlp<4, 8, 1, Relu>;
    let mut rng = fd::rng(7);
    let mut agent = Small::boxed(SacConfig {
        ent_coef: EntCoef::Fixed(0.3),
        learning_rate: 0.0,
        ..small_config()
    });
    let mut env = Faulty::new(u32::MAX);
    agent.init(&env, &mut rng).unwrap();
    fd::randomise_biases(&mut agent.actor.params, &mut rng);
    let mut cursor = Cursor::start(&mut env, &mut rng);
    for _ in 0..4 {
        agent.step(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
    }
    let mut draws = Draws::<1, 8>::ZERO;
    draws.len = 3;
    draws.indices[..3].copy_from_slice(&[0, 3, 1]);
    for (k, e) in [0.4f32, -1.3, 0.9].iter().enumerate() {
        draws.pi_noise[k][0] = *e;
        draws.next_noise[k][0] = -e;
    }
    let theta = fd::flatten(&agent.actor.params);
    let critic = fd::flatten(&agent.critic.params);
    let stats = agent.update_with(&draws).unwrap();
    let analytic = fd::flatten(&agent.actor.grads);
    // With lr = 0 the update changed no weight.
    assert_eq!(fd::flatten(&agent.actor.params), theta);
    let samples: Vec<(Vec<f64>, f64)> = (0..3)
        .map(|k| {
            let t = agent.replay.get(draws.indices[k] as usize).unwrap();
            let obs = t.obs.iter().map(|&x| f64::from(x)).collect();
            (obs, f64::from(draws.pi_noise[k][0]))
        })
        .collect();
    let (q1, q2) = critic.split_at(Q::LEN);
    // The reported `mean Q₁(s, a)` over the minibatch's stored actions.
    let mean_q1 = (0..3)
        .map(|k| {
            let t = agent.replay.get(draws.indices[k] as usize).unwrap();
            let x: Vec<f64> = critic_input::<3, 1, 4>(&t.obs, &t.action)
                .iter()
                .map(|&v| f64::from(v))
                .collect();
            Q::reference_forward(q1, &x)[0]
        })
        .sum::<f64>()
        / 3.0;
    assert!(
        (f64::from(stats.q1) - mean_q1).abs() <= 1e-5 * (1.0 + mean_q1.abs()),
        "q1 {} vs {mean_q1}",
        stats.q1
    );
    let loss = |theta: &[f64]| -> f64 {
        let (trunk, heads) = theta.split_at(Trunk::LEN);
        let (mu_head, ls_head) = heads.split_at(<Dense<8, 1>>::LEN);
        let mut sum = 0.0;
        for (obs, eps) in &samples {
            let h = Trunk::reference_forward(trunk, obs);
            let mu = <Dense<8, 1>>::reference_forward(mu_head, &h)[0];
            let ls = <Dense<8, 1>>::reference_forward(ls_head, &h)[0].clamp(-20.0, 2.0);
            let u = mu + ls.exp() * eps;
            let a = u.tanh();
            let log_prob = -0.5 * eps * eps
                - ls
                - 0.5 * (2.0 * core::f64::consts::PI).ln()
                - (1.0 - a * a + 1e-6).ln();
            let x = [obs[0], obs[1], obs[2], a];
            let q = Q::reference_forward(q1, &x)[0].min(Q::reference_forward(q2, &x)[0]);
            sum += 0.3 * log_prob - q;
        }
        sum / samples.len() as f64
    };
    let numeric = fd::numerical_gradient(&theta, loss);
    fd::assert_close("SAC actor loss", &analytic, &numeric);
    // The critic input: one sample's `∂Q₁/∂a` against the f64 reference.
    let obs = agent.replay.get(0).unwrap().obs;
    let a = SVector::<f32, 1>::new(0.35);
    let x = critic_input::<3, 1, 4>(&obs, &a);
    let mut cache = Q::ZERO_CACHE;
    agent.critic.params.q1.forward_train(&x, &mut cache);
    let mut scratch = Twin::<Q>::ZERO;
    let d_x =
        agent
            .critic
            .params
            .q1
            .backward(&cache, &SVector::<f32, 1>::new(1.0), &mut scratch.q1);
    let x64: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    let numeric = fd::numerical_gradient(&x64, |x| Q::reference_forward(q1, x)[0]);
    let analytic: Vec<f64> = d_x.iter().map(|&v| f64::from(v)).collect();
    fd::assert_close("∂Q/∂[s; a]", &analytic, &numeric);
}

#[test]
fn deployed_policy_acts_as_the_agent() {
    let mut rng = fd::rng(4);
    let mut agent = Small::boxed(small_config());
    let mut env = Faulty::new(u32::MAX);
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    for _ in 0..20 {
        agent.step(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
    }
    let policy = agent.policy();
    let mut blob = [0u8; crate::serialize::encoded_len::<
        SacPolicy<Chain<Dense<3, 8, Relu>, Dense<8, 8, Relu>>, 8, 1>,
    >()];
    crate::serialize::save(&policy, &mut blob).unwrap();
    let mut loaded = SacPolicy::<Chain<Dense<3, 8, Relu>, Dense<8, 8, Relu>>, 8, 1>::ZERO;
    crate::serialize::load(&mut loaded, &blob).unwrap();
    for k in 0..10 {
        let obs = SVector::<f32, 3>::new(0.3 * k as f32 - 1.0, 0.5, -0.1 * k as f32);
        let a = agent.act(&obs).unwrap();
        assert_eq!(loaded.act(&obs).unwrap(), a);
        assert!((-2.0..=2.0).contains(&a[0]));
    }
}

/// Trains on Gymnasium's Pendulum-v1 (seed 0) for at most `max_steps`
/// environment steps. Every 1000 steps a deterministic evaluation on 10
/// start states (seed 1000) decides "solved" (mean ≥ −200); the result is
/// then reported on 20 other, held-out start states (seed 2000), as the
/// training loop decides and reports. Returns the steps taken and the
/// held-out mean (at `max_steps` when never solved). Runs on a thread with
/// a large stack: the agent is built there (`make`) before it is boxed.
pub(crate) fn train_until_solved<A>(
    name: &'static str,
    max_steps: u64,
    make: impl FnOnce() -> Box<A> + Send + 'static,
) -> (u64, f32)
where
    A: Controller<3, Action = SVector<f32, 1>> + OffPolicy<3, 1> + crate::train::Learner<Pendulum>,
{
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let start = std::time::Instant::now();
            let mut rng = fd::rng(0);
            let mut agent = make();
            let mut env = Pendulum::new();
            crate::train::Learner::init(&mut *agent, &env, &mut rng).unwrap();
            let mut cursor = Cursor::start(&mut env, &mut rng);
            loop {
                OffPolicy::step(&mut *agent, &mut env, &mut cursor, &mut rng, |_| {}).unwrap();
                let n = agent.env_steps();
                if n.is_multiple_of(1000) || n >= max_steps {
                    let (gate, _) = evaluate(&*agent, &mut Pendulum::new(), 10, &mut fd::rng(1000)).unwrap();
                    std::println!(
                        "{name} Pendulum: {n} steps, gate mean {gate:.1}, {:.1} s",
                        start.elapsed().as_secs_f32()
                    );
                    if gate >= -200.0 || n >= max_steps {
                        let (mean, std) =
                            evaluate(&*agent, &mut Pendulum::new(), 20, &mut fd::rng(2000)).unwrap();
                        std::println!(
                            "{name} Pendulum: held-out mean {mean:.1} ± {std:.1} after {n} steps, {:.1} s",
                            start.elapsed().as_secs_f32()
                        );
                        return (n, mean);
                    }
                }
            }
        })
        .unwrap()
        .join()
        .unwrap()
}

/// SAC on Gymnasium's Pendulum-v1 with 64-64 networks (RL Zoo's settings,
/// 1000 warm-up steps): solved on held-out start states within
/// `SAC_PENDULUM_STEPS` steps (`cargo test --release -p microrl --lib
/// sac_learns_pendulum -- --ignored --nocapture`).
const SAC_PENDULUM_STEPS: u64 = 20_000;

#[test]
#[ignore = "trains for several seconds; run with --release -- --ignored"]
fn sac_learns_pendulum() {
    type Agent = SacMlp<3, 1, 4, 64, 20_000, 256>;
    let (steps, mean) = train_until_solved("SAC", SAC_PENDULUM_STEPS, || {
        Agent::boxed(SacConfig {
            learning_starts: 1000,
            ..SacConfig::PENDULUM
        })
    });
    assert!(mean >= -200.0, "held-out mean {mean} after {steps} steps");
}

/// The policy `Agent::export` writes after a run of the training loop
/// (`Deployed<Agent>`) is `policy(agent)` and, saved and loaded, acts as the
/// agent's own evaluation does (its `Controller`, through `ActsIn`), bit
/// for bit — for SAC and TD3 alike.
pub(crate) fn exported_policy_acts_as<A>(mut agent: Box<A>, policy: impl Fn(&A) -> A::Policy)
where
    A: crate::train::Learner<Pendulum> + Controller<3, Action = SVector<f32, 1>>,
    A::Policy: Params + Controller<3, Action = SVector<f32, 1>> + PartialEq + core::fmt::Debug,
{
    use crate::train::{ActsIn, RunConfig, Trainer};
    let (mut env, mut eval_env) = (Pendulum::new(), Pendulum::new());
    let run = RunConfig {
        quick_episodes: 0,
        report_episodes: 1,
        ..RunConfig::new(120, -200.0)
    };
    let mut trainer =
        Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, run, 3).unwrap();
    let outcome = trainer
        .run(&mut *agent, &mut env, &mut eval_env, &mut ())
        .unwrap();
    assert_eq!((outcome.steps, outcome.updates), (120, 70));
    let mut exported = Box::new(A::Policy::ZERO);
    crate::train::Agent::export(&*agent, &mut exported);
    assert_eq!(*exported, policy(&agent));
    let mut blob = std::vec![0u8; crate::serialize::encoded_len::<A::Policy>()];
    crate::serialize::save(&*exported, &mut blob).unwrap();
    let mut loaded = Box::new(A::Policy::ZERO);
    crate::serialize::load(&mut *loaded, &blob).unwrap();
    for k in 0..10 {
        let obs = SVector::<f32, 3>::new(0.3 * k as f32 - 1.0, 0.5, -0.7 * k as f32);
        let a = ActsIn::<Pendulum>::act_in(&*agent, &obs).unwrap();
        assert_eq!(loaded.act(&obs).unwrap(), a);
        assert!((-2.0..=2.0).contains(&a[0]));
    }
}

#[test]
fn exported_policy_acts_as_the_trained_agent() {
    type Agent = crate::agent::Sac<Pendulum, 16, 256, 32, 4>;
    let agent = Agent::boxed(SacConfig {
        buffer_size: 256,
        learning_starts: 50,
        batch_size: 32,
        ..SacConfig::PENDULUM
    });
    exported_policy_acts_as(agent, Agent::policy);
}

/// RAM of the Pendulum agents with 64-64 networks and a 10 000-transition
/// ring, and of their deployed policies (`--nocapture` prints them).
#[test]
fn memory_of_pendulum_agents() {
    use core::mem::size_of;
    type SacAgent = crate::agent::Sac<Pendulum, 64, 10_000, 256, 4>;
    type Td3Agent = crate::agent::Td3<Pendulum, 64, 10_000, 256, 4>;
    let ring = size_of::<crate::algo::ReplayBuffer<3, 1, 10_000>>();
    let sizes = [
        ("SAC agent", size_of::<SacAgent>()),
        ("TD3 agent", size_of::<Td3Agent>()),
        ("SAC policy", size_of::<crate::Deployed<SacAgent>>()),
        ("TD3 policy", size_of::<crate::Deployed<Td3Agent>>()),
        ("replay ring", ring),
    ];
    for (what, bytes) in sizes {
        std::println!("{what}: {bytes} bytes");
    }
    // 10 000 · (2·3 + 1 + 1) · 4 bytes of values and 10 000 flags.
    assert_eq!(ring, 10_000 * (4 * 8 + 1) + 3 * size_of::<usize>());
    // A 3-64-64-1 tanh network and two bounds: (256 + 4160 + 65) · 4 + 8.
    assert_eq!(size_of::<crate::Deployed<SacAgent>>(), 4481 * 4 + 8);
    assert_eq!(
        size_of::<crate::Deployed<SacAgent>>(),
        size_of::<crate::Deployed<Td3Agent>>()
    );
}

/// SAC driven by the training loop (`Trainer::start` + `run`, RunConfig's
/// defaults: a quick evaluation of 10 episodes every 1 000 steps, a
/// deciding one of 100 with a margin of 3 standard errors, early stop)
/// on Pendulum with 64-64 networks: the held-out report of 100 episodes
/// reaches −200 (`cargo test --release -p microrl --lib
/// sac_trainer_solves_pendulum -- --ignored --nocapture`).
#[test]
#[ignore = "trains for several seconds; run with --release -- --ignored"]
fn sac_trainer_solves_pendulum() {
    use crate::train::{RunConfig, Trainer};
    type Agent = crate::agent::Sac<Pendulum, 64, 20_000, 256, 4>;
    let outcome = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(|| {
            let start = std::time::Instant::now();
            let mut agent = Agent::boxed(SacConfig {
                learning_starts: 1000,
                ..SacConfig::PENDULUM
            });
            let (mut env, mut eval_env) = (Pendulum::new(), Pendulum::new());
            let run = RunConfig::new(SAC_PENDULUM_STEPS, -200.0);
            let mut trainer =
                Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, run, 0).unwrap();
            let outcome = trainer
                .run(&mut *agent, &mut env, &mut eval_env, &mut ())
                .unwrap();
            std::println!(
                "SAC Pendulum (trainer): {}, solved at {:?}, {} updates, {:.1} s",
                outcome.report,
                outcome.solved_at_step,
                outcome.updates,
                start.elapsed().as_secs_f32()
            );
            outcome
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(outcome.solved(-200.0), "{outcome:?}");
}

/// `boxed(config)` is `new(config)` field by field (the all-zero validity
/// the heap constructor rests on); TD3's: `td3::tests::boxed_is_new`.
#[test]
fn boxed_is_new() {
    let config = small_config();
    let (boxed, new) = (Small::boxed(config), Box::new(Small::new(config)));
    assert_eq!(boxed.config, new.config);
    assert_eq!(boxed.actor, new.actor);
    assert_eq!(boxed.critic, new.critic);
    assert_eq!(boxed.critic_target, new.critic_target);
    assert_eq!(boxed.log_alpha, new.log_alpha);
    assert_eq!(boxed.replay, new.replay);
    assert_eq!(boxed.space, new.space);
    assert_eq!((boxed.steps, boxed.n_updates), (new.steps, new.n_updates));
    assert_eq!(boxed.actor_cache, new.actor_cache);
    assert_eq!(boxed.critic_cache, new.critic_cache);
    assert_eq!(boxed.critic_next, new.critic_next);
}

/// A SAC agent with a 1 000 000-transition ring (28 MB) and 64-64 networks
/// is built, initialised and trained for a few steps in a thread with a
/// 64 KB stack: `boxed` never puts the agent on the stack.
#[test]
fn boxed_builds_a_huge_agent_in_a_64_kb_stack() {
    type Huge = crate::agent::Sac<Pendulum, 64, 1_000_000, 256, 4>;
    let steps = std::thread::Builder::new()
        .stack_size(64 * 1024)
        .spawn(|| {
            let mut agent = Huge::boxed(SacConfig {
                buffer_size: 1_000_000,
                learning_starts: 10,
                batch_size: 8,
                ..SacConfig::PENDULUM
            });
            let mut rng = <Xoshiro128PlusPlus as rand_core::SeedableRng>::seed_from_u64(0);
            let mut env = Pendulum::new();
            agent.init(&env, &mut rng).unwrap();
            assert_eq!(agent.replay.size(), 1_000_000);
            let mut cursor = crate::algo::Cursor::start(&mut env, &mut rng);
            for _ in 0..20 {
                agent.step(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
            }
            agent.steps
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(steps, 20);
}
