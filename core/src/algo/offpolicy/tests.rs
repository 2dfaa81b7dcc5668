//! The shared off-policy pieces' tests: the settings SAC and TD3 share
//! ([`Schedule`]'s refusals), the action scale, Polyak
//! averaging, the critic input and its gradient, PyTorch's initialisation
//! and the deployed tanh policy.

use super::*;
use crate::config::{Refusal, assert_refused_by_name};
use crate::nn::{Dense, Mlp, Relu, Tanh, fd};

/// Every shared setting refused by name on each side of its range (its
/// only side for the counts), for a replay capacity of 100 and minibatches
/// of up to 32.
#[test]
fn schedule_validate_names_the_field() {
    let ok = Schedule {
        buffer_size: 100,
        learning_starts: 0,
        batch_size: 32,
        tau: 1.0,
        gamma: 0.99,
        train_freq: 1,
        gradient_steps: 1,
        learning_rate: 3e-4,
    };
    let cases: [Refusal<Schedule>; 17] = [
        ("buffer_size", |s| s.buffer_size = 0),
        ("buffer_size", |s| s.buffer_size = 101),
        ("batch_size", |s| s.batch_size = 0),
        ("batch_size", |s| s.batch_size = 33),
        ("tau", |s| s.tau = 0.0),
        ("tau", |s| s.tau = 1.5),
        ("gamma", |s| s.gamma = f32::NAN),
        ("gamma", |s| s.gamma = 2.0),
        ("gamma", |s| s.gamma = -0.1),
        ("train_freq", |s| s.train_freq = 0),
        ("gradient_steps", |s| s.gradient_steps = 0),
        // A count is bounded: 4294967295 gradient steps a round never ends.
        ("gradient_steps", |s| s.gradient_steps = u32::MAX),
        ("gradient_steps", |s| {
            s.gradient_steps = MAX_GRADIENT_STEPS + 1
        }),
        ("train_freq", |s| s.train_freq = MAX_INTERVAL + 1),
        ("learning_starts", |s| s.learning_starts = u32::MAX),
        ("learning_rate", |s| s.learning_rate = -1.0),
        ("learning_rate", |s| s.learning_rate = f32::INFINITY),
    ];
    assert_refused_by_name(ok, &cases, |c| c.validate(100, 32));
}

#[test]
fn to_bounds_is_sb3_unscale_action() {
    let space = Continuous::<2> {
        low: [-2.0, 0.0],
        high: [2.0, 10.0],
    };
    let a = SVector::<f32, 2>::new(-1.0, 0.5);
    assert_eq!(to_bounds(&space, &a), SVector::<f32, 2>::new(-2.0, 7.5));
    let a = SVector::<f32, 2>::new(1.0, -1.0);
    assert_eq!(to_bounds(&space, &a), SVector::<f32, 2>::new(2.0, 0.0));
}

#[test]
fn polyak_moves_by_tau() {
    let mut target = SVector::<f32, 2>::new(1.0, -1.0);
    polyak(&mut target, &SVector::<f32, 2>::new(3.0, 1.0), 0.25);
    assert_eq!(target, SVector::<f32, 2>::new(1.5, -0.5));
    polyak(&mut target, &SVector::<f32, 2>::new(7.0, 7.0), 1.0);
    assert_eq!(target, SVector::<f32, 2>::new(7.0, 7.0));
}

#[test]
fn critic_input_concatenates() {
    let x = critic_input::<2, 1, 3>(
        &SVector::<f32, 2>::new(1.0, 2.0),
        &SVector::<f32, 1>::new(3.0),
    );
    assert_eq!(x, SVector::<f32, 3>::new(1.0, 2.0, 3.0));
    assert_eq!(action_part::<2, 1, 3>(&x), SVector::<f32, 1>::new(3.0));
}

/// The critic's input gradient (what the actor losses backpropagate
/// through) against central differences of the `f64` forward pass.
#[test]
fn critic_input_gradient_matches_finite_differences() {
    type Q = Mlp<5, 16, 1, Relu>;
    let mut rng = fd::rng(41);
    let mut q = Q::ZERO;
    torch_default_init(&mut q, &mut rng);
    let x = SVector::<f32, 5>::new(0.3, -0.8, 1.1, 0.45, -0.6);
    fd::check_layer(&q, &x, &mut rng);
}

