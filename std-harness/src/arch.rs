//! The policy architectures the harness can train, create, load and describe.
//!
//! Every file the harness writes — `train`'s `policy.mrlp`, `init`'s fresh
//! policy, `export`'s copy — is one [`Policy`]: the actor, the observation
//! normaliser and the action space, in the core's binary format. Each
//! architecture is that type for one environment and hidden width, named
//! from the environment with [`microrl::agent::Policy`], so `act`, `eval`,
//! `export` and `inspect` recognise any of those files by trying the
//! architectures in turn ([`Arch::detect`]). [`Footprint`] reports their
//! memory, measured with `core::mem::size_of` on the very types the firmware
//! links.
//!
//! Design:
//! - **One row per architecture.** The table at [`architectures!`]'s one
//!   invocation names each architecture's variant, command-line name, layer
//!   sizes, plant and policy type; the enum, [`Arch::ALL`], the names and
//!   [`Arch::with_policy`] are generated from it. Adding an architecture is
//!   one row.
//! - **One dispatch.** Everything that needs the policy *type* of an
//!   [`Arch`] value (recognising a file, footprints, fresh policies, acting,
//!   evaluation, import and export) is a [`PolicyVisitor`], whose generic
//!   `visit` [`Arch::with_policy`] runs with the row's policy type, plant
//!   and observation size. What differs between the kinds of policy
//!   (categorical, Gaussian, tanh-squashed) is [`Deployable`], implemented
//!   once per kind; everything else about a row (its activation, its
//!   `*-relu` twin) is read off its type.

use microrl::Deployed;
use microrl::algo::offpolicy::{TanhPolicy, torch_default_init};
use microrl::env::family::{Plant1, Plant2, PlantDiscrete};
use microrl::env::{
    Acrobot, ActionOf, ActionSpace, CartPole, CartPoleContinuous, CartPoleSwingUp, Continuous, Env,
    MountainCarContinuous, Pendulum, Quadrotor2d, Servo, obs_dim,
};
use microrl::nn::{Chain, Dense, Layer, Mlp, Relu, Tanh};
use microrl::optim::{Adam, TrainState};
use microrl::policy::{Actor, CategoricalActor, Controller, GaussianActor, Policy};
use microrl::{Params, SVector, agent, serialize};
use rand_xoshiro::Xoshiro128PlusPlus;
use serde::Serialize;

use crate::train::{EnvName, Task};

/// Discrete CartPole policy ([`Arch::Cartpole`]): 4 observations, two
/// hidden layers of 64 tanh units, 2 action logits.
pub type CartPolePolicy = agent::Policy<CartPole, 64>;
/// The MCU-sized CartPole policy, 4-32-32-2 (`--small`, [`Arch::CartpoleSmall`]).
pub type CartPoleSmallPolicy = agent::Policy<CartPole, 32>;
/// Pendulum policy ([`Arch::Pendulum`]): 3-64-64-1 mean, Gaussian over the
/// torque, bounds ±2.
pub type PendulumPolicy = agent::Policy<Pendulum, 64>;

/// A deployed SAC/TD3 policy with hidden layers of `H1` and `H2` ReLU units
/// and a tanh output scaled to the bounds: the `*-squashed-256` and
/// `*-squashed-400-300` architectures, SB3's default sizes (SAC 256-256,
/// TD3 400-300; CleanRL's SAC and TD3 are 256-256), for `import` and
/// `export --format safetensors`. Its file is the same as a SAC agent's
/// deployed policy of those sizes (the layers in order, then the bounds).
pub type Squashed<const OBS: usize, const H1: usize, const H2: usize, const ACT: usize> =
    TanhPolicy<Chain<Dense<OBS, H1, Relu>, Chain<Dense<H1, H2, Relu>, Dense<H2, ACT, Tanh>>>, ACT>;

