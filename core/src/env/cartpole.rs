//! CartPole: Gymnasium's `CartPole-v1`, and a continuous-force variant.
//!
//! A port of Gymnasium's `CartPoleEnv`
//! (`gymnasium/envs/classic_control/cartpole.py`,
//! <https://github.com/Farama-Foundation/Gymnasium/blob/main/gymnasium/envs/classic_control/cartpole.py>,
//! checked against Gymnasium 1.4.0) with the 500-step `TimeLimit` that
//! `gym.make("CartPole-v1")` adds. The dynamics are Barto, Sutton & Anderson's
//! (1983) as corrected by Florian (2007), integrated with explicit Euler.
//!
//! Design:
//! - **Gymnasium's arithmetic, in `f64`.** The state is `f64` and every step
//!   evaluates Gymnasium's expressions in Gymnasium's order in `f64` (its
//!   `np.float64` scalars and Python floats, `np.square(v)` as `v * v`), with
//!   [`libm::cos`]/[`libm::sin`] for NumPy's `np.cos`/`np.sin` (pure Rust:
//!   the same bits on x86-64 and a Cortex-M4F). The observation is the state
//!   cast to `f32`, as Gymnasium's `np.array(self.state, dtype=np.float32)`.
//!   Why not `f32`: the upright pole is unstable (a linearised growth rate of
//!   about 4 s⁻¹, ×1.08 per step), so when Gymnasium's recorded action
//!   sequence is replayed open-loop, a difference of one `f32` rounding grows
//!   by a factor e every ~12 steps and a 500-step balanced episode leaves the
//!   1e-5 band around step 80. In `f64` the only possible difference is the
//!   last bit of a `cos`/`sin` (libm's against the C library's that NumPy
//!   calls). Measured against Gymnasium 1.4.0 / NumPy 2.4.6 on glibc 2.36:
//!   every state of every step of the committed fixture
//!   (`tests/tests/gym_parity.rs`, including four 500-step episodes) is
//!   bit-identical. In a larger sample of 400 open-loop replays of 500-step
//!   balanced episodes, three hit a one-ulp `cos`/`sin` difference (once it
//!   was glibc's value that was misrounded) and the instability carried it
//!   past 1e-5 after step ~360: exact parity over long open-loop replays is
//!   parity with one C library, which a Gymnasium run on another platform
//!   does not have either. A closed-loop policy is unaffected (it reacts to
//!   the observations). The cost on the MCU (software `f64`: two
//!   trigonometric calls and ~30 `+ − × ÷` per step) is small next to the
//!   networks (see the [`env`](super) module).
//! - **Termination as Gymnasium.** `x < −2.4 || x > 2.4 || θ < −θ_max ||
//!   θ > θ_max` on the `f64` state, with Gymnasium's `f64` thresholds
//!   (`θ_max = 12·2π/360`).
//! - **Reward as Gymnasium.** 1.0 for every step up to and including the one
//!   that terminates. Gymnasium logs a warning when stepped again after a
//!   termination and pays 0.0 for each further step that ends out of bounds;
//!   this port keeps simulating the same physics silently and pays the same
//!   0.0 (1.0 again if the state comes back inside the bounds, as Gymnasium).
//!   The caller is expected to [`reset`](Env::reset) after `terminated`.
//! - **Truncation** is `truncated = true` on the 500th step since the last
//!   reset and every step after it, independent of `terminated`, like
//!   Gymnasium's `TimeLimit` wrapper.
//! - **One physics function.** [`CartPole`] (`usize` actions, ±10 N) and
//!   [`CartPoleContinuous`] (`SVector<f32, 1>` actions, `clip(a, −1, 1)·10` N
//!   computed in `f64`; not in Gymnasium) share the same private step taking
//!   the force, so the two cannot drift apart.
//! - **Static-friendly.** `const fn new`, no allocation, 32 bytes of state, so
//!   the environment can live in a `static` on the MCU.

use nalgebra::SVector;
use rand_core::Rng;

use super::{Continuous, Discrete, Env, EnvState, Step, uniform_f64};
use crate::error::{Error, check_finite};

