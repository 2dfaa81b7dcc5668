//! Unit tests of `servo`.

use super::*;
use crate::env::EnvState;
use crate::env::testing::{
    Field, NON_FINITE, assert_refusals, assert_refused_unchanged, assert_state_round_trip,
};
use crate::rng;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

static STATIC_SERVO: Servo = Servo::new();

fn act(u: f32) -> SVector<f32, 1> {
    SVector::from([u])
}

/// Kinetic plus magnetic energy `½Jω² + ½Li²`, J.
fn stored_energy(env: &Servo) -> f64 {
    let p = env.params();
    let [_, w, i, _] = env.state();
    0.5 * p.inertia * w * w + 0.5 * p.inductance * i * i
}

#[test]
fn new_is_at_rest_and_static() {
    assert_eq!(STATIC_SERVO.state(), [0.0; 4]);
    assert_eq!(STATIC_SERVO.observation(), SVector::from([0.0; 3]));
    assert_eq!(Servo::default(), Servo::new());
    assert_eq!(STATIC_SERVO.action_space(), Continuous::symmetric(1.0));
    assert_eq!(Servo::MAX_EPISODE_STEPS, 500);
}

#[test]
fn rest_is_an_equilibrium_and_friction_holds_it() {
    let mut env = Servo::new();
    env.set_state([0.7, 0.0, 0.0, 0.7]);
    for _ in 0..100 {
        let step = env.step(act(0.0)).unwrap();
        assert_eq!(step.reward, 0.0);
    }
    assert_eq!(env.state(), [0.7, 0.0, 0.0, 0.7]);
    // Inside the dead-zone: no voltage, no current.
    env.step(act(0.039)).unwrap();
    assert_eq!(env.state(), [0.7, 0.0, 0.0, 0.7]);
    // Past the dead-zone but below the breakaway torque (K·i ≤ τ_c, i.e.
    // v ≤ 0.4 V): current flows, the shaft stays stuck.
    let p = ServoParams::DEFAULT;
    let u = 0.04 + 0.3 / 12.0 * 0.96;
    assert!(p.drive_voltage(u) < 0.4 && p.drive_voltage(u) > 0.2);
    for _ in 0..50 {
        env.step(act(u as f32)).unwrap();
    }
    let [th, w, i, _] = env.state();
    assert_eq!((th, w), (0.7, 0.0));
    assert!(i > 0.1, "{i}");
    // A larger command breaks it away, in the positive direction.
    for _ in 0..20 {
        env.step(act(0.2)).unwrap();
    }
    let [th, w, ..] = env.state();
    assert!(th > 0.7 && w > 0.0, "{th} {w}");
}

#[test]
fn signs_and_the_steady_speed_follow_the_motor_equations() {
    // Frictionless: ω∞ = K·v/(K² + R·b).
    let params = ServoParams {
        coulomb_friction: 0.0,
        dead_zone: 0.0,
        ..ServoParams::DEFAULT
    };
    let mut env = Servo::with_params(params).unwrap();
    for _ in 0..1000 {
        env.step(act(-0.5)).unwrap();
    }
    let [th, w, i, _] = env.state();
    let v = -6.0;
    let (k, r, b) = (0.05, 2.0, 1e-5);
    let w_inf = k * v / (k * k + r * b);
    assert!((w - w_inf).abs() < 1e-6 * w_inf.abs(), "{w} vs {w_inf}");
    // The current carries the viscous torque: K·i = b·ω.
    assert!((k * i - b * w).abs() < 1e-9, "{i}");
    assert!(th < -50.0);
    // The dead-zone maps the duty cycle to the voltage continuously.
    let p = ServoParams::DEFAULT;
    assert_eq!(p.drive_voltage(0.04), 0.0);
    assert_eq!(p.drive_voltage(1.0), 12.0);
    assert_eq!(p.drive_voltage(-7.0), -12.0);
    assert!((p.drive_voltage(-0.52) + 6.0).abs() < 1e-12);
}

