//! Unit tests of `mountain_car`.

use super::*;
use crate::env::testing::{
    Field, NON_FINITE, assert_refusals, assert_refused_unchanged, assert_state_round_trip,
};
use crate::rng;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

static STATIC_CAR: MountainCarContinuous = MountainCarContinuous::new();

fn act(a: f32) -> SVector<f32, 1> {
    SVector::from([a])
}

#[test]
fn new_is_at_rest_and_static() {
    assert_eq!(STATIC_CAR.state(), [-0.5, 0.0]);
    assert!(!STATIC_CAR.float32());
    assert_eq!(
        MountainCarContinuous::default(),
        MountainCarContinuous::new()
    );
    assert_eq!(MountainCarContinuous::SOLVED_RETURN, 90.0);
    assert_eq!(MountainCarContinuous::MAX_EPISODE_STEPS, 999);
    assert_eq!(STATIC_CAR.action_space(), Continuous::symmetric(1.0));
}

#[test]
fn steps_match_gymnasium_in_both_precisions() {
    // `env.unwrapped.state = np.array(s)` (float64), then steps with float32
    // actions, in Gymnasium 1.4.0 / NumPy 2.4.6: `repr` of state and reward.
    let mut env = MountainCarContinuous::new();
    env.set_state([-0.5, 0.01]);
    let cases: [(f32, [f64; 2], f64); 3] = [
        // float64 state, float32 force.
        (
            0.3,
            [-0.489_726_841_449_737_55, 0.010_273_156_687_617_302],
            -0.009_000_000_715_255_752,
        ),
        // float32 state, float32 force.
        (
            0.3,
            [-0.479_257_285_594_940_2, 0.010_469_553_992_152_214],
            -0.009_000_000_715_255_752,
        ),
        // float32 state, the force clipped to the Python float -1.0.
        (
            -1.7,
            [-0.470_619_320_869_445_8, 0.008_637_972_176_074_982],
            -0.289_000_016_212_463_63,
        ),
    ];
    for (a, state, reward) in cases {
        let step = env.step(act(a)).unwrap();
        assert_eq!(env.state(), state);
        assert!(env.float32());
        assert_eq!(step.reward, reward as f32);
        assert_eq!(step.obs, env.observation());
        assert!(!step.terminated && !step.truncated);
    }
    // Reaching the goal: 100 minus the unclipped action's cost.
    env.set_state([0.44, 0.05]);
    let step = env.step(act(2.0)).unwrap();
    assert_eq!(
        env.state(),
        [0.490_879_565_477_371_2, 0.050_879_560_410_976_41]
    );
    assert!(step.terminated);
    assert_eq!(step.reward, 99.6f64 as f32);
}

#[test]
fn the_f32_step_rounds_constants_as_numpy() {
    // A float32 velocity of f32(0.07) is not above f32(0.07): NumPy compares
    // in float32, so it is kept (and the position moves by f32(0.07)).
    let mut env = MountainCarContinuous::new();
    env.set_state_f32([-0.2, 0.07]);
    env.step(act(0.0)).unwrap();
    let [pos, vel] = env.state();
    assert!(vel <= f64::from(0.07f32));
    assert!(pos > -0.2);
}

#[test]
fn speed_and_position_are_clipped_and_the_wall_stops_the_car() {
    let mut env = MountainCarContinuous::new();
    // On the right slope's far side the hill pushes too.
    env.set_state_f32([0.55, 0.069]);
    env.step(act(1.0)).unwrap();
    assert_eq!(env.state(), [0.6f32, 0.07f32].map(f64::from));
    env.set_state_f32([0.3, -0.069]);
    env.step(act(-1.0)).unwrap();
    assert_eq!(env.state()[1], f64::from(-0.07f32));
    // Past the left wall: held at −1.2 with the velocity zeroed.
    env.set_state_f32([-1.19, -0.05]);
    let step = env.step(act(-1.0)).unwrap();
    assert_eq!(env.state(), [f64::from(-1.2f32), 0.0]);
    assert!(!step.terminated);
    // In float64 too.
    env.set_state([-1.19, -0.05]);
    env.step(act(-1.0)).unwrap();
    assert_eq!(env.state(), [f64::from(-1.2f32), 0.0]);
    // Past the right end: held at 0.6, terminated.
    env.set_state_f32([0.59, 0.06]);
    let step = env.step(act(1.0)).unwrap();
    assert_eq!(env.state()[0], f64::from(0.6f32));
    assert!(step.terminated);
    assert_eq!(step.reward, (100.0 - 0.1f64) as f32);
}

#[test]
fn termination_needs_the_goal_and_a_forward_velocity() {
    let mut env = MountainCarContinuous::new();
    // Above the goal but rolling back: not terminated.
    env.set_state_f32([0.5, -0.01]);
    let step = env.step(act(0.0)).unwrap();
    assert!(!step.terminated);
    assert_eq!(step.reward, 0.0);
    // The float32 goal test compares with f32(0.45) < 0.45: a float32
    // state stepped onto f32(0.45) has reached it.
    let mut on_goal = None;
    let mut p0 = 0.44f32;
    while on_goal.is_none() && p0 < 0.45 {
        env.set_state_f32([p0, 0.01]);
        let step = env.step(act(0.0)).unwrap();
        if env.state()[0] == f64::from(0.45f32) {
            on_goal = Some(step.terminated);
        }
        p0 = f32::from_bits(p0.to_bits() + 1);
    }
    assert!(f64::from(0.45f32) < 0.45);
    assert_eq!(on_goal, Some(true));
}