/// The plant's physical parameters (Gymnasium's `CartPoleEnv` attributes),
/// settable so a changed plant — a heavier or longer pole, a weaker motor,
/// another gravity — can be simulated (e.g. to fine-tune a policy trained on
/// the nominal plant).
///
/// [`DEFAULT`](Self::DEFAULT) is Gymnasium's `CartPole-v1`; with it every step
/// is bit-identical to Gymnasium's (the derived `total_mass` and
/// `polemass_length` are computed per step by the same `f64` operations as
/// Gymnasium's constructor). The termination bounds and the time limit are
/// the task's, not the plant's, and stay fixed.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct CartPoleParams {
    /// Gravitational acceleration, m/s², in [0, 100]. Default 9.8.
    pub gravity: f64,
    /// Cart mass, kg, in [0.001, 1000]. Default 1.0.
    pub masscart: f64,
    /// Pole mass, kg, in [0.001, 1000]. Default 0.1.
    pub masspole: f64,
    /// Half the pole's length, m, in [0.001, 100]. Default 0.5.
    pub length: f64,
    /// Force of a discrete action (and of a continuous action of ±1), N, in
    /// [0.001, 10000]. Default 10.
    pub force_mag: f64,
    /// Seconds between state updates, in [0.0001, 0.1] (coarser steps
    /// integrate the pole past its bounds; finer ones freeze the plant over
    /// an episode's 500 steps). Default 0.02.
    pub tau: f64,
}

impl CartPoleParams {
    /// Gymnasium's `CartPole-v1`.
    pub const DEFAULT: Self = Self {
        gravity: 9.8,
        masscart: 1.0,
        masspole: 0.1,
        length: 0.5,
        force_mag: 10.0,
        tau: 0.02,
    };

    /// Checks every field lies in its documented physical range (NaN and
    /// ±∞ never do); the defaults do.
    ///
    /// # Errors
    /// [`PlantRangeError`](super::PlantRangeError) naming the first field
    /// outside its range, its value and the range.
    pub fn check(&self) -> Result<(), super::PlantRangeError> {
        super::check_ranges(&[
            ("gravity", self.gravity, 0.0, 100.0, "m/s²"),
            ("masscart", self.masscart, 1e-3, 1e3, "kg"),
            ("masspole", self.masspole, 1e-3, 1e3, "kg"),
            ("length", self.length, 1e-3, 1e2, "m"),
            ("force_mag", self.force_mag, 1e-3, 1e4, "N"),
            ("tau", self.tau, 1e-4, 0.1, "s"),
        ])
    }
}

/// `4/3` in the pole's moment of inertia.
const FOUR_THIRDS: f64 = 4.0 / 3.0;

/// Gymnasium's cart-position limit `x_threshold`, m.
const X_THRESHOLD: f64 = 2.4;
/// Gymnasium's pole-angle limit `theta_threshold_radians = 12·2π/360`.
const THETA_THRESHOLD: f64 = 12.0 * 2.0 * core::f64::consts::PI / 360.0;

/// Half-width of the uniform reset distribution of every state component.
const RESET_HIGH: f64 = 0.05;

/// Gymnasium's `CartPole-v1`: balance a pole on a cart by pushing it left or
/// right.
///
/// - Observation: `[x, x_dot, theta, theta_dot]` (m, m/s, rad, rad/s).
/// - Action: `0` pushes the cart left (−10 N), `1` right (+10 N); anything
///   else is [`Error::InvalidAction`].
/// - Reward: 1.0 per step (0.0 for steps taken after a termination while
///   still out of bounds, as in Gymnasium).
/// - Terminated when `|x| > 2.4` or `|theta| > 12°`; truncated at
///   [`MAX_EPISODE_STEPS`](Self::MAX_EPISODE_STEPS) steps.
/// - Reset: each state component uniform in `[−0.05, 0.05)`, drawn in the
///   order `x, x_dot, theta, theta_dot`.
///
/// See the [module documentation](self) for the numerical design.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CartPole {
    /// `[x, x_dot, theta, theta_dot]`, Gymnasium's `f64` state.
    state: [f64; 4],
    /// The plant.
    params: CartPoleParams,
    /// Steps since the last reset (saturating).
    elapsed_steps: u32,
    /// A step since the last reset terminated (Gymnasium's
    /// `steps_beyond_terminated is not None`).
    terminated_once: bool,
}

impl CartPole {
    /// Time limit: `truncated` from this many steps after a reset on.
    pub const MAX_EPISODE_STEPS: u32 = 500;

    /// An environment with all-zero state and no steps taken. Call
    /// [`reset`](Env::reset) (or [`set_state`](Self::set_state)) before stepping.
    pub const fn new() -> Self {
        Self {
            state: [0.0; 4],
            params: CartPoleParams::DEFAULT,
            elapsed_steps: 0,
            terminated_once: false,
        }
    }

    super::plant_accessors!(
        CartPoleParams,
        [f64; 4],
        "The physical state `[x, x_dot, theta, theta_dot]` in `f64` (the observation is this cast to `f32`)."
    );

