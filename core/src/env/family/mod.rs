//! A procedural family of control plants, generated from a seed, for
//! choosing defaults on many plants and reporting them on plants never
//! used to choose anything.
//!
//! Five hand-built plants are too few to choose a default on: whatever is
//! tuned on them fits them. This module draws plants from eight classes
//! that cover what robotics and process engineers control ([`Class`]:
//! first-order lag with dead time, double integrator, lightly damped
//! oscillator, flexible two-mass drive, open-loop unstable, non-minimum
//! phase, heat-only thermal, two coupled axes), each with imperfections
//! drawn on top (Coulomb friction, dead-zone, backlash, rate limit,
//! transport delay, sensor noise and quantisation, set-point changes and
//! load disturbances), and over wide ranges of the things a default must
//! not depend on: the time scale (1 ms to 100 s), the control period
//! relative to it, the episode length (100–1 000 steps), the reward's
//! scale (a per-step cost from 1e-5 to 1e2 times the normalised error)
//! and the observation's units (×1e-2 to ×1e2). The ranges are
//! documentation of [`generate()`].
//!
//! Design:
//! - **One description, [`PlantParams`]**: a linear model in continuous
//!   time (`ẋ = A·x + B·(u + d)`, `y = C·x`, up to 4 states and 2 inputs)
//!   between an imperfect actuator and an imperfect sensor. The class is
//!   what drew the numbers; the step does not branch on it. A user can
//!   describe a plant of their own the same way.
//! - **Three plant types** by action space: [`Plant1`] (`Continuous<1>`),
//!   [`Plant2`] (`Continuous<2>`) and [`PlantDiscrete`] (`Discrete<3>`:
//!   off-low, middle, high — a relay or a three-level valve). A
//!   `PlantParams` states which it is (`inputs`, `discrete`); a type built
//!   from the other's parameters is refused by name.
//! - **The step**, per period: the command is clipped to `[u_low, u_high]`
//!   (or a level chosen), enters the delay line (`delay_steps` periods),
//!   the rate limiter, the dead-zone about the rest command and the
//!   backlash; the load disturbance is added to input 0; the model is
//!   integrated over `dt` by `substeps` RK4 steps with the input held,
//!   each followed by Coulomb friction on one velocity (a stick–slip
//!   projection) and the end stops (each state saturates at
//!   `±envelope`). All `f64` with libm: the same bits on every platform.
//! - **Observation** (`3A + 4` values for `A` inputs):
//!   `[e₁..e_A, x̃₁..x̃₄, r₁..r_A, u₁..u_A]` — the measured tracking errors
//!   `r − C·x̃`, the four measured states `x̃` (noise and quantisation
//!   applied; unused states read 0), the set-points, all times
//!   `obs_unit`, then the last command sent (command units). A learner
//!   sees what a state-feedback controller with encoders on every state
//!   would; the classical baselines read the same vector.
//! - **Reward** `−cost_scale·Σₖ((rₖ − yₖ)/span)² + ρ·(uₖ − u_rest)²)/A`
//!   from the true output after the step, `span = ref_high − ref_low`.
//!   Never terminates (end stops keep a lost plant finite and costly);
//!   truncated after `episode_steps`.
//! - **Sensor noise without an RNG in the step**: the noise of step `t`,
//!   state `i` is a hash of a per-episode seed (drawn at reset), `t` and
//!   `i`, so the plant's whole state is plain words ([`EnvState`]) and a
//!   resumed episode is bit-identical.
//! - **Splits** ([`Split`]): fixed seed ranges for `dev` (tune freely),
//!   `validation` (confirm a choice) and `test` (report a choice already
//!   made; never tune on it).

// Matrix and vector code over the first `states`/`inputs` entries reads as
// the equations do with indices.
#![allow(clippy::needless_range_loop)]

mod dynamics;
mod generator;
mod params;

pub use generator::{Split, generate};
pub use params::{Class, PlantParams};

use nalgebra::SVector;
use rand_core::Rng;

use super::{ActionOf, Continuous, Discrete, Env, EnvState, Step};
use crate::error::{Error, check_all_finite};
use dynamics::Core;

/// Most states a family plant has.
pub const MAX_STATES: usize = 4;
/// Most commands (and tracked outputs) a family plant has.
pub const MAX_INPUTS: usize = 2;
/// The longest transport delay, in periods.
pub const MAX_DELAY: usize = 10;

/// The observation size of a family plant with `inputs` commands: `3·inputs + 4`.
pub const fn obs_len(inputs: usize) -> usize {
    3 * inputs + MAX_STATES
}

/// A family plant with `A` continuous commands and `OBS = 3A + 4`
/// observations; use the aliases [`Plant1`] and [`Plant2`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plant<const A: usize, const OBS: usize> {
    core: Core,
}

