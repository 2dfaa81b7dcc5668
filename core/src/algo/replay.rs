//! Experience replay for the off-policy learners ([`sac`](super::sac),
//! [`td3`](super::td3)).
//!
//! Design:
//! - **Caller-owned, fixed memory.** [`ReplayBuffer<OBS, ACT, CAP>`] holds
//!   `CAP` transitions in arrays inside the value (a `static`, a `Box`, or a
//!   field of an agent); `const fn new()` and [`ReplayBuffer::ZERO`] build
//!   it without touching the stack. Nothing allocates.
//! - **A ring.** Transitions are written at `pos`, which wraps at the
//!   buffer's [`size`](ReplayBuffer::size) (SB3's `buffer_size`, at most
//!   `CAP`): once full, every push overwrites the oldest transition.
//! - **Actions in the actor's space.** The stored action is the one the
//!   actor produced, in `[−1, 1]` per dimension, *before* it was scaled to
//!   the actuator bounds (SB3 stores `scale_action(action)` the same way),
//!   so the critics see actions of one scale whatever the plant's units.
//!   [`push`](ReplayBuffer::push) refuses an action outside `[−1, 1]`.
//! - **Termination, not truncation.** Each transition keeps `terminated`
//!   only: a terminal state's value is 0, so its target does not bootstrap;
//!   a time-limit truncation stores `terminated = false` and the *final*
//!   observation as `next_obs`, so its target bootstraps from it — what
//!   SB3's `handle_timeout_termination = True` does with
//!   `dones · (1 − timeouts)`.
//! - **A refused push changes nothing.** Every value is checked (finite
//!   observation, next observation and reward; action within `[−1, 1]`)
//!   before the ring is written.
//! - **Bit-identical sampling.** [`sample_indices`](ReplayBuffer::sample_indices)
//!   draws uniform indices with replacement (as SB3's `randint`) from the
//!   caller's generator through [`rng::below`] (Lemire's unbiased bounded
//!   integers, integer arithmetic only), so a seed picks the same minibatch
//!   on every platform.

use nalgebra::SVector;
use rand_core::Rng;

use crate::checkpoint::{Field, Reader, Writer, fold};
use crate::error::{Error, check_all_finite, check_finite};
use crate::params::Params;
use crate::rng;

/// One stored transition `(s, a, r, s′, terminated)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transition<const OBS: usize, const ACT: usize> {
    /// The observation the action was taken in, `s`.
    pub obs: SVector<f32, OBS>,
    /// The action in the actor's `[−1, 1]` space (not actuator units).
    pub action: SVector<f32, ACT>,
    /// The reward `r`.
    pub reward: f32,
    /// The observation after the step, `s′` (for a truncated or terminated
    /// step the final observation, before any reset).
    pub next_obs: SVector<f32, OBS>,
    /// `s′` is terminal: the target does not bootstrap from it.
    pub terminated: bool,
}

impl<const OBS: usize, const ACT: usize> Transition<OBS, ACT> {
    /// An all-zero transition.
    pub const ZERO: Self = Self {
        obs: <SVector<f32, OBS> as Params>::ZERO,
        action: <SVector<f32, ACT> as Params>::ZERO,
        reward: 0.0,
        next_obs: <SVector<f32, OBS> as Params>::ZERO,
        terminated: false,
    };

    /// `Ok` when every value may be stored: finite observations and reward,
    /// every action component in `[−1, 1]`.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite observation, next observation,
    /// reward or action component; [`Error::InvalidInput`] for a finite
    /// action component outside `[−1, 1]`.
    pub fn check(&self) -> Result<(), Error> {
        check_all_finite(self.obs.as_slice())?;
        check_all_finite(self.action.as_slice())?;
        check_finite(self.reward)?;
        check_all_finite(self.next_obs.as_slice())?;
        if self.action.iter().all(|a| (-1.0..=1.0).contains(a)) {
            Ok(())
        } else {
            Err(Error::InvalidInput {
                what: "replay action outside the actor's [-1, 1]",
            })
        }
    }
}

/// A replay ring's write position, count and the slot the next push
/// overwrites ([`ReplayBuffer::mark`]): what takes one push back
/// ([`ReplayBuffer::rewind`]), on the stack.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReplayMark<const OBS: usize, const ACT: usize> {
    pos: usize,
    len: usize,
    slot: Option<Transition<OBS, ACT>>,
}

