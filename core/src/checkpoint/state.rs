//! [`AgentState`]: an agent's checkpoint section, declared as one tuple of
//! [`Field`]s that its length, fingerprint, save and load all walk.

use super::{Reader, Writer};
use crate::error::Error;
use crate::optim::TrainState;
use crate::params::Params;
use crate::serialize::crc32;

/// An agent whose complete training state can be checkpointed at an
/// iteration boundary: every agent of [`algo`](crate::algo) and the lagged
/// shell around one ([`Lagged`](crate::algo::Lagged)).
pub trait AgentState {
    /// Which algorithm (1 PPO/A2C, 2 REINFORCE, 3 online actor-critic,
    /// 4 KL-anchored PPO, 5 TRPO, 6 GRPO, 7 SAC, 8 TD3; a lagged shell
    /// takes its learner's `LAGGED_KIND`: 9 for PPO, 10 for the others).
    const KIND: u32;
    /// Observation size.
    const OBS: usize;
    /// The saved fields, in order: a tuple of [`Field`]s. The section's
    /// length, its fingerprint's shapes, [`save_state`](Self::save_state)
    /// and [`load_state`](Self::load_state) all walk this one list
    /// ([`Fields::save`] and [`Fields::load`] take exactly its members).
    type Saved: Fields;
    /// Bytes of the agent section: the sum over [`Saved`](Self::Saved).
    const LEN: usize = <Self::Saved as Fields>::LEN;
    /// A CRC-32 over the algorithm, its capacities and the shape and kind of
    /// every saved tensor: checkpoints of agents with other networks are
    /// refused.
    fn fingerprint() -> u32;
    /// Writes the agent section (exactly [`LEN`](Self::LEN) bytes).
    ///
    /// # Errors
    /// [`Error::MidIteration`] for a rollout awaiting its update;
    /// [`Error::NonFinite`]/[`Error::OutOfDomain`] for values a resume would
    /// refuse.
    fn save_state(&self, w: &mut Writer<'_>) -> Result<(), Error>;
    /// Reads the agent section, writing into `self` only when
    /// [`r.commit()`](Reader::commit) (a dry pass must check everything
    /// the committing pass could refuse).
    ///
    /// # Errors
    /// As the [`Reader`] methods; [`Error::InvalidConfig`] when `self`'s
    /// configuration does not validate.
    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error>;
}

/// Folds `x` into the fingerprint `h`.
pub(crate) fn fold(h: u32, x: u32) -> u32 {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&h.to_le_bytes());
    b[4..].copy_from_slice(&x.to_le_bytes());
    crc32(&b)
}

/// Folds the shape and kind of every tensor of `P` into `h`.
pub fn fold_shapes<P: Params>(mut h: u32) -> u32 {
    h = fold(h, P::TENSORS as u32);
    for i in 0..P::TENSORS {
        let s = P::shape(i);
        h = fold(fold(fold(h, s.rows), s.cols), s.tag);
    }
    h
}

/// Bytes of a saved [`TrainState`] (parameters, `m`, `v`, `t`).
pub(crate) const fn train_state_len<P: Params>() -> usize {
    3 * 4 * P::LEN + 4
}

pub(crate) fn save_train<P: Params>(w: &mut Writer<'_>, s: &TrainState<P>) -> Result<(), Error> {
    w.params(&s.params, true)?;
    w.params(&s.optimizer.m, false)?;
    w.params(&s.optimizer.v, false)?;
    w.u32(s.optimizer.t);
    Ok(())
}

pub(crate) fn load_train<P: Params>(
    r: &mut Reader<'_>,
    s: &mut TrainState<P>,
) -> Result<(), Error> {
    r.params(&mut s.params, true)?;
    r.params(&mut s.optimizer.m, false)?;
    r.params(&mut s.optimizer.v, false)?;
    let t = r.u32()?;
    if r.commit() {
        s.optimizer.t = t;
    }
    Ok(())
}

