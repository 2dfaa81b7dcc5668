//! Mountain car: Gymnasium's `MountainCarContinuous-v0`, drive an
//! underpowered car up a hill by rocking it.
//!
//! A port of Gymnasium's `Continuous_MountainCarEnv`
//! (`gymnasium/envs/classic_control/continuous_mountain_car.py`,
//! <https://github.com/Farama-Foundation/Gymnasium/blob/main/gymnasium/envs/classic_control/continuous_mountain_car.py>,
//! checked against Gymnasium 1.4.0 / NumPy 2.4.6) with the 999-step
//! `TimeLimit` that `gym.make("MountainCarContinuous-v0")` adds. The task is
//! Moore's (1990) mountain car as in Sutton & Barto, with a continuous force.
//!
//! Design:
//! - **NumPy's types, reproduced.** Gymnasium keeps the state as a `float64`
//!   array after `reset` (`np.array([uniform(), 0])`) but as a `float32`
//!   array after every step (`np.array([...], dtype=np.float32)`), and under
//!   NumPy 2's promotion rules (NEP 50) a `float32` combined with a Python
//!   float *stays* `float32` — arithmetic and comparisons alike (the Python
//!   float is rounded to `float32` first). So the first step after a reset
//!   computes in `f64` and every later step in `f32`; the port keeps a flag
//!   for which (part of the [`EnvState`]) and runs one generic physics
//!   function in either precision (`Precision`). Within it, as Gymnasium:
//!   - `force = min(max(a, −1), 1)` is the `float32` action itself inside
//!     `[−1, 1]` but the Python float `±1.0` outside it, so the power term is
//!     `a·f32(0.0015)` in `f32` (inside) or `±0.0015` in `f64` (outside);
//!   - the hill term `0.0025·cos(3·pos)` is `f64` (`math.cos` of `3·pos`
//!     computed in the state's precision), and `force·power − hill` is `f32`
//!     when the force is (the hill term rounded first), else `f64`;
//!   - `vel += …`, the clips to `±0.07`, `[−1.2, 0.6]`, the wall rule
//!     (`vel = 0` when `pos == −1.2` and `vel < 0`) and the goal test
//!     `pos ≥ 0.45 and vel ≥ 0` are in the state's precision, with the
//!     constants rounded to it;
//!   - the new state is rounded to `f32`.
//!
//!   The reward `100·[terminated] − 0.1·a²` uses the *unclipped* action,
//!   in `f64` (`math.pow` of a `float32` squares exactly), cast to `f32`.
//!   `cos` is the pure-Rust [`libm::cos`] (Python's `math.cos` calls the C
//!   library's; they can differ in the last bit, which the `f32` rounding of
//!   the state almost always absorbs). Measured (`tests/tests/gym_parity.rs`,
//!   Gymnasium 1.4.0 / NumPy 2.4.6, 9 episodes, 3656 steps, with actions
//!   inside and beyond `[−1, 1]`, the left wall and the goal): the `float32`
//!   state is Gymnasium's bit for bit at every step, so the observations
//!   are identical, and every reward is Gymnasium's rounded to `f32`.
//! - **Termination**: the goal test above; the caller resets after it
//!   (stepping on simulates on, as Gymnasium). `truncated` from the 999th
//!   step after a reset on.
//! - **Reset**: position uniform in `[−0.6, −0.4)`, velocity 0, the `f64`
//!   state of Gymnasium's reset.
//! - **Static-friendly.** `const fn new`, no allocation; a step is one `cos`
//!   and a dozen `+ − ×` (in `f32` but for the hill term), cheap on a
//!   Cortex-M4F.

use core::ops::{Add, Mul, Neg, Sub};

use nalgebra::SVector;
use rand_core::Rng;

use super::{Continuous, Env, EnvState, Step, uniform_f64};
use crate::error::{Error, check_finite};

/// The plant's physical parameters (Gymnasium's `power`, and the constants
/// its `step` hard-codes), settable so a changed car can be simulated. Each
/// field has a documented range, checked by [`validate`](Self::validate).
///
/// [`DEFAULT`](Self::DEFAULT) is Gymnasium's `MountainCarContinuous-v0`, bit
/// for bit. The track `[−1.2, 0.6]`, the goal (0.45) and the time limit are
/// the task's and stay fixed.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct MountainCarParams {
    /// Velocity gained per step per unit of force (`power`), in `(0, 0.1]`.
    /// Default 0.0015.
    pub power: f64,
    /// Weight of the hill's slope term `cos(3·pos)` per step, in `[0, 0.1]`.
    /// Default 0.0025.
    pub gravity: f64,
    /// Speed bound (`max_speed`), in `(0, 1]`. Default 0.07.
    pub max_speed: f64,
}

impl MountainCarParams {
    /// Gymnasium's `MountainCarContinuous-v0`.
    pub const DEFAULT: Self = Self {
        power: 0.0015,
        gravity: 0.0025,
        max_speed: 0.07,
    };

