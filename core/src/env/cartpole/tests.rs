//! Unit tests of `cartpole`.

use super::*;
use crate::env::testing::{NON_FINITE, assert_refused_unchanged};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

/// Both types can live in a `static`.
static STATIC_CARTPOLE: CartPole = CartPole::new();
static STATIC_CONTINUOUS: CartPoleContinuous = CartPoleContinuous::new();

fn act(a: f32) -> SVector<f32, 1> {
    SVector::from([a])
}

#[test]
fn new_is_zero_and_static() {
    assert_eq!(STATIC_CARTPOLE.state(), [0.0; 4]);
    assert_eq!(STATIC_CARTPOLE.elapsed_steps(), 0);
    assert_eq!(STATIC_CONTINUOUS.state(), [0.0; 4]);
    assert_eq!(CartPole::default(), CartPole::new());
    assert_eq!(CartPole::SOLVED_RETURN, 475.0);
    assert_eq!(CartPoleContinuous::SOLVED_RETURN, 475.0);
    assert_eq!(CartPoleContinuous::MAX_EPISODE_STEPS, 500);
}

#[test]
fn constants_match_gymnasium() {
    // Python's values of Gymnasium's expressions (`repr` of the floats).
    let p = CartPoleParams::DEFAULT;
    assert_eq!(p.masspole + p.masscart, 1.1);
    assert_eq!(p.masspole * p.length, 0.05);
    assert_eq!((p.gravity, p.force_mag, p.tau), (9.8, 10.0, 0.02));
    assert_eq!(FOUR_THIRDS, 1.333_333_333_333_333_3);
    assert_eq!(THETA_THRESHOLD, 0.209_439_510_239_319_53);
}

#[test]
fn observation_is_the_state_rounded_to_f32() {
    let mut env = CartPole::new();
    let state = [0.1, -1.0 / 3.0, 1e-40, -2.0];
    env.set_state(state);
    assert_eq!(env.state(), state);
    let obs = env.observation();
    for (o, s) in obs.iter().zip(state) {
        assert_eq!(*o, s as f32);
        assert!((f64::from(*o) - s).abs() <= s.abs() * f64::from(f32::EPSILON) / 2.0 + 1e-45);
    }
}

#[test]
fn reset_draws_each_component_in_range() {
    let mut env = CartPole::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(7);
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for _ in 0..2000 {
        let obs = env.reset(&mut rng);
        assert_eq!(obs, env.observation());
        assert_eq!(env.elapsed_steps(), 0);
        for &s in &env.state() {
            assert!((-0.05..0.05).contains(&s), "{s}");
            lo = lo.min(s);
            hi = hi.max(s);
        }
    }
    assert!(lo < -0.049 && hi > 0.049, "range covered: {lo}..{hi}");
}

#[test]
fn seeded_episodes_are_deterministic() {
    crate::env::testing::assert_seeded_episodes_deterministic(CartPole::new, 30, |_, t| t % 3 % 2);
}

/// From rest, upright, only the force acts (cos 0 = 1, sin 0 = 0):
/// the state after one push right, by hand.
fn one_push_from_rest(p: CartPoleParams) -> [f64; 4] {
    let total_mass = p.masspole + p.masscart;
    let temp = p.force_mag / total_mass;
    let thetaacc = (0.0 - temp) / (p.length * (FOUR_THIRDS - p.masspole / total_mass));
    let xacc = temp - p.masspole * p.length * thetaacc / total_mass;
    [0.0, p.tau * xacc, 0.0, p.tau * thetaacc]
}

#[test]
fn a_changed_plant_follows_its_own_physics() {
    let heavy = CartPoleParams {
        masspole: 0.3,
        length: 1.0,
        force_mag: 7.0,
        tau: 0.01,
        ..CartPoleParams::DEFAULT
    };
    let mut env = CartPole::with_params(heavy).unwrap();
    assert_eq!(env.params(), heavy);
    env.step(1).unwrap();
    assert_eq!(env.state(), one_push_from_rest(heavy));
    assert_ne!(env.state(), one_push_from_rest(CartPoleParams::DEFAULT));
    // Gravity acts on a tilted pole: a stronger one topples it sooner.
    let fall = |gravity: f64| {
        let mut env = CartPoleContinuous::with_params(CartPoleParams {
            gravity,
            ..CartPoleParams::DEFAULT
        })
        .unwrap();
        env.set_state([0.0, 0.0, 0.05, 0.0]);
        (1..)
            .find(|_| env.step(SVector::from([0.0])).unwrap().terminated)
            .unwrap()
    };
    assert!(fall(20.0) < fall(9.8));
    // The continuous variant pushes with `a · force_mag`.
    let mut cont = CartPoleContinuous::with_params(heavy).unwrap();
    cont.step(SVector::from([1.0])).unwrap();
    assert_eq!(cont.state(), one_push_from_rest(heavy));
    assert_eq!(cont.params(), heavy);
    // The parameters survive a state restore.
    let mut words = [0.0; 6];
    env.save_state(&mut words);
    let mut other = CartPole::with_params(heavy).unwrap();
    other.restore_state(&words).unwrap();
    assert_eq!((other.state(), other.params()), (env.state(), heavy));
}

