use super::*;
use crate::env::testing::{assert_seeded_episodes_deterministic, assert_state_round_trip};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

/// Every plant of every split, and more seeds besides.
fn seeds() -> impl Iterator<Item = u64> {
    Split::ALL
        .into_iter()
        .flat_map(|s| (0..s.len()).filter_map(move |i| s.seed(i)))
        .chain(0..200)
}

/// A one-input continuous plant of `class` from the dev split.
fn dev_plant(class: Class, discrete: bool) -> PlantParams {
    (0..Split::Dev.len())
        .filter_map(|i| Split::Dev.seed(i))
        .map(generate)
        .find(|p| p.class == class && p.discrete == discrete)
        .expect("the dev split has one")
}

/// No dead-zone, backlash, rate limit, delay or load: the command reaches
/// the model as sent.
fn ideal_actuator(p: &mut PlantParams) {
    (p.dead_zone, p.backlash, p.rate_limit) = (0.0, 0.0, 0.0);
    (p.delay_steps, p.disturbance) = (0, 0.0);
}

#[test]
fn every_generated_plant_is_valid_and_builds_as_its_type() {
    for seed in seeds() {
        let p = generate(seed);
        p.check().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(p.class, Class::ALL[(seed % 8) as usize]);
        assert!((100..=1000).contains(&p.episode_steps), "seed {seed}");
        assert!((1e-5..=1e2).contains(&p.cost_scale), "seed {seed}");
        let built = match (p.inputs, p.discrete) {
            (1, false) => Plant1::with_params(p).map(|_| ()),
            (2, false) => Plant2::with_params(p).map(|_| ()),
            (1, true) => PlantDiscrete::with_params(p).map(|_| ()),
            _ => panic!("seed {seed}: {} inputs", p.inputs),
        };
        built.unwrap();
    }
}

#[test]
fn splits_are_disjoint_fixed_and_cover_every_class() {
    let mut all = std::vec::Vec::new();
    for split in Split::ALL {
        let seeds: std::vec::Vec<u64> = (0..split.len()).filter_map(|i| split.seed(i)).collect();
        assert_eq!(seeds.len(), split.len());
        assert_eq!(split.seed(split.len()), None);
        for class in Class::ALL {
            let n = seeds
                .iter()
                .filter(|&&s| generate(s).class == class)
                .count();
            assert_eq!(n, split.len() / 8, "{} {}", split.name(), class.name());
        }
        for &s in &seeds {
            assert_eq!(Split::of_seed(s), Some(split));
        }
        all.extend(seeds);
    }
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n);
    assert!(Split::Test.len() >= 40);
    // Fixed: the first test plant's draws are pinned.
    let p = generate(Split::Test.seed(0).unwrap());
    assert_eq!(p.class, Class::LagDeadTime);
    assert_eq!(Split::of_seed(1), None);
}

#[test]
fn the_family_spans_its_documented_ranges() {
    let plants: std::vec::Vec<PlantParams> = (0..400).map(generate).collect();
    let span = |f: fn(&PlantParams) -> f64| {
        plants
            .iter()
            .map(f)
            .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    };
    let (lo, hi) = span(|p| p.cost_scale);
    assert!(lo < 1e-4 && hi > 10.0, "cost {lo} {hi}");
    let (lo, hi) = span(|p| f64::from(p.episode_steps));
    assert!(lo < 130.0 && hi > 850.0, "steps {lo} {hi}");
    let (lo, hi) = span(|p| p.obs_unit);
    assert!(lo < 0.05 && hi > 20.0, "units {lo} {hi}");
    let (lo, hi) = span(|p| p.dt);
    assert!(lo < 1e-4 && hi > 1.0, "dt {lo} {hi}");
    for (what, n) in [
        (
            "friction",
            plants.iter().filter(|p| p.coulomb > 0.0).count(),
        ),
        (
            "dead-zone",
            plants.iter().filter(|p| p.dead_zone > 0.0).count(),
        ),
        (
            "backlash",
            plants.iter().filter(|p| p.backlash > 0.0).count(),
        ),
        (
            "rate limit",
            plants.iter().filter(|p| p.rate_limit > 0.0).count(),
        ),
        ("delay", plants.iter().filter(|p| p.delay_steps > 0).count()),
        ("noise", plants.iter().filter(|p| p.noise[0] > 0.0).count()),
        (
            "quantisation",
            plants.iter().filter(|p| p.quantum[0] > 0.0).count(),
        ),
        ("discrete", plants.iter().filter(|p| p.discrete).count()),
        (
            "one-sided",
            plants.iter().filter(|p| p.u_low == 0.0).count(),
        ),
        (
            "set-point change",
            plants.iter().filter(|p| p.setpoint_change).count(),
        ),
        (
            "load",
            plants.iter().filter(|p| p.disturbance != 0.0).count(),
        ),
    ] {
        assert!((20..=380).contains(&n), "{what}: {n} of 400");
    }
}