/// Generates [`Arch`] and its per-row facts from the table below (one row
/// per architecture: `Variant = "name", "layers", Plant, PolicyType;`).
macro_rules! architectures {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, $layers:literal, $plant:ty, $policy:ty; )*) => {
        named_enum! {
            /// A named architecture.
            Arch { $( $(#[$doc])* $variant = $name ),* }
        }

        impl Arch {
            /// Human-readable layer sizes.
            pub fn layers(self) -> &'static str {
                match self {
                    $(Arch::$variant => $layers,)*
                }
            }

            /// The task this architecture acts in.
            pub fn env(self) -> EnvName {
                match self {
                    $(Arch::$variant => <$plant as Task>::ENV,)*
                }
            }

            /// Runs `visitor` with this architecture's policy type, plant
            /// and observation size.
            pub fn with_policy<V: PolicyVisitor>(self, visitor: V) -> V::Out {
                match self {
                    $(Arch::$variant => {
                        visitor.visit::<$policy, $plant, { obs_dim::<$plant>() }>(self)
                    })*
                }
            }
        }
    };
}

architectures! {
    /// Categorical 4-64-64-2 (CartPole, SB3/CleanRL default size).
    Cartpole = "cartpole", "4-64-64-2 categorical", CartPole, agent::Policy<CartPole, 64>;
    /// Categorical 4-32-32-2 (CartPole on small MCUs).
    CartpoleSmall = "cartpole-small", "4-32-32-2 categorical", CartPole, agent::Policy<CartPole, 32>;
    /// Gaussian 4-64-64-1 with learnable log_std (continuous CartPole).
    CartpoleContinuous = "cartpole-continuous", "4-64-64-1 gaussian", CartPoleContinuous, agent::Policy<CartPoleContinuous, 64>;
    /// Gaussian 3-64-64-1 with learnable log_std (Pendulum).
    Pendulum = "pendulum", "3-64-64-1 gaussian", Pendulum, agent::Policy<Pendulum, 64>;
    /// Categorical 4-64-64-2 with ReLU hidden layers (imported; CartPole).
    CartpoleRelu = "cartpole-relu", "4-64-64-2 categorical relu", CartPole, Policy<CategoricalActor<Mlp<4, 64, 2, Relu>>, 4>;
    /// Categorical 4-32-32-2 with ReLU hidden layers (imported; CartPole).
    CartpoleSmallRelu = "cartpole-small-relu", "4-32-32-2 categorical relu", CartPole, Policy<CategoricalActor<Mlp<4, 32, 2, Relu>>, 4>;
    /// Gaussian 4-64-64-1 with ReLU hidden layers (imported; continuous CartPole).
    CartpoleContinuousRelu = "cartpole-continuous-relu", "4-64-64-1 gaussian relu", CartPoleContinuous, Policy<GaussianActor<Mlp<4, 64, 1, Relu>, 1>, 4>;
    /// Gaussian 3-64-64-1 with ReLU hidden layers (imported; Pendulum).
    PendulumRelu = "pendulum-relu", "3-64-64-1 gaussian relu", Pendulum, Policy<GaussianActor<Mlp<3, 64, 1, Relu>, 1>, 3>;
    /// Deterministic 4-64-64-1 ReLU, tanh-squashed output (SAC, TD3; continuous CartPole).
    CartpoleContinuousSquashed = "cartpole-continuous-squashed", "4-64-64-1 relu, tanh-squashed (SAC/TD3)", CartPoleContinuous, Deployed<agent::Sac<CartPoleContinuous, 64, 1, 1, 5>>;
    /// Deterministic 3-64-64-1 ReLU, tanh-squashed output (SAC, TD3; Pendulum).
    PendulumSquashed = "pendulum-squashed", "3-64-64-1 relu, tanh-squashed (SAC/TD3)", Pendulum, Deployed<agent::Sac<Pendulum, 64, 1, 1, 4>>;
    /// Deterministic 3-256-256-1 ReLU, tanh-squashed output (imported; SB3's SAC and CleanRL's SAC/TD3 default size; Pendulum).
    PendulumSquashed256 = "pendulum-squashed-256", "3-256-256-1 relu, tanh-squashed (SAC/TD3)", Pendulum, Squashed<3, 256, 256, 1>;
    /// Deterministic 3-400-300-1 ReLU, tanh-squashed output (imported; SB3's TD3 default size; Pendulum).
    PendulumSquashed400 = "pendulum-squashed-400-300", "3-400-300-1 relu, tanh-squashed (SAC/TD3)", Pendulum, Squashed<3, 400, 300, 1>;
    /// Categorical 6-64-64-3 (Acrobot).
    Acrobot = "acrobot", "6-64-64-3 categorical", Acrobot, agent::Policy<Acrobot, 64>;
    /// Categorical 6-64-64-3 with ReLU hidden layers (imported; Acrobot).
    AcrobotRelu = "acrobot-relu", "6-64-64-3 categorical relu", Acrobot, Policy<CategoricalActor<Mlp<6, 64, 3, Relu>>, 6>;
    /// Gaussian 2-64-64-1 with learnable log_std (continuous MountainCar).
    MountaincarContinuous = "mountaincar-continuous", "2-64-64-1 gaussian", MountainCarContinuous, agent::Policy<MountainCarContinuous, 64>;
    /// Gaussian 2-64-64-1 with ReLU hidden layers (imported; continuous MountainCar).
    MountaincarContinuousRelu = "mountaincar-continuous-relu", "2-64-64-1 gaussian relu", MountainCarContinuous, Policy<GaussianActor<Mlp<2, 64, 1, Relu>, 1>, 2>;
    /// Deterministic 2-64-64-1 ReLU, tanh-squashed output (SAC, TD3; continuous MountainCar).
    MountaincarContinuousSquashed = "mountaincar-continuous-squashed", "2-64-64-1 relu, tanh-squashed (SAC/TD3)", MountainCarContinuous, Deployed<agent::Sac<MountainCarContinuous, 64, 1, 1, 3>>;
    /// Deterministic 2-256-256-1 ReLU, tanh-squashed output (imported; SB3's SAC and CleanRL's SAC/TD3 default size; continuous MountainCar).
    MountaincarContinuousSquashed256 = "mountaincar-continuous-squashed-256", "2-256-256-1 relu, tanh-squashed (SAC/TD3)", MountainCarContinuous, Squashed<2, 256, 256, 1>;
    /// Deterministic 2-400-300-1 ReLU, tanh-squashed output (imported; SB3's TD3 default size; continuous MountainCar).
    MountaincarContinuousSquashed400 = "mountaincar-continuous-squashed-400-300", "2-400-300-1 relu, tanh-squashed (SAC/TD3)", MountainCarContinuous, Squashed<2, 400, 300, 1>;
    /// Gaussian 5-64-64-1 with learnable log_std (cart-pole swing-up).
    CartpoleSwingup = "cartpole-swingup", "5-64-64-1 gaussian", CartPoleSwingUp, agent::Policy<CartPoleSwingUp, 64>;
    /// Gaussian 5-64-64-1 with ReLU hidden layers (imported; cart-pole swing-up).
    CartpoleSwingupRelu = "cartpole-swingup-relu", "5-64-64-1 gaussian relu", CartPoleSwingUp, Policy<GaussianActor<Mlp<5, 64, 1, Relu>, 1>, 5>;
    /// Deterministic 5-64-64-1 ReLU, tanh-squashed output (SAC, TD3; cart-pole swing-up).
    CartpoleSwingupSquashed = "cartpole-swingup-squashed", "5-64-64-1 relu, tanh-squashed (SAC/TD3)", CartPoleSwingUp, Deployed<agent::Sac<CartPoleSwingUp, 64, 1, 1, 6>>;
    /// Gaussian 3-64-64-1 with learnable log_std (DC-motor servo).
    Servo = "servo", "3-64-64-1 gaussian", Servo, agent::Policy<Servo, 64>;
    /// Gaussian 3-64-64-1 with ReLU hidden layers (imported; DC-motor servo).
    ServoRelu = "servo-relu", "3-64-64-1 gaussian relu", Servo, Policy<GaussianActor<Mlp<3, 64, 1, Relu>, 1>, 3>;
    /// Deterministic 3-64-64-1 ReLU, tanh-squashed output (SAC, TD3; DC-motor servo).
    ServoSquashed = "servo-squashed", "3-64-64-1 relu, tanh-squashed (SAC/TD3)", Servo, Deployed<agent::Sac<Servo, 64, 1, 1, 4>>;
    /// Gaussian 6-64-64-2 with learnable log_std (planar quadrotor).
    Quadrotor2d = "quadrotor-2d", "6-64-64-2 gaussian", Quadrotor2d, agent::Policy<Quadrotor2d, 64>;
    /// Gaussian 6-64-64-2 with ReLU hidden layers (imported; planar quadrotor).
    Quadrotor2dRelu = "quadrotor-2d-relu", "6-64-64-2 gaussian relu", Quadrotor2d, Policy<GaussianActor<Mlp<6, 64, 2, Relu>, 2>, 6>;
    /// Deterministic 6-64-64-2 ReLU, tanh-squashed output (SAC, TD3; planar quadrotor).
    Quadrotor2dSquashed = "quadrotor-2d-squashed", "6-64-64-2 relu, tanh-squashed (SAC/TD3)", Quadrotor2d, Deployed<agent::Sac<Quadrotor2d, 64, 1, 1, 8>>;
    /// Gaussian 7-64-64-1 with learnable log_std (a one-input family plant).
    Family = "family", "7-64-64-1 gaussian", Plant1, agent::Policy<Plant1, 64>;
    /// Deterministic 7-64-64-1 ReLU, tanh-squashed output (SAC, TD3; a one-input family plant).
    FamilySquashed = "family-squashed", "7-64-64-1 relu, tanh-squashed (SAC/TD3)", Plant1, Deployed<agent::Sac<Plant1, 64, 1, 1, 8>>;
    /// Gaussian 10-64-64-2 with learnable log_std (a two-input family plant).
    Family2 = "family-2", "10-64-64-2 gaussian", Plant2, agent::Policy<Plant2, 64>;
    /// Deterministic 10-64-64-2 ReLU, tanh-squashed output (SAC, TD3; a two-input family plant).
    Family2Squashed = "family-2-squashed", "10-64-64-2 relu, tanh-squashed (SAC/TD3)", Plant2, Deployed<agent::Sac<Plant2, 64, 1, 1, 12>>;
    /// Categorical 7-64-64-3 (a three-level family plant).
    FamilyDiscrete = "family-discrete", "7-64-64-3 categorical", PlantDiscrete, agent::Policy<PlantDiscrete, 64>;
}

/// What kind of deployed policy a type is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    /// Action probabilities over a discrete space.
    Categorical,
    /// A Gaussian whose mean, clipped to the bounds, is the command.
    Gaussian,
    /// SAC's and TD3's deterministic `tanh(μ(s))` scaled to the bounds.
    Squashed,
}

