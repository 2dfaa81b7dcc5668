//! Property tests (proptest) over the core's public functions: for arbitrary
//! `f32` inputs — NaN, ±∞, ±MAX, subnormals included — and arbitrary
//! configurations and bytes, nothing panics and nothing returns a
//! non-finite `Ok`. (Seeded loops with targeted extremes live in
//! `robustness_core.rs`; this file lets proptest search and shrink.)

use microrl::algo::{AcConfig, Cursor, PpoConfig};
use microrl::env::{ActionSpace, CartPole, CartPoleContinuous, Continuous, Env, Pendulum};
use microrl::normalize::RunningNorm;
use microrl::optim::{Adam, AdamConfig, Optimizer, Schedule, clip_grad_norm};
use microrl::policy::Categorical;
use microrl::{Controller, Params, SVector, agent, serialize};
use proptest::prelude::*;

/// Any `f32` bit pattern: NaN payloads, infinities, subnormals, MAX.
fn any_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<u32>().prop_map(f32::from_bits),
        any::<f32>(),
        Just(f32::MAX),
        Just(f32::MIN),
        Just(f32::MIN_POSITIVE / 2.0),
        -1e3f32..1e3,
    ]
}

fn vec4() -> impl Strategy<Value = SVector<f32, 4>> {
    [any_f32(), any_f32(), any_f32(), any_f32()].prop_map(SVector::<f32, 4>::from)
}

