//! Parity of the Python servo port with microrl's `Servo`: the Gymnasium
//! port `std-harness/benches/peers/servo_env.py` (the plant SB3 trains on in
//! the peer benchmark's servo row) against `microrl::env::Servo` with the
//! default `ServoParams`.
//!
//! The fixture `tests/fixtures/servo_port_parity.json` is committed, so this
//! test needs neither Python nor the network. It holds trajectories of the
//! port from explicit start states `[θ, ω, i, θ*]` under fixed pseudo-random
//! `f32` duty cycles, 500 steps each (to the truncation). To regenerate it
//! (from the workspace root):
//!
//! ```text
//! python3 -m venv /tmp/venv-gym
//! /tmp/venv-gym/bin/pip install gymnasium numpy
//! /tmp/venv-gym/bin/python tests/fixtures/gen_servo_port.py > tests/fixtures/servo_port_parity.json
//! cargo test -p microrl-tests --test servo_port_parity -- --nocapture
//! ```
//!
//! The port transcribes the Rust arithmetic operation for operation in
//! `float64` (Python, like Rust, fuses no multiply-add; the one transcendental,
//! the current's decay `e^(−h·R/L)`, is a single constant on which glibc's
//! `exp` and the `libm` crate's agree), so the check is the strict one: the
//! Rust plant starts from the recorded start state, replays the recorded
//! actions on its own (a free run: no re-synchronisation) and at **every**
//! step
//! - its `f32` observation equals the port's exactly,
//! - its `f32` reward equals the port's (which the port rounds to `f32` as
//!   microrl's `Step` does) exactly,
//! - its `f64` state `[θ, ω, i, θ*]` is bit-identical to the port's,
//! - `terminated` (never) and `truncated` (at step 500) agree.
//!
//! Measured on the committed fixture: 3 500 steps over 7 episodes, every
//! observation, reward and state bit-identical (max abs and rel error 0).
//!
//! A second test checks the fixture exercises the plant's branches: duty
//! cycles inside the dead-zone and beyond ±1, a shaft stuck with current
//! flowing, breakaways from rest, friction stopping a moving shaft at exactly
//! zero speed, sign changes of the command at rest, a multi-turn error beyond
//! 2π (the clamped error term).

use microrl::SVector;
use microrl::env::{Env, Servo, ServoParams};
use serde::Deserialize;

/// The recorded trajectories (see the module documentation to regenerate).
const FIXTURE: &str = include_str!("../fixtures/servo_port_parity.json");

#[derive(Deserialize)]
struct Fixture {
    gymnasium_version: String,
    numpy_version: String,
    python_version: String,
    episodes: Vec<Episode>,
}

/// One recorded episode. Every float is a string holding Python's shortest
/// round-tripping `repr`, read back exactly by Rust's correctly rounded
/// `str::parse` (serde_json's default float parser is off by an ulp for some
/// 17-digit values).
#[derive(Deserialize)]
struct Episode {
    name: String,
    /// `[θ, ω, i, θ*]`, what `Servo::set_state` takes.
    #[serde(deserialize_with = "floats")]
    start_state: Vec<f64>,
    /// The duty cycles (`f32` values).
    #[serde(deserialize_with = "floats")]
    actions: Vec<f64>,
    /// The port's `float32` observation `[θ* − θ, ω, i]` after each step.
    #[serde(deserialize_with = "float_rows")]
    obs: Vec<Vec<f64>>,
    /// The port's `float64` state `[θ, ω, i, θ*]` after each step.
    #[serde(deserialize_with = "float_rows")]
    states: Vec<Vec<f64>>,
    /// The port's reward (rounded to `float32`).
    #[serde(deserialize_with = "floats")]
    rewards: Vec<f64>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
}

use microrl_tests::fixture::{float_rows, floats};

fn load() -> Fixture {
    let fixture: Fixture = serde_json::from_str(FIXTURE).expect("fixture parses");
    for ep in &fixture.episodes {
        let n = ep.actions.len();
        assert_eq!(n, Servo::MAX_EPISODE_STEPS as usize, "{}: steps", ep.name);
        for len in [ep.obs.len(), ep.states.len(), ep.rewards.len()] {
            assert_eq!(len, n, "{}: per-step records", ep.name);
        }
        assert_eq!(ep.terminated.len(), n);
        assert_eq!(ep.truncated.len(), n);
        assert_eq!(ep.start_state.len(), 4);
    }
    fixture
}

