//! PID position control of the [`Servo`](crate::env::Servo), with
//! anti-windup.
//!
//! The law (Åström & Hägglund, *Advanced PID Control*, ISA 2006, §3.5:
//! derivative on the measurement, integrator windup by conditional
//! integration, also called clamping):
//!
//! ```text
//! u = clip(kp·e + ki·I − kd·ω, −1, 1),   e = θ* − θ
//! I ← I + e·dt   unless u saturates and e would drive it further out
//! ```
//!
//! The derivative acts on the measured speed `ω` rather than on `de/dt`, so a
//! set-point step gives no derivative kick (the set-point is constant within
//! an episode anyway). The integrator `I` is the controller's only memory, in
//! a [`Cell`] (as [`Controller::act`] takes `&self`), cleared by
//! [`EpisodeReset::reset`]; [`baseline::evaluate`](super::evaluate) resets it
//! per episode. The controller reads the error and the speed and ignores the
//! current, as a classical position loop on an encoder does. `f32`
//! throughout, as on the MCU.

use core::cell::Cell;

use nalgebra::SVector;

use super::EpisodeReset;
use crate::error::{Error, check_all_finite};
use crate::math;
use crate::policy::Controller;

/// A PID position loop on the servo's observation `[θ* − θ, ω, i]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ServoPid {
    /// Proportional gain, duty per rad.
    pub kp: f32,
    /// Integral gain, duty per rad·s.
    pub ki: f32,
    /// Derivative gain (on the speed), duty per rad/s.
    pub kd: f32,
    /// The control period, s (the integrator's time step).
    pub dt: f32,
    /// The integral of the error, rad·s.
    integral: Cell<f32>,
}

impl ServoPid {
    /// The gains `[kp, ki, kd]` printed by `examples/tune_baselines.rs`.
    pub const TUNED: [f32; 3] = [27.085108, 13.542555, 0.2277577];

    /// A PID with gains `[kp, ki, kd]` at the period `dt`, integrator empty.
    pub const fn new(gains: [f32; 3], dt: f32) -> Self {
        Self {
            kp: gains[0],
            ki: gains[1],
            kd: gains[2],
            dt,
            integral: Cell::new(0.0),
        }
    }

    /// The committed gains at the default servo's 1 ms period.
    pub const fn tuned() -> Self {
        Self::new(Self::TUNED, 1e-3)
    }

    /// The integrator's value, rad·s.
    pub fn integral(&self) -> f32 {
        self.integral.get()
    }
}

impl EpisodeReset for ServoPid {
    fn reset(&self) {
        self.integral.set(0.0);
    }
}

impl Controller<3> for ServoPid {
    type Action = SVector<f32, 1>;

    fn act(&self, obs: &SVector<f32, 3>) -> Result<SVector<f32, 1>, Error> {
        check_all_finite(obs.as_slice())?;
        let (e, w) = (obs[0], obs[1]);
        let candidate = self.integral.get() + e * self.dt;
        let u = self.kp * e + self.ki * candidate - self.kd * w;
        // Conditional integration: integrate unless saturated and the error
        // pushes further into saturation.
        if (-1.0..=1.0).contains(&u) || (u > 1.0) != (e > 0.0) {
            self.integral.set(candidate);
        }
        let u = self.kp * e + self.ki * self.integral.get() - self.kd * w;
        let u = math::clamp(u, -1.0, 1.0);
        if u.is_finite() {
            Ok(SVector::from([u]))
        } else {
            Err(Error::NonFinite)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::testing::{assert_beats_neighbours, mean};
    use crate::env::Servo;

    #[test]
    fn tuned_pid_beats_zero_command_and_its_neighbours() {
        let zero = |_: &SVector<f32, 3>| Ok(SVector::<f32, 1>::zeros());
        assert_beats_neighbours(
            ServoPid::TUNED,
            |g| ServoPid::new(g, 1e-3),
            &zero,
            Servo::new,
            64,
            1.5,
        );
    }

    #[test]
    fn integrator_winds_only_when_unsaturated_and_resets() {
        let pid = ServoPid::tuned();
        // A huge error saturates the output: the integrator stays empty.
        pid.act(&SVector::from([3.0, 0.0, 0.0])).unwrap();
        assert_eq!(pid.integral(), 0.0);
        // A small error integrates.
        pid.act(&SVector::from([0.001, 0.0, 0.0])).unwrap();
        assert_eq!(pid.integral(), 0.001 * 1e-3);
        pid.reset();
        assert_eq!(pid.integral(), 0.0);
        assert_eq!(
            pid.act(&SVector::from([f32::NAN, 0.0, 0.0])),
            Err(Error::NonFinite)
        );
        // Tracking: the mean error per step is small on held-out episodes.
        let ret = mean(&pid, Servo::new(), 8, crate::baseline::HELD_OUT_SEED);
        assert!(ret > -20.0, "{ret}");
    }
}
