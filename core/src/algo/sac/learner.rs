//! `Sac` as the training loop ([`Learner`]) and the deployed policy
//! ([`Controller`]: the deterministic `tanh(μ(s))` scaled to the bounds,
//! in the environment's action type `SVector<f32, ACT>`) see it.
//!
//! **One iteration is one environment step** ([`Sac::step`]) and the
//! gradient steps it triggers, as for the online actor-critic: the
//! trainer's evaluation interval, hooks, early stop and checkpoints then
//! fall on any environment step. Its statistics are those of the last
//! gradient step, `None` when the step trained nothing (the warm-up of
//! `learning_starts` steps, or between training rounds of `train_freq`).

use nalgebra::SVector;
use rand_core::Rng;

use super::{Sac, SacPolicy, SacStats};
use crate::algo::offpolicy::{OffPolicy, to_bounds};
use crate::algo::{Controller, Cursor, Episode};
use crate::env::{Continuous, Env};
use crate::error::Error;
use crate::nn::{Dense, Layer};
use crate::train::{Agent, Learner};

impl<
    T,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const H: usize,
    const CAP: usize,
    const BATCH: usize,
> Sac<T, Q, OBS, ACT, OA, H, CAP, BATCH>
where
    T: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, H>>,
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    /// Copies the deployable policy into `out` (caller-owned memory): the
    /// trunk and the mean head with a `tanh` activation, and the bounds —
    /// what [`policy`](Self::policy) returns, without the copy on the stack.
    pub fn export(&self, out: &mut SacPolicy<T, H, ACT>) {
        let actor = &self.actor.params;
        out.net.first.copy_from(&actor.trunk);
        out.net.second = Dense::from_parts(actor.mu.weight, actor.mu.bias);
        out.space = self.space;
    }
}

impl<
    T,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const H: usize,
    const CAP: usize,
    const BATCH: usize,
> Agent for Sac<T, Q, OBS, ACT, OA, H, CAP, BATCH>
where
    T: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, H>>,
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    type Policy = SacPolicy<T, H, ACT>;
    type Stats = Option<SacStats>;

    fn steps(&self) -> u64 {
        self.steps
    }

    /// The gradient steps of the last iteration: `gradient_steps` on a
    /// training round, 0 during the warm-up and between rounds (the trainer
    /// reads it right after each iteration, so its count of updates is
    /// [`n_updates`](Sac::n_updates)).
    fn updates_per_iteration(&self) -> u64 {
        u64::from(self.config.schedule().updates_after(self.steps))
    }

    fn export(&self, out: &mut SacPolicy<T, H, ACT>) {
        Sac::export(self, out);
    }
}

impl<
    T,
    Q,
    E,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const H: usize,
    const CAP: usize,
    const BATCH: usize,
> Learner<E> for Sac<T, Q, OBS, ACT, OA, H, CAP, BATCH>
where
    T: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, H>>,
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
    E: Env<Obs = SVector<f32, OBS>, Space = Continuous<ACT>>,
{
    fn init<R: Rng + ?Sized>(&mut self, env: &E, rng: &mut R) -> Result<(), Error> {
        Sac::init(self, env, rng)
    }

    fn iterate<R: Rng + ?Sized>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<E::Obs>,
        rng: &mut R,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<Option<SacStats>, Error> {
        OffPolicy::step(self, env, cursor, rng, on_episode)
    }
}

impl<
    T,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const H: usize,
    const CAP: usize,
    const BATCH: usize,
> Controller<OBS> for Sac<T, Q, OBS, ACT, OA, H, CAP, BATCH>
where
    T: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, H>>,
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    type Action = SVector<f32, ACT>;

    /// `low + ½(tanh(μ(s)) + 1)(high − low)`: the deterministic action.
    fn act(&self, obs: &SVector<f32, OBS>) -> Result<SVector<f32, ACT>, Error> {
        Ok(to_bounds(&self.space, &self.actor.params.mode(obs)?))
    }
}
