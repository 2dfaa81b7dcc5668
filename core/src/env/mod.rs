//! Environments with Gymnasium semantics, in `no_std` code.
//!
//! The same simulators run in the desktop harness, in the tests and on the
//! microcontroller, so a policy validated on the desktop meets the same
//! physics — bit for bit — on the device.
//!
//! Design:
//! - **Sizes are stated once, by the environment.** [`Env::Obs`] is the
//!   observation vector (`SVector<f32, N>`) and [`Env::Space`] the action
//!   space ([`Discrete<N>`] or [`Continuous<A>`]); agents derive their network
//!   sizes from these (see [`agent`](crate::agent)), so a custom plant writes
//!   its dimensions in exactly one place.
//! - **The action space carries the actuator bounds.** [`Continuous`] holds
//!   `low`/`high`; the actor copies them at initialisation and clips every
//!   command it sends — in training, in evaluation and once deployed — so an
//!   environment receives in-range actions and firmware never re-clips by hand.
//! - **Gymnasium's contract.** [`Env::reset`] returns the first observation;
//!   [`Env::step`] returns a [`Step`] with the next observation, the reward and
//!   two separate flags: `terminated` (the MDP reached a terminal state: no
//!   bootstrapping) and `truncated` (a time limit cut the episode: the value of
//!   the final observation still counts). Time limits are truncation, never
//!   termination.
//! - **The caller drives the loop.** An environment never resets itself; after
//!   `terminated || truncated` the caller calls `reset`.
//! - **Settable state.** Each environment exposes its physical state so tests
//!   can replay reference trajectories and firmware can log or restore it.
//!   [`EnvState`] saves and restores *everything* a step depends on (physics,
//!   step counter, flags) as `f64` words, which is what a training
//!   [`checkpoint`](crate::checkpoint) stores to continue the episode in
//!   progress bit for bit.
//! - **Actions are the policy's type.** Discrete environments take `usize`,
//!   continuous ones `SVector<f32, A>` ([`ActionOf<E>`]).
//! - **`f64` physics, `f32` interface.** The physical state and the
//!   integration are `f64`, evaluated operation for operation as Gymnasium
//!   evaluates them (with the pure-Rust [`libm`] for `sin`/`cos`/`fmod`, the
//!   same bits on x86-64 and a Cortex-M4F); observations and rewards are cast
//!   to `f32` at the end, as Gymnasium casts its observations. The dynamics
//!   are chaotic (an upright cart-pole replayed open-loop amplifies a
//!   difference by ~8 % per step), so an `f32` state, one rounding away from
//!   Gymnasium's per step, drifts past 1e-5 within ~80 steps; the `f64` state
//!   matches Gymnasium's to the last bit but for a rare last-bit difference
//!   between libm's `sin`/`cos` and the C library's. On the M4F, whose FPU is
//!   single-precision, the `f64` arithmetic is software-emulated: two or
//!   three libm `sin`/`cos` and ~30 `+ − × ÷` per step, an estimated 5–10 k
//!   cycles (not measured on hardware) — the order of one forward pass of a
//!   small policy, negligible next to the networks' training work. See each
//!   environment's module for the exact correspondence and the measured
//!   agreement.

pub mod acrobot;
pub mod cartpole;
pub mod cartpole_swingup;
pub mod channels;
pub mod family;
pub mod mountain_car;
pub mod pendulum;
pub mod quadrotor2d;
pub mod servo;

pub use acrobot::{Acrobot, AcrobotParams};
pub use cartpole::{CartPole, CartPoleContinuous, CartPoleParams};
pub use cartpole_swingup::{CartPoleSwingUp, CartPoleSwingUpParams};
pub use channels::{RewardChannels, Weighted};
pub use mountain_car::{MountainCarContinuous, MountainCarParams};
pub use pendulum::{Pendulum, PendulumParams};
pub use quadrotor2d::{Quadrotor2d, Quadrotor2dParams};
pub use servo::{Servo, ServoParams};

