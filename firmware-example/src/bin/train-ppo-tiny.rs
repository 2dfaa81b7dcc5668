//! The smallest PPO trainer: CartPole learned on the MCU in under 32 KB of
//! RAM (static data + peak stack).
//!
//! `agent::Ppo<CartPole, 16, 128>`: a 4-16-16-2 categorical actor and a
//! 4-16-16-1 critic (755 parameters together, four copies of them for the
//! weights, gradients and Adam's two moments: 12 080 B), a 128-step rollout
//! (48 B a step: 6 KB) and the per-sample activations of one sample per
//! network (`CHUNK` = 1, the Cortex-M default) — one value in a `static`
//! (`ConstStaticCell` holding `ZERO`, in `.bss`).
//!
//! Same algorithm and loop as `train-ppo` (`PpoConfig::CARTPOLE`: 10 epochs
//! × 4 minibatches, here of 32 samples; learning rate `1e-3 → 0` and clip
//! range `0.2 → 0` annealed over the 100 000-step budget; the core's
//! `Trainer` with an evaluation after every rollout), only the sizes
//! differ. Over seeds 0–49 on the desktop every run solves CartPole
//! (deciding and reported evaluations ≥ 475) within 20 864 steps; seed 0
//! is run here, bit for bit the desktop's (host test
//! `train_ppo_tiny_solves_like_the_desktop_within_32_kb`).
//!
//! Logs one line per update (`Log`); exits 0 iff solved.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use microrl::agent;
use microrl::algo::PpoConfig;
use microrl::env::CartPole;
use microrl::train::RunConfig;
use microrl_firmware::run::cartpole_run;

/// Hidden width of both networks.
const H: usize = 16;
/// Rollout length (steps per update).
const N: usize = 128;
type Agent = agent::Ppo<CartPole, H, N>;

/// Budget 100 000 steps (the learning rate and clip range anneal over it),
/// evaluation after every rollout, early stop.
const RUN: RunConfig = cartpole_run(100_000, 1);

microrl_firmware::cartpole_trainer!(
    Agent,
    PpoConfig::CARTPOLE,
    RUN,
    1,
    "ppo-tiny: cartpole, actor 4-{=usize}-{=usize}-2, critic 4-{=usize}-{=usize}-1, rollout {=usize}, agent {=usize} bytes static",
    H,
    H,
    H,
    H,
    N
);
