//! [`Lagged`]'s part of a checkpoint ([`AgentState`](crate::checkpoint::AgentState)): the learner's own
//! section (as the learner saves it, its kind folded into the fingerprint;
//! the wrapper's kind is the learner's
//! [`LAGGED_KIND`](super::LaggedLearner::LAGGED_KIND)),
//! the published behaviour the control loop acts with, the pending block of
//! ticks (every slot, and how many are filled), the control loop's RNG
//! stream and the publish count. A run stopped between two iterations
//! resumes bit for bit: the pending block is the one the learner learns
//! from next. (The last block's gradient steps are not saved: the
//! trainer reads them only right after the iteration that sets them.)

use nalgebra::SVector;

use super::{ActionOf, Lagged, LaggedLearner, Pending, Tick};
use crate::checkpoint::{Field, Fields, Reader, Writer, fold};
use crate::error::Error;
use crate::rng::Xoshiro128pp;

/// An action as checkpoint words: a discrete index as one `u32`, a
/// continuous action as its `f32`s.
pub trait TickAction: Copy {
    /// Words (4 bytes each) an action takes.
    const WORDS: usize;
    /// Writes the action.
    ///
    /// # Errors
    /// [`Error::InvalidState`] for an index beyond `u32`, [`Error::NonFinite`]
    /// for a non-finite component.
    fn save(&self, w: &mut Writer<'_>) -> Result<(), Error>;
    /// Reads an action.
    ///
    /// # Errors
    /// [`Error::Truncated`] past the end, [`Error::NonFinite`] for a
    /// non-finite component.
    fn load(r: &mut Reader<'_>) -> Result<Self, Error>;
}

impl TickAction for usize {
    const WORDS: usize = 1;
    fn save(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        let index = u32::try_from(*self).map_err(|_| Error::InvalidState {
            what: "discrete action beyond u32",
        })?;
        w.u32(index);
        Ok(())
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, Error> {
        Ok(r.u32()? as usize)
    }
}

impl<const A: usize> TickAction for SVector<f32, A> {
    const WORDS: usize = A;
    fn save(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        save_vector(w, self)
    }
    fn load(r: &mut Reader<'_>) -> Result<Self, Error> {
        load_vector(r)
    }
}

fn save_vector<const N: usize>(w: &mut Writer<'_>, v: &SVector<f32, N>) -> Result<(), Error> {
    v.iter().try_for_each(|&x| w.f32(x))
}

fn load_vector<const N: usize>(r: &mut Reader<'_>) -> Result<SVector<f32, N>, Error> {
    let mut v = SVector::<f32, N>::zeros();
    for x in v.iter_mut() {
        *x = r.f32()?;
    }
    Ok(v)
}

/// The pending block: its length as a `u32`, then all `N` slots (filled
/// or not, so the section has one length), each `obs`, `action`,
/// `log_prob`, `reward`, the flags (`terminated` + 2·`truncated` as a
/// `u32`) and `next_obs`. Loading refuses a length above `N` or flags
/// above 3 ([`Error::InvalidState`]) before a committing pass writes.
impl<const OBS: usize, A: TickAction, const N: usize> Field for Pending<OBS, A, N> {
    const LEN: usize = 4 + N * 4 * (2 * OBS + A::WORDS + 3);

    fn fold_shapes(h: u32) -> u32 {
        fold(fold(fold(h, N as u32), OBS as u32), A::WORDS as u32)
    }

    fn save(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        let len = u32::try_from(self.len)
            .ok()
            .filter(|_| self.len <= N)
            .ok_or(Error::InvalidState {
                what: "pending ticks beyond the rollout capacity",
            })?;
        w.u32(len);
        for t in &self.ticks {
            save_vector(w, &t.obs)?;
            t.action.save(w)?;
            w.f32(t.log_prob)?;
            w.f32(t.reward)?;
            w.u32(u32::from(t.terminated) + 2 * u32::from(t.truncated));
            save_vector(w, &t.next_obs)?;
        }
        Ok(())
    }

    fn load(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        let len = r.u32()? as usize;
        if len > N {
            return Err(Error::InvalidState {
                what: "pending ticks beyond the rollout capacity",
            });
        }
        for i in 0..N {
            let obs = load_vector(r)?;
            let action = A::load(r)?;
            let (log_prob, reward) = (r.f32()?, r.f32()?);
            let flags = r.u32()?;
            if flags > 3 {
                return Err(Error::InvalidState {
                    what: "tick flags other than terminated/truncated",
                });
            }
            let next_obs = load_vector(r)?;
            if r.commit() {
                self.ticks[i] = Tick {
                    obs,
                    action,
                    log_prob,
                    reward,
                    terminated: flags & 1 != 0,
                    truncated: flags & 2 != 0,
                    next_obs,
                };
            }
        }
        if r.commit() {
            self.len = len;
        }
        Ok(())
    }
}

/// The control loop's RNG stream: its four state words.
impl Field for Xoshiro128pp {
    const LEN: usize = 16;

    fn fold_shapes(h: u32) -> u32 {
        h
    }

    fn save(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        let mut words = [0u32; 4];
        crate::rng::RngState::save_state(self, &mut words);
        words.iter().for_each(|&x| w.u32(x));
        Ok(())
    }

    fn load(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        let words = [r.u32()?, r.u32()?, r.u32()?, r.u32()?];
        let rng = <Self as crate::rng::RngState>::from_state(&words)?;
        if r.commit() {
            *self = rng;
        }
        Ok(())
    }
}

// The publish count is a scalar: read into a local and assigned only when
// the load commits, so a checkpoint refused later (by an environment's
// section) leaves it as it was.
crate::checkpoint::agent_state! {
    impl[L, const OBS: usize, const BLOCK: usize] AgentState for Lagged<L, OBS, BLOCK>
    where [
        L: LaggedLearner<OBS> + Field,
        L::Behaviour: Field,
        ActionOf<L::Behaviour, OBS>: TickAction,
    ] {
        kind: L::LAGGED_KIND,
        obs: OBS,
        fingerprint: <Self::Saved as Fields>::fold_shapes(fold(0, Self::KIND)),
        self as lagged,
        saving {}
        loading {}
        fields {
            learner: L,
            published: L::Behaviour,
            pending: Pending<OBS, ActionOf<L::Behaviour, OBS>, BLOCK>,
            acting_rng: Xoshiro128pp,
        }
        scalars { published_count: u64 }
        read {}
        resumed {}
    }
}
