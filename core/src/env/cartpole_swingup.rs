//! Cart-pole swing-up: swing a pole hanging below a cart up to the inverted
//! position and balance it there, with a continuous, bounded force.
//!
//! The cart-pole of Barto, Sutton & Anderson (1983) with Florian's (2007,
//! "Correct equations for the dynamics of the cart-pole system") equations —
//! a uniform pole of mass `m` and half-length `l` (moment of inertia
//! `(4/3)·m·l²` about the pivot) on a cart of mass `M`, no friction:
//!
//! ```text
//! (M + m)·ẍ + m·l·cos θ·θ̈ − m·l·θ̇²·sin θ = F
//! m·l·cos θ·ẍ + (4/3)·m·l²·θ̈ − m·g·l·sin θ = 0
//! ```
//!
//! solved for `θ̈` and `ẍ` exactly as Gymnasium's `CartPole-v1` does (θ = 0
//! upright, θ > 0 leaning towards +x, a positive force pushes the cart
//! towards +x). The swing-up task is Doya's (2000, "Reinforcement learning in
//! continuous time and space", *Neural Computation* 12) and Åström & Furuta's
//! (2000, "Swinging up a pendulum by energy control", *Automatica* 36), here
//! on Gymnasium's plant.
//!
//! Design:
//! - **Integration**: one classical RK4 step of `tau` = 0.02 s per control
//!   period, the force held (zero-order hold); `f64` state, [`libm`]
//!   `sin`/`cos` (the same bits on x86-64 and a Cortex-M4F). Without force
//!   the energy `½(M+m)ẋ² + m·l·ẋ·θ̇·cos θ + ½·(4/3)·m·l²·θ̇² + m·g·l·cos θ`
//!   is conserved to ~1e-6 relative over an episode (tested). After each step
//!   `θ` is wrapped into `[−π, π)` (the observation is `cos θ`, `sin θ`, so a
//!   wrap is invisible to a policy).
//! - **Force bound, and why swing-up is feasible**: `u ∈ [−1, 1]` times
//!   `force_mag` = 10 N gives a cart acceleration of up to 10/1.1 ≈ 9.1
//!   m/s² ≈ 0.93·g. Åström & Furuta show an acceleration bound of a fraction
//!   of `g` swings a pendulum up in a few swings; the pole needs `2·m·g·l` =
//!   0.98 J. The tuned energy-based baseline
//!   ([`SwingUpEnergy`](crate::baseline::SwingUpEnergy)) swings up and
//!   balances within the ±2.4 m track from all 64 of its tuning start
//!   states and 197 of 200 held-out ones (measured; the other three leave
//!   the track).
//! - **Reward** `(1 + cos θ)/2 − 0.01·u²` after the step, in `[−0.01, 1]`:
//!   0 hanging, 1 upright. It is (almost) never negative, so leaving the
//!   track — which terminates the episode — forfeits every later positive
//!   reward and is never attractive.
//! - **Termination** when `|x| > x_threshold` (2.4 m); truncated at
//!   [`CartPoleSwingUp::MAX_EPISODE_STEPS`] = 500 steps (10 s).
//! - **Reset**: the pole hanging down, perturbed: `x, ẋ, θ − π, θ̇` each
//!   uniform in `[−0.05, 0.05)` (in that order), `θ` then wrapped.
//! - **Static-friendly.** `const fn new`, no allocation, no panics.

use nalgebra::SVector;
use rand_core::Rng;

use super::{Continuous, Env, Step, uniform_f64};
use crate::error::{Error, check_finite};

use core::f64::consts::{PI, TAU};

/// The weight of `u²` in the cost.
const EFFORT_COST: f64 = 0.01;
/// Half-width of the reset perturbation of each state variable.
const RESET_HIGH: f64 = 0.05;

/// The largest `α_max·τ²` a plant may have, `α_max` its pole's largest
/// angular acceleration ([`CartPoleSwingUpParams::max_angular_acceleration`])
/// and `τ` its control period: twice the angle, rad, the pole turns in one
/// period from rest. Gymnasium's plant has 0.012; explicit RK4 is stable on
/// the linearised pendulum up to ≈ 8 (`ωτ ≤ 2.83`), and the centrifugal
/// term makes the nonlinear plant overflow below that (measured: 146 of
/// 3 000 sampled parameter sets gave NaN under bang-bang forces, none with
/// this bound; 6 with a bound of 8, 1 with 4).
pub const MAX_SWING_PER_PERIOD: f64 = 1.0;

