//! Cascaded PD hover control for the [`Quadrotor2d`](crate::env::Quadrotor2d).
//!
//! The classical quadrotor cascade (Mellinger & Kumar 2011, "Minimum snap
//! trajectory generation and control for quadrotors", ICRA, §III, reduced
//! to the plane; Mahony, Kumar & Corke 2012, "Multirotor aerial vehicles",
//! *IEEE RAM* 19(3)): an outer position loop commands accelerations, which
//! give the thrust and the attitude set-point, and an inner attitude loop
//! commands the torque:
//!
//! ```text
//! a_x* = −kpx·x − kdx·ẋ,   a_z* = −kpz·z − kdz·ż
//! θ*   = clip(−a_x*/g, −tilt, tilt)          (ẍ ≈ −g·θ near hover)
//! T    = m·(g + a_z*)/cos θ                  (total thrust)
//! τ    = I·(kpθ·(θ* − θ) − kdθ·θ̇)
//! T₁,₂ = T/2 ± τ/(2d),   uᵢ = 2·Tᵢ/T_max − 1
//! ```
//!
//! The rotors saturate (the plant clips `uᵢ` to `[−1, 1]`). Model-based: it
//! holds the vehicle's nominal `m`, `I`, `d`, `g`, `T_max`. `f32`
//! throughout; stateless.

use nalgebra::SVector;

use super::EpisodeReset;
use crate::env::Quadrotor2dParams;
use crate::error::{Error, check_all_finite};
use crate::math;
use crate::policy::Controller;

/// Cascaded position/attitude PD on the observation `[x, z, θ, ẋ, ż, θ̇]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HoverCascade {
    /// `[kpx, kdx, kpz, kdz, kpθ, kdθ, tilt]`: position gains (1/s², 1/s per
    /// axis), attitude gains (1/s², 1/s) and the largest commanded tilt (rad).
    pub gains: [f32; 7],
    /// The vehicle's nominal parameters, as `f32`: `[m, d, I, g, T_max]`.
    pub vehicle: [f32; 5],
}

impl HoverCascade {
    /// The gains printed by `examples/tune_baselines.rs` (the tilt limit is
    /// 0.5·2^1.5 = √2 by the search's doubling steps, hence the literal).
    #[allow(clippy::approx_constant)]
    pub const TUNED: [f32; 7] = [
        20.304806, 7.291483, 44.2851, 10.218968, 2506.2559, 66.86317, 1.4142135,
    ];

    /// The controller with `gains` for the vehicle `p`.
    pub fn new(gains: [f32; 7], p: &Quadrotor2dParams) -> Self {
        Self {
            gains,
            vehicle: [p.mass, p.arm_length, p.inertia, p.gravity, p.max_thrust].map(|v| v as f32),
        }
    }

    /// The committed gains on the default vehicle.
    pub fn tuned() -> Self {
        Self::new(Self::TUNED, &Quadrotor2dParams::DEFAULT)
    }
}

impl EpisodeReset for HoverCascade {
    fn reset(&self) {}
}

impl Controller<6> for HoverCascade {
    type Action = SVector<f32, 2>;

    fn act(&self, obs: &SVector<f32, 6>) -> Result<SVector<f32, 2>, Error> {
        check_all_finite(obs.as_slice())?;
        let [kpx, kdx, kpz, kdz, kpt, kdt, tilt] = self.gains;
        let [m, d, inertia, g, t_max] = self.vehicle;
        let (x, z, th, vx, vz, w) = (obs[0], obs[1], obs[2], obs[3], obs[4], obs[5]);
        let ax = -kpx * x - kdx * vx;
        let az = -kpz * z - kdz * vz;
        let th_ref = math::clamp(-ax / g, -tilt, tilt);
        let total = m * (g + az) / math::cos(th).max(0.2);
        let torque = inertia * (kpt * (th_ref - th) - kdt * w);
        let t1 = 0.5 * total + torque / (2.0 * d);
        let t2 = 0.5 * total - torque / (2.0 * d);
        let u = SVector::from([
            math::clamp(2.0 * t1 / t_max - 1.0, -1.0, 1.0),
            math::clamp(2.0 * t2 / t_max - 1.0, -1.0, 1.0),
        ]);
        check_all_finite(u.as_slice())?;
        Ok(u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::baseline::testing::{assert_beats_neighbours, mean};
    use crate::env::Quadrotor2d;

    #[test]
    fn tuned_cascade_beats_zero_command_and_its_neighbours() {
        // "Zero command" is the plant's zero action: both rotors at half thrust.
        let zero = |_: &SVector<f32, 6>| Ok(SVector::<f32, 2>::zeros());
        assert_beats_neighbours(
            HoverCascade::TUNED,
            |g| HoverCascade::new(g, &Quadrotor2dParams::DEFAULT),
            &zero,
            Quadrotor2d::new,
            64,
            1.5,
        );
    }

    #[test]
    fn tuned_cascade_recovers_on_held_out_starts() {
        let ret = mean(
            &HoverCascade::tuned(),
            Quadrotor2d::new(),
            16,
            crate::baseline::HELD_OUT_SEED,
        );
        assert!(ret > 400.0, "{ret}");
        // Hover at the origin is held.
        let c = HoverCascade::tuned();
        let u = c.act(&SVector::zeros()).unwrap();
        let hover = Quadrotor2dParams::DEFAULT.hover_command() as f32;
        assert!((u[0] - hover).abs() < 1e-5 && (u[1] - hover).abs() < 1e-5);
    }
}
