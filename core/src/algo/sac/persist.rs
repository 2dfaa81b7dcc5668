//! SAC's part of a checkpoint ([`AgentState`]): the actor and the twin
//! critics with their Adam states, the target critics, `log α` with its
//! Adam state, the replay ring (every slot, its size, length and
//! position), the action space and the counters of environment steps and
//! gradient steps (the latter also places the target updates of
//! `target_update_interval`). A refused load changes nothing. Not saved:
//! the activation caches, which every update overwrites before reading,
//! and the configuration, which the caller supplies again.

use nalgebra::SVector;

use super::{Sac, SquashedGaussianActor};
use crate::algo::offpolicy::Twin;
use crate::algo::replay::ReplayBuffer;
use crate::checkpoint::{AgentState, Fields, Reader, Writer, fold};
use crate::env::Continuous;
use crate::error::Error;
use crate::nn::Layer;
use crate::optim::TrainState;

impl<
    T,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const H: usize,
    const CAP: usize,
    const BATCH: usize,
> AgentState for Sac<T, Q, OBS, ACT, OA, H, CAP, BATCH>
where
    T: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, H>>,
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    const KIND: u32 = 7;
    const OBS: usize = OBS;
    type Saved = (
        TrainState<SquashedGaussianActor<T, H, ACT>>,
        TrainState<Twin<Q>>,
        Twin<Q>,
        TrainState<SVector<f32, 1>>,
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
            &self.critic,
            &self.critic_target,
            &self.log_alpha,
            &self.replay,
            &self.space,
            &self.steps,
            &self.n_updates,
        );
        <Self::Saved as Fields>::save(w, fields)
    }

    /// The ring keeps its saved size (the configuration's `buffer_size`
    /// takes effect at the next [`init`](Sac::init)).
    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        self.config.validate(CAP, BATCH)?;
        let (mut steps, mut n_updates) = (0, 0);
        let fields = (
            &mut self.actor,
            &mut self.critic,
            &mut self.critic_target,
            &mut self.log_alpha,
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
            self.log_alpha.resume_with(adam);
        }
        Ok(())
    }
}

// The section as one field of a larger agent's (the lagged schedule's
// learner, `algo::Lagged`).
crate::checkpoint::state_field!(
    impl[T, Q, const OBS: usize, const ACT: usize, const OA: usize, const H: usize, const CAP: usize, const BATCH: usize] Sac<T, Q, OBS, ACT, OA, H, CAP, BATCH> where [T: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, H>>, Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,]
);
