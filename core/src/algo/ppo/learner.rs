//! PPO as the training loop and the deployed policy see it: one iteration is
//! a rollout (`n_envs × n_steps`, by default all `N` steps of one
//! environment) and its update; acting is the exported policy's
//! [`Controller::act`].

use nalgebra::SVector;
use rand_core::Rng;

use super::{Ppo, UpdateStats};
use crate::algo::{Actor, Controller, Critic, Cursor, Episode};
use crate::error::Error;

crate::train::learner!(
    impl[const N: usize, const CHUNK: usize] Ppo<A, C, OBS, N, CHUNK>,
    critic = Critic<OBS>,
    stats = UpdateStats,
    steps = |s| s.steps,
    iterate = |s, env, cursor, rng, on_episode| {
        s.collect(env, cursor, rng, on_episode)?;
        s.update(rng)
    },
    vectorised = {
        fn n_envs(&self) -> usize {
            usize::from(self.config.n_envs)
        }
        fn iterate_envs<R: Rng + ?Sized>(
            &mut self,
            envs: &mut [E],
            cursors: &mut [Cursor<E::Obs>],
            rng: &mut R,
            on_episode: &mut dyn FnMut(Episode),
        ) -> Result<UpdateStats, Error> {
            self.collect_envs(envs, cursors, rng, on_episode)?;
            self.update(rng)
        }
    }
);

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize>
    Controller<OBS> for Ppo<A, C, OBS, N, CHUNK>
{
    type Action = A::Action;

    /// What [`policy`](Ppo::policy)`().act(obs)` returns, without the copy.
    fn act(&self, obs: &SVector<f32, OBS>) -> Result<A::Action, Error> {
        crate::policy::act(&self.train.params.actor, &self.obs_norm, &self.space, obs)
    }
}
