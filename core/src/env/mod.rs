//! Environments with Gymnasium semantics, in `no_std` code.
//!
//! The same simulators run in the desktop harness, in the tests and on the
//! microcontroller, so a policy validated on the desktop meets the same
//! physics — bit for bit — on the device.
//!
//! Design:
//! - **Gymnasium's contract.** [`Env::reset`] returns the first observation;
//!   [`Env::step`] returns a [`Step`] with the next observation, the reward and
//!   two separate flags: `terminated` (the MDP reached a terminal state: no
//!   bootstrapping) and `truncated` (a time limit cut the episode: the value of
//!   the final observation still counts). Time limits are truncation, never
//!   termination.
//! - **The caller drives the loop.** An environment never resets itself; after
//!   `terminated || truncated` the caller calls `reset`.
//! - **Settable state.** Each environment exposes its physical state so tests
//!   can replay reference trajectories and firmware can log or restore it.
//! - **Actions are the policy's type.** Discrete environments take `usize`,
//!   continuous ones `SVector<f32, A>`; the environment clips continuous
//!   actions to its actuator range, so a raw Gaussian sample can be passed
//!   unchanged.
//! - **`f64` physics, `f32` interface.** The physical state and the
//!   integration are `f64`, evaluated operation for operation as Gymnasium
//!   evaluates them (with the pure-Rust [`libm`] for `sin`/`cos`/`fmod`, the
//!   same bits on x86-64 and a Cortex-M4F); observations and rewards are cast
//!   to `f32` at the end, as Gymnasium casts its observations. The dynamics
//!   are chaotic (an upright cart-pole replayed open-loop amplifies a
//!   difference by ~8 % per step), so an `f32` state, one rounding away from
//!   Gymnasium's per step, drifts past 1e-5 within ~80 steps; the `f64` state
//!   matches Gymnasium's to the last bit but for a rare last-bit difference
//!   between libm's `sin`/`cos` and the C library's. On the M4F, whose FPU is
//!   single-precision, the `f64` arithmetic is software-emulated: two or
//!   three libm `sin`/`cos` and ~30 `+ − × ÷` per step, an estimated 5–10 k
//!   cycles (not measured on hardware) — the order of one forward pass of a
//!   small policy, negligible next to the networks' training work. See each
//!   environment's module for the exact correspondence and the measured
//!   agreement.

pub mod cartpole;
pub mod pendulum;

pub use cartpole::{CartPole, CartPoleContinuous};
pub use pendulum::Pendulum;

use nalgebra::SVector;
use rand_core::Rng;

use crate::error::Error;
use crate::rng;

/// Uniform `f64` in `[low, high)` from one `u32` of `rng`, computed in `f64`
/// (`low + (high − low)·u` with `u` = [`rng::uniform`], a multiple of 2⁻²⁴),
/// so the same bits on every platform.
#[inline]
pub(crate) fn uniform_f64<R: Rng + ?Sized>(rng: &mut R, low: f64, high: f64) -> f64 {
    low + (high - low) * f64::from(rng::uniform(rng))
}

/// The result of one environment step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step<const OBS: usize> {
    /// Observation after the step.
    pub obs: SVector<f32, OBS>,
    /// Reward for the transition.
    pub reward: f32,
    /// The episode ended in a terminal state (no bootstrap from `obs`).
    pub terminated: bool,
    /// The episode was cut by a time limit (bootstrap from `obs`).
    pub truncated: bool,
}

impl<const OBS: usize> Step<OBS> {
    /// `terminated || truncated`: the caller must [`Env::reset`] next.
    #[inline]
    pub fn done(&self) -> bool {
        self.terminated || self.truncated
    }
}

/// A reinforcement-learning environment with `OBS`-dimensional observations.
pub trait Env<const OBS: usize> {
    /// What [`step`](Env::step) accepts: `usize` or `SVector<f32, A>`.
    type Action: Copy;

    /// Mean episode return at which the task counts as solved
    /// (475 for CartPole, −200 for Pendulum).
    const SOLVED_RETURN: f32;

    /// Starts a new episode and returns its first observation.
    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, OBS>;

    /// Advances one time step.
    ///
    /// # Errors
    /// [`Error::InvalidAction`] for a discrete action out of range,
    /// [`Error::NonFinite`] for a non-finite continuous action. The
    /// environment's state is unchanged on error.
    fn step(&mut self, action: Self::Action) -> Result<Step<OBS>, Error>;
}
