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

use microrl::algo::offpolicy::{TanhPolicy, torch_default_init};
use microrl::env::{ActionSpace, CartPole, CartPoleContinuous, Continuous, Env, Pendulum};
use microrl::nn::{Mlp, Relu};
use microrl::optim::{Adam, TrainState};
use microrl::policy::{Actor, CategoricalActor, Controller, GaussianActor, Policy};
use microrl::{Params, SVector, agent, serialize};
use serde::Serialize;

use crate::train::EnvName;

/// Discrete CartPole policy: 4 observations, two hidden layers of 64 tanh units, 2 action logits.
pub type CartPolePolicy = agent::Policy<CartPole, 64>;
/// The MCU-sized CartPole policy, 4-32-32-2 (`--small`).
pub type CartPoleSmallPolicy = agent::Policy<CartPole, 32>;
/// Continuous CartPole policy: 4-64-64-1 mean, Gaussian over the force, bounds ±1.
pub type CartPoleContinuousPolicy = agent::Policy<CartPoleContinuous, 64>;
/// Pendulum policy: 3-64-64-1 mean, Gaussian over the torque, bounds ±2.
pub type PendulumPolicy = agent::Policy<Pendulum, 64>;
/// [`CartPolePolicy`] with ReLU hidden layers (an imported SB3/CleanRL policy
/// trained with `activation_fn=nn.ReLU`).
pub type CartPoleReluPolicy = Policy<CategoricalActor<Mlp<4, 64, 2, Relu>>, 4>;
/// [`CartPoleSmallPolicy`] with ReLU hidden layers.
pub type CartPoleSmallReluPolicy = Policy<CategoricalActor<Mlp<4, 32, 2, Relu>>, 4>;
/// [`CartPoleContinuousPolicy`] with ReLU hidden layers.
pub type CartPoleContinuousReluPolicy = Policy<GaussianActor<Mlp<4, 64, 1, Relu>, 1>, 4>;
/// [`PendulumPolicy`] with ReLU hidden layers.
pub type PendulumReluPolicy = Policy<GaussianActor<Mlp<3, 64, 1, Relu>, 1>, 3>;

/// The deployed policy of SAC and TD3 on continuous CartPole:
/// `tanh(μ(s))` of a 4-64-64-1 ReLU network, scaled to the bounds.
pub type CartPoleContinuousSquashedPolicy =
    microrl::Deployed<agent::Sac<CartPoleContinuous, 64, 1, 1, 5>>;
/// The deployed policy of SAC and TD3 on Pendulum: 3-64-64-1 ReLU, tanh
/// output scaled to the torque bounds.
pub type PendulumSquashedPolicy = microrl::Deployed<agent::Sac<Pendulum, 64, 1, 1, 4>>;

/// A named architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arch {
    /// Categorical 4-64-64-2 (CartPole, SB3/CleanRL default size).
    Cartpole,
    /// Categorical 4-32-32-2 (CartPole on small MCUs).
    CartpoleSmall,
    /// Gaussian 4-64-64-1 with learnable log_std (continuous CartPole).
    CartpoleContinuous,
    /// Gaussian 3-64-64-1 with learnable log_std (Pendulum).
    Pendulum,
    /// Categorical 4-64-64-2 with ReLU hidden layers (imported; CartPole).
    CartpoleRelu,
    /// Categorical 4-32-32-2 with ReLU hidden layers (imported; CartPole).
    CartpoleSmallRelu,
    /// Gaussian 4-64-64-1 with ReLU hidden layers (imported; continuous CartPole).
    CartpoleContinuousRelu,
    /// Gaussian 3-64-64-1 with ReLU hidden layers (imported; Pendulum).
    PendulumRelu,
    /// Deterministic 4-64-64-1 ReLU, tanh-squashed output (SAC, TD3; continuous CartPole).
    CartpoleContinuousSquashed,
    /// Deterministic 3-64-64-1 ReLU, tanh-squashed output (SAC, TD3; Pendulum).
    PendulumSquashed,
}