#[test]
fn stored_energy_only_decays_without_a_supply() {
    // Shorted windings (zero voltage), no friction at all: ½Jω² + ½Li² is
    // dissipated in R only, so it never grows.
    let params = ServoParams {
        coulomb_friction: 0.0,
        viscous_friction: 0.0,
        ..ServoParams::DEFAULT
    };
    let mut env = Servo::with_params(params).unwrap();
    env.set_state([0.0, 100.0, -2.0, 0.0]);
    let mut energy = stored_energy(&env);
    let start = energy;
    for _ in 0..200 {
        env.step(act(0.0)).unwrap();
        let e = stored_energy(&env);
        assert!(e <= energy * (1.0 + 1e-12), "{e} > {energy}");
        energy = e;
    }
    assert!(energy < 0.01 * start);
    // Braked, never reversed: the shaft turned on in the direction it had.
    assert!(env.state()[0] > 0.0);
}

#[test]
fn coulomb_friction_stops_a_coasting_shaft_without_reversing_it() {
    let params = ServoParams {
        viscous_friction: 0.0,
        ..ServoParams::DEFAULT
    };
    let mut env = Servo::with_params(params).unwrap();
    env.set_state([0.0, 5.0, 0.0, 0.0]);
    let mut last = 5.0;
    for _ in 0..200 {
        env.step(act(0.0)).unwrap();
        let w = env.state()[1];
        assert!((0.0..=last).contains(&w), "{w}");
        last = w;
    }
    assert_eq!(last, 0.0);
}

#[test]
fn reward_is_the_normalised_error_and_effort() {
    let mut env = Servo::new();
    env.set_state([0.0, 0.0, 0.0, 1.0]);
    let step = env.step(act(-3.0)).unwrap(); // clipped to −1
    let [th, ..] = env.state();
    let expected = -((1.0 - th).abs() / TAU) - 0.01;
    assert_eq!(step.reward, expected as f32);
    assert_eq!(step.obs, env.observation());
    // The error term saturates at one full turn.
    env.set_state([0.0, 0.0, 0.0, 100.0]);
    assert_eq!(env.step(act(0.0)).unwrap().reward, -1.0);
}

#[test]
fn non_finite_action_leaves_everything_unchanged() {
    let mut env = Servo::new();
    env.reset(&mut Xoshiro128PlusPlus::seed_from_u64(1));
    env.step(act(0.5)).unwrap();
    assert_refused_unchanged(&mut env, &NON_FINITE, Error::NonFinite);
}

#[test]
fn reset_ranges() {
    let mut env = Servo::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(2);
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for _ in 0..2000 {
        let obs = env.reset(&mut rng);
        let [th, w, i, target] = env.state();
        assert!((-PI..PI).contains(&th) && (-PI..PI).contains(&target));
        assert_eq!((w, i), (0.0, 0.0));
        assert_eq!(obs, env.observation());
        assert_eq!(env.elapsed_steps(), 0);
        (lo, hi) = (lo.min(target), hi.max(target));
    }
    assert!(lo < -3.1 && hi > 3.1);
}

#[test]
fn truncates_at_500_steps_never_terminates_and_rewards_stay_bounded() {
    let mut env = Servo::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(3);
    env.reset(&mut rng);
    for t in 1..=Servo::MAX_EPISODE_STEPS + 2 {
        let u = rng::uniform_range(&mut rng, -2.0, 2.0);
        let step = env.step(act(u)).unwrap();
        assert!(!step.terminated);
        assert_eq!(step.truncated, t >= Servo::MAX_EPISODE_STEPS, "step {t}");
        assert!((-1.01..=0.0).contains(&step.reward), "{}", step.reward);
        assert!(step.obs.iter().all(|v| v.is_finite()));
    }
    env.reset(&mut rng);
    assert!(!env.step(act(0.0)).unwrap().truncated);
}

#[test]
fn seeded_episodes_are_deterministic() {
    crate::env::testing::assert_seeded_episodes_deterministic(Servo::new, 200, |rng, _| {
        act(rng::uniform_range(rng, -1.0, 1.0))
    });
}

#[test]
fn state_round_trips_and_keeps_the_plant() {
    let params = ServoParams {
        inertia: 1e-4,
        ..ServoParams::DEFAULT
    };
    let mut env = Servo::with_params(params).unwrap();
    env.reset(&mut Xoshiro128PlusPlus::seed_from_u64(6));
    for _ in 0..37 {
        env.step(act(0.8)).unwrap();
    }
    let fresh = Servo::with_params(params).unwrap();
    assert_state_round_trip(&env, fresh, act(-0.3), 4);
    let mut words = [0.0; 5];
    env.save_state(&mut words);
    let mut other = Servo::new();
    other.restore_state(&words).unwrap();
    assert_eq!(
        (other.state(), other.params()),
        (env.state(), ServoParams::DEFAULT)
    );
}

