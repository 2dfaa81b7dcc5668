//! `Td3` as the training loop ([`Learner`](crate::train::Learner)) and the
//! deployed policy ([`Controller`](crate::policy::Controller): the actor
//! scaled to the bounds, in the environment's action type
//! `SVector<f32, ACT>`) see it — through the text SAC and TD3 share
//! ([`offpolicy_impls`](crate::algo::offpolicy)).

use nalgebra::SVector;

use super::{NoisyActor, Td3, Td3Stats};
use crate::algo::offpolicy::{TanhPolicy, act_tanh, offpolicy_impls};
use crate::nn::Layer;

offpolicy_impls!(
    impl[
        N,
        Q,
        const OBS: usize,
        const ACT: usize,
        const OA: usize,
        const CAP: usize,
        const BATCH: usize,
    ] Td3<N, Q, OBS, ACT, OA, CAP, BATCH> where [
        N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
        Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
    ],
    stats = Td3Stats,
    policy = TanhPolicy<N, ACT>,
    actor = NoisyActor<N>,
    publish = |td3, out| {
        out.actor.net.copy_from(&td3.actor.params);
        out.actor.action_noise = td3.config.action_noise;
    },
    // `low + ½(μ(s) + 1)(high − low)`.
    act = |td3, obs| act_tanh(&td3.actor.params, &td3.space, obs),
);
