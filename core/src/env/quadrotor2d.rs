//! Planar quadrotor: recover a Crazyflie-sized quadrotor from a random
//! attitude and velocity and hold hover at the origin.
//!
//! The planar (x–z) quadrotor, the standard reduced model of a quadrotor
//! flying in a vertical plane (Sastry/Tomlin group's "planar VTOL"; e.g.
//! Bouffard, "On-board model predictive control of a quadrotor helicopter",
//! 2012; Tedrake, *Underactuated Robotics*, ch. "Acrobots, Cart-Poles and
//! Quadrotors", §"The planar quadrotor"): a rigid body of mass `m` and
//! inertia `I` with two rotors at `±d` along its body x-axis, each pushing
//! along the body's z-axis:
//!
//! ```text
//! m·ẍ = −(T₁ + T₂)·sin θ
//! m·z̈ =  (T₁ + T₂)·cos θ − m·g
//! I·θ̈ =  d·(T₁ − T₂)
//! ```
//!
//! with `x` to the right, `z` up, `θ` counter-clockwise (a positive pitch
//! tilts the thrust towards −x), rotor 1 on the +x arm. Rotor dynamics,
//! drag and ground effect are not modelled: a rotor's thrust follows its
//! command within the 10 ms control period (a Crazyflie motor's time
//! constant is some tens of ms, so this is the idealised plant).
//!
//! Design:
//! - **Crazyflie 2.x-like defaults** (Förster 2015, "System identification of
//!   the Crazyflie 2.0 nano quadrocopter", ETH BSc thesis; Landry 2015, MIT
//!   MSc thesis): `m` = 0.027 kg, `d` = 0.046 m, `I` = 1.4·10⁻⁵ kg·m²,
//!   a maximum thrust of 0.3 N per planar rotor (each standing for one pair of
//!   the four motors, ~0.15 N each): a thrust-to-weight ratio of 2.26.
//! - **Actuators**: the action `[u₁, u₂] ∈ [−1, 1]²` maps to
//!   `Tᵢ = (uᵢ + 1)/2·T_max ∈ [0, T_max]` (rotors only push); hover is
//!   `uᵢ = m·g/T_max − 1 ≈ −0.117`.
//! - **Integration**: one RK4 step of `dt` = 0.01 s per control period, the
//!   thrusts held; `f64` state, [`libm`] `sin`/`cos`. Force-free flight is a
//!   parabola, integrated exactly (tested).
//! - **Reward** `1 − ½·min(‖(x, z)‖/1 m, 1) − ¼·min(|θ|/1 rad, 1)` after
//!   the step, in `[0.25, 1]`: positive while flying, so crashing forfeits
//!   every later reward and is never attractive.
//! - **Termination**: leaving the box `|x| ≤ 2` m, `z ≤ 2` m, hitting the
//!   ground `z < −1` m (the origin hovers 1 m above it), or `|θ| > π/2`.
//!   Truncated at [`Quadrotor2d::MAX_EPISODE_STEPS`] = 500 steps (5 s).
//! - **Reset**: `x, z` uniform in `[−0.5, 0.5)` m, `θ` in `[−0.8, 0.8)` rad,
//!   `ẋ, ż` in `[−0.5, 0.5)` m/s, `θ̇` in `[−1, 1)` rad/s, in that order.
//! - **Static-friendly.** `const fn new`, no allocation, no panics.

use nalgebra::SVector;
use rand_core::Rng;

use super::{Continuous, Env, Step, uniform_f64};
use crate::error::{Error, check_all_finite};

use core::f64::consts::FRAC_PI_2;

/// Half-width of the box in x, m.
const X_LIMIT: f64 = 2.0;
/// The ceiling, m.
const Z_MAX: f64 = 2.0;
/// The ground, m below the hover point.
const Z_GROUND: f64 = -1.0;
/// The largest attitude before termination, rad.
const THETA_LIMIT: f64 = FRAC_PI_2;
/// Reset half-widths of `[x, z, θ, ẋ, ż, θ̇]`.
const RESET_HIGH: [f64; 6] = [0.5, 0.5, 0.8, 0.5, 0.5, 1.0];