/// A ring of at most `CAP` transitions with `OBS` observations and `ACT`
/// action dimensions (see the [module docs](self)).
///
/// Memory: `CAP · (2·OBS + ACT + 2) · 4` bytes and two words, e.g. 720 KB
/// for 20 000 Pendulum transitions (`OBS = 3`, `ACT = 1`).
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayBuffer<const OBS: usize, const ACT: usize, const CAP: usize> {
    obs: [SVector<f32, OBS>; CAP],
    action: [SVector<f32, ACT>; CAP],
    reward: [f32; CAP],
    next_obs: [SVector<f32, OBS>; CAP],
    terminated: [bool; CAP],
    /// Where the next push writes.
    pos: usize,
    /// Transitions stored (at most `size`).
    len: usize,
    /// Where the ring wraps (`1..=CAP`), or 0 for `CAP` (so that
    /// [`ZERO`](Self::ZERO) is all zero bytes; read it through
    /// [`size`](Self::size)).
    size: usize,
}

impl<const OBS: usize, const ACT: usize, const CAP: usize> ReplayBuffer<OBS, ACT, CAP> {
    /// Indices are drawn as `u32`: the capacity must fit.
    const CAP_FITS_U32: () = assert!(
        CAP > 0 && CAP <= u32::MAX as usize,
        "ReplayBuffer: CAP must be in 1..=u32::MAX"
    );

    /// An empty buffer that wraps at `CAP`, all-zero (it can sit in `.bss`).
    pub const ZERO: Self = {
        let () = Self::CAP_FITS_U32;
        Self {
            obs: [<SVector<f32, OBS> as Params>::ZERO; CAP],
            action: [<SVector<f32, ACT> as Params>::ZERO; CAP],
            reward: [0.0; CAP],
            next_obs: [<SVector<f32, OBS> as Params>::ZERO; CAP],
            terminated: [false; CAP],
            pos: 0,
            len: 0,
            // 0 stands for `CAP`: every byte of `ZERO` is zero, so a
            // `static` agent holding the ring lands in `.bss`, not in the
            // flash image.
            size: 0,
        }
    };

    /// [`ZERO`](Self::ZERO): an empty buffer that wraps at `CAP`.
    pub const fn new() -> Self {
        Self::ZERO
    }

    /// The capacity, `CAP`.
    pub const fn capacity(&self) -> usize {
        CAP
    }

    /// Where the ring wraps: SB3's `buffer_size` (`CAP` unless
    /// [`resize`](Self::resize)d).
    pub const fn size(&self) -> usize {
        if self.size == 0 { CAP } else { self.size }
    }

    /// Transitions stored (at most [`size`](Self::size)).
    pub const fn len(&self) -> usize {
        self.len
    }

    /// `true` when nothing is stored.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `true` once [`size`](Self::size) transitions are stored (every
    /// further push overwrites the oldest).
    pub const fn is_full(&self) -> bool {
        self.len == self.size()
    }

    /// Empties the buffer and makes it wrap at `size` transitions.
    ///
    /// # Errors
    /// `InvalidConfig { field: "buffer_size", .. }` unless `1 ≤ size ≤ CAP`;
    /// nothing changes then.
    pub fn resize(&mut self, size: usize) -> Result<(), Error> {
        crate::config::check(
            "buffer_size",
            (1..=CAP).contains(&size),
            "must be in 1..=CAP (the replay buffer's capacity)",
        )?;
        // `CAP` is stored as 0, as in `ZERO`: one representation per size.
        self.size = if size == CAP { 0 } else { size };
        self.clear();
        Ok(())
    }

    /// Forgets every transition (the memory is not cleared, only the counts).
    pub fn clear(&mut self) {
        self.pos = 0;
        self.len = 0;
    }

    /// What a [`push`](Self::push) may change — the write position, the
    /// count and the slot at the write position — for
    /// [`rewind`](Self::rewind) to take the push back.
    pub fn mark(&self) -> ReplayMark<OBS, ACT> {
        let i = self.pos;
        ReplayMark {
            pos: i,
            len: self.len,
            slot: match (
                self.obs.get(i),
                self.action.get(i),
                self.reward.get(i),
                self.next_obs.get(i),
                self.terminated.get(i),
            ) {
                (Some(&obs), Some(&action), Some(&reward), Some(&next_obs), Some(&terminated)) => {
                    Some(Transition {
                        obs,
                        action,
                        reward,
                        next_obs,
                        terminated,
                    })
                }
                _ => None,
            },
        }
    }