use nalgebra::SVector;
use rand_core::Rng;

use crate::error::Error;
use crate::params::{Params, TensorShape, tag};
use crate::{math, rng};

/// The methods every plant with parameters has, inside its `impl`:
/// `with_params` (validated parameters, otherwise `new`'s
/// state) and the accessors of the parameters, the physical state and the
/// step counter. The plant keeps them in fields `params`, `state` and
/// `elapsed_steps`.
macro_rules! plant_accessors {
    ($params:ty, $state:ty, $state_doc:literal) => {
        /// [`new`](Self::new) with other parameters.
        ///
        /// # Errors
        /// [`Error::InvalidConfig`](crate::Error::InvalidConfig) if `params`
        #[doc = concat!("does not [`validate`](", stringify!($params), "::validate).")]
        pub fn with_params(params: $params) -> Result<Self, $crate::Error> {
            params.validate()?;
            Ok(Self {
                params,
                ..Self::new()
            })
        }

        /// The plant's physical parameters.
        #[inline]
        pub fn params(&self) -> $params {
            self.params
        }

        #[doc = $state_doc]
        #[inline]
        pub fn state(&self) -> $state {
            self.state
        }

        /// Steps taken since the last reset.
        #[inline]
        pub fn elapsed_steps(&self) -> u32 {
            self.elapsed_steps
        }
    };
}
pub(crate) use plant_accessors;

/// What a plant and its parameters share besides their physics: both are
/// `Default` (the plant at `new`, the parameters at their
/// `DEFAULT`), and the parameters' `check` (a
/// [`PlantRangeError`]) is also offered as the crate's error.
macro_rules! plant_defaults {
    ($plant:ty, $params:ty) => {
        impl $params {
            /// [`check`](Self::check) as the crate's error.
            ///
            /// # Errors
            /// [`Error::InvalidConfig`](crate::Error::InvalidConfig) naming
            /// the first field outside its range.
            pub fn validate(&self) -> Result<(), $crate::Error> {
                Ok(self.check()?)
            }
        }

        impl Default for $params {
            fn default() -> Self {
                Self::DEFAULT
            }
        }

        impl Default for $plant {
            fn default() -> Self {
                Self::new()
            }
        }
    };
}
pub(crate) use plant_defaults;

/// [`EnvState`] of a plant whose whole state is its `state: [f64; S]` and
/// its step counter: `S + 1` words, the counter last
/// ([`save_timed`]/[`restore_timed`]). `S` is stated once, in the call,
/// and checked against the field's type at compile time.
macro_rules! timed_state {
    ($plant:ty, $tag:literal, $s:literal, $doc:literal) => {
        #[doc = $doc]
        impl $crate::env::EnvState for $plant {
            const TAG: u32 = u32::from_le_bytes(*$tag);
            const WORDS: usize = $s + 1;

            fn save_state(&self, out: &mut [f64]) {
                let state: &[f64; $s] = &self.state;
                $crate::env::save_timed(out, state, self.elapsed_steps);
            }

            fn restore_state(&mut self, words: &[f64]) -> Result<(), $crate::Error> {
                let state: [f64; $s];
                (state, self.elapsed_steps) = $crate::env::restore_timed(words)?;
                self.state = state;
                Ok(())
            }
        }
    };
}
pub(crate) use timed_state;

/// Uniform `f64` in `[low, high)` from one `u32` of `rng`, computed in `f64`
/// (`low + (high − low)·u` with `u` = [`rng::uniform`], a multiple of 2⁻²⁴),
/// so the same bits on every platform.
#[inline]
pub(crate) fn uniform_f64<R: Rng + ?Sized>(rng: &mut R, low: f64, high: f64) -> f64 {
    low + (high - low) * f64::from(rng::uniform(rng))
}

