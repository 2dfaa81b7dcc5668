//! `ActorCritic` as the training loop ([`Learner`](crate::train::Learner)) and the
//! deployed policy ([`Controller`]) see it.

use super::{AcStats, ActorCritic};
use crate::algo::{Actor, Controller};
use crate::error::Error;
use crate::nn::Network;
use nalgebra::SVector;

// The online actor-critic: one iteration is one environment step and its update.
crate::train::learner!(
    impl[] ActorCritic<A, C, OBS>,
    critic = Network<OBS, 1>,
    stats = AcStats,
    steps = |s| s.steps,
    iterate = |s, env, cursor, rng, on_episode| s.step(env, cursor, rng, on_episode)
);

impl<A: Actor<OBS>, C: Network<OBS, 1>, const OBS: usize> Controller<OBS>
    for ActorCritic<A, C, OBS>
{
    type Action = A::Action;

    /// What [`policy`](Self::policy)`().act(obs)` returns, without the copy.
    fn act(&self, obs: &SVector<f32, OBS>) -> Result<A::Action, Error> {
        crate::policy::act(&self.actor.params, &self.obs_norm, &self.space, obs)
    }
}
