//! # microrl
//!
//! Reinforcement learning that trains on microcontrollers.
//!
//! `microrl` is `no_std`, needs no allocator and contains no `unsafe` (but
//! for the heap constructors of the `std` feature, e.g. [`algo::Sac::boxed`],
//! which allocate zeroed memory and never build the agent on the stack). Every
//! network size is a const generic, every buffer is owned by the caller, and
//! every random draw comes from a caller-supplied [`rand_core::Rng`], so the
//! same code trains a policy on the desktop and keeps training it on a
//! Cortex-M4F — with bit-identical arithmetic on both.
//!
//! ## A guide through the layers
//!
//! Read top-down; each layer only uses the ones below it.
//!
//! 1. [`env`](mod@env) — **your plant.** Implement [`env::Env`]: the observation type
//!    (`SVector<f32, N>`), the action space ([`env::Discrete`] or
//!    [`env::Continuous`] with actuator bounds), `reset` and `step` with
//!    Gymnasium's `terminated`/`truncated`. The sizes are stated here, once.
//! 2. [`agent`] — **an agent named from the plant**: `agent::Ppo<Plant, 64,
//!    2048>`, `agent::ActorCritic<Plant, 32>`, … derive every network size
//!    from the environment; [`Deployed<Agent>`] is the exported policy type.
//! 3. [`train`] — **the loop**: [`train::Trainer`] runs collect → update →
//!    gated evaluation → early stop for any agent, reporting through
//!    [`train::Hooks`]; "solved" is decided on one set of start states and
//!    reported on another. [`vec_env`] holds the environment copies a PPO
//!    rollout of SB3's `n_envs × n_steps` shape is collected from.
//! 4. [`algo`] — **the algorithms**: PPO with GAE (also PPO-penalty, and
//!    with `K` fused critics through [`algo::Critics`]), A2C, REINFORCE with
//!    a baseline ([`algo::Ppo`], [`algo::Reinforce`]), TRPO
//!    ([`algo::Trpo`]), GRPO without a critic ([`algo::Grpo`]), KL-anchored
//!    fine-tuning ([`algo::Anchored`]), the online actor-critic
//!    ([`algo::ActorCritic`]) and, off-policy from a replay buffer
//!    ([`algo::ReplayBuffer`]), SAC and TD3 for continuous control
//!    ([`algo::Sac`], [`algo::Td3`]), each a fixed-size struct with a
//!    `const fn new` and a `.bss`-friendly `ZERO`.
//! 5. [`policy`] — **actors and policies**: [`policy::Actor`] (network +
//!    distribution head, what algorithms train), [`Policy`] (actor + frozen
//!    normaliser + action space, what you deploy) and [`Controller::act`]
//!    (raw observation → actuator command; the agent's own evaluation and the
//!    deployed policy run the same function).
//! 6. [`nn`] — **networks**: dense layers, activations, MLPs; inference and
//!    training passes with hand-written, gradient-checked backpropagation,
//!    per sample or batched over a chunk of samples ([`nn::batch`]: the same
//!    bits, each weight reused across the chunk).
//! 7. [`optim`] — Adam, SGD, gradient clipping, schedules, and
//!    [`optim::TrainState`] (parameters + gradients + optimiser).
//! 8. [`serialize`] — the checksummed binary format that carries a
//!    [`Policy`] from the desktop to the firmware; [`checkpoint`] — the
//!    checksummed format of a whole training run (agent, optimiser, loop,
//!    RNG streams, environment) that resumes it bit for bit.
//! 9. [`safety`] — **learning while controlling**: an action shield, a
//!    fallback supervisor (simplex), rollback to the last good policy and a
//!    publish watchdog, composed into [`safety::Guarded`].
//! 10. [`params`], [`normalize`], [`loss`], [`math`], [`rng`], [`config`] —
//!     the plumbing the rest stands on.
//!
//! ## Example: collect and update by hand
//!
//! The loop in [`train`] does this (plus evaluation and early stop); written
//! out, one PPO iteration is a rollout and an update:
//!
//! ```
//! # fn main() -> Result<(), microrl::Error> {
//! use microrl::algo::{Cursor, PpoConfig};
//! use microrl::env::CartPole;
//! use microrl::{agent, serialize, Controller, Deployed, Params};
//! use rand_core::SeedableRng;
//!
//! type Agent = agent::Ppo<CartPole, 32, 256>; // 4-32-32-2 actor, 4-32-32-1 critic, 256-step rollout
//! let mut rng = rand_xoshiro::Xoshiro128PlusPlus::seed_from_u64(0);
//! let mut env = CartPole::new();
//!
//! // All training memory in one fixed-size value (a `static` on an MCU).
//! let mut agent = Box::new(Agent::new(PpoConfig::CARTPOLE));
//! agent.init(&env, &mut rng)?;
//! let mut cursor = Cursor::start(&mut env, &mut rng);
//! let mut returns = 0.0;
//! agent.collect(&mut env, &mut cursor, &mut rng, |episode| returns += episode.ret)?;
//! let stats = agent.update(&mut rng)?; // 10 epochs × 4 minibatches of Adam
//! assert!(stats.approx_kl.is_finite() && stats.epochs == 10);
//!
//! // Deploy: actor + frozen normaliser + action space, through the checksummed format.
//! let mut blob = [0u8; serialize::encoded_len::<Deployed<Agent>>()];
//! serialize::save(&agent.policy(), &mut blob)?;
//! let mut policy = Deployed::<Agent>::ZERO;
//! serialize::load(&mut policy, &blob)?;
//! // The deployed policy acts exactly as the agent does.
//! assert_eq!(policy.act(&cursor.obs)?, agent.act(&cursor.obs)?);
//! # Ok(())
//! # }
//! ```
//!
//! ## Memory
//! A 4-64-64-2 categorical policy (CartPole) has 4 610 parameters: 18 440
//! bytes for inference. Training it with Adam adds a gradient and two moment
//! estimates of the same shape (see [`optim::TrainState`]).
//!
//! ## Cargo features
//! - `std`: allocation helpers for the desktop (`serialize::to_vec`) and
//!   the heap constructors `Sac::boxed` / `Td3::boxed` (and `boxed` of
//!   their lagged schedules, `agent::LaggedSac` / `LaggedTd3`).
//! - `defmt`: `defmt::Format` on errors, statistics and results.
//! - `fast-math`: pure-`f32` approximations of `exp`/`tanh` ([`math::fast`]).
//! - `micromath`: the coarser `micromath` crate's `exp` and a `tanh` built on
//!   it, for inference on FPU-less MCUs, not for training (`math::micro`).
//! - `serde`: `Serialize`/`Deserialize` on every configuration (no_std).

