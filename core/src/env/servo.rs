//! Servo: a DC-motor position servo with Coulomb friction, an actuator
//! dead-zone and voltage saturation, run at 1 kHz.
//!
//! The plant is the textbook armature-controlled DC motor (Franklin, Powell &
//! Emami-Naeini, *Feedback Control of Dynamic Systems*, the DC-motor model
//! of ch. 2) driving an inertial load:
//!
//! ```text
//! L·di/dt = v − R·i − K·ω            (armature circuit, back-EMF K·ω)
//! J·dω/dt = K·i − b·ω − τ_c·sgn(ω)   (torque K·i, viscous and Coulomb friction)
//! dθ/dt   = ω
//! ```
//!
//! with one constant `K` for torque (N·m/A) and back-EMF (V·s/rad), as in SI
//! units they are the same. The Coulomb term is a stick–slip (Karnopp 1985,
//! "Computer simulation of stick-slip friction in mechanical dynamic
//! systems", *J. Dyn. Sys., Meas., Control* 107) model: at rest the shaft
//! stays stuck while the drive torque `|K·i| ≤ τ_c`; moving, friction opposes
//! the motion but never reverses it within an integration sub-step (a speed
//! that would cross zero stops at zero).
//!
//! Design:
//! - **The electrical time constant is kept.** By default `L/R` = 0.5 ms,
//!   half the 1 ms control period: the current does not settle within a
//!   period, so it is a state (and observed — a shunt measures it on any
//!   real drive). The mechanical time constant `J·R/K²` is 40 ms.
//! - **Integration**: [`SUBSTEPS`] = 10 sub-steps of `dt/10` per control
//!   period, the command held (zero-order hold). Per sub-step the current is
//!   advanced *exactly* for the speed held fixed,
//!   `i ← i∞ + (i − i∞)·e^(−h·R/L)` with `i∞ = (v − K·ω)/R` (stable for any
//!   `L`; the factor `e^(−h·R/L)` is one [`libm::exp`] per step), then the
//!   speed by semi-implicit Euler with the new current, then the angle with
//!   the new speed. All in `f64`, so the same bits on x86-64 and a
//!   Cortex-M4F.
//! - **Actuator**: the action `u ∈ [−1, 1]` is the PWM duty cycle; the drive
//!   has a dead-zone of `dead_zone` (a fraction of full scale) — the bridge
//!   applies `v = V·sgn(u)·(|u| − d)/(1 − d)` for `|u| > d` and nothing
//!   otherwise — and saturates at the supply `±V` (the action is clipped to
//!   `[−1, 1]`).
//! - **Task**: a random set-point `θ*` and a random start angle per episode
//!   (each uniform in `[−π, π)`, the motor at rest, no current); reach and
//!   hold `θ*`. The angle is not wrapped: a servo is a multi-turn axis.
//! - **Observation** `[θ* − θ, ω, i]` (rad, rad/s, A). The plant has no
//!   gravity load or cogging, so its dynamics do not depend on `θ` itself:
//!   the error, speed and current are the complete (Markov) state of the
//!   task, and the set-point or an integral would add nothing a policy could
//!   use. (A PID baseline keeps its own integral: it does not see `i`.)
//! - **Reward** `−min(|θ* − θ|/2π, 1) − 0.01·u²` per step (pre-clip `u`
//!   clipped to `[−1, 1]`): in `[−1.01, 0]`, the error normalised by the
//!   largest initial error (`2π`).
//! - **Never terminates** (no physical limit on a multi-turn axis);
//!   truncated at [`Servo::MAX_EPISODE_STEPS`] = 500 steps, a 0.5 s settle
//!   window (about 12 mechanical time constants).
//! - **Static-friendly.** `const fn new`, no allocation, no panics.

use nalgebra::SVector;
use rand_core::Rng;

use super::{Continuous, Env, Step, uniform_f64};
use crate::error::{Error, check_finite};

use core::f64::consts::{PI, TAU};

/// Integration sub-steps per control period.
pub const SUBSTEPS: u32 = 10;

/// The weight of `u²` in the cost.
const EFFORT_COST: f64 = 0.01;