/// One saved value of an agent's checkpoint section: a tensor set
/// ([`Params`], saved with its domain checked), a [`TrainState`]
/// (parameters, Adam's moments and step count) or a scalar (`f32`, `u64`).
pub trait Field {
    /// Bytes it takes.
    const LEN: usize;
    /// Folds its tensor shapes into a fingerprint (scalars fold nothing).
    fn fold_shapes(h: u32) -> u32;
    /// Writes it.
    ///
    /// # Errors
    /// [`Error::NonFinite`]/[`Error::OutOfDomain`] for values a resume would refuse.
    fn save(&self, w: &mut Writer<'_>) -> Result<(), Error>;
    /// Reads it: tensors and train states are written only when
    /// [`r.commit()`](Reader::commit); a scalar is always written (load
    /// scalars into locals and assign them on commit, after checking them).
    ///
    /// # Errors
    /// As the [`Reader`] methods.
    fn load(&mut self, r: &mut Reader<'_>) -> Result<(), Error>;
}

impl<P: Params> Field for P {
    const LEN: usize = 4 * P::LEN;
    fn fold_shapes(h: u32) -> u32 {
        fold_shapes::<P>(h)
    }
    fn save(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        w.params(self, true)
    }
    fn load(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        r.params(self, true)
    }
}

impl<P: Params> Field for TrainState<P> {
    const LEN: usize = train_state_len::<P>();
    fn fold_shapes(h: u32) -> u32 {
        fold_shapes::<P>(h)
    }
    fn save(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        save_train(w, self)
    }
    fn load(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        load_train(r, self)
    }
}

impl Field for f32 {
    const LEN: usize = 4;
    fn fold_shapes(h: u32) -> u32 {
        h
    }
    fn save(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        w.f32(*self)
    }
    fn load(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        *self = r.f32()?;
        Ok(())
    }
}

impl Field for u64 {
    const LEN: usize = 8;
    fn fold_shapes(h: u32) -> u32 {
        h
    }
    fn save(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        w.u64(*self);
        Ok(())
    }
    fn load(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        *self = r.u64()?;
        Ok(())
    }
}

/// A tuple of [`Field`]s: an agent's checkpoint section. `save` and `load`
/// take a tuple of references with exactly these members, so the length,
/// the fingerprint and the walk cannot disagree.
pub trait Fields {
    /// Bytes of all the fields.
    const LEN: usize;
    /// The fields by reference, for [`save`](Self::save).
    type Refs<'a>
    where
        Self: 'a;
    /// The fields by mutable reference, for [`load`](Self::load).
    type Muts<'a>
    where
        Self: 'a;
    /// Folds every field's shapes into `h`, in order.
    fn fold_shapes(h: u32) -> u32;
    /// Writes the fields in order.
    ///
    /// # Errors
    /// As [`Field::save`].
    fn save(w: &mut Writer<'_>, fields: Self::Refs<'_>) -> Result<(), Error>;
    /// Reads the fields in order.
    ///
    /// # Errors
    /// As [`Field::load`].
    fn load(r: &mut Reader<'_>, fields: Self::Muts<'_>) -> Result<(), Error>;
}

macro_rules! fields_tuple {
    ($($t:ident $v:ident),+) => {
        impl<$($t: Field),+> Fields for ($($t,)+) {
            const LEN: usize = 0 $(+ $t::LEN)+;
            type Refs<'a> = ($(&'a $t,)+) where Self: 'a;
            type Muts<'a> = ($(&'a mut $t,)+) where Self: 'a;
            fn fold_shapes(h: u32) -> u32 {
                $(let h = $t::fold_shapes(h);)+
                h
            }
            fn save(w: &mut Writer<'_>, ($($v,)+): Self::Refs<'_>) -> Result<(), Error> {
                $($v.save(w)?;)+
                Ok(())
            }
            fn load(r: &mut Reader<'_>, ($($v,)+): Self::Muts<'_>) -> Result<(), Error> {
                $($v.load(r)?;)+
                Ok(())
            }
        }
    };
}
fields_tuple!(A a);
fields_tuple!(A a, B b);
fields_tuple!(A a, B b, C c);
fields_tuple!(A a, B b, C c, D d);
fields_tuple!(A a, B b, C c, D d, E e);
fields_tuple!(A a, B b, C c, D d, E e, F f);
fields_tuple!(A a, B b, C c, D d, E e, F f, G g);
fields_tuple!(A a, B b, C c, D d, E e, F f, G g, H h);