/// The result of one environment step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step<O> {
    /// Observation after the step.
    pub obs: O,
    /// Reward for the transition.
    pub reward: f32,
    /// The episode ended in a terminal state (no bootstrap from `obs`).
    pub terminated: bool,
    /// The episode was cut by a time limit (bootstrap from `obs`).
    pub truncated: bool,
}

impl<O> Step<O> {
    /// `terminated || truncated`: the caller must [`Env::reset`] next.
    #[inline]
    pub fn done(&self) -> bool {
        self.terminated || self.truncated
    }
}

mod sealed {
    pub trait Sealed {}
    impl<const N: usize> Sealed for nalgebra::SVector<f32, N> {}
}

/// An observation vector: `SVector<f32, N>` (the only implementor), whose
/// length `N` is the environment's observation size.
pub trait Observation: sealed::Sealed + Copy + core::fmt::Debug + PartialEq {
    /// The number of `f32` values, `N`.
    const DIM: usize;
}

impl<const N: usize> Observation for SVector<f32, N> {
    const DIM: usize = N;
}

/// An action space: what an environment accepts and a policy produces.
///
/// It is [`Params`]: a deployed [`Policy`](crate::policy::Policy) stores its
/// space (a [`Continuous`] space's bounds) next to the weights, so the
/// exported file carries the actuator range it was trained with.
pub trait ActionSpace: Params + Copy + core::fmt::Debug + PartialEq {
    /// The action value: `usize` ([`Discrete`]) or `SVector<f32, A>` ([`Continuous`]).
    type Action: Copy + core::fmt::Debug + PartialEq;
    /// The space an environment has unless it says otherwise: [`Discrete`]
    /// has no parameters; [`Continuous`] defaults to `[−1, 1]` per dimension.
    const DEFAULT: Self;
    /// Number of discrete actions, or of action dimensions.
    const DIM: usize;

    /// The command the actuator receives for `action`: `action` itself
    /// ([`Discrete`]) or `clip(action, low, high)` ([`Continuous`]).
    fn command(&self, action: &Self::Action) -> Self::Action;
}

/// `N` discrete actions `0..N` (the actor outputs `N` logits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Discrete<const N: usize>;

impl<const N: usize> ActionSpace for Discrete<N> {
    type Action = usize;
    const DEFAULT: Self = Discrete;
    const DIM: usize = N;

    #[inline]
    fn command(&self, action: &usize) -> usize {
        *action
    }
}

/// No tensors: a discrete space has no parameters to save.
impl<const N: usize> Params for Discrete<N> {
    const TENSORS: usize = 0;
    const LEN: usize = 0;
    const ZERO: Self = Discrete;

    fn tensor(&self, _: usize) -> &[f32] {
        &[]
    }

    fn tensor_mut(&mut self, _: usize) -> &mut [f32] {
        &mut []
    }

    fn shape(_: usize) -> TensorShape {
        TensorShape {
            rows: 0,
            cols: 0,
            tag: tag::PLAIN,
        }
    }
}

/// `A` continuous actuators with the bounds `low ≤ a ≤ high` (per dimension).
///
/// Policies sample freely (the log-probability refers to the raw sample, as
/// in SB3) and send `clip(a, low, high)` to the plant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Continuous<const A: usize> {
    /// Lower bound of each actuator command.
    pub low: [f32; A],
    /// Upper bound of each actuator command.
    pub high: [f32; A],
}

impl<const A: usize> Continuous<A> {
    /// `−limit ≤ a ≤ limit` on every dimension (e.g. ±2 N·m of torque).
    pub const fn symmetric(limit: f32) -> Self {
        Self {
            low: [-limit; A],
            high: [limit; A],
        }
    }
}

impl<const A: usize> ActionSpace for Continuous<A> {
    type Action = SVector<f32, A>;
    const DEFAULT: Self = Self::symmetric(1.0);
    const DIM: usize = A;

    /// `clip(action, low, high)` per dimension (NaN stays NaN: callers check
    /// actions for finiteness first).
    #[inline]
    fn command(&self, action: &SVector<f32, A>) -> SVector<f32, A> {
        let mut out = *action;
        for i in 0..A {
            out[i] = math::clamp(out[i], self.low[i], self.high[i]);
        }
        out
    }
}

