//! # microrl
//!
//! Reinforcement learning that trains on microcontrollers.
//!
//! `microrl` is `#![no_std]`, needs no allocator and contains no `unsafe`. Every
//! network size is a const generic, every buffer is owned by the caller, and
//! every random draw comes from a caller-supplied [`rand_core::Rng`], so the
//! same code trains a policy on the desktop and keeps training it on a
//! Cortex-M4F — with bit-identical arithmetic on both.
//!
//! ## Layout (by concern)
//! - [`nn`]: dense layers, activations, MLPs; inference and training passes,
//!   hand-written backpropagation, orthogonal initialisation.
//! - [`policy`]: action distributions ([`Categorical`](policy::Categorical),
//!   [`Gaussian`](policy::Gaussian)) and inference-only policies.
//! - [`optim`]: Adam, SGD, global gradient-norm clipping, schedules, and
//!   [`TrainState`](optim::TrainState) (parameters + gradients + optimiser).
//! - [`loss`]: policy-gradient losses (PPO's clipped surrogate, value loss)
//!   with their gradients.
//! - [`serialize`]: the checksummed binary format that carries weights from the
//!   desktop to the firmware.
//! - [`params`], [`math`], [`rng`]: the plumbing the rest stands on.
//!
//! ## Memory
//! A 4-64-64-2 categorical policy (CartPole) has 4 610 parameters: 18 440
//! bytes for inference. Training it with Adam adds a gradient and two moment
//! estimates of the same shape (see [`optim::TrainState`]).
//!
//! ## Example
//!
//! ```
//! # fn main() -> Result<(), microrl::Error> {
//! use microrl::nn::{gain, Layer, Mlp};
//! use microrl::optim::{AdamConfig, TrainState};
//! use microrl::policy::{Categorical, CategoricalPolicy};
//! use microrl::{serialize, Params, SVector};
//! use rand_core::SeedableRng;
//!
//! type Net = Mlp<4, 64, 2>; // 4 → 64 → 64 → 2, tanh
//! let mut rng = rand_xoshiro::Xoshiro128PlusPlus::seed_from_u64(0);
//!
//! // Training memory: parameters, gradients and Adam moments, all const-sized.
//! let mut state = TrainState::<Net>::new(AdamConfig::default());
//! state.params.init_orthogonal(&mut rng, gain::HIDDEN, gain::POLICY);
//!
//! // One gradient step on −log π(a|s) for a single sample.
//! let obs = SVector::<f32, 4>::new(0.01, -0.02, 0.03, 0.0);
//! let mut cache = Net::EMPTY_CACHE;
//! let logits = state.params.forward_train(&obs, &mut cache);
//! let d_logits = -Categorical::from_logits(&logits)?.grad_log_prob(1)?;
//! state.zero_grad();
//! state.params.backward(&cache, &d_logits, &mut state.grads);
//! state.apply(3e-4, Some(0.5))?; // clip to norm 0.5, then Adam
//!
//! // Deploy: weights only, through the checksummed format.
//! let mut blob = [0u8; serialize::encoded_len::<Net>()];
//! serialize::save(&state.params, &mut blob)?;
//! let mut policy = CategoricalPolicy { net: Net::ZERO };
//! serialize::load(&mut policy.net, &blob)?;
//! let action = policy.act(&obs)?; // deterministic action
//! assert!(action < 2);
//! # Ok(())
//! # }
//! ```
//!
//! ## Cargo features
//! - `std`: allocation helpers for the desktop (`serialize::to_vec`).
//! - `defmt`: `defmt::Format` on errors and statistics.
//! - `fast-math`: pure-`f32` approximations of `exp`/`tanh` ([`math::fast`]).

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

#[cfg(any(feature = "std", test))]
extern crate std;

pub mod algo;
pub mod env;
pub mod error;
pub mod loss;
pub mod math;
pub mod nn;
pub mod normalize;
pub mod optim;
pub mod params;
pub mod policy;
pub mod rng;
pub mod serialize;

pub use error::Error;
pub use nalgebra::{SMatrix, SVector};
pub use params::{Pair, Params, TensorShape};