/// The plant's physical parameters (named as [`CartPoleParams`](super::CartPoleParams)'s),
/// settable so a changed plant can be simulated. Each field has a documented
/// range, checked by [`validate`](Self::validate).
///
/// [`DEFAULT`](Self::DEFAULT) is Gymnasium's `CartPole-v1` plant with a
/// ±10 N continuous force.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct CartPoleSwingUpParams {
    /// Gravitational acceleration, m/s², in [0, 100]. Default 9.8.
    pub gravity: f64,
    /// Cart mass `M`, kg, in [0.001, 1000]. Default 1.0.
    pub masscart: f64,
    /// Pole mass `m`, kg, in [0.001, 1000]. Default 0.1.
    pub masspole: f64,
    /// Half the pole's length `l`, m, in [0.001, 100]. Default 0.5.
    pub length: f64,
    /// Force of a continuous action of ±1, N, in [0.001, 10000]. Default 10.
    pub force_mag: f64,
    /// Control period, s, in [0.0001, 0.1]. Default 0.02.
    pub tau: f64,
    /// Half-length of the track, m, in [0.01, 100]. Default 2.4.
    pub x_threshold: f64,
}

impl CartPoleSwingUpParams {
    /// Gymnasium's plant, ±10 N, a ±2.4 m track.
    pub const DEFAULT: Self = Self {
        gravity: 9.8,
        masscart: 1.0,
        masspole: 0.1,
        length: 0.5,
        force_mag: 10.0,
        tau: 0.02,
        x_threshold: 2.4,
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
            ("x_threshold", self.x_threshold, 1e-2, 1e2, "m"),
        ])?;
        let max_tau = self.max_tau();
        if self.tau > max_tau {
            return Err(super::PlantRangeError {
                field: "tau",
                value: self.tau,
                min: 1e-4,
                max: max_tau,
                unit: "s: the longest period RK4 resolves the pole's fastest swing in \
                       for this gravity, masscart, masspole, length and force_mag",
            });
        }
        Ok(())
    }

    /// The largest angular acceleration of the pole from rest, rad/s²:
    /// gravity and the full force acting together on the smallest
    /// effective inertia (`cos² θ = 1` in the denominator),
    /// `(g + F/(M + m)) / (l·(4/3 − m/(M + m)))`. The denominator is at
    /// least `l/3`, never zero.
    pub fn max_angular_acceleration(&self) -> f64 {
        let total = self.masscart + self.masspole;
        (self.gravity + self.force_mag / total)
            / (self.length * (4.0 / 3.0 - self.masspole / total))
    }

    /// The longest control period the RK4 step integrates,
    /// `√(MAX_SWING_PER_PERIOD / max_angular_acceleration)`: the pole turns
    /// at most ½·[`MAX_SWING_PER_PERIOD`] rad in one period from rest. A
    /// longer one lets the stages extrapolate the pole through several
    /// turns, and the centrifugal term `m·l·θ̇²` then overflows within a few
    /// steps (NaN at the first step for a 1 mm pole pushed with 10 kN).
    pub fn max_tau(&self) -> f64 {
        libm::sqrt(MAX_SWING_PER_PERIOD / self.max_angular_acceleration())
    }

    /// The total mechanical energy of the state `[x, ẋ, θ, θ̇]`, J (zero
    /// potential at the pivot's height).
    pub fn energy(&self, s: [f64; 4]) -> f64 {
        let [_, v, th, w] = s;
        let (total, m, l) = (self.masscart + self.masspole, self.masspole, self.length);
        0.5 * total * v * v
            + m * l * v * w * libm::cos(th)
            + 0.5 * (4.0 / 3.0) * m * l * l * w * w
            + m * self.gravity * l * libm::cos(th)
    }
}

/// `[ẋ, ẍ, θ̇, θ̈]` of the state `[x, ẋ, θ, θ̇]` under the force `f`
/// (Gymnasium's expressions).
fn derivatives(p: &CartPoleSwingUpParams, s: [f64; 4], f: f64) -> [f64; 4] {
    let [_, v, th, w] = s;
    let total = p.masspole + p.masscart;
    let polemass_length = p.masspole * p.length;
    let (cos, sin) = (libm::cos(th), libm::sin(th));
    let temp = (f + polemass_length * w * w * sin) / total;
    let thacc =
        (p.gravity * sin - cos * temp) / (p.length * (4.0 / 3.0 - p.masspole * cos * cos / total));
    let xacc = temp - polemass_length * thacc * cos / total;
    [v, xacc, w, thacc]
}

/// `y + h·k` per component.
fn axpy(y: [f64; 4], h: f64, k: [f64; 4]) -> [f64; 4] {
    core::array::from_fn(|i| y[i] + h * k[i])
}

