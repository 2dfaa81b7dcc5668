//! Parity with Gymnasium: microrl's `CartPole`, `CartPoleContinuous` and
//! `Pendulum` replay trajectories recorded from Gymnasium's `CartPole-v1` and
//! `Pendulum-v1` (the continuous CartPole emulated on `CartPole-v1` through
//! its `force_mag`).
//!
//! The fixture `tests/fixtures/gymnasium_parity.json` is committed, so this
//! test needs neither Python nor the network. To regenerate it (from the
//! workspace root):
//!
//! ```text
//! python3 -m venv /tmp/venv-gym
//! /tmp/venv-gym/bin/pip install gymnasium numpy
//! /tmp/venv-gym/bin/python tests/fixtures/gen_gymnasium.py > tests/fixtures/gymnasium_parity.json
//! cargo test -p microrl-tests --test gym_parity -- --nocapture
//! ```
//!
//! Gymnasium computes in `f64`, microrl in `f32`, so each episode is checked
//! twice:
//! - **One step** (every step of every episode): before each step microrl's
//!   state is set to Gymnasium's state before that step, cast to `f32`. The
//!   observation must be within [`OBS_TOL`] = 1e-5 and the flags equal,
//!   including the 500- and 200-step truncations and CartPole's zero reward
//!   for steps after a termination.
//! - **Free run**: microrl starts from Gymnasium's reset state cast to `f32`
//!   and replays the recorded actions on its own, so rounding differences
//!   accumulate. The observations must stay within [`OBS_TOL`] for the first
//!   [`CARTPOLE_FREE_RUN_STEPS`] / [`PENDULUM_FREE_RUN_STEPS`] steps (the
//!   whole of every random-action CartPole episode). Beyond that the physics
//!   amplifies the last-bit differences: the upright cart-pole under a fixed
//!   (open-loop) action sequence by ×1.08 per step, so the 500-step episodes
//!   cross 1e-5 around step 75–95 and end up fully different; the pendulum's
//!   `f32` state rounding (~2.4e-7 per step) accumulates to ~1e-4 over 200
//!   steps (a NumPy `float32` emulation of Gymnasium's code shows the same
//!   numbers), so whole Pendulum episodes are held to
//!   [`PENDULUM_WHOLE_EPISODE_TOL`].
//!
//! Rewards: CartPole's are 0 or 1 and must be equal; Pendulum's (costs up to
//! 16.3) must agree within [`PENDULUM_REWARD_TOL`] = 1e-4 absolute (at
//! |θ| ≈ 70 rad, reached by the spinning episode, the `f32` θ alone is only
//! good to 4e-6, which moves the cost by ~2e-5).
//!
//! `cargo test -p microrl-tests --test gym_parity -- --nocapture` prints the
//! errors per episode.

use microrl::SVector;
use microrl::env::{CartPole, CartPoleContinuous, Env, Pendulum, Step};
use serde::Deserialize;

/// The recorded trajectories (see the module documentation to regenerate).
const FIXTURE: &str = include_str!("../fixtures/gymnasium_parity.json");

/// Largest accepted absolute observation error.
const OBS_TOL: f64 = 1e-5;
/// Largest accepted absolute CartPole reward error (the rewards are 0 or 1).
const CARTPOLE_REWARD_TOL: f64 = 0.0;
/// Largest accepted absolute Pendulum reward error.
const PENDULUM_REWARD_TOL: f64 = 1e-4;
/// Steps of a CartPole episode over which the free run must stay within
/// [`OBS_TOL`]: beyond this the open-loop instability may have amplified the
/// `f32`/`f64` rounding differences past it.
const CARTPOLE_FREE_RUN_STEPS: usize = 60;
/// Steps of a Pendulum episode over which the free run must stay within
/// [`OBS_TOL`] and [`PENDULUM_REWARD_TOL`].
const PENDULUM_FREE_RUN_STEPS: usize = 30;
/// Largest accepted observation and reward error of a whole free-running
/// Pendulum episode.
const PENDULUM_WHOLE_EPISODE_TOL: f64 = 1e-3;

