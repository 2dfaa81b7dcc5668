//! The plant interface: how a board's sensors and actuator become an
//! environment that `microrl` trains on.
//!
//! Three pieces, each small enough to copy:
//! - [`Plant`] — **your hardware.** Read the sensors into an observation,
//!   write one actuator command, wait one control period, and (optionally)
//!   bring the plant back to a start state for a new episode. Errors are your
//!   own type (an ADC timeout, a PWM fault).
//! - [`Task`] — **what "good" means.** A reward function of the observation
//!   (and the command), an episode length (reaching it is a time-limit
//!   *truncation*), optionally a safety limit that *terminates* an episode,
//!   and the mean return that counts as solved.
//! - [`PlantEnv`] — **the adapter.** `PlantEnv<YourPlant, YourTask>`
//!   implements [`microrl::env::Env`], so every agent of the core trains on
//!   it: `microrl::agent::ActorCritic<PlantEnv<YourPlant, YourTask>, 16>`.
//!
//! [`PwmActuator`] maps a command onto an `embedded_hal::pwm::SetDutyCycle`
//! channel, the usual motor / heater / valve output. [`sim`] is a simulated
//! DC motor behind the same trait (its PWM output is a simulated
//! `SetDutyCycle` channel driven by that same [`PwmActuator`]): the `plant`
//! binary trains on it under QEMU, and a board swaps in its own [`Plant`].
//!
//! Nothing here allocates or needs `unsafe`; the module depends only on
//! `microrl`, `rand_core` and `embedded-hal`.

use embedded_hal::pwm::SetDutyCycle;
use microrl::env::{ActionSpace, Env, Observation, Step};
use microrl::{Error, SVector};
use rand_core::Rng;

/// The actuator command type of plant `P` (`SVector<f32, A>` for a
/// `Continuous<A>` space, `usize` for `Discrete<N>`).
pub type Command<P> = <<P as Plant>::Space as ActionSpace>::Action;

/// A physical (or simulated) plant: sensors, one actuator, a control period.
///
/// The training loop calls, per environment step, [`write`](Plant::write)
/// (the command, already clipped to [`action_space`](Plant::action_space)),
/// [`wait`](Plant::wait) (one control period) and [`read`](Plant::read) (the
/// observation at the end of the period); per episode,
/// [`reset`](Plant::reset) then [`read`](Plant::read).
pub trait Plant {
    /// The observation: `SVector<f32, N>` with `N` readings (sensor values,
    /// set-points, errors — whatever the controller may look at).
    type Obs: Observation + Default;
    /// The actuator: `microrl::env::Continuous<A>` (with its bounds) or
    /// `microrl::env::Discrete<N>` (e.g. relay off / on).
    type Space: ActionSpace;
    /// A hardware fault (sensor timeout, bus error, …).
    type Error: Copy + core::fmt::Debug;

    /// The actuator's range (a continuous command is clipped to it before
    /// [`write`](Plant::write) sees it).
    fn action_space(&self) -> Self::Space;

    /// Brings the plant to the start of a new episode: drive it home, wait
    /// until it settles, pick a new set-point, … `rng` is the training
    /// loop's stream, for randomised starts. Default: nothing to do.
    ///
    /// # Errors
    /// A hardware fault; training stops with it at the next step.
    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Result<(), Self::Error> {
        let _ = rng;
        Ok(())
    }

    /// Reads the sensors into an observation.
    ///
    /// # Errors
    /// A hardware fault.
    fn read(&mut self) -> Result<Self::Obs, Self::Error>;

    /// Sends one command to the actuator.
    ///
    /// # Errors
    /// A hardware fault.
    fn write(&mut self, command: Command<Self>) -> Result<(), Self::Error>;

    /// Waits one control period (on a board: until the next timer tick; in a
    /// simulation: advance the physics by one period).
    fn wait(&mut self);
}

/// The objective on plant `P`: reward, episode length, safety limit, and
/// what counts as solved. A task is a value, so it can carry parameters.
pub trait Task<P: Plant> {
    /// Steps per episode; reaching it *truncates* the episode (the learner
    /// still bootstraps from the last observation).
    const EPISODE_STEPS: u32;
    /// Mean episode return that counts as solved.
    const SOLVED_RETURN: f32;

    /// The reward for arriving at `obs` after sending `command`.
    fn reward(&self, obs: &P::Obs, command: &Command<P>) -> f32;