    /// Checks every field lies in its documented range (NaN and ±∞ never
    /// do); the defaults do. The units are Gymnasium's: position units per
    /// step (velocity) and per step² (power per unit of action, gravity).
    ///
    /// # Errors
    /// [`PlantRangeError`](super::PlantRangeError) naming the first field
    /// outside its range, its value and the range.
    pub fn check(&self) -> Result<(), super::PlantRangeError> {
        super::check_ranges(&[
            ("power", self.power, 1e-6, 0.1, "per step²"),
            ("gravity", self.gravity, 0.0, 0.1, "per step²"),
            ("max_speed", self.max_speed, 1e-4, 1.0, "per step"),
        ])
    }
}

/// Gymnasium's `min_position`.
const MIN_POSITION: f64 = -1.2;
/// Gymnasium's `max_position`.
const MAX_POSITION: f64 = 0.6;
/// Gymnasium's `goal_position`.
const GOAL_POSITION: f64 = 0.45;
/// The reset position's range `[low, high)`.
const RESET_POSITION: (f64, f64) = (-0.6, -0.4);
/// The reward for reaching the goal.
const GOAL_REWARD: f64 = 100.0;
/// The weight of `a²` in the cost.
const ACTION_COST: f64 = 0.1;

/// The precision a step computes in: NumPy's `float64` (`f64`, the first
/// step after a reset) or `float32` (`f32`, every later one).
trait Precision:
    Copy
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Neg<Output = Self>
{
    const ZERO: Self;
    /// A Python float (or `float64` value) combined with this precision:
    /// itself for `f64`, rounded for `f32` (NEP 50's weak Python scalars).
    fn of(x: f64) -> Self;
    /// The exact `f64` value.
    fn wide(self) -> f64;
}

impl Precision for f64 {
    const ZERO: Self = 0.0;
    fn of(x: f64) -> Self {
        x
    }
    fn wide(self) -> f64 {
        self
    }
}

impl Precision for f32 {
    const ZERO: Self = 0.0;
    fn of(x: f64) -> Self {
        x as f32
    }
    fn wide(self) -> f64 {
        f64::from(self)
    }
}

/// Gymnasium's `step` on the state `(pos, vel)` of precision `T`, for the
/// finite `float32` action `a`: the new `(pos, vel)` (before the rounding to
/// `f32`) and `terminated`.
fn physics<T: Precision>(p: &MountainCarParams, pos: T, vel: T, a: f32) -> (T, T, bool) {
    // `force * power - 0.0025 * math.cos(3 * position)`.
    let hill = p.gravity * libm::cos((T::of(3.0) * pos).wide());
    let delta = if (-1.0..=1.0).contains(&a) {
        // `force` is the float32 action: a float32 result.
        f64::from(a * p.power as f32 - hill as f32)
    } else {
        // `force` is the Python float ±1.0 (`a` is finite): all in `f64`.
        let force = if a < 0.0 { -1.0 } else { 1.0 };
        force * p.power - hill
    };
    let mut vel = vel + T::of(delta);
    let max_speed = T::of(p.max_speed);
    if vel > max_speed {
        vel = max_speed;
    }
    if vel < -max_speed {
        vel = -max_speed;
    }
    let mut pos = pos + vel;
    let (min_position, max_position) = (T::of(MIN_POSITION), T::of(MAX_POSITION));
    if pos > max_position {
        pos = max_position;
    }
    if pos < min_position {
        pos = min_position;
    }
    if pos == min_position && vel < T::ZERO {
        vel = T::ZERO;
    }
    let terminated = pos >= T::of(GOAL_POSITION) && vel >= T::ZERO;
    (pos, vel, terminated)
}

/// Gymnasium's `MountainCarContinuous-v0`: a car in a valley, too weak to
/// drive up the right hill directly, must rock back and forth to reach the
/// flag at 0.45.
///
/// - Observation: `[position, velocity]` (in `[−1.2, 0.6]`, `[−0.07, 0.07]`).
/// - Action: the force `a`, clipped to `[−1, 1]` (times the power 0.0015); a
///   non-finite action is [`Error::NonFinite`].
/// - Reward: `−0.1·a²` of the unclipped action, plus 100 on reaching the goal.
/// - Terminated when `position ≥ 0.45` and `velocity ≥ 0`; truncated at
///   [`MAX_EPISODE_STEPS`](Self::MAX_EPISODE_STEPS) steps.
/// - Reset: position uniform in `[−0.6, −0.4)`, velocity 0.
///
/// See the [module documentation](self) for the numerical design.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MountainCarContinuous {
    /// `[position, velocity]`: `f32` values once [`float32`](Self::float32).
    state: [f64; 2],
    /// The state is Gymnasium's `float32` array (after a step) rather than
    /// its `float64` one (after a reset): the next step computes in `f32`.
    float32: bool,
    /// The plant.
    params: MountainCarParams,
    /// Steps since the last reset (saturating).
    elapsed_steps: u32,
}