fn finite(xs: &[f32]) -> bool {
    xs.iter().all(|x| x.is_finite())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn categorical_is_a_distribution_or_refused(l in [any_f32(), any_f32(), any_f32()]) {
        if let Ok(d) = Categorical::from_logits(&SVector::<f32, 3>::from(l)) {
            prop_assert!(finite(d.log_probs().as_slice()));
            prop_assert!(d.entropy().is_finite() && d.entropy() >= -1e-6);
            let sum: f32 = d.probs().iter().sum();
            prop_assert!((sum - 1.0).abs() < 1e-4, "{sum}");
            prop_assert!(d.mode() < 3);
        }
    }

    #[test]
    fn a_deployed_policy_commands_within_its_space_or_refuses(
        obs in [any_f32(), any_f32(), any_f32()],
        weights in proptest::collection::vec(any_f32(), 8),
        limit in 0.01f32..100.0,
    ) {
        let mut policy = Box::new(agent::Policy::<Pendulum, 4>::ZERO);
        for (k, w) in weights.iter().enumerate() {
            if let Some(x) = policy.actor.get_flat_mut(k * 3) {
                *x = *w;
            }
        }
        policy.space = Continuous::symmetric(limit);
        if let Ok(a) = policy.act(&SVector::<f32, 3>::from(obs)) {
            prop_assert!(a[0].is_finite() && a[0].abs() <= limit);
        }
    }

    #[test]
    fn a_categorical_policy_picks_a_valid_action_or_refuses(obs in vec4(), seed in any::<u64>()) {
        let blob = microrl_harness::arch::init_blob(microrl_harness::Arch::CartpoleSmall, seed).unwrap();
        let mut policy = Box::new(agent::Policy::<CartPole, 32>::ZERO);
        serialize::load(&mut *policy, &blob).unwrap();
        if let Ok(a) = policy.act(&obs) {
            prop_assert!(a < 2);
        } else {
            prop_assert!(!finite(obs.as_slice()));
        }
    }

    #[test]
    fn the_normaliser_stays_finite_or_refuses(xs in proptest::collection::vec(vec4(), 1..20)) {
        let mut norm = RunningNorm::<4>::ZERO;
        for x in &xs {
            let before = norm.clone();
            match norm.update_normalize(x) {
                Ok(z) => {
                    prop_assert!(finite(z.as_slice()));
                    prop_assert!(finite(norm.mean.as_slice()) && finite(norm.var.as_slice()));
                }
                Err(_) => prop_assert_eq!(&norm, &before),
            }
        }
    }

    #[test]
    fn schedules_stay_finite(start in any_f32(), end in any_f32(), step in any::<u64>(), total in any::<u64>()) {
        let s = Schedule::Linear { start, end };
        if s.validate("learning_rate", f32::MAX).is_ok() {
            prop_assert!(s.at(step, total).is_finite());
        }
    }

    #[test]
    fn optimiser_steps_leave_finite_parameters_or_change_nothing(
        g in [any_f32(), any_f32(), any_f32(), any_f32()],
        lr in any_f32(),
        max_norm in any_f32(),
    ) {
        let mut params = SVector::<f32, 4>::new(0.5, -0.25, 1.0, 2.0);
        let mut grads = SVector::<f32, 4>::from(g);
        let mut adam = Adam::<SVector<f32, 4>>::new(AdamConfig::DEFAULT);
        let before = (params, adam.clone());
        let clipped = clip_grad_norm(&mut grads, max_norm);
        match adam.step(&mut params, &grads, lr) {
            Ok(()) => {
                prop_assert!(clipped.is_ok() || clipped.is_err());
                prop_assert!(params.is_finite() && adam.m.is_finite() && adam.v.is_finite());
            }
            Err(_) => prop_assert_eq!((params, adam), before),
        }
    }

    #[test]
    fn environments_refuse_non_finite_actions_and_stay_finite(a in any_f32(), seed in any::<u64>()) {
        let mut rng = microrl_tests::rng(seed);
        let mut pendulum = Pendulum::new();
        pendulum.reset(&mut rng);
        let space = pendulum.action_space();
        match pendulum.step(space.command(&SVector::<f32, 1>::new(a))) {
            Ok(s) => prop_assert!(finite(s.obs.as_slice()) && s.reward.is_finite()),
            Err(_) => prop_assert!(!a.is_finite()),
        }
        let mut cart = CartPoleContinuous::new();
        cart.reset(&mut rng);
        match cart.step(SVector::<f32, 1>::new(a)) {
            Ok(s) => prop_assert!(finite(s.obs.as_slice())),
            Err(_) => prop_assert!(!a.is_finite()),
        }
    }

    #[test]
    fn any_bytes_load_or_are_refused_without_change(bytes in proptest::collection::vec(any::<u8>(), 0..6000)) {
        let mut policy = Box::new(agent::Policy::<CartPole, 32>::ZERO);
        if serialize::load(&mut *policy, &bytes).is_err() {
            prop_assert!(*policy == agent::Policy::<CartPole, 32>::ZERO);
        } else {
            prop_assert!(policy.is_finite());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Arbitrary hyper-parameters: refused at `init`, or a whole
    /// collect-and-update runs without a panic and leaves finite weights.
    #[test]
    fn any_configuration_is_refused_or_trains_finitely(
        gamma in any_f32(), lambda in any_f32(), lr in any_f32(), clip in any_f32(),
        ent in any_f32(), vf in any_f32(), grad in any_f32(), eps in any_f32(),
        epochs in 0u16..4, minibatches in 0u16..5, seed in any::<u64>(),
    ) {
        let config = PpoConfig {
            gamma, gae_lambda: lambda, learning_rate: Schedule::Constant(lr),
            clip_range: Schedule::Constant(clip), ent_coef: ent, vf_coef: vf,
            max_grad_norm: Some(grad), epochs, minibatches,
            adam: AdamConfig { eps, ..AdamConfig::DEFAULT },
            ..PpoConfig::DEFAULT
        };
        let mut agent = Box::new(agent::Ppo::<CartPole, 8, 64>::new(config));
        let mut env = CartPole::new();
        let mut rng = microrl_tests::rng(seed);
        if agent.init(&env, &mut rng).is_ok() {
            let mut cursor = Cursor::start(&mut env, &mut rng);
            agent.collect(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
            let _ = agent.update(&mut rng);
            prop_assert!(agent.train.params.is_finite());
        }
        let ac = AcConfig { gamma, ent_coef: ent, actor_lr: Schedule::Constant(lr), ..AcConfig::DEFAULT };
        let mut ac_agent = Box::new(agent::ActorCritic::<CartPole, 8>::new(ac));
        if ac_agent.init(&env, &mut rng).is_ok() {
            let mut cursor = Cursor::start(&mut env, &mut rng);
            for _ in 0..20 {
                let _ = ac_agent.step(&mut env, &mut cursor, &mut rng, |_| {});
            }
            prop_assert!(ac_agent.actor.params.is_finite() && ac_agent.critic.params.is_finite());
        }
    }
}
