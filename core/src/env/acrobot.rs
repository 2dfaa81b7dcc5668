//! Acrobot: Gymnasium's `Acrobot-v1`, swing the tip of a two-link
//! underactuated pendulum above a line.
//!
//! A port of Gymnasium's `AcrobotEnv`
//! (`gymnasium/envs/classic_control/acrobot.py`,
//! <https://github.com/Farama-Foundation/Gymnasium/blob/main/gymnasium/envs/classic_control/acrobot.py>,
//! checked against Gymnasium 1.4.0) with the 500-step `TimeLimit` that
//! `gym.make("Acrobot-v1")` adds. The task is Sutton's (1996, "Generalization
//! in Reinforcement Learning: Successful Examples Using Sparse Coarse
//! Coding", NIPS 8) with the dynamics of Sutton & Barto's book
//! (*Reinforcement Learning: An Introduction*, the acrobot example; Gymnasium's
//! default `book_or_nips = "book"`, whose `ddθ₂` has the
//! `−m₂·l₁·lc₂·θ̇₁²·sin θ₂` term the NIPS paper's equations miss).
//!
//! Design:
//! - **Gymnasium's arithmetic, in `f64`.** The state `[θ₁, θ₂, θ̇₁, θ̇₂]` is
//!   `f64` (NumPy's `float64` after the first step) and every step evaluates
//!   Gymnasium's `_dsdt` and `rk4` expression for expression, in Python's
//!   order (`a * b * c` is `(a·b)·c` in both languages; `-m2 * l1` negates
//!   first in both), with [`libm::cos`]/[`libm::sin`] for NumPy's `cos`/`sin`
//!   (pure Rust: the same bits on x86-64 and a Cortex-M4F) and `x·x` for
//!   Python's `x**2` (correctly rounded; the C `pow` NumPy calls for a
//!   `float64` scalar misses it by one ulp for ~0.1 % of arguments). No fused
//!   multiply-add: Rust never contracts.
//! - **One RK4 step of `dt` = 0.2 s** (Gymnasium's `rk4(_dsdt, s, [0, dt])`):
//!   `y + dt/6·(((k₁ + 2k₂) + 2k₃) + k₄)` with the stages at `y + dt/2·k`,
//!   the torque held constant (Gymnasium's augmented fifth component has
//!   derivative 0 and `torque_noise_max = 0`).
//! - **Wrap and bound as Gymnasium.** The angles are wrapped into `[−π, π]`
//!   by Gymnasium's `wrap` — repeated subtraction or addition of `2π`, each
//!   step rounded, reproduced literally (an angle beyond ±1024 rad, which only
//!   [`set_state`](Acrobot::set_state) can give, is first reduced with the
//!   exact `fmod` so the loop stays short) — and the speeds clipped to
//!   `±4π`, `±9π` by `bound` (`min(max(x, m), M)`, NaN passing through as in
//!   Python).
//! - **The reset state is `float32`.** Gymnasium draws the four state
//!   variables uniformly in `[−0.1, 0.1)` and keeps them as a `float32`
//!   array until the first step; the port rounds its draws to `f32` the same
//!   way (the first step then computes in `f64`, as NumPy's `np.append` of a
//!   `float32` array and a Python float does).
//! - **Reward, termination, truncation.** `−1` per step, `0` on a step that
//!   ends with the tip above the line (`−cos θ₁ − cos(θ₂ + θ₁) > 1`), which
//!   terminates; the caller resets then (stepping on simulates on, as in
//!   Gymnasium). `truncated` from the 500th step after a reset on.
//! - **Observation** `[cos θ₁, sin θ₁, cos θ₂, sin θ₂, θ̇₁, θ̇₂]`, computed in
//!   `f64` and cast to `f32` (Gymnasium's `float32` observation space).
//!   Gymnasium computes the reset observation's `cos`/`sin` in `float32`
//!   (of the `float32` state); here they are the `f64` ones rounded, which
//!   agree but for a possible last-bit difference.
//! - **Measured agreement** (`tests/tests/gym_parity.rs`, Gymnasium 1.4.0 /
//!   NumPy 2.4.6 on glibc, 8 episodes, 2337 steps): the `f32` observations
//!   and the rewards are identical at every step. The `f64` states are
//!   bit-identical after 2203 of the 2337 single steps (started from
//!   Gymnasium's state) and within 8.9e-16 after the others — a last-bit
//!   `sin`/`cos` (libm's against glibc's) or square (`pow`) difference.
//!   The double pendulum is chaotic and grows such a difference along a free
//!   run: within 5.6e-13 over whole episodes (four of 500 steps), far below
//!   the observations' `f32` resolution. A longer measurement (160
//!   episodes, `gen_gymnasium.py --acrobot-long 160` and
//!   `gym_parity::long_acrobot_replay_agreement`): one step from
//!   Gymnasium's state, 94 % of the `f64` states are bit-identical (6 %
//!   differ in the last bits); along a free run the first such difference
//!   stays in the state, so only 8 % (random actions, 500 steps) to 24 %
//!   (an energy pump, to its termination) of the states are bit-identical.
//!   Within an episode (to its first termination or truncation) the rewards
//!   and the termination step agree in all 160 free runs, and an `f32`
//!   observation differs in the last bit somewhere in 9 of them. Stepped on
//!   for hundreds of steps past the goal (the double pendulum swinging
//!   wildly), a free run's chaos amplifies the difference until 78 of 80
//!   such runs meet the line at another step. Bit-identical `f64` states
//!   would need glibc's `sin`/`cos`, which no Cortex-M has.
//! - **Cost.** Four `_dsdt` evaluations per step, each two `cos` and one
//!   `sin` plus ~40 `+ − × ÷`: on a Cortex-M4F (software `f64`) some 20–30 k
//!   cycles per step (estimated, not measured), still small next to a
//!   policy update.
//! - **Static-friendly.** `const fn new`, no allocation.

