//! The drill on `CartPoleContinuous`: the scenario of the safety net's fault
//! table (`super::super` module docs), as a library so that the desktop
//! (`core/src/safety/tests.rs`, `tests/tests/firmware.rs`) and the MCU
//! (`firmware-example`'s `fault-drill`) run the very same drill.
//!
//! A learned policy acts inside [`Guarded`] with a PD fallback whose gains
//! are the optimum of a grid on tuning seeds ([`FALLBACK_GAINS`]); every
//! drill's start states come from [`FAULT_SEED`], which neither training
//! nor tuning uses.

use nalgebra::SVector;
use rand_core::SeedableRng;

use super::{Arm, Drill, DrillConfig, Fault};
use crate::env::{CartPoleContinuous, Env};
use crate::error::Error;
use crate::params::Params;
use crate::policy::Controller;
use crate::rng::Xoshiro128pp;
use crate::safety::{
    Bounds, Envelope, Guarded, Rollback, RollbackConfig, Shield, ShieldConfig, Supervisor,
    SupervisorConfig, Watchdog, WatchdogConfig,
};

/// The plant's termination bounds: `|x| ≤ 2.4`, `|θ| ≤ 12°`.
pub const X_LIMIT: f32 = 2.4;
/// See [`X_LIMIT`].
pub const THETA_LIMIT: f32 = 12.0 * 2.0 * core::f32::consts::PI / 360.0;
/// Episodes per drill.
pub const EPISODES: usize = 5;
/// The start-state seed of every drill.
pub const FAULT_SEED: u64 = 2026;
/// Start-state seeds of the fallback's gain grid (and of the reference
/// scores); the drills never use them.
pub const TUNING_SEEDS: [u64; 3] = [101, 102, 103];
/// Tick (within each episode) at which a fault starts.
pub const FAULT_AT: u32 = 100;
/// The fallback's gains: the grid optimum on [`TUNING_SEEDS`] (checked by
/// `fallback_gains_are_the_grid_optimum_on_tuning_seeds`).
pub const FALLBACK_GAINS: [f32; 4] = [6.4, 12.8, 128.0, 16.0];

/// The drills' timing: faults at tick [`FAULT_AT`] of each of the
/// [`EPISODES`] episodes, NaN readings for 10 ticks, a frozen reading for
/// 20, an overrunning update's result at tick 400; faulty updates corrupt
/// the first `weight_tensors` tensors of the policy (its network's).
pub const fn drill_config(weight_tensors: usize) -> DrillConfig {
    DrillConfig {
        episodes: EPISODES as u32,
        fault_at: FAULT_AT,
        nan_ticks: 10,
        stuck_ticks: 20,
        overrun_ends_at: 400,
        weight_tensors,
        regress_gain: REGRESS_GAIN,
        underperform_gain: UNDERPERFORM_GAIN,
        seed: FAULT_SEED,
    }
}

/// The factor on a [`Fault::RegressedUpdate`]'s output layer.
pub const REGRESS_GAIN: f32 = 10.0;
/// The factor on a [`Fault::UnderperformingUpdate`]'s output layer: the
/// policy's command saturates, full force nearly every tick.
pub const UNDERPERFORM_GAIN: f32 = 300.0;

/// Which fallback the learned policy runs under, and what a tick costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Scenario {
    /// The [`Pd`] law with the grid-optimal [`FALLBACK_GAINS`], judged by
    /// the state alone ([`score`]): the fallback regulates better than a
    /// learned policy that only learned to keep the pole up.
    Tuned,
    /// A [`Relay`] on the same law: full force, its sign the PD's — it
    /// holds the plant, at full actuator effort. The score charges the
    /// effort ([`effort_score`]), so the fallback alone costs about 0.6
    /// per tick and the learned policy (gentle, about 0.25) is worth
    /// handing control to: the fallback taking over needlessly, or keeping
    /// control, shows in the score.
    Relay,
}

impl Scenario {
    /// Both, `Tuned` first.
    pub const ALL: [Scenario; 2] = [Scenario::Tuned, Scenario::Relay];

    /// The weight of the squared command in the score.
    pub const fn effort_weight(self) -> f32 {
        match self {
            Scenario::Tuned => 0.0,
            Scenario::Relay => 1.0,
        }
    }

    /// The score of a tick: the state reached, `a` the command applied.
    pub fn score(self, o: &SVector<f32, 4>, a: &SVector<f32, 1>) -> f32 {
        match self {
            Scenario::Tuned => score(o),
            Scenario::Relay => effort_score(o, a),
        }
    }

