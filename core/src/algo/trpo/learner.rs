//! `Trpo` as the training loop ([`Learner`](crate::train::Learner)) and the
//! deployed policy ([`Controller`]) see it.

use super::Trpo;
use crate::algo::{Actor, Controller, Critic, UpdateStats};
use crate::error::Error;
use nalgebra::SVector;

// TRPO: a rollout and its trust-region update.
crate::train::learner!(
    impl[const N: usize] Trpo<A, C, OBS, N>,
    critic = Critic<OBS>,
    stats = UpdateStats,
    steps = |s| s.inner.steps,
    iterate = |s, env, cursor, rng, on_episode| {
        s.collect(env, cursor, rng, on_episode)?;
        s.update(rng)
    }
);

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> Controller<OBS>
    for Trpo<A, C, OBS, N>
{
    type Action = A::Action;

    fn act(&self, obs: &SVector<f32, OBS>) -> Result<A::Action, Error> {
        self.inner.act(obs)
    }
}