/// The vehicle's physical parameters. Each field has a documented range,
/// checked by [`validate`](Self::validate).
///
/// [`DEFAULT`](Self::DEFAULT) is a Crazyflie 2.x-like nano quadrotor (see
/// the [module documentation](self)).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct Quadrotor2dParams {
    /// Mass `m`, kg, in [0.001, 100]. Default 0.027.
    pub mass: f64,
    /// Arm length `d` (rotor to centre), m, in [0.001, 10]. Default 0.046.
    pub arm_length: f64,
    /// Pitch moment of inertia `I`, kg·m², in [1e-9, 100]. Default 1.4e-5.
    pub inertia: f64,
    /// Gravitational acceleration, m/s², in [0, 100]. Default 9.81.
    pub gravity: f64,
    /// Maximum thrust of each rotor `T_max`, N, in [1e-4, 1e4]. Default 0.3.
    pub max_thrust: f64,
    /// Control period, s, in [1e-4, 0.1]. Default 0.01.
    pub dt: f64,
}

impl Quadrotor2dParams {
    /// The Crazyflie-like vehicle.
    pub const DEFAULT: Self = Self {
        mass: 0.027,
        arm_length: 0.046,
        inertia: 1.4e-5,
        gravity: 9.81,
        max_thrust: 0.3,
        dt: 0.01,
    };

    /// Checks every field lies in its documented physical range (NaN and
    /// ±∞ never do); the defaults do.
    ///
    /// # Errors
    /// [`PlantRangeError`](super::PlantRangeError) naming the first field
    /// outside its range, its value and the range.
    pub fn check(&self) -> Result<(), super::PlantRangeError> {
        super::check_ranges(&[
            ("mass", self.mass, 1e-3, 100.0, "kg"),
            ("arm_length", self.arm_length, 1e-3, 10.0, "m"),
            ("inertia", self.inertia, 1e-9, 100.0, "kg·m²"),
            ("gravity", self.gravity, 0.0, 100.0, "m/s²"),
            ("max_thrust", self.max_thrust, 1e-4, 1e4, "N"),
            ("dt", self.dt, 1e-4, 0.1, "s"),
        ])
    }

    /// The command of each rotor that holds hover, `m·g/T_max − 1` (below
    /// −1 or above 1 when the vehicle cannot hover).
    pub fn hover_command(&self) -> f64 {
        self.mass * self.gravity / self.max_thrust - 1.0
    }
}

/// The derivative of `[x, z, θ, ẋ, ż, θ̇]` under the thrusts `t1`, `t2`.
fn derivatives(p: &Quadrotor2dParams, s: [f64; 6], t1: f64, t2: f64) -> [f64; 6] {
    let [_, _, th, vx, vz, w] = s;
    let total = t1 + t2;
    [
        vx,
        vz,
        w,
        -total * libm::sin(th) / p.mass,
        total * libm::cos(th) / p.mass - p.gravity,
        p.arm_length * (t1 - t2) / p.inertia,
    ]
}

/// `y + h·k` per component.
fn axpy(y: [f64; 6], h: f64, k: [f64; 6]) -> [f64; 6] {
    core::array::from_fn(|i| y[i] + h * k[i])
}

/// One classical RK4 step of `dt` with the thrusts held.
fn rk4(p: &Quadrotor2dParams, y: [f64; 6], t1: f64, t2: f64) -> [f64; 6] {
    let h = p.dt;
    let k1 = derivatives(p, y, t1, t2);
    let k2 = derivatives(p, axpy(y, h / 2.0, k1), t1, t2);
    let k3 = derivatives(p, axpy(y, h / 2.0, k2), t1, t2);
    let k4 = derivatives(p, axpy(y, h, k3), t1, t2);
    let sum: [f64; 6] = core::array::from_fn(|i| k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
    axpy(y, h / 6.0, sum)
}

/// Planar quadrotor: recover from a random attitude and velocity, then hover
/// at the origin.
///
/// - Observation: `[x, z, θ, ẋ, ż, θ̇]` (m, m, rad, m/s, m/s, rad/s).
/// - Action: `[u₁, u₂]`, each clipped to `[−1, 1]` and mapped to a thrust in
///   `[0, T_max]` (rotor 1 on the +x arm); a non-finite action is
///   [`Error::NonFinite`].
/// - Reward: `1 − ½·min(‖(x, z)‖, 1) − ¼·min(|θ|, 1)` after the step, in
///   `[0.25, 1]`.
/// - Terminated outside `|x| ≤ 2`, `−1 ≤ z ≤ 2`, `|θ| ≤ π/2`; truncated at
///   [`MAX_EPISODE_STEPS`](Self::MAX_EPISODE_STEPS) (5 s at 100 Hz).
/// - Reset: see the [module documentation](self).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quadrotor2d {
    /// `[x, z, θ, ẋ, ż, θ̇]`.
    state: [f64; 6],
    /// The vehicle.
    params: Quadrotor2dParams,
    /// Steps since the last reset (saturating).
    elapsed_steps: u32,
}