/// The recorded duty cycles are `f32` values (written as exact Python
/// floats), so the cast is exact.
fn action(a: f64) -> SVector<f32, 1> {
    let a32 = a as f32;
    assert_eq!(f64::from(a32), a, "duty cycle {a} is not an f32");
    SVector::from([a32])
}

/// Largest errors of one replay, and the steps that are not bit-identical.
#[derive(Clone, Copy, Default)]
struct Errors {
    /// Largest absolute observation error.
    obs_abs: f64,
    /// Largest relative observation error (`|Δ| / |port's|`, 0 where both are 0).
    obs_rel: f64,
    /// Largest absolute reward error.
    reward_abs: f64,
    /// Largest absolute `f64` state error.
    state_abs: f64,
    /// Steps whose `f32` observation differs from the port's.
    obs_diffs: usize,
    /// Steps whose `f32` reward differs from the port's.
    reward_diffs: usize,
    /// Steps whose `f64` state is not bit-identical to the port's.
    state_diffs: usize,
    /// First step (1-based) whose observation, reward or state differs.
    first_diff: Option<usize>,
    /// First step (1-based) whose flags differ.
    first_flag_mismatch: Option<usize>,
}

fn rel(a: f64, b: f64) -> f64 {
    let d = (a - b).abs();
    if d == 0.0 {
        0.0
    } else {
        d / b.abs().max(a.abs())
    }
}

/// Replays `ep` on a fresh `Servo` from the recorded start state (free run).
fn replay(ep: &Episode) -> Errors {
    let mut env = Servo::new();
    assert_eq!(env.params(), ServoParams::DEFAULT);
    let start: [f64; 4] = ep.start_state[..].try_into().expect("4 words");
    env.set_state(start);
    assert_eq!(env.state(), start, "start state set exactly");
    let mut e = Errors::default();
    for t in 0..ep.actions.len() {
        let step = env.step(action(ep.actions[t])).expect("finite action");
        let mut differs = false;
        for (&ours, &port) in step.obs.iter().zip(&ep.obs[t]) {
            let ours = f64::from(ours);
            e.obs_abs = e.obs_abs.max((ours - port).abs());
            e.obs_rel = e.obs_rel.max(rel(ours, port));
        }
        if step
            .obs
            .iter()
            .map(|&x| f64::from(x))
            .ne(ep.obs[t].iter().copied())
        {
            e.obs_diffs += 1;
            differs = true;
        }
        let reward = f64::from(step.reward);
        e.reward_abs = e.reward_abs.max((reward - ep.rewards[t]).abs());
        if reward != ep.rewards[t] {
            e.reward_diffs += 1;
            differs = true;
        }
        let state = env.state();
        for (&ours, &port) in state.iter().zip(&ep.states[t]) {
            e.state_abs = e.state_abs.max((ours - port).abs());
        }
        if state
            .iter()
            .map(|x| x.to_bits())
            .ne(ep.states[t].iter().map(|x| x.to_bits()))
        {
            e.state_diffs += 1;
            differs = true;
        }
        if differs {
            e.first_diff.get_or_insert(t + 1);
        }
        if step.terminated != ep.terminated[t] || step.truncated != ep.truncated[t] {
            e.first_flag_mismatch.get_or_insert(t + 1);
        }
    }
    e
}

