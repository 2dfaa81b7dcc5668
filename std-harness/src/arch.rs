//! The policy architectures the harness can create, load and describe.
//!
//! Each is a concrete type from `microrl`; [`Arch`] names them on the command
//! line and [`Footprint`] reports their memory, measured with
//! `core::mem::size_of` on the very types the firmware links.

use microrl::nn::{Layer, Mlp, gain};
use microrl::optim::{Adam, TrainState};
use microrl::policy::{CategoricalPolicy, Gaussian, GaussianPolicy};
use microrl::{Params, SVector, serialize};
use serde::Serialize;

/// Discrete CartPole policy: 4 observations, two hidden layers of 64 tanh units, 2 action logits.
pub type CartPolePolicy = CategoricalPolicy<Mlp<4, 64, 2>>;
/// The MCU-sized CartPole policy, 4-32-32-2.
pub type CartPoleSmallPolicy = CategoricalPolicy<Mlp<4, 32, 2>>;
/// The MCU-sized CartPole critic, 4-32-32-1.
pub type CartPoleSmallCritic = Mlp<4, 32, 1>;
/// CartPole critic, 4-64-64-1.
pub type CartPoleCritic = Mlp<4, 64, 1>;
/// Continuous Pendulum policy: 3 observations, 64-64 tanh, Gaussian over 1 torque.
pub type PendulumPolicy = GaussianPolicy<Mlp<3, 64, 1>, 1>;
/// Pendulum critic, 3-64-64-1.
pub type PendulumCritic = Mlp<3, 64, 1>;
/// Continuous CartPole policy: 4-64-64-1 mean, Gaussian over the force.
pub type CartPoleContinuousPolicy = GaussianPolicy<Mlp<4, 64, 1>, 1>;

/// A named architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arch {
    /// Categorical 4-64-64-2 (CartPole, SB3/CleanRL default size).
    Cartpole,
    /// Categorical 4-32-32-2 (CartPole on small MCUs).
    CartpoleSmall,
    /// Gaussian 3-64-64-1 with learnable log_std (Pendulum).
    Pendulum,
}

