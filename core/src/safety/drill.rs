//! Fault drills: a [`Guarded`] controller on a plant, run for a few
//! episodes with one fault injected in each — the same run, bit for bit, on
//! the desktop and on a microcontroller (`firmware-example`'s `fault-drill`
//! under QEMU), so the safety net is shown working where it will run.
//!
//! A drill is a loop a control loop would run: read the sensors (with the
//! fault applied to the reading), report the last tick's score, let the
//! learner publish (with the fault applied to the update), act through the
//! guarded controller, step the plant. What each fault is and when it
//! strikes is [`Fault`] and [`DrillConfig`]; which controller acts is
//! [`Arm`]: the guarded policy, the fallback alone behind the same sensor
//! checks and shield (the guarded run's bar: its return must never be
//! lower), or the learned policy unguarded (the fault's real damage).
//!
//! Nothing allocates and nothing is random but the plant's resets and a
//! diverging update's noise, both from [`DrillConfig::seed`] through the
//! core's own RNG, so the same drill gives the same bits everywhere.

use nalgebra::SVector;
use rand_core::SeedableRng;

use super::{
    Cause, Envelope, Guarded, RollbackStats, SafeSet, ShieldStats, SupervisorStats, Verdict,
    WatchdogStats,
};
use crate::env::{ActionSpace, Env, Step};
use crate::error::Error;
use crate::params::Params;
use crate::policy::Controller;
use crate::rng::{self, Xoshiro128pp};

pub mod cartpole;

/// The fault injected in every episode of a drill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Fault {
    /// None.
    Nominal,
    /// At [`DrillConfig::fault_at`] the learner publishes weights with NaNs
    /// in them (every 97th weight of the corrupted tensors).
    PoisonedUpdate,
    /// Every sensor reads NaN for [`DrillConfig::nan_ticks`] ticks from
    /// `fault_at`.
    NanSensors,
    /// The reading freezes for [`DrillConfig::stuck_ticks`] ticks from
    /// `fault_at`.
    StuckSensor,
    /// At `fault_at` the learner publishes the weights a diverging learning
    /// rate gives: `θ + 2·N(0, 1)` on every corrupted weight.
    DivergingUpdate,
    /// At `fault_at` an update starts and does not end within the
    /// watchdog's limit; its result (diverged weights) arrives at
    /// [`DrillConfig::overrun_ends_at`].
    OverrunUpdate,
    /// As `DivergingUpdate`, with a bit flipped in the stored last-good
    /// policy first.
    DivergingCorruptStore,
    /// At `fault_at` the learner publishes a policy that regresses without
    /// leaving the envelope: the trained one with its output layer (the
    /// last two corrupted tensors: weights and biases) scaled by
    /// [`DrillConfig::regress_gain`]. Nothing but its score tells it from
    /// the trained one: the trial's window rolls it back.
    RegressedUpdate,
    /// As `RegressedUpdate` with [`DrillConfig::underperform_gain`]: a
    /// policy that stays inside the envelope but does worse than the
    /// fallback itself, which the supervisor's performance check hands
    /// control back to (and the published policy is rolled back) before
    /// the trial's window is full.
    UnderperformingUpdate,
}

impl Fault {
    /// Every fault, `Nominal` first.
    pub const ALL: [Fault; 9] = [
        Fault::Nominal,
        Fault::PoisonedUpdate,
        Fault::NanSensors,
        Fault::StuckSensor,
        Fault::DivergingUpdate,
        Fault::OverrunUpdate,
        Fault::DivergingCorruptStore,
        Fault::RegressedUpdate,
        Fault::UnderperformingUpdate,
    ];
}

/// Who acts in a drill.
///
/// The unguarded arm commands zero when the policy errs (a NaN reading),
/// as a driver that ignores the error would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Arm {
    /// The learned policy inside [`Guarded`].
    Guarded,
    /// The fallback alone, behind the same sensor checks and shield: build
    /// the [`Guarded`] with an envelope the learned policy is never inside.
    Fallback,
    /// The learned policy's command sent as is (zero when it errs);
    /// publishes go straight into the acting policy.
    Unguarded,
}

