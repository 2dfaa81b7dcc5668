//! Energy pumping for Gymnasium's
//! [`MountainCarContinuous`](crate::env::MountainCarContinuous).
//!
//! The car's mechanical energy grows at the rate `force·velocity`, so
//! pushing along the velocity pumps it, as a child on a swing does — the
//! classical solution of Moore's (1990) mountain car (Sutton & Barto's
//! "energy" heuristic): `u = A·clip(kv·v, −1, 1)`, a saturated velocity
//! feedback of amplitude `A ≤ 1`. The task charges `0.1·u²` per step, so a
//! smaller amplitude saves effort per step but needs more swings: the tuned
//! gains trade the two.
//!
//! `f32`; stateless.

use nalgebra::SVector;

use super::EpisodeReset;
use crate::error::{Error, check_all_finite};
use crate::math;
use crate::policy::Controller;

/// Push along the velocity, on the observation `[position, velocity]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MountainCarPump {
    /// `[kv, A]`: the velocity gain (per unit of velocity) and the push's
    /// amplitude (used clipped to `[0, 1]`).
    pub gains: [f32; 2],
}

impl MountainCarPump {
    /// The gains printed by `examples/tune_baselines.rs`.
    pub const TUNED: [f32; 2] = [25.0, 0.5];

    /// The controller with `gains`.
    pub const fn new(gains: [f32; 2]) -> Self {
        Self { gains }
    }
}

impl EpisodeReset for MountainCarPump {
    fn reset(&self) {}
}

impl Controller<2> for MountainCarPump {
    type Action = SVector<f32, 1>;

    fn act(&self, obs: &SVector<f32, 2>) -> Result<SVector<f32, 1>, Error> {
        check_all_finite(obs.as_slice())?;
        let [kv, amplitude] = self.gains;
        let u = math::clamp(amplitude, 0.0, 1.0) * math::clamp(kv * obs[1], -1.0, 1.0);
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
    use crate::env::MountainCarContinuous;

    #[test]
    fn tuned_pump_beats_zero_force_and_its_neighbours() {
        let zero = |_: &SVector<f32, 2>| Ok(SVector::<f32, 1>::zeros());
        assert_beats_neighbours(
            MountainCarPump::TUNED,
            MountainCarPump::new,
            &zero,
            MountainCarContinuous::new,
            64,
            1.5,
        );
    }

    #[test]
    fn tuned_pump_reaches_the_goal_on_held_out_starts() {
        let ret = mean(
            &MountainCarPump::new(MountainCarPump::TUNED),
            MountainCarContinuous::new(),
            16,
            crate::baseline::HELD_OUT_SEED,
        );
        assert!(ret > 90.0, "{ret}");
    }

    /// Held-out episodes of [`discounted`].
    const EPISODES: u32 = 16;

    /// The mean discounted return `Σ γᵗ·r_t` of `pump` over [`EPISODES`]
    /// held-out episodes, for each `γ` of `gammas` at once (the same
    /// episodes), and the mean episode length.
    fn discounted<const G: usize>(pump: &MountainCarPump, gammas: [f64; G]) -> ([f64; G], f64) {
        use crate::env::Env;
        use rand_core::SeedableRng;
        let mut rng =
            rand_xoshiro::Xoshiro128PlusPlus::seed_from_u64(crate::baseline::HELD_OUT_SEED);
        let mut env = MountainCarContinuous::new();
        let (mut sums, mut steps) = ([0.0f64; G], 0u32);
        for _ in 0..EPISODES {
            let mut obs = env.reset(&mut rng);
            let mut discount = [1.0f64; G];
            loop {
                let step = env.step(pump.act(&obs).unwrap()).unwrap();
                steps += 1;
                for ((sum, d), gamma) in sums.iter_mut().zip(&mut discount).zip(gammas) {
                    *sum += *d * f64::from(step.reward);
                    *d *= gamma;
                }
                obs = step.obs;
                if step.done() {
                    break;
                }
            }
        }
        let n = f64::from(EPISODES);
        (sums.map(|sum| sum / n), f64::from(steps) / n)
    }

    /// The tuned pump's half amplitude pays only when time is free: it
    /// needs more swings to the flag than the full amplitude, so
    /// undiscounted it wins (less `0.1·u²` in all), and still at γ 0.9999,
    /// but discounted at γ 0.999 or 0.99 — a learner's horizon — the
    /// faster, costlier pump is worth more (docs/plants.md, "Why
    /// MountainCarContinuous stays below").
    #[test]
    fn the_frugal_pump_loses_at_a_learners_discount() {
        let gammas = [1.0, 0.9999, 0.999, 0.99];
        let (tuned, tuned_len) = discounted(&MountainCarPump::new(MountainCarPump::TUNED), gammas);
        let (full, full_len) = discounted(
            &MountainCarPump::new([MountainCarPump::TUNED[0], 1.0]),
            gammas,
        );
        assert!(
            tuned_len > 1.5 * full_len,
            "episode lengths: tuned {tuned_len}, full {full_len}"
        );
        assert!(
            tuned[0] > full[0] + 2.0,
            "undiscounted: tuned {tuned:?}, full {full:?}"
        );
        assert!(
            tuned[1] > full[1],
            "γ 0.9999: tuned {tuned:?}, full {full:?}"
        );
        for i in 2..4 {
            assert!(
                full[i] > tuned[i] + 5.0,
                "γ {}: tuned {tuned:?}, full {full:?}",
                gammas[i]
            );
        }
    }
}
