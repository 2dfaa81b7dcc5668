//! [`Guarded`]: the four pieces composed into one controller that a
//! firmware control loop calls once per tick.
//!
//! Per tick, [`Guarded::act`]:
//! 1. the [`Supervisor`] looks at the reading (non-finite, stuck, outside
//!    the envelope, performance, refusal) and decides who acts, handing the
//!    controllers the last finite observation;
//! 2. the chosen controller proposes a command — an `Err` from the learned
//!    policy hands control to the fallback on the spot, an `Err` from the
//!    fallback becomes the shield's safe action, and so does the fallback's
//!    turn while the reading is stale ([`StaleCommand`]);
//! 3. the [`Shield`] makes the command safe and reports what it applied.
//!
//! After the plant's step, [`Guarded::record`] reports the tick's score to
//! the supervisor's performance average and, while a newly published policy
//! is on trial, to the [`Rollback`], which may restore the last good policy.
//! The learner publishes through [`Guarded::publish`]: the [`Watchdog`]
//! refuses a poisoned, failed or overrunning update and the previous policy
//! keeps acting. A published policy that drives the plant out of its
//! envelope (or whose average falls below the fallback's) during its trial
//! is rolled back at once; if the last good policy cannot be restored (a
//! corrupt store), the fallback keeps control until the next publish.

use nalgebra::SVector;

use super::{
    Cause, Envelope, Interventions, Mode, Refusal, Rollback, SafeSet, Shield, Supervisor, Verdict,
    Watchdog,
};
use crate::error::Error;
use crate::params::Params;
use crate::policy::Controller;

/// What [`Guarded`] commands while the reading is not
/// [`fresh`](super::Decision::fresh) (a non-finite or stuck sensor): the
/// fallback is in control, but has no news from the plant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum StaleCommand {
    /// The shield's [`safe_action`](super::ShieldConfig::safe_action),
    /// approached at the rate limit (e.g. zero force: coast). The default:
    /// a high-gain fallback acting on a stale reading holds a saturated
    /// command open-loop, for as long as the reading stays stale.
    #[default]
    SafeAction,
    /// The fallback's command for the last fresh reading's hold.
    Fallback,
}

/// What one [`Guarded::act`] did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tick<const A: usize> {
    /// The command applied to the actuator: what learning must store.
    pub action: SVector<f32, A>,
    /// The acting controller's proposal (NaN where it returned an error).
    pub proposed: SVector<f32, A>,
    /// Who acted.
    pub mode: Mode,
    /// The shield's corrections.
    pub interventions: Interventions,
    /// Set on the tick the fallback took over: why.
    pub switched_to_fallback: Option<Cause>,
    /// `true` on the tick control returned to the learned policy.
    pub handed_back: bool,
    /// The policy on trial was rolled back this tick.
    pub rolled_back: bool,
    /// A rollback this tick failed with this error (e.g. a corrupt store):
    /// the fallback holds control until the next publish.
    pub rollback_error: Option<Error>,
}

/// A learned policy `P` under a fallback `F`, an envelope `E`, a safe set
/// `S`, a last-good store `B`, and a watchdog (see the [module docs](self)).
///
/// The fields are public so that a firmware can log each piece's
/// statistics and reconfigure them between runs.
///
/// ```
/// use microrl::env::Pendulum;
/// use microrl::safety::*;
/// use microrl::{agent, serialize, Deployed, Error, SVector};
///
/// type Policy = Deployed<agent::Ppo<Pendulum, 8, 64>>;
/// // Fallback: a PD law on [cos θ, sin θ, θ̇] (upright is θ = 0).
/// let pd = |o: &SVector<f32, 3>| Ok::<_, Error>(SVector::from([-10.0 * o[1] - 2.0 * o[2]]));
/// // The learned policy may act within 0.3 rad of upright (sin θ) and 2 rad/s.
/// let envelope = |o: &SVector<f32, 3>| {
///     if o[0] > 0.0 { 1.0 - (o[1] / 0.3).abs().max((o[2] / 2.0).abs()) } else { -1.0 }
/// };
/// let mut flash = [0u8; serialize::encoded_len::<Policy>()];
/// let mut g = Guarded::new(
///     Policy::ZERO,
///     0.0,
///     pd,
///     Supervisor::new(SupervisorConfig { min_dwell: 2, ..SupervisorConfig::DEFAULT }, envelope)?,
///     Shield::new(ShieldConfig::symmetric(2.0).with_max_delta(0.5), Unconstrained)?,
///     Rollback::new(RollbackConfig::DEFAULT, &mut flash[..])?,
///     Watchdog::new(WatchdogConfig::DEFAULT)?,
/// )?;
/// let upright = SVector::from([1.0, 0.0, 0.0]);
/// assert_eq!(g.act(&upright).mode, Mode::Learned);
/// let fallen = SVector::from([0.0, 1.0, 0.0]); // horizontal: outside the envelope
/// let tick = g.act(&fallen);
/// assert_eq!((tick.mode, tick.switched_to_fallback), (Mode::Fallback, Some(Cause::Envelope)));
/// assert_eq!(tick.action[0], -0.5); // the PD's −10, clipped to −2, rate-limited from 0
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Guarded<P, F, E, S, B, const OBS: usize, const A: usize> {
    /// The learned policy that acts (changed only through
    /// [`publish`](Self::publish) and rollbacks).
    pub policy: P,
    /// The fallback controller.
    pub fallback: F,
    /// Who acts.
    pub supervisor: Supervisor<OBS, E>,
    /// The last word on every command.
    pub shield: Shield<A, S>,
    /// The last good policy.
    pub rollback: Rollback<B>,
    /// The publish gate.
    pub watchdog: Watchdog,
    /// The command while the reading is not fresh.
    pub stale_command: StaleCommand,
}

