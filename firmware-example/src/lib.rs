//! `microrl-firmware`: the Cortex-M4F (thumbv7em-none-eabihf) example crate.
//!
//! The library holds what every binary shares: the defmt transport
//! (semihosting under QEMU, RTT on a real board), the panic and HardFault
//! handlers that end a QEMU run with a non-zero exit status, [`exit`], the
//! defmt-logging training hooks ([`Log`]), the end-of-run report
//! ([`finish`]), the training run the training binaries share ([`run`]),
//! the inference binaries' CartPole episodes ([`episode`]), instruction
//! counting ([`icount`]), the plant interface ([`plant`]), and for
//! `learn-rt` the board's timers ([`cmsdk`]), a lock-free double buffer
//! ([`publish`]) and fixed-size timing statistics ([`latency`]).
//!
//! Binaries: `train-ppo` and `train-ac` (CartPole learned on the MCU through
//! `microrl::train::Trainer`), `train-resume` (`train-ppo`'s run checkpointed,
//! reset and resumed bit for bit), `plant` (a simulated DC motor behind the
//! [`plant::Plant`] trait, learned the same way), `train-ppo-tiny` and
//! `train-ac-tiny` (the smallest trainers: 4-16-16 PPO in 22 KB of RAM,
//! 4-12-12 actor-critic in 10 KB), `infer` (deterministic CartPole episodes
//! from an exported policy), `infer-plant` (the policy in flash commanding a
//! [`plant::Plant`], no simulator: 15.4 KB of flash), `train-sac` (SAC
//! learns Pendulum in 110 KB of RAM with its stack), `bench-sac` (its
//! instruction counts), `bench` (instruction counts), `kernel-check` (the
//! assembly inference kernels of `kernel`, for `thumbv7em-none-eabihf`,
//! against the core bit for bit) and `learn-rt` (PPO learns CartPole while
//! a 50 Hz timer interrupt controls it, on the [`cmsdk`] timers, with the
//! policy double-buffered by [`publish`] and the timings kept by
//! [`latency`]).

#![no_std]
#![deny(unsafe_code)]

pub mod cmsdk;
pub mod episode;
pub mod icount;
#[cfg(all(target_arch = "arm", target_abi = "eabihf"))]
pub mod kernel;
pub mod latency;
pub mod plant;
mod progress;
pub mod publish;
// The real-time runtime counts with atomic read-modify-writes, which the
// Cortex-M0 (`thumbv6m-none-eabi`) lacks; its binaries do not use it.
#[cfg(target_has_atomic = "32")]
pub mod rt;
pub mod run;
pub mod stack;
pub mod vectors;

#[cfg(all(feature = "semihosting", feature = "rtt"))]
compile_error!(
    "features `semihosting` and `rtt` are exclusive: build with --no-default-features --features rtt"
);

#[cfg(feature = "rtt")]
use defmt_rtt as _;
#[cfg(feature = "semihosting")]
use defmt_semihosting as _;

use cortex_m_rt::{ExceptionFrame, exception};
#[cfg(feature = "semihosting")]
use cortex_m_semihosting::debug;
use microrl::Params;
use microrl::train::Outcome;

pub use progress::{Line, Log, LogStats};

// What the firmware macros (`learn_rt_lagged!`, `cartpole_trainer!`) expand to
// names through `$crate`, so a firmware crate needs only `defmt` and the
// `cortex-m-rt` it links with besides this one.
pub use {cortex_m, cortex_m_rt, heapless, microrl, static_cell};

/// Returns the value of `result`, or logs `what` and the error and exits
/// with status 1.
#[inline]
pub fn ok_or_exit<T>(result: Result<T, microrl::Error>, what: &str) -> T {
    match result {
        Ok(value) => value,
        Err(e) => fail(what, e),
    }
}

/// The error path of [`ok_or_exit`], once per binary rather than once per
/// result type.
#[cold]
#[inline(never)]
fn fail(what: &str, e: microrl::Error) -> ! {
    defmt::error!("{=str} failed: {}", what, e);
    exit(false)
}

/// FNV-1a of every parameter's `f32` bits of `actor` then `obs_norm`,
/// tensor by tensor (the order of [`Params::tensor`]) — the serialisation
/// order of an exported `microrl::Policy { actor, obs_norm, space }` (a
/// discrete space has no tensors). The desktop computes the same checksum of
/// its policy file to prove that both trained bit-identical weights.
///
/// An agent's `actor()` and `obs_norm` are the tensors its `export` copies,
/// so the checksum of a training agent needs no exported copy in RAM.
pub fn params_fnv<A: Params, N: Params>(actor: &A, obs_norm: &N) -> u32 {
    let mut h = Fnv1a::default();
    for i in 0..A::TENSORS {
        h.write_f32s(actor.tensor(i));
    }
    for i in 0..N::TENSORS {
        h.write_f32s(obs_norm.tensor(i));
    }
    h.0
}

