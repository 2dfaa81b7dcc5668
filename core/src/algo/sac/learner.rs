//! `Sac` as the training loop ([`Learner`](crate::train::Learner)) and the
//! deployed policy ([`Controller`](crate::policy::Controller): the
//! deterministic `tanh(μ(s))` scaled to the bounds, in the environment's
//! action type `SVector<f32, ACT>`) see it — through the text SAC and TD3
//! share ([`offpolicy_impls`](crate::algo::offpolicy)): one iteration is one
//! environment step ([`Sac::step`](crate::algo::offpolicy::OffPolicy::step))
//! and the gradient steps it triggers.

use nalgebra::SVector;

use super::{Sac, SacPolicy, SacStats, SquashedGaussianActor};
use crate::algo::offpolicy::{offpolicy_impls, to_bounds};
use crate::nn::Layer;
use crate::params::Params;

offpolicy_impls!(
    impl[
        T,
        Q,
        const OBS: usize,
        const ACT: usize,
        const OA: usize,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
    ] Sac<T, Q, OBS, ACT, OA, H, CAP, BATCH> where [
        T: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, H>>,
        Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
    ],
    stats = SacStats,
    policy = SacPolicy<T, H, ACT>,
    actor = SquashedGaussianActor<T, H, ACT>,
    publish = |sac, out| out.actor.copy_from(&sac.actor.params),
    // `low + ½(tanh(μ(s)) + 1)(high − low)`.
    act = |sac, obs| Ok(to_bounds(&sac.space, &sac.actor.params.mode(obs)?)),
);