/// The motor's and the drive's physical parameters. Each field has a
/// documented range, checked by [`validate`](Self::validate).
///
/// [`DEFAULT`](Self::DEFAULT) is a small 12 V gear-less servo motor with an
/// inertial load (`J` = 5·10⁻⁵ kg·m²): stall torque `K·V/R` = 0.3 N·m, no-load
/// speed `V/K` = 240 rad/s, electrical time constant 0.5 ms, mechanical 40 ms,
/// Coulomb friction 3 % of the stall torque.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct ServoParams {
    /// Rotor and load inertia `J`, kg·m², in [1e-8, 1]. Default 5e-5.
    pub inertia: f64,
    /// Viscous friction `b`, N·m·s/rad, in [0, 1]. Default 1e-5.
    pub viscous_friction: f64,
    /// Coulomb friction `τ_c`, N·m, in [0, 10]. Default 0.01.
    pub coulomb_friction: f64,
    /// Torque constant = back-EMF constant `K`, N·m/A, in [1e-4, 10]. Default 0.05.
    pub motor_constant: f64,
    /// Armature resistance `R`, Ω, in [1e-3, 1000]. Default 2.
    pub resistance: f64,
    /// Armature inductance `L`, H, in [1e-7, 1]. Default 1e-3.
    pub inductance: f64,
    /// Supply voltage `V` (the command `u = ±1`), V, in [0.1, 1000]. Default 12.
    pub supply_voltage: f64,
    /// Dead-zone of the drive, a fraction of full scale, in [0, 0.5]. Default 0.04.
    pub dead_zone: f64,
    /// Control period, s, in [1e-5, 0.1], and at most
    /// [`max_dt`](Self::max_dt) for the motor (a stiff motor needs a short
    /// period to integrate stably). Default 0.001.
    pub dt: f64,
}

impl ServoParams {
    /// The default motor (see the type's documentation).
    pub const DEFAULT: Self = Self {
        inertia: 5e-5,
        viscous_friction: 1e-5,
        coulomb_friction: 0.01,
        motor_constant: 0.05,
        resistance: 2.0,
        inductance: 1e-3,
        supply_voltage: 12.0,
        dead_zone: 0.04,
        dt: 1e-3,
    };

    /// Checks every field lies in its documented physical range (NaN and
    /// ±∞ never do); the defaults do.
    ///
    /// # Errors
    /// [`PlantRangeError`](super::PlantRangeError) naming the first field
    /// outside its range, its value and the range.
    pub fn check(&self) -> Result<(), super::PlantRangeError> {
        super::check_ranges(&[
            ("inertia", self.inertia, 1e-8, 1.0, "kg·m²"),
            (
                "viscous_friction",
                self.viscous_friction,
                0.0,
                1.0,
                "N·m·s/rad",
            ),
            ("coulomb_friction", self.coulomb_friction, 0.0, 10.0, "N·m"),
            ("motor_constant", self.motor_constant, 1e-4, 10.0, "N·m/A"),
            ("resistance", self.resistance, 1e-3, 1e3, "Ω"),
            ("inductance", self.inductance, 1e-7, 1.0, "H"),
            ("supply_voltage", self.supply_voltage, 0.1, 1e3, "V"),
            ("dead_zone", self.dead_zone, 0.0, 0.5, "of full scale"),
            ("dt", self.dt, 1e-5, 0.1, "s"),
        ])?;
        if !self.substeps_resolve(self.dt / f64::from(SUBSTEPS)) {
            let max = self.max_dt();
            return Err(super::PlantRangeError {
                field: "dt",
                value: self.dt,
                min: 1e-5,
                max,
                unit: if max < 1e-5 {
                    "s: the longest period whose sub-steps resolve this motor is below dt's \
                     1e-5 s floor, so no dt does: raise inertia, resistance or inductance, \
                     or lower motor_constant"
                } else {
                    "s: the longest period whose sub-steps resolve the motor \
                     for this inertia, viscous_friction, motor_constant, resistance \
                     and inductance"
                },
            });
        }
        Ok(())
    }