    /// The faults drilled: `Tuned` the first seven of [`Fault::ALL`] (by
    /// its state-only score a scaled-up output layer regulates better, not
    /// worse), `Relay` all of them.
    pub fn faults(self) -> &'static [Fault] {
        match self {
            Scenario::Tuned => &Fault::ALL[..7],
            Scenario::Relay => &Fault::ALL,
        }
    }

    /// The envelope the learned policy may act in: [`envelope`], with
    /// `|ẋ| ≤ 0.75` m/s for `Relay` — about the speed towards an end
    /// stop the fallback still stops the cart from at the envelope's edge
    /// (`|x| = 1.6`, pole upright; 1 m/s is lost there).
    pub fn envelope(self) -> Bounds<4> {
        let mut bounds = envelope();
        if self == Scenario::Relay {
            bounds.low[1] = -0.75;
            bounds.high[1] = 0.75;
        }
        bounds
    }

    /// The fallback.
    pub const fn fallback(self) -> Fallback {
        match self {
            Scenario::Tuned => Fallback::Pd(Pd(FALLBACK_GAINS)),
            Scenario::Relay => Fallback::Relay(Relay(FALLBACK_GAINS)),
        }
    }
}

/// The PD law `a = k·[x, ẋ, θ, θ̇]` (the plant clips to `[−1, 1]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pd(pub [f32; 4]);

impl Controller<4> for Pd {
    type Action = SVector<f32, 1>;

    fn act(&self, o: &SVector<f32, 4>) -> Result<SVector<f32, 1>, Error> {
        let k = self.0;
        Ok(SVector::from([k[0] * o[0]
            + k[1] * o[1]
            + k[2] * o[2]
            + k[3] * o[3]]))
    }
}

/// A relay on the PD law `k·[x, ẋ, θ, θ̇]`: `+1` where it is `≥ 0`, `−1`
/// elsewhere (full force either way).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Relay(pub [f32; 4]);

impl Controller<4> for Relay {
    type Action = SVector<f32, 1>;

    fn act(&self, o: &SVector<f32, 4>) -> Result<SVector<f32, 1>, Error> {
        let u = Pd(self.0).act(o)?[0];
        Ok(SVector::from([if u >= 0.0 { 1.0 } else { -1.0 }]))
    }
}

/// A [`Scenario`]'s fallback (one type for both, so that a firmware links
/// one drill).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fallback {
    /// See [`Pd`].
    Pd(Pd),
    /// See [`Relay`].
    Relay(Relay),
}

impl Controller<4> for Fallback {
    type Action = SVector<f32, 1>;

    fn act(&self, o: &SVector<f32, 4>) -> Result<SVector<f32, 1>, Error> {
        match self {
            Fallback::Pd(pd) => pd.act(o),
            Fallback::Relay(relay) => relay.act(o),
        }
    }
}

/// The score of a reading, per tick: the negated quadratic cost
/// `−((x/2.4)² + (θ/12°)²)` (0 at the centre, −1 on a bound of one).
pub fn score(o: &SVector<f32, 4>) -> f32 {
    let (x, th) = (o[0] / X_LIMIT, o[2] / THETA_LIMIT);
    -(x * x + th * th)
}

/// [`score`] with the actuator's effort charged: `score(o) − a²` for the
/// command `a` (in `[−1, 1]`) that led to `o` — an LQR-style cost.
pub fn effort_score(o: &SVector<f32, 4>, a: &SVector<f32, 1>) -> f32 {
    score(o) - a[0] * a[0]
}

/// The shield of every drill: CartPoleContinuous's `[−1, 1]`, at most 1.0
/// change per tick, and [`end_stops`].
pub fn shield_config() -> ShieldConfig<1> {
    ShieldConfig::<1>::symmetric(1.0).with_max_delta(1.0)
}

/// The safe set: near an end stop (`|x| ≥ 2`) no command pushing further out.
pub fn end_stops(o: &SVector<f32, 4>, a: SVector<f32, 1>) -> SVector<f32, 1> {
    if o[0] >= 2.0 && a[0] > 0.0 || o[0] <= -2.0 && a[0] < 0.0 {
        SVector::from([0.0])
    } else {
        a
    }
}