    /// Whether `obs` is outside the safe region: the episode *terminates*
    /// (no bootstrapping) and the plant is reset. Default: never.
    fn terminated(&self, obs: &P::Obs) -> bool {
        let _ = obs;
        false
    }
}

/// A [`Plant`] and a [`Task`] as a `microrl` environment.
///
/// A hardware fault ends the step with `Error::Plant { what }` naming the
/// operation that failed (`"actuator write"`, `"sensor read"`, `"reset"`)
/// and is kept in [`fault`](Self::fault) with the board's own error type,
/// for the firmware to report; a fault during `reset` (which cannot return
/// an error) is reported by the next step, before anything is sent to the
/// actuator.
#[derive(Debug)]
pub struct PlantEnv<P: Plant, T> {
    /// The hardware.
    pub plant: P,
    /// The objective.
    pub task: T,
    /// Steps in the current episode.
    pub steps: u32,
    /// The first hardware fault, if any (sticky: every later step fails).
    pub fault: Option<P::Error>,
}

impl<P: Plant, T: Task<P>> PlantEnv<P, T> {
    /// Wraps `plant` with the objective `task`.
    pub const fn new(plant: P, task: T) -> Self {
        Self {
            plant,
            task,
            steps: 0,
            fault: None,
        }
    }

    fn latch<X>(&mut self, result: Result<X, P::Error>, what: &'static str) -> Result<X, Error> {
        result.map_err(|e| {
            self.fault.get_or_insert(e);
            Error::Plant { what }
        })
    }
}

impl<P: Plant, T: Task<P>> Env for PlantEnv<P, T> {
    type Obs = P::Obs;
    type Space = P::Space;
    const SOLVED_RETURN: f32 = T::SOLVED_RETURN;

    fn action_space(&self) -> P::Space {
        self.plant.action_space()
    }

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> P::Obs {
        self.steps = 0;
        let first = self.plant.reset(rng).and_then(|()| self.plant.read());
        self.latch(first, "reset").unwrap_or_default()
    }

    fn step(&mut self, command: Command<P>) -> Result<Step<P::Obs>, Error> {
        if self.fault.is_some() {
            return Err(Error::Plant {
                what: "an earlier fault",
            });
        }
        let written = self.plant.write(command);
        self.latch(written, "actuator write")?;
        self.plant.wait();
        let read = self.plant.read();
        let obs = self.latch(read, "sensor read")?;
        self.steps += 1;
        let terminated = self.task.terminated(&obs);
        Ok(Step {
            obs,
            reward: self.task.reward(&obs, &command),
            terminated,
            truncated: !terminated && self.steps >= T::EPISODE_STEPS,
        })
    }
}

/// A PWM output as an actuator: a command in `[low, high]` maps linearly
/// onto duty cycles `0 ..= max_duty_cycle()` (rounded to the nearest step,
/// clamped; NaN gives 0).
#[derive(Clone, Copy, Debug)]
pub struct PwmActuator<P> {
    /// The PWM channel (a HAL's timer channel on a board).
    pub pwm: P,
    /// The command that maps to duty 0.
    pub low: f32,
    /// The command that maps to full duty.
    pub high: f32,
}

impl<P: SetDutyCycle> PwmActuator<P> {
    /// Sets the duty cycle for `command`.
    ///
    /// # Errors
    /// The PWM channel's error.
    pub fn set(&mut self, command: f32) -> Result<(), P::Error> {
        let max = self.pwm.max_duty_cycle();
        let fraction = ((command - self.low) / (self.high - self.low)).clamp(0.0, 1.0);
        // `as` saturates and maps NaN to 0.
        let duty = (fraction * f32::from(max) + 0.5) as u16;
        self.pwm.set_duty_cycle(duty.min(max))
    }
}

/// A simulated plant for QEMU and the desktop: a DC motor's speed loop.
pub mod sim {
    use core::convert::Infallible;

    use embedded_hal::pwm::{ErrorType, SetDutyCycle};
    use microrl::Controller;
    use microrl::env::Continuous;

    use super::{Command, Error, Plant, PwmActuator, Rng, SVector, Task};

    /// Control period, seconds (100 Hz).
    pub const DT: f32 = 0.01;
    /// Mechanical time constant `τ`, seconds.
    pub const TAU: f32 = 0.05;
    /// No-load speed at full duty `K`, rad/s.
    pub const FULL_SPEED: f32 = 300.0;
    /// PWM resolution: duty steps `0 ..= PWM_STEPS`.
    pub const PWM_STEPS: u16 = 1000;