    /// Whether integration sub-steps of `h` seconds resolve the motor.
    ///
    /// Two conditions, both on the linear part of the model (Coulomb
    /// friction aside), `d(ω, i)/dt = A·(ω, i) + …` with
    /// `A = [[−b/J, K/J], [−K/L, −R/L]]`:
    /// - **The sub-step map is stable with a factor two to spare.** With
    ///   `d = e^(−h·R/L)` and `a = 1 − h·b/J` the scheme's step is
    ///   `i' = d·i − (1 − d)·K/R·ω + …`, `ω' = a·ω + h·K/J·i'`, a matrix of
    ///   determinant `D = d·a` and trace `T = a + d − h·K²·(1 − d)/(R·J)`;
    ///   by Jury's criterion (Åström & Wittenmark, *Computer-Controlled
    ///   Systems*, §3.3) its eigenvalues lie inside the unit circle iff
    ///   `|D| < 1` and `|T| < 1 + D`. It is asked of a sub-step of `2h`: at
    ///   the edge itself the mode neither grows nor decays, and the
    ///   stick–slip clamp pumps it up all the same. A stiff motor (small
    ///   `J`, large `K`) fails it.
    /// - **An electromechanical oscillation is resolved.** When `A`'s
    ///   eigenvalues are complex (a large inductance against a small
    ///   inertia), their modulus `√det A` is the ringing frequency, and
    ///   `h·√det A ≤ 0.5` (at least 12 sub-steps per period) is required:
    ///   coarser, the stick–slip clamp, applied at every zero crossing of
    ///   the speed, feeds the ringing until it overflows to NaN.
    pub fn substeps_resolve(&self, h: f64) -> bool {
        let (j, b, k, r, l) = (
            self.inertia,
            self.viscous_friction,
            self.motor_constant,
            self.resistance,
            self.inductance,
        );
        let h2 = 2.0 * h;
        let d = libm::exp(-h2 * r / l);
        let a = 1.0 - h2 * b / j;
        let det = d * a;
        let trace = a + d - h2 * k * k * (1.0 - d) / (r * j);
        let stable = det.abs() < 1.0 && trace.abs() < 1.0 + det;
        let (tr_a, det_a) = (-(b / j + r / l), (b * r + k * k) / (j * l));
        let resolved = tr_a * tr_a >= 4.0 * det_a || h * libm::sqrt(det_a) <= 0.5;
        stable && resolved
    }

