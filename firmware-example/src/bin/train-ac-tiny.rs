//! The smallest actor-critic trainer: CartPole learned online on the MCU in
//! under 16 KB of RAM (static data + peak stack).
//!
//! `agent::ActorCritic<CartPole, 12>`: a 4-12-12-2 categorical actor and a
//! 4-12-12-1 critic (471 parameters together; with gradients and Adam's two
//! moments 7 536 B), one activation cache per network and the observation
//! normaliser — no rollout buffer — in a `static` (`ConstStaticCell`
//! holding `ZERO`, in `.bss`).
//!
//! Every environment step is one update (TD error `δ = r + γ V(s') − V(s)`,
//! critic on `½ δ²`, actor on `−δ log π(a|s)`; Sutton & Barto 2018, §13.5).
//! The narrower networks learn with larger steps than `train-ac`'s
//! (`AcConfig::DEFAULT` otherwise): actor learning rate `1e-3` (default
//! `3e-4`), critic `3e-3` (default `1e-3`); with the defaults 4-12-12 solves
//! 19 of 20 seeds within 100 000 steps, with these 50 of 50 within 39 000
//! (desktop, seeds 0–49). The loop is the core's `Trainer`, an evaluation
//! every 1 000 steps, budget 60 000; seed 0 is run here, bit for bit the
//! desktop's (host test `train_ac_tiny_solves_like_the_desktop_within_16_kb`).
//!
//! Small enough for a Cortex-M0 with 16 KB of RAM: it also builds for
//! `thumbv6m-none-eabi` (QEMU `microbit`) and learns the same weights there
//! in software floating point.
//!
//! Logs every 1 000 steps (`Log`); exits 0 iff solved.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use microrl::agent;
use microrl::algo::AcConfig;
use microrl::env::CartPole;
use microrl::optim::Schedule;
use microrl::train::RunConfig;
use microrl_firmware::run::cartpole_run;

/// Hidden width of both networks.
const H: usize = 12;
type Agent = agent::ActorCritic<CartPole, H>;

/// Online steps between evaluations (and progress lines).
const EVAL_INTERVAL: u64 = 1_000;
/// Budget 60 000 steps, an evaluation every 1 000, early stop.
const RUN: RunConfig = cartpole_run(60_000, EVAL_INTERVAL);
/// The tiny networks' hyper-parameters: `AcConfig::DEFAULT` with larger
/// learning rates.
const CONFIG: AcConfig = AcConfig {
    actor_lr: Schedule::Constant(1e-3),
    critic_lr: Schedule::Constant(3e-3),
    ..AcConfig::DEFAULT
};

microrl_firmware::cartpole_trainer!(
    Agent,
    CONFIG,
    RUN,
    EVAL_INTERVAL,
    "ac-tiny: cartpole, actor 4-{=usize}-{=usize}-2, critic 4-{=usize}-{=usize}-1, agent {=usize} bytes static",
    H,
    H,
    H,
    H
);
