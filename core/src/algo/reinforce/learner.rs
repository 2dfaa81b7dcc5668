//! `Reinforce` as the training loop ([`Learner`](crate::train::Learner)) and the
//! deployed policy ([`Controller`]) see it.

use super::Reinforce;
use crate::algo::{Actor, Controller, Critic, UpdateStats};
use crate::error::Error;
use nalgebra::SVector;

// REINFORCE: one iteration is an episode (at most `N` steps) and its update.
crate::train::learner!(
    impl[const N: usize] Reinforce<A, C, OBS, N>,
    critic = Critic<OBS>,
    stats = UpdateStats,
    steps = |s| s.inner.steps,
    iterate = |s, env, cursor, rng, on_episode| {
        s.collect(env, cursor, rng, on_episode)?;
        s.update(rng)
    }
);

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> Controller<OBS>
    for Reinforce<A, C, OBS, N>
{
    type Action = A::Action;

    /// What [`policy`](Self::policy)`().act(obs)` returns, without the copy.
    fn act(&self, obs: &SVector<f32, OBS>) -> Result<A::Action, Error> {
        self.inner.act(obs)
    }
}