#[test]
fn non_finite_action_leaves_everything_unchanged() {
    let mut env = MountainCarContinuous::new();
    env.reset(&mut Xoshiro128PlusPlus::seed_from_u64(1));
    env.step(act(0.5)).unwrap();
    assert_refused_unchanged(&mut env, &NON_FINITE, Error::NonFinite);
}

#[test]
fn reset_ranges() {
    let mut env = MountainCarContinuous::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(2);
    let (mut lo, mut hi) = (0.0f64, -1.0f64);
    for _ in 0..2000 {
        let obs = env.reset(&mut rng);
        let [pos, vel] = env.state();
        assert!((-0.6..-0.4).contains(&pos), "{pos}");
        assert_eq!(vel, 0.0);
        assert!(!env.float32());
        assert_eq!(obs, env.observation());
        assert_eq!(env.elapsed_steps(), 0);
        (lo, hi) = (lo.min(pos), hi.max(pos));
    }
    assert!(lo < -0.599 && hi > -0.401);
}

#[test]
fn random_episodes_stay_in_bounds_and_truncate_at_999() {
    let mut env = MountainCarContinuous::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(3);
    env.reset(&mut rng);
    for t in 1..=MountainCarContinuous::MAX_EPISODE_STEPS + 3 {
        let a = rng::uniform_range(&mut rng, -0.5, 0.5);
        let step = env.step(act(a)).unwrap();
        let [pos, vel] = env.state();
        assert!((-1.2f32..=0.6f32).contains(&(pos as f32)) && vel.abs() <= 0.07f32.into());
        assert!(
            !step.terminated,
            "a weak random push does not reach the goal"
        );
        assert_eq!(
            step.truncated,
            t >= MountainCarContinuous::MAX_EPISODE_STEPS
        );
        assert_eq!(step.reward, (-0.1 * f64::from(a) * f64::from(a)) as f32);
    }
    env.reset(&mut rng);
    assert!(!env.step(act(0.0)).unwrap().truncated);
}

#[test]
fn bang_bang_reaches_the_goal() {
    let mut env = MountainCarContinuous::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(4);
    let obs = env.reset(&mut rng);
    let mut v = obs[1];
    for _ in 0..200 {
        let step = env.step(act(if v >= 0.0 { 1.0 } else { -1.0 })).unwrap();
        v = step.obs[1];
        if step.terminated {
            assert!(step.reward > 99.0);
            return;
        }
    }
    panic!("no goal within 200 steps");
}

#[test]
fn a_changed_plant_follows_its_own_physics_and_bad_ones_are_refused() {
    let strong = MountainCarParams {
        power: 0.003,
        ..MountainCarParams::DEFAULT
    };
    let mut env = MountainCarContinuous::with_params(strong).unwrap();
    assert_eq!(env.params(), strong);
    let mut nominal = MountainCarContinuous::new();
    for e in [&mut env, &mut nominal] {
        e.set_state([-0.5, 0.0]);
        e.step(act(1.0)).unwrap();
    }
    assert!(env.state()[1] > nominal.state()[1]);
    let fields: [Field<MountainCarParams>; 3] = [
        ("power", |p, x| p.power = x),
        ("gravity", |p, x| p.gravity = x),
        ("max_speed", |p, x| p.max_speed = x),
    ];
    let bad = [f64::NAN, f64::INFINITY, -1.0, 2.0];
    assert_refusals(
        MountainCarParams::DEFAULT,
        &fields,
        &bad,
        MountainCarContinuous::with_params,
    );
    let positive = [fields[0], fields[2]];
    assert_refusals(
        MountainCarParams::DEFAULT,
        &positive,
        &[0.0],
        MountainCarContinuous::with_params,
    );
    let flat = MountainCarParams {
        gravity: 0.0,
        ..MountainCarParams::DEFAULT
    };
    assert!(MountainCarContinuous::with_params(flat).is_ok());
}

#[test]
fn state_round_trips_in_both_precisions_and_keeps_the_plant() {
    let params = MountainCarParams {
        max_speed: 0.05,
        ..MountainCarParams::DEFAULT
    };
    let mut env = MountainCarContinuous::with_params(params).unwrap();
    env.reset(&mut Xoshiro128PlusPlus::seed_from_u64(6));
    let fresh = || MountainCarContinuous::with_params(params).unwrap();
    assert_state_round_trip(&env, fresh(), act(0.7), 2);
    for _ in 0..25 {
        env.step(act(-0.9)).unwrap();
    }
    assert_state_round_trip(&env, fresh(), act(1.4), 2);
    // A float32 state must hold f32 values.
    let mut words = [0.0; 4];
    env.save_state(&mut words);
    words[0] = 0.1;
    let mut other = fresh();
    assert!(matches!(
        other.restore_state(&words),
        Err(Error::InvalidState { .. })
    ));
    assert_eq!(other, fresh());
}
