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
    Envelope, Guarded, RollbackStats, SafeSet, ShieldStats, SupervisorStats, WatchdogStats,
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
}

impl Fault {
    /// Every fault, `Nominal` first.
    pub const ALL: [Fault; 7] = [
        Fault::Nominal,
        Fault::PoisonedUpdate,
        Fault::NanSensors,
        Fault::StuckSensor,
        Fault::DivergingUpdate,
        Fault::OverrunUpdate,
        Fault::DivergingCorruptStore,
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
        Fault::Nominal | Fault::NanSensors | Fault::StuckSensor => false,
    }
}

/// Runs one drill of `config.episodes` (at most `EPISODES`) episodes on
/// `env` with `fault`, acted by `arm`: `guarded` holds `trained` as its
/// acting and last-good policy when called (its envelope excluding the
/// learned policy for [`Arm::Fallback`]); `candidate` is the learner's
/// publish buffer (and the unguarded arm's acting policy once it has
/// published); `score` rates each reading (the supervisor's and the
/// rollback's per-tick score).
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
    score: impl Fn(&SVector<f32, OBS>) -> f32,
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
    };
    // The unguarded arm acts with `trained` until the learner publishes.
    let mut unguarded_published = false;
    let (mut score_sum, mut ticks) = (0.0f64, 0u64);
    let mut now = 0u32; // the control loop's clock
    let episodes = (config.episodes as usize).min(EPISODES);
    for ret_slot in out.returns.iter_mut().take(episodes) {
        let mut obs = env.reset(&mut rng);
        guarded.reset();
        let mut frozen = obs;
        let mut ret = 0.0f32;
        let mut t = 0u32;
        loop {
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
            if t > 0 {
                // The score of the state the last command led to.
                let _ = guarded.record(score(&reading));
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
                unguarded_published = true;
            }
            let action = match arm {
                Arm::Guarded | Arm::Fallback => guarded.act(&reading).action,
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
            score_sum += f64::from(score(&obs));
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
        *ret_slot = ret;
    }
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