/// [`params_fnv`] of a whole deployable policy: every tensor, in order.
pub fn policy_fnv<P: Params>(policy: &P) -> u32 {
    let mut h = Fnv1a::default();
    for i in 0..P::TENSORS {
        h.write_f32s(policy.tensor(i));
    }
    h.0
}

/// Ends a training run: logs the line the host tests parse, the peak stack,
/// and exits with status 0 iff the run solved the task on held-out start
/// states ([`Outcome::solved`]): `solved: step <first passing step> updates
/// <n> eval <reported mean> (<its f32 bits>) ± <std> policy_fnv <checksum>`,
/// or `not solved: …`. `eval` is the *reported* evaluation (the report
/// stream, start states the stopping decision never saw).
pub fn finish(outcome: &Outcome, threshold: f32, policy_fnv: u32) -> ! {
    let report = outcome.report;
    let solved = outcome.solved(threshold);
    match outcome.solved_at_step {
        Some(step) if solved => defmt::info!(
            "solved: step {=u64} updates {=u64} eval {=f32} ({=u32:#010x}) ± {=f32} policy_fnv {=u32:#010x}",
            step,
            outcome.updates,
            report.mean,
            report.mean.to_bits(),
            report.std,
            policy_fnv
        ),
        _ => defmt::error!(
            "not solved: {=u64} steps, deciding evaluation passed at step {=?}, reported eval {=f32} ({=u32:#010x}), threshold {=f32}",
            outcome.steps,
            outcome.solved_at_step,
            report.mean,
            report.mean.to_bits(),
            threshold
        ),
    }
    log_stack();
    exit(solved)
}

/// Ends a training run with a fixed budget that is not expected to solve
/// the task (a CI-sized run that shows learning): logs `trained: steps <n>
/// updates <n> eval <reported mean> (<its f32 bits>) ± <std> solved <bool>
/// policy_fnv <checksum>` — the figures the host test compares with the
/// desktop — and the peak stack, then exits with status 0 (an error during
/// training has already exited with 1). `solved_at` is the step at which
/// the deciding evaluation passed, 0 if it never did.
pub fn finish_budget(outcome: &Outcome, threshold: f32, policy_fnv: u32) -> ! {
    let report = outcome.report;
    defmt::info!(
        "trained: steps {=u64} updates {=u64} eval {=f32} ({=u32:#010x}) ± {=f32} solved {=bool} policy_fnv {=u32:#010x} solved_at {=u64} episodes {=u64}",
        outcome.steps,
        outcome.updates,
        report.mean,
        report.mean.to_bits(),
        report.std,
        outcome.solved(threshold),
        policy_fnv,
        outcome.solved_at_step.unwrap_or(0),
        outcome.episodes
    );
    log_stack();
    exit(true)
}

/// Logs the peak stack use measured by [`stack::peak`] in the common form
/// `stack: peak <bytes> of <bytes>` that the host tests read.
pub fn log_stack() {
    defmt::info!(
        "stack: peak {=usize} of {=usize} bytes",
        stack::peak(),
        stack::size()
    );
}

/// Ends the program: under QEMU (semihosting) the process exits with status 0
/// for `success`, 1 otherwise. On a board without a debugger attached the
/// semihosting call would fault, so with `rtt` this breakpoints then spins.
pub fn exit(success: bool) -> ! {
    #[cfg(feature = "semihosting")]
    debug::exit(if success {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    #[cfg(not(feature = "semihosting"))]
    {
        let _ = success;
        cortex_m::asm::bkpt();
    }
    loop {
        cortex_m::asm::wfi();
    }
}

/// Logs where the panic happened and exits with status 1. Only the location
/// is logged (`file:line:column`, as defmt `str`/`u32` arguments): formatting
/// the message would pull in `core::fmt` (about 3 KB of flash), and the core
/// crate reports its failures through `Result`s, not panics.
#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    match info.location() {
        Some(l) => defmt::error!(
            "panic at {=str}:{=u32}:{=u32}",
            l.file(),
            l.line(),
            l.column()
        ),
        None => defmt::error!("panic"),
    }
    exit(false)
}

// cortex-m-rt requires the HardFault handler to be declared `unsafe fn`.
#[allow(unsafe_code)]
#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    defmt::error!("HardFault at pc={=u32:#x}", frame.pc());
    exit(false)
}

/// 32-bit FNV-1a, for checksums of action and observation sequences that the
/// desktop can reproduce bit for bit.
#[derive(Clone, Copy, Debug)]
pub struct Fnv1a(pub u32);

impl Default for Fnv1a {
    fn default() -> Self {
        Self(0x811c_9dc5)
    }
}

impl Fnv1a {
    /// Mixes `bytes` in.
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
    }
    /// Mixes a `u32` in (little-endian bytes).
    pub fn write_u32(&mut self, x: u32) {
        self.write(&x.to_le_bytes());
    }
    /// Mixes in the bits of every `f32` of `xs` ([`write_u32`](Self::write_u32)).
    #[inline(never)]
    pub fn write_f32s(&mut self, xs: &[f32]) {
        for x in xs {
            self.write_u32(x.to_bits());
        }
    }
}
