//! Classical baseline controllers for the plant suite, scored exactly as a
//! learned policy is.
//!
//! A learned policy is only as good as the best classical law it beats, and
//! that law must be tuned as honestly as the policy is trained. So each
//! baseline here is a [`Controller`] on the plant's *raw* observation with
//! its gains as public fields, and:
//! - **Gains are fitted, not hand-picked.** `core/examples/tune_baselines.rs`
//!   searches each baseline's gains ([`tune`], a multiplicative pattern
//!   search) to maximise the mean return on a *tuning* stream of start
//!   states ([`TUNING_SEED`]) and reports it on *held-out* start states
//!   ([`HELD_OUT_SEED`]); the committed gains (each type's `TUNED`) are the
//!   ones it prints.
//! - **Scored by the learned policy's evaluation.** [`evaluate`] is
//!   [`algo::evaluate`] itself — the same deterministic episodes, the same
//!   start states from the same generator, the same return statistics —
//!   run on the environment wrapped in [`ResetsController`], whose `reset`
//!   also clears the controller's memory (the PID integrator). A stateless
//!   controller scores bit for bit what [`algo::evaluate`] gives it.
//! - **Memory in a `Cell`.** [`Controller::act`] takes `&self`, as a
//!   deployed policy's does; a controller with memory keeps it in
//!   [`Cell`](core::cell::Cell)s and says how to forget it
//!   ([`EpisodeReset`]).
//!
//! The baselines (each module cites its law):
//! - [`ServoPid`]: PID with conditional-integration anti-windup (Åström &
//!   Hägglund).
//! - [`SwingUpEnergy`]: Åström–Furuta energy swing-up with a linear catch.
//! - [`HoverCascade`]: cascaded position/attitude PD about hover.
//! - [`AcrobotPfl`]: Spong's swing-up by partial feedback linearisation
//!   with a pumping reference, quantised to the three torques.
//! - [`MountainCarPump`]: push along the velocity (energy pumping).

pub mod acrobot;
pub mod cartpole_swingup;
pub mod family;
pub mod mountain_car;
pub mod quadrotor;
pub mod servo;

pub use acrobot::AcrobotPfl;
pub use cartpole_swingup::SwingUpEnergy;
pub use mountain_car::MountainCarPump;
pub use quadrotor::HoverCascade;
pub use servo::ServoPid;

use nalgebra::SVector;
use rand_core::Rng;

use crate::algo;
use crate::env::{ActionOf, Env, Step};
use crate::error::Error;
use crate::policy::Controller;

/// The generator seed of the *tuning* start states: the tuner fits the
/// gains on episodes drawn from `Xoshiro128PlusPlus::seed_from_u64(TUNING_SEED)`.
pub const TUNING_SEED: u64 = 1_000;
/// The generator seed of the *held-out* start states, which no tuning
/// decision saw.
pub const HELD_OUT_SEED: u64 = 2_000;

/// A controller whose memory must be cleared at the start of an episode.
pub trait EpisodeReset {
    /// Forgets everything learned from the previous episode (a stateless
    /// controller does nothing).
    fn reset(&self);
}

/// An environment whose [`reset`](Env::reset) also resets a controller's
/// memory ([`EpisodeReset`]), so [`algo::evaluate`] scores a controller with
/// memory episode by episode.
#[derive(Debug)]
pub struct ResetsController<'a, E, C> {
    /// The plant.
    pub env: &'a mut E,
    /// The controller reset with it.
    pub controller: &'a C,
}

impl<E: Env, C: EpisodeReset> Env for ResetsController<'_, E, C> {
    type Obs = E::Obs;
    type Space = E::Space;
    const SOLVED_RETURN: f32 = E::SOLVED_RETURN;

    fn action_space(&self) -> E::Space {
        self.env.action_space()
    }

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> E::Obs {
        self.controller.reset();
        self.env.reset(rng)
    }

    fn step(&mut self, action: ActionOf<E>) -> Result<Step<E::Obs>, Error> {
        self.env.step(action)
    }
}

/// Mean and standard deviation of the returns of `episodes` episodes of
/// `controller` on `env`, the controller's memory cleared before each:
/// [`algo::evaluate`] on [`ResetsController`].
///
/// # Errors
/// As [`algo::evaluate`].
pub fn evaluate<C, E, R, const OBS: usize>(
    controller: &C,
    env: &mut E,
    episodes: u32,
    rng: &mut R,
) -> Result<(f32, f32), Error>
where
    C: Controller<OBS, Action = ActionOf<E>> + EpisodeReset,
    E: Env<Obs = SVector<f32, OBS>>,
    R: Rng + ?Sized,
{
    let mut wrapped = ResetsController { env, controller };
    algo::evaluate(controller, &mut wrapped, episodes, rng)
}

