//! [`Published`]: a double-buffered value that one context writes and
//! another reads without a lock — the policy a learner in thread mode
//! publishes and a control loop in an interrupt acts with.
//!
//! Design:
//! - **Two slots and two flags.** `front` (an `AtomicU8`, 0 or 1) names the
//!   slot the reader reads; the writer writes only the other one, the back
//!   slot. `fresh` says the back slot holds a value published and not yet
//!   switched to. The writer may write the back slot only while `fresh` is
//!   false ([`Writer::back`]) and sets it when done ([`Writer::publish`],
//!   Release); the reader, at a moment of its choosing (the control loop: a
//!   rollout boundary), flips `front` iff `fresh` and clears `fresh`
//!   ([`Reader::switch`], Acquire then Release). So the slot a reader reads
//!   is never the one being written, the switch is one atomic store, and
//!   neither side ever waits for the other: the control loop keeps acting
//!   with the slot it has when nothing new is published.
//! - **Why it is sound.** `front` changes only in [`Reader::switch`], which
//!   takes `&mut Reader`, so no `&T` handed out by [`Reader::front`] lives
//!   across a switch; and only while `fresh` is true, when the writer holds
//!   no `&mut T` ([`Writer::back`] returns `None` then and
//!   [`Writer::publish`] takes `&mut Writer`, ending the borrow). When the
//!   writer sees `fresh` false again (Acquire, pairing with the switch's
//!   Release), the reader's reads of the slot that is now the back one
//!   happened before. One reader and one writer exist: [`Published::split`]
//!   consumes a `&'static mut`.
//! - **`unsafe`**: the slots are `UnsafeCell`s shared between the contexts
//!   (`unsafe impl Sync`, and the two dereferences), argued above; the rest
//!   of the firmware stays safe.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Two slots of `T`, one read, one written (see the module docs).
pub struct Published<T> {
    slots: [UnsafeCell<T>; 2],
    front: AtomicU8,
    fresh: AtomicBool,
}

// SAFETY: the slots are reached only through the one `Reader` (the front
// slot, shared) and the one `Writer` (the back slot, exclusive, only while
// not fresh), which never reach the same slot at once (module docs); `T`
// moves between contexts, hence `T: Send`.
#[allow(unsafe_code)]
unsafe impl<T: Send> Sync for Published<T> {}

impl<T> Published<T> {
    /// Slot 0 in front holding `front`, slot 1 behind holding `back`.
    pub const fn new(front: T, back: T) -> Self {
        Self {
            slots: [UnsafeCell::new(front), UnsafeCell::new(back)],
            front: AtomicU8::new(0),
            fresh: AtomicBool::new(false),
        }
    }

    /// The one reader and the one writer.
    pub fn split(&'static mut self) -> (Reader<T>, Writer<T>) {
        let shared: &'static Self = self;
        (Reader(shared), Writer(shared))
    }
}

/// The reading side (the control loop).
pub struct Reader<T: 'static>(&'static Published<T>);

/// The writing side (the learner).
pub struct Writer<T: 'static>(&'static Published<T>);

impl<T> Reader<T> {
    /// The front slot.
    #[inline(always)]
    pub fn front(&self) -> &T {
        let front = usize::from(self.0.front.load(Ordering::Relaxed) & 1);
        // SAFETY: the writer never writes the front slot, and the front
        // changes only in `switch`, which needs `&mut self`, so it stays the
        // front while this borrow lives (module docs).
        #[allow(unsafe_code)]
        unsafe {
            &*self.0.slots[front].get()
        }
    }

    /// Switches to the published slot if there is one; whether it did.
    #[inline(always)]
    pub fn switch(&mut self) -> bool {
        if !self.0.fresh.load(Ordering::Acquire) {
            return false;
        }
        let front = self.0.front.load(Ordering::Relaxed);
        self.0.front.store(front ^ 1, Ordering::Relaxed);
        self.0.fresh.store(false, Ordering::Release);
        true
    }
}

impl<T> Writer<T> {
    /// Whether the back slot may be written (the last publication was
    /// switched to).
    pub fn ready(&self) -> bool {
        !self.0.fresh.load(Ordering::Acquire)
    }

    /// The back slot, unless a publication is still waiting for the switch.
    pub fn back(&mut self) -> Option<&mut T> {
        if !self.ready() {
            return None;
        }
        let back = usize::from((self.0.front.load(Ordering::Relaxed) & 1) ^ 1);
        // SAFETY: not fresh: the reader does not switch, so it reads only
        // the other slot until `publish`, which needs `&mut self` and so
        // ends this borrow first (module docs).
        #[allow(unsafe_code)]
        Some(unsafe { &mut *self.0.slots[back].get() })
    }

    /// Publishes the back slot: the reader switches to it at its next
    /// [`switch`](Reader::switch).
    pub fn publish(&mut self) {
        self.0.fresh.store(true, Ordering::Release);
    }
}
