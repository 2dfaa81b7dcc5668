//! GRPO's part of a checkpoint: the actor with Adam, the action space, the
//! normaliser and the step count (no critic, no rollout: an iteration
//! collects whole groups).

use super::Grpo;
use crate::algo::Actor;
use crate::checkpoint::{AgentState, Fields, Reader, Writer, fold};
use crate::error::Error;
use crate::normalize::RunningNorm;
use crate::optim::TrainState;

impl<A: Actor<OBS>, const OBS: usize, const N: usize, const CHUNK: usize> AgentState
    for Grpo<A, OBS, N, CHUNK>
{
    const KIND: u32 = 6;
    const OBS: usize = OBS;
    type Saved = (TrainState<A>, A::Space, RunningNorm<OBS>, u64);

    fn fingerprint() -> u32 {
        <Self::Saved as Fields>::fold_shapes(fold(fold(0, Self::KIND), N as u32))
    }

    fn save_state(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        if self.rollout.samples.is_ready() {
            return Err(Error::MidIteration);
        }
        let fields = (&self.train, &self.space, &self.obs_norm, &self.steps);
        <Self::Saved as Fields>::save(w, fields)
    }

    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        self.config.validate()?;
        let mut steps = 0;
        let fields = (
            &mut self.train,
            &mut self.space,
            &mut self.obs_norm,
            &mut steps,
        );
        <Self::Saved as Fields>::load(r, fields)?;
        if r.commit() {
            self.steps = steps;
            self.train.resume_with(self.config.adam);
        }
        Ok(())
    }
}