/// An operation on the policy type of an [`Arch`] ([`Arch::with_policy`]).
pub trait PolicyVisitor {
    /// What the operation returns.
    type Out;
    /// Runs the operation on `arch`, whose policy type is `P`, acting in
    /// plant `E` with `OBS` observations.
    fn visit<P: PolicyFor<E, OBS>, E: TaskOf<OBS>, const OBS: usize>(self, arch: Arch)
    -> Self::Out;
}

/// A policy type that acts in plant `E`: [`PolicyVisitor::visit`]'s bound.
pub trait PolicyFor<E: Env, const OBS: usize>:
    Deployable<OBS, Space = E::Space> + Controller<OBS, Action = ActionOf<E>>
{
}

impl<P, E: Env, const OBS: usize> PolicyFor<E, OBS> for P where
    P: Deployable<OBS, Space = E::Space> + Controller<OBS, Action = ActionOf<E>>
{
}

/// A task with `OBS` observations: [`PolicyVisitor::visit`]'s bound.
pub trait TaskOf<const OBS: usize>: Task<Obs = SVector<f32, OBS>> {}

impl<E: Task<Obs = SVector<f32, OBS>>, const OBS: usize> TaskOf<OBS> for E {}

/// A deployable policy type: what differs between the kinds of policy.
pub trait Deployable<const OBS: usize>: Params + Sized + 'static {
    /// The action space it acts in.
    type Space: ActionSpace;
    /// Its kind.
    const KIND: PolicyKind;
    /// Its memory figures, reported as `arch`.
    fn footprint(arch: Arch) -> Footprint;
    /// Initialises a zeroed policy from `rng` with the plant's `space`.
    fn init_from(&mut self, space: Self::Space, rng: &mut Xoshiro128PlusPlus);
    /// The command at `obs` (and for a categorical policy its probabilities).
    ///
    /// # Errors
    /// A non-finite observation or output.
    fn action(&self, obs: &SVector<f32, OBS>) -> anyhow::Result<Action>;
    /// The action space it was trained in (a continuous one's bounds).
    fn space(&self) -> Self::Space;
}

