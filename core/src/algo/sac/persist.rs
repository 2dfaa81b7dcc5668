//! SAC's part of a checkpoint ([`AgentState`](crate::checkpoint::AgentState)): the actor and the twin
//! critics with their Adam states, the target critics, `log α` with its
//! Adam state, the replay ring (every slot, its size, length and
//! position), the action space and the counters of environment steps and
//! gradient steps (the latter also places the target updates of
//! `target_update_interval`). A refused load changes nothing. Not saved:
//! the activation caches, which every update overwrites before reading,
//! and the configuration, which the caller supplies again.
//!
//! The fingerprint folds the kind, then every saved tensor's shape and the
//! replay ring's `CAP`, `OBS` and `ACT`; `BATCH` is left out (it bounds the
//! minibatch and holds no state). A load keeps the ring's saved size: the
//! configuration's `buffer_size` takes effect at the next
//! [`init`](Sac::init).

use nalgebra::SVector;

use super::{Sac, SquashedGaussianActor};
use crate::algo::offpolicy::Twin;
use crate::algo::replay::ReplayBuffer;
use crate::checkpoint::{Fields, fold};
use crate::env::Continuous;
use crate::nn::Layer;
use crate::optim::TrainState;

crate::checkpoint::agent_state! {
    impl[T, Q, const OBS: usize, const ACT: usize, const OA: usize, const H: usize, const CAP: usize, const BATCH: usize]
    AgentState for Sac<T, Q, OBS, ACT, OA, H, CAP, BATCH>
    where [T: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, H>>, Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,] {
        kind: 7,
        obs: OBS,
        fingerprint: <Self::Saved as Fields>::fold_shapes(fold(0, Self::KIND)),
        self as sac,
        saving {}
        loading { sac.config.validate(CAP, BATCH)?; }
        fields {
            actor: TrainState<SquashedGaussianActor<T, H, ACT>>,
            critic: TrainState<Twin<Q>>,
            critic_target: Twin<Q>,
            log_alpha: TrainState<SVector<f32, 1>>,
            replay: ReplayBuffer<OBS, ACT, CAP>,
            space: Continuous<ACT>,
        }
        scalars { steps: u64, n_updates: u64 }
        read {}
        resumed {
            let adam = sac.config.adam;
            sac.actor.resume_with(adam);
            sac.critic.resume_with(adam);
            sac.log_alpha.resume_with(adam);
        }
    }
}

// The section as one field of a larger agent's (the lagged schedule's
// learner, `algo::Lagged`).
crate::checkpoint::state_field!(
    impl[T, Q, const OBS: usize, const ACT: usize, const OA: usize, const H: usize, const CAP: usize, const BATCH: usize] Sac<T, Q, OBS, ACT, OA, H, CAP, BATCH> where [T: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, H>>, Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,]
);
