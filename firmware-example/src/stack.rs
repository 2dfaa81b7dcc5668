//! Peak stack use, measured by stack painting.
//!
//! cortex-m-rt's `paint-stack` feature fills the whole stack region, from
//! `_stack_end` (just above `.bss`/`.data`/`.uninit`) up to `_stack_start`
//! (the initial stack pointer, the top of RAM), with [`PAINT`] before `main`
//! runs. The stack grows down from `_stack_start`; every word it ever touches
//! is overwritten, so the lowest word that no longer holds the paint marks the
//! deepest the stack has been. [`peak`] scans up from `_stack_end` for it.
//!
//! This is a measurement, not an analysis: it covers the paths the program
//! actually took (including exception handlers that ran), so a binary reports
//! it at its end, after its deepest work. A word that happens to be written
//! with exactly `0xCCCC_CCCC` would hide up to that word — a negligible
//! under-estimate of at most a few bytes in practice.
//!
//! The reads go through raw pointers into memory the Rust program does not
//! otherwise own (the unused part of the stack), so this is the one module of
//! the crate that needs `unsafe`.

/// The value cortex-m-rt paints the stack with (`paint-stack` feature).
pub const PAINT: u32 = 0xCCCC_CCCC;

#[allow(unsafe_code)]
unsafe extern "C" {
    /// Lowest address of the stack region (cortex-m-rt's `link.x`).
    static _stack_end: u32;
    /// Highest address of the stack region: the initial stack pointer.
    static _stack_start: u32;
}

/// The stack region's size in bytes (RAM left over by the statics).
pub fn size() -> usize {
    let (bottom, top) = bounds();
    top - bottom
}

/// The deepest the stack has been since reset, in bytes.
pub fn peak() -> usize {
    let (bottom, top) = bounds();
    let mut addr = bottom;
    while addr < top {
        // SAFETY: `addr` is word-aligned (cortex-m-rt asserts `_stack_end % 4
        // == 0`) and lies in [_stack_end, _stack_start), RAM that is mapped
        // and readable; a volatile read of a `u32` there has no side effects.
        // Words the running program is using are above the current stack
        // pointer and are only read, never written.
        #[allow(unsafe_code)]
        let word = unsafe { core::ptr::read_volatile(addr as *const u32) };
        if word != PAINT {
            break;
        }
        addr += 4;
    }
    top - addr
}

fn bounds() -> (usize, usize) {
    // Taking the address of an extern static is safe; only reading it is not.
    let bottom = core::ptr::addr_of!(_stack_end) as usize;
    let top = core::ptr::addr_of!(_stack_start) as usize;
    (bottom, top)
}