/// The kind-specific part of [`Deployable`] for the policies of an
/// on-policy actor, `Policy<A, OBS>`.
pub trait ActorKind<const OBS: usize>: Actor<OBS> + Sized {
    /// Its kind.
    const KIND: PolicyKind;
    /// `policy`'s command at `obs`.
    ///
    /// # Errors
    /// A non-finite observation or output.
    fn describe(policy: &Policy<Self, OBS>, obs: &SVector<f32, OBS>) -> anyhow::Result<Action>;
}

impl<N, const OBS: usize, const ACT: usize> ActorKind<OBS> for CategoricalActor<N>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
{
    const KIND: PolicyKind = PolicyKind::Categorical;
    fn describe(policy: &Policy<Self, OBS>, obs: &SVector<f32, OBS>) -> anyhow::Result<Action> {
        let action = policy.act(obs)?;
        let input = policy.obs_norm.normalize(obs)?;
        let dist = policy.actor.distribution(&input)?;
        Ok(Action {
            discrete: Some(action),
            probs: Some(dist.probs().iter().copied().collect()),
            continuous: None,
            bounds: None,
        })
    }
}

impl<N, const OBS: usize, const ACT: usize> ActorKind<OBS> for GaussianActor<N, ACT>
where
    Self: Actor<OBS, Space = Continuous<ACT>, Action = SVector<f32, ACT>>,
{
    const KIND: PolicyKind = PolicyKind::Gaussian;
    fn describe(policy: &Policy<Self, OBS>, obs: &SVector<f32, OBS>) -> anyhow::Result<Action> {
        continuous(policy.act(obs)?, &policy.space)
    }
}

