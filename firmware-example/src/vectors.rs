//! The device part of the vector table, sized for the board instead of
//! cortex-m-rt's generic 240 entries (960 bytes of flash).
//!
//! cortex-m-rt's `device` feature leaves `__INTERRUPTS` to the application
//! (normally a PAC). The firmware routes every external interrupt to
//! `DefaultHandler` (learn-rt's control loop checks it is `TIMER0`'s), so
//! the table is `IRQS` copies of it, `IRQS` being the board's interrupt
//! count:
//!
//! | board (`memory/*.x`) | interrupts | source |
//! |---|---|---|
//! | QEMU mps2-an386 (default) | 32 | QEMU `hw/arm/mps2.c`, `num-irq` |
//! | STM32F407 (`stm32f407`), STM32F405 (`stm32f405`, QEMU netduinoplus2) | 82 | RM0090, table 61 (IRQ 0–81) |
//! | nRF52840 (`nrf52840`) | 48 | nRF52840 product specification, §4.2.4 (peripheral IDs 0–47) |
//! | QEMU microbit (`thumbv6m-none-eabi`) | 32 | nRF51 reference manual |
//!
//! An interrupt beyond the table is never enabled by this firmware.

/// Interrupts of the board this build links for.
#[cfg(any(feature = "stm32f407", feature = "stm32f405"))]
pub const IRQS: usize = 82;
/// Interrupts of the board this build links for.
#[cfg(all(
    feature = "nrf52840",
    not(any(feature = "stm32f407", feature = "stm32f405"))
))]
pub const IRQS: usize = 48;
/// Interrupts of the board this build links for.
#[cfg(not(any(feature = "stm32f407", feature = "stm32f405", feature = "nrf52840")))]
pub const IRQS: usize = 32;

#[allow(unsafe_code)] // a declaration only; nothing calls it from Rust
unsafe extern "C" {
    /// cortex-m-rt's default handler (the firmware's
    /// `#[exception] DefaultHandler` where a binary defines one).
    fn DefaultHandler();
}

/// The device interrupts: every one enters `DefaultHandler`.
#[allow(unsafe_code)] // the two attributes that place the table (cortex-m-rt's contract)
#[unsafe(link_section = ".vector_table.interrupts")]
#[unsafe(no_mangle)]
#[used]
pub static __INTERRUPTS: [unsafe extern "C" fn(); IRQS] = [DefaultHandler; IRQS];
