//! PPO's part of a checkpoint ([`AgentState`]): Adam over actor and critic,
//! the action space, both normalisers, the running discounted return, `β`
//! and the step count. The rollout is not saved: a checkpoint is taken
//! between iterations, never mid-rollout.

use super::{ActorCriticParams, KL_COEF_MAX, Ppo};
use crate::algo::{Actor, Critic};
use crate::checkpoint::{AgentState, Fields, Reader, Writer, fold};
use crate::error::Error;
use crate::normalize::RunningNorm;
use crate::optim::TrainState;

/// `β` as saved: finite and within `0..=KL_COEF_MAX`.
pub(crate) fn check_kl_coef(kl_coef: f32) -> Result<(), Error> {
    if (0.0..=KL_COEF_MAX).contains(&kl_coef) {
        Ok(())
    } else {
        Err(Error::InvalidState {
            what: "KL coefficient outside [0, KL_COEF_MAX]",
        })
    }
}

crate::checkpoint::agent_state! {
    impl[A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize]
    AgentState for Ppo<A, C, OBS, N, CHUNK> where [] {
        kind: 1,
        obs: OBS,
        fingerprint: <Self as crate::checkpoint::Field>::fold_shapes(0),
        self as ppo,
        saving {
            if ppo.rollout.is_ready() {
                return Err(Error::MidIteration);
            }
        }
        loading {
            ppo.config.validate(N)?;
            ppo.train.params.critic.validate()?;
        }
        fields {
            train: TrainState<ActorCriticParams<A, C>>,
            space: A::Space,
            obs_norm: RunningNorm<OBS>,
            return_norm: RunningNorm<1>,
        }
        scalars { discounted_return: f32, kl_coef: f32, steps: u64 }
        read { check_kl_coef(kl_coef)?; }
        resumed {
            ppo.train.resume_with(ppo.config.adam);
            ppo.rollout.clear();
        }
    }
}

/// PPO's section as one field of a larger agent's (the lagged schedule's
/// learner): the same bytes, shapes and checks as its own [`AgentState`].
impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize>
    crate::checkpoint::Field for Ppo<A, C, OBS, N, CHUNK>
{
    const LEN: usize = <Self as AgentState>::LEN;

    fn fold_shapes(h: u32) -> u32 {
        <<Self as AgentState>::Saved as Fields>::fold_shapes(fold(fold(h, Self::KIND), N as u32))
    }

    fn save(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        self.save_state(w)
    }

    fn load(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        self.load_state(r)
    }
}
