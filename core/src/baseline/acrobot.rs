//! Swing-up of Gymnasium's [`Acrobot`](crate::env::Acrobot) by partial
//! feedback linearisation, quantised to its three torques.
//!
//! Spong (1995, "The swing up control problem for the Acrobot", *IEEE
//! Control Systems Magazine* 15(1), §"Partial feedback linearization"): the
//! actuated joint's acceleration `θ̈₂` can be assigned exactly through the
//! torque,
//!
//! ```text
//! τ = v·(m₂·lc₂² + I₂ − d₂²/d₁) − (d₂/d₁)·φ₁ + m₂·l₁·lc₂·θ̇₁²·sin θ₂ + φ₂
//! ```
//!
//! (the inverse of Gymnasium's "book" `ddθ₂`, with its `d₁`, `d₂`, `φ₁`,
//! `φ₂`), and the outer law `v = kq·(θ₂* − θ₂) − kd·θ̇₂` with Spong's pumping
//! reference `θ₂* = α·atan(θ̇₁)` swings the second link so as to pump energy
//! into the system. In Gymnasium's angle convention (θ₁ = 0 hanging, the
//! "book" dynamics) the pumping reference is `θ₂* = −α·atan(θ̇₁)`: with the
//! `+` sign no gain reaches the line within 500 steps (measured: −500 on every
//! tuning episode), with the `−` sign the untuned gains already do.
//! Gymnasium's plant only has `−1, 0, +1` N·m, so the torque is quantised:
//! action `2` (+1 N·m) when `τ > 0`, `0` (−1 N·m) when `τ < 0`, else `1`.
//! (A dead band `|τ| ≤ δ` mapped to `1` was tried as a fourth gain: the tuned δ = 0.01 and its neighbours
//! 0.0067 and 0.015 gave the same tuning mean return, so it was dropped.)
//!
//! `f32` throughout; stateless; holds the plant's nominal parameters.

use nalgebra::SVector;

use super::EpisodeReset;
use crate::env::AcrobotParams;
use crate::error::{Error, check_all_finite};
use crate::math;
use crate::policy::Controller;

/// Spong's partial-feedback-linearisation swing-up on the observation
/// `[cos θ₁, sin θ₁, cos θ₂, sin θ₂, θ̇₁, θ̇₂]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AcrobotPfl {
    /// `[kq, kd, α]`: the outer loop's stiffness (1/s²) and damping (1/s)
    /// and the pumping reference's amplitude (rad).
    pub gains: [f32; 3],
    /// `[l₁, m₁, m₂, lc₁, lc₂, I, g]` of the plant, as `f32`.
    pub plant: [f32; 7],
}

impl AcrobotPfl {
    /// The gains printed by `examples/tune_baselines.rs`.
    pub const TUNED: [f32; 3] = [282.8427, 10.0, 4.0];

    /// The controller with `gains` for the plant `p`.
    pub fn new(gains: [f32; 3], p: &AcrobotParams) -> Self {
        Self {
            gains,
            plant: [
                p.link_length_1,
                p.link_mass_1,
                p.link_mass_2,
                p.link_com_pos_1,
                p.link_com_pos_2,
                p.link_moi,
                p.gravity,
            ]
            .map(|v| v as f32),
        }
    }

    /// The committed gains on Gymnasium's plant.
    pub fn tuned() -> Self {
        Self::new(Self::TUNED, &AcrobotParams::DEFAULT)
    }

    /// The torque `τ` (N·m) that gives `θ̈₂ = v` (unbounded, before
    /// quantisation).
    pub fn torque(&self, obs: &SVector<f32, 6>) -> f32 {
        let [kq, kd, alpha] = self.gains;
        let [l1, m1, m2, lc1, lc2, moi, g] = self.plant;
        let (t1, t2) = (libm::atan2f(obs[1], obs[0]), libm::atan2f(obs[3], obs[2]));
        let (w1, w2) = (obs[4], obs[5]);
        let (cos2, sin2) = (obs[2], obs[3]);
        let d1 = m1 * lc1 * lc1 + m2 * (l1 * l1 + lc2 * lc2 + 2.0 * l1 * lc2 * cos2) + 2.0 * moi;
        let d2 = m2 * (lc2 * lc2 + l1 * lc2 * cos2) + moi;
        // cos(θ − π/2) = sin θ.
        let phi2 = m2 * lc2 * g * math::sin(t1 + t2);
        let phi1 = -m2 * l1 * lc2 * w2 * w2 * sin2 - 2.0 * m2 * l1 * lc2 * w2 * w1 * sin2
            + (m1 * lc1 + m2 * l1) * g * obs[1]
            + phi2;
        let reference = -alpha * libm::atanf(w1);
        let v = kq * (reference - t2) - kd * w2;
        v * (m2 * lc2 * lc2 + moi - d2 * d2 / d1) - d2 / d1 * phi1
            + m2 * l1 * lc2 * w1 * w1 * sin2
            + phi2
    }
}

impl EpisodeReset for AcrobotPfl {
    fn reset(&self) {}
}

impl Controller<6> for AcrobotPfl {
    type Action = usize;

    fn act(&self, obs: &SVector<f32, 6>) -> Result<usize, Error> {
        check_all_finite(obs.as_slice())?;
        let tau = self.torque(obs);
        if !tau.is_finite() {
            Err(Error::NonFinite)
        } else if tau > 0.0 {
            Ok(2)
        } else if tau < 0.0 {
            Ok(0)
        } else {
            Ok(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::testing::{assert_beats_neighbours, mean};
    use crate::env::Acrobot;

    #[test]
    fn tuned_swing_up_beats_zero_torque_and_its_neighbours() {
        let zero = |_: &SVector<f32, 6>| Ok(1usize);
        assert_beats_neighbours(
            AcrobotPfl::TUNED,
            |g| AcrobotPfl::new(g, &AcrobotParams::DEFAULT),
            &zero,
            Acrobot::new,
            64,
            1.5,
        );
    }

    #[test]
    fn tuned_swing_up_reaches_the_line_on_held_out_starts() {
        let ret = mean(
            &AcrobotPfl::tuned(),
            Acrobot::new(),
            16,
            crate::baseline::HELD_OUT_SEED,
        );
        assert!(ret > -200.0, "{ret}");
    }
}