    /// Puts back what [`mark`](Self::mark) saw: the write position, the
    /// count and the slot's bytes — the ring as it was before the pushes
    /// since (at most one push may be taken back this way).
    pub fn rewind(&mut self, mark: &ReplayMark<OBS, ACT>) {
        let i = mark.pos;
        if let (Some(t), Some(obs), Some(action), Some(reward), Some(next_obs), Some(terminated)) = (
            mark.slot,
            self.obs.get_mut(i),
            self.action.get_mut(i),
            self.reward.get_mut(i),
            self.next_obs.get_mut(i),
            self.terminated.get_mut(i),
        ) {
            *obs = t.obs;
            *action = t.action;
            *reward = t.reward;
            *next_obs = t.next_obs;
            *terminated = t.terminated;
        }
        self.pos = mark.pos;
        self.len = mark.len;
    }

    /// Stores `t`, overwriting the oldest transition once full.
    ///
    /// # Errors
    /// As [`Transition::check`]; the buffer is unchanged then.
    pub fn push(&mut self, t: &Transition<OBS, ACT>) -> Result<(), Error> {
        t.check()?;
        // `pos < size ≤ CAP` always holds; `get_mut` keeps the path panic-free.
        let i = self.pos;
        let (Some(obs), Some(action), Some(reward), Some(next_obs), Some(terminated)) = (
            self.obs.get_mut(i),
            self.action.get_mut(i),
            self.reward.get_mut(i),
            self.next_obs.get_mut(i),
            self.terminated.get_mut(i),
        ) else {
            return Err(Error::InvalidState {
                what: "replay position past the capacity",
            });
        };
        *obs = t.obs;
        *action = t.action;
        *reward = t.reward;
        *next_obs = t.next_obs;
        *terminated = t.terminated;
        let size = self.size();
        self.pos = if i + 1 >= size { 0 } else { i + 1 };
        self.len = (self.len + 1).min(size);
        Ok(())
    }

    /// Transition `i` (`0..len`, in storage order: once the ring has wrapped
    /// the oldest is at [`pos`](Self::pos)), or `None` past the end.
    pub fn get(&self, i: usize) -> Option<Transition<OBS, ACT>> {
        if i >= self.len {
            return None;
        }
        self.slot(i)
    }

    /// Where the next push writes (the oldest transition once full).
    pub const fn pos(&self) -> usize {
        self.pos
    }

    /// Fills `out` with indices drawn uniformly from `0..len`, with
    /// replacement, one [`rng::below`] each, in order.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the buffer is empty; `rng` is not
    /// touched then.
    pub fn sample_indices<R: Rng + ?Sized>(
        &self,
        rng: &mut R,
        out: &mut [u32],
    ) -> Result<(), Error> {
        if self.is_empty() {
            return Err(Error::InvalidInput {
                what: "sampling from an empty replay buffer",
            });
        }
        // `len ≤ CAP ≤ u32::MAX` (checked at compile time).
        let n = u32::try_from(self.len).unwrap_or(u32::MAX);
        for index in out {
            *index = rng::below(rng, n);
        }
        Ok(())
    }
}

impl<const OBS: usize, const ACT: usize, const CAP: usize> Default for ReplayBuffer<OBS, ACT, CAP> {
    fn default() -> Self {
        Self::ZERO
    }
}

/// A replay buffer in a checkpoint (the agents' [`AgentState`](crate::checkpoint::AgentState)):
/// `size`, `len` and `pos` as `u32`, then all `CAP` slots in storage order,
/// each `obs`, `action`, `reward`, `next_obs` (as `f32` bits) and
/// `terminated` (a `u32` 0 or 1). Every slot is saved, stored or not, so
/// the section has one length and the ring comes back exactly as it was.
///
/// Loading checks everything before a committing pass writes: `1 ≤ size ≤
/// CAP`, `len ≤ size`, `pos < size` and `pos = len` until the ring is full
/// ([`Error::InvalidState`]); finite values ([`Error::NonFinite`]); actions
/// in `[−1, 1]` and flags 0 or 1 ([`Error::OutOfDomain`],
/// [`Error::InvalidState`]).
impl<const OBS: usize, const ACT: usize, const CAP: usize> Field for ReplayBuffer<OBS, ACT, CAP> {
    const LEN: usize = 3 * 4 + CAP * (4 * (2 * OBS + ACT + 1) + 4);

    fn fold_shapes(h: u32) -> u32 {
        fold(fold(fold(h, CAP as u32), OBS as u32), ACT as u32)
    }