/// When and how the faults strike.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DrillConfig {
    /// Episodes per drill.
    pub episodes: u32,
    /// The tick of each episode at which the fault strikes.
    pub fault_at: u32,
    /// Ticks of NaN readings ([`Fault::NanSensors`]).
    pub nan_ticks: u32,
    /// Ticks of a frozen reading ([`Fault::StuckSensor`]).
    pub stuck_ticks: u32,
    /// The tick at which an overrunning update's result arrives.
    pub overrun_ends_at: u32,
    /// The faulty updates corrupt the policy's first `weight_tensors`
    /// tensors (its network's weights and biases, in
    /// [`Params`] order).
    pub weight_tensors: usize,
    /// The factor on the output layer of a [`Fault::RegressedUpdate`].
    pub regress_gain: f32,
    /// The factor on the output layer of a
    /// [`Fault::UnderperformingUpdate`].
    pub underperform_gain: f32,
    /// The seed of the plant's resets (and of a diverging update's noise).
    pub seed: u64,
}

/// What a drill did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Drill<const EPISODES: usize> {
    /// Each episode's return.
    pub returns: [f32; EPISODES],
    /// Mean score per tick over the drill.
    pub mean_score: f32,
    /// No episode terminated (the plant stayed in its envelope).
    pub held: bool,
    /// The acting policy at the end is the trained one, bit for bit.
    pub policy_intact: bool,
    /// Publishes the watchdog refused.
    pub refusals: u32,
    /// The pieces' counters (the guarded arms).
    pub supervisor: SupervisorStats,
    /// See [`supervisor`](Self::supervisor).
    pub shield: ShieldStats,
    /// See [`supervisor`](Self::supervisor).
    pub rollback: RollbackStats,
    /// See [`supervisor`](Self::supervisor).
    pub watchdog: WatchdogStats,
    /// The tick of each episode's first switch to the fallback
    /// ([`NEVER`]: none).
    pub switch_at: [u32; EPISODES],
    /// The tick of each episode's first restore of the last good policy
    /// (a rejection or a trial's verdict; [`NEVER`]: none).
    pub restored_at: [u32; EPISODES],
    /// FNV-1a of every event with its episode and tick: each switch (with
    /// its cause) and hand-back, each publish and refusal, each rollback,
    /// promotion and failed restore — two drills with the same `events`
    /// switched, published and rolled back at the same ticks.
    pub events: u32,
}

/// No such tick: in [`Drill::switch_at`] and [`Drill::restored_at`].
pub const NEVER: u32 = u32::MAX;

/// What [`Drill::events`] hashes.
#[derive(Clone, Copy)]
enum Event {
    ToFallback(Cause),
    HandedBack,
    Rejected,
    RejectFailed,
    Promoted,
    RolledBack,
    RestoreFailed,
    Published,
    Refused,
}

impl Event {
    const fn code(self) -> u32 {
        match self {
            Event::ToFallback(cause) => match cause {
                Cause::NonFinite => 1,
                Cause::Stuck => 2,
                Cause::Envelope => 3,
                Cause::Performance => 4,
                Cause::PolicyError => 5,
                Cause::Refused => 6,
            },
            Event::HandedBack => 7,
            Event::Rejected => 8,
            Event::RejectFailed => 9,
            Event::Promoted => 10,
            Event::RolledBack => 11,
            Event::RestoreFailed => 12,
            Event::Published => 13,
            Event::Refused => 14,
        }
    }
}

/// FNV-1a over little-endian `u32` words.
struct Fnv1a(u32);