/// Implements [`AgentState`] from one list of the agent's saved fields, in
/// their order in the section: the tensors and train states under
/// `fields`, then the scalars under `scalars`. `Saved`, `save_state` and
/// `load_state` all come from that one list, so a field added to it is
/// saved, loaded and counted in `LEN` at once, and folded into the
/// fingerprint by every `fingerprint` expression that walks `Saved` (all
/// of them do: `Fields::fold_shapes` after the kind).
///
/// - `self as s`: the name the blocks below use for the agent.
/// - `saving`: checks before a save (e.g. [`Error::MidIteration`]).
/// - `loading`: checks before a load (the configuration the caller supplied).
/// - `read`: checks of the scalars just read (bound to their own names),
///   on the dry pass and the committing pass alike.
/// - `resumed`: what a committed load does after the scalars are assigned
///   (Adam's resumed settings, a cleared rollout).
///
/// Everything under `fields` must be written by its [`Field::load`] only
/// on the committing pass (tensors, train states, replay rings, RNG
/// streams, an inner agent's section): a dry pass that writes would leave
/// a refused load's changes behind. The scalars (`f32`, `u64`), whose
/// `load` always writes, go under `scalars`: they are read into locals and
/// assigned on commit. At most 8 saved fields in all (the [`Fields`]
/// tuples).
macro_rules! agent_state {
    (
        impl[$($gen:tt)*] AgentState for $ty:ty where [$($bounds:tt)*] {
            kind: $kind:expr,
            obs: $obs:expr,
            fingerprint: $fingerprint:expr,
            self as $s:ident,
            saving $saving:block
            loading $loading:block
            fields { $($field:ident: $field_ty:ty),+ $(,)? }
            scalars { $($scalar:ident: $scalar_ty:ty),* $(,)? }
            read $read:block
            resumed $resumed:block
        }
    ) => {
        impl<$($gen)*> $crate::checkpoint::AgentState for $ty
        where
            $($bounds)*
        {
            const KIND: u32 = $kind;
            const OBS: usize = $obs;
            type Saved = ($($field_ty,)+ $($scalar_ty,)*);

            fn fingerprint() -> u32 {
                $fingerprint
            }

            fn save_state(
                &self,
                w: &mut $crate::checkpoint::Writer<'_>,
            ) -> ::core::result::Result<(), $crate::Error> {
                let $s = self;
                $saving
                let fields = ($(&$s.$field,)+ $(&$s.$scalar,)*);
                <Self::Saved as $crate::checkpoint::Fields>::save(w, fields)
            }

            fn load_state(
                &mut self,
                r: &mut $crate::checkpoint::Reader<'_>,
            ) -> ::core::result::Result<(), $crate::Error> {
                let $s = self;
                $loading
                $(let mut $scalar: $scalar_ty = ::core::default::Default::default();)*
                let fields = ($(&mut $s.$field,)+ $(&mut $scalar,)*);
                <Self::Saved as $crate::checkpoint::Fields>::load(r, fields)?;
                $read
                if r.commit() {
                    $($s.$scalar = $scalar;)*
                    $resumed
                }
                ::core::result::Result::Ok(())
            }
        }
    };
}
pub(crate) use agent_state;

/// An agent's [`AgentState`] section as one [`Field`] of a larger agent's
/// (a lagged schedule's learner): the same bytes, shapes and checks as its
/// own section, its kind folded into the shapes.
macro_rules! state_field {
    (impl[$($gen:tt)*] $ty:ty where [$($bounds:tt)*]) => {
        impl<$($gen)*> $crate::checkpoint::Field for $ty
        where
            $($bounds)*
        {
            const LEN: usize = <Self as $crate::checkpoint::AgentState>::LEN;

            fn fold_shapes(h: u32) -> u32 {
                <<Self as $crate::checkpoint::AgentState>::Saved as $crate::checkpoint::Fields>::fold_shapes(
                    $crate::checkpoint::fold(h, <Self as $crate::checkpoint::AgentState>::KIND),
                )
            }

            fn save(&self, w: &mut $crate::checkpoint::Writer<'_>) -> Result<(), $crate::Error> {
                $crate::checkpoint::AgentState::save_state(self, w)
            }

            fn load(&mut self, r: &mut $crate::checkpoint::Reader<'_>) -> Result<(), $crate::Error> {
                $crate::checkpoint::AgentState::load_state(self, r)
            }
        }
    };
}
pub(crate) use state_field;

/// The agent section `s` saves, for tests comparing whole learner states.
#[cfg(test)]
pub(crate) fn state_bytes<S: AgentState>(s: &S) -> std::vec::Vec<u8> {
    let mut buf = std::vec![0u8; S::LEN];
    let mut w = Writer {
        buf: &mut buf,
        pos: 0,
        commit: true,
    };
    s.save_state(&mut w).expect("a saveable state");
    assert_eq!(w.pos, S::LEN);
    buf
}

/// The bytes `f` saves as one field.
#[cfg(test)]
pub(crate) fn field_bytes<F: Field>(f: &F) -> std::vec::Vec<u8> {
    let mut buf = std::vec![0u8; F::LEN];
    let mut w = Writer {
        buf: &mut buf,
        pos: 0,
        commit: true,
    };
    f.save(&mut w).expect("a saveable field");
    assert_eq!(w.pos, F::LEN);
    buf
}