/// One classical RK4 step of `tau` under the force `f`.
fn rk4(p: &CartPoleSwingUpParams, y: [f64; 4], f: f64) -> [f64; 4] {
    let h = p.tau;
    let k1 = derivatives(p, y, f);
    let k2 = derivatives(p, axpy(y, h / 2.0, k1), f);
    let k3 = derivatives(p, axpy(y, h / 2.0, k2), f);
    let k4 = derivatives(p, axpy(y, h, k3), f);
    let sum: [f64; 4] = core::array::from_fn(|i| k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
    axpy(y, h / 6.0, sum)
}

/// `θ` wrapped into `[−π, π)`: `θ − 2π·⌊(θ + π)/2π⌋`.
#[inline]
pub fn wrap_angle(th: f64) -> f64 {
    let r = th - TAU * libm::floor((th + PI) / TAU);
    // Rounding can land exactly on π: fold it to −π.
    if r >= PI { r - TAU } else { r }
}

/// Cart-pole swing-up: a pole hanging from a cart on a ±2.4 m track must be
/// swung up and balanced with a bounded continuous force.
///
/// - Observation: `[x, ẋ, cos θ, sin θ, θ̇]` (θ = 0 upright).
/// - Action: `u`, clipped to `[−1, 1]`, times 10 N; a non-finite action is
///   [`Error::NonFinite`].
/// - Reward: `(1 + cos θ)/2 − 0.01·u²` after the step, in `[−0.01, 1]`.
/// - Terminated when `|x| > 2.4` m; truncated at
///   [`MAX_EPISODE_STEPS`](Self::MAX_EPISODE_STEPS) (10 s at 50 Hz).
/// - Reset: hanging down, each state variable perturbed by up to ±0.05.
///
/// See the [module documentation](self) for the model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CartPoleSwingUp {
    /// `[x, ẋ, θ, θ̇]`, θ in `[−π, π)`.
    state: [f64; 4],
    /// The plant.
    params: CartPoleSwingUpParams,
    /// Steps since the last reset (saturating).
    elapsed_steps: u32,
}

impl CartPoleSwingUp {
    /// Time limit: `truncated` from this many steps after a reset on.
    pub const MAX_EPISODE_STEPS: u32 = 500;

    /// The cart centred at rest, the pole hanging straight down (θ = −π), no
    /// steps taken. Call [`reset`](Env::reset) (or
    /// [`set_state`](Self::set_state)) before stepping.
    pub const fn new() -> Self {
        Self {
            state: [0.0, 0.0, -PI, 0.0],
            params: CartPoleSwingUpParams::DEFAULT,
            elapsed_steps: 0,
        }
    }

    super::plant_accessors!(
        CartPoleSwingUpParams,
        [f64; 4],
        "The physical state `[x, ẋ, θ, θ̇]` (m, m/s, rad, rad/s) in `f64`."
    );

    /// Overwrites the physical state `[x, ẋ, θ, θ̇]` (θ is used as given;
    /// the next step wraps it); the step counter is unchanged.
    #[inline]
    pub fn set_state(&mut self, state: [f64; 4]) {
        self.state = state;
    }

    /// The current observation `[x, ẋ, cos θ, sin θ, θ̇]`, computed in `f64`
    /// and cast to `f32`.
    #[inline]
    pub fn observation(&self) -> SVector<f32, 5> {
        let [x, v, th, w] = self.state;
        SVector::from([
            x as f32,
            v as f32,
            libm::cos(th) as f32,
            libm::sin(th) as f32,
            w as f32,
        ])
    }
}

super::plant_defaults!(CartPoleSwingUp, CartPoleSwingUpParams);

impl Env for CartPoleSwingUp {
    type Obs = SVector<f32, 5>;
    type Space = Continuous<1>;

    /// `[−1, 1]`: the force is `u·force_mag`.
    fn action_space(&self) -> Continuous<1> {
        Continuous::symmetric(1.0)
    }

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 5> {
        let x = uniform_f64(rng, -RESET_HIGH, RESET_HIGH);
        let v = uniform_f64(rng, -RESET_HIGH, RESET_HIGH);
        let th = wrap_angle(PI + uniform_f64(rng, -RESET_HIGH, RESET_HIGH));
        let w = uniform_f64(rng, -RESET_HIGH, RESET_HIGH);
        self.state = [x, v, th, w];
        self.elapsed_steps = 0;
        self.observation()
    }

    /// Pushes the cart with `clip(u, −1, 1)·force_mag` for `tau` seconds.
    fn step(&mut self, action: SVector<f32, 1>) -> Result<Step<SVector<f32, 5>>, Error> {
        let u = action[0];
        check_finite(u)?;
        let u = f64::from(u).clamp(-1.0, 1.0);
        let [x, v, th, w] = rk4(&self.params, self.state, u * self.params.force_mag);
        let th = wrap_angle(th);
        self.state = [x, v, th, w];
        let reward = 0.5 * (1.0 + libm::cos(th)) - EFFORT_COST * u * u;
        self.elapsed_steps = self.elapsed_steps.saturating_add(1);
        Ok(Step {
            obs: self.observation(),
            reward: reward as f32,
            terminated: !(-self.params.x_threshold..=self.params.x_threshold).contains(&x),
            truncated: self.elapsed_steps >= Self::MAX_EPISODE_STEPS,
        })
    }
}

super::timed_state!(
    CartPoleSwingUp,
    b"CPSU",
    4,
    "`[x, ẋ, θ, θ̇, elapsed_steps]`."
);

#[cfg(test)]
mod tests;
