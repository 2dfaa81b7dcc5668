//! The online actor-critic's part of a checkpoint: actor and critic with
//! their own Adam, the action space, the observation and return
//! normalisers, the running discounted return and the step count.

use super::ActorCritic;
use crate::algo::Actor;
use crate::checkpoint::{Fields, fold};
use crate::nn::Network;
use crate::normalize::RunningNorm;
use crate::optim::TrainState;

crate::checkpoint::agent_state! {
    impl[A: Actor<OBS>, C: Network<OBS, 1>, const OBS: usize]
    AgentState for ActorCritic<A, C, OBS> where [] {
        kind: 3,
        obs: OBS,
        fingerprint: <Self::Saved as Fields>::fold_shapes(fold(0, Self::KIND)),
        self as ac,
        saving {}
        loading { ac.config.validate()?; }
        fields {
            actor: TrainState<A>,
            critic: TrainState<C>,
            space: A::Space,
            obs_norm: RunningNorm<OBS>,
            return_norm: RunningNorm<1>,
        }
        scalars { discounted_return: f32, steps: u64 }
        read {}
        resumed {
            ac.actor.resume_with(ac.config.adam);
            ac.critic.resume_with(ac.config.adam);
        }
    }
}

// The actor-critic's section as one field of a larger agent's (the lagged
// schedule's learner).
crate::checkpoint::state_field!(
    impl[A: Actor<OBS>, C: Network<OBS, 1>, const OBS: usize] ActorCritic<A, C, OBS> where []
);
