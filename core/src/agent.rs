//! Agents named from the environment: state each size once.
//!
//! An environment declares its observation (`type Obs = SVector<f32, 3>`) and
//! action space (`type Space = Continuous<1>`); these aliases derive every
//! network size from it, so a user's program names only the environment and
//! the widths it chooses:
//!
//! ```
//! use microrl::agent;
//! use microrl::env::Pendulum;
//!
//! type Agent = agent::Ppo<Pendulum, 64, 2048>;  // 3-64-64-1 Gaussian actor, 3-64-64-1 critic
//! type Deployed = microrl::Deployed<Agent>;     // what the firmware loads
//! # let _ = core::mem::size_of::<Deployed>();
//! ```
//!
//! `H` is the width of the two tanh hidden layers of both networks
//! ([`Mlp`]): SB3's and CleanRL's default architecture. The actor is
//! [`CategoricalActor`] for a [`Discrete`] space and [`GaussianActor`] for a
//! [`Continuous`] one. For other architectures (ReLU, three layers,
//! different actor and critic widths) name the algorithm's struct directly,
//! e.g. [`algo::Ppo<Actor, Critic, OBS, N>`](crate::algo::Ppo); a mismatch
//! between its sizes and the environment's is then refused at compile time
//! with a message that says so.
//!
//! SAC and TD3 ([`Sac`], [`Td3`]) take ReLU networks (SB3's), a replay
//! capacity `CAP`, a minibatch capacity `BATCH` and their critics' input
//! size `OA = OBS + ACT`, the one size stable Rust cannot add up from the
//! environment's (a wrong `OA` does not compile):
//! `agent::Sac<Pendulum, 64, 10_000, 256, 4>`, built on the heap in place by
//! `boxed(config)` (`std`; `agent::LaggedSac`/`LaggedTd3` too).
//!
//! How (stable Rust, no `generic_const_exprs`): the observation type
//! `SVector<f32, OBS>` and the action space carry their sizes as const
//! generics, and [`AgentTypes`] — implemented for them — maps them to the agent
//! types through generic associated types ([`ActorFor`] and
//! [`OffPolicyFor`] on the action space supply the action-dependent part).

use nalgebra::SVector;

use crate::algo;
use crate::env::{Continuous, Discrete, Env};
use crate::nn::Mlp;
use crate::policy::{CategoricalActor, GaussianActor};

/// An action space that knows its default actor for `OBS` inputs and hidden width `H`.
pub trait ActorFor {
    /// The actor: two tanh hidden layers of `H` units.
    type Actor<const OBS: usize, const H: usize>: crate::policy::Actor<OBS, Space = Self>;
}

impl<const N: usize> ActorFor for Discrete<N> {
    type Actor<const OBS: usize, const H: usize> = CategoricalActor<Mlp<OBS, H, N>>;
}

impl<const A: usize> ActorFor for Continuous<A> {
    type Actor<const OBS: usize, const H: usize> = GaussianActor<Mlp<OBS, H, A>, A>;
}

/// A continuous action space, which SAC and TD3 act in: it knows their
/// agents with SB3's architecture ([`algo::sac::SacMlp`],
/// [`algo::td3::Td3Mlp`]: two ReLU hidden layers of `H` units) for `OBS`
/// observations and `OA = OBS + ACT` critic inputs.
#[diagnostic::on_unimplemented(
    message = "SAC and TD3 need a continuous action space, not `{Self}`",
    label = "the environment's `Space` must be `Continuous<A>`"
)]
pub trait OffPolicyFor {
    /// SAC with a replay ring of `CAP` transitions and minibatches of up to
    /// `BATCH`.
    type Sac<
        const OBS: usize,
        const OA: usize,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
    >;
    /// TD3 with a replay ring of `CAP` transitions and minibatches of up to
    /// `BATCH`.
    type Td3<
        const OBS: usize,
        const OA: usize,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
    >;
    /// SAC on the lagged schedule, blocks of `BLOCK` ticks.
    type LaggedSac<
        const OBS: usize,
        const OA: usize,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
        const BLOCK: usize,
    >;
    /// TD3 on the lagged schedule, blocks of `BLOCK` ticks.
    type LaggedTd3<
        const OBS: usize,
        const OA: usize,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
        const BLOCK: usize,
    >;
}

impl<const A: usize> OffPolicyFor for Continuous<A> {
    type Sac<
        const OBS: usize,
        const OA: usize,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
    > = algo::sac::SacMlp<OBS, A, OA, H, CAP, BATCH>;
    type Td3<
        const OBS: usize,
        const OA: usize,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
    > = algo::td3::Td3Mlp<OBS, A, OA, H, CAP, BATCH>;
    type LaggedSac<
        const OBS: usize,
        const OA: usize,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
        const BLOCK: usize,
    > = algo::Lagged<algo::sac::SacMlp<OBS, A, OA, H, CAP, BATCH>, OBS, BLOCK>;
    type LaggedTd3<
        const OBS: usize,
        const OA: usize,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
        const BLOCK: usize,
    > = algo::Lagged<algo::td3::Td3Mlp<OBS, A, OA, H, CAP, BATCH>, OBS, BLOCK>;
}