/// Two tensors, `low` and `high`, tagged [`tag::BOUNDS`].
impl<const A: usize> Params for Continuous<A> {
    const TENSORS: usize = 2;
    const LEN: usize = 2 * A;
    const ZERO: Self = Self {
        low: [0.0; A],
        high: [0.0; A],
    };

    fn tensor(&self, i: usize) -> &[f32] {
        match i {
            0 => &self.low,
            1 => &self.high,
            _ => &[],
        }
    }

    fn tensor_mut(&mut self, i: usize) -> &mut [f32] {
        match i {
            0 => &mut self.low,
            1 => &mut self.high,
            _ => &mut [],
        }
    }

    fn shape(i: usize) -> TensorShape {
        if i < 2 {
            TensorShape {
                rows: A as u32,
                cols: 1,
                tag: tag::BOUNDS,
            }
        } else {
            TensorShape {
                rows: 0,
                cols: 0,
                tag: tag::PLAIN,
            }
        }
    }

    /// `low ≤ high` on every dimension (equal bounds, a fixed command, are
    /// allowed); the error names the `high` tensor.
    fn check_values<'a>(
        first: usize,
        tensor: &dyn Fn(usize) -> crate::params::TensorData<'a>,
    ) -> Result<(), Error> {
        let (low, high) = (tensor(first), tensor(first + 1));
        if low.len() == high.len() && low.iter().zip(high.iter()).all(|(l, h)| l <= h) {
            Ok(())
        } else {
            crate::params::out_of_domain(first + 1, "actuator bounds need low <= high")
        }
    }
}

/// The action type of environment `E`.
pub type ActionOf<E> = <<E as Env>::Space as ActionSpace>::Action;

/// The observation size of environment `E` (`E::Obs::DIM`).
pub const fn obs_dim<E: Env>() -> usize {
    <E::Obs as Observation>::DIM
}

/// A reinforcement-learning environment (Gymnasium's `reset`/`step`).
///
/// A custom plant states its sizes here and nowhere else. Scale continuous
/// actions to about ±1 and convert to physical units in `step`: the Gaussian
/// actor starts with σ = 1 in action units (as SB3's).
///
/// ```
/// use microrl::env::{Continuous, Env, Step};
/// use microrl::{Error, SVector};
/// use rand_core::Rng;
///
/// /// A DC motor's speed error and current; the action is the PWM duty cycle.
/// struct Motor { speed: f32, current: f32 }
///
/// impl Env for Motor {
///     type Obs = SVector<f32, 2>;       // two readings
///     type Space = Continuous<1>;       // one actuator…
///     const SOLVED_RETURN: f32 = -20.0;
///     fn action_space(&self) -> Continuous<1> {
///         Continuous::symmetric(1.0)    // …a duty cycle of ±100 %
///     }
///     fn reset<R: Rng + ?Sized>(&mut self, _rng: &mut R) -> SVector<f32, 2> {
///         *self = Motor { speed: 1.0, current: 0.0 };
///         SVector::<f32, 2>::new(self.speed, self.current)
///     }
///     fn step(&mut self, duty: SVector<f32, 1>) -> Result<Step<Self::Obs>, Error> {
///         self.current += 0.1 * (12.0 * duty[0] - self.current); // 12 V supply
///         self.speed += 0.05 * (self.current - self.speed);
///         let obs = SVector::<f32, 2>::new(self.speed, self.current);
///         let reward = -self.speed * self.speed;
///         Ok(Step { obs, reward, terminated: false, truncated: false })
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an environment: implement `microrl::env::Env` for it",
    note = "an environment states its observation type (`type Obs = SVector<f32, N>`) and its action space (`type Space = Discrete<N>` or `Continuous<A>`)"
)]
pub trait Env {
    /// The observation: `SVector<f32, N>` with `N` the observation size.
    type Obs: Observation;
    /// The action space: [`Discrete<N>`] or [`Continuous<A>`].
    type Space: ActionSpace;