#[test]
fn a_refused_description_names_its_field() {
    let good = generate(10_000);
    type Breaks = (&'static str, fn(&mut PlantParams));
    let cases: [Breaks; 12] = [
        ("states", |p| p.states = 5),
        ("inputs", |p| p.inputs = 3),
        ("dt", |p| p.dt = f64::NAN),
        ("substeps", |p| p.substeps = 0),
        ("delay_steps", |p| p.delay_steps = 11),
        ("u_high", |p| p.u_high = 0.0),
        ("dead_zone", |p| p.dead_zone = 0.6),
        ("ref_high", |p| p.ref_high = p.ref_low),
        ("cost_scale", |p| p.cost_scale = 0.0),
        ("a", |p| p.a[0][0] = f64::INFINITY),
        ("envelope", |p| p.envelope[3] = 0.0),
        ("obs_unit", |p| p.obs_unit = -1.0),
    ];
    for (field, set) in cases {
        let mut p = good;
        set(&mut p);
        assert_eq!(p.check().map_err(|e| e.field), Err(field));
        assert!(matches!(
            Plant1::with_params(p),
            Err(Error::InvalidConfig { field: f, .. }) if f == field
        ));
    }
    // Too few sub-steps for a fast model.
    let mut p = good;
    p.a[0][0] = -1e3 / p.dt;
    assert_eq!(p.check().map_err(|e| e.field), Err("substeps"));
    // The wrong type for the description.
    let two = dev_plant(Class::TwoAxis, false);
    assert!(matches!(
        Plant1::with_params(two),
        Err(Error::InvalidConfig {
            field: "inputs",
            ..
        })
    ));
    let relay = (10_000..).map(generate).find(|p| p.discrete).unwrap();
    assert!(matches!(
        Plant1::with_params(relay),
        Err(Error::InvalidConfig {
            field: "discrete",
            ..
        })
    ));
    assert!(matches!(
        PlantDiscrete::with_params(good),
        Err(Error::InvalidConfig {
            field: "discrete",
            ..
        })
    ));
}

#[test]
fn discrete_model_is_the_simulators_linear_map() {
    // Without friction, dead-zone, backlash, rate limit, delay, load and
    // end stops in reach, one step of the plant is A_d·x + B_d·u.
    for class in [Class::Oscillator, Class::TwoMass, Class::NonMinimumPhase] {
        let mut p = dev_plant(class, false);
        ideal_actuator(&mut p);
        p.coulomb = 0.0;
        p.envelope = [1e12; MAX_STATES];
        let m = p.discrete_model();
        let mut plant = Plant1::with_params(p).unwrap();
        plant.reset(&mut Xoshiro128PlusPlus::seed_from_u64(3));
        let x0 = plant.state();
        let u = 0.375;
        plant.step(SVector::from([u as f32])).unwrap();
        let x1 = plant.state();
        for i in 0..p.states as usize {
            let predicted: f64 = (0..p.states as usize)
                .map(|j| m.a[i][j] * x0[j])
                .sum::<f64>()
                + m.b[i][0] * u;
            let tol = 1e-9 * (1.0 + x1[i].abs());
            assert!(
                (predicted - x1[i]).abs() <= tol,
                "{class:?} x{i}: {predicted} {}",
                x1[i]
            );
        }
    }
}

#[test]
fn rk4_matches_the_exact_lag() {
    // ẋ = (−x + K·u)/T from x = 0: x(dt) = K·u·(1 − e^(−dt/T)).
    let mut p = dev_plant(Class::LagDeadTime, false);
    ideal_actuator(&mut p);
    let m = p.discrete_model();
    let t = -1.0 / p.a[0][0];
    let gain = p.b[0][0] * t;
    let exact = libm::exp(-p.dt / t);
    assert!((m.a[0][0] - exact).abs() < 1e-5, "{} {exact}", m.a[0][0]);
    assert!((m.b[0][0] - gain * (1.0 - exact)).abs() < 1e-5 * gain);
}

#[test]
fn the_actuator_chain_delays_slews_and_plays() {
    let mut p = dev_plant(Class::DoubleIntegrator, false);
    (p.coulomb, p.dead_zone, p.rate_limit, p.disturbance) = (0.0, 0.0, 0.0, 0.0);
    p.backlash = 0.0;
    p.delay_steps = 3;
    let mut plant = Plant1::with_params(p).unwrap();
    plant.reset(&mut Xoshiro128PlusPlus::seed_from_u64(1));
    plant.set_state([0.0; 4]);
    // The command reaches the plant three periods late.
    for k in 0..3 {
        plant.step(SVector::from([1.0])).unwrap();
        assert_eq!(plant.state(), [0.0; 4], "step {k}");
    }
    plant.step(SVector::from([1.0])).unwrap();
    assert!(plant.state()[1] > 0.0);
    // Rate limit: the applied command moves rate·dt per period.
    p.delay_steps = 0;
    p.rate_limit = 0.25 / p.dt;
    let mut plant = Plant1::with_params(p).unwrap();
    plant.reset(&mut Xoshiro128PlusPlus::seed_from_u64(1));
    plant.step(SVector::from([1.0])).unwrap();
    assert_eq!(plant.core.slewed[0], 0.25);
    plant.step(SVector::from([-1.0])).unwrap();
    assert_eq!(plant.core.slewed[0], 0.0);
    // Backlash: a reversal inside the play does not move the output.
    p.rate_limit = 0.0;
    p.backlash = 0.2;
    let mut plant = Plant1::with_params(p).unwrap();
    plant.reset(&mut Xoshiro128PlusPlus::seed_from_u64(1));
    plant.step(SVector::from([0.5])).unwrap();
    assert_eq!(plant.core.gear[0], 0.4);
    plant.step(SVector::from([0.35])).unwrap();
    assert_eq!(plant.core.gear[0], 0.4);
    plant.step(SVector::from([0.1])).unwrap();
    assert!((plant.core.gear[0] - 0.2).abs() < 1e-7);
    // Dead-zone: a small command does nothing, a full one is full.
    p.backlash = 0.0;
    p.dead_zone = 0.1;
    assert_eq!(dynamics::dead_zone(&p, 0.05), 0.0);
    assert_eq!(dynamics::dead_zone(&p, 1.0), 1.0);
    assert_eq!(dynamics::dead_zone(&p, -1.0), -1.0);
}

#[test]
fn friction_sticks_and_never_reverses() {
    let mut p = dev_plant(Class::DoubleIntegrator, false);
    ideal_actuator(&mut p);
    p.friction_state = 1;
    p.coulomb = 0.5 * p.b[1][0];
    let mut plant = Plant1::with_params(p).unwrap();
    plant.reset(&mut Xoshiro128PlusPlus::seed_from_u64(2));
    plant.set_state([0.0; 4]);
    // A drive below the friction leaves the mass stuck.
    plant.step(SVector::from([0.4])).unwrap();
    assert_eq!(plant.state()[1], 0.0);
    // Above it the mass moves; with no drive it stops without reversing.
    plant.step(SVector::from([1.0])).unwrap();
    assert!(plant.state()[1] > 0.0);
    for _ in 0..200 {
        plant.step(SVector::from([0.0])).unwrap();
        assert!(plant.state()[1] >= 0.0);
    }
    assert_eq!(plant.state()[1], 0.0);
}

#[test]
fn a_lost_unstable_plant_rests_on_its_end_stop_and_costs() {
    let p = dev_plant(Class::Unstable, false);
    let mut plant = Plant1::with_params(p).unwrap();
    plant.reset(&mut Xoshiro128PlusPlus::seed_from_u64(4));
    let mut last = 0.0;
    for _ in 0..p.episode_steps {
        let s = plant.step(SVector::from([p.u_high as f32])).unwrap();
        assert!(s.reward.is_finite() && s.reward <= 0.0);
        last = s.reward;
    }
    assert_eq!(plant.state()[0].abs(), p.envelope[0]);
    assert!(last < -(p.cost_scale as f32) * 0.5, "{last}");
}

#[test]
fn noise_is_standard_normal_and_reproducible() {
    let n = 20_000u32;
    let (mut sum, mut sq) = (0.0, 0.0);
    for t in 0..n {
        let z = dynamics::gauss_for_tests(7, t, 1);
        sum += z;
        sq += z * z;
    }
    let mean = sum / f64::from(n);
    let var = sq / f64::from(n) - mean * mean;
    assert!(
        mean.abs() < 0.03 && (var - 1.0).abs() < 0.05,
        "{mean} {var}"
    );
    assert_eq!(
        dynamics::gauss_for_tests(7, 3, 1).to_bits(),
        dynamics::gauss_for_tests(7, 3, 1).to_bits()
    );
    assert_ne!(
        dynamics::gauss_for_tests(7, 3, 1),
        dynamics::gauss_for_tests(7, 3, 2)
    );
}

#[test]
fn observation_layout_and_units() {
    let mut p = dev_plant(Class::Oscillator, false);
    p.noise = [0.0; 4];
    p.quantum = [0.0; 4];
    let mut plant = Plant1::with_params(p).unwrap();
    let obs = plant.reset(&mut Xoshiro128PlusPlus::seed_from_u64(5));
    let (x, r, y) = (plant.state(), plant.setpoint()[0], plant.output()[0]);
    let unit = p.obs_unit;
    assert_eq!(obs[0], ((r - y) * unit) as f32);
    assert_eq!(obs[1], (x[0] * unit) as f32);
    assert_eq!(obs[2], (x[1] * unit) as f32);
    assert_eq!(obs[3], 0.0);
    assert_eq!(obs[5], (r * unit) as f32);
    assert_eq!(obs[6], 0.0);
    let step = plant.step(SVector::from([0.5])).unwrap();
    assert_eq!(step.obs[6], 0.5);
    // Scaling the units scales every observation but the command.
    let mut q = p;
    q.obs_unit = p.obs_unit * 1e3;
    let mut scaled = Plant1::with_params(q).unwrap();
    let obs_q = scaled.reset(&mut Xoshiro128PlusPlus::seed_from_u64(5));
    for i in 0..6 {
        let want = f64::from(obs[i]) * 1e3;
        assert!((f64::from(obs_q[i]) - want).abs() <= 1e-5 * want.abs().max(1e-30));
    }
}

#[test]
fn set_point_changes_and_load_arrive_mid_episode() {
    let mut p = dev_plant(Class::LagDeadTime, false);
    p.setpoint_change = true;
    p.disturbance = 0.2;
    let mut plant = Plant1::with_params(p).unwrap();
    plant.reset(&mut Xoshiro128PlusPlus::seed_from_u64(6));
    let first = plant.setpoint();
    let change = plant.core.change_step;
    let n = p.episode_steps;
    assert!(change >= n / 3 && change <= 2 * n / 3 + 1);
    assert!(plant.core.load_step < n && plant.core.load.abs() >= 0.1);
    let mut seen_change = false;
    for t in 0..n {
        let s = plant.step(SVector::from([0.0])).unwrap();
        seen_change |= plant.setpoint() != first;
        assert_eq!(s.truncated, t + 1 == n);
        assert!(!s.terminated);
    }
    assert!(seen_change);
}

#[test]
fn episodes_are_deterministic_and_resume_bit_for_bit() {
    let p1 = dev_plant(Class::TwoMass, false);
    assert_seeded_episodes_deterministic(
        || Plant1::with_params(p1).unwrap(),
        300,
        |rng, _| SVector::from([crate::rng::uniform_range(rng, -1.0, 1.0)]),
    );
    let p2 = dev_plant(Class::TwoAxis, false);
    let mut two = Plant2::with_params(p2).unwrap();
    two.reset(&mut Xoshiro128PlusPlus::seed_from_u64(8));
    for _ in 0..17 {
        two.step(SVector::from([0.3, -0.8])).unwrap();
    }
    let fresh = Plant2::with_params(p2).unwrap();
    // Word 4 is the step counter.
    assert_state_round_trip(&two, fresh, SVector::from([-0.2, 0.9]), 4);
    let pd = (10_000..).map(generate).find(|p| p.discrete).unwrap();
    let mut relay = PlantDiscrete::with_params(pd).unwrap();
    relay.reset(&mut Xoshiro128PlusPlus::seed_from_u64(9));
    for k in 0..23 {
        relay.step(k % 3).unwrap();
    }
    assert_state_round_trip(&relay, PlantDiscrete::with_params(pd).unwrap(), 2, 4);
    // A bad delay-line head is refused.
    let mut words = [0.0; dynamics::WORDS];
    relay.save_state(&mut words);
    words[dynamics::WORDS - 1] = 11.0;
    let before = relay;
    assert!(relay.restore_state(&words).is_err());
    assert_eq!(relay, before);
}

#[test]
fn refused_steps_change_nothing() {
    let mut p = dev_plant(Class::Oscillator, false);
    p.noise = [0.0; 4];
    let mut plant = Plant1::with_params(p).unwrap();
    plant.reset(&mut Xoshiro128PlusPlus::seed_from_u64(1));
    crate::env::testing::assert_refused_unchanged(
        &mut plant,
        &crate::env::testing::NON_FINITE,
        Error::NonFinite,
    );
    let pd = (10_000..).map(generate).find(|p| p.discrete).unwrap();
    let mut relay = PlantDiscrete::with_params(pd).unwrap();
    relay.reset(&mut Xoshiro128PlusPlus::seed_from_u64(1));
    crate::env::testing::assert_refused_unchanged(
        &mut relay,
        &[3, usize::MAX],
        Error::InvalidAction,
    );
    assert_eq!(relay.levels()[0], pd.u_low);
}

#[test]
fn reset_draws_cover_their_documented_ranges() {
    let mut p = dev_plant(Class::DoubleIntegrator, false);
    p.setpoint_change = true;
    p.disturbance = 0.2;
    p.u_low = -1.0;
    let n = f64::from(p.episode_steps);
    let mut plant = Plant1::with_params(p).unwrap();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(11);
    let (mut x_lo, mut x_hi) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut c_lo, mut c_hi) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut l_lo, mut l_hi) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut m_lo, mut m_hi) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut r_lo, mut r_hi) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut negative = 0;
    for _ in 0..4000 {
        plant.reset(&mut rng);
        let c = &plant.core;
        let x = c.x[0] / p.start_spread[0];
        (x_lo, x_hi) = (x_lo.min(x), x_hi.max(x));
        let change = f64::from(c.change_step) / n;
        (c_lo, c_hi) = (c_lo.min(change), c_hi.max(change));
        let load = f64::from(c.load_step) / n;
        (l_lo, l_hi) = (l_lo.min(load), l_hi.max(load));
        let m = c.load.abs() / p.disturbance;
        (m_lo, m_hi) = (m_lo.min(m), m_hi.max(m));
        negative += usize::from(c.load < 0.0);
        for r in [c.setpoint[0][0], c.setpoint[1][0]] {
            (r_lo, r_hi) = (r_lo.min(r), r_hi.max(r));
        }
    }
    let near = |a: f64, b: f64| (a - b).abs() < 0.02;
    assert!(near(x_lo, -1.0) && near(x_hi, 1.0), "start {x_lo} {x_hi}");
    assert!(
        near(c_lo, 1.0 / 3.0) && near(c_hi, 2.0 / 3.0),
        "change {c_lo} {c_hi}"
    );
    assert!(
        near(l_lo, 0.2) && near(l_hi, 0.8),
        "load step {l_lo} {l_hi}"
    );
    assert!(near(m_lo, 0.5) && near(m_hi, 1.0), "load {m_lo} {m_hi}");
    assert!(
        (1800..2200).contains(&negative),
        "{negative} negative loads"
    );
    let span = p.ref_span();
    assert!(
        (r_lo - p.ref_low).abs() < 0.01 * span && (r_hi - p.ref_high).abs() < 0.01 * span,
        "set-points {r_lo} {r_hi}"
    );
    // A one-sided actuator's load is always a loss.
    let mut heat = dev_plant(Class::Thermal, false);
    heat.disturbance = 0.2;
    let mut plant = Plant1::with_params(heat).unwrap();
    for _ in 0..200 {
        plant.reset(&mut rng);
        assert!(plant.core.load < 0.0);
    }
    // Without a change the set-point holds the whole episode.
    p.setpoint_change = false;
    let mut plant = Plant1::with_params(p).unwrap();
    plant.reset(&mut rng);
    assert_eq!(plant.core.setpoint[0], plant.core.setpoint[1]);
}

