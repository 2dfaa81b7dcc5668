//! [`Lagged`]'s part of a checkpoint ([`AgentState`]): the learner's own
//! section (as the learner saves it, its kind folded into the fingerprint),
//! the published behaviour the control loop acts with, the pending block of
//! ticks (every slot, and how many are filled), the control loop's RNG
//! stream and the publish count. A run stopped between two iterations
//! resumes bit for bit: the pending block is the one the learner steps
//! through next. (The last block's gradient steps are not saved: the
//! trainer reads them only right after the iteration that sets them.)

use super::{ActionOf, Lagged, Pending, TickLearner};
use crate::algo::ppo::lagged::TickAction;
use crate::checkpoint::{AgentState, Field, Fields, Reader, Writer, fold};
use crate::error::Error;
use crate::rng::Xoshiro128pp;

impl<L, const OBS: usize, const BLOCK: usize> AgentState for Lagged<L, OBS, BLOCK>
where
    L: TickLearner<OBS> + Field,
    L::Behaviour: Field,
    ActionOf<L::Behaviour, OBS>: TickAction,
{
    const KIND: u32 = 10;
    const OBS: usize = OBS;
    type Saved = (
        L,
        L::Behaviour,
        Pending<OBS, ActionOf<L::Behaviour, OBS>, BLOCK>,
        Xoshiro128pp,
        u64,
    );

    fn fingerprint() -> u32 {
        <Self::Saved as Fields>::fold_shapes(fold(0, Self::KIND))
    }

    fn save_state(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        let fields = (
            &self.learner,
            &self.published,
            &self.pending,
            &self.acting_rng,
            &self.published_count,
        );
        <Self::Saved as Fields>::save(w, fields)
    }

    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        let fields = (
            &mut self.learner,
            &mut self.published,
            &mut self.pending,
            &mut self.acting_rng,
            &mut self.published_count,
        );
        <Self::Saved as Fields>::load(r, fields)
    }
}
