//! The online actor-critic learns the DC-motor servo while it controls it
//! at 1 kHz: the `TIMER0` interrupt acts every millisecond with the
//! published policy, the learner (a software-pended interrupt one priority
//! below) steps through each block of ticks and publishes, thread mode
//! runs the trainer's evaluations — `microrl_firmware::rt::lagged`, the
//! schedule of `microrl::algo::ac::lagged`, bit-identical to the desktop's
//! `LaggedAc` (`microrl::algo::Lagged`) run through `Trainer::run`, its real-time behaviour measured
//! in instructions under QEMU's `-icount` (`docs/firmware.md`).
//!
//! - **The plant**: `microrl::env::Servo` (armature current, Coulomb
//!   friction, dead-zone, saturation; `f64`, 10 sub-steps a period), a
//!   random start angle and target per 0.5 s episode; its physics runs in
//!   the interrupt after the actuator is written, as the world's part of
//!   the period. On a board, a `Plant` (`microrl_firmware::plant`) in its
//!   place.
//! - **The learner**: `agent::ActorCritic<Servo, 8>` with `AcConfig::PLANT`:
//!   one online step is about a third of a millisecond of the modelled
//!   168 MHz core.
//! - **Blocks** of 250 ticks (a quarter second of policy lag: on the
//!   desktop, seeds 0–4, the schedule solved 4 of 5 with blocks of 250 and
//!   of 100 ticks, 3 of 5 with 1 000).
//! - **Judged** every 5 000 steps (10 quick episodes; 100 deciding ones
//!   when the quick mean passes), solved at a mean of −50 (a mean tracking
//!   error under a tenth of a turn; not commanding the motor scores about
//!   −160).
//!
//! Logs `rt: …` (every figure), then `trained: …`; exits 0 when the run
//! completed in real time.

#![no_std]
#![no_main]
#![deny(unsafe_code)] // one `allow`, in the macro: the `DefaultHandler` signature cortex-m-rt requires

use microrl::agent;
use microrl::algo::AcConfig;
use microrl::env::Servo;
use microrl::train::RunConfig;

/// Budget 100 000 steps (100 s of control), judged every 5 000, solved at −50.
const RUN: RunConfig = RunConfig {
    eval_interval: 5_000,
    ..RunConfig::new(100_000, -50.0)
};

microrl_firmware::learn_rt_lagged! {
    agent: agent::ActorCritic<Servo, 8>,
    plant: Servo,
    obs: 3,
    new_plant: Servo::new(),
    config: AcConfig {
        total_steps: RUN.total_steps,
        ..AcConfig::PLANT
    },
    run: RUN,
    rate_hz: 1_000,
    block: 250,
    judge_queue: 16,
    banner: "learn-rt-ac: servo at 1000 Hz, actor 3-8-8-1, critic 3-8-8-1, block 250, agent {=usize} bytes static",
}