#[test]
fn invalid_plants_are_refused_naming_the_field() {
    type Set = fn(&mut CartPoleParams, f64);
    let fields: [(&str, Set); 6] = [
        ("gravity", |p, x| p.gravity = x),
        ("masscart", |p, x| p.masscart = x),
        ("masspole", |p, x| p.masspole = x),
        ("length", |p, x| p.length = x),
        ("force_mag", |p, x| p.force_mag = x),
        ("tau", |p, x| p.tau = x),
    ];
    for (field, set) in fields {
        for x in [f64::NAN, f64::INFINITY, -1.0, 0.0] {
            let mut p = CartPoleParams::DEFAULT;
            set(&mut p, x);
            let result = CartPole::with_params(p);
            if field == "gravity" && x == 0.0 {
                assert!(result.is_ok());
            } else {
                assert!(
                    matches!(result, Err(Error::InvalidConfig { field: f, .. }) if f == field),
                    "{field} = {x}"
                );
            }
        }
    }
}

#[test]
fn one_step_matches_hand_computation() {
    let mut env = CartPole::new();
    let step = env.step(1).unwrap();
    assert_eq!(env.state(), one_push_from_rest(CartPoleParams::DEFAULT));
    assert!(env.state()[1] > 0.0 && env.state()[3] < 0.0);
    assert_eq!(step.obs, env.observation());
    assert_eq!(step.reward, 1.0);
    assert!(!step.terminated && !step.truncated);
    assert_eq!(env.elapsed_steps(), 1);
}

#[test]
fn one_step_from_a_tilted_state_matches_the_f64_formula() {
    let start = [0.01, -0.02, 0.03, 0.04];
    let mut env = CartPole::new();
    env.set_state(start);
    env.step(0).unwrap();
    let [x, x_dot, theta, theta_dot] = start;
    let (c, s) = (libm::cos(theta), libm::sin(theta));
    let temp = (-10.0 + 0.05 * (theta_dot * theta_dot) * s) / 1.1;
    let thetaacc = (9.8 * s - c * temp) / (0.5 * (4.0 / 3.0 - 0.1 * (c * c) / 1.1));
    let xacc = temp - 0.05 * thetaacc * c / 1.1;
    assert_eq!(
        env.state(),
        [
            x + 0.02 * x_dot,
            x_dot + 0.02 * xacc,
            theta + 0.02 * theta_dot,
            theta_dot + 0.02 * thetaacc
        ]
    );
}

#[test]
fn invalid_action_leaves_everything_unchanged() {
    let mut env = CartPole::new();
    env.reset(&mut Xoshiro128PlusPlus::seed_from_u64(3));
    env.step(0).unwrap();
    assert_refused_unchanged(&mut env, &[2, 3, usize::MAX], Error::InvalidAction);
}

#[test]
fn non_finite_continuous_action_leaves_everything_unchanged() {
    let mut env = CartPoleContinuous::new();
    env.reset(&mut Xoshiro128PlusPlus::seed_from_u64(3));
    env.step(act(0.3)).unwrap();
    assert_refused_unchanged(&mut env, &NON_FINITE, Error::NonFinite);
}

/// With zero velocities a step leaves `x` and `theta` exactly where they
/// were set, so the termination test sees the chosen value.
fn terminated_at(state: [f64; 4]) -> bool {
    let mut env = CartPole::new();
    env.set_state(state);
    let step = env.step(0).unwrap();
    assert_eq!(env.state()[0], state[0]);
    assert_eq!(env.state()[2], state[2]);
    assert_eq!(step.reward, 1.0, "the terminating step still pays 1");
    step.terminated
}

#[test]
fn termination_at_the_exact_thresholds() {
    // Gymnasium: `x > 2.4` and `theta > 12·2π/360` in f64, strictly.
    for sign in [1.0f64, -1.0] {
        for (i, thr) in [(0, X_THRESHOLD), (2, THETA_THRESHOLD)] {
            let mut state = [0.0; 4];
            state[i] = sign * thr;
            assert!(!terminated_at(state), "{state:?}");
            state[i] = sign * thr.next_up();
            assert!(terminated_at(state), "{state:?}");
        }
        // 2.4_f32 lies above 2.4, so it terminates (as in Gymnasium).
        assert!(terminated_at([sign * f64::from(2.4f32), 0.0, 0.0, 0.0]));
    }
    assert!(!terminated_at([2.3, 0.0, 0.2, 0.0]));
    assert!(terminated_at([f64::INFINITY, 0.0, 0.0, 0.0]));
}