#![no_std]
// One module allows `unsafe`: `boxed`, the heap constructors under `std`.
#![deny(unsafe_code)]
#![deny(missing_docs)]

#[cfg(any(feature = "std", test))]
extern crate std;

pub mod agent;
pub mod algo;
pub mod baseline;
#[cfg(any(feature = "std", test))]
mod boxed;
pub mod checkpoint;
pub mod config;
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
pub mod safety;
pub mod serialize;
pub mod train;
pub mod vec_env;

pub use error::Error;
pub use nalgebra::{SMatrix, SVector};
pub use params::{Pair, Params, TensorShape};
pub use policy::{Controller, Policy};
/// The RNG traits every `reset`, `sample` and shuffle takes (re-exported so a
/// custom environment needs no separate `rand_core` dependency).
pub use rand_core;
pub use train::Deployed;

// The PyTorch whole-update parity test is a unit-test module, so the core's
// tests are one binary: one link per build (mutation testing rebuilds the
// crate once per mutant).
#[cfg(test)]
mod update_parity;

// Every Rust block of the README and of `docs/*.md` is a doctest of the core:
// `cargo test -p microrl --doc` compiles and runs them (shell, TOML and Python
// blocks are fenced as such and skipped). One item per file, so a failure
// names its file and line.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
#[cfg(doctest)]
#[doc = include_str!("../../docs/algorithms.md")]
pub struct DocsAlgorithms;
#[cfg(doctest)]
#[doc = include_str!("../../docs/checks.md")]
pub struct DocsChecks;
#[cfg(doctest)]
#[doc = include_str!("../../docs/cli.md")]
pub struct DocsCli;
#[cfg(doctest)]
#[doc = include_str!("../../docs/design.md")]
pub struct DocsDesign;
#[cfg(doctest)]
#[doc = include_str!("../../docs/firmware.md")]
pub struct DocsFirmware;
#[cfg(doctest)]
#[doc = include_str!("../../docs/formats.md")]
pub struct DocsFormats;
#[cfg(doctest)]
#[doc = include_str!("../../docs/safety.md")]
pub struct DocsSafety;
#[cfg(doctest)]
#[doc = include_str!("../../docs/plants.md")]
pub struct DocsPlants;
#[cfg(doctest)]
#[doc = include_str!("../../docs/tuning.md")]
pub struct DocsTuning;
#[cfg(doctest)]
#[doc = include_str!("../../docs/speed.md")]
pub struct DocsSpeed;

/// What a program that trains or deploys usually needs, in one `use`:
/// `use microrl::prelude::*;`.
pub mod prelude {
    pub use crate::algo::offpolicy::OffPolicy;
    pub use crate::algo::{A2cConfig, AcConfig, PpoConfig, ReinforceConfig, SacConfig, Td3Config};
    pub use crate::env::{ActionSpace, Continuous, Discrete, Env, Step};
    pub use crate::train::{Agent, Deployed, Hooks, Learner, RunConfig, Trainer};
    pub use crate::{Controller, Error, Params, SVector, agent, safety, serialize};
    pub use rand_core::{Rng, SeedableRng};
}
