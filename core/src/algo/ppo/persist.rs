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

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize> AgentState
    for Ppo<A, C, OBS, N, CHUNK>
{
    const KIND: u32 = 1;
    const OBS: usize = OBS;
    type Saved = (
        TrainState<ActorCriticParams<A, C>>,
        A::Space,
        RunningNorm<OBS>,
        RunningNorm<1>,
        f32,
        f32,
        u64,
    );

    fn fingerprint() -> u32 {
        <Self as crate::checkpoint::Field>::fold_shapes(0)
    }

    fn save_state(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        if self.rollout.is_ready() {
            return Err(Error::MidIteration);
        }
        let fields = (
            &self.train,
            &self.space,
            &self.obs_norm,
            &self.return_norm,
            &self.discounted_return,
            &self.kl_coef,
            &self.steps,
        );
        <Self::Saved as Fields>::save(w, fields)
    }

    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        self.config.validate(N)?;
        self.train.params.critic.validate()?;
        let (mut discounted_return, mut kl_coef, mut steps) = (0.0, 0.0, 0);
        let fields = (
            &mut self.train,
            &mut self.space,
            &mut self.obs_norm,
            &mut self.return_norm,
            &mut discounted_return,
            &mut kl_coef,
            &mut steps,
        );
        <Self::Saved as Fields>::load(r, fields)?;
        check_kl_coef(kl_coef)?;
        if r.commit() {
            self.discounted_return = discounted_return;
            self.kl_coef = kl_coef;
            self.steps = steps;
            self.train.resume_with(self.config.adam);
            self.rollout.clear();
        }
        Ok(())
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
