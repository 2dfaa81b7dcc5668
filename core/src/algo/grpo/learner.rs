//! `Grpo` as the training loop ([`Learner`]) and the
//! deployed policy ([`Controller`]) see it.

use nalgebra::SVector;
use rand_core::Rng;

use super::Grpo;
use crate::algo::{Actor, Controller, Cursor, Episode, Policy, UpdateStats};
use crate::env::Env;
use crate::error::Error;
use crate::train::{Agent, Learner};

impl<A: Actor<OBS>, const OBS: usize, const N: usize, const CHUNK: usize> Agent
    for Grpo<A, OBS, N, CHUNK>
{
    type Policy = Policy<A, OBS>;
    type Stats = UpdateStats;
    fn steps(&self) -> u64 {
        self.steps
    }
    fn updates_per_iteration(&self) -> u64 {
        1
    }
    fn export(&self, out: &mut Policy<A, OBS>) {
        Grpo::export(self, out);
    }
}

// GRPO: groups of episodes from shared start states, and their update. (No
// critic, so it does not fit `learner!`'s `A, C` shape.)
impl<A, E, const OBS: usize, const N: usize, const CHUNK: usize> Learner<E>
    for Grpo<A, OBS, N, CHUNK>
where
    A: Actor<OBS>,
    E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
{
    fn init<R: Rng + ?Sized>(&mut self, env: &E, rng: &mut R) -> Result<(), Error> {
        Grpo::init(self, env, rng)
    }
    fn iterate<R: Rng + ?Sized>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<E::Obs>,
        rng: &mut R,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<UpdateStats, Error> {
        self.collect(env, cursor, rng, on_episode)?;
        self.update(rng)
    }
}

impl<A: Actor<OBS>, const OBS: usize, const N: usize, const CHUNK: usize> Controller<OBS>
    for Grpo<A, OBS, N, CHUNK>
{
    type Action = A::Action;

    fn act(&self, obs: &SVector<f32, OBS>) -> Result<A::Action, Error> {
        crate::policy::act(&self.train.params, &self.obs_norm, &self.space, obs)
    }
}
