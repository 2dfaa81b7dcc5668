//! The MPS2 board's CMSDK APB timers, as `learn-rt` uses them: `TIMER0`
//! raises the control loop's periodic interrupt, `TIMER1` runs free as a
//! 32-bit clock that both the interrupt and thread mode read.
//!
//! Design:
//! - **The hardware** (QEMU `hw/arm/mps2.c`, AN385/AN386 images): two CMSDK
//!   APB timers, `TIMER0` at `0x4000_0000` on IRQ 8 and `TIMER1` at
//!   `0x4000_1000` on IRQ 9, clocked from the 25 MHz system clock (Cortex-M
//!   System Design Kit TRM, ARM DDI 0479C, "APB timer"). Registers: `CTRL`
//!   (bit 0 enable, bit 3 interrupt enable), `VALUE` (the 32-bit
//!   down-counter), `RELOAD`, `INTSTATUS` (write 1 to clear; the interrupt
//!   line is level-sensitive and stays up until cleared). The counter
//!   raises the interrupt on its 1 → 0 step, holds 0 for one clock, then
//!   reloads: the period is `RELOAD + 1` clocks (QEMU
//!   `hw/timer/cmsdk-apb-timer.c`).
//! - **Why a peripheral timer, not SysTick**: SysTick is the firmware's
//!   instruction counter ([`icount`](crate::icount), 24 bits, its wrap
//!   counted by its own exception); a control loop on it would have to
//!   share that exception and its 24-bit range. A peripheral timer is also
//!   what a board's control loop runs on (an STM32's `TIMx` update
//!   interrupt), with its own NVIC priority above every other interrupt.
//! - **The clock**: `TIMER1` reloads from `0xFFFF_FFFF` with its interrupt
//!   off, so [`Clock::now`] (`!VALUE`) counts up 25 M times a second for
//!   171 s before it wraps, with no exception to count periods: a plain
//!   register read, consistent from any priority (an interrupt cannot see
//!   a half-updated wide count). Under `-icount shift=0` one count is 40
//!   instructions (`learn-rt` checks it at start-up against a loop of known
//!   length).
//! - **`unsafe`**: the register accesses are volatile reads and writes of
//!   the board's memory-mapped timers (and the NVIC's priority and enable
//!   registers through `cortex_m`); each is an `unsafe` block with its
//!   argument. The timers exist at these addresses on `mps2-an386` only;
//!   on a board, its own timer takes their place.

use core::ptr::{read_volatile, write_volatile};

use cortex_m::interrupt::InterruptNumber;
use cortex_m::peripheral::NVIC;

/// The timers' input clock (`SYSCLK_FRQ` of `mps2-an386`).
pub const CLOCK_HZ: u32 = 25_000_000;

/// A CMSDK APB timer by its register block's base address.
#[derive(Clone, Copy, Debug)]
pub struct Timer {
    base: usize,
    irq: u16,
}

/// `TIMER0`: the control loop's periodic interrupt (IRQ 8).
pub const TIMER0: Timer = Timer {
    base: 0x4000_0000,
    irq: 8,
};
/// `TIMER1`: the free-running [`Clock`] (IRQ 9, never enabled).
pub const TIMER1: Timer = Timer {
    base: 0x4000_1000,
    irq: 9,
};

const CTRL: usize = 0x0;
const VALUE: usize = 0x4;
const RELOAD: usize = 0x8;
const INTSTATUS: usize = 0xc;
const CTRL_ENABLE: u32 = 1 << 0;
const CTRL_IRQ_ENABLE: u32 = 1 << 3;

/// An external interrupt number for `cortex_m`'s NVIC API.
#[derive(Clone, Copy, Debug)]
struct Irq(u16);

// SAFETY: `number` returns the interrupt's number as given, a valid IRQ
// line of the board (8, 9 or [`LEARNER`]'s 25, below its 32 lines), never
// anything else.
#[allow(unsafe_code)]
unsafe impl InterruptNumber for Irq {
    fn number(self) -> u16 {
        self.0
    }
}

impl Timer {
    #[inline(always)]
    fn read(self, offset: usize) -> u32 {
        // SAFETY: `base + offset` is one of the four 32-bit, word-aligned
        // registers of a CMSDK timer mapped at `base` on this board; a read
        // has no side effect on memory the program owns.
        #[allow(unsafe_code)]
        unsafe {
            read_volatile((self.base + offset) as *const u32)
        }
    }