use nalgebra::SVector;
use rand_core::Rng;

use super::{Discrete, Env, Step, uniform_f64};
use crate::error::Error;

use core::f64::consts::PI;

/// The plant's physical parameters (Gymnasium's `AcrobotEnv` class
/// attributes, and the `g = 9.8` and torques its methods hard-code),
/// settable so a changed plant can be simulated. Each field has a documented
/// range, checked by [`validate`](Self::validate).
///
/// [`DEFAULT`](Self::DEFAULT) is Gymnasium's `Acrobot-v1`, bit for bit. The
/// goal line (`−cos θ₁ − cos(θ₂ + θ₁) > 1`, unit links) and the time limit
/// are the task's and stay fixed. (`LINK_LENGTH_2` appears in Gymnasium only
/// in the rendering, so it is not a parameter.)
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct AcrobotParams {
    /// Length of the first link `l₁`, m, in `(0, 10]`. Default 1.
    pub link_length_1: f64,
    /// Mass of the first link `m₁`, kg, in `(0, 100]`. Default 1.
    pub link_mass_1: f64,
    /// Mass of the second link `m₂`, kg, in `(0, 100]`. Default 1.
    pub link_mass_2: f64,
    /// Position of the first link's centre of mass `lc₁`, m, in `(0, 10]`. Default 0.5.
    pub link_com_pos_1: f64,
    /// Position of the second link's centre of mass `lc₂`, m, in `(0, 10]`. Default 0.5.
    pub link_com_pos_2: f64,
    /// Moment of inertia of each link `I₁ = I₂`, kg·m², in `(0, 100]`. Default 1.
    pub link_moi: f64,
    /// Gravitational acceleration, m/s², in `[0, 100]`. Default 9.8.
    pub gravity: f64,
    /// Torque of actions `0` (`−torque`) and `2` (`+torque`), N·m, in `(0, 100]`. Default 1.
    pub torque: f64,
    /// Integration step, s, in `(0, 1]`. Default 0.2.
    pub dt: f64,
    /// Speed bound of the first joint, rad/s, in `(0, 1000]`. Default 4π.
    pub max_vel_1: f64,
    /// Speed bound of the second joint, rad/s, in `(0, 1000]`. Default 9π.
    pub max_vel_2: f64,
}

impl AcrobotParams {
    /// Gymnasium's `Acrobot-v1`.
    pub const DEFAULT: Self = Self {
        link_length_1: 1.0,
        link_mass_1: 1.0,
        link_mass_2: 1.0,
        link_com_pos_1: 0.5,
        link_com_pos_2: 0.5,
        link_moi: 1.0,
        gravity: 9.8,
        torque: 1.0,
        dt: 0.2,
        max_vel_1: 4.0 * PI,
        max_vel_2: 9.0 * PI,
    };

    /// Checks every field lies in its documented physical range (NaN and
    /// ±∞ never do); the defaults do.
    ///
    /// # Errors
    /// [`PlantRangeError`](super::PlantRangeError) naming the first field
    /// outside its range, its value and the range.
    pub fn check(&self) -> Result<(), super::PlantRangeError> {
        super::check_ranges(&[
            ("link_length_1", self.link_length_1, 1e-3, 10.0, "m"),
            ("link_mass_1", self.link_mass_1, 1e-3, 100.0, "kg"),
            ("link_mass_2", self.link_mass_2, 1e-3, 100.0, "kg"),
            ("link_com_pos_1", self.link_com_pos_1, 1e-3, 10.0, "m"),
            ("link_com_pos_2", self.link_com_pos_2, 1e-3, 10.0, "m"),
            ("link_moi", self.link_moi, 1e-6, 100.0, "kg·m²"),
            ("gravity", self.gravity, 0.0, 100.0, "m/s²"),
            ("torque", self.torque, 1e-3, 100.0, "N·m"),
            ("dt", self.dt, 1e-4, 1.0, "s"),
            ("max_vel_1", self.max_vel_1, 1e-3, 1e3, "rad/s"),
            ("max_vel_2", self.max_vel_2, 1e-3, 1e3, "rad/s"),
        ])
    }
}