    fn save(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        check_counters(CAP, self.size(), self.len, self.pos)?;
        // `CAP ≤ u32::MAX` (checked at compile time), so the counters fit.
        w.u32(self.size() as u32);
        w.u32(self.len as u32);
        w.u32(self.pos as u32);
        for i in 0..CAP {
            let t = self.slot(i).ok_or(Error::InvalidState {
                what: "replay slot past the capacity",
            })?;
            check_action(&t.action)?;
            write_vector(w, &t.obs)?;
            write_vector(w, &t.action)?;
            w.f32(t.reward)?;
            write_vector(w, &t.next_obs)?;
            w.u32(u32::from(t.terminated));
        }
        Ok(())
    }

    fn load(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        let (size, len, pos) = (r.u32()? as usize, r.u32()? as usize, r.u32()? as usize);
        check_counters(CAP, size, len, pos)?;
        for i in 0..CAP {
            let obs = read_vector(r)?;
            let action = read_vector(r)?;
            check_action(&action)?;
            let reward = r.f32()?;
            let next_obs = read_vector(r)?;
            let terminated = r.flag()?;
            if r.commit() {
                let (Some(o), Some(a), Some(rw), Some(n), Some(d)) = (
                    self.obs.get_mut(i),
                    self.action.get_mut(i),
                    self.reward.get_mut(i),
                    self.next_obs.get_mut(i),
                    self.terminated.get_mut(i),
                ) else {
                    return Err(Error::InvalidState {
                        what: "replay slot past the capacity",
                    });
                };
                (*o, *a, *rw, *n, *d) = (obs, action, reward, next_obs, terminated);
            }
        }
        if r.commit() {
            let size = if size == CAP { 0 } else { size };
            (self.size, self.len, self.pos) = (size, len, pos);
        }
        Ok(())
    }
}

impl<const OBS: usize, const ACT: usize, const CAP: usize> ReplayBuffer<OBS, ACT, CAP> {
    /// Slot `i` (`0..CAP`) whether stored or not.
    fn slot(&self, i: usize) -> Option<Transition<OBS, ACT>> {
        Some(Transition {
            obs: *self.obs.get(i)?,
            action: *self.action.get(i)?,
            reward: *self.reward.get(i)?,
            next_obs: *self.next_obs.get(i)?,
            terminated: *self.terminated.get(i)?,
        })
    }
}

/// `1 ≤ size ≤ cap`, `len ≤ size`, `pos < size`, and `pos = len` until the
/// ring is full: the states [`ReplayBuffer::push`] can reach.
fn check_counters(cap: usize, size: usize, len: usize, pos: usize) -> Result<(), Error> {
    if (1..=cap).contains(&size) && len <= size && pos < size && (len == size || pos == len) {
        Ok(())
    } else {
        Err(Error::InvalidState {
            what: "replay size, length or position out of range",
        })
    }
}

fn check_action<const ACT: usize>(action: &SVector<f32, ACT>) -> Result<(), Error> {
    if action.iter().all(|a| (-1.0..=1.0).contains(a)) {
        Ok(())
    } else {
        Err(Error::OutOfDomain {
            tensor: 1,
            reason: "replay actions must lie in [-1, 1]",
        })
    }
}

fn write_vector<const N: usize>(w: &mut Writer<'_>, v: &SVector<f32, N>) -> Result<(), Error> {
    for &x in v.iter() {
        w.f32(x)?;
    }
    Ok(())
}