    /// The longest control period (at most `dt`'s range's 0.1 s) whose
    /// sub-steps resolve the motor ([`substeps_resolve`](Self::substeps_resolve)),
    /// found by bisection to a relative 1e-9: what [`check`](Self::check)
    /// names as `dt`'s bound for these motor parameters.
    pub fn max_dt(&self) -> f64 {
        let n = f64::from(SUBSTEPS);
        let (mut lo, mut hi) = (0.0, 0.1);
        if self.substeps_resolve(hi / n) {
            return hi;
        }
        while hi - lo > 1e-9 * hi {
            let mid = 0.5 * (lo + hi);
            if self.substeps_resolve(mid / n) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The voltage the drive applies for the duty cycle `u` (clipped to
    /// `[−1, 1]`): zero inside the dead-zone, `V·sgn(u)·(|u| − d)/(1 − d)`
    /// outside it.
    pub fn drive_voltage(&self, u: f64) -> f64 {
        let u = u.clamp(-1.0, 1.0);
        let d = self.dead_zone;
        let mag = u.abs();
        if mag <= d {
            0.0
        } else {
            let v = self.supply_voltage * (mag - d) / (1.0 - d);
            if u < 0.0 { -v } else { v }
        }
    }
}

/// One control period of the motor at the drive voltage `v`: the new
/// `[θ, ω, i]` (see the module documentation for the scheme).
fn integrate(p: &ServoParams, state: [f64; 3], v: f64) -> [f64; 3] {
    let [mut th, mut w, mut i] = state;
    let h = p.dt / f64::from(SUBSTEPS);
    let decay = libm::exp(-h * p.resistance / p.inductance);
    let (k, j, tc) = (p.motor_constant, p.inertia, p.coulomb_friction);
    for _ in 0..SUBSTEPS {
        let i_inf = (v - k * w) / p.resistance;
        i = i_inf + (i - i_inf) * decay;
        let drive = k * i - p.viscous_friction * w;
        w = if w == 0.0 {
            // Stuck: breaks away only when the drive overcomes static friction.
            if drive.abs() <= tc {
                0.0
            } else {
                let net = if drive > 0.0 { drive - tc } else { drive + tc };
                h * net / j
            }
        } else {
            let friction = if w > 0.0 { tc } else { -tc };
            let next = w + h * (drive - friction) / j;
            // A speed that would cross (or reach) zero stops there: friction
            // never reverses the motion; the next sub-step decides whether
            // the drive breaks the shaft away again.
            if (next > 0.0) == (w > 0.0) && next != 0.0 {
                next
            } else {
                0.0
            }
        };
        th += h * w;
    }
    [th, w, i]
}

/// A DC-motor position servo: drive the shaft to a random set-point and hold
/// it, against Coulomb friction and through a dead-zone.
///
/// - Observation: `[θ* − θ, ω, i]` (rad, rad/s, A).
/// - Action: the duty cycle `u`, clipped to `[−1, 1]` (±12 V by default,
///   through the dead-zone); a non-finite action is [`Error::NonFinite`].
/// - Reward: `−min(|θ* − θ|/2π, 1) − 0.01·u²` after the step, in `[−1.01, 0]`.
/// - Never terminates; truncated at
///   [`MAX_EPISODE_STEPS`](Self::MAX_EPISODE_STEPS) (0.5 s at 1 kHz).
/// - Reset: `θ` then `θ*` each uniform in `[−π, π)`; `ω = i = 0`.
///
/// See the [module documentation](self) for the model and the integration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Servo {
    /// `[θ, ω, i, θ*]`.
    state: [f64; 4],
    /// The plant.
    params: ServoParams,
    /// Steps since the last reset (saturating).
    elapsed_steps: u32,
}

impl Servo {
    /// Time limit: `truncated` from this many steps after a reset on.
    pub const MAX_EPISODE_STEPS: u32 = 500;

    /// The shaft at rest at 0 with the set-point 0, no steps taken. Call
    /// [`reset`](Env::reset) (or [`set_state`](Self::set_state)) before stepping.
    pub const fn new() -> Self {
        Self {
            state: [0.0; 4],
            params: ServoParams::DEFAULT,
            elapsed_steps: 0,
        }
    }

    super::plant_accessors!(
        ServoParams,
        [f64; 4],
        "The state `[θ, ω, i, θ*]` (rad, rad/s, A, rad) in `f64`."
    );

    /// Overwrites the state `[θ, ω, i, θ*]`; the step counter is unchanged.
    #[inline]
    pub fn set_state(&mut self, state: [f64; 4]) {
        self.state = state;
    }

    /// The current observation `[θ* − θ, ω, i]`, computed in `f64` and cast
    /// to `f32`.
    #[inline]
    pub fn observation(&self) -> SVector<f32, 3> {
        let [th, w, i, target] = self.state;
        SVector::from([(target - th) as f32, w as f32, i as f32])
    }
}

super::plant_defaults!(Servo, ServoParams);

impl Env for Servo {
    type Obs = SVector<f32, 3>;
    type Space = Continuous<1>;

    /// `[−1, 1]`: the duty cycle.
    fn action_space(&self) -> Continuous<1> {
        Continuous::symmetric(1.0)
    }

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 3> {
        let th = uniform_f64(rng, -PI, PI);
        let target = uniform_f64(rng, -PI, PI);
        self.state = [th, 0.0, 0.0, target];
        self.elapsed_steps = 0;
        self.observation()
    }

    /// Applies the duty cycle `clip(u, −1, 1)` for one control period.
    fn step(&mut self, action: SVector<f32, 1>) -> Result<Step<SVector<f32, 3>>, Error> {
        let u = action[0];
        check_finite(u)?;
        let u = f64::from(u).clamp(-1.0, 1.0);
        let [th, w, i, target] = self.state;
        let v = self.params.drive_voltage(u);
        let [th, w, i] = integrate(&self.params, [th, w, i], v);
        self.state = [th, w, i, target];
        let error = (target - th).abs() / TAU;
        let reward = -(if error < 1.0 { error } else { 1.0 }) - EFFORT_COST * u * u;
        self.elapsed_steps = self.elapsed_steps.saturating_add(1);
        Ok(Step {
            obs: self.observation(),
            reward: reward as f32,
            terminated: false,
            truncated: self.elapsed_steps >= Self::MAX_EPISODE_STEPS,
        })
    }
}

super::timed_state!(Servo, b"SRVO", 4, "`[θ, ω, i, θ*, elapsed_steps]`.");

#[cfg(test)]
mod tests;
