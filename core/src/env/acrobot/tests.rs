//! Unit tests of `acrobot`.

use super::*;
use crate::env::testing::{
    Field, assert_refusals, assert_refused_unchanged, assert_state_round_trip,
};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

static STATIC_ACROBOT: Acrobot = Acrobot::new();

#[test]
fn new_hangs_down_at_rest_and_is_static() {
    assert_eq!(STATIC_ACROBOT.state(), [0.0; 4]);
    assert_eq!(
        STATIC_ACROBOT.observation(),
        SVector::from([1.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    );
    assert!(!STATIC_ACROBOT.tip_above_line());
    assert_eq!(Acrobot::default(), Acrobot::new());
    assert_eq!(Acrobot::SOLVED_RETURN, -100.0);
    assert_eq!(Acrobot::MAX_EPISODE_STEPS, 500);
    // Python's `4 * pi` and `9 * pi`.
    let p = AcrobotParams::DEFAULT;
    assert_eq!(p.max_vel_1, 12.566_370_614_359_172);
    assert_eq!(p.max_vel_2, 28.274_333_882_308_138);
}

#[test]
fn one_step_matches_gymnasium() {
    // `env.unwrapped.state = np.array(s); env.step(a)` in Gymnasium 1.4.0,
    // `repr` of the resulting state.
    let mut env = Acrobot::new();
    env.set_state([0.05, -0.03, 0.02, -0.01]);
    let step = env.step(2).unwrap();
    assert_eq!(
        env.state(),
        [
            0.033_939_211_630_615_466,
            0.010_167_790_424_325_8,
            -0.175_831_830_802_977_07,
            0.401_774_979_655_738_55
        ]
    );
    assert_eq!(
        (step.reward, step.terminated, step.truncated),
        (-1.0, false, false)
    );
    assert_eq!(step.obs, env.observation());
    // Near the top, fast: θ₁ wraps past π, θ̇₂ is bounded at −9π.
    env.set_state([3.0, 0.2, 12.0, -28.0]);
    env.step(0).unwrap();
    assert_eq!(
        env.state(),
        [
            -0.967_275_354_366_401,
            1.023_800_892_770_864_8,
            12.501_174_320_967_312,
            -28.274_333_882_308_138
        ]
    );
}

#[test]
fn wrap_and_bound_follow_gymnasium() {
    assert_eq!(wrap(4.0, -PI, PI), 4.0 - 2.0 * PI);
    assert_eq!(wrap(-7.0, -PI, PI), -7.0 + 2.0 * PI);
    assert_eq!(wrap(PI, -PI, PI), PI);
    assert_eq!(wrap(-PI, -PI, PI), -PI);
    // Python: x = 20.0; while x > pi: x = x - 2*pi  (each step rounded).
    let mut x = 20.0;
    while x > PI {
        x -= 2.0 * PI;
    }
    assert_eq!(wrap(20.0, -PI, PI), x);
    assert!(wrap(f64::NAN, -PI, PI).is_nan());
    for x in [1e6, -1e9, 3e300, f64::MAX] {
        assert!((-PI..=PI).contains(&wrap(x, -PI, PI)), "{x}");
    }
    assert!(wrap(f64::INFINITY, -PI, PI).is_nan());
    assert_eq!(bound(5.0, -1.0, 2.0), 2.0);
    assert_eq!(bound(-5.0, -1.0, 2.0), -1.0);
    assert_eq!(bound(0.5, -1.0, 2.0), 0.5);
    assert!(bound(f64::NAN, -1.0, 2.0).is_nan());
}

#[test]
fn reset_draws_f32_values_in_range() {
    let mut env = Acrobot::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(5);
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for _ in 0..2000 {
        let obs = env.reset(&mut rng);
        assert_eq!(obs, env.observation());
        assert_eq!(env.elapsed_steps(), 0);
        for s in env.state() {
            assert!((-0.1..=0.1).contains(&s), "{s}");
            assert_eq!(f64::from(s as f32), s);
            (lo, hi) = (lo.min(s), hi.max(s));
        }
    }
    assert!(lo < -0.099 && hi > 0.099);
}

#[test]
fn observations_stay_in_bounds_and_episodes_truncate_at_500() {
    let mut env = Acrobot::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(11);
    env.reset(&mut rng);
    let p = AcrobotParams::DEFAULT;
    let mut t = 0;
    loop {
        // Pump energy for a while (large speeds), then hold still.
        let action = if t < 300 && env.state()[2] > 0.0 {
            0
        } else {
            1
        };
        let step = env.step(action).unwrap();
        t += 1;
        let [t1, t2, w1, w2] = env.state();
        assert!((-PI..=PI).contains(&t1) && (-PI..=PI).contains(&t2));
        assert!(w1.abs() <= p.max_vel_1 && w2.abs() <= p.max_vel_2);
        assert!(step.obs.iter().take(4).all(|v| v.abs() <= 1.0));
        assert_eq!(step.reward, if step.terminated { 0.0 } else { -1.0 });
        assert_eq!(step.truncated, t >= 500, "step {t}");
        assert_eq!(env.elapsed_steps(), t);
        if t == 505 {
            break;
        }
    }
    env.reset(&mut rng);
    assert!(!env.step(1).unwrap().truncated);
}

#[test]
fn terminates_with_the_tip_above_the_line() {
    let mut env = Acrobot::new();
    // Both links up: the tip is 2 above the pivot.
    env.set_state([PI, 0.0, 0.0, 0.0]);
    assert!(env.tip_above_line());
    let step = env.step(1).unwrap();
    assert!(step.terminated && !step.truncated);
    assert_eq!(step.reward, 0.0);
    // First link horizontal, second hanging: the tip is at the pivot's height.
    env.set_state([PI / 2.0, PI / 2.0, 0.0, 0.0]);
    assert!(!env.tip_above_line());
    env.set_state([0.0; 4]);
    let step = env.step(2).unwrap();
    assert!(!step.terminated);
    assert_eq!(step.reward, -1.0);
}

#[test]
fn invalid_action_leaves_everything_unchanged() {
    let mut env = Acrobot::new();
    env.reset(&mut Xoshiro128PlusPlus::seed_from_u64(1));
    env.step(2).unwrap();
    assert_refused_unchanged(&mut env, &[3, 4, usize::MAX], Error::InvalidAction);
}

#[test]
fn a_changed_plant_follows_its_own_physics_and_bad_ones_are_refused() {
    let heavy = AcrobotParams {
        link_mass_2: 2.0,
        gravity: 9.81,
        torque: 2.0,
        dt: 0.05,
        ..AcrobotParams::DEFAULT
    };
    let mut env = Acrobot::with_params(heavy).unwrap();
    assert_eq!(env.params(), heavy);
    let mut nominal = Acrobot::new();
    for e in [&mut env, &mut nominal] {
        e.set_state([0.1, 0.2, 0.0, 0.0]);
        e.step(2).unwrap();
    }
    assert_ne!(env.state(), nominal.state());
    let fields: [Field<AcrobotParams>; 11] = [
        ("link_length_1", |p, x| p.link_length_1 = x),
        ("link_mass_1", |p, x| p.link_mass_1 = x),
        ("link_mass_2", |p, x| p.link_mass_2 = x),
        ("link_com_pos_1", |p, x| p.link_com_pos_1 = x),
        ("link_com_pos_2", |p, x| p.link_com_pos_2 = x),
        ("link_moi", |p, x| p.link_moi = x),
        ("gravity", |p, x| p.gravity = x),
        ("torque", |p, x| p.torque = x),
        ("dt", |p, x| p.dt = x),
        ("max_vel_1", |p, x| p.max_vel_1 = x),
        ("max_vel_2", |p, x| p.max_vel_2 = x),
    ];
    let bad = [f64::NAN, f64::INFINITY, -1.0, 1e4];
    assert_refusals(AcrobotParams::DEFAULT, &fields, &bad, Acrobot::with_params);
    // Every field but `gravity` (index 6) refuses 0.
    let positive: [Field<AcrobotParams>; 10] =
        core::array::from_fn(|i| fields[i + usize::from(i >= 6)]);
    assert_refusals(
        AcrobotParams::DEFAULT,
        &positive,
        &[0.0],
        Acrobot::with_params,
    );
    let zero_gravity = AcrobotParams {
        gravity: 0.0,
        ..AcrobotParams::DEFAULT
    };
    assert!(Acrobot::with_params(zero_gravity).is_ok());
    assert!(matches!(
        Acrobot::with_params(AcrobotParams {
            dt: 1.5,
            ..AcrobotParams::DEFAULT
        }),
        Err(Error::InvalidConfig { field: "dt", .. })
    ));
}

#[test]
fn state_round_trips_and_keeps_the_plant() {
    let params = AcrobotParams {
        torque: 1.5,
        ..AcrobotParams::DEFAULT
    };
    let mut env = Acrobot::with_params(params).unwrap();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(3);
    env.reset(&mut rng);
    for t in 0..37 {
        env.step(t % 3).unwrap();
    }
    assert_state_round_trip(&env, Acrobot::with_params(params).unwrap(), 2, 4);
}

#[test]
fn seeded_episodes_are_deterministic() {
    crate::env::testing::assert_seeded_episodes_deterministic(Acrobot::new, 100, |rng, _| {
        (rand_core::Rng::next_u32(rng) % 3) as usize
    });
}
