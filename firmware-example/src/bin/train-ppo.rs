//! PPO learns CartPole from scratch on the MCU.
//!
//! `agent::Ppo<CartPole, 32, 256>`: a 4-32-32-2 categorical actor, a
//! 4-32-32-1 critic, their gradients and Adam moments and a 256-step
//! rollout, all in one value in a `static` ([`ConstStaticCell`] holding
//! `ZERO`, so it sits in `.bss`: no flash image, no stack temporary, no
//! allocator, no `unsafe`). The CartPole simulation runs on the MCU too.
//!
//! The loop is the core's [`Trainer`] — collect 256 steps, one PPO update
//! (`PpoConfig::CARTPOLE`: 10 epochs × 4 minibatches), a 10-episode
//! deterministic evaluation, the deciding 100-episode one when that reaches
//! 475, then the reported 100-episode evaluation on held-out start states —
//! the same code and seeds as `microrl train --small` on the desktop, so the
//! MCU solves at the same step with the same evaluation and weights, bit for
//! bit (host test `train_ppo_solves_cartpole_like_the_desktop_within_budget`).
//!
//! Logs one line per update ([`Log`]); exits 0 iff solved.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use cortex_m_rt::entry;
use microrl::agent;
use microrl::algo::PpoConfig;
use microrl::env::{CartPole, Env};
use microrl::train::{RunConfig, Trainer};
use microrl_firmware::{Log, finish, ok_or_exit, params_fnv};
use rand_xoshiro::Xoshiro128PlusPlus;
use static_cell::ConstStaticCell;

type Agent = agent::Ppo<CartPole, 32, 256>;

const SEED: u64 = 0;
/// Budget 100 000 steps (the learning rate and clip range anneal over it),
/// evaluation after every rollout, early stop.
const RUN: RunConfig = RunConfig {
    eval_interval: 1,
    ..RunConfig::new(100_000, CartPole::SOLVED_RETURN)
};

static AGENT: ConstStaticCell<Agent> = ConstStaticCell::new(Agent::ZERO);

#[entry]
fn main() -> ! {
    let agent = AGENT.take();
    agent.config = PpoConfig {
        total_steps: RUN.total_steps,
        ..PpoConfig::CARTPOLE
    };
    defmt::info!(
        "ppo: cartpole, actor 4-32-32-2, critic 4-32-32-1, rollout 256, agent {=usize} bytes static",
        size_of::<Agent>()
    );
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let trainer = Trainer::<_, Xoshiro128PlusPlus>::start(agent, &mut env, RUN, SEED);
    let mut trainer = ok_or_exit(trainer, "start");
    let outcome = trainer.run(agent, &mut env, &mut eval_env, &mut Log::every(1));
    let outcome = ok_or_exit(outcome, "training");
    finish(
        &outcome,
        RUN.threshold,
        params_fnv(agent.actor(), &agent.obs_norm),
    )
}