    /// The plant's conventional threshold: the mean episode return at which
    /// the task counts as solved (475 for CartPole, −200 for Pendulum).
    /// Optional: a run takes its threshold at run time
    /// ([`RunConfig::new`](crate::train::RunConfig::new)), e.g. a baseline
    /// controller's measured return; the default, `f32::MAX`, is never
    /// reached (a run given it trains its whole budget).
    const SOLVED_RETURN: f32 = f32::MAX;

    /// The action space with its bounds (for [`Continuous`]: the actuator
    /// range). Default: [`ActionSpace::DEFAULT`].
    fn action_space(&self) -> Self::Space {
        <Self::Space as ActionSpace>::DEFAULT
    }

    /// Starts a new episode and returns its first observation.
    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Self::Obs;

    /// Advances one time step.
    ///
    /// # Errors
    /// [`Error::InvalidAction`] for a discrete action out of range,
    /// [`Error::NonFinite`] for a non-finite continuous action (for
    /// example). The environment's state should be unchanged on error.
    fn step(&mut self, action: ActionOf<Self>) -> Result<Step<Self::Obs>, Error>;
}

/// The complete state of an environment — everything its next `step`
/// depends on — as `WORDS` `f64` words, for training
/// [`checkpoint`](crate::checkpoint)s: a restored environment continues the
/// episode in progress bit for bit. Counters and flags are stored as exact
/// integral `f64`s.
pub trait EnvState {
    /// Identifies the environment type in a checkpoint (e.g. four ASCII
    /// bytes as a little-endian `u32`), so that a checkpoint of one
    /// environment is refused by another with the same number of words.
    const TAG: u32;
    /// Number of `f64` words (at most
    /// [`MAX_ENV_WORDS`](crate::checkpoint::MAX_ENV_WORDS)).
    const WORDS: usize;
    /// Writes the state into `out` (`out.len() == WORDS`).
    fn save_state(&self, out: &mut [f64]);
    /// Restores the state from `words` (`words.len() == WORDS`).
    ///
    /// # Errors
    /// [`Error::Truncated`] for a wrong length, [`Error::NonFinite`] or
    /// [`Error::InvalidState`] for a state the environment cannot be in;
    /// nothing changes then.
    fn restore_state(&mut self, words: &[f64]) -> Result<(), Error>;
}

/// A plant parameter outside its physical range ([`CartPoleParams::check`],
/// [`PendulumParams::check`]): the field, its value and the range, for a
/// message such as `` `tau` = 1e-30 is outside its physical range [0.0001, 0.1] s ``.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PlantRangeError {
    /// The parameter, e.g. `"tau"`.
    pub field: &'static str,
    /// Its value (NaN and ±∞ included).
    pub value: f64,
    /// The smallest value accepted.
    pub min: f64,
    /// The largest value accepted.
    pub max: f64,
    /// The unit of the value and the bounds, e.g. `"s"`.
    pub unit: &'static str,
}

impl core::fmt::Display for PlantRangeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        /// Plain decimals for ordinary magnitudes, `1e-30` for the others.
        fn number(f: &mut core::fmt::Formatter<'_>, x: f64) -> core::fmt::Result {
            if x == 0.0 || (1e-4..1e6).contains(&x.abs()) {
                write!(f, "{x}")
            } else {
                write!(f, "{x:e}")
            }
        }
        write!(f, "`{}` = ", self.field)?;
        number(f, self.value)?;
        f.write_str(" is outside its physical range [")?;
        number(f, self.min)?;
        f.write_str(", ")?;
        number(f, self.max)?;
        write!(f, "] {}", self.unit)
    }
}

impl core::error::Error for PlantRangeError {}

impl From<PlantRangeError> for Error {
    fn from(e: PlantRangeError) -> Self {
        Error::config(
            e.field,
            "is outside its physical range (see the parameter's documentation)",
        )
    }
}