    /// A simulated PWM channel: remembers its duty cycle.
    #[derive(Clone, Copy, Debug, Default)]
    pub struct SimPwm {
        /// Current duty, `0 ..= PWM_STEPS`.
        pub duty: u16,
    }

    impl ErrorType for SimPwm {
        type Error = Infallible;
    }

    impl SetDutyCycle for SimPwm {
        fn max_duty_cycle(&self) -> u16 {
            PWM_STEPS
        }
        fn set_duty_cycle(&mut self, duty: u16) -> Result<(), Infallible> {
            self.duty = duty;
            Ok(())
        }
    }

    /// A DC motor driven by PWM, first-order speed response
    /// `τ·ω' = K·d − ω` (`d` the duty fraction, Euler step of [`DT`]),
    /// tracking a set-point `ω*`. Observation `[ω* − ω, ω]` in rad/s; the
    /// command is in `[−1, 1]`, mapped onto duty 0…100 % by a
    /// [`PwmActuator`] as on a board.
    #[derive(Clone, Copy, Debug)]
    pub struct SimMotor {
        /// The PWM output.
        pub out: PwmActuator<SimPwm>,
        /// Speed `ω`, rad/s.
        pub speed: f32,
        /// Set-point `ω*`, rad/s.
        pub target: f32,
    }

    impl SimMotor {
        /// At rest, PWM off, set-point 0.
        pub const fn new() -> Self {
            Self {
                out: PwmActuator {
                    pwm: SimPwm { duty: 0 },
                    low: -1.0,
                    high: 1.0,
                },
                speed: 0.0,
                target: 0.0,
            }
        }
    }

    impl Default for SimMotor {
        fn default() -> Self {
            Self::new()
        }
    }

    impl Plant for SimMotor {
        type Obs = SVector<f32, 2>;
        type Space = Continuous<1>;
        type Error = Infallible;

        fn action_space(&self) -> Continuous<1> {
            Continuous::symmetric(1.0)
        }

        /// A new set-point in `[0.15, 0.85]·K` and a random initial speed in
        /// `[0, K]`.
        fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Result<(), Infallible> {
            self.target = microrl::rng::uniform_range(rng, 0.15, 0.85) * FULL_SPEED;
            self.speed = microrl::rng::uniform_range(rng, 0.0, 1.0) * FULL_SPEED;
            Ok(())
        }

        fn read(&mut self) -> Result<SVector<f32, 2>, Infallible> {
            Ok(SVector::<f32, 2>::new(self.target - self.speed, self.speed))
        }

        fn write(&mut self, command: Command<Self>) -> Result<(), Infallible> {
            self.out.set(command[0])
        }

        fn wait(&mut self) {
            let duty = f32::from(self.out.pwm.duty) / f32::from(PWM_STEPS);
            self.speed += DT / TAU * (FULL_SPEED * duty - self.speed);
        }
    }

    /// The exact static feed-forward `d = ω*/K` (command `2d − 1`): zero
    /// steady-state error, no feedback — the baseline a learned policy has
    /// to beat ([`TrackSpeed::SOLVED_RETURN`]).
    #[derive(Clone, Copy, Debug, Default)]
    pub struct FeedForward;

    impl Controller<2> for FeedForward {
        type Action = SVector<f32, 1>;

        fn act(&self, obs: &SVector<f32, 2>) -> Result<SVector<f32, 1>, Error> {
            let duty = ((obs[0] + obs[1]) / FULL_SPEED).clamp(0.0, 1.0);
            Ok(SVector::<f32, 1>::new(2.0 * duty - 1.0))
        }
    }

    /// Track the set-point: reward `−(e / K)²` per step for the speed error
    /// `e`, episodes of 1 s (100 steps).
    #[derive(Clone, Copy, Debug, Default)]
    pub struct TrackSpeed;

    impl Task<SimMotor> for TrackSpeed {
        const EPISODE_STEPS: u32 = 100;
        /// Better than the exact static feed-forward `d = ω*/K` (−0.22 on
        /// the `plant` binary's held-out start states; the one-step
        /// dead-beat controller, the best possible, gets −0.09).
        const SOLVED_RETURN: f32 = -0.2;

        fn reward(&self, obs: &SVector<f32, 2>, _command: &SVector<f32, 1>) -> f32 {
            let e = obs[0] / FULL_SPEED;
            -(e * e)
        }
    }
}