impl<A: ActorKind<OBS> + 'static, const OBS: usize> Deployable<OBS> for Policy<A, OBS>
where
    Self: Params,
{
    type Space = A::Space;
    const KIND: PolicyKind = A::KIND;
    fn footprint(arch: Arch) -> Footprint {
        Footprint::of::<Self, OBS>(arch)
    }
    fn init_from(&mut self, space: Self::Space, rng: &mut Xoshiro128PlusPlus) {
        self.actor.init(rng);
        self.space = space;
    }
    fn space(&self) -> Self::Space {
        self.space
    }
    fn action(&self, obs: &SVector<f32, OBS>) -> anyhow::Result<Action> {
        A::describe(self, obs)
    }
}

impl<N, const OBS: usize, const ACT: usize> Deployable<OBS> for TanhPolicy<N, ACT>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>> + Params + 'static,
    Self: Params,
{
    type Space = Continuous<ACT>;
    const KIND: PolicyKind = PolicyKind::Squashed;
    fn footprint(arch: Arch) -> Footprint {
        Footprint::squashed::<Self, N>(arch)
    }
    fn init_from(&mut self, space: Self::Space, rng: &mut Xoshiro128PlusPlus) {
        torch_default_init(&mut self.net, rng);
        self.space = space;
    }
    fn space(&self) -> Self::Space {
        self.space
    }
    fn action(&self, obs: &SVector<f32, OBS>) -> anyhow::Result<Action> {
        continuous(self.act(obs)?, &self.space)
    }
}

/// A continuous command and the bounds it lies in.
fn continuous<const ACT: usize>(
    command: SVector<f32, ACT>,
    space: &Continuous<ACT>,
) -> anyhow::Result<Action> {
    Ok(Action {
        discrete: None,
        probs: None,
        continuous: Some(command.iter().copied().collect()),
        bounds: Some((0..ACT).map(|i| [space.low[i], space.high[i]]).collect()),
    })
}

/// [`Arch::detect`]: the blob loads as the policy type.
struct Loads<'a>(&'a [u8]);

impl PolicyVisitor for Loads<'_> {
    type Out = bool;
    fn visit<P: PolicyFor<E, OBS>, E: TaskOf<OBS>, const OBS: usize>(self, _: Arch) -> bool {
        load::<P>(self.0).is_ok()
    }
}

/// Whether the policy in the blob acts in its plant's default action space.
struct PlantBounds<'a>(&'a [u8]);

impl PolicyVisitor for PlantBounds<'_> {
    type Out = bool;
    fn visit<P: PolicyFor<E, OBS>, E: TaskOf<OBS>, const OBS: usize>(self, _: Arch) -> bool {
        let plant = E::plant(&toml::Table::new());
        match (load::<P>(self.0), plant) {
            (Ok(policy), Ok(plant)) => policy.space() == plant.action_space(),
            _ => false,
        }
    }
}

/// The kind of policy and its first tensor's shape tag (which carries the
/// hidden activation).
struct Facts;

