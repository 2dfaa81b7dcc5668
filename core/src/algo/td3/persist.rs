//! TD3's part of a checkpoint ([`AgentState`](crate::checkpoint::AgentState)): the actor and the twin
//! critics with their Adam states, the target actor and critics, the
//! replay ring (every slot, its size, length and position), the action
//! space and the counters of environment steps and critic updates (the
//! latter is also the phase of the delayed actor and target updates,
//! every `policy_delay`-th). A refused load changes nothing. Not saved:
//! the activation caches, which every update overwrites before reading,
//! and the configuration, which the caller supplies again.
//!
//! The fingerprint folds the kind, then every saved tensor's shape and the
//! replay ring's `CAP`, `OBS` and `ACT`; `BATCH` is left out (it bounds the
//! minibatch and holds no state). A load keeps the ring's saved size: the
//! configuration's `buffer_size` takes effect at the next
//! [`init`](Td3::init).

use nalgebra::SVector;

use super::Td3;
use crate::algo::offpolicy::Twin;
use crate::algo::replay::ReplayBuffer;
use crate::checkpoint::{Fields, fold};
use crate::env::Continuous;
use crate::nn::Layer;
use crate::optim::TrainState;

crate::checkpoint::agent_state! {
    impl[N, Q, const OBS: usize, const ACT: usize, const OA: usize, const CAP: usize, const BATCH: usize]
    AgentState for Td3<N, Q, OBS, ACT, OA, CAP, BATCH>
    where [N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>, Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,] {
        kind: 8,
        obs: OBS,
        fingerprint: <Self::Saved as Fields>::fold_shapes(fold(0, Self::KIND)),
        self as td3,
        saving {}
        loading { td3.config.validate(CAP, BATCH)?; }
        fields {
            actor: TrainState<N>,
            actor_target: N,
            critic: TrainState<Twin<Q>>,
            critic_target: Twin<Q>,
            replay: ReplayBuffer<OBS, ACT, CAP>,
            space: Continuous<ACT>,
        }
        scalars { steps: u64, n_updates: u64 }
        read {}
        resumed {
            let adam = td3.config.adam;
            td3.actor.resume_with(adam);
            td3.critic.resume_with(adam);
        }
    }
}

// The section as one field of a larger agent's (the lagged schedule's
// learner, `algo::Lagged`).
crate::checkpoint::state_field!(
    impl[N, Q, const OBS: usize, const ACT: usize, const OA: usize, const CAP: usize, const BATCH: usize] Td3<N, Q, OBS, ACT, OA, CAP, BATCH> where [N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>, Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,]
);