/// A family plant with one continuous command.
pub type Plant1 = Plant<1, { obs_len(1) }>;
/// A family plant with two continuous commands.
pub type Plant2 = Plant<2, { obs_len(2) }>;

/// A family plant with one command chosen from three levels: `u_low`,
/// the middle of the range, `u_high`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlantDiscrete {
    core: Core,
}

/// What the three plant types share.
macro_rules! family_accessors {
    () => {
        /// The plant's description.
        #[inline]
        pub fn params(&self) -> PlantParams {
            self.core.params
        }

        /// The physical state (unused states are 0).
        #[inline]
        pub fn state(&self) -> [f64; MAX_STATES] {
            self.core.x
        }

        /// Overwrites the physical state; the episode is otherwise unchanged.
        #[inline]
        pub fn set_state(&mut self, x: [f64; MAX_STATES]) {
            self.core.x = x;
        }

        /// The true outputs `C·x`.
        #[inline]
        pub fn output(&self) -> [f64; MAX_INPUTS] {
            self.core.output(&self.core.x)
        }

        /// The set-points now.
        #[inline]
        pub fn setpoint(&self) -> [f64; MAX_INPUTS] {
            self.core.setpoint()
        }

        /// Steps taken since the last reset.
        #[inline]
        pub fn elapsed_steps(&self) -> u32 {
            self.core.elapsed_steps
        }

        fn step_core(&mut self, u: [f64; MAX_INPUTS]) -> (f32, bool) {
            let reward = self.core.advance(u) as f32;
            (
                reward,
                self.core.elapsed_steps >= self.core.params.episode_steps,
            )
        }
    };
}

impl<const A: usize, const OBS: usize> Plant<A, OBS> {
    const SIZES: () = assert!(
        (A == 1 || A == 2) && OBS == obs_len(A),
        "a family plant has 1 or 2 inputs and 3·inputs + 4 observations: use Plant1 or Plant2"
    );

    /// The plant `params` describes, at rest; [`reset`](Env::reset) before
    /// stepping.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first field outside its range,
    /// `inputs` when it is not `A`, `discrete` when it is set.
    pub fn with_params(params: PlantParams) -> Result<Self, Error> {
        let () = Self::SIZES;
        params.check()?;
        if params.inputs as usize != A {
            return Err(Error::config(
                "inputs",
                "differs from the plant type's (Plant1: 1, Plant2: 2)",
            ));
        }
        if params.discrete {
            return Err(Error::config(
                "discrete",
                "is set: build a PlantDiscrete for these parameters",
            ));
        }
        Ok(Self {
            core: Core::new(params),
        })
    }

    family_accessors!();

    fn observation(&self) -> SVector<f32, OBS> {
        let mut obs = SVector::<f32, OBS>::zeros();
        self.core.observe(obs.as_mut_slice());
        obs
    }
}

impl PlantDiscrete {
    /// The three commands, `[u_low, (u_low + u_high)/2, u_high]`.
    pub fn levels(&self) -> [f64; 3] {
        let p = &self.core.params;
        [p.u_low, 0.5 * (p.u_low + p.u_high), p.u_high]
    }

    /// As [`Plant::with_params`], for parameters with `discrete` set.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first field outside its range,
    /// or `discrete` when it is not set.
    pub fn with_params(params: PlantParams) -> Result<Self, Error> {
        params.check()?;
        if !params.discrete {
            return Err(Error::config(
                "discrete",
                "is not set: build a Plant1 for these parameters",
            ));
        }
        Ok(Self {
            core: Core::new(params),
        })
    }

    family_accessors!();

    fn observation(&self) -> SVector<f32, { obs_len(1) }> {
        let mut obs = SVector::<f32, { obs_len(1) }>::zeros();
        self.core.observe(obs.as_mut_slice());
        obs
    }
}

impl<const A: usize, const OBS: usize> Env for Plant<A, OBS> {
    type Obs = SVector<f32, OBS>;
    type Space = Continuous<A>;

    /// `[u_low, u_high]` on every input.
    fn action_space(&self) -> Continuous<A> {
        let p = &self.core.params;
        Continuous {
            low: [p.u_low as f32; A],
            high: [p.u_high as f32; A],
        }
    }

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, OBS> {
        self.core.reset(rng);
        self.observation()
    }

    /// One period with `clip(u, u_low, u_high)`.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite command; nothing changes.
    fn step(&mut self, action: SVector<f32, A>) -> Result<Step<SVector<f32, OBS>>, Error> {
        check_all_finite(action.as_slice())?;
        let p = &self.core.params;
        let mut u = [0.0; MAX_INPUTS];
        for k in 0..A {
            u[k] = f64::from(action[k]).clamp(p.u_low, p.u_high);
        }
        let (reward, truncated) = self.step_core(u);
        Ok(Step {
            obs: self.observation(),
            reward,
            terminated: false,
            truncated,
        })
    }
}

