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
//! The heap constructors themselves are here too — `Sac::boxed` and
//! `Td3::boxed` for SB3's architecture ([`SacMlp`], [`Td3Mlp`]) and
//! `Lagged::boxed` for their lagged schedules, one macro for all four — so
//! that this module is the crate's only `unsafe` code. [`zeroed_box`] is
//! sound for a type whose every other field is valid when all its bytes are
//! zero — `f32`, integers, `bool` and arrays and structs of them, the fields
//! of every agent's `ZERO` — which each constructor states in a SAFETY
//! comment and a test checks (`boxed` equals `new`, field by field).
#![allow(unsafe_code)]

use std::alloc::{Layout, alloc_zeroed, handle_alloc_error};
use std::boxed::Box;

use crate::algo::Lagged;
use crate::algo::sac::{SacConfig, SacMlp};
use crate::algo::td3::{Td3Config, Td3Mlp};
use crate::rng::Xoshiro128pp;

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

/// The heap constructors of an off-policy agent with SB3's architecture
/// (`$agent`: [`SacMlp`] or [`Td3Mlp`]) and of its lagged schedule
/// ([`Lagged`] around it): `boxed(config)` is `new(config)` on the heap.
/// `$adam` names the [`TrainState`](crate::optim::TrainState)s whose Adam
/// configuration `new` sets to `config.adam` — with `config` itself, the
/// only fields of `new(config)` that are not all zero bytes.
macro_rules! heap_constructors {
    ($agent:ident, $config:ty, $name:literal, [$($adam:ident),+]) => {
        impl<const OBS: usize, const ACT: usize, const OA: usize,
             const H: usize, const CAP: usize, const BATCH: usize>
            $agent<OBS, ACT, OA, H, CAP, BATCH>
        {
            #[doc = concat!(
                "[`new`](Self::new)`(config)` on the heap, built in place: zeroed\n",
                "memory from the allocator with the configuration written into it —\n",
                "never a value on the stack, whatever the replay ring's size or the\n",
                "build's optimisation (`Box::new(Self::new(config))` may build the\n",
                "agent on the stack first and overflow a thread's stack).\n",
                "[`init`](Self::init) before use. ", $name, "'s lagged schedule: ",
                "[`Lagged::boxed`](crate::algo::Lagged)."
            )]
            pub fn boxed(config: $config) -> Box<Self> {
                let () = Self::SIZES;
                // SAFETY: `new(config)` is all zero bytes but for the
                // fields `write_config` writes: every other field is `f32`s,
                // integers, `bool`s, zero-sized markers or arrays and structs
                // of them (weights, gradients, Adam moments and steps, the
                // replay ring and its counters, the bounds, caches and
                // scratch), valid all-zero and zero in `new`. The layer types
                // are the crate's own (`Dense`, `Chain`, the actor): this
                // impl is for SB3's architecture only, not for any `Layer`.
                // `write_config` writes through the raw pointer only.
                // `boxed_is_new` (sac::tests, td3::tests) checks the result
                // equals `new(config)`.
                let init = |p: *mut Self| {
                    // SAFETY: `p` is valid for writes of a `Self` and aligned
                    // (`zeroed_box`'s allocation).
                    unsafe { Self::write_config(p, config) }
                };
                // SAFETY: as above.
                unsafe { zeroed_box(init) }
            }

            /// Writes the fields of `new(config)` that are not all zero
            /// bytes — the configuration and each Adam state's copy of
            /// `config.adam` — through `p`, never through a reference.
            ///
            /// # Safety
            /// `p` must be valid for writes of a `Self` and aligned.
            unsafe fn write_config(p: *mut Self, config: $config) {
                // SAFETY: by the caller's contract `p` is valid for writes
                // and aligned; `addr_of_mut!` takes each field's address
                // without creating a reference to the (possibly not yet
                // valid) `Self`, and `write` does not read or drop the old
                // bytes.
                unsafe {
                    core::ptr::addr_of_mut!((*p).config).write(config);
                    $(core::ptr::addr_of_mut!((*p).$adam.optimizer.config).write(config.adam);)+
                }
            }
        }

        impl<const OBS: usize, const ACT: usize, const OA: usize,
             const H: usize, const CAP: usize, const BATCH: usize, const BLOCK: usize>
            Lagged<$agent<OBS, ACT, OA, H, CAP, BATCH>, OBS, BLOCK>
        {
            #[doc = concat!(
                "`Lagged::new(", $name, "::new(config))` on the heap, built in place as\n",
                "[`", $name, "::boxed`](crate::algo::", $name, "): never a value on the stack.\n",
                "[`init`](crate::train::Learner::init) before use."
            )]
            pub fn boxed(config: $config) -> Box<Self> {
                let () = Self::BLOCK_POSITIVE;
                let () = <$agent<OBS, ACT, OA, H, CAP, BATCH>>::SIZES;
                // SAFETY: `Lagged::new(learner)` is the learner, the
                // published behaviour (`Explorer::zero()`: zero weights,
                // bounds and warm-up), an empty block of zeroed ticks (`f32`s
                // and `bool`s), the control loop's generator and two
                // counters. All-zero bytes are valid for each and are their
                // value in `new` but for the learner's configuration fields
                // (written by the learner's `write_config`, as in its own
                // `boxed`) and the generator, `Xoshiro128pp::UNSEEDED`
                // (written below; four `u32`s, so all-zero is valid too).
                // Both writes go through the raw pointer only.
                // `lagged::tests::boxed_is_new` checks the result equals
                // `new`.
                let init = |p: *mut Self| {
                    // SAFETY: `p` is valid for writes of a `Self` and aligned
                    // (`zeroed_box`'s allocation), so are its fields'
                    // addresses, taken without a reference.
                    unsafe {
                        <$agent<OBS, ACT, OA, H, CAP, BATCH>>::write_config(
                            core::ptr::addr_of_mut!((*p).learner),
                            config,
                        );
                        core::ptr::addr_of_mut!((*p).acting_rng).write(Xoshiro128pp::UNSEEDED);
                    }
                };
                // SAFETY: as above.
                unsafe { zeroed_box(init) }
            }
        }
    };
}

heap_constructors!(SacMlp, SacConfig, "Sac", [actor, critic, log_alpha]);
heap_constructors!(Td3Mlp, Td3Config, "Td3", [actor, critic]);