fn read_vector<const N: usize>(r: &mut Reader<'_>) -> Result<SVector<f32, N>, Error> {
    let mut v = SVector::<f32, N>::zeros();
    for x in v.iter_mut() {
        *x = r.f32()?;
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::fd;
    use std::boxed::Box;
    use std::vec::Vec;

    fn transition(k: usize) -> Transition<2, 1> {
        let x = k as f32;
        Transition {
            obs: SVector::<f32, 2>::new(x, -x),
            action: SVector::<f32, 1>::new(0.5 * (k % 3) as f32 - 0.5),
            reward: 10.0 * x,
            next_obs: SVector::<f32, 2>::new(x + 1.0, -x - 1.0),
            terminated: k % 4 == 3,
        }
    }

    /// A ring buffer can be a `static`.
    static STATIC_BUFFER: ReplayBuffer<3, 1, 64> = ReplayBuffer::new();

    #[test]
    fn is_static_friendly() {
        assert!(STATIC_BUFFER.is_empty());
        assert!(!STATIC_BUFFER.is_full());
        assert_eq!(STATIC_BUFFER.capacity(), 64);
        assert_eq!(STATIC_BUFFER.size(), 64);
    }

    /// `ZERO` stores its size as 0 (all zero bytes) and wraps at `CAP`,
    /// and `resize(CAP)` gives the same buffer, not a second representation.
    #[test]
    fn zero_wraps_at_cap_and_resize_to_cap_is_the_same_buffer() {
        let mut buffer = Box::new(ReplayBuffer::<2, 1, 4>::ZERO);
        for k in 0..4 {
            assert!(!buffer.is_full());
            buffer.push(&transition(k)).unwrap();
        }
        assert!(buffer.is_full());
        assert_eq!((buffer.len(), buffer.pos(), buffer.size()), (4, 0, 4));
        let mut resized = Box::new(ReplayBuffer::<2, 1, 4>::ZERO);
        resized.resize(4).unwrap();
        assert!(*resized == ReplayBuffer::<2, 1, 4>::ZERO);
    }

    #[test]
    fn fills_then_overwrites_the_oldest() {
        let mut buffer = Box::new(ReplayBuffer::<2, 1, 8>::ZERO);
        buffer.resize(5).unwrap();
        for k in 0..5 {
            assert!(!buffer.is_full());
            buffer.push(&transition(k)).unwrap();
            assert_eq!(buffer.len(), k + 1);
        }
        assert!(buffer.is_full());
        assert_eq!(buffer.pos(), 0);
        // Two more: slots 0 and 1 now hold transitions 5 and 6.
        buffer.push(&transition(5)).unwrap();
        buffer.push(&transition(6)).unwrap();
        assert_eq!(buffer.len(), 5);
        assert_eq!(buffer.pos(), 2);
        let stored: Vec<f32> = (0..5).map(|i| buffer.get(i).unwrap().reward).collect();
        assert_eq!(stored, [50.0, 60.0, 20.0, 30.0, 40.0]);
        assert_eq!(buffer.get(0), Some(transition(5)));
        assert_eq!(buffer.get(5), None);
    }

    #[test]
    fn refused_pushes_change_nothing() {
        let mut buffer = Box::new(ReplayBuffer::<2, 1, 4>::ZERO);
        buffer.push(&transition(0)).unwrap();
        let before = buffer.clone();
        let mut bad = [transition(1); 5];
        bad[0].reward = f32::NAN;
        bad[1].obs[1] = f32::INFINITY;
        bad[2].next_obs[0] = f32::NAN;
        bad[3].action[0] = f32::NAN;
        for t in &bad[..4] {
            assert_eq!(buffer.push(t), Err(Error::NonFinite));
        }
        bad[4].action[0] = 1.0001;
        assert!(matches!(
            buffer.push(&bad[4]),
            Err(Error::InvalidInput { .. })
        ));
        assert_eq!(buffer, before);
        assert_eq!(
            buffer.resize(5),
            Err(Error::config(
                "buffer_size",
                "must be in 1..=CAP (the replay buffer's capacity)"
            ))
        );
        assert_eq!(buffer, before);
    }

    #[test]
    fn sampling_is_uniform_seeded_and_refuses_an_empty_buffer() {
        let mut buffer = Box::new(ReplayBuffer::<2, 1, 16>::ZERO);
        let mut rng = fd::rng(3);
        let mut idx = [0u32; 4];
        let untouched = rng.clone();
        assert!(matches!(
            buffer.sample_indices(&mut rng, &mut idx),
            Err(Error::InvalidInput { .. })
        ));
        assert_eq!(rng, untouched);
        for k in 0..6 {
            buffer.push(&transition(k)).unwrap();
        }
        let mut counts = [0u32; 6];
        let mut batch = [0u32; 60];
        for _ in 0..1000 {
            buffer.sample_indices(&mut rng, &mut batch).unwrap();
            for &i in &batch {
                counts[i as usize] += 1;
            }
        }
        for c in counts {
            assert!((c as i64 - 10_000).abs() < 400, "{counts:?}");
        }
        // The indices are `rng::below(len)` draws in order: reproducible.
        let (mut a, mut b) = ([0u32; 8], [0u32; 8]);
        buffer.sample_indices(&mut fd::rng(9), &mut a).unwrap();
        let mut r = fd::rng(9);
        for x in &mut b {
            *x = rng::below(&mut r, 6);
        }
        assert_eq!(a, b);
    }
}
