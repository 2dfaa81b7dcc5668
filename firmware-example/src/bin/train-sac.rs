//! Soft actor-critic learns Pendulum on the MCU, within the 128 KB of an
//! STM32F405/F407's main SRAM.
//!
//! `agent::Sac<Pendulum, 24, 2_000, 64, 4>`: a 3-24-24 ReLU actor trunk
//! with a mean and a `log_std` head (tanh-squashed Gaussian), twin 4-24-24-1
//! ReLU critics and their Polyak targets, `log α`, every gradient and Adam
//! moment, a replay ring of 2 000 transitions, the activation caches and
//! the critics' staged parameters (a transactional update) —
//! 115 184 B, one value in a `static` (`ConstStaticCell`, no allocator, no
//! `unsafe`). The Pendulum simulation runs on the MCU too.
//!
//! **Why these sizes.** What a SAC agent holds is dominated by the
//! networks (each parameter four times: weight, gradient, two Adam moments;
//! the critics five, with their targets) and by the ring, 33 B a
//! transition (`s`, `a`, `r`, `s′`, a flag). Measured on the desktop with
//! the same `Trainer`, seed 0, `SacConfig::PENDULUM` (RL Zoo's: lr `1e-3`,
//! 100 random warm-up steps, one gradient step per environment step):
//!
//! | width, ring, batch | agent | solved at (held-out mean) |
//! |---|---:|---|
//! | 32-32, 2 000, 64 | 147 864 B | 6 000 (−158.5): over 128 KB |
//! | 32-32, 1 500, 64 | 131 368 B | 15 000 (−170.9): over 128 KB |
//! | **24-24, 2 000, 64** | **115 192 B** | **8 000 (−152.0)** |
//! | 16-16, 2 000, 64 | 90 712 B | not within 20 000 (−681.0) |
//!
//! 24-24 with a ring of ten 200-step episodes is the widest network that
//! leaves room for the stack; minibatches of 64 rather than SB3's 256 cost
//! no RAM (the minibatch is drawn as indices into the ring, 12 B a sample
//! on the stack for the indices and noise) but a quarter of the
//! instructions, and solved as early as 128 did with 32-32 (6 000 both).
//!
//! **Budget.** One gradient step takes 3.19 M instructions (`bench-sac`;
//! an estimated 38 ms at 168 MHz, `docs/firmware.md`), so the run that
//! solves (8 000 steps, 7 900 gradient steps) is minutes of emulation. The
//! default build runs 4 000 steps — enough to show learning: the reported
//! 100-episode evaluation goes from the untrained policy's −1 162.5 to
//! −850.7 (the host test `train_sac_learns_pendulum_like_the_desktop`
//! asserts a gain of at least 250, and the evaluation's bits and the
//! weights' checksum equal to the desktop's) — and ends with a `trained:`
//! line, exit 0. `--features sac-solve` runs a 20 000-step budget with
//! early stop and exits 0 iff solved (`finish`; `--ignored` host test
//! `train_sac_solves_pendulum_like_the_desktop`; figures in
//! `docs/firmware.md`).
//!
//! The loop is the core's `Trainer` with an evaluation every 1 000 steps —
//! the same code and seeds as the desktop run of the same configuration, bit
//! for bit. Logs every 1 000 steps (`Log`).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use microrl::agent;
use microrl::algo::SacConfig;
use microrl::env::{Env, Pendulum};
use microrl::train::RunConfig;
use microrl_firmware::{finish, finish_budget, params_fnv, run};
use static_cell::ConstStaticCell;

/// Hidden width of the actor trunk and of both critics.
const H: usize = 24;
/// Replay ring capacity (transitions).
const CAP: usize = 2_000;
/// Minibatch size.
const BATCH: usize = 64;
type Agent = agent::Sac<Pendulum, H, CAP, BATCH, 4>;

/// RL Zoo's Pendulum-v1 settings with this agent's ring and minibatch.
const CONFIG: SacConfig = SacConfig {
    buffer_size: CAP as u32,
    batch_size: BATCH as u32,
    ..SacConfig::PENDULUM
};

/// Environment steps between evaluations and progress lines.
const EVAL_INTERVAL: u64 = 1_000;
/// The solving run's budget (`--features sac-solve`), or the CI run's.
const BUDGET: u64 = if cfg!(feature = "sac-solve") {
    20_000
} else {
    4_000
};
/// The budget, an evaluation every 1 000 steps, early stop at −200.
const RUN: RunConfig = RunConfig::new(BUDGET, Pendulum::SOLVED_RETURN);

static AGENT: ConstStaticCell<Agent> = ConstStaticCell::new(Agent::ZERO);

#[cortex_m_rt::entry]
fn main() -> ! {
    defmt::info!(
        "sac: pendulum, actor 3-{=usize}-{=usize}-(1+1), critics 2 x 4-{=usize}-{=usize}-1, replay {=usize}, batch {=usize}, budget {=u64}, agent {=usize} bytes static",
        H,
        H,
        H,
        H,
        CAP,
        BATCH,
        BUDGET,
        size_of::<Agent>()
    );
    let agent = AGENT.take();
    agent.config = CONFIG;
    let (mut env, mut eval_env) = (Pendulum::new(), Pendulum::new());
    let outcome = run::train(agent, &mut env, &mut eval_env, RUN, EVAL_INTERVAL);
    // Everything learned: the actor (trunk, mean and log_std heads) and both critics.
    let fnv = params_fnv(&agent.actor.params, &agent.critic.params);
    if cfg!(feature = "sac-solve") {
        finish(&outcome, RUN.threshold, fnv)
    } else {
        finish_budget(&outcome, RUN.threshold, fnv)
    }
}
