//! Instruction counting under QEMU's `-icount shift=0`, with SysTick as the clock.
//!
//! Design:
//! - **What is counted.** With `-icount shift=N` QEMU does not run the guest
//!   in real time: its virtual clock advances by exactly `2^N` ns for every
//!   guest instruction executed ("The virtual CPU will execute one instruction
//!   every 2^N ns of virtual host time", QEMU System Emulation User's Guide,
//!   `-icount`; <https://www.qemu.org/docs/master/system/invocation.html>,
//!   and `docs/devel/tcg-icount.rst`). Device timers read that virtual clock,
//!   and an access to a device register ends the translation block at that
//!   instruction, so with `shift=0` a timer read tells the number of
//!   instructions executed so far, deterministically: the same ELF gives the
//!   same counts on every host and every run.
//! - **Which timer.** `mps2-an386` clocks the Cortex-M4's SysTick (processor
//!   clock source, `CLKSOURCE = 1`) from the board's 25 MHz system clock
//!   (QEMU `hw/arm/mps2.c`, `SYSCLK_FRQ`), so one SysTick tick is 40 ns = 40
//!   instructions; the CMSDK APB timers at `0x4000_0000` run from the same
//!   25 MHz clock, so they are no finer, and QEMU implements no DWT (`CYCCNT`
//!   reads as zero, checked by the `bench` binary). SysTick is reached through
//!   `cortex_m`'s safe API, so this module needs no `unsafe`. The ratio is
//!   *measured* by the `bench` binary's calibration, not assumed.
//! - **Wide counter.** SysTick is a 24-bit down-counter (Armv7-M ARM, B3.3
//!   "The system timer, SysTick"; Cortex-M4 TRM r0p1, 4.1 "System timer,
//!   SysTick"). It runs with reload `0xFF_FFFF` (period `2^24` ticks, about
//!   671 M instructions) and its exception counts periods in an atomic, so
//!   [`Ticks::now`] is a 64-bit tick count. The exception is pended when the
//!   counter reaches 0, so `ticks = periods · 2^24 + (2^24 − CVR) mod 2^24`.
//!   A handler run inside a measured block adds its few instructions
//!   (once per 671 M).
//! - **Quantisation.** A measurement is the difference of two reads, so it is
//!   off by less than one tick (40 instructions) plus a fixed overhead (the
//!   instructions between the two reads that are not the block). Callers
//!   repeat an operation `R` times inside one measurement and subtract an
//!   empty loop of the same `R`, which cancels the overhead and leaves an
//!   error below `2 · 40 / R` instructions per operation.
//! - **On a real board** SysTick counts core cycles, not instructions; use
//!   the DWT cycle counter there instead (this module is for QEMU).

#![forbid(unsafe_code)]

use core::hint::black_box;
use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::asm::nop;
use cortex_m::peripheral::SYST;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::exception;

/// Instructions per iteration of [`nop_loop`] (`nop; subs; bne`), read from
/// the disassembly (`arm-none-eabi-objdump -d`) on both targets.
pub const NOP_LOOP_INSTRUCTIONS: u64 = 3;

/// `n` iterations of a loop around one `nop`, the calibration's loop of
/// known length. Not unrolled: LLVM's ARM backend does not runtime-unroll
/// loops that contain inline assembly.
#[inline(never)]
pub fn nop_loop(n: u32) {
    for _ in 0..n {
        nop();
    }
}

/// `reps` calls of `f(i)`, `i = 0, 1, …`, as one out-of-line loop (the
/// measured block: the same loop for the operation and the empty body).
#[inline(never)]
pub fn repeat(reps: u32, mut f: impl FnMut(u32)) {
    for i in 0..reps {
        f(black_box(i));
    }
}

/// SysTick reload value: the full 24 bits.
pub const RELOAD: u32 = 0x00FF_FFFF;
/// Ticks per SysTick period.
const PERIOD: u64 = 1 << 24;

/// Completed SysTick periods since [`Ticks::start`].
static PERIODS: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    // Only this handler writes while the counter runs, and it cannot preempt
    // itself: a load and a store suffice (the Cortex-M0 has no `fetch_add`).
    PERIODS.store(PERIODS.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// The running tick counter. Owning `SYST` guarantees nothing else
/// reconfigures SysTick while it is in use.
pub struct Ticks {
    _syst: SYST,
}

impl Ticks {
    /// Starts SysTick from the processor clock, full reload, exception enabled.
    pub fn start(mut syst: SYST) -> Self {
        syst.disable_counter();
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(RELOAD);
        syst.clear_current();
        PERIODS.store(0, Ordering::SeqCst);
        syst.enable_interrupt();
        syst.enable_counter();
        Self { _syst: syst }
    }

    /// Ticks since [`start`](Self::start).
    ///
    /// Re-reads if a period ended between reading the period count and the
    /// counter (under QEMU the exception is taken at the instruction where
    /// the counter reaches 0, so the two reads are then consistent).
    #[inline(always)]
    pub fn now(&self) -> u64 {
        loop {
            let periods = PERIODS.load(Ordering::SeqCst);
            let current = SYST::get_current();
            if PERIODS.load(Ordering::SeqCst) == periods {
                let within = (RELOAD + 1 - current) & RELOAD;
                return u64::from(periods) * PERIOD + u64::from(within);
            }
        }
    }

    /// Ticks taken by `f` (including the fixed read overhead) and its result.
    #[inline(always)]
    pub fn measure<T>(&self, f: impl FnOnce() -> T) -> (u64, T) {
        let start = self.now();
        let out = f();
        let end = self.now();
        (end - start, out)
    }
}