impl Arch {
    /// Every architecture, in display order.
    pub const ALL: [Arch; 10] = [
        Arch::Cartpole,
        Arch::CartpoleSmall,
        Arch::CartpoleContinuous,
        Arch::Pendulum,
        Arch::CartpoleRelu,
        Arch::CartpoleSmallRelu,
        Arch::CartpoleContinuousRelu,
        Arch::PendulumRelu,
        Arch::CartpoleContinuousSquashed,
        Arch::PendulumSquashed,
    ];

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Arch::Cartpole => "cartpole",
            Arch::CartpoleSmall => "cartpole-small",
            Arch::CartpoleContinuous => "cartpole-continuous",
            Arch::Pendulum => "pendulum",
            Arch::CartpoleRelu => "cartpole-relu",
            Arch::CartpoleSmallRelu => "cartpole-small-relu",
            Arch::CartpoleContinuousRelu => "cartpole-continuous-relu",
            Arch::PendulumRelu => "pendulum-relu",
            Arch::CartpoleContinuousSquashed => "cartpole-continuous-squashed",
            Arch::PendulumSquashed => "pendulum-squashed",
        }
    }

    /// Human-readable layer sizes.
    pub fn layers(self) -> &'static str {
        match self {
            Arch::Cartpole => "4-64-64-2 categorical",
            Arch::CartpoleSmall => "4-32-32-2 categorical",
            Arch::CartpoleContinuous => "4-64-64-1 gaussian",
            Arch::Pendulum => "3-64-64-1 gaussian",
            Arch::CartpoleRelu => "4-64-64-2 categorical relu",
            Arch::CartpoleSmallRelu => "4-32-32-2 categorical relu",
            Arch::CartpoleContinuousRelu => "4-64-64-1 gaussian relu",
            Arch::PendulumRelu => "3-64-64-1 gaussian relu",
            Arch::CartpoleContinuousSquashed => "4-64-64-1 relu, tanh-squashed (SAC/TD3)",
            Arch::PendulumSquashed => "3-64-64-1 relu, tanh-squashed (SAC/TD3)",
        }
    }

    /// The task this architecture acts in.
    pub fn env(self) -> EnvName {
        match self {
            Arch::Cartpole | Arch::CartpoleSmall | Arch::CartpoleRelu | Arch::CartpoleSmallRelu => {
                EnvName::Cartpole
            }
            Arch::CartpoleContinuous
            | Arch::CartpoleContinuousRelu
            | Arch::CartpoleContinuousSquashed => EnvName::CartpoleContinuous,
            Arch::Pendulum | Arch::PendulumRelu | Arch::PendulumSquashed => EnvName::Pendulum,
        }
    }

    /// A deterministic SAC/TD3 policy (`tanh(μ(s))` scaled to the bounds)
    /// rather than PPO's stochastic one.
    pub fn squashed(self) -> bool {
        matches!(
            self,
            Arch::CartpoleContinuousSquashed | Arch::PendulumSquashed
        )
    }

    /// The activation of the hidden layers.
    pub fn activation(self) -> Activation {
        match self {
            Arch::Cartpole | Arch::CartpoleSmall | Arch::CartpoleContinuous | Arch::Pendulum => {
                Activation::Tanh
            }
            _ => Activation::Relu,
        }
    }

    /// This architecture with `activation` hidden layers.
    pub fn with_activation(self, activation: Activation) -> Arch {
        let pairs = [
            (Arch::Cartpole, Arch::CartpoleRelu),
            (Arch::CartpoleSmall, Arch::CartpoleSmallRelu),
            (Arch::CartpoleContinuous, Arch::CartpoleContinuousRelu),
            (Arch::Pendulum, Arch::PendulumRelu),
        ];
        let (tanh, relu) = pairs
            .into_iter()
            .find(|(t, r)| *t == self || *r == self)
            .unwrap_or((self, self));
        match activation {
            Activation::Tanh => tanh,
            Activation::Relu => relu,
        }
    }

    /// Observation size.
    pub fn obs_dim(self) -> usize {
        match self.env() {
            EnvName::Cartpole | EnvName::CartpoleContinuous => 4,
            EnvName::Pendulum => 3,
        }
    }

    /// The architecture whose policy `blob` is: the first that loads it
    /// (length, tensor shapes and kinds, checksum, finite values).
    pub fn detect(blob: &[u8]) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| match a {
            Arch::Cartpole => load::<CartPolePolicy>(blob).is_ok(),
            Arch::CartpoleSmall => load::<CartPoleSmallPolicy>(blob).is_ok(),
            Arch::CartpoleContinuous => load::<CartPoleContinuousPolicy>(blob).is_ok(),
            Arch::Pendulum => load::<PendulumPolicy>(blob).is_ok(),
            Arch::CartpoleRelu => load::<CartPoleReluPolicy>(blob).is_ok(),
            Arch::CartpoleSmallRelu => load::<CartPoleSmallReluPolicy>(blob).is_ok(),
            Arch::CartpoleContinuousRelu => load::<CartPoleContinuousReluPolicy>(blob).is_ok(),
            Arch::PendulumRelu => load::<PendulumReluPolicy>(blob).is_ok(),
            Arch::CartpoleContinuousSquashed => {
                load::<CartPoleContinuousSquashedPolicy>(blob).is_ok()
            }
            Arch::PendulumSquashed => load::<PendulumSquashedPolicy>(blob).is_ok(),
        })
    }

    /// Memory figures for this architecture.
    pub fn footprint(self) -> Footprint {
        match self {
            Arch::Cartpole => Footprint::of::<CartPolePolicy, 4>(self),
            Arch::CartpoleSmall => Footprint::of::<CartPoleSmallPolicy, 4>(self),
            Arch::CartpoleContinuous => Footprint::of::<CartPoleContinuousPolicy, 4>(self),
            Arch::Pendulum => Footprint::of::<PendulumPolicy, 3>(self),
            Arch::CartpoleRelu => Footprint::of::<CartPoleReluPolicy, 4>(self),
            Arch::CartpoleSmallRelu => Footprint::of::<CartPoleSmallReluPolicy, 4>(self),
            Arch::CartpoleContinuousRelu => Footprint::of::<CartPoleContinuousReluPolicy, 4>(self),
            Arch::PendulumRelu => Footprint::of::<PendulumReluPolicy, 3>(self),
            Arch::CartpoleContinuousSquashed => {
                Footprint::squashed::<CartPoleContinuousSquashedPolicy, _>(self)
            }
            Arch::PendulumSquashed => Footprint::squashed::<PendulumSquashedPolicy, _>(self),
        }
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
/// `log_std = 0`, an empty normaliser, the task's action space) serialised
/// in the core's binary format.
pub fn init_blob(arch: Arch, seed: u64) -> anyhow::Result<Vec<u8>> {
    fn fresh<A: Actor<OBS> + Params, E, const OBS: usize>(
        env: &E,
        seed: u64,
    ) -> Result<Vec<u8>, microrl::Error>
    where
        E: Env<Space = A::Space>,
    {
        use rand_core::SeedableRng;
        let mut rng = rand_xoshiro::Xoshiro128PlusPlus::seed_from_u64(seed);
        let mut policy = Box::new(Policy::<A, OBS>::ZERO);
        policy.actor.init(&mut rng);
        policy.space = env.action_space();
        serialize::to_vec(&*policy)
    }
    /// PyTorch's default initialisation (SAC's and TD3's) and the bounds.
    fn squashed<P, E>(env: &E, seed: u64) -> Result<Vec<u8>, microrl::Error>
    where
        P: Params + IsSquashed + SetSquashed<E>,
        E: Env,
    {
        use rand_core::SeedableRng;
        let mut rng = rand_xoshiro::Xoshiro128PlusPlus::seed_from_u64(seed);
        let mut policy = Box::new(P::ZERO);
        policy.init_from(env, &mut rng);
        serialize::to_vec(&*policy)
    }
    type Actor4<P> = <P as IsPolicy<4>>::Actor;
    type Actor3<P> = <P as IsPolicy<3>>::Actor;
    let blob = match arch {
        Arch::Cartpole => fresh::<Actor4<CartPolePolicy>, _, 4>(&CartPole::new(), seed),
        Arch::CartpoleSmall => fresh::<Actor4<CartPoleSmallPolicy>, _, 4>(&CartPole::new(), seed),
        Arch::CartpoleContinuous => {
            fresh::<Actor4<CartPoleContinuousPolicy>, _, 4>(&CartPoleContinuous::new(), seed)
        }
        Arch::Pendulum => fresh::<Actor3<PendulumPolicy>, _, 3>(&Pendulum::new(), seed),
        Arch::CartpoleRelu => fresh::<Actor4<CartPoleReluPolicy>, _, 4>(&CartPole::new(), seed),
        Arch::CartpoleSmallRelu => {
            fresh::<Actor4<CartPoleSmallReluPolicy>, _, 4>(&CartPole::new(), seed)
        }
        Arch::CartpoleContinuousRelu => {
            fresh::<Actor4<CartPoleContinuousReluPolicy>, _, 4>(&CartPoleContinuous::new(), seed)
        }
        Arch::PendulumRelu => fresh::<Actor3<PendulumReluPolicy>, _, 3>(&Pendulum::new(), seed),
        Arch::CartpoleContinuousSquashed => {
            squashed::<CartPoleContinuousSquashedPolicy, _>(&CartPoleContinuous::new(), seed)
        }
        Arch::PendulumSquashed => squashed::<PendulumSquashedPolicy, _>(&Pendulum::new(), seed),
    };
    Ok(blob?)
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
    /// Continuous command: the Gaussian mean clipped to the actuator bounds.
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
    fn categorical<const H: usize, A>(arch: Arch, blob: &[u8]) -> anyhow::Result<Acting>
    where
        A: microrl::nn::Activation + 'static,
        CategoricalActor<Mlp<4, H, 2, A>>: Actor<4> + Params,
        Policy<CategoricalActor<Mlp<4, H, 2, A>>, 4>: Controller<4, Action = usize>,
    {
        let p = load::<Policy<CategoricalActor<Mlp<4, H, 2, A>>, 4>>(blob)?;
        Ok(Box::new(move |obs: &[f32]| {
            check_len(arch, obs)?;
            let obs = SVector::<f32, 4>::from_column_slice(obs);
            let action = p.act(&obs)?;
            let input = p.obs_norm.normalize(&obs)?;
            let dist = p.actor.distribution(&input)?;
            Ok(Action {
                discrete: Some(action),
                probs: Some(dist.probs().iter().copied().collect()),
                continuous: None,
                bounds: None,
            })
        }))
    }
    fn gaussian<P, const OBS: usize>(arch: Arch, blob: &[u8]) -> anyhow::Result<Acting>
    where
        P: Params + Controller<OBS, Action = SVector<f32, 1>> + HasBounds + 'static,
    {
        let p = load::<P>(blob)?;
        let bounds = p.bounds();
        Ok(Box::new(move |obs: &[f32]| {
            check_len(arch, obs)?;
            let command = p.act(&SVector::<f32, OBS>::from_column_slice(obs))?;
            Ok(Action {
                discrete: None,
                probs: None,
                continuous: Some(command.iter().copied().collect()),
                bounds: Some(bounds.clone()),
            })
        }))
    }
    match arch {
        Arch::Cartpole => categorical::<64, microrl::nn::Tanh>(arch, blob),
        Arch::CartpoleSmall => categorical::<32, microrl::nn::Tanh>(arch, blob),
        Arch::CartpoleContinuous => gaussian::<CartPoleContinuousPolicy, 4>(arch, blob),
        Arch::Pendulum => gaussian::<PendulumPolicy, 3>(arch, blob),
        Arch::CartpoleRelu => categorical::<64, Relu>(arch, blob),
        Arch::CartpoleSmallRelu => categorical::<32, Relu>(arch, blob),
        Arch::CartpoleContinuousRelu => gaussian::<CartPoleContinuousReluPolicy, 4>(arch, blob),
        Arch::PendulumRelu => gaussian::<PendulumReluPolicy, 3>(arch, blob),
        Arch::CartpoleContinuousSquashed => {
            gaussian::<CartPoleContinuousSquashedPolicy, 4>(arch, blob)
        }
        Arch::PendulumSquashed => gaussian::<PendulumSquashedPolicy, 3>(arch, blob),
    }
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

/// The actuator bounds stored in a continuous policy.
pub trait HasBounds {
    /// `[low, high]` per action dimension.
    fn bounds(&self) -> Vec<[f32; 2]>;
}

impl<N, const OBS: usize> HasBounds for Policy<microrl::policy::GaussianActor<N, 1>, OBS>
where
    microrl::policy::GaussianActor<N, 1>: Actor<OBS, Space = microrl::env::Continuous<1>>,
{
    fn bounds(&self) -> Vec<[f32; 2]> {
        (0..<microrl::env::Continuous<1> as ActionSpace>::DIM)
            .map(|i| [self.space.low[i], self.space.high[i]])
            .collect()
    }
}

impl<N> HasBounds for TanhPolicy<N, 1> {
    fn bounds(&self) -> Vec<[f32; 2]> {
        vec![[self.space.low[0], self.space.high[0]]]
    }
}

/// A fresh SAC/TD3 policy for an environment: PyTorch's default
/// initialisation of the network and the environment's bounds.
pub trait SetSquashed<E> {
    /// Initialises the network from `rng` and takes `env`'s bounds.
    fn init_from(&mut self, env: &E, rng: &mut rand_xoshiro::Xoshiro128PlusPlus);
}

impl<N: Params, E: Env<Space = Continuous<ACT>>, const ACT: usize> SetSquashed<E>
    for TanhPolicy<N, ACT>
{
    fn init_from(&mut self, env: &E, rng: &mut rand_xoshiro::Xoshiro128PlusPlus) {
        torch_default_init(&mut self.net, rng);
        self.space = env.action_space();
    }
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