/// A plant parameter and its physical range: `(field, value, min, max, unit)`.
pub(crate) type Range = (&'static str, f64, f64, f64, &'static str);

/// Checks each of a plant's parameters lies in its range (NaN never does).
///
/// # Errors
/// [`PlantRangeError`] naming the first parameter outside its range.
pub(crate) fn check_ranges(fields: &[Range]) -> Result<(), PlantRangeError> {
    for &(field, value, min, max, unit) in fields {
        if !(min <= value && value <= max) {
            return Err(PlantRangeError {
                field,
                value,
                min,
                max,
                unit,
            });
        }
    }
    Ok(())
}

/// Writes `words` into `out` (an [`EnvState::save_state`]'s body).
pub(crate) fn write_words<const N: usize>(out: &mut [f64], words: [f64; N]) {
    for (o, w) in out.iter_mut().zip(words) {
        *o = w;
    }
}

/// Saves a plant whose state is `S` physical words and its episode's step
/// count: the words, then the counter (an [`EnvState::save_state`]'s body).
pub(crate) fn save_timed<const S: usize>(out: &mut [f64], state: &[f64; S], elapsed_steps: u32) {
    let words = state.iter().copied().chain([f64::from(elapsed_steps)]);
    for (o, w) in out.iter_mut().zip(words) {
        *o = w;
    }
}

/// Reads what [`save_timed`] wrote: `S` finite words and the step counter
/// (an [`EnvState::restore_state`]'s checks; the plant's parameters are
/// configuration, not state, and stay).
///
/// # Errors
/// [`Error::Truncated`] unless there are exactly `S + 1` words;
/// [`Error::NonFinite`] for a non-finite state word; [`Error::InvalidState`]
/// for a counter that is not an integer in `0..=u32::MAX`.
pub(crate) fn restore_timed<const S: usize>(words: &[f64]) -> Result<([f64; S], u32), Error> {
    if words.len() != S + 1 {
        return Err(Error::Truncated);
    }
    let state = finite_words::<S>(&words[..S])?;
    let elapsed_steps = counter_from_f64(words[S])?;
    Ok((state, elapsed_steps))
}

/// A step counter saved as an `f64`: an integer in `0..=u32::MAX`.
pub(crate) fn counter_from_f64(x: f64) -> Result<u32, Error> {
    if x >= 0.0 && x <= f64::from(u32::MAX) && x == libm::trunc(x) {
        Ok(x as u32)
    } else {
        Err(Error::InvalidState {
            what: "step counter is not an integer in 0..=u32::MAX",
        })
    }
}

/// A flag saved as an `f64`: exactly 0 or 1.
pub(crate) fn flag_from_f64(x: f64) -> Result<bool, Error> {
    if x == 0.0 || x == 1.0 {
        Ok(x == 1.0)
    } else {
        Err(Error::InvalidState {
            what: "flag is neither 0 nor 1",
        })
    }
}

/// The physical part of a saved state: every word finite.
pub(crate) fn finite_words<const N: usize>(words: &[f64]) -> Result<[f64; N], Error> {
    let words: [f64; N] = words.try_into().map_err(|_| Error::Truncated)?;
    if words.iter().all(|w| w.is_finite()) {
        Ok(words)
    } else {
        Err(Error::NonFinite)
    }
}

