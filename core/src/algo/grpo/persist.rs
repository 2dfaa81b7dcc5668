//! GRPO's part of a checkpoint: the actor with Adam, the action space, the
//! normaliser and the step count (no critic, no rollout: an iteration
//! collects whole groups).

use super::Grpo;
use crate::algo::Actor;
use crate::checkpoint::{Fields, fold};
use crate::error::Error;
use crate::normalize::RunningNorm;
use crate::optim::TrainState;

crate::checkpoint::agent_state! {
    impl[A: Actor<OBS>, const OBS: usize, const N: usize, const CHUNK: usize]
    AgentState for Grpo<A, OBS, N, CHUNK> where [] {
        kind: 6,
        obs: OBS,
        fingerprint: <Self::Saved as Fields>::fold_shapes(fold(fold(0, Self::KIND), N as u32)),
        self as grpo,
        saving {
            if grpo.rollout.samples.is_ready() {
                return Err(Error::MidIteration);
            }
        }
        loading { grpo.config.validate()?; }
        fields {
            train: TrainState<A>,
            space: A::Space,
            obs_norm: RunningNorm<OBS>,
        }
        scalars { steps: u64 }
        read {}
        resumed { grpo.train.resume_with(grpo.config.adam); }
    }
}
