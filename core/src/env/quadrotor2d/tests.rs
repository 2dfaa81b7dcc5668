//! Unit tests of `quadrotor2d`.

use super::*;
use crate::env::testing::{
    Field, assert_refusals, assert_refused_unchanged, assert_state_round_trip,
};
use crate::rng;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

static STATIC_QUAD: Quadrotor2d = Quadrotor2d::new();

fn act(u1: f32, u2: f32) -> SVector<f32, 2> {
    SVector::from([u1, u2])
}

fn hover() -> f32 {
    Quadrotor2dParams::DEFAULT.hover_command() as f32
}

#[test]
fn new_is_level_at_the_origin_and_static() {
    assert_eq!(STATIC_QUAD.state(), [0.0; 6]);
    assert_eq!(STATIC_QUAD.observation(), SVector::from([0.0; 6]));
    assert!(!STATIC_QUAD.crashed());
    assert_eq!(Quadrotor2d::default(), Quadrotor2d::new());
    assert_eq!(Quadrotor2d::MAX_EPISODE_STEPS, 500);
    assert_eq!(STATIC_QUAD.action_space(), Continuous::symmetric(1.0));
    // Crazyflie-like: hover needs 44 % of full thrust per rotor.
    let h = Quadrotor2dParams::DEFAULT.hover_command();
    assert!((-0.12..-0.11).contains(&h), "{h}");
}

#[test]
fn hover_is_an_equilibrium_with_full_reward() {
    let p = Quadrotor2dParams::DEFAULT;
    let mut env = Quadrotor2d::new();
    // The hover command in f32 is within one f32 rounding of the exact one.
    for _ in 0..500 {
        let step = env.step(act(hover(), hover())).unwrap();
        assert!(!step.terminated);
        assert!(step.reward > 0.999, "{}", step.reward);
    }
    let [x, z, th, vx, vz, w] = env.state();
    assert_eq!((x, th, vx, w), (0.0, 0.0, 0.0, 0.0));
    // f32 rounding of the hover command: a residual vertical acceleration
    // of at most ~1e-7·g.
    assert!(z.abs() < 1e-5 && vz.abs() < 1e-5, "{z} {vz}");
    assert!(p.hover_command() > -1.0);
}

#[test]
fn free_fall_conserves_energy_and_is_a_parabola() {
    // Rotors off: ẍ = 0, z̈ = −g, θ̈ = 0; RK4 integrates it exactly.
    let p = Quadrotor2dParams::DEFAULT;
    let mut env = Quadrotor2d::new();
    env.set_state([0.0, 0.5, 0.3, 0.2, 1.0, 0.5]);
    let energy =
        |s: [f64; 6]| 0.5 * p.mass * (s[3] * s[3] + s[4] * s[4]) + p.mass * p.gravity * s[1];
    let e0 = energy(env.state());
    for k in 1..=20 {
        env.step(act(-1.0, -1.0)).unwrap();
        let t = f64::from(k) * p.dt;
        let [x, z, th, vx, vz, w] = env.state();
        assert!((x - (0.2 * t)).abs() < 1e-12);
        assert!((z - (0.5 + t - 0.5 * p.gravity * t * t)).abs() < 1e-12);
        assert!((th - (0.3 + 0.5 * t)).abs() < 1e-12 && (w - 0.5).abs() < 1e-12);
        assert!((vx - 0.2).abs() < 1e-12 && (vz - (1.0 - p.gravity * t)).abs() < 1e-12);
        assert!((energy(env.state()) - e0).abs() < 1e-12);
    }
}

#[test]
fn sign_conventions() {
    // More thrust on rotor 1 (the +x arm) pitches up: θ̇ > 0.
    let mut env = Quadrotor2d::new();
    env.step(act(0.0, -0.2)).unwrap();
    assert!(env.state()[2] > 0.0 && env.state()[5] > 0.0);
    // A positive pitch tilts the thrust towards −x.
    env.set_state([0.0, 0.0, 0.3, 0.0, 0.0, 0.0]);
    env.step(act(0.5, 0.5)).unwrap();
    assert!(env.state()[3] < 0.0 && env.state()[0] < 0.0);
    // Full thrust climbs; equal thrusts add no rotation.
    env.set_state([0.0; 6]);
    env.step(act(1.0, 1.0)).unwrap();
    let [_, z, th, _, vz, w] = env.state();
    assert!(z > 0.0 && vz > 0.0 && th == 0.0 && w == 0.0);
    // Commands beyond [−1, 1] are clipped.
    let (mut a, mut b) = (Quadrotor2d::new(), Quadrotor2d::new());
    assert_eq!(
        a.step(act(5.0, -9.0)).unwrap(),
        b.step(act(1.0, -1.0)).unwrap()
    );
}