/// Half-width of the uniform reset distribution of every state variable.
const RESET_HIGH: f64 = 0.1;
/// Angles beyond this (only [`Acrobot::set_state`] can give them) are
/// reduced with `fmod` before Gymnasium's `wrap` loop.
const WRAP_LOOP_LIMIT: f64 = 1024.0;

/// Gymnasium's `wrap(x, m, M)`: subtracts (adds) `M − m` while `x > M`
/// (`x < m`), each step rounded as in Python. NaN passes through; `|x|` past
/// [`WRAP_LOOP_LIMIT`] (or infinite, where Gymnasium would loop forever) is
/// first reduced with the exact `fmod`.
fn wrap(x: f64, m: f64, big_m: f64) -> f64 {
    let diff = big_m - m;
    let mut x = if x.abs() > WRAP_LOOP_LIMIT {
        libm::fmod(x, diff)
    } else {
        x
    };
    while x > big_m {
        x -= diff;
    }
    while x < m {
        x += diff;
    }
    x
}

/// Gymnasium's `bound(x, m, M)`, Python's `min(max(x, m), M)`: a NaN `x`
/// passes through.
fn bound(x: f64, m: f64, big_m: f64) -> f64 {
    let y = if m > x { m } else { x };
    if big_m < y { big_m } else { y }
}

/// Gymnasium's `_dsdt` ("book" dynamics): `[θ̇₁, θ̇₂, θ̈₁, θ̈₂]` of the state
/// `s` under the torque `a` on the second joint.
fn dsdt(p: &AcrobotParams, s: [f64; 4], a: f64) -> [f64; 4] {
    let AcrobotParams {
        link_length_1: l1,
        link_mass_1: m1,
        link_mass_2: m2,
        link_com_pos_1: lc1,
        link_com_pos_2: lc2,
        link_moi,
        gravity: g,
        ..
    } = *p;
    let (i1, i2) = (link_moi, link_moi);
    let [theta1, theta2, dtheta1, dtheta2] = s;
    let (cos2, sin2) = (libm::cos(theta2), libm::sin(theta2));
    let d1 = m1 * (lc1 * lc1) + m2 * (l1 * l1 + lc2 * lc2 + 2.0 * l1 * lc2 * cos2) + i1 + i2;
    let d2 = m2 * (lc2 * lc2 + l1 * lc2 * cos2) + i2;
    let phi2 = m2 * lc2 * g * libm::cos(theta1 + theta2 - PI / 2.0);
    let phi1 = -m2 * l1 * lc2 * (dtheta2 * dtheta2) * sin2
        - 2.0 * m2 * l1 * lc2 * dtheta2 * dtheta1 * sin2
        + (m1 * lc1 + m2 * l1) * g * libm::cos(theta1 - PI / 2.0)
        + phi2;
    let ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * (dtheta1 * dtheta1) * sin2 - phi2)
        / (m2 * (lc2 * lc2) + i2 - (d2 * d2) / d1);
    let ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
    [dtheta1, dtheta2, ddtheta1, ddtheta2]
}

/// `y + h·k` per component (NumPy's `y0 + dt2 * k1`).
fn axpy(y: [f64; 4], h: f64, k: [f64; 4]) -> [f64; 4] {
    core::array::from_fn(|i| y[i] + h * k[i])
}

