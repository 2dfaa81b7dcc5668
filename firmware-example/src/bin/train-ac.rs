//! The online one-step actor-critic learns CartPole on the MCU, with the
//! smallest memory of the learners: no rollout buffer, only
//! `agent::ActorCritic<CartPole, 32>` — the two 4-32-32 networks, their
//! gradients and Adam moments — in a `static` (`ConstStaticCell` holding
//! `ZERO`, in `.bss`).
//!
//! Every environment step is one update (TD error `δ = r + γ V(s') − V(s)`,
//! critic on `½ δ²`, actor on `−δ log π(a|s)`; Sutton & Barto 2018, §13.5).
//! The loop is the core's `Trainer` with an evaluation every 1 000 steps:
//! the protocol of `microrl train --algo ac --small --steps 60000`, step for
//! step and bit for bit. Logs every 1 000 steps (`Log`); exits 0 iff solved.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use microrl::agent;
use microrl::algo::AcConfig;
use microrl::env::CartPole;
use microrl::train::RunConfig;
use microrl_firmware::run::cartpole_run;

type Agent = agent::ActorCritic<CartPole, 32>;

/// Online steps between evaluations (and progress lines).
const EVAL_INTERVAL: u64 = 1_000;
/// Budget 60 000 steps, an evaluation every 1 000, early stop.
const RUN: RunConfig = cartpole_run(60_000, EVAL_INTERVAL);

microrl_firmware::cartpole_trainer!(
    Agent,
    AcConfig::DEFAULT,
    RUN,
    EVAL_INTERVAL,
    "ac: cartpole, actor 4-32-32-2, critic 4-32-32-1, agent {=usize} bytes static"
);
