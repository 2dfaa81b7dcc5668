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

pub mod cartpole;
pub mod pendulum;

pub use cartpole::{CartPole, CartPoleContinuous};
pub use pendulum::Pendulum;

use nalgebra::SVector;
use rand_core::Rng;

use crate::error::Error;

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