/// Gymnasium's `rk4(_dsdt, [s, a], [0, dt])`: one classical Runge–Kutta step.
fn rk4(p: &AcrobotParams, y0: [f64; 4], a: f64) -> [f64; 4] {
    // Gymnasium: `dt = t[1] - t[0]` with `t = [0, dt]`, exact.
    let dt = p.dt;
    let dt2 = dt / 2.0;
    let k1 = dsdt(p, y0, a);
    let k2 = dsdt(p, axpy(y0, dt2, k1), a);
    let k3 = dsdt(p, axpy(y0, dt2, k2), a);
    let k4 = dsdt(p, axpy(y0, dt, k3), a);
    let sum: [f64; 4] = core::array::from_fn(|i| k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
    axpy(y0, dt / 6.0, sum)
}

/// Gymnasium's `Acrobot-v1`: two links hang from a fixed pivot; a torque on
/// the joint between them must swing the tip above a line one link length
/// above the pivot.
///
/// - Observation: `[cos θ₁, sin θ₁, cos θ₂, sin θ₂, θ̇₁, θ̇₂]` (θ₁ = 0 hangs
///   down; θ₂ relative to the first link; speeds within ±4π, ±9π rad/s).
/// - Action: `0`, `1`, `2` apply −1, 0, +1 N·m; anything else is
///   [`Error::InvalidAction`].
/// - Reward: −1 per step, 0 on the terminating step.
/// - Terminated when `−cos θ₁ − cos(θ₂ + θ₁) > 1`; truncated at
///   [`MAX_EPISODE_STEPS`](Self::MAX_EPISODE_STEPS) steps.
/// - Reset: `θ₁, θ₂, θ̇₁, θ̇₂` each uniform in `[−0.1, 0.1)`, in that order,
///   rounded to `f32`.
///
/// See the [module documentation](self) for the numerical design.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Acrobot {
    /// `[θ₁, θ₂, θ̇₁, θ̇₂]`, Gymnasium's state.
    state: [f64; 4],
    /// The plant.
    params: AcrobotParams,
    /// Steps since the last reset (saturating).
    elapsed_steps: u32,
}

impl Acrobot {
    /// Time limit: `truncated` from this many steps after a reset on.
    pub const MAX_EPISODE_STEPS: u32 = 500;

    /// Both links hanging straight down at rest, no steps taken. Call
    /// [`reset`](Env::reset) (or [`set_state`](Self::set_state)) before stepping.
    pub const fn new() -> Self {
        Self {
            state: [0.0; 4],
            params: AcrobotParams::DEFAULT,
            elapsed_steps: 0,
        }
    }

    super::plant_accessors!(
        AcrobotParams,
        [f64; 4],
        "The physical state `[θ₁, θ₂, θ̇₁, θ̇₂]` in `f64`."
    );

    /// Overwrites the physical state `[θ₁, θ₂, θ̇₁, θ̇₂]`; the step counter is
    /// unchanged (like assigning `env.unwrapped.state` in Gymnasium).
    #[inline]
    pub fn set_state(&mut self, state: [f64; 4]) {
        self.state = state;
    }

    /// The current observation `[cos θ₁, sin θ₁, cos θ₂, sin θ₂, θ̇₁, θ̇₂]`,
    /// computed in `f64` and cast to `f32`.
    #[inline]
    pub fn observation(&self) -> SVector<f32, 6> {
        let [t1, t2, w1, w2] = self.state;
        SVector::from([
            libm::cos(t1) as f32,
            libm::sin(t1) as f32,
            libm::cos(t2) as f32,
            libm::sin(t2) as f32,
            w1 as f32,
            w2 as f32,
        ])
    }

    /// Gymnasium's `_terminal`: the tip is above the line,
    /// `−cos θ₁ − cos(θ₂ + θ₁) > 1`.
    #[inline]
    pub fn tip_above_line(&self) -> bool {
        let [t1, t2, ..] = self.state;
        -libm::cos(t1) - libm::cos(t2 + t1) > 1.0
    }
}

super::plant_defaults!(Acrobot, AcrobotParams);

impl Env for Acrobot {
    type Obs = SVector<f32, 6>;
    type Space = Discrete<3>;
    const SOLVED_RETURN: f32 = -100.0;

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 6> {
        for s in &mut self.state {
            // Gymnasium: `uniform(-0.1, 0.1, size=(4,)).astype(np.float32)`.
            *s = f64::from(uniform_f64(rng, -RESET_HIGH, RESET_HIGH) as f32);
        }
        self.elapsed_steps = 0;
        self.observation()
    }

    /// Applies −1 (`0`), 0 (`1`) or +1 (`2`) N·m on the second joint for 0.2 s.
    fn step(&mut self, action: usize) -> Result<Step<SVector<f32, 6>>, Error> {
        let p = self.params;
        let torque = match action {
            0 => -p.torque,
            1 => 0.0,
            2 => p.torque,
            _ => return Err(Error::InvalidAction),
        };
        let [t1, t2, w1, w2] = rk4(&p, self.state, torque);
        self.state = [
            wrap(t1, -PI, PI),
            wrap(t2, -PI, PI),
            bound(w1, -p.max_vel_1, p.max_vel_1),
            bound(w2, -p.max_vel_2, p.max_vel_2),
        ];
        let terminated = self.tip_above_line();
        self.elapsed_steps = self.elapsed_steps.saturating_add(1);
        Ok(Step {
            obs: self.observation(),
            reward: if terminated { 0.0 } else { -1.0 },
            terminated,
            truncated: self.elapsed_steps >= Self::MAX_EPISODE_STEPS,
        })
    }
}

super::timed_state!(Acrobot, b"ACRO", 4, "`[θ₁, θ₂, θ̇₁, θ̇₂, elapsed_steps]`.");

#[cfg(test)]
mod tests;