impl Fnv1a {
    fn word(&mut self, x: u32) {
        for b in x.to_le_bytes() {
            self.0 = (self.0 ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
    }
}

impl<const EPISODES: usize> Drill<EPISODES> {
    /// The return over every episode.
    pub fn total(&self) -> f32 {
        self.returns.iter().sum()
    }
}

/// `candidate` ← `trained` with the update `fault` publishes, or `false`
/// when `fault` publishes nothing.
fn faulty_update<P: Params + Clone>(
    fault: Fault,
    config: &DrillConfig,
    trained: &P,
    candidate: &mut P,
) -> bool {
    let tensors = config.weight_tensors.min(P::TENSORS);
    match fault {
        Fault::PoisonedUpdate => {
            candidate.clone_from(trained);
            let mut k = 0usize;
            for t in 0..tensors {
                for x in candidate.tensor_mut(t) {
                    if k.is_multiple_of(97) {
                        *x = f32::NAN;
                    }
                    k += 1;
                }
            }
            true
        }
        Fault::DivergingUpdate | Fault::OverrunUpdate | Fault::DivergingCorruptStore => {
            candidate.clone_from(trained);
            let mut noise = Xoshiro128pp::seed_from_u64(config.seed ^ 0x0D1E_5EED);
            for t in 0..tensors {
                for x in candidate.tensor_mut(t) {
                    *x += 2.0 * rng::normal_pair(&mut noise).0;
                }
            }
            true
        }
        Fault::RegressedUpdate | Fault::UnderperformingUpdate => {
            let gain = if fault == Fault::RegressedUpdate {
                config.regress_gain
            } else {
                config.underperform_gain
            };
            candidate.clone_from(trained);
            for t in tensors.saturating_sub(2)..tensors {
                for x in candidate.tensor_mut(t) {
                    *x *= gain;
                }
            }
            true
        }
        Fault::Nominal | Fault::NanSensors | Fault::StuckSensor => false,
    }
}

/// Runs one drill of `config.episodes` (at most `EPISODES`) episodes on
/// `env` with `fault`, acted by `arm`: `guarded` holds `trained` as its
/// acting and last-good policy when called (its envelope excluding the
/// learned policy for [`Arm::Fallback`]); `candidate` is the learner's
/// publish buffer (and the unguarded arm's acting policy once it has
/// published); `score` rates each tick by the reading it led to and the
/// command applied (the supervisor's and the rollback's per-tick score).
///
/// # Errors
/// The plant's errors.
#[allow(clippy::too_many_arguments)]
pub fn run<P, F, M, S, B, E, const OBS: usize, const A: usize, const EPISODES: usize>(
    env: &mut E,
    guarded: &mut Guarded<P, F, M, S, B, OBS, A>,
    arm: Arm,
    fault: Fault,
    config: &DrillConfig,
    trained: &P,
    candidate: &mut P,
    score: impl Fn(&SVector<f32, OBS>, &SVector<f32, A>) -> f32,
) -> Result<Drill<EPISODES>, Error>
where
    P: Controller<OBS, Action = SVector<f32, A>> + Params + Clone + PartialEq,
    F: Controller<OBS, Action = SVector<f32, A>>,
    M: Envelope<OBS>,
    S: SafeSet<OBS, A>,
    B: AsRef<[u8]> + AsMut<[u8]>,
    E: Env<Obs = SVector<f32, OBS>>,
    E::Space: ActionSpace<Action = SVector<f32, A>>,
{
    if fault == Fault::DivergingCorruptStore {
        let store = guarded.rollback.store_mut().as_mut();
        let at = store.len() / 2;
        if let Some(byte) = store.get_mut(at) {
            *byte ^= 0x04;
        }
    }
    let mut rng = Xoshiro128pp::seed_from_u64(config.seed);
    let mut out = Drill {
        returns: [0.0; EPISODES],
        mean_score: 0.0,
        held: true,
        policy_intact: false,
        refusals: 0,
        supervisor: SupervisorStats::default(),
        shield: ShieldStats::default(),
        rollback: RollbackStats::default(),
        watchdog: WatchdogStats::default(),
        switch_at: [NEVER; EPISODES],
        restored_at: [NEVER; EPISODES],
        events: 0,
    };
    let mut events = Fnv1a(0x811c_9dc5);
    // The unguarded arm acts with `trained` until the learner publishes.
    let mut unguarded_published = false;
    let (mut score_sum, mut ticks) = (0.0f64, 0u64);
    let mut now = 0u32; // the control loop's clock
    let episodes = (config.episodes as usize).min(EPISODES);
    for episode in 0..episodes {
        let mut obs = env.reset(&mut rng);
        guarded.reset();
        let mut frozen = obs;
        let mut action = SVector::<f32, A>::zeros();
        let mut ret = 0.0f32;
        let mut t = 0u32;
        let (mut switch_at, mut restored_at) = (NEVER, NEVER);
        loop {
            let mut event = |e: Event| {
                events.word(episode as u32);
                events.word(t);
                events.word(e.code());
                match e {
                    Event::ToFallback(_) if switch_at == NEVER => switch_at = t,
                    Event::Rejected | Event::RolledBack if restored_at == NEVER => restored_at = t,
                    _ => {}
                }
            };
            // The reading the controller sees.
            let within = |len: u32| t >= config.fault_at && t - config.fault_at < len;
            let stuck = fault == Fault::StuckSensor && within(config.stuck_ticks);
            let reading = if fault == Fault::NanSensors && within(config.nan_ticks) {
                SVector::from_element(f32::NAN)
            } else if stuck {
                frozen
            } else {
                obs
            };
            if !stuck {
                frozen = obs;
            }
            if t > 0 && arm != Arm::Unguarded {
                // The score of the state the last command led to.
                match guarded.record(score(&reading, &action)) {
                    Ok(Verdict::Promoted { .. }) => event(Event::Promoted),
                    Ok(Verdict::RolledBack { .. }) => event(Event::RolledBack),
                    Ok(Verdict::Pending) => {}
                    Err(_) => event(Event::RestoreFailed),
                }
            }
            // The learner's publishes.
            let due = match fault {
                Fault::OverrunUpdate => t == config.overrun_ends_at,
                _ => t == config.fault_at,
            };
            if fault == Fault::OverrunUpdate && t == config.fault_at {
                guarded.watchdog.begin(now);
            }
            let _ = guarded.watchdog.overdue(now);
            if due && faulty_update(fault, config, trained, candidate) {
                let published = if fault == Fault::OverrunUpdate {
                    guarded.finish_update(now, Ok(()), candidate)
                } else {
                    guarded.publish(Ok(()), candidate, 1)
                };
                out.refusals += u32::from(published.is_err());
                event(if published.is_ok() {
                    Event::Published
                } else {
                    Event::Refused
                });
                unguarded_published = true;
            }
            action = match arm {
                Arm::Guarded | Arm::Fallback => {
                    let tick = guarded.act(&reading);
                    if let Some(cause) = tick.switched_to_fallback {
                        event(Event::ToFallback(cause));
                    }
                    if tick.handed_back {
                        event(Event::HandedBack);
                    }
                    if tick.rolled_back {
                        event(Event::Rejected);
                    }
                    if tick.rollback_error.is_some() {
                        event(Event::RejectFailed);
                    }
                    tick.action
                }
                Arm::Unguarded => {
                    let acting = if unguarded_published {
                        &*candidate
                    } else {
                        trained
                    };
                    acting.act(&reading).unwrap_or(SVector::zeros())
                }
            };
            let step: Step<SVector<f32, OBS>> = env.step(action)?;
            obs = step.obs;
            ret += step.reward;
            score_sum += f64::from(score(&obs, &action));
            ticks += 1;
            t += 1;
            now = now.wrapping_add(1);
            if step.terminated {
                out.held = false;
            }
            if step.done() {
                break;
            }
        }
        if let Some(slot) = out.returns.get_mut(episode) {
            *slot = ret;
        }
        if let Some(slot) = out.switch_at.get_mut(episode) {
            *slot = switch_at;
        }
        if let Some(slot) = out.restored_at.get_mut(episode) {
            *slot = restored_at;
        }
    }
    out.events = events.0;
    out.mean_score = (score_sum / ticks.max(1) as f64) as f32;
    out.policy_intact = match arm {
        Arm::Guarded | Arm::Fallback => guarded.policy == *trained,
        Arm::Unguarded => !unguarded_published || *candidate == *trained,
    };
    out.supervisor = guarded.supervisor.stats;
    out.shield = guarded.shield.stats;
    out.rollback = guarded.rollback.stats;
    out.watchdog = guarded.watchdog.stats;
    Ok(out)
}