    #[inline(always)]
    fn write(self, offset: usize, value: u32) {
        // SAFETY: as in `read`; the write changes only the timer's state.
        #[allow(unsafe_code)]
        unsafe {
            write_volatile((self.base + offset) as *mut u32, value);
        }
    }

    /// The interrupt's number.
    pub fn irq(self) -> u16 {
        self.irq
    }

    /// Runs the timer with period `reload + 1` clocks from now, its
    /// interrupt raised at every period's end iff `interrupt`.
    pub fn start(self, reload: u32, interrupt: bool) {
        self.write(CTRL, 0);
        self.write(RELOAD, reload);
        self.write(VALUE, reload);
        self.write(INTSTATUS, 1);
        let irq = if interrupt { CTRL_IRQ_ENABLE } else { 0 };
        self.write(CTRL, CTRL_ENABLE | irq);
    }

    /// Stops the counter and its interrupt, and clears a pending one.
    pub fn stop(self) {
        self.write(CTRL, 0);
        self.write(INTSTATUS, 1);
    }

    /// The counter.
    #[inline(always)]
    pub fn value(self) -> u32 {
        self.read(VALUE)
    }

    /// Clocks since the period's interrupt was raised, for a timer started
    /// with `reload` (the counter reads 0 on the clock of the interrupt,
    /// then `reload`, `reload − 1`, …).
    #[inline(always)]
    pub fn since_expiry(self, reload: u32) -> u32 {
        let value = self.value();
        if value == 0 { 0 } else { reload + 1 - value }
    }

    /// Acknowledges the interrupt (the line is level-sensitive).
    #[inline(always)]
    pub fn clear_interrupt(self) {
        self.write(INTSTATUS, 1);
    }

    /// Enables the timer's interrupt in the NVIC at `priority` (0 is the
    /// highest; the M4 uses the top bits).
    pub fn unmask(self, nvic: &mut NVIC, priority: u8) {
        // SAFETY: the firmware's critical sections mask every interrupt
        // (PRIMASK, `critical-section-single-core`), none relies on this
        // line staying masked, so unmasking it or setting its priority
        // breaks no critical section.
        #[allow(unsafe_code)]
        unsafe {
            nvic.set_priority(Irq(self.irq), priority);
            NVIC::unmask(Irq(self.irq));
        }
    }

    /// Disables the timer's interrupt in the NVIC.
    pub fn mask(self) {
        NVIC::mask(Irq(self.irq));
    }
}

/// An external interrupt no device raises, which the firmware pends
/// itself (the NVIC's set-pending register): a task below the control
/// loop's priority and above thread mode, as RTIC's software tasks are.
#[derive(Clone, Copy, Debug)]
pub struct SoftIrq(u16);

/// `learn-rt-ac`'s learner task: IRQ 25, a line of `mps2-an386`'s 32 that
/// no modelled device drives (QEMU `hw/arm/mps2.c`).
pub const LEARNER: SoftIrq = SoftIrq(25);

impl SoftIrq {
    /// The interrupt's number.
    pub fn irq(self) -> u16 {
        self.0
    }

    /// Enables it in the NVIC at `priority` (0 is the highest).
    pub fn unmask(self, nvic: &mut NVIC, priority: u8) {
        // SAFETY: as for [`Timer::unmask`].
        #[allow(unsafe_code)]
        unsafe {
            nvic.set_priority(Irq(self.0), priority);
            NVIC::unmask(Irq(self.0));
        }
    }

    /// Raises it: the handler runs as soon as no higher-priority one does.
    #[inline(always)]
    pub fn pend(self) {
        NVIC::pend(Irq(self.0));
    }

    /// Disables it in the NVIC.
    pub fn mask(self) {
        NVIC::mask(Irq(self.0));
    }
}

/// The free-running 32-bit clock on [`TIMER1`]: 25 MHz, wraps after 171 s.
#[derive(Clone, Copy, Debug)]
pub struct Clock(());

impl Clock {
    /// Starts `TIMER1` counting down from `0xFFFF_FFFF`, interrupt off.
    pub fn start() -> Self {
        TIMER1.start(u32::MAX, false);
        Self(())
    }

    /// The clock [`start`](Self::start) started, for a context that was
    /// not handed it (an interrupt handler): `now` reads `TIMER1` either
    /// way, which counts from the reset value 0 until started.
    pub const fn running() -> Self {
        Self(())
    }

    /// Clocks since [`start`](Self::start) (wrapping at 2³²).
    #[inline(always)]
    pub fn now(self) -> u32 {
        !TIMER1.value()
    }
}