impl Arch {
    /// Every architecture, in display order.
    pub const ALL: [Arch; 3] = [Arch::Cartpole, Arch::CartpoleSmall, Arch::Pendulum];

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Arch::Cartpole => "cartpole",
            Arch::CartpoleSmall => "cartpole-small",
            Arch::Pendulum => "pendulum",
        }
    }

    /// Human-readable layer sizes.
    pub fn layers(self) -> &'static str {
        match self {
            Arch::Cartpole => "4-64-64-2 categorical",
            Arch::CartpoleSmall => "4-32-32-2 categorical",
            Arch::Pendulum => "3-64-64-1 gaussian",
        }
    }

    /// Observation size.
    pub fn obs_dim(self) -> usize {
        match self {
            Arch::Cartpole | Arch::CartpoleSmall => 4,
            Arch::Pendulum => 3,
        }
    }

    /// Memory figures for this architecture.
    pub fn footprint(self) -> Footprint {
        match self {
            Arch::Cartpole => Footprint::of::<CartPolePolicy, Mlp<4, 64, 2>>(self),
            Arch::CartpoleSmall => Footprint::of::<CartPoleSmallPolicy, Mlp<4, 32, 2>>(self),
            Arch::Pendulum => Footprint::of::<PendulumPolicy, Mlp<3, 64, 1>>(self),
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
    /// Number of trainable scalars.
    pub params: usize,
    /// `size_of` the inference-only policy (weights only).
    pub inference_bytes: usize,
    /// `size_of` parameters + gradients + Adam moments and step count.
    pub train_state_bytes: usize,
    /// Of which: `size_of` the Adam state (two moments, step, config).
    pub adam_bytes: usize,
    /// `size_of` the per-sample activation cache used by backpropagation.
    pub cache_bytes: usize,
    /// Length of the serialised blob (header, weights, CRC-32).
    pub blob_bytes: usize,
}

impl Footprint {
    /// Figures for policy type `P` whose network is `N`.
    fn of<P: Params, N: Layer>(arch: Arch) -> Self {
        Footprint {
            arch,
            layers: arch.layers(),
            params: P::LEN,
            inference_bytes: core::mem::size_of::<P>(),
            train_state_bytes: core::mem::size_of::<TrainState<P>>(),
            adam_bytes: core::mem::size_of::<Adam<P>>(),
            cache_bytes: core::mem::size_of::<N::Cache>(),
            blob_bytes: serialize::encoded_len::<P>(),
        }
    }
}

/// A freshly initialised policy (orthogonal, SB3 gains, zero biases,
/// `log_std = 0`) serialised in the core's binary format.
pub fn init_blob(arch: Arch, seed: u64) -> anyhow::Result<Vec<u8>> {
    use rand_core::SeedableRng;
    let mut rng = rand_xoshiro::Xoshiro128PlusPlus::seed_from_u64(seed);
    let blob = match arch {
        Arch::Cartpole => {
            let mut p = Box::new(CartPolePolicy::ZERO);
            p.net.init_orthogonal(&mut rng, gain::HIDDEN, gain::POLICY);
            serialize::to_vec(&*p)
        }
        Arch::CartpoleSmall => {
            let mut p = Box::new(CartPoleSmallPolicy::ZERO);
            p.net.init_orthogonal(&mut rng, gain::HIDDEN, gain::POLICY);
            serialize::to_vec(&*p)
        }
        Arch::Pendulum => {
            let mut p = Box::new(PendulumPolicy::ZERO);
            p.net.init_orthogonal(&mut rng, gain::HIDDEN, gain::POLICY);
            p.head = Gaussian::with_log_std(0.0);
            serialize::to_vec(&*p)
        }
    };
    Ok(blob?)
}

/// The deterministic action a policy blob of architecture `arch` takes at `obs`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Action {
    /// Discrete action index (categorical policies).
    pub discrete: Option<usize>,
    /// Action probabilities (categorical policies).
    pub probs: Option<Vec<f32>>,
    /// Continuous action, the Gaussian mean (Gaussian policies).
    pub continuous: Option<Vec<f32>>,
}

/// Loads `blob` as `arch` and evaluates its deterministic action at `obs`.
pub fn act(arch: Arch, blob: &[u8], obs: &[f32]) -> anyhow::Result<Action> {
    anyhow::ensure!(
        obs.len() == arch.obs_dim(),
        "{arch:?} expects {} observation values, got {}",
        arch.obs_dim(),
        obs.len()
    );
    fn categorical<const H: usize>(blob: &[u8], obs: &[f32]) -> anyhow::Result<Action> {
        let mut p = Box::new(CategoricalPolicy::<Mlp<4, H, 2>>::ZERO);
        serialize::load(&mut *p, blob)?;
        let obs = SVector::<f32, 4>::from_column_slice(obs);
        let dist = p.distribution(&obs)?;
        Ok(Action {
            discrete: Some(dist.mode()),
            probs: Some(dist.probs().iter().copied().collect()),
            continuous: None,
        })
    }
    match arch {
        Arch::Cartpole => categorical::<64>(blob, obs),
        Arch::CartpoleSmall => categorical::<32>(blob, obs),
        Arch::Pendulum => {
            let mut p = Box::new(PendulumPolicy::ZERO);
            serialize::load(&mut *p, blob)?;
            let mean = p.act(&SVector::<f32, 3>::from_column_slice(obs))?;
            Ok(Action {
                discrete: None,
                probs: None,
                continuous: Some(mean.iter().copied().collect()),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cartpole_footprint() {
        let f = Arch::Cartpole.footprint();
        assert_eq!(f.params, 4610);
        assert_eq!(f.inference_bytes, 4610 * 4);
        assert!(f.train_state_bytes >= 4 * f.inference_bytes);
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
    fn init_then_act() {
        for arch in Arch::ALL {
            let blob = init_blob(arch, 3).unwrap();
            assert_eq!(blob.len(), arch.footprint().blob_bytes);
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
    }
}
