//! `microrl-firmware`: the Cortex-M4F (thumbv7em-none-eabihf) example crate.
//!
//! The library holds what every binary shares: the defmt transport
//! (semihosting under QEMU, RTT on a real board), the panic and HardFault
//! handlers that end a QEMU run with a non-zero exit status, and [`exit`].
//! Binaries: `infer` (deterministic CartPole episodes from an exported policy).

#![no_std]
#![deny(unsafe_code)]

pub mod icount;
pub mod stack;

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
use microrl::algo::{Act, evaluate};
use microrl::env::Env;

/// The seed of the evaluation episodes' RNG stream for training seed `seed`:
/// the same derivation as `microrl train`, so a firmware run and a desktop run
/// with the same seed play the same evaluation episodes.
pub const fn eval_seed(seed: u64) -> u64 {
    seed ^ 0x5eed_e7a1_0000_0000
}

/// Episodes of the quick deterministic evaluation after every training
/// iteration (as `microrl train`).
pub const QUICK_EVAL_EPISODES: u32 = 10;
/// Episodes of the deciding evaluation (as `microrl train`).
pub const EVAL_EPISODES: u32 = 100;

/// The outcome of [`evaluate_gated`].
#[derive(Clone, Copy, Debug)]
pub struct Gated {
    /// Mean return of the quick evaluation.
    pub quick: f32,
    /// Mean and standard deviation of the deciding evaluation, run only when
    /// the quick one reached the threshold.
    pub full: Option<(f32, f32)>,
}

impl Gated {
    /// Whether the deciding evaluation reached `threshold`.
    pub fn solved(&self, threshold: f32) -> bool {
        self.full.is_some_and(|(mean, _)| mean >= threshold)
    }
}

/// `microrl train`'s evaluation protocol: [`QUICK_EVAL_EPISODES`]
/// deterministic episodes, and when their mean reaches `threshold` the
/// deciding [`EVAL_EPISODES`] ones, all from `rng` (the evaluation stream), so
/// the desktop and the MCU play the same evaluation episodes. `agent` acts
/// with its current weights ([`Act`]), without a copy.
///
/// # Errors
/// The evaluation's error (a non-finite observation or network output).
pub fn evaluate_gated<P, E, R, const OBS: usize>(
    agent: &P,
    env: &mut E,
    threshold: f32,
    rng: &mut R,
) -> Result<Gated, microrl::Error>
where
    P: Act<OBS>,
    E: Env<OBS, Action = P::Action>,
    R: rand_core::Rng,
{
    let (quick, _) = evaluate(agent, env, QUICK_EVAL_EPISODES, rng)?;
    let full = if quick >= threshold {
        Some(evaluate(agent, env, EVAL_EPISODES, rng)?)
    } else {
        None
    };
    Ok(Gated { quick, full })
}

/// Returns the value of `result`, or logs `what` and the error and exits
/// with status 1.
pub fn ok_or_exit<T>(result: Result<T, microrl::Error>, what: &str) -> T {
    match result {
        Ok(value) => value,
        Err(e) => {
            defmt::error!("{=str} failed: {}", what, e);
            exit(false)
        }
    }
}

/// FNV-1a of every parameter's `f32` bits of `policy` then `obs_norm`,
/// tensor by tensor (the order of [`Params::tensor`]) — the serialisation
/// order of the exported `Normalized { policy, obs_norm }`. The desktop
/// computes the same checksum of its policy file to prove that both trained
/// bit-identical weights.
pub fn params_fnv<P: Params, N: Params>(policy: &P, obs_norm: &N) -> u32 {
    let mut h = Fnv1a::default();
    for i in 0..P::TENSORS {
        for x in policy.tensor(i) {
            h.write_u32(x.to_bits());
        }
    }
    for i in 0..N::TENSORS {
        for x in obs_norm.tensor(i) {
            h.write_u32(x.to_bits());
        }
    }
    h.0
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
}
