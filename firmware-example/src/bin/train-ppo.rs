//! PPO learns CartPole from scratch on the MCU.
//!
//! `agent::Ppo<CartPole, 32, 256>`: a 4-32-32-2 categorical actor, a
//! 4-32-32-1 critic, their gradients and Adam moments and a 256-step
//! rollout, all in one value in a `static` (`ConstStaticCell` holding
//! `ZERO`, so it sits in `.bss`: no flash image, no stack temporary, no
//! allocator, no `unsafe`). The CartPole simulation runs on the MCU too.
//!
//! The loop is the core's `Trainer` — collect 256 steps, one PPO update
//! (`PpoConfig::CARTPOLE`: 10 epochs × 4 minibatches), a 10-episode
//! deterministic evaluation, the deciding 100-episode one when that reaches
//! 475, then the reported 100-episode evaluation on held-out start states —
//! the same code and seeds as `microrl train --small` on the desktop, so the
//! MCU solves at the same step with the same evaluation and weights, bit for
//! bit (host test `train_ppo_solves_cartpole_like_the_desktop_within_budget`).
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

type Agent = agent::Ppo<CartPole, 32, 256>;

/// Budget 100 000 steps (the learning rate and clip range anneal over it),
/// evaluation after every rollout, early stop.
const RUN: RunConfig = cartpole_run(100_000, 1);

microrl_firmware::cartpole_trainer!(
    Agent,
    PpoConfig::CARTPOLE,
    RUN,
    1,
    "ppo: cartpole, actor 4-32-32-2, critic 4-32-32-1, rollout 256, agent {=usize} bytes static"
);