impl MountainCarContinuous {
    /// Time limit: `truncated` from this many steps after a reset on.
    pub const MAX_EPISODE_STEPS: u32 = 999;

    /// The car at the valley's bottom-left (position −0.5) at rest, no steps
    /// taken. Call [`reset`](Env::reset) (or [`set_state`](Self::set_state))
    /// before stepping.
    pub const fn new() -> Self {
        Self {
            state: [-0.5, 0.0],
            float32: false,
            params: MountainCarParams::DEFAULT,
            elapsed_steps: 0,
        }
    }

    super::plant_accessors!(
        MountainCarParams,
        [f64; 2],
        "The physical state `[position, velocity]` (`f32` values after a step)."
    );

    /// Whether the state is `float32` (after a step: the next step computes
    /// in `f32`) or `float64` (after a reset or
    /// [`set_state`](Self::set_state): the next step computes in `f64`).
    #[inline]
    pub fn float32(&self) -> bool {
        self.float32
    }

    /// Overwrites the state with a `float64` one, as Gymnasium's reset makes
    /// (or `env.unwrapped.state = np.array([pos, vel])`): the next step
    /// computes in `f64`. The step counter is unchanged.
    #[inline]
    pub fn set_state(&mut self, state: [f64; 2]) {
        self.state = state;
        self.float32 = false;
    }

    /// Overwrites the state with a `float32` one, as Gymnasium's step leaves
    /// it: the next step computes in `f32`. The step counter is unchanged.
    #[inline]
    pub fn set_state_f32(&mut self, state: [f32; 2]) {
        self.state = state.map(f64::from);
        self.float32 = true;
    }

    /// The current observation: the state cast to `f32`.
    #[inline]
    pub fn observation(&self) -> SVector<f32, 2> {
        SVector::from(self.state.map(|s| s as f32))
    }
}

super::plant_defaults!(MountainCarContinuous, MountainCarParams);

impl Env for MountainCarContinuous {
    type Obs = SVector<f32, 2>;
    type Space = Continuous<1>;
    const SOLVED_RETURN: f32 = 90.0;

    /// `[−1, 1]`: the force is `a · 0.0015` per step.
    fn action_space(&self) -> Continuous<1> {
        Continuous::symmetric(1.0)
    }

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 2> {
        let (low, high) = RESET_POSITION;
        self.set_state([uniform_f64(rng, low, high), 0.0]);
        self.elapsed_steps = 0;
        self.observation()
    }

    /// Pushes with `clip(a, −1, 1)·0.0015` for one step; costs `0.1·a²`.
    fn step(&mut self, action: SVector<f32, 1>) -> Result<Step<SVector<f32, 2>>, Error> {
        let a = action[0];
        check_finite(a)?;
        let [pos, vel] = self.state;
        let (pos, vel, terminated) = if self.float32 {
            let (pos, vel, terminated) = physics(&self.params, pos as f32, vel as f32, a);
            (pos, vel, terminated)
        } else {
            let (pos, vel, terminated) = physics(&self.params, pos, vel, a);
            (pos as f32, vel as f32, terminated)
        };
        self.set_state_f32([pos, vel]);
        let goal = if terminated { GOAL_REWARD } else { 0.0 };
        let a = f64::from(a);
        self.elapsed_steps = self.elapsed_steps.saturating_add(1);
        Ok(Step {
            obs: self.observation(),
            reward: (goal - a * a * ACTION_COST) as f32,
            terminated,
            truncated: self.elapsed_steps >= Self::MAX_EPISODE_STEPS,
        })
    }
}

/// `[position, velocity, elapsed_steps, float32]`.
impl EnvState for MountainCarContinuous {
    const TAG: u32 = u32::from_le_bytes(*b"MCAR");
    const WORDS: usize = 4;

    fn save_state(&self, out: &mut [f64]) {
        let [pos, vel] = self.state;
        super::write_words(
            out,
            [
                pos,
                vel,
                f64::from(self.elapsed_steps),
                f64::from(u8::from(self.float32)),
            ],
        );
    }

    fn restore_state(&mut self, words: &[f64]) -> Result<(), Error> {
        let words: [f64; 4] = words.try_into().map_err(|_| Error::Truncated)?;
        let state = super::finite_words::<2>(&words[..2])?;
        let elapsed_steps = super::counter_from_f64(words[2])?;
        let float32 = super::flag_from_f64(words[3])?;
        if float32 && state.iter().any(|&s| f64::from(s as f32) != s) {
            return Err(Error::InvalidState {
                what: "a float32 mountain-car state holds a value that is not an f32",
            });
        }
        // The plant's parameters are configuration, not state: kept.
        self.state = state;
        self.float32 = float32;
        self.elapsed_steps = elapsed_steps;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
