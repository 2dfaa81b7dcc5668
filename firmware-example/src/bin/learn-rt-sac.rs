//! Soft actor-critic learns Pendulum while it controls it at the plant's
//! own 20 Hz: the `TIMER0` interrupt acts every 50 ms with the published
//! actor (exploring), the learner (a software-pended interrupt one priority
//! below) makes one gradient step per tick of each block and publishes,
//! thread mode runs the trainer's evaluations — `microrl_firmware::rt::lagged`,
//! the schedule of `microrl::algo::lagged` with SAC's learner side
//! (`OffPolicy::ingest`), bit-identical to the desktop's
//! `agent::LaggedSac` run through `Trainer::run` (`microrl train --algo sac
//! --env pendulum --lag 1`), its real-time behaviour measured in
//! instructions under QEMU's `-icount` (`docs/firmware.md`).
//!
//! - **The learner**: `train-sac`'s networks with a ring of 1 500
//!   transitions (7.5 episodes; `agent::Sac<Pendulum, 24, 1_500, 64, 4>`,
//!   RL Zoo's settings `SacConfig::PENDULUM` with this ring and
//!   minibatch): the ring `train-sac` keeps would leave no room in 128 KB
//!   for the published actor's two slots, the snapshots and the stack. One
//!   gradient step per tick after 100 random ones, 3.3 M instructions each
//!   — 78 % of a 50 ms period of the modelled 168 MHz core, which is why it
//!   runs beside the control loop, not in it.
//! - **Blocks** of 5 ticks (a quarter second of policy lag). Longer blocks
//!   cost Pendulum's SAC its solves (on the desktop, seeds 0–4 within
//!   20 000 steps: 5 of 5 with blocks of 5, 2 of 5 with 20, 1 of 5 with
//!   100; the blocking learner 5 of 5; `docs/firmware.md`).
//! - **Judged** every 1 000 steps, solved at Pendulum's −200.
//! - **Budget**: 2 000 steps (100 s of control) by default, the run the
//!   host test boots for its real-time figures and bit-identity;
//!   `--features sac-solve` runs 20 000 with early stop (the `--ignored`
//!   host test: it solves as the desktop does).
//!
//! Logs `rt: …` (every figure), then `trained: …`; exits 0 when the run
//! completed in real time.

#![no_std]
#![no_main]
#![deny(unsafe_code)] // one `allow`, in the macro: the `DefaultHandler` signature cortex-m-rt requires

use microrl::agent;
use microrl::algo::SacConfig;
use microrl::env::{Env, Pendulum};
use microrl::train::RunConfig;

/// Judged every 1 000 steps, solved at −200; 2 000 steps, or 20 000 with `sac-solve`.
const RUN: RunConfig = RunConfig {
    eval_interval: 1_000,
    ..RunConfig::new(
        if cfg!(feature = "sac-solve") {
            20_000
        } else {
            2_000
        },
        Pendulum::SOLVED_RETURN,
    )
};

microrl_firmware::learn_rt_lagged! {
    agent: agent::Sac<Pendulum, 24, 1_500, 64, 4>,
    plant: Pendulum,
    obs: 3,
    new_plant: Pendulum::new(),
    config: SacConfig {
        buffer_size: 1_500,
        batch_size: 64,
        ..SacConfig::PENDULUM
    },
    run: RUN,
    rate_hz: 20,
    block: 5,
    judge_queue: 1,
    banner: "learn-rt-sac: pendulum at 20 Hz, actor 3-24-24-(1+1), critics 2 x 4-24-24-1, replay 1500, batch 64, block 5, agent {=usize} bytes static",
}