impl PolicyVisitor for Facts {
    type Out = (PolicyKind, microrl::params::TensorShape);
    fn visit<P: PolicyFor<E, OBS>, E: TaskOf<OBS>, const OBS: usize>(self, _: Arch) -> Self::Out {
        (P::KIND, P::shape(0))
    }
}

/// [`Arch::footprint`].
struct Figures;

impl PolicyVisitor for Figures {
    type Out = Footprint;
    fn visit<P: PolicyFor<E, OBS>, E: TaskOf<OBS>, const OBS: usize>(
        self,
        arch: Arch,
    ) -> Footprint {
        P::footprint(arch)
    }
}

impl Arch {
    /// The kind of policy.
    pub fn kind(self) -> PolicyKind {
        self.with_policy(Facts).0
    }

    /// The shape of the policy's first tensor (the first layer's weight:
    /// `rows` hidden units by `cols` observations).
    pub fn first_layer(self) -> microrl::params::TensorShape {
        self.with_policy(Facts).1
    }

    /// The hidden layers' widths, `64-64` (the rows of every weight but
    /// the output layer's).
    pub fn hidden_sizes(self) -> String {
        struct Hidden;
        impl PolicyVisitor for Hidden {
            type Out = Vec<u32>;
            fn visit<P: PolicyFor<E, OBS>, E: TaskOf<OBS>, const OBS: usize>(
                self,
                _: Arch,
            ) -> Self::Out {
                (0..P::TENSORS)
                    .map(P::shape)
                    .filter(|s| s.tag & !0xff == microrl::params::tag::WEIGHT)
                    .map(|s| s.rows)
                    .collect()
            }
        }
        let rows = self.with_policy(Hidden);
        rows[..rows.len().saturating_sub(1)]
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("-")
    }

    /// A deterministic SAC/TD3 policy (`tanh(μ(s))` scaled to the bounds)
    /// rather than PPO's stochastic one.
    pub fn squashed(self) -> bool {
        self.kind() == PolicyKind::Squashed
    }

    /// The activation of the hidden layers (the activation byte of the
    /// first layer's tag).
    pub fn activation(self) -> Activation {
        if self.first_layer().tag & 0xff == <Relu as microrl::nn::Activation>::ID {
            Activation::Relu
        } else {
            Activation::Tanh
        }
    }

    /// This architecture with `activation` hidden layers: the one of the
    /// same task, kind and shapes (this one if there is none).
    pub fn with_activation(self, activation: Activation) -> Arch {
        let blob = self.footprint().blob_bytes;
        Arch::ALL
            .into_iter()
            .find(|a| {
                a.env() == self.env()
                    && a.kind() == self.kind()
                    && a.footprint().blob_bytes == blob
                    && a.activation() == activation
            })
            .unwrap_or(self)
    }

    /// Observation size.
    pub fn obs_dim(self) -> usize {
        self.env().obs_dim()
    }

    /// The architecture whose policy `blob` is: the one that loads it
    /// (length, tensor shapes and kinds, checksum, finite values). Two
    /// plants with the same sizes (Pendulum and the servo: 3 observations,
    /// one action) load each other's files; then the one whose plant's
    /// actuator bounds are the file's wins (Pendulum ±2 N·m, the servo ±1),
    /// else the first. [`detect_for`](Self::detect_for) decides by the task.
    pub fn detect(blob: &[u8]) -> Option<Arch> {
        let loads: Vec<Arch> = Arch::ALL
            .into_iter()
            .filter(|a| a.with_policy(Loads(blob)))
            .collect();
        loads
            .iter()
            .copied()
            .find(|a| loads.len() == 1 || a.with_policy(PlantBounds(blob)))
            .or(loads.first().copied())
    }

    /// The architecture of `blob` among those acting in `env`.
    pub fn detect_for(blob: &[u8], env: EnvName) -> Option<Arch> {
        Arch::ALL
            .into_iter()
            .find(|a| a.env() == env && a.with_policy(Loads(blob)))
    }

    /// Memory figures for this architecture.
    pub fn footprint(self) -> Footprint {
        self.with_policy(Figures)
    }
}