#[test]
fn bad_parameters_are_refused_naming_the_field() {
    let fields: [Field<ServoParams>; 9] = [
        ("inertia", |p, x| p.inertia = x),
        ("viscous_friction", |p, x| p.viscous_friction = x),
        ("coulomb_friction", |p, x| p.coulomb_friction = x),
        ("motor_constant", |p, x| p.motor_constant = x),
        ("resistance", |p, x| p.resistance = x),
        ("inductance", |p, x| p.inductance = x),
        ("supply_voltage", |p, x| p.supply_voltage = x),
        ("dead_zone", |p, x| p.dead_zone = x),
        ("dt", |p, x| p.dt = x),
    ];
    assert_refusals(
        ServoParams::DEFAULT,
        &fields,
        &[f64::NAN, f64::INFINITY, -1.0, 2e3],
        Servo::with_params,
    );
    let err = ServoParams {
        dead_zone: 0.9,
        ..ServoParams::DEFAULT
    }
    .check()
    .unwrap_err();
    assert_eq!((err.field, err.max), ("dead_zone", 0.5));
}

/// Every parameter set `check` accepts integrates: bang-bang and chattering
/// commands for whole episodes keep the state finite. Parameters are drawn
/// at their bounds and log-uniformly between (a stiff motor — small
/// inertia, large motor constant, long period — rang up to NaN before the
/// sub-step stability check); a refused set names `dt`, with
/// [`ServoParams::max_dt`] as its bound, and is accepted at that period.
#[test]
fn every_accepted_parameter_set_integrates() {
    let ranges: [(f64, f64); 9] = [
        (1e-8, 1.0),
        (0.0, 1.0),
        (0.0, 10.0),
        (1e-4, 10.0),
        (1e-3, 1e3),
        (1e-7, 1.0),
        (0.1, 1e3),
        (0.0, 0.5),
        (1e-5, 0.1),
    ];
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(29);
    let mut refused = 0;
    for _ in 0..1_000 {
        let p: [f64; 9] = core::array::from_fn(|k| {
            let (lo, hi) = ranges[k];
            let pick = rng::uniform(&mut rng);
            let t = f64::from(rng::uniform(&mut rng));
            let floor = if lo > 0.0 { lo } else { hi * 1e-6 };
            match pick {
                x if x < 0.2 => lo,
                x if x < 0.4 => hi,
                _ => libm::exp(libm::log(floor) + t * (libm::log(hi) - libm::log(floor))),
            }
        });
        let mut params = ServoParams {
            inertia: p[0],
            viscous_friction: p[1],
            coulomb_friction: p[2],
            motor_constant: p[3],
            resistance: p[4],
            inductance: p[5],
            supply_voltage: p[6],
            dead_zone: p[7],
            dt: p[8],
        };
        if let Err(e) = params.check() {
            assert_eq!((e.field, e.max), ("dt", params.max_dt()), "{params:?}: {e}");
            assert!(std::format!("{e}").contains("inertia"), "{e}");
            assert_eq!(
                std::format!("{e}").contains("no dt does"),
                e.max < 1e-5,
                "{e}"
            );
            assert!(Servo::with_params(params).is_err());
            refused += 1;
            params.dt = params.max_dt();
            if params.dt < 1e-5 {
                continue;
            }
            params
                .check()
                .unwrap_or_else(|e| panic!("{params:?} at max_dt: {e}"));
        }
        let mut env = Servo::with_params(params).unwrap();
        for pattern in 0..3 {
            env.reset(&mut rng);
            for t in 0..Servo::MAX_EPISODE_STEPS {
                let high = match pattern {
                    0 => true,
                    1 => t % 2 == 0,
                    _ => (t / 7) % 2 == 0,
                };
                let step = env.step(act(if high { 1.0 } else { -1.0 })).unwrap();
                assert!(
                    step.obs.iter().all(|x| x.is_finite()) && step.reward.is_finite(),
                    "{params:?}: pattern {pattern}, step {t}: {step:?}"
                );
            }
        }
    }
    assert!((50..900).contains(&refused), "refused {refused} of 1 000");
}