impl<P, F, E, S, B, const OBS: usize, const A: usize> Guarded<P, F, E, S, B, OBS, A>
where
    P: Controller<OBS, Action = SVector<f32, A>> + Params,
    F: Controller<OBS, Action = SVector<f32, A>>,
    E: Envelope<OBS>,
    S: SafeSet<OBS, A>,
    B: AsRef<[u8]> + AsMut<[u8]>,
{
    /// Composes the pieces (each validated when it was built) and stores
    /// `policy` as the last good one with mean score `score`.
    ///
    /// # Errors
    /// As [`Rollback::commit`].
    pub fn new(
        policy: P,
        score: f32,
        fallback: F,
        supervisor: Supervisor<OBS, E>,
        shield: Shield<A, S>,
        mut rollback: Rollback<B>,
        watchdog: Watchdog,
    ) -> Result<Self, Error> {
        rollback.commit(&policy, score)?;
        Ok(Self {
            policy,
            fallback,
            supervisor,
            shield,
            rollback,
            watchdog,
            stale_command: StaleCommand::SafeAction,
        })
    }

    /// The command for the sensor reading `obs` (always finite, within the
    /// shield's bounds and rate limit).
    pub fn act(&mut self, obs: &SVector<f32, OBS>) -> Tick<A> {
        let decision = self.supervisor.observe(obs);
        let mut tick = Tick {
            action: SVector::zeros(),
            proposed: SVector::from_element(f32::NAN),
            mode: decision.mode,
            interventions: Interventions::default(),
            switched_to_fallback: decision.switched_to_fallback,
            handed_back: decision.handed_back,
            rolled_back: false,
            rollback_error: None,
        };
        // A policy on trial that the supervisor had to take control from is
        // rolled back now.
        if matches!(
            decision.switched_to_fallback,
            Some(Cause::Envelope | Cause::Performance)
        ) {
            self.reject(&mut tick);
        }
        if tick.mode == Mode::Learned {
            match self.policy.act(&decision.obs) {
                Ok(a) => tick.proposed = a,
                Err(_) => {
                    self.supervisor.policy_failed();
                    tick.mode = Mode::Fallback;
                    tick.switched_to_fallback = Some(Cause::PolicyError);
                    self.reject(&mut tick);
                }
            }
        }
        let stale = !decision.fresh && self.stale_command == StaleCommand::SafeAction;
        if tick.mode == Mode::Fallback
            && !stale
            && let Ok(a) = self.fallback.act(&decision.obs)
        {
            tick.proposed = a;
        }
        let shielded = self.shield.apply(&decision.obs, tick.proposed);
        tick.action = shielded.action;
        tick.interventions = shielded.interventions;
        tick
    }

    /// Rolls back the policy on trial, if any; on failure latches the
    /// fallback.
    fn reject(&mut self, tick: &mut Tick<A>) {
        if !self.rollback.on_trial() {
            return;
        }
        match self.rollback.reject(&mut self.policy) {
            Ok(_) => {
                tick.rolled_back = true;
                self.supervisor.policy_published();
            }
            Err(e) => {
                tick.rollback_error = Some(e);
                self.supervisor.latch();
                tick.mode = Mode::Fallback;
            }
        }
    }

    /// Reports the score of the tick just acted (after the plant's step):
    /// to the performance average, and to the trial of a newly published
    /// policy when the learned policy acted.
    ///
    /// # Errors
    /// A failed restore (e.g. [`Error::ChecksumMismatch`]): the fallback
    /// then holds control until the next publish.
    pub fn record(&mut self, score: f32) -> Result<Verdict, Error> {
        let learned = self.supervisor.acted() == Mode::Learned;
        self.supervisor.record(score);
        if !learned {
            return Ok(Verdict::Pending);
        }
        match self.rollback.record(score, &mut self.policy) {
            Ok(verdict) => {
                if let Verdict::RolledBack { .. } = verdict {
                    self.supervisor.policy_published();
                }
                Ok(verdict)
            }
            Err(e) => {
                self.supervisor.latch();
                Err(e)
            }
        }
    }

    /// Publishes `candidate`, the result `outcome` of an update that took
    /// `duration`, if the watchdog lets it through; it then acts from the
    /// next tick and goes on trial.
    ///
    /// # Errors
    /// The watchdog's [`Refusal`]; the previous policy keeps acting.
    pub fn publish<T>(
        &mut self,
        outcome: Result<T, Error>,
        candidate: &P,
        duration: u32,
    ) -> Result<(), Refusal> {
        self.watchdog
            .review(outcome, candidate, duration, &mut self.policy)?;
        self.rollback.published();
        self.supervisor.policy_published();
        Ok(())
    }

    /// [`publish`](Self::publish) for an update tracked with
    /// [`Watchdog::begin`]: its duration runs to `now`.
    ///
    /// # Errors
    /// As [`Watchdog::finish`]; the previous policy keeps acting.
    pub fn finish_update<T>(
        &mut self,
        now: u32,
        outcome: Result<T, Error>,
        candidate: &P,
    ) -> Result<(), Refusal> {
        self.watchdog
            .finish(now, outcome, candidate, &mut self.policy)?;
        self.rollback.published();
        self.supervisor.policy_published();
        Ok(())
    }

    /// A new episode (the plant was reset): the next command is not
    /// rate-limited from the last one.
    pub fn reset(&mut self) {
        self.shield.reset();
    }
}