    /// Overwrites the physical state `[x, x_dot, theta, theta_dot]`.
    ///
    /// Like assigning `env.unwrapped.state` in Gymnasium, this leaves the step
    /// counter and the "already terminated" flag alone.
    #[inline]
    pub fn set_state(&mut self, state: [f64; 4]) {
        self.state = state;
    }

    /// The current observation: the state cast to `f32` (rounded to nearest).
    #[inline]
    pub fn observation(&self) -> SVector<f32, 4> {
        SVector::from(self.state.map(|s| s as f32))
    }

    /// Resets the state uniformly in `[−0.05, 0.05)⁴` and the counters.
    fn reset_state<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 4> {
        for s in &mut self.state {
            *s = uniform_f64(rng, -RESET_HIGH, RESET_HIGH);
        }
        self.elapsed_steps = 0;
        self.terminated_once = false;
        self.observation()
    }

    /// One Euler step under a horizontal `force` (N) on the cart: the physics
    /// shared by [`CartPole`] and [`CartPoleContinuous`].
    ///
    /// Gymnasium's expressions in Gymnasium's order, in `f64`; Python
    /// evaluates `a * b * c / d` as `((a * b) * c) / d`, and so does Rust.
    fn apply_force(&mut self, force: f64) -> Step<SVector<f32, 4>> {
        let [x, x_dot, theta, theta_dot] = self.state;
        let CartPoleParams {
            gravity,
            masscart,
            masspole,
            length,
            force_mag: _,
            tau,
        } = self.params;
        // Gymnasium's constructor: `total_mass = masspole + masscart`,
        // `polemass_length = masspole * length`.
        let total_mass = masspole + masscart;
        let polemass_length = masspole * length;
        let costheta = libm::cos(theta);
        let sintheta = libm::sin(theta);

        let temp = (force + polemass_length * (theta_dot * theta_dot) * sintheta) / total_mass;
        let thetaacc = (gravity * sintheta - costheta * temp)
            / (length * (FOUR_THIRDS - masspole * (costheta * costheta) / total_mass));
        let xacc = temp - polemass_length * thetaacc * costheta / total_mass;

        // Explicit Euler: every update reads the pre-step state.
        let x = x + tau * x_dot;
        let x_dot = x_dot + tau * xacc;
        let theta = theta + tau * theta_dot;
        let theta_dot = theta_dot + tau * thetaacc;
        self.state = [x, x_dot, theta, theta_dot];

        // Gymnasium's four comparisons, so a NaN does not terminate there
        // either (`!(-t..=t).contains(&x)` would).
        #[expect(
            clippy::manual_range_contains,
            reason = "Gymnasium's comparisons, NaN semantics included"
        )]
        let terminated = x < -X_THRESHOLD
            || x > X_THRESHOLD
            || theta < -THETA_THRESHOLD
            || theta > THETA_THRESHOLD;
        let reward = if !terminated {
            1.0
        } else if !self.terminated_once {
            self.terminated_once = true;
            1.0
        } else {
            0.0
        };

        self.elapsed_steps = self.elapsed_steps.saturating_add(1);
        Step {
            obs: self.observation(),
            reward,
            terminated,
            truncated: self.elapsed_steps >= Self::MAX_EPISODE_STEPS,
        }
    }
}

super::plant_defaults!(CartPole, CartPoleParams);

impl Env for CartPole {
    type Obs = SVector<f32, 4>;
    type Space = Discrete<2>;
    const SOLVED_RETURN: f32 = 475.0;

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 4> {
        self.reset_state(rng)
    }

    /// Pushes left (`0`) or right (`1`) with 10 N for 0.02 s.
    fn step(&mut self, action: usize) -> Result<Step<SVector<f32, 4>>, Error> {
        let force_mag = self.params.force_mag;
        let force = match action {
            0 => -force_mag,
            1 => force_mag,
            _ => return Err(Error::InvalidAction),
        };
        Ok(self.apply_force(force))
    }
}

/// CartPole with a continuous force: the action `a` pushes the cart with
/// `clip(a, −1, 1) · 10` N.
///
/// Not a Gymnasium environment; it is [`CartPole`]'s physics, termination,
/// reward and time limit (the same code) with the force magnitude taken from
/// the action, so `a = ±1` reproduces the discrete actions exactly. Useful for
/// testing Gaussian policies on a task whose discrete twin is well understood.
/// A non-finite action is [`Error::NonFinite`].
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct CartPoleContinuous {
    inner: CartPole,
}

impl CartPoleContinuous {
    /// Time limit: `truncated` from this many steps after a reset on.
    pub const MAX_EPISODE_STEPS: u32 = CartPole::MAX_EPISODE_STEPS;