/// An observation type that knows the agents built on it (implemented for
/// `SVector<f32, OBS>`).
pub trait AgentTypes {
    /// PPO with rollout `N`, `CHUNK` samples per batched pass.
    type Ppo<S: ActorFor, const H: usize, const N: usize, const CHUNK: usize>;
    /// PPO on the lagged schedule (one rollout of policy lag), rollout `N`.
    type LaggedPpo<S: ActorFor, const H: usize, const N: usize>;
    /// REINFORCE with episodes up to `N` steps.
    type Reinforce<S: ActorFor, const H: usize, const N: usize>;
    /// KL-anchored PPO with rollout `N`.
    type Anchored<S: ActorFor, const H: usize, const N: usize>;
    /// TRPO with rollout `N`.
    type Trpo<S: ActorFor, const H: usize, const N: usize>;
    /// PPO with `K` fused critics and rollout `N`.
    type PpoCritics<S: ActorFor, const H: usize, const N: usize, const K: usize>;
    /// GRPO (no critic) with rollout `N`.
    type Grpo<S: ActorFor, const H: usize, const N: usize>;
    /// The online actor-critic.
    type ActorCritic<S: ActorFor, const H: usize>;
    /// The online actor-critic on the lagged schedule, blocks of `BLOCK` ticks.
    type LaggedAc<S: ActorFor, const H: usize, const BLOCK: usize>;
    /// The deployable policy.
    type Policy<S: ActorFor, const H: usize>;
    /// SAC (see [`OffPolicyFor`]).
    type Sac<
        S: OffPolicyFor,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
        const OA: usize,
    >;
    /// TD3 (see [`OffPolicyFor`]).
    type Td3<
        S: OffPolicyFor,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
        const OA: usize,
    >;
    /// SAC on the lagged schedule (see [`OffPolicyFor`]).
    type LaggedSac<
        S: OffPolicyFor,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
        const OA: usize,
        const BLOCK: usize,
    >;
    /// TD3 on the lagged schedule (see [`OffPolicyFor`]).
    type LaggedTd3<
        S: OffPolicyFor,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
        const OA: usize,
        const BLOCK: usize,
    >;
}

impl<const OBS: usize> AgentTypes for SVector<f32, OBS> {
    type Ppo<S: ActorFor, const H: usize, const N: usize, const CHUNK: usize> =
        algo::Ppo<S::Actor<OBS, H>, Mlp<OBS, H, 1>, OBS, N, CHUNK>;
    type LaggedPpo<S: ActorFor, const H: usize, const N: usize> =
        algo::LaggedPpo<S::Actor<OBS, H>, Mlp<OBS, H, 1>, OBS, N>;
    type Reinforce<S: ActorFor, const H: usize, const N: usize> =
        algo::Reinforce<S::Actor<OBS, H>, Mlp<OBS, H, 1>, OBS, N>;
    type Anchored<S: ActorFor, const H: usize, const N: usize> =
        algo::Anchored<S::Actor<OBS, H>, Mlp<OBS, H, 1>, OBS, N>;
    type Trpo<S: ActorFor, const H: usize, const N: usize> =
        algo::Trpo<S::Actor<OBS, H>, Mlp<OBS, H, 1>, OBS, N>;
    type PpoCritics<S: ActorFor, const H: usize, const N: usize, const K: usize> =
        algo::Ppo<S::Actor<OBS, H>, algo::Critics<Mlp<OBS, H, 1>, K>, OBS, N>;
    type Grpo<S: ActorFor, const H: usize, const N: usize> = algo::Grpo<S::Actor<OBS, H>, OBS, N>;
    type ActorCritic<S: ActorFor, const H: usize> =
        algo::ActorCritic<S::Actor<OBS, H>, Mlp<OBS, H, 1>, OBS>;
    type LaggedAc<S: ActorFor, const H: usize, const BLOCK: usize> =
        algo::LaggedAc<S::Actor<OBS, H>, Mlp<OBS, H, 1>, OBS, BLOCK>;
    type Policy<S: ActorFor, const H: usize> = crate::policy::Policy<S::Actor<OBS, H>, OBS>;
    type Sac<
        S: OffPolicyFor,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
        const OA: usize,
    > = S::Sac<OBS, OA, H, CAP, BATCH>;
    type Td3<
        S: OffPolicyFor,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
        const OA: usize,
    > = S::Td3<OBS, OA, H, CAP, BATCH>;
    type LaggedSac<
        S: OffPolicyFor,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
        const OA: usize,
        const BLOCK: usize,
    > = S::LaggedSac<OBS, OA, H, CAP, BATCH, BLOCK>;
    type LaggedTd3<
        S: OffPolicyFor,
        const H: usize,
        const CAP: usize,
        const BATCH: usize,
        const OA: usize,
        const BLOCK: usize,
    > = S::LaggedTd3<OBS, OA, H, CAP, BATCH, BLOCK>;
}