impl Quadrotor2d {
    /// Time limit: `truncated` from this many steps after a reset on.
    pub const MAX_EPISODE_STEPS: u32 = 500;

    /// The vehicle level at rest at the origin, no steps taken. Call
    /// [`reset`](Env::reset) (or [`set_state`](Self::set_state)) before stepping.
    pub const fn new() -> Self {
        Self {
            state: [0.0; 6],
            params: Quadrotor2dParams::DEFAULT,
            elapsed_steps: 0,
        }
    }

    super::plant_accessors!(
        Quadrotor2dParams,
        [f64; 6],
        "The physical state `[x, z, θ, ẋ, ż, θ̇]` in `f64`."
    );

    /// Overwrites the physical state `[x, z, θ, ẋ, ż, θ̇]`; the step counter
    /// is unchanged.
    #[inline]
    pub fn set_state(&mut self, state: [f64; 6]) {
        self.state = state;
    }

    /// The current observation: the state cast to `f32`.
    #[inline]
    pub fn observation(&self) -> SVector<f32, 6> {
        SVector::from(self.state.map(|s| s as f32))
    }

    /// Whether the state is outside the flight envelope (the box, the
    /// ground, the attitude limit).
    #[inline]
    pub fn crashed(&self) -> bool {
        let [x, z, th, ..] = self.state;
        !((-X_LIMIT..=X_LIMIT).contains(&x)
            && (Z_GROUND..=Z_MAX).contains(&z)
            && (-THETA_LIMIT..=THETA_LIMIT).contains(&th))
    }
}

super::plant_defaults!(Quadrotor2d, Quadrotor2dParams);

impl Env for Quadrotor2d {
    type Obs = SVector<f32, 6>;
    type Space = Continuous<2>;

    /// `[−1, 1]` per rotor: `−1` is off, `1` full thrust.
    fn action_space(&self) -> Continuous<2> {
        Continuous::symmetric(1.0)
    }

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 6> {
        for (s, high) in self.state.iter_mut().zip(RESET_HIGH) {
            *s = uniform_f64(rng, -high, high);
        }
        self.elapsed_steps = 0;
        self.observation()
    }

    /// Holds the rotor thrusts `(clip(uᵢ, −1, 1) + 1)/2·T_max` for `dt`.
    fn step(&mut self, action: SVector<f32, 2>) -> Result<Step<SVector<f32, 6>>, Error> {
        check_all_finite(action.as_slice())?;
        let p = self.params;
        let thrust = |u: f32| (f64::from(u).clamp(-1.0, 1.0) + 1.0) * 0.5 * p.max_thrust;
        self.state = rk4(&p, self.state, thrust(action[0]), thrust(action[1]));
        let [x, z, th, ..] = self.state;
        let distance = libm::sqrt(x * x + z * z);
        let reward = 1.0 - 0.5 * distance.min(1.0) - 0.25 * th.abs().min(1.0);
        self.elapsed_steps = self.elapsed_steps.saturating_add(1);
        Ok(Step {
            obs: self.observation(),
            reward: reward as f32,
            terminated: self.crashed(),
            truncated: self.elapsed_steps >= Self::MAX_EPISODE_STEPS,
        })
    }
}

super::timed_state!(
    Quadrotor2d,
    b"QUAD",
    6,
    "`[x, z, θ, ẋ, ż, θ̇, elapsed_steps]`."
);

#[cfg(test)]
mod tests;
