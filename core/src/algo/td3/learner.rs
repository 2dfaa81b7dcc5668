//! `Td3` as the training loop ([`Learner`]) and the deployed policy
//! ([`Controller`]: the actor scaled to the bounds, in the environment's
//! action type `SVector<f32, ACT>`) see it.
//!
//! **One iteration is one environment step** ([`Td3::step`]) and the
//! gradient steps it triggers, as for SAC and the online actor-critic.
//! Its statistics are those of the last gradient step, `None` when the
//! step trained nothing (the warm-up, or between training rounds).

use nalgebra::SVector;
use rand_core::Rng;

use super::{Td3, Td3Stats};
use crate::algo::offpolicy::{OffPolicy, TanhPolicy, act_tanh};
use crate::algo::{Controller, Cursor, Episode};
use crate::env::{Continuous, Env};
use crate::error::Error;
use crate::nn::Layer;
use crate::train::{Agent, Learner};

impl<
    N,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const CAP: usize,
    const BATCH: usize,
> Td3<N, Q, OBS, ACT, OA, CAP, BATCH>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    /// Copies the deployable policy into `out` (caller-owned memory): the
    /// actor and the bounds — what [`policy`](Self::policy) returns,
    /// without the copy on the stack.
    pub fn export(&self, out: &mut TanhPolicy<N, ACT>) {
        out.net.copy_from(&self.actor.params);
        out.space = self.space;
    }
}

impl<
    N,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const CAP: usize,
    const BATCH: usize,
> Agent for Td3<N, Q, OBS, ACT, OA, CAP, BATCH>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    type Policy = TanhPolicy<N, ACT>;
    type Stats = Option<Td3Stats>;

    fn steps(&self) -> u64 {
        self.steps
    }

    /// The gradient steps of the last iteration: `gradient_steps` on a
    /// training round, 0 during the warm-up and between rounds (the trainer
    /// reads it right after each iteration, so its count of updates is
    /// [`n_updates`](Td3::n_updates)).
    fn updates_per_iteration(&self) -> u64 {
        u64::from(self.config.schedule().updates_after(self.steps))
    }

    fn export(&self, out: &mut TanhPolicy<N, ACT>) {
        Td3::export(self, out);
    }
}

impl<
    N,
    Q,
    E,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const CAP: usize,
    const BATCH: usize,
> Learner<E> for Td3<N, Q, OBS, ACT, OA, CAP, BATCH>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
    E: Env<Obs = SVector<f32, OBS>, Space = Continuous<ACT>>,
{
    fn init<R: Rng + ?Sized>(&mut self, env: &E, rng: &mut R) -> Result<(), Error> {
        Td3::init(self, env, rng)
    }

    fn iterate<R: Rng + ?Sized>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<E::Obs>,
        rng: &mut R,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<Option<Td3Stats>, Error> {
        OffPolicy::step(self, env, cursor, rng, on_episode)
    }
}

impl<
    N,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const CAP: usize,
    const BATCH: usize,
> Controller<OBS> for Td3<N, Q, OBS, ACT, OA, CAP, BATCH>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    type Action = SVector<f32, ACT>;

    /// `low + ½(μ(s) + 1)(high − low)`: the deterministic action.
    fn act(&self, obs: &SVector<f32, OBS>) -> Result<SVector<f32, ACT>, Error> {
        act_tanh(&self.actor.params, &self.space, obs)
    }
}