/// Multiplicative pattern search (Hooke & Jeeves 1961, "'Direct search'
/// solution of numerical and statistical problems", *J. ACM* 8) on
/// positive gains: from `start`, tries each gain times and divided by
/// `factor`, moves to the first that raises `score`, and when none does
/// takes `factor ← √factor`, until `factor < 1 + tol` or `max_evals`
/// evaluations. Returns the best gains and their score. A gain of 0 stays 0.
///
/// Deterministic: the order of the trials is fixed.
pub fn tune<const N: usize>(
    start: [f32; N],
    mut factor: f32,
    tol: f32,
    max_evals: u32,
    mut score: impl FnMut(&[f32; N]) -> f32,
) -> ([f32; N], f32) {
    let mut best = start;
    let mut best_score = score(&best);
    let mut evals = 1u32;
    while factor > 1.0 + tol && evals < max_evals {
        let mut improved = false;
        for i in 0..N {
            for f in [factor, 1.0 / factor] {
                let mut trial = best;
                trial[i] *= f;
                let s = score(&trial);
                evals += 1;
                if s > best_score {
                    (best, best_score, improved) = (trial, s, true);
                    break;
                }
            }
        }
        if !improved {
            factor = crate::math::sqrt(factor);
        }
    }
    (best, best_score)
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro128PlusPlus;

    /// The mean return of `controller` over `episodes` episodes from the
    /// generator seeded with `seed`.
    pub fn mean<C, E, const OBS: usize>(controller: &C, mut env: E, episodes: u32, seed: u64) -> f32
    where
        C: Controller<OBS, Action = ActionOf<E>> + EpisodeReset,
        E: Env<Obs = SVector<f32, OBS>>,
    {
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
        evaluate(controller, &mut env, episodes, &mut rng)
            .unwrap()
            .0
    }

    /// `tuned` beats `zero`, does at least as well as every neighbour
    /// `gains[i]·factor^±1` built by `build` and strictly better than at
    /// least one of the two neighbours of each gain (a limit that never binds
    /// — a saturation bound above every value reached — is flat one way), on
    /// `episodes` tuning episodes.
    pub fn assert_beats_neighbours<C, E, const OBS: usize, const N: usize>(
        gains: [f32; N],
        build: impl Fn([f32; N]) -> C,
        zero: &impl Fn(&SVector<f32, OBS>) -> Result<ActionOf<E>, Error>,
        env: impl Fn() -> E,
        episodes: u32,
        factor: f32,
    ) where
        C: Controller<OBS, Action = ActionOf<E>> + EpisodeReset,
        E: Env<Obs = SVector<f32, OBS>>,
    {
        let tuned = mean(&build(gains), env(), episodes, TUNING_SEED);
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(TUNING_SEED);
        let idle = algo::evaluate(zero, &mut env(), episodes, &mut rng)
            .unwrap()
            .0;
        assert!(tuned > idle, "tuned {tuned} <= zero command {idle}");
        for i in 0..N {
            let mut strictly = false;
            for f in [factor, 1.0 / factor] {
                let mut g = gains;
                g[i] *= f;
                let other = mean(&build(g), env(), episodes, TUNING_SEED);
                assert!(tuned >= other, "gain {i} x{f}: tuned {tuned} < {other}");
                strictly |= tuned > other;
            }
            assert!(strictly, "gain {i} does not matter: {tuned}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{Pendulum, Servo};
    use core::cell::Cell;
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro128PlusPlus;

    /// Counts its calls; reset clears the count.
    struct Counter(Cell<u32>);
    impl Controller<3> for Counter {
        type Action = SVector<f32, 1>;
        fn act(&self, _: &SVector<f32, 3>) -> Result<SVector<f32, 1>, Error> {
            self.0.set(self.0.get() + 1);
            // Full push after 100 calls in an episode: a reset controller never pushes.
            Ok(SVector::from([if self.0.get() > 100 { 1.0 } else { 0.0 }]))
        }
    }
    impl EpisodeReset for Counter {
        fn reset(&self) {
            self.0.set(0);
        }
    }

    #[test]
    fn evaluate_resets_the_controller_each_episode() {
        let c = Counter(Cell::new(0));
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(0);
        let mut env = Pendulum::new();
        let reset = evaluate(&c, &mut env, 3, &mut rng).unwrap();
        // Without the resets the count passes 100 in the first episode's
        // second half and the pushes change the returns.
        let c = Counter(Cell::new(0));
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(0);
        let kept = algo::evaluate(&c, &mut env, 3, &mut rng).unwrap();
        assert_ne!(reset, kept);
        // A stateless controller scores exactly what algo::evaluate gives.
        struct Zero;
        impl EpisodeReset for Zero {
            fn reset(&self) {}
        }
        impl Controller<3> for Zero {
            type Action = SVector<f32, 1>;
            fn act(&self, _: &SVector<f32, 3>) -> Result<SVector<f32, 1>, Error> {
                Ok(SVector::from([0.3]))
            }
        }
        let mut servo = Servo::new();
        let a = evaluate(
            &Zero,
            &mut servo,
            4,
            &mut Xoshiro128PlusPlus::seed_from_u64(5),
        );
        let b = algo::evaluate(
            &Zero,
            &mut servo,
            4,
            &mut Xoshiro128PlusPlus::seed_from_u64(5),
        );
        assert_eq!(a, b);
    }

    #[test]
    fn tune_finds_the_maximum_of_a_smooth_score() {
        // Maximum at (2, 0.5).
        let score = |g: &[f32; 2]| {
            let (a, b) = (libm::logf(g[0] / 2.0), libm::logf(g[1] / 0.5));
            -(a * a + b * b)
        };
        let (g, s) = tune([1.0, 1.0], 2.0, 1e-3, 10_000, score);
        assert!(
            (g[0] - 2.0).abs() < 0.01 && (g[1] - 0.5).abs() < 0.01,
            "{g:?}"
        );
        assert!(s > -1e-4);
    }
}
