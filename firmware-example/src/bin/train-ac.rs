//! The online one-step actor-critic learns CartPole on the MCU, with the
//! smallest memory of the learners: no rollout buffer, only
//! `agent::ActorCritic<CartPole, 32>` — the two 4-32-32 networks, their
//! gradients and Adam moments — in a `static` ([`ConstStaticCell`] holding
//! `ZERO`, in `.bss`).
//!
//! Every environment step is one update (TD error `δ = r + γ V(s') − V(s)`,
//! critic on `½ δ²`, actor on `−δ log π(a|s)`; Sutton & Barto 2018, §13.5).
//! The loop is the core's [`Trainer`] with an evaluation every 1 000 steps:
//! the protocol of `microrl train --algo ac --small --steps 60000`, step for
//! step and bit for bit. Logs every 1 000 steps ([`Log`]); exits 0 iff solved.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use cortex_m_rt::entry;
use microrl::agent;
use microrl::algo::AcConfig;
use microrl::env::{CartPole, Env};
use microrl::train::{RunConfig, Trainer};
use microrl_firmware::{Log, finish, ok_or_exit, params_fnv};
use rand_xoshiro::Xoshiro128PlusPlus;
use static_cell::ConstStaticCell;

type Agent = agent::ActorCritic<CartPole, 32>;

const SEED: u64 = 0;
/// Online steps between evaluations (and progress lines).
const EVAL_INTERVAL: u64 = 1_000;
/// Budget 60 000 steps, an evaluation every 1 000, early stop.
const RUN: RunConfig = RunConfig {
    eval_interval: EVAL_INTERVAL,
    ..RunConfig::new(60_000, CartPole::SOLVED_RETURN)
};

static AGENT: ConstStaticCell<Agent> = ConstStaticCell::new(Agent::ZERO);

#[entry]
fn main() -> ! {
    let agent = AGENT.take();
    agent.config = AcConfig {
        total_steps: RUN.total_steps,
        ..AcConfig::DEFAULT
    };
    defmt::info!(
        "ac: cartpole, actor 4-32-32-2, critic 4-32-32-1, agent {=usize} bytes static",
        size_of::<Agent>()
    );
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let trainer = Trainer::<_, Xoshiro128PlusPlus>::start(agent, &mut env, RUN, SEED);
    let mut trainer = ok_or_exit(trainer, "start");
    let mut log = Log::every(EVAL_INTERVAL);
    let outcome = trainer.run(agent, &mut env, &mut eval_env, &mut log);
    let outcome = ok_or_exit(outcome, "training");
    finish(
        &outcome,
        RUN.threshold,
        params_fnv(agent.actor(), &agent.obs_norm),
    )
}
