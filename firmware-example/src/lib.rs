//! `microrl-firmware`: the Cortex-M4F (thumbv7em-none-eabihf) example crate.
//!
//! The library holds what every binary shares: the defmt transport
//! (semihosting under QEMU, RTT on a real board), the panic and HardFault
//! handlers that end a QEMU run with a non-zero exit status, and [`exit`].
//! Binaries: `infer` (deterministic CartPole episodes from an exported policy).

#![no_std]

#[cfg(all(feature = "semihosting", feature = "rtt"))]
compile_error!("features `semihosting` and `rtt` are exclusive: build with --no-default-features --features rtt");

#[cfg(feature = "semihosting")]
use defmt_semihosting as _;
#[cfg(feature = "rtt")]
use defmt_rtt as _;

use cortex_m_rt::{ExceptionFrame, exception};
#[cfg(feature = "semihosting")]
use cortex_m_semihosting::debug;

/// Ends the program: under QEMU (semihosting) the process exits with status 0
/// for `success`, 1 otherwise. On a board without a debugger attached the
/// semihosting call would fault, so with `rtt` this breakpoints then spins.
pub fn exit(success: bool) -> ! {
    #[cfg(feature = "semihosting")]
    debug::exit(if success { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
    #[cfg(not(feature = "semihosting"))]
    {
        let _ = success;
        cortex_m::asm::bkpt();
    }
    loop {
        cortex_m::asm::wfi();
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    defmt::error!("panic: {}", defmt::Display2Format(info));
    exit(false)
}

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