/// The envelope the learned policy may act in: `|x| ≤ 1.6` m, `|ẋ| ≤ 2`
/// m/s, `|θ| ≤ 4°`, `|θ̇| ≤ 0.75` rad/s.
pub fn envelope() -> Bounds<4> {
    let th = 4.0 * 2.0 * core::f32::consts::PI / 360.0;
    Bounds::new([-1.6, -2.0, -th, -0.75], [1.6, 2.0, th, 0.75])
}

/// The supervisor of every drill; `reference` is the fallback's mean score
/// on the tuning seeds ([`tuning_score`]).
pub fn supervisor_config(reference: f32) -> SupervisorConfig {
    SupervisorConfig {
        reentry_margin: 0.5,
        min_dwell: 25,
        stuck_ticks: 5,
        perf_alpha: 0.01,
        perf_reference: reference,
        perf_margin: 0.05,
        perf_warmup: 100,
    }
}

/// Mean per-tick [`score`] of `controller` (behind the shield) on the
/// tuning seeds, and the episodes' total return.
///
/// # Errors
/// The plant's errors.
pub fn tuning_score<C: Controller<4, Action = SVector<f32, 1>>>(
    controller: &C,
) -> Result<(f32, f32), Error> {
    tuning_score_in(Scenario::Tuned, controller)
}

/// [`tuning_score`] by `scenario`'s score.
///
/// # Errors
/// The plant's errors.
pub fn tuning_score_in<C: Controller<4, Action = SVector<f32, 1>>>(
    scenario: Scenario,
    controller: &C,
) -> Result<(f32, f32), Error> {
    let (mut sum, mut ticks, mut ret) = (0.0f64, 0u32, 0.0f32);
    for seed in TUNING_SEEDS {
        let mut rng = Xoshiro128pp::seed_from_u64(seed);
        let mut env = CartPoleContinuous::new();
        let mut obs = env.reset(&mut rng);
        let mut shield = Shield::new(shield_config(), end_stops)?;
        loop {
            let a = controller
                .act(&obs)
                .unwrap_or(SVector::from_element(f32::NAN));
            let a = shield.apply(&obs, a).action;
            let step = env.step(a)?;
            obs = step.obs;
            ret += step.reward;
            sum += f64::from(scenario.score(&obs, &a));
            ticks += 1;
            if step.done() {
                break;
            }
        }
    }
    Ok(((sum / f64::from(ticks.max(1))) as f32, ret))
}

/// One drill of `scenario` with `fault`, acted by `arm`: `trained` inside a
/// [`Guarded`] with the scenario's fallback, the supervisor's reference its
/// tuning score and the last good policy's score the trained one's (by the
/// scenario's score; the last good policy stored in `store`, which
/// must hold the policy's encoding), `candidate` the learner's publish
/// buffer, faulty updates corrupting the policy's first `weight_tensors`
/// tensors (its network's). The fallback-only arm is the same [`Guarded`]
/// with an envelope the learned policy is never inside.
///
/// # Errors
/// [`Error::InvalidConfig`] for a `store` of the wrong size, and the
/// plant's errors.
pub fn drill<P>(
    scenario: Scenario,
    fault: Fault,
    arm: Arm,
    trained: &P,
    candidate: &mut P,
    store: &mut [u8],
    weight_tensors: usize,
) -> Result<Drill<EPISODES>, Error>
where
    P: Controller<4, Action = SVector<f32, 1>> + Params + Clone + PartialEq,
{
    let fallback = scenario.fallback();
    let (reference, _) = tuning_score_in(scenario, &fallback)?;
    let (learned_score, _) = tuning_score_in(scenario, trained)?;
    let fallback_only = arm == Arm::Fallback;
    let bounds = scenario.envelope();
    let margin = move |o: &SVector<f32, 4>| {
        if fallback_only {
            -1.0
        } else {
            bounds.margin(o)
        }
    };
    let mut guarded = Guarded::new(
        trained.clone(),
        learned_score,
        fallback,
        Supervisor::new(supervisor_config(reference), margin)?,
        Shield::new(shield_config(), end_stops)?,
        Rollback::new(RollbackConfig::new(200, 0.05), store)?,
        Watchdog::new(WatchdogConfig::new(200))?,
    )?;
    let config = drill_config(weight_tensors);
    let mut env = CartPoleContinuous::new();
    super::run(
        &mut env,
        &mut guarded,
        arm,
        fault,
        &config,
        trained,
        candidate,
        |o, a| scenario.score(o, a),
    )
}