/// PPO on `E`: actor and critic with two hidden layers of `H` tanh units, a
/// rollout of `N` steps, and the update's batched passes over `CHUNK`
/// samples at a time (a speed/RAM trade-off that never changes a result;
/// see [`algo::Ppo`]).
pub type Ppo<E, const H: usize, const N: usize, const CHUNK: usize = { algo::DEFAULT_CHUNK }> =
    <<E as Env>::Obs as AgentTypes>::Ppo<<E as Env>::Space, H, N, CHUNK>;

/// PPO on `E` run on the lagged schedule of a device that learns while it
/// controls (see [`algo::ppo::lagged`]): the same networks and rollout as
/// [`Ppo`], plus the published policy and one rollout of ticks.
pub type LaggedPpo<E, const H: usize, const N: usize> =
    <<E as Env>::Obs as AgentTypes>::LaggedPpo<<E as Env>::Space, H, N>;

/// A2C on `E` (PPO's machinery with one epoch over one minibatch; configure
/// it with [`A2cConfig`](crate::algo::A2cConfig)): `N` is the n of the n-step
/// return.
pub type A2c<E, const H: usize, const N: usize> = Ppo<E, H, N>;

/// REINFORCE with a learned baseline on `E`; episodes up to `N` steps are
/// kept whole.
pub type Reinforce<E, const H: usize, const N: usize> =
    <<E as Env>::Obs as AgentTypes>::Reinforce<<E as Env>::Space, H, N>;

/// PPO anchored to a frozen reference policy by a per-step KL penalty
/// (see [`algo::anchor`]).
pub type Anchored<E, const H: usize, const N: usize> =
    <<E as Env>::Obs as AgentTypes>::Anchored<<E as Env>::Space, H, N>;

/// TRPO on `E` (see [`algo::trpo`]): actor and critic with two hidden
/// layers of `H` tanh units, a rollout of `N` steps.
pub type Trpo<E, const H: usize, const N: usize> =
    <<E as Env>::Obs as AgentTypes>::Trpo<<E as Env>::Space, H, N>;

/// PPO on `E` with `K` critics whose values are fused with weights (see
/// [`algo::critic`]); set `train.params.critic.weights` before `init`.
pub type PpoCritics<E, const H: usize, const N: usize, const K: usize> =
    <<E as Env>::Obs as AgentTypes>::PpoCritics<<E as Env>::Space, H, N, K>;

/// GRPO on `E` (see [`algo::grpo`]): the actor only, two hidden layers of
/// `H` tanh units; up to `N` steps of whole episode groups per update.
pub type Grpo<E, const H: usize, const N: usize> =
    <<E as Env>::Obs as AgentTypes>::Grpo<<E as Env>::Space, H, N>;

/// The online one-step actor-critic on `E` (no rollout buffer).
pub type ActorCritic<E, const H: usize> =
    <<E as Env>::Obs as AgentTypes>::ActorCritic<<E as Env>::Space, H>;

/// The online actor-critic on `E` run on the lagged schedule of a device
/// that learns while it controls (see [`algo::ac::lagged`]): the same
/// networks; the control loop acts blocks of `BLOCK` ticks with the
/// published policy while the learner steps through the previous block.
pub type LaggedAc<E, const H: usize, const BLOCK: usize> =
    <<E as Env>::Obs as AgentTypes>::LaggedAc<<E as Env>::Space, H, BLOCK>;

/// SAC on `E` with SB3's architecture (actor trunk and twin critics with
/// two ReLU hidden layers of `H` units; see [`algo::sac`]), a replay ring
/// of `CAP` transitions and minibatches of up to `BATCH`. `OA` is the
/// critics' input size `OBS + ACT` (stable Rust cannot compute it from the
/// environment): another value is refused at compile time with a message
/// that says so. For Pendulum (3 observations, 1 action):
///
/// ```
/// use microrl::agent;
/// use microrl::env::Pendulum;
///
/// type Agent = agent::Sac<Pendulum, 64, 10_000, 256, 4>;
/// type Deployed = microrl::Deployed<Agent>; // tanh(μ(s)) and the bounds
/// # let _ = core::mem::size_of::<Deployed>();
/// ```
pub type Sac<E, const H: usize, const CAP: usize, const BATCH: usize, const OA: usize> =
    <<E as Env>::Obs as AgentTypes>::Sac<<E as Env>::Space, H, CAP, BATCH, OA>;