/// Parameter count and memory of one policy type.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Footprint {
    /// Which architecture.
    pub arch: Arch,
    /// Layer sizes.
    pub layers: &'static str,
    /// Number of trainable scalars (the actor's parameters).
    pub params: usize,
    /// `size_of` the deployable policy (actor, normaliser, action space).
    pub inference_bytes: usize,
    /// `size_of` the actor's parameters + gradients + Adam moments and step count.
    pub train_state_bytes: usize,
    /// Of which: `size_of` the Adam state (two moments, step, config).
    pub adam_bytes: usize,
    /// `size_of` the per-sample activation cache used by backpropagation.
    pub cache_bytes: usize,
    /// Length of the serialised policy file (header, tensors, CRC-32).
    pub blob_bytes: usize,
}

impl Footprint {
    /// Figures for the deployable policy `Policy<A, OBS>`.
    fn of<P, const OBS: usize>(arch: Arch) -> Self
    where
        P: Params + IsPolicy<OBS>,
    {
        Footprint {
            arch,
            layers: arch.layers(),
            params: <P::Actor as Params>::LEN,
            inference_bytes: core::mem::size_of::<P>(),
            train_state_bytes: core::mem::size_of::<TrainState<P::Actor>>(),
            adam_bytes: core::mem::size_of::<Adam<P::Actor>>(),
            cache_bytes: core::mem::size_of::<<P::Actor as Actor<OBS>>::Cache>(),
            blob_bytes: serialize::encoded_len::<P>(),
        }
    }
}

impl Footprint {
    /// Figures for a deployed SAC/TD3 policy `TanhPolicy<N, 1>`: the
    /// training state and cache are those of its network.
    fn squashed<P, N>(arch: Arch) -> Self
    where
        P: Params + IsSquashed<Net = N>,
        N: microrl::nn::Layer,
    {
        Footprint {
            arch,
            layers: arch.layers(),
            params: N::LEN,
            inference_bytes: core::mem::size_of::<P>(),
            train_state_bytes: core::mem::size_of::<TrainState<N>>(),
            adam_bytes: core::mem::size_of::<Adam<N>>(),
            cache_bytes: core::mem::size_of::<N::Cache>(),
            blob_bytes: serialize::encoded_len::<P>(),
        }
    }
}

/// Names the network inside a `TanhPolicy<N, ACT>`.
pub trait IsSquashed {
    /// The network.
    type Net;
}

impl<N, const ACT: usize> IsSquashed for TanhPolicy<N, ACT> {
    type Net = N;
}

/// Names the actor type inside a `Policy<A, OBS>`.
pub trait IsPolicy<const OBS: usize> {
    /// The actor.
    type Actor: Actor<OBS>;
}

impl<A: Actor<OBS>, const OBS: usize> IsPolicy<OBS> for Policy<A, OBS> {
    type Actor = A;
}

/// Loads `blob` as policy type `P` (boxed: the 64-wide ones are 18 KB), of
/// any maths backend: the desktop tool evaluates, acts with and exports a
/// policy of another backend (`serialize::load_any_backend`), and the
/// commands say so once ([`crate::commands::backend_note`]).
///
/// # Errors
/// The core's load error (shape, kind, checksum, non-finite value, …).
pub fn load<P: Params>(blob: &[u8]) -> Result<Box<P>, microrl::Error> {
    let mut policy = Box::new(P::ZERO);
    serialize::load_any_backend(&mut *policy, blob)?;
    Ok(policy)
}

/// A freshly initialised policy (orthogonal, SB3 gains, zero biases,
/// `log_std = 0`, an empty normaliser, the task's action space; SAC's and
/// TD3's: PyTorch's default initialisation and the bounds) serialised in the
/// core's binary format.
pub fn init_blob(arch: Arch, seed: u64) -> anyhow::Result<Vec<u8>> {
    struct Fresh(u64);
    impl PolicyVisitor for Fresh {
        type Out = anyhow::Result<Vec<u8>>;
        fn visit<P: PolicyFor<E, OBS>, E: TaskOf<OBS>, const OBS: usize>(
            self,
            _: Arch,
        ) -> Self::Out {
            use rand_core::SeedableRng;
            let mut rng = Xoshiro128PlusPlus::seed_from_u64(self.0);
            let space = E::plant(&toml::Table::new())?.action_space();
            let mut policy = Box::new(P::ZERO);
            policy.init_from(space, &mut rng);
            Ok(serialize::to_vec(&*policy)?)
        }
    }
    arch.with_policy(Fresh(seed))
}

