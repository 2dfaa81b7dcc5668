//! `Anchored` as the training loop ([`Learner`](crate::train::Learner)) and the
//! deployed policy ([`Controller`]) see it.

use super::Anchored;
use crate::algo::{Actor, Controller, Critic, UpdateStats};
use crate::error::Error;
use nalgebra::SVector;

// KL-anchored PPO: a rollout with the penalised reward, its update, β's adaptation.
crate::train::learner!(
    impl[const N: usize] Anchored<A, C, OBS, N>,
    critic = Critic<OBS>,
    stats = UpdateStats,
    steps = |s| s.ppo.steps,
    iterate = |s, env, cursor, rng, on_episode| s.iterate(env, cursor, rng, on_episode)
);

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> Controller<OBS>
    for Anchored<A, C, OBS, N>
{
    type Action = A::Action;

    fn act(&self, obs: &SVector<f32, OBS>) -> Result<A::Action, Error> {
        self.ppo.act(obs)
    }
}
