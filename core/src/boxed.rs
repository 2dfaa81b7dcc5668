//! Agents built on the heap without passing through the stack (`std`).
//!
//! An agent with a large replay ring is megabytes:
//! `Box::new(Agent::new(config))` builds the value first and moves it, and
//! whether that temporary lives on the stack is up to the optimiser — in a
//! debug build, or a release build that does not elide the copy, it
//! overflows a thread's stack. [`zeroed_box`] asks the allocator for
//! zeroed memory (`alloc_zeroed`) and writes into it only the few fields
//! whose value is not all-zero bytes (the configuration), through raw
//! pointers: the agent is never a value on the stack.
//!
//! This is the crate's only `unsafe` code. It is sound for a type whose
//! every other field is valid when all its bytes are zero — `f32`, integers,
//! `bool` and arrays and structs of them, the fields of every agent's
//! `ZERO` — which each caller states in a SAFETY comment and checks in a
//! test (`boxed` equals `new`, field by field).
#![allow(unsafe_code)]

use std::alloc::{Layout, alloc_zeroed, handle_alloc_error};
use std::boxed::Box;

/// A `T` on the heap: every byte zero, then `init` writes the fields whose
/// value is not all-zero bytes through the pointer it is given (with
/// `core::ptr::addr_of_mut!(…).write(…)`, never through a reference).
/// Aborts on allocation failure, as [`Box::new`] does.
///
/// # Safety
/// Every field of `T` that `init` does not write must be valid with all its
/// bytes zero (no references, `NonZero`, `char`, function pointers or enums
/// without a zero discriminant); `init` must write every other field, and
/// only through the raw pointer.
pub(crate) unsafe fn zeroed_box<T>(init: impl FnOnce(*mut T)) -> Box<T> {
    let layout = Layout::new::<T>();
    if layout.size() == 0 {
        let ptr = core::ptr::NonNull::<T>::dangling().as_ptr();
        init(ptr);
        // SAFETY: a zero-sized `T` needs no memory; a dangling, aligned
        // pointer is the one `Box` uses for it, and `init` has written the
        // fields that are not valid all-zero (here: none has a byte).
        return unsafe { Box::from_raw(ptr) };
    }
    // SAFETY: `layout` has a non-zero size (checked above).
    let ptr = unsafe { alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        handle_alloc_error(layout);
    }
    init(ptr);
    // SAFETY: `ptr` was allocated by the global allocator with `T`'s layout,
    // every byte is zero except the fields `init` wrote, and by the
    // caller's contract every other field is valid all-zero: the memory
    // holds a valid `T`, which the box now owns.
    unsafe { Box::from_raw(ptr) }
}