/// The activation of an architecture's hidden layers (`import --activation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Activation {
    /// tanh: what microrl trains, SB3's and CleanRL's default for PPO.
    Tanh,
    /// ReLU (`activation_fn=nn.ReLU`).
    Relu,
}

impl Activation {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Activation::Tanh => "tanh",
            Activation::Relu => "relu",
        }
    }
}

/// The deterministic command a policy blob takes at one observation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Action {
    /// Discrete action index (categorical policies).
    pub discrete: Option<usize>,
    /// Action probabilities (categorical policies).
    pub probs: Option<Vec<f32>>,
    /// Continuous command: a Gaussian policy's mean clipped to the actuator
    /// bounds, or a SAC/TD3 actor's `tanh(μ(s))` scaled to them.
    pub continuous: Option<Vec<f32>>,
    /// The actuator bounds `[low, high]` per dimension (continuous policies).
    pub bounds: Option<Vec<[f32; 2]>>,
}

/// Loads `blob` as `arch` and returns the deployed policy's command at `obs`
/// (exactly what the firmware would send to the plant).
pub fn act(arch: Arch, blob: &[u8], obs: &[f32]) -> anyhow::Result<Action> {
    check_len(arch, obs)?;
    actor(arch, blob)?(obs)
}

/// A policy loaded once, acting on one observation at a time (what [`act`]
/// does for each, without loading and checking the file again).
pub type Acting = Box<dyn Fn(&[f32]) -> anyhow::Result<Action>>;

/// Loads `blob` as `arch` for [`Acting`] on many observations; each call
/// checks its observation's length and values as [`act`] does.
///
/// # Errors
/// The blob does not load as `arch`.
pub fn actor(arch: Arch, blob: &[u8]) -> anyhow::Result<Acting> {
    struct Loaded<'a>(&'a [u8]);
    impl PolicyVisitor for Loaded<'_> {
        type Out = anyhow::Result<Acting>;
        fn visit<P: PolicyFor<E, OBS>, E: TaskOf<OBS>, const OBS: usize>(
            self,
            arch: Arch,
        ) -> Self::Out {
            let p = load::<P>(self.0)?;
            Ok(Box::new(move |obs: &[f32]| {
                check_len(arch, obs)?;
                p.action(&SVector::<f32, OBS>::from_column_slice(obs))
            }))
        }
    }
    arch.with_policy(Loaded(blob))
}

/// `obs` has `arch`'s observation size.
fn check_len(arch: Arch, obs: &[f32]) -> anyhow::Result<()> {
    anyhow::ensure!(
        obs.len() == arch.obs_dim(),
        "{} expects {} observation values, got {}",
        arch.name(),
        arch.obs_dim(),
        obs.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cartpole_footprint() {
        let f = Arch::Cartpole.footprint();
        assert_eq!(f.params, 4610);
        // Actor + normaliser (2·4 + 1) + no action-space tensors.
        assert_eq!(f.inference_bytes, (4610 + 9) * 4);
        assert!(f.train_state_bytes >= 4 * 4610 * 4);
    }

    #[test]
    fn names_match_the_command_line_and_json() {
        use clap::ValueEnum;
        for arch in Arch::ALL {
            assert_eq!(arch.to_possible_value().unwrap().get_name(), arch.name());
            assert_eq!(serde_json::to_value(arch).unwrap(), arch.name());
        }
    }

    #[test]
    fn init_then_act_and_detect() {
        for arch in Arch::ALL {
            let blob = init_blob(arch, 3).unwrap();
            assert_eq!(blob.len(), arch.footprint().blob_bytes);
            assert_eq!(Arch::detect(&blob), Some(arch));
            let obs = vec![0.01; arch.obs_dim()];
            let action = act(arch, &blob, &obs).unwrap();
            assert!(action.discrete.is_some() || action.continuous.is_some());
        }
        let blob = init_blob(Arch::Cartpole, 3).unwrap();
        assert!(
            act(Arch::CartpoleSmall, &blob, &[0.0; 4]).is_err(),
            "wrong architecture must not load"
        );
        assert!(act(Arch::Cartpole, &blob, &[0.0; 3]).is_err());
        assert!(act(Arch::Cartpole, &blob, &[f32::NAN, 0.0, 0.0, 0.0]).is_err());
        assert_eq!(Arch::detect(&blob[..blob.len() - 1]), None);
    }
}