#[derive(Deserialize)]
struct Fixture {
    gymnasium_version: String,
    numpy_version: String,
    episodes: Vec<Episode>,
}

#[derive(Deserialize)]
struct Episode {
    env: String,
    policy: String,
    seed: u64,
    /// Gymnasium's `env.unwrapped.state` after reset (`f64`).
    start_state: Vec<f64>,
    actions: Vec<f64>,
    obs: Vec<Vec<f64>>,
    /// Gymnasium's `env.unwrapped.state` after each step (`f64`).
    states: Vec<Vec<f64>>,
    rewards: Vec<f64>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    FreeRun,
    OneStep,
}

/// Errors of one replay, over the steps it was required to match and over
/// the whole episode.
#[derive(Clone, Copy, Default)]
struct Errors {
    /// Largest observation error within the required steps.
    obs: f64,
    /// Largest reward error within the required steps.
    reward: f64,
    /// Largest observation error over the whole episode.
    obs_all: f64,
    /// Largest reward error over the whole episode.
    reward_all: f64,
    /// First step (1-based) whose observation error exceeds [`OBS_TOL`].
    first_obs_over: Option<usize>,
    /// First step (1-based) within the required steps whose flags differ.
    first_flag_mismatch: Option<usize>,
}

fn to_f32<const N: usize>(s: &[f64]) -> [f32; N] {
    assert_eq!(s.len(), N, "state length");
    core::array::from_fn(|i| s[i] as f32)
}

/// Replays `ep` on a fresh `E` (reset, then set to Gymnasium's start state);
/// errors are counted as required for the first `required` steps.
fn replay<const OBS: usize, E: Env<OBS> + Default>(
    ep: &Episode,
    mode: Mode,
    required: usize,
    set_state: fn(&mut E, &[f64]),
    action: fn(f64) -> E::Action,
) -> Errors {
    let mut env = E::default();
    env.reset(&mut microrl_tests::rng(ep.seed));
    set_state(&mut env, &ep.start_state);
    let mut e = Errors::default();
    for t in 0..ep.actions.len() {
        if mode == Mode::OneStep && t > 0 {
            set_state(&mut env, &ep.states[t - 1]);
        }
        let step: Step<OBS> = env.step(action(ep.actions[t])).expect("recorded action");
        assert_eq!(ep.obs[t].len(), OBS);
        let obs_err = step
            .obs
            .iter()
            .zip(&ep.obs[t])
            .map(|(&a, &b)| (f64::from(a) - b).abs())
            .fold(0.0, f64::max);
        let reward_err = (f64::from(step.reward) - ep.rewards[t]).abs();
        e.obs_all = e.obs_all.max(obs_err);
        e.reward_all = e.reward_all.max(reward_err);
        if obs_err > OBS_TOL && e.first_obs_over.is_none() {
            e.first_obs_over = Some(t + 1);
        }
        if t < required {
            e.obs = e.obs.max(obs_err);
            e.reward = e.reward.max(reward_err);
            let flags_equal =
                step.terminated == ep.terminated[t] && step.truncated == ep.truncated[t];
            if !flags_equal && e.first_flag_mismatch.is_none() {
                e.first_flag_mismatch = Some(t + 1);
            }
        }
    }
    e
}

fn cartpole_state(env: &mut CartPole, s: &[f64]) {
    env.set_state(to_f32(s));
}

fn cartpole_continuous_state(env: &mut CartPoleContinuous, s: &[f64]) {
    env.set_state(to_f32(s));
}

fn pendulum_state(env: &mut Pendulum, s: &[f64]) {
    env.set_state(to_f32(s));
}

fn discrete(a: f64) -> usize {
    assert!(a == 0.0 || a == 1.0, "discrete action {a}");
    a as usize
}

fn continuous(a: f64) -> SVector<f32, 1> {
    SVector::from([a as f32])
}