    /// An environment with all-zero state and no steps taken.
    pub const fn new() -> Self {
        Self {
            inner: CartPole::new(),
        }
    }

    /// [`new`](Self::new) with another plant (`force_mag` is the force of `a = ±1`).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] if `params` does not
    /// [`validate`](CartPoleParams::validate).
    pub fn with_params(params: CartPoleParams) -> Result<Self, Error> {
        Ok(Self {
            inner: CartPole::with_params(params)?,
        })
    }

    /// The plant's physical parameters.
    #[inline]
    pub fn params(&self) -> CartPoleParams {
        self.inner.params
    }

    /// The physical state `[x, x_dot, theta, theta_dot]` in `f64` (the
    /// observation is this cast to `f32`).
    #[inline]
    pub fn state(&self) -> [f64; 4] {
        self.inner.state()
    }

    /// Overwrites the physical state (see [`CartPole::set_state`]).
    #[inline]
    pub fn set_state(&mut self, state: [f64; 4]) {
        self.inner.set_state(state);
    }

    /// Steps taken since the last reset.
    #[inline]
    pub fn elapsed_steps(&self) -> u32 {
        self.inner.elapsed_steps()
    }

    /// The current observation: the state cast to `f32`.
    #[inline]
    pub fn observation(&self) -> SVector<f32, 4> {
        self.inner.observation()
    }
}

impl Env for CartPoleContinuous {
    type Obs = SVector<f32, 4>;
    type Space = Continuous<1>;
    const SOLVED_RETURN: f32 = 475.0;

    /// `[−1, 1]`: the force is `a · 10` N.
    fn action_space(&self) -> Continuous<1> {
        Continuous::symmetric(1.0)
    }

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 4> {
        self.inner.reset_state(rng)
    }

    /// Pushes with `clip(a, −1, 1) · 10` N for 0.02 s; the clip is exact in
    /// `f32`, the product is computed in `f64` (like a Python `float`).
    fn step(&mut self, action: SVector<f32, 1>) -> Result<Step<SVector<f32, 4>>, Error> {
        let a = action[0];
        check_finite(a)?;
        let force_mag = self.inner.params.force_mag;
        Ok(self
            .inner
            .apply_force(f64::from(a.clamp(-1.0, 1.0)) * force_mag))
    }
}

/// `upright` (the plant's reward) and `effort` (`−a²` of the clipped
/// command, `a ∈ [−1, 1]`).
impl super::RewardChannels<2> for CartPoleContinuous {
    const CHANNELS: [&'static str; 2] = ["upright", "effort"];

    fn step_channels(
        &mut self,
        action: SVector<f32, 1>,
    ) -> Result<(Step<SVector<f32, 4>>, [f32; 2]), Error> {
        let step = self.step(action)?;
        let a = action[0].clamp(-1.0, 1.0);
        Ok((step, [step.reward, -(a * a)]))
    }
}

/// `[x, x_dot, theta, theta_dot, elapsed_steps, terminated_once]`.
impl EnvState for CartPole {
    const TAG: u32 = u32::from_le_bytes(*b"CPOL");
    const WORDS: usize = 6;

    fn save_state(&self, out: &mut [f64]) {
        let [x, x_dot, theta, theta_dot] = self.state;
        super::write_words(
            out,
            [
                x,
                x_dot,
                theta,
                theta_dot,
                f64::from(self.elapsed_steps),
                f64::from(u8::from(self.terminated_once)),
            ],
        );
    }

    fn restore_state(&mut self, words: &[f64]) -> Result<(), Error> {
        let words: [f64; 6] = words.try_into().map_err(|_| Error::Truncated)?;
        let state = super::finite_words::<4>(&words[..4])?;
        let elapsed_steps = super::counter_from_f64(words[4])?;
        let terminated_once = super::flag_from_f64(words[5])?;
        // The plant's parameters are configuration, not state: kept.
        self.state = state;
        self.elapsed_steps = elapsed_steps;
        self.terminated_once = terminated_once;
        Ok(())
    }
}

/// [`CartPole`]'s words under its own tag.
impl EnvState for CartPoleContinuous {
    const TAG: u32 = u32::from_le_bytes(*b"CPCN");
    const WORDS: usize = CartPole::WORDS;

    fn save_state(&self, out: &mut [f64]) {
        self.inner.save_state(out);
    }

    fn restore_state(&mut self, words: &[f64]) -> Result<(), Error> {
        self.inner.restore_state(words)
    }
}

#[cfg(test)]
mod tests;