#[test]
fn reward_after_termination_follows_gymnasium() {
    let mut env = CartPole::new();
    env.set_state([0.0, 0.0, 0.2, 1.0]);
    let first = env.step(1).unwrap();
    assert!(first.terminated);
    assert_eq!(first.reward, 1.0);
    // Stepping on keeps simulating; further out-of-bounds steps pay 0.
    let second = env.step(1).unwrap();
    assert!(second.terminated);
    assert_eq!(second.reward, 0.0);
    // Back inside the bounds: 1 again (Gymnasium checks `not terminated` first).
    env.set_state([0.0; 4]);
    assert_eq!(env.step(1).unwrap().reward, 1.0);
    env.set_state([3.0, 0.0, 0.0, 0.0]);
    assert_eq!(env.step(1).unwrap().reward, 0.0);
    // A reset clears the flag.
    env.reset(&mut Xoshiro128PlusPlus::seed_from_u64(0));
    env.set_state([3.0, 0.0, 0.0, 0.0]);
    assert_eq!(env.step(1).unwrap().reward, 1.0);
}

#[test]
fn truncates_at_500_steps() {
    let mut env = CartPole::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(5);
    let mut obs = env.reset(&mut rng);
    let mut total = 0.0;
    for t in 1..=CartPole::MAX_EPISODE_STEPS {
        // A simple balancing controller keeps the pole up for the whole episode.
        let action = usize::from(obs[2] + 0.5 * obs[3] > 0.0);
        let step = env.step(action).unwrap();
        total += step.reward;
        assert!(!step.terminated, "fell at step {t}");
        assert_eq!(step.truncated, t == CartPole::MAX_EPISODE_STEPS, "step {t}");
        assert_eq!(env.elapsed_steps(), t);
        obs = step.obs;
    }
    assert_eq!(total, 500.0);
    assert!(total >= CartPole::SOLVED_RETURN);
    // Beyond the limit every step stays truncated.
    assert!(env.step(0).unwrap().truncated);
    env.reset(&mut rng);
    assert_eq!(env.elapsed_steps(), 0);
    assert!(!env.step(0).unwrap().truncated);
}

#[test]
fn continuous_shares_the_discrete_physics() {
    let start = [0.01, -0.02, 0.03, 0.04];
    let mut d = CartPole::new();
    let mut c = CartPoleContinuous::new();
    for (discrete, continuous) in [(1, 1.0), (0, -1.0), (1, 5.0), (0, -3.5)] {
        d.set_state(start);
        c.set_state(start);
        assert_eq!(d.step(discrete).unwrap(), c.step(act(continuous)).unwrap());
        assert_eq!(d.state(), c.state());
    }
    // A half action gives a force in between, and zero force none at all.
    let mut half = CartPoleContinuous::new();
    half.set_state(start);
    let mid = half.step(act(0.5)).unwrap().obs[1];
    let mut pos = CartPole::new();
    pos.set_state(start);
    let mut neg = pos;
    let hi = pos.step(1).unwrap().obs[1];
    let lo = neg.step(0).unwrap().obs[1];
    assert!(lo < mid && mid < hi);
    let mut zero = CartPoleContinuous::new();
    zero.set_state([0.0; 4]);
    assert_eq!(zero.step(act(0.0)).unwrap().obs, SVector::<f32, 4>::zeros());
    assert_eq!(c.elapsed_steps(), 4);
}

#[test]
fn continuous_force_is_computed_in_f64() {
    // 0.1_f32 · 10 in f64 is not the f32 product 1.0: the force follows
    // Python's `float(a) * 10.0`.
    let a = 0.1f32;
    assert_ne!(f64::from(a) * 10.0, f64::from(a * 10.0));
    let mut c = CartPoleContinuous::new();
    c.step(act(a)).unwrap();
    let mut reference = CartPole::new();
    reference.apply_force(f64::from(a) * 10.0);
    assert_eq!(c.state(), reference.state());
}

#[test]
fn plant_parameters_have_a_physical_range() {
    use crate::env::PendulumParams;
    use std::string::ToString;
    assert_eq!(CartPoleParams::DEFAULT.check(), Ok(()));
    assert_eq!(PendulumParams::DEFAULT.check(), Ok(()));
    let frozen = CartPoleParams {
        tau: 1e-30,
        ..CartPoleParams::DEFAULT
    };
    let e = frozen.check().unwrap_err();
    assert_eq!((e.field, e.value, e.min, e.max), ("tau", 1e-30, 1e-4, 0.1));
    assert_eq!(
        e.to_string(),
        "`tau` = 1e-30 is outside its physical range [0.0001, 0.1] s"
    );
    assert!(matches!(
        CartPole::with_params(frozen),
        Err(Error::InvalidConfig { field: "tau", .. })
    ));
    let heavy = PendulumParams {
        m: 1e30,
        ..PendulumParams::DEFAULT
    };
    assert_eq!(heavy.check().unwrap_err().field, "m");
}