/// Both replays of one episode (free run, one step), and the reward tolerance
/// that applies.
fn check(ep: &Episode) -> (Errors, Errors, f64) {
    let n = ep.actions.len();
    match (ep.env.as_str(), ep.policy.starts_with("continuous")) {
        ("CartPole-v1", false) => (
            replay(
                ep,
                Mode::FreeRun,
                n.min(CARTPOLE_FREE_RUN_STEPS),
                cartpole_state,
                discrete,
            ),
            replay(ep, Mode::OneStep, n, cartpole_state, discrete),
            CARTPOLE_REWARD_TOL,
        ),
        ("CartPole-v1", true) => (
            replay(
                ep,
                Mode::FreeRun,
                n.min(CARTPOLE_FREE_RUN_STEPS),
                cartpole_continuous_state,
                continuous,
            ),
            replay(ep, Mode::OneStep, n, cartpole_continuous_state, continuous),
            CARTPOLE_REWARD_TOL,
        ),
        ("Pendulum-v1", _) => (
            replay(
                ep,
                Mode::FreeRun,
                n.min(PENDULUM_FREE_RUN_STEPS),
                pendulum_state,
                continuous,
            ),
            replay(ep, Mode::OneStep, n, pendulum_state, continuous),
            PENDULUM_REWARD_TOL,
        ),
        (other, _) => panic!("unknown environment {other}"),
    }
}

fn show(step: Option<usize>) -> String {
    step.map_or_else(|| "-".into(), |s| s.to_string())
}

/// Largest errors of one kind over several episodes.
#[derive(Default)]
struct Max {
    obs: f64,
    cartpole_reward: f64,
    pendulum_reward: f64,
}

impl Max {
    fn add(&mut self, env: &str, obs: f64, reward: f64) {
        self.obs = self.obs.max(obs);
        if env == "Pendulum-v1" {
            self.pendulum_reward = self.pendulum_reward.max(reward);
        } else {
            self.cartpole_reward = self.cartpole_reward.max(reward);
        }
    }
}

#[test]
fn replays_gymnasium_trajectories() {
    let fixture: Fixture = serde_json::from_str(FIXTURE).expect("fixture parses");
    println!(
        "Gymnasium {} / NumPy {}: {} episodes; absolute errors",
        fixture.gymnasium_version,
        fixture.numpy_version,
        fixture.episodes.len()
    );
    println!(
        "{:<12} {:<24} {:>5} {:>5} | {:>9} {:>9} | {:>9} {:>9} | {:>9} {:>9} {:>6}",
        "", "", "", "", "one step", "", "free run", "(checked)", "free run", "(whole)", ""
    );
    println!(
        "{:<12} {:<24} {:>5} {:>5} | {:>9} {:>9} | {:>9} {:>9} | {:>9} {:>9} {:>6}",
        "env",
        "policy",
        "seed",
        "steps",
        "obs",
        "reward",
        "obs",
        "reward",
        "obs",
        "reward",
        ">1e-5@"
    );

    let mut failures = Vec::new();
    let (mut one_max, mut free_max) = (Max::default(), Max::default());
    let mut pendulum_whole = 0.0f64;
    let mut cartpole_crossings = Vec::new();
    for ep in &fixture.episodes {
        let n = ep.actions.len();
        assert!(n > 0);
        for len in [ep.obs.len(), ep.states.len(), ep.rewards.len()] {
            assert_eq!(len, n);
        }
        assert_eq!(ep.terminated.len(), n);
        assert_eq!(ep.truncated.len(), n);

        let (free, one, reward_tol) = check(ep);
        println!(
            "{:<12} {:<24} {:>5} {:>5} | {:>9.2e} {:>9.2e} | {:>9.2e} {:>9.2e} | {:>9.2e} {:>9.2e} {:>6}",
            ep.env,
            ep.policy,
            ep.seed,
            n,
            one.obs,
            one.reward,
            free.obs,
            free.reward,
            free.obs_all,
            free.reward_all,
            show(free.first_obs_over)
        );
        one_max.add(&ep.env, one.obs, one.reward);
        free_max.add(&ep.env, free.obs, free.reward);

        let name = format!("{} {} seed {}", ep.env, ep.policy, ep.seed);
        for (mode, e) in [("one step", one), ("free run", free)] {
            if e.obs > OBS_TOL {
                failures.push(format!("{name}: {mode} obs error {:.3e}", e.obs));
            }
            if e.reward > reward_tol {
                failures.push(format!("{name}: {mode} reward error {:.3e}", e.reward));
            }
            if let Some(t) = e.first_flag_mismatch {
                failures.push(format!("{name}: {mode} flags differ at step {t}"));
            }
        }
        if ep.env == "Pendulum-v1" {
            let whole = free.obs_all.max(free.reward_all);
            pendulum_whole = pendulum_whole.max(whole);
            if whole > PENDULUM_WHOLE_EPISODE_TOL {
                failures.push(format!(
                    "{name}: whole free run errors obs {:.3e}, reward {:.3e}",
                    free.obs_all, free.reward_all
                ));
            }
        } else if let Some(t) = free.first_obs_over {
            cartpole_crossings.push(t);
        }
    }
    println!(
        "one step, all steps:  max obs {:.3e}; max reward CartPole {:.3e}, Pendulum {:.3e}",
        one_max.obs, one_max.cartpole_reward, one_max.pendulum_reward
    );
    println!(
        "free run, first {CARTPOLE_FREE_RUN_STEPS} (CartPole) / {PENDULUM_FREE_RUN_STEPS} \
         (Pendulum) steps: max obs {:.3e}; max reward CartPole {:.3e}, Pendulum {:.3e}",
        free_max.obs, free_max.cartpole_reward, free_max.pendulum_reward
    );
    println!(
        "free run, whole episodes: Pendulum max obs/reward {pendulum_whole:.3e}; CartPole \
         episodes crossing 1e-5 at steps {cartpole_crossings:?}"
    );
    assert!(
        failures.is_empty(),
        "parity failures:\n{}",
        failures.join("\n")
    );
}