#[test]
fn default_init_bounds_follow_fan_in() {
    let mut net = Mlp::<4, 16, 2, Relu>::ZERO;
    torch_default_init(&mut net, &mut fd::rng(5));
    let max = |s: &[f32]| s.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    assert!(max(net.first.weight.as_slice()) <= 0.5);
    assert!(max(net.first.bias.as_slice()) <= 0.5);
    assert!(max(net.first.weight.as_slice()) > 0.4);
    assert!(max(net.second.first.weight.as_slice()) <= 0.25);
    assert!(max(net.second.second.bias.as_slice()) <= 0.25);
    assert!(max(net.second.first.weight.as_slice()) > 0.2);
}

#[test]
fn tanh_policy_acts_in_bounds_and_refuses_nan() {
    let mut policy = TanhPolicy {
        net: Dense::<2, 1, Tanh>::ZERO,
        space: Continuous::symmetric(2.0),
    };
    policy.net.weight[(0, 0)] = 100.0;
    let a = policy.act(&SVector::<f32, 2>::new(1.0, 0.0)).unwrap();
    assert_eq!(a[0], 2.0);
    let a = policy.act(&SVector::<f32, 2>::new(0.0, 0.0)).unwrap();
    assert_eq!(a[0], 0.0);
    assert_eq!(
        policy.act(&SVector::<f32, 2>::new(f32::NAN, 0.0)),
        Err(Error::NonFinite)
    );
}

/// FNV-1a over the whole training state of an off-policy agent: every
/// `f32`'s bits and every counter, in a fixed order.
struct Fnv(u64);