#[test]
fn leaving_the_envelope_terminates() {
    let mut env = Quadrotor2d::new();
    // Rotors off from 0.2 m above the ground: falls through it.
    env.set_state([0.0, -0.8, 0.0, 0.0, -3.0, 0.0]);
    let mut ended = false;
    for _ in 0..100 {
        let step = env.step(act(-1.0, -1.0)).unwrap();
        if step.terminated {
            assert!(env.state()[1] < -1.0);
            ended = true;
            break;
        }
    }
    assert!(ended);
    for state in [
        [2.05, 0.0, 0.0, 1.0, 0.0, 0.0],
        [0.0, 2.05, 0.0, 0.0, 1.0, 0.0],
        [0.0, 0.0, 1.6, 0.0, 0.0, 1.0],
        [0.0, 0.0, -1.6, 0.0, 0.0, -1.0],
    ] {
        env.set_state(state);
        assert!(
            env.step(act(hover(), hover())).unwrap().terminated,
            "{state:?}"
        );
    }
}

#[test]
fn truncates_at_500_steps_and_rewards_stay_in_bounds() {
    let mut env = Quadrotor2d::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(3);
    env.reset(&mut rng);
    for t in 1..=Quadrotor2d::MAX_EPISODE_STEPS {
        let step = env.step(act(hover(), hover())).unwrap();
        assert_eq!(step.truncated, t == Quadrotor2d::MAX_EPISODE_STEPS);
        if step.terminated {
            break;
        }
    }
    for _ in 0..3000 {
        let u = [(); 2].map(|()| rng::uniform_range(&mut rng, -2.0, 2.0));
        let step = env.step(act(u[0], u[1])).unwrap();
        assert!((0.25..=1.0).contains(&step.reward), "{}", step.reward);
        assert!(step.obs.iter().all(|v| v.is_finite()));
        if step.done() {
            env.reset(&mut rng);
        }
    }
}

#[test]
fn non_finite_actions_leave_everything_unchanged() {
    let mut env = Quadrotor2d::new();
    env.reset(&mut Xoshiro128PlusPlus::seed_from_u64(1));
    env.step(act(0.5, 0.1)).unwrap();
    assert_refused_unchanged(
        &mut env,
        &[
            act(f32::NAN, 0.0),
            act(0.0, f32::INFINITY),
            act(f32::NEG_INFINITY, 1.0),
        ],
        Error::NonFinite,
    );
}

#[test]
fn reset_ranges() {
    let mut env = Quadrotor2d::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(2);
    let mut widest = [0.0f64; 6];
    for _ in 0..2000 {
        let obs = env.reset(&mut rng);
        for (i, s) in env.state().into_iter().enumerate() {
            assert!((-RESET_HIGH[i]..RESET_HIGH[i]).contains(&s));
            widest[i] = widest[i].max(s.abs());
        }
        assert_eq!(obs, env.observation());
        assert_eq!(env.elapsed_steps(), 0);
        assert!(!env.crashed());
    }
    for i in 0..6 {
        assert!(widest[i] > 0.99 * RESET_HIGH[i]);
    }
}

#[test]
fn seeded_episodes_are_deterministic() {
    crate::env::testing::assert_seeded_episodes_deterministic(Quadrotor2d::new, 50, |rng, _| {
        let u = rng::uniform_range(rng, -0.3, 0.1);
        act(u, u)
    });
}

#[test]
fn state_round_trips_and_keeps_the_vehicle() {
    let params = Quadrotor2dParams {
        mass: 0.03,
        ..Quadrotor2dParams::DEFAULT
    };
    let mut env = Quadrotor2d::with_params(params).unwrap();
    env.reset(&mut Xoshiro128PlusPlus::seed_from_u64(6));
    for _ in 0..10 {
        env.step(act(0.0, -0.1)).unwrap();
    }
    let fresh = Quadrotor2d::with_params(params).unwrap();
    assert_state_round_trip(&env, fresh, act(0.2, -0.3), 6);
}

#[test]
fn bad_parameters_are_refused_naming_the_field() {
    let fields: [Field<Quadrotor2dParams>; 6] = [
        ("mass", |p, x| p.mass = x),
        ("arm_length", |p, x| p.arm_length = x),
        ("inertia", |p, x| p.inertia = x),
        ("gravity", |p, x| p.gravity = x),
        ("max_thrust", |p, x| p.max_thrust = x),
        ("dt", |p, x| p.dt = x),
    ];
    assert_refusals(
        Quadrotor2dParams::DEFAULT,
        &fields,
        &[f64::NAN, f64::INFINITY, -1.0, 1e5],
        Quadrotor2d::with_params,
    );
}