/// The fixture exercises what the parity test claims to cover.
#[test]
fn fixture_covers_the_edge_cases() {
    let fixture: Fixture = serde_json::from_str(FIXTURE).expect("fixture parses");
    let eps = &fixture.episodes;
    let cartpole = |ep: &&Episode| ep.env == "CartPole-v1";
    let pendulum = |ep: &&Episode| ep.env == "Pendulum-v1";
    // Truncation at 500 without termination.
    assert!(eps.iter().filter(cartpole).any(|ep| {
        ep.actions.len() == CartPole::MAX_EPISODE_STEPS as usize
            && ep.truncated.last() == Some(&true)
            && ep.terminated.iter().all(|&t| !t)
    }));
    // Terminations, and steps after one (reward 0 in Gymnasium).
    assert!(
        eps.iter()
            .filter(cartpole)
            .any(|ep| ep.terminated.contains(&true))
    );
    assert!(
        eps.iter()
            .filter(cartpole)
            .any(|ep| ep.rewards.contains(&0.0))
    );
    // Continuous CartPole actions beyond ±1.
    assert!(eps.iter().any(|ep| {
        ep.policy.starts_with("continuous") && ep.actions.iter().any(|a| a.abs() > 1.0)
    }));
    // Pendulum: full 200-step episodes, torques beyond ±2, the speed limit.
    assert!(eps.iter().filter(pendulum).all(|ep| {
        ep.actions.len() == Pendulum::MAX_EPISODE_STEPS as usize
            && ep.truncated.last() == Some(&true)
            && ep.truncated.iter().filter(|&&t| t).count() == 1
            && ep.terminated.iter().all(|&t| !t)
    }));
    assert!(
        eps.iter()
            .filter(pendulum)
            .any(|ep| ep.actions.iter().any(|a| a.abs() > 2.0))
    );
    assert!(
        eps.iter()
            .filter(pendulum)
            .any(|ep| ep.states.iter().any(|s| s[1].abs() == 8.0))
    );
}