#[test]
fn the_longest_delay_and_the_state_size() {
    let mut p = dev_plant(Class::DoubleIntegrator, false);
    ideal_actuator(&mut p);
    p.coulomb = 0.0;
    p.delay_steps = MAX_DELAY as u32;
    let mut plant = Plant1::with_params(p).unwrap();
    plant.reset(&mut Xoshiro128PlusPlus::seed_from_u64(1));
    plant.set_state([0.0; 4]);
    // Over two episodes' worth of the ring: each command arrives exactly
    // MAX_DELAY periods after it was sent.
    for t in 0..3 * (MAX_DELAY + 1) {
        let u = if t.is_multiple_of(7) { 1.0 } else { 0.0 };
        plant.step(SVector::from([u as f32])).unwrap();
        let sent_then = t >= MAX_DELAY && (t - MAX_DELAY).is_multiple_of(7);
        assert_eq!(
            plant.core.gear[0],
            if sent_then { 1.0 } else { 0.0 },
            "t {t}"
        );
    }
    // The documented 42 words: 4 states, counter, noise seed, 2 × 2
    // set-points, change step, load, load step, 3 × 2 actuator memory,
    // 11 × 2 delay line, head.
    assert_eq!(<Plant1 as EnvState>::WORDS, 42);
    assert_eq!(dynamics::RING, 11);
}