/// TD3 on `E` with SB3's architecture (actor and twin critics with two ReLU
/// hidden layers of `H` units; see [`algo::td3`]), a replay ring of `CAP`
/// transitions and minibatches of up to `BATCH`; `OA = OBS + ACT` as for
/// [`Sac`].
pub type Td3<E, const H: usize, const CAP: usize, const BATCH: usize, const OA: usize> =
    <<E as Env>::Obs as AgentTypes>::Td3<<E as Env>::Space, H, CAP, BATCH, OA>;

/// Replay ring of the sized aliases ([`SacSized`], [`Td3Sized`]): 50 000
/// transitions, the whole of `microrl bench`'s SAC/TD3 budget (SB3's
/// ring of 10⁶ never wraps in such a run either), ~1.4 MB for one input and
/// four observations — build the agent on the heap with `boxed(config)`.
pub const SIZED_CAP: usize = 50_000;
/// Minibatch of the sized aliases: SB3's `batch_size` 256.
pub const SIZED_BATCH: usize = 256;

/// SAC on `E` sized for a desktop or a Linux-class board: SB3's 256-wide
/// networks are not needed for a plant of a few states, so 64-64 (as
/// `microrl train`); [`SIZED_CAP`] transitions; minibatches of
/// [`SIZED_BATCH`]. `OA = OBS + ACT` (stated because stable Rust cannot
/// add two const parameters; another value is a compile error saying so).
/// Configure it with the defaults fitted to the ring:
///
/// ```
/// use microrl::agent::{self, SIZED_CAP};
/// use microrl::algo::SacConfig;
/// use microrl::env::Pendulum;
///
/// type Agent = agent::SacSized<Pendulum, 4>; // 3 observations + 1 action
/// let config = SacConfig::DEFAULT.fitted(SIZED_CAP); // buffer_size 50 000, the rest SB3's
/// assert_eq!(config.buffer_size, 50_000);
/// # #[cfg(feature = "std")] {
/// let agent = Agent::boxed(config); // on the heap, never on the stack (`std`)
/// assert_eq!(agent.config, config);
/// # }
/// ```
///
/// On a microcontroller, name [`Sac`] with a smaller ring and width (the
/// firmware's Pendulum SAC: `Sac<Pendulum, 24, 2_000, 64, 4>`, 115 KB).
pub type SacSized<E, const OA: usize> = Sac<E, 64, SIZED_CAP, SIZED_BATCH, OA>;

/// TD3 on `E` sized as [`SacSized`] (`Td3Config::DEFAULT.fitted(SIZED_CAP)`).
pub type Td3Sized<E, const OA: usize> = Td3<E, 64, SIZED_CAP, SIZED_BATCH, OA>;

/// [`Sac`] run on the lagged schedule of a device that learns while it
/// controls (see [`algo::lagged`] and [`algo::offpolicy`]): the same networks and ring;
/// the control loop acts blocks of `BLOCK` ticks with the published actor
/// while the learner ingests the previous block.
///
/// ```
/// use microrl::agent;
/// use microrl::env::Pendulum;
///
/// type Agent = agent::LaggedSac<Pendulum, 24, 2_000, 64, 4, 50>;
/// # let _ = core::mem::size_of::<Agent>();
/// # #[cfg(feature = "std")] {
/// // `Lagged::new(Sac::new(config))` built in place on the heap (`std`):
/// let agent = Agent::boxed(microrl::algo::SacConfig::PENDULUM);
/// # }
/// ```
pub type LaggedSac<
    E,
    const H: usize,
    const CAP: usize,
    const BATCH: usize,
    const OA: usize,
    const BLOCK: usize,
> = <<E as Env>::Obs as AgentTypes>::LaggedSac<<E as Env>::Space, H, CAP, BATCH, OA, BLOCK>;

/// [`Td3`] run on the lagged schedule (see [`LaggedSac`]).
pub type LaggedTd3<
    E,
    const H: usize,
    const CAP: usize,
    const BATCH: usize,
    const OA: usize,
    const BLOCK: usize,
> = <<E as Env>::Obs as AgentTypes>::LaggedTd3<<E as Env>::Space, H, CAP, BATCH, OA, BLOCK>;

/// The deployable policy of any on-policy agent above with width `H` on `E` (the same
/// type as [`Deployed<Agent>`](crate::Deployed)).
pub type Policy<E, const H: usize> = <<E as Env>::Obs as AgentTypes>::Policy<<E as Env>::Space, H>;