impl Fnv {
    fn u64(&mut self, x: u64) {
        for b in x.to_le_bytes() {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn params<P: Params>(&mut self, p: &P) {
        for i in 0..P::TENSORS {
            for x in p.tensor(i) {
                self.u64(u64::from(x.to_bits()));
            }
        }
    }
    fn train<P: Params>(&mut self, t: &TrainState<P>) {
        self.params(&t.params);
        self.params(&t.optimizer.m);
        self.params(&t.optimizer.v);
        self.u64(u64::from(t.optimizer.t));
    }
    fn replay<const OBS: usize, const ACT: usize, const CAP: usize>(
        &mut self,
        r: &ReplayBuffer<OBS, ACT, CAP>,
    ) {
        self.u64(r.len() as u64);
        for i in 0..r.len() {
            let t = r.get(i).unwrap();
            self.params(&t.obs);
            self.params(&t.action);
            self.params(&t.next_obs);
            self.u64(u64::from(t.reward.to_bits()) * 2 + u64::from(t.terminated));
        }
    }
}

type SmallSac = crate::agent::Sac<crate::env::Pendulum, 16, 256, 32, 4>;
type SmallTd3 = crate::agent::Td3<crate::env::Pendulum, 16, 256, 32, 4>;

/// The whole state of a SAC agent hashed: weights, Adam moments and steps,
/// targets, `log α`, the ring and the counters (gradients and activation
/// caches are scratch).
fn sac_hash(sac: &SmallSac) -> u64 {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    h.train(&sac.actor);
    h.train(&sac.critic);
    h.params(&sac.critic_target);
    h.train(&sac.log_alpha);
    h.replay(&sac.replay);
    h.u64(sac.steps);
    h.u64(sac.n_updates);
    h.0
}

/// [`sac_hash`] for TD3 (its target actor instead of `log α`).
fn td3_hash(td3: &SmallTd3) -> u64 {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    h.train(&td3.actor);
    h.params(&td3.actor_target);
    h.train(&td3.critic);
    h.params(&td3.critic_target);
    h.replay(&td3.replay);
    h.u64(td3.steps);
    h.u64(td3.n_updates);
    h.0
}

/// `steps` Pendulum steps of `agent` from a cursor started with `seed`.
fn run_steps<L: OffPolicy<3, 1>>(
    agent: &mut L,
    env: &mut crate::env::Pendulum,
    seed: u64,
    steps: usize,
) {
    use rand_core::SeedableRng;
    let mut rng = rand_xoshiro::Xoshiro128PlusPlus::seed_from_u64(seed);
    let mut cursor = crate::algo::Cursor::start(env, &mut rng);
    for _ in 0..steps {
        agent.step(env, &mut cursor, &mut rng, |_| {}).unwrap();
    }
}

/// SAC and TD3 (16-16 networks, a 256-transition ring, minibatches of 32,
/// a 100-step warm-up, TD3's actor every second update), initialised from
/// seed 7.
fn small_agents() -> (std::boxed::Box<SmallSac>, std::boxed::Box<SmallTd3>) {
    use crate::algo::{SacConfig, Td3Config};
    use rand_core::SeedableRng;
    let mut rng = rand_xoshiro::Xoshiro128PlusPlus::seed_from_u64(7);
    let env = crate::env::Pendulum::new();
    let mut sac = SmallSac::boxed(SacConfig {
        buffer_size: 256,
        learning_starts: 100,
        batch_size: 32,
        ..SacConfig::PENDULUM
    });
    sac.init(&env, &mut rng).unwrap();
    let mut td3 = SmallTd3::boxed(Td3Config {
        buffer_size: 256,
        learning_starts: 100,
        batch_size: 32,
        action_noise: Some(0.1),
        ..Td3Config::PENDULUM
    });
    td3.init(&env, &mut rng).unwrap();
    (sac, td3)
}

/// Trains the [`small_agents`] for 700 Pendulum steps and hashes their
/// whole state: the bits recorded before the updates became transactional
/// (the critics' step staged, every step checked before any is taken),
/// which must not move them. Each maths tier has its own bits (libm and
/// `fast-math` differ in the last bit of `exp`/`tanh`); both were recorded
/// from the code before the change.
#[test]
fn sac_and_td3_updates_keep_their_recorded_bits() {
    #[cfg(not(feature = "fast-math"))]
    const RECORDED: (u64, u64) = (0x659e_479e_76bb_83bc, 0x35ff_bb1d_2410_90bb);
    #[cfg(feature = "fast-math")]
    const RECORDED: (u64, u64) = (0x6bfe_21d1_74b6_614d, 0x2b74_3860_f952_8f91);
    let mut env = crate::env::Pendulum::new();
    let (mut sac, mut td3) = small_agents();
    run_steps(&mut *sac, &mut env, 1, 700);
    run_steps(&mut *td3, &mut env, 2, 700);
    assert_eq!((sac_hash(&sac), td3_hash(&td3)), RECORDED);
}

/// An update whose actor (or `log α`) step refuses after the critics'
/// step was computed changes nothing in the agent, through `update` and
/// through the learning loop's `step` (the transition and the step count
/// are taken back too); with the actor's Adam configuration restored,
/// training goes on.
#[test]
fn a_refused_update_changes_nothing_in_sac_or_td3() {
    use rand_core::SeedableRng;
    let mut env = crate::env::Pendulum::new();
    let (mut sac, mut td3) = small_agents();
    run_steps(&mut *sac, &mut env, 1, 300);
    run_steps(&mut *td3, &mut env, 2, 300);
    let mut rng = rand_xoshiro::Xoshiro128PlusPlus::seed_from_u64(3);
    let mut cursor = crate::algo::Cursor::start(&mut env, &mut rng);

    // SAC: the actor's step refuses (ε = 0), then `log α`'s (β₁ = 1).
    for (actor_eps, alpha_beta1, field) in [(0.0, 0.9, "adam.eps"), (1e-5, 1.0, "adam.beta1")] {
        sac.actor.optimizer.config.eps = actor_eps;
        sac.log_alpha.optimizer.config.beta1 = alpha_beta1;
        let before = sac_hash(&sac);
        let refused = |r: Result<(), Error>| matches!(r, Err(Error::InvalidConfig { field: f, .. }) if f == field);
        assert!(refused(sac.update(&mut rng).map(|_| ())), "{field}");
        assert_eq!(sac_hash(&sac), before, "update, {field}");
        let step = sac.step(&mut env, &mut cursor, &mut rng, |_| {});
        assert!(refused(step.map(|_| ())), "{field}");
        assert_eq!(sac_hash(&sac), before, "step, {field}");
    }
    sac.log_alpha.optimizer.config.beta1 = 0.9;
    let before = sac_hash(&sac);
    sac.update(&mut rng).unwrap();
    assert_ne!(sac_hash(&sac), before);

    // TD3: the actor's step refuses on every delayed update; the critic
    // steps in between are taken.
    td3.actor.optimizer.config.eps = 0.0;
    let mut refused = 0;
    for _ in 0..6 {
        let before = td3_hash(&td3);
        match td3.step(&mut env, &mut cursor, &mut rng, |_| {}) {
            Ok(_) => assert_ne!(td3_hash(&td3), before),
            Err(e) => {
                assert!(
                    matches!(
                        e,
                        Error::InvalidConfig {
                            field: "adam.eps",
                            ..
                        }
                    ),
                    "{e:?}"
                );
                assert_eq!(td3_hash(&td3), before);
                refused += 1;
            }
        }
    }
    assert!(refused >= 2, "{refused}");
    td3.actor.optimizer.config.eps = 1e-5;
    let before = td3_hash(&td3);
    td3.update(&mut rng).unwrap();
    assert_ne!(td3_hash(&td3), before);
}