#[test]
fn replays_the_python_port() {
    let fixture = load();
    println!(
        "servo port (Python {}, Gymnasium {}, NumPy {}): {} episodes",
        fixture.python_version,
        fixture.gymnasium_version,
        fixture.numpy_version,
        fixture.episodes.len()
    );
    println!(
        "{:<22} {:>5} | {:>9} {:>9} {:>9} {:>9} | {:>5} {:>5} {:>5} {:>5}",
        "episode", "steps", "obs abs", "obs rel", "reward", "state", "obs≠", "rew≠", "st≠", "≠@"
    );
    let mut failures = Vec::new();
    let (mut steps, mut worst) = (0, Errors::default());
    for ep in &fixture.episodes {
        let e = replay(ep);
        let first = e.first_diff.map_or_else(|| "-".into(), |t| t.to_string());
        println!(
            "{:<22} {:>5} | {:>9.2e} {:>9.2e} {:>9.2e} {:>9.2e} | {:>5} {:>5} {:>5} {:>5}",
            ep.name,
            ep.actions.len(),
            e.obs_abs,
            e.obs_rel,
            e.reward_abs,
            e.state_abs,
            e.obs_diffs,
            e.reward_diffs,
            e.state_diffs,
            first
        );
        steps += ep.actions.len();
        worst.obs_abs = worst.obs_abs.max(e.obs_abs);
        worst.obs_rel = worst.obs_rel.max(e.obs_rel);
        worst.reward_abs = worst.reward_abs.max(e.reward_abs);
        worst.state_abs = worst.state_abs.max(e.state_abs);
        if let Some(t) = e.first_diff {
            failures.push(format!(
                "{}: {} observations, {} rewards, {} f64 states differ from the port's, the \
                 first at step {t} (max abs obs {:.3e}, reward {:.3e}, state {:.3e})",
                ep.name,
                e.obs_diffs,
                e.reward_diffs,
                e.state_diffs,
                e.obs_abs,
                e.reward_abs,
                e.state_abs
            ));
        }
        if let Some(t) = e.first_flag_mismatch {
            failures.push(format!("{}: flags differ at step {t}", ep.name));
        }
    }
    println!(
        "all {steps} steps: max abs obs {:.3e} (rel {:.3e}), reward {:.3e}, f64 state {:.3e}",
        worst.obs_abs, worst.obs_rel, worst.reward_abs, worst.state_abs
    );
    assert!(
        failures.is_empty(),
        "parity failures (expected bit-identical):\n{}",
        failures.join("\n")
    );
}

/// The fixture exercises what the parity test claims to cover. Read from the
/// recorded states (`ω` is `states[t][1]`, `i` is `states[t][2]`).
#[test]
fn fixture_covers_the_plant_branches() {
    let fixture = load();
    let dead_zone = ServoParams::DEFAULT.dead_zone;
    let (mut in_dead_zone, mut beyond_one, mut zero_action) = (0, 0, 0);
    let (mut stuck_with_current, mut breakaways, mut friction_stops) = (0, 0, 0);
    let (mut sign_changes_at_rest, mut clamped_error) = (0, 0);
    for ep in &fixture.episodes {
        let start = &ep.start_state;
        for t in 0..ep.actions.len() {
            let u = ep.actions[t];
            if u == 0.0 {
                zero_action += 1;
            } else if u.abs() <= dead_zone {
                in_dead_zone += 1;
            }
            if u.abs() > 1.0 {
                beyond_one += 1;
            }
            let before = if t == 0 {
                &start[..]
            } else {
                &ep.states[t - 1][..]
            };
            let after = &ep.states[t];
            let (w0, w1, i1) = (before[1], after[1], after[2]);
            if w0 == 0.0 && w1 == 0.0 && i1 != 0.0 {
                stuck_with_current += 1;
            }
            if w0 == 0.0 && w1 != 0.0 {
                breakaways += 1;
            }
            if w0 != 0.0 && w1 == 0.0 {
                friction_stops += 1;
            }
            if t > 0 && w0 == 0.0 && u * ep.actions[t - 1] < 0.0 {
                sign_changes_at_rest += 1;
            }
            if (after[3] - after[0]).abs() > core::f64::consts::TAU {
                clamped_error += 1;
            }
        }
    }
    println!(
        "duty cycles: {zero_action} zero, {in_dead_zone} inside the dead-zone, {beyond_one} \
         beyond ±1; shaft: {stuck_with_current} steps stuck with current, {breakaways} \
         breakaways, {friction_stops} stops by friction, {sign_changes_at_rest} sign changes at \
         rest; {clamped_error} steps with |θ* − θ| > 2π"
    );
    for (what, n) in [
        ("zero duty cycles", zero_action),
        ("duty cycles inside the dead-zone", in_dead_zone),
        ("duty cycles beyond ±1", beyond_one),
        ("steps stuck with current", stuck_with_current),
        ("breakaways from rest", breakaways),
        ("stops by friction", friction_stops),
        ("sign changes at rest", sign_changes_at_rest),
        ("errors beyond 2π", clamped_error),
    ] {
        assert!(n >= 3, "the fixture has {n} {what}");
    }
    // Truncated at the last step only, never terminated.
    for ep in &fixture.episodes {
        let n = ep.truncated.len();
        assert!(ep.truncated[n - 1] && !ep.truncated[..n - 1].contains(&true));
        assert!(!ep.terminated.contains(&true));
    }
}
