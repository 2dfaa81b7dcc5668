//! TD3's part of a checkpoint ([`AgentState`]): the actor and the twin
//! critics with their Adam states, the target actor and critics, the
//! replay ring (every slot, its size, length and position), the action
//! space and the counters of environment steps and critic updates (the
//! latter is also the phase of the delayed actor and target updates,
//! every `policy_delay`-th). A refused load changes nothing. Not saved:
//! the activation caches, which every update overwrites before reading,
//! and the configuration, which the caller supplies again.

use nalgebra::SVector;

use super::Td3;
use crate::algo::offpolicy::Twin;
use crate::algo::replay::ReplayBuffer;
use crate::checkpoint::{AgentState, Fields, Reader, Writer, fold};
use crate::env::Continuous;
use crate::error::Error;
use crate::nn::Layer;
use crate::optim::TrainState;

impl<
    N,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const CAP: usize,
    const BATCH: usize,
> AgentState for Td3<N, Q, OBS, ACT, OA, CAP, BATCH>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    const KIND: u32 = 8;
    const OBS: usize = OBS;
    type Saved = (
        TrainState<N>,
        N,
        TrainState<Twin<Q>>,
        Twin<Q>,
        ReplayBuffer<OBS, ACT, CAP>,
        Continuous<ACT>,
        u64,
        u64,
    );

    /// The kind, then every saved tensor's shape and the replay ring's
    /// `CAP`, `OBS` and `ACT`. `BATCH` is left out: it bounds the
    /// minibatch (`batch_size`) and holds no state.
    fn fingerprint() -> u32 {
        <Self::Saved as Fields>::fold_shapes(fold(0, Self::KIND))
    }

    fn save_state(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        let fields = (
            &self.actor,
            &self.actor_target,
            &self.critic,
            &self.critic_target,
            &self.replay,
            &self.space,
            &self.steps,
            &self.n_updates,
        );
        <Self::Saved as Fields>::save(w, fields)
    }

    /// The ring keeps its saved size (the configuration's `buffer_size`
    /// takes effect at the next [`init`](Td3::init)).
    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        self.config.validate(CAP, BATCH)?;
        let (mut steps, mut n_updates) = (0, 0);
        let fields = (
            &mut self.actor,
            &mut self.actor_target,
            &mut self.critic,
            &mut self.critic_target,
            &mut self.replay,
            &mut self.space,
            &mut steps,
            &mut n_updates,
        );
        <Self::Saved as Fields>::load(r, fields)?;
        if r.commit() {
            self.steps = steps;
            self.n_updates = n_updates;
            let adam = self.config.adam;
            self.actor.resume_with(adam);
            self.critic.resume_with(adam);
        }
        Ok(())
    }
}

// The section as one field of a larger agent's (the lagged schedule's
// learner, `algo::Lagged`).
crate::checkpoint::state_field!(
    impl[N, Q, const OBS: usize, const ACT: usize, const OA: usize, const CAP: usize, const BATCH: usize] Td3<N, Q, OBS, ACT, OA, CAP, BATCH> where [N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>, Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,]
);