impl Env for PlantDiscrete {
    type Obs = SVector<f32, { obs_len(1) }>;
    type Space = Discrete<3>;

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Self::Obs {
        self.core.reset(rng);
        self.observation()
    }

    /// One period with the level `action` (0 low, 1 middle, 2 high).
    ///
    /// # Errors
    /// [`Error::InvalidAction`] for `action > 2`; nothing changes.
    fn step(&mut self, action: usize) -> Result<Step<Self::Obs>, Error> {
        let level = *self.levels().get(action).ok_or(Error::InvalidAction)?;
        let (reward, truncated) = self.step_core([level, 0.0]);
        Ok(Step {
            obs: self.observation(),
            reward,
            terminated: false,
            truncated,
        })
    }
}

/// What the three family plant types share, for code generic over them
/// (the classical baselines, the bench): how to build one and how a
/// command in plant units becomes its action.
pub trait FamilyEnv: Env + EnvState + Clone {
    /// The number of commands.
    const INPUTS: usize;

    /// The plant `params` describes.
    ///
    /// # Errors
    /// As the type's `with_params`.
    fn from_params(params: PlantParams) -> Result<Self, Error>;

    /// Its description.
    fn description(&self) -> PlantParams;

    /// The action that sends `u` (plant units; a discrete plant takes the
    /// level nearest to `u[0]`).
    fn command(params: &PlantParams, u: [f64; MAX_INPUTS]) -> ActionOf<Self>;
}

impl<const A: usize, const OBS: usize> FamilyEnv for Plant<A, OBS>
where
    Plant<A, OBS>: EnvState,
{
    const INPUTS: usize = A;

    fn from_params(params: PlantParams) -> Result<Self, Error> {
        Self::with_params(params)
    }

    fn description(&self) -> PlantParams {
        self.core.params
    }

    fn command(_: &PlantParams, u: [f64; MAX_INPUTS]) -> SVector<f32, A> {
        SVector::from_fn(|k, _| u[k] as f32)
    }
}

impl FamilyEnv for PlantDiscrete {
    const INPUTS: usize = 1;

    fn from_params(params: PlantParams) -> Result<Self, Error> {
        Self::with_params(params)
    }

    fn description(&self) -> PlantParams {
        self.core.params
    }

    fn command(p: &PlantParams, u: [f64; MAX_INPUTS]) -> usize {
        let middle = 0.5 * (p.u_low + p.u_high);
        if u[0] < 0.5 * (p.u_low + middle) {
            0
        } else if u[0] <= 0.5 * (middle + p.u_high) {
            1
        } else {
            2
        }
    }
}

/// The state, the episode's draws, the actuator's memory and the delay
/// line, as words (see `dynamics::WORDS`).
macro_rules! family_state {
    ($t:ty, $tag:literal) => {
        impl EnvState for $t {
            const TAG: u32 = u32::from_le_bytes(*$tag);
            const WORDS: usize = dynamics::WORDS;

            fn save_state(&self, out: &mut [f64]) {
                self.core.save(out);
            }

            fn restore_state(&mut self, words: &[f64]) -> Result<(), Error> {
                self.core.restore(words)
            }
        }
    };
}
family_state!(Plant<1, { obs_len(1) }>, b"FAM1");
family_state!(Plant<2, { obs_len(2) }>, b"FAM2");
family_state!(PlantDiscrete, b"FAMD");

/// The exact discrete-time model of a plant's linear part over one period
/// — what its simulator does with friction, end stops, the actuator's
/// imperfections and the delay left out: `x⁺ = A_d·x + B_d·u`. Built by
/// stepping the simulator's own integrator from unit vectors, so it is the
/// one-period map of the simulation, not an approximation of it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DiscreteModel {
    /// `A_d` (entries beyond `states` are 0).
    pub a: [[f64; MAX_STATES]; MAX_STATES],
    /// `B_d`.
    pub b: [[f64; MAX_INPUTS]; MAX_STATES],
}

impl PlantParams {
    /// The linear part's one-period map ([`DiscreteModel`]).
    pub fn discrete_model(&self) -> DiscreteModel {
        let n = self.states as usize;
        let mut model = DiscreteModel {
            a: [[0.0; MAX_STATES]; MAX_STATES],
            b: [[0.0; MAX_INPUTS]; MAX_STATES],
        };
        for j in 0..n {
            let mut e = [0.0; MAX_STATES];
            e[j] = 1.0;
            let col = dynamics::integrate(self, e, [0.0; MAX_INPUTS], false);
            for i in 0..n {
                model.a[i][j] = col[i];
            }
        }
        for k in 0..self.inputs as usize {
            let mut u = [0.0; MAX_INPUTS];
            u[k] = 1.0;
            let col = dynamics::integrate(self, [0.0; MAX_STATES], u, false);
            for i in 0..n {
                model.b[i][k] = col[i];
            }
        }
        model
    }
}

#[cfg(test)]
mod tests;
