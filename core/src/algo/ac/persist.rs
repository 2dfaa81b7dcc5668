//! The online actor-critic's part of a checkpoint: actor and critic with
//! their own Adam, the action space, the observation and return
//! normalisers, the running discounted return and the step count.

use super::ActorCritic;
use crate::algo::Actor;
use crate::checkpoint::{AgentState, Fields, Reader, Writer, fold};
use crate::error::Error;
use crate::nn::Network;
use crate::normalize::RunningNorm;
use crate::optim::TrainState;

impl<A: Actor<OBS>, C: Network<OBS, 1>, const OBS: usize> AgentState for ActorCritic<A, C, OBS> {
    const KIND: u32 = 3;
    const OBS: usize = OBS;
    type Saved = (
        TrainState<A>,
        TrainState<C>,
        A::Space,
        RunningNorm<OBS>,
        RunningNorm<1>,
        f32,
        u64,
    );

    fn fingerprint() -> u32 {
        <Self::Saved as Fields>::fold_shapes(fold(0, Self::KIND))
    }

    fn save_state(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        let fields = (
            &self.actor,
            &self.critic,
            &self.space,
            &self.obs_norm,
            &self.return_norm,
            &self.discounted_return,
            &self.steps,
        );
        <Self::Saved as Fields>::save(w, fields)
    }

    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        self.config.validate()?;
        let mut steps = 0;
        let mut discounted_return = 0.0;
        let fields = (
            &mut self.actor,
            &mut self.critic,
            &mut self.space,
            &mut self.obs_norm,
            &mut self.return_norm,
            &mut discounted_return,
            &mut steps,
        );
        <Self::Saved as Fields>::load(r, fields)?;
        if r.commit() {
            self.steps = steps;
            self.discounted_return = discounted_return;
            self.actor.resume_with(self.config.adam);
            self.critic.resume_with(self.config.adam);
        }
        Ok(())
    }
}

// The actor-critic's section as one field of a larger agent's (the lagged
// schedule's learner).
crate::checkpoint::state_field!(
    impl[A: Actor<OBS>, C: Network<OBS, 1>, const OBS: usize] ActorCritic<A, C, OBS> where []
);
