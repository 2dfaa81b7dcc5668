//! [`LaggedAc`]'s part of a checkpoint ([`AgentState`]): the learner's own
//! section (as [`ActorCritic`] saves it), the published policy the control
//! loop acts with, the pending block of ticks (every slot, and how many are
//! filled), the control loop's RNG stream and the publish count — the
//! layout of `LaggedPpo`'s, with a block in place of a rollout. A run
//! stopped between two iterations resumes bit for bit: the pending block is
//! the one the learner steps through next.

use super::{ActorCritic, LaggedAc, Pending};
use crate::algo::Actor;
use crate::algo::ppo::lagged::TickAction;
use crate::checkpoint::{AgentState, Fields, Reader, Writer, fold};
use crate::error::Error;
use crate::nn::Network;
use crate::policy::Policy;
use crate::rng::Xoshiro128pp;

impl<A, C, const OBS: usize, const BLOCK: usize> AgentState for LaggedAc<A, C, OBS, BLOCK>
where
    A: Actor<OBS>,
    A::Action: TickAction,
    C: Network<OBS, 1>,
{
    const KIND: u32 = 10;
    const OBS: usize = OBS;
    type Saved = (
        ActorCritic<A, C, OBS>,
        Policy<A, OBS>,
        Pending<OBS, A::Action, BLOCK>,
        Xoshiro128pp,
        u64,
    );

    fn fingerprint() -> u32 {
        <Self::Saved as Fields>::fold_shapes(fold(0, Self::KIND))
    }

    fn save_state(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        let fields = (
            &self.ac,
            &self.published,
            &self.pending,
            &self.acting_rng,
            &self.published_count,
        );
        <Self::Saved as Fields>::save(w, fields)
    }

    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        let fields = (
            &mut self.ac,
            &mut self.published,
            &mut self.pending,
            &mut self.acting_rng,
            &mut self.published_count,
        );
        <Self::Saved as Fields>::load(r, fields)
    }
}