/// Checks shared by the environments' unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::{ActionOf, Env, EnvState, Error};
    use core::fmt::Debug;

    /// A parameter struct's field: its name and a setter.
    pub type Field<P> = (&'static str, fn(&mut P, f64));

    /// `build` refuses `default` with any field set to any of `bad`, naming
    /// that field, and accepts `default` itself.
    pub fn assert_refusals<P: Copy, T: Debug>(
        default: P,
        fields: &[Field<P>],
        bad: &[f64],
        build: impl Fn(P) -> Result<T, Error>,
    ) {
        assert!(build(default).is_ok());
        for &(field, set) in fields {
            for &x in bad {
                let mut p = default;
                set(&mut p, x);
                let result = build(p);
                assert!(
                    matches!(result, Err(Error::InvalidConfig { field: f, .. }) if f == field),
                    "{field} = {x}: {result:?}"
                );
            }
        }
    }

    /// `env` refuses each of the `bad` actions with `error` and stays as it was.
    pub fn assert_refused_unchanged<E>(env: &mut E, bad: &[ActionOf<E>], error: Error)
    where
        E: Env + Clone + PartialEq + Debug,
    {
        let before = env.clone();
        for &action in bad {
            assert_eq!(env.step(action), Err(error));
            assert_eq!(*env, before);
        }
    }

    /// The non-finite actions of a one-dimensional continuous environment.
    pub const NON_FINITE: [nalgebra::SVector<f32, 1>; 3] = [
        nalgebra::SVector::<f32, 1>::new(f32::NAN),
        nalgebra::SVector::<f32, 1>::new(f32::INFINITY),
        nalgebra::SVector::<f32, 1>::new(f32::NEG_INFINITY),
    ];

    /// Two episodes of `steps` steps of `new()`, each from a reset by the
    /// stream of the same seed and driven by `policy(stream, t)` (drawing
    /// from that stream after the reset), end in the same state (all of
    /// it, as [`EnvState`] saves it) with the same return, bit for bit;
    /// another seed ends elsewhere.
    pub fn assert_seeded_episodes_deterministic<E: Env + EnvState>(
        new: impl Fn() -> E,
        steps: usize,
        policy: impl Fn(&mut rand_xoshiro::Xoshiro128PlusPlus, usize) -> ActionOf<E>,
    ) {
        let run = |seed| {
            let mut env = new();
            let mut rng =
                <rand_xoshiro::Xoshiro128PlusPlus as rand_core::SeedableRng>::seed_from_u64(seed);
            env.reset(&mut rng);
            let mut ret = 0.0f32;
            for t in 0..steps {
                let action = policy(&mut rng, t);
                ret += env.step(action).expect("a valid action").reward;
            }
            let mut words = [0.0f64; crate::checkpoint::MAX_ENV_WORDS];
            env.save_state(&mut words[..E::WORDS]);
            (words.map(f64::to_bits), ret.to_bits())
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
    }

    /// Saving `env`'s state and restoring it into `fresh` gives `env` back,
    /// which then steps identically under `action`; a short, non-finite or
    /// bad-counter (word `counter`) state is refused and changes nothing.
    pub fn assert_state_round_trip<E>(env: &E, mut fresh: E, action: ActionOf<E>, counter: usize)
    where
        E: Env + EnvState + Clone + PartialEq + Debug,
    {
        let mut words = [0.0; crate::checkpoint::MAX_ENV_WORDS];
        let words = &mut words[..E::WORDS];
        env.save_state(words);
        let before = fresh.clone();
        for (bad, error) in [
            (0, Error::NonFinite),
            (counter, Error::InvalidState { what: "" }),
        ] {
            let mut broken = [0.0; crate::checkpoint::MAX_ENV_WORDS];
            broken[..E::WORDS].copy_from_slice(words);
            broken[bad] = if bad == counter { -1.0 } else { f64::NAN };
            let result = fresh.restore_state(&broken[..E::WORDS]);
            assert_eq!(
                core::mem::discriminant(&result.unwrap_err()),
                core::mem::discriminant(&error)
            );
            assert_eq!(fresh, before);
        }
        assert_eq!(
            fresh.restore_state(&words[..E::WORDS - 1]),
            Err(Error::Truncated)
        );
        assert_eq!(fresh, before);
        fresh.restore_state(words).unwrap();
        assert_eq!(&fresh, env);
        let mut env = env.clone();
        assert_eq!(fresh.step(action), env.step(action));
        assert_eq!(fresh, env);
    }
}
