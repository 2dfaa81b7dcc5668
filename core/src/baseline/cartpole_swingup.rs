//! Energy-based swing-up with a linear catch for the
//! [`CartPoleSwingUp`](crate::env::CartPoleSwingUp).
//!
//! Swing-up (Åström & Furuta 2000, "Swinging up a pendulum by energy
//! control", *Automatica* 36, eq. (6)): the pole's energy relative to
//! upright, normalised by `m·g·l`,
//! `ẽ = (2l/3g)·θ̇² + cos θ − 1` (0 upright at rest, −2 hanging at rest),
//! changes as `dẽ/dt = −(θ̇·cos θ/g)·ẍ` under a cart acceleration `ẍ`; so
//! the commanded acceleration
//!
//! ```text
//! ẍ* = ke·g·ẽ·sgn(θ̇·cos θ) − kxs·x − kvs·ẋ
//! ```
//!
//! drives `ẽ` to 0, with a weak spring–damper keeping the cart near the
//! track's centre; the force is `(M + m)·ẍ*`.
//!
//! Catch: within `catch_angle` of upright, the linear state feedback
//! `F = kθ·θ + kω·θ̇ + kx·x + kv·ẋ` (the sign pattern of the cart-pole's
//! LQR: all gains positive with θ > 0 leaning towards +x), tuned rather than
//! solved from a Riccati equation.
//!
//! `f32` throughout, as on the MCU; stateless.

use nalgebra::SVector;

use super::EpisodeReset;
use crate::env::CartPoleSwingUpParams;
use crate::error::{Error, check_all_finite};
use crate::math;
use crate::policy::Controller;

/// Energy swing-up and linear catch on the observation `[x, ẋ, cos θ, sin θ, θ̇]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwingUpEnergy {
    /// `[ke, kxs, kvs, kθ, kω, kx, kv, catch_angle]`: the energy gain
    /// (dimensionless), the swing-up centring gains (1/s², 1/s), the catch
    /// gains (N/rad, N·s/rad, N/m, N·s/m) and the catch region's half-width
    /// (rad).
    pub gains: [f32; 8],
    /// `M + m`, kg.
    pub total_mass: f32,
    /// `l`, m.
    pub length: f32,
    /// `g`, m/s².
    pub gravity: f32,
    /// The force of a command of 1, N.
    pub force_mag: f32,
}

impl SwingUpEnergy {
    /// The gains printed by `examples/tune_baselines.rs`.
    pub const TUNED: [f32; 8] = [
        0.80524504,
        6.583019,
        0.8593096,
        48.60988,
        8.354189,
        0.035587158,
        1.2968401,
        2.2142556,
    ];

    /// The controller with `gains` for the plant `p`.
    pub fn new(gains: [f32; 8], p: &CartPoleSwingUpParams) -> Self {
        Self {
            gains,
            total_mass: (p.masscart + p.masspole) as f32,
            length: p.length as f32,
            gravity: p.gravity as f32,
            force_mag: p.force_mag as f32,
        }
    }

    /// The committed gains on the default plant.
    pub fn tuned() -> Self {
        Self::new(Self::TUNED, &CartPoleSwingUpParams::DEFAULT)
    }
}

impl EpisodeReset for SwingUpEnergy {
    fn reset(&self) {}
}

impl Controller<5> for SwingUpEnergy {
    type Action = SVector<f32, 1>;

    fn act(&self, obs: &SVector<f32, 5>) -> Result<SVector<f32, 1>, Error> {
        check_all_finite(obs.as_slice())?;
        let [ke, kxs, kvs, kth, kw, kx, kv, catch] = self.gains;
        let (x, v, cos, sin, w) = (obs[0], obs[1], obs[2], obs[3], obs[4]);
        let th = libm::atan2f(sin, cos);
        let force = if th.abs() < catch {
            kth * th + kw * w + kx * x + kv * v
        } else {
            let g = self.gravity;
            let energy = 2.0 * self.length / (3.0 * g) * w * w + cos - 1.0;
            let pump = if w * cos >= 0.0 { 1.0 } else { -1.0 };
            self.total_mass * (ke * g * energy * pump - kxs * x - kvs * v)
        };
        let u = math::clamp(force / self.force_mag, -1.0, 1.0);
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
    use crate::env::CartPoleSwingUp;

    #[test]
    fn tuned_swing_up_beats_zero_command_and_its_neighbours() {
        let zero = |_: &SVector<f32, 5>| Ok(SVector::<f32, 1>::zeros());
        assert_beats_neighbours(
            SwingUpEnergy::TUNED,
            |g| SwingUpEnergy::new(g, &CartPoleSwingUpParams::DEFAULT),
            &zero,
            CartPoleSwingUp::new,
            64,
            1.5,
        );
    }

    #[test]
    fn tuned_swing_up_balances_on_held_out_starts() {
        // Upright for most of 500 steps: well above half the maximum.
        let ret = mean(
            &SwingUpEnergy::tuned(),
            CartPoleSwingUp::new(),
            16,
            crate::baseline::HELD_OUT_SEED,
        );
        assert!(ret > 300.0, "{ret}");
    }
}
