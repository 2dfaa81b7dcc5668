//! Unit tests of each piece, and fault injection on `CartPoleContinuous`.
//!
//! The fault-injection runs (see the [module docs](super)) use a policy
//! trained here by PPO and a PD fallback whose gains are the optimum of a
//! grid on tuning seeds ([`FALLBACK_GAINS`], re-derived by
//! `fallback_gains_are_the_grid_optimum_on_tuning_seeds`). Every run's
//! start states come from [`FAULT_SEED`], which neither training nor tuning
//! uses.

use super::drill::{self, Arm, Drill, Fault};
use super::*;
use crate::agent;
use crate::algo::PpoConfig;
use crate::env::CartPoleContinuous;

use crate::policy::CategoricalActor;
use crate::train::{Deployed, RunConfig, Trainer};
use crate::{Error, Params, SVector, serialize};
use rand_xoshiro::Xoshiro128PlusPlus;
use std::sync::OnceLock;
use std::vec::Vec;
use std::{format, println, string::String};

// ---------------------------------------------------------------- shield

fn v1(x: f32) -> SVector<f32, 1> {
    SVector::from([x])
}

#[test]
fn shield_clips_to_bounds_and_reports_the_applied_action() {
    let mut shield = Shield::new(ShieldConfig::new([-2.0], [1.0]), Unconstrained).unwrap();
    let obs = SVector::<f32, 2>::zeros();
    let s = shield.apply(&obs, v1(5.0));
    assert_eq!((s.proposed[0], s.action[0]), (5.0, 1.0));
    assert!(s.interventions.has(Interventions::BOUNDS) && s.intervened());
    let s = shield.apply(&obs, v1(-3.0));
    assert_eq!(s.action[0], -2.0);
    let s = shield.apply(&obs, v1(0.5));
    assert_eq!(s.action[0], 0.5);
    assert!(!s.intervened());
    assert_eq!(shield.stats.ticks, 3);
    assert_eq!(shield.stats.interventions, 2);
    assert_eq!(shield.stats.bounds, 2);
    assert_eq!(shield.last_applied(), Some(v1(0.5)));
}

#[test]
fn shield_rate_limit_bounds_every_change_and_reset_lifts_it() {
    let config = ShieldConfig::<1>::symmetric(1.0).with_max_delta(0.25);
    let mut shield = Shield::new(config, Unconstrained).unwrap();
    let obs = SVector::<f32, 1>::zeros();
    assert_eq!(shield.apply(&obs, v1(1.0)).action[0], 1.0); // first: no previous
    let mut last = 1.0f32;
    for target in [-1.0, -1.0, 0.9, 0.3, -0.6, 1.0] {
        let s = shield.apply(&obs, v1(target));
        assert!((s.action[0] - last).abs() <= 0.25 + 1e-7, "{s:?}");
        assert_eq!(
            s.interventions.has(Interventions::RATE),
            (target - last).abs() > 0.25
        );
        last = s.action[0];
    }
    assert_eq!(shield.stats.rate, 6);
    shield.reset();
    assert_eq!(shield.apply(&obs, v1(-1.0)).action[0], -1.0);
    shield.reset_to(v1(f32::NAN)); // a NaN actuator reading: the safe action
    assert_eq!(shield.apply(&obs, v1(1.0)).action[0], 0.25);
}

#[test]
fn shield_replaces_non_finite_proposals_and_applies_the_safe_set() {
    // Safe set: with obs[0] > 0, only non-positive commands are safe.
    let safe = |obs: &SVector<f32, 1>, a: SVector<f32, 1>| {
        if obs[0] > 0.0 { v1(a[0].min(0.0)) } else { a }
    };
    let config = ShieldConfig {
        safe_action: [-0.5],
        ..ShieldConfig::<1>::symmetric(1.0)
    };
    let mut shield = Shield::new(config, safe).unwrap();
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let s = shield.apply(&v1(-1.0), v1(bad));
        assert_eq!(s.action[0], -0.5);
        assert!(s.interventions.has(Interventions::NON_FINITE));
    }
    let s = shield.apply(&v1(1.0), v1(0.7));
    assert_eq!(s.action[0], 0.0);
    assert_eq!(s.interventions, Interventions(Interventions::SAFE_SET));
    assert_eq!(shield.apply(&v1(1.0), v1(-0.7)).action[0], -0.7);
    // A safe-set map that returns NaN gets the safe action.
    let mut broken = Shield::new(config, |_: &SVector<f32, 1>, _| v1(f32::NAN)).unwrap();
    let s = broken.apply(&v1(0.0), v1(0.3));
    assert_eq!(s.action[0], -0.5);
    assert!(s.interventions.has(Interventions::SAFE_SET));
    assert_eq!(shield.stats.non_finite, 3);
    assert_eq!(shield.stats.safe_set, 1);
}

#[test]
fn shield_config_validation_names_the_field() {
    let ok = ShieldConfig::<2>::symmetric(1.0);
    assert_eq!(ok.validate(), Ok(()));
    let field = |c: ShieldConfig<2>| match c.validate() {
        Err(Error::InvalidConfig { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        field(ShieldConfig {
            low: [f32::NAN, 0.0],
            ..ok
        }),
        "low"
    );
    assert_eq!(
        field(ShieldConfig {
            high: [1.0, f32::INFINITY],
            ..ok
        }),
        "high"
    );
    assert_eq!(field(ShieldConfig::new([1.0, 0.0], [0.0, 1.0])), "high");
    assert_eq!(field(ok.with_max_delta(-1.0)), "max_delta");
    assert_eq!(field(ok.with_max_delta(f32::NAN)), "max_delta");
    assert_eq!(
        field(ShieldConfig {
            safe_action: [2.0, 0.0],
            ..ok
        }),
        "safe_action"
    );
    assert!(Shield::new(ok.with_max_delta(0.0), Unconstrained).is_err());
    assert_eq!(ShieldConfig::new([0.0], [4.0]).safe_action, [2.0]);
}

// ------------------------------------------------------------ supervisor

fn sup(config: SupervisorConfig) -> Supervisor<1, Bounds<1>> {
    Supervisor::new(config, Bounds::new([-1.0], [1.0])).unwrap()
}

#[test]
fn supervisor_switches_on_leaving_the_envelope_with_hysteresis() {
    let config = SupervisorConfig {
        min_dwell: 3,
        reentry_margin: 0.5,
        stuck_ticks: 0,
        ..SupervisorConfig::DEFAULT
    };
    let mut s = sup(config);
    assert_eq!(s.observe(&v1(0.9)).mode, Mode::Learned);
    let d = s.observe(&v1(1.1));
    assert_eq!(
        (d.mode, d.switched_to_fallback),
        (Mode::Fallback, Some(Cause::Envelope))
    );
    // Inside but not in the re-entry band (|x| ≤ 0.5): stays with the fallback.
    for x in [0.9, 0.8, 0.7, 0.6] {
        assert_eq!(s.observe(&v1(x)).mode, Mode::Fallback, "{x}");
    }
    // In the band, dwell long past: hands back.
    let d = s.observe(&v1(0.4));
    assert!(d.handed_back && d.mode == Mode::Learned);
    // Dwell: back in the band at once, but only after 3 ticks under the fallback.
    s.observe(&v1(-2.0));
    assert_eq!(s.observe(&v1(0.0)).mode, Mode::Fallback);
    assert_eq!(s.observe(&v1(0.0)).mode, Mode::Fallback);
    assert_eq!(s.observe(&v1(0.0)).mode, Mode::Learned);
    let st = s.stats;
    assert_eq!((st.to_fallback, st.to_learned, st.envelope), (2, 2, 2));
    assert_eq!(st.ticks_learned + st.ticks_fallback, 11);
    assert_eq!(st.ticks_fallback, 8);
}

#[test]
fn supervisor_holds_the_last_finite_reading_for_nan_sensors() {
    let mut s = sup(SupervisorConfig {
        min_dwell: 0,
        ..SupervisorConfig::DEFAULT
    });
    s.observe(&v1(0.25));
    for bad in [f32::NAN, f32::INFINITY] {
        let d = s.observe(&v1(bad));
        assert_eq!(d.mode, Mode::Fallback);
        assert_eq!(d.obs[0], 0.25);
    }
    assert_eq!(s.stats.non_finite, 1); // one switch
    assert_eq!(s.stats.non_finite_obs, 2);
    assert_eq!(s.observe(&v1(0.0)).mode, Mode::Learned);
    // No finite reading ever: zeros.
    let mut fresh = sup(SupervisorConfig::DEFAULT);
    assert_eq!(fresh.observe(&v1(f32::NAN)).obs[0], 0.0);
}

#[test]
fn supervisor_detects_a_stuck_sensor_after_k_identical_readings() {
    let mut s = sup(SupervisorConfig {
        stuck_ticks: 4,
        min_dwell: 0,
        ..SupervisorConfig::DEFAULT
    });
    for _ in 0..3 {
        assert_eq!(s.observe(&v1(0.1)).mode, Mode::Learned);
    }
    let d = s.observe(&v1(0.1)); // the 4th identical reading
    assert_eq!(d.switched_to_fallback, Some(Cause::Stuck));
    assert_eq!(s.observe(&v1(0.1)).mode, Mode::Fallback);
    // -0.0 and 0.0 differ in their bits: a changing reading.
    assert_eq!(s.observe(&v1(0.2)).mode, Mode::Learned);
    assert_eq!((s.stats.stuck, s.stats.stuck_obs), (1, 2));
    // Disabled with 0.
    let mut off = sup(SupervisorConfig {
        stuck_ticks: 0,
        ..SupervisorConfig::DEFAULT
    });
    assert!((0..100).all(|_| off.observe(&v1(0.1)).mode == Mode::Learned));
}

#[test]
fn supervisor_trips_on_performance_below_the_reference_and_latches() {
    let mut s = sup(SupervisorConfig {
        perf_alpha: 0.5,
        perf_reference: 1.0,
        perf_margin: 0.25,
        perf_warmup: 2,
        min_dwell: 0,
        stuck_ticks: 0,
        ..SupervisorConfig::DEFAULT
    });
    s.observe(&v1(0.0));
    s.record(0.5); // m = 0.5 < 0.75, but in warm-up
    assert_eq!(s.observe(&v1(0.01)).mode, Mode::Learned);
    s.record(1.0); // m = 0.75: not below
    assert_eq!(s.observe(&v1(0.02)).mode, Mode::Learned);
    s.record(0.5); // m = 0.625 < 0.75: trips
    assert_eq!(s.performance(), Some(0.625));
    let d = s.observe(&v1(0.03));
    assert_eq!(d.switched_to_fallback, Some(Cause::Performance));
    s.record(-100.0); // the fallback's score: ignored
    assert_eq!(s.performance(), Some(0.625));
    // Latched: stays with the fallback in the band, until a new policy.
    assert!((0..10).all(|i| s.observe(&v1(i as f32 * 0.01)).mode == Mode::Fallback));
    s.policy_published();
    assert_eq!(s.observe(&v1(0.0)).mode, Mode::Learned);
    assert_eq!(s.performance(), None);
    assert_eq!(s.stats.performance, 1);
}

#[test]
fn supervisor_policy_errors_and_latch() {
    let mut s = sup(SupervisorConfig {
        min_dwell: 0,
        ..SupervisorConfig::DEFAULT
    });
    s.observe(&v1(0.0));
    s.policy_failed();
    assert_eq!((s.mode(), s.acted()), (Mode::Fallback, Mode::Fallback));
    assert_eq!((s.stats.ticks_learned, s.stats.ticks_fallback), (0, 1));
    assert_eq!(s.observe(&v1(0.1)).mode, Mode::Learned);
    s.latch();
    assert_eq!(s.cause(), Some(Cause::Refused));
    assert!((0..5).all(|i| s.observe(&v1(0.01 * i as f32)).mode == Mode::Fallback));
    s.policy_published();
    assert_eq!(s.observe(&v1(0.0)).mode, Mode::Learned);
    assert_eq!((s.stats.policy_error, s.stats.refused), (1, 1));
}

#[test]
fn supervisor_and_bounds_validation_names_the_field() {
    let field = |c: SupervisorConfig| match c.validate() {
        Err(Error::InvalidConfig { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    let d = SupervisorConfig::DEFAULT;
    assert_eq!(d.validate(), Ok(()));
    assert_eq!(
        field(SupervisorConfig {
            reentry_margin: -0.1,
            ..d
        }),
        "reentry_margin"
    );
    assert_eq!(
        field(SupervisorConfig {
            stuck_ticks: 1,
            ..d
        }),
        "stuck_ticks"
    );
    assert_eq!(
        field(SupervisorConfig {
            perf_alpha: 1.5,
            ..d
        }),
        "perf_alpha"
    );
    assert_eq!(
        field(SupervisorConfig {
            perf_reference: f32::NAN,
            ..d
        }),
        "perf_reference"
    );
    assert_eq!(
        field(SupervisorConfig {
            perf_margin: -1.0,
            ..d
        }),
        "perf_margin"
    );
    assert_eq!(
        Bounds::new([1.0], [1.0]).validate(),
        Err(Error::config("envelope.high", "must be > envelope.low"))
    );
    assert!(Bounds::new([f32::NAN], [1.0]).validate().is_err());
    assert!(
        Bounds::new([-f32::INFINITY], [f32::INFINITY])
            .validate()
            .is_ok()
    );
    // A closure is an envelope too.
    let disc = |o: &SVector<f32, 2>| 1.0 - (o[0] * o[0] + o[1] * o[1]);
    assert!(Envelope::margin(&disc, &SVector::from([2.0, 0.0])) < 0.0);
}

// -------------------------------------------------------------- rollback

type Tiny = CategoricalActor<crate::nn::Mlp<2, 4, 2>>;

fn tiny(bias: f32) -> Tiny {
    let mut p = Tiny::ZERO;
    p.net.first.bias.fill(bias);
    p
}

#[test]
fn rollback_promotes_a_policy_that_stays_good_and_restores_a_worse_one() {
    let mut store = [0u8; serialize::encoded_len::<Tiny>()];
    let mut rb = Rollback::new(RollbackConfig::new(3, 0.5), &mut store[..]).unwrap();
    let mut acting = tiny(1.0);
    // No trial yet: scores are ignored.
    assert_eq!(rb.record(-9.0, &mut acting), Ok(Verdict::Pending));
    rb.commit(&acting, 2.0).unwrap();
    // Within the margin: promoted, and its mean is the new reference.
    acting = tiny(2.0);
    rb.published();
    assert!(rb.on_trial());
    for s in [1.5, 2.0] {
        assert_eq!(rb.record(s, &mut acting), Ok(Verdict::Pending));
    }
    assert_eq!(rb.record(f32::NAN, &mut acting), Ok(Verdict::Pending)); // ignored
    assert_eq!(
        rb.record(1.6, &mut acting),
        Ok(Verdict::Promoted { mean: 1.7 })
    );
    assert_eq!(rb.good_score(), Some(1.7));
    assert!(!rb.on_trial());
    // Worse by more than the margin: the promoted policy is restored.
    acting = tiny(-5.0);
    rb.published();
    for s in [1.0, 1.0] {
        rb.record(s, &mut acting).unwrap();
    }
    assert_eq!(
        rb.record(1.0, &mut acting),
        Ok(Verdict::RolledBack { mean: 1.0 })
    );
    assert_eq!(acting, tiny(2.0));
    // Rejected at once.
    acting = tiny(-6.0);
    rb.published();
    assert!(matches!(rb.reject(&mut acting), Ok(Verdict::RolledBack { mean }) if mean.is_nan()));
    assert_eq!(acting, tiny(2.0));
    let st = rb.stats;
    assert_eq!(
        (
            st.trials,
            st.promoted,
            st.rolled_back,
            st.writes,
            st.corrupt
        ),
        (3, 1, 2, 2, 0)
    );
}

#[test]
fn rollback_detects_a_corrupted_blob_and_never_loads_it() {
    let mut store = [0u8; serialize::encoded_len::<Tiny>() + 7]; // a larger "flash page"
    let mut rb = Rollback::new(RollbackConfig::new(1, 0.0), &mut store[..]).unwrap();
    let mut acting = tiny(1.0);
    assert!(matches!(
        rb.restore(&mut acting),
        Err(Error::InvalidState { .. })
    ));
    rb.commit(&acting, 1.0).unwrap();
    assert_eq!(rb.check::<Tiny>(), Ok(()));
    // One bit flips in the stored weights.
    let at = serialize::HEADER_LEN + serialize::TENSOR_DESCRIPTOR_LEN * Tiny::TENSORS + 3;
    rb.store_mut()[at] ^= 0x10;
    assert_eq!(rb.check::<Tiny>(), Err(Error::ChecksumMismatch));
    acting = tiny(-4.0);
    rb.published();
    assert_eq!(rb.record(0.0, &mut acting), Err(Error::ChecksumMismatch));
    assert_eq!(acting, tiny(-4.0)); // never loaded
    assert!(!rb.on_trial());
    assert_eq!(rb.stats.corrupt, 2);
    assert_eq!(rb.stats.rolled_back, 0);
    // A store too small for the policy.
    let mut small = [0u8; 8];
    let mut rb = Rollback::new(RollbackConfig::DEFAULT, &mut small[..]).unwrap();
    assert_eq!(rb.commit(&acting, 0.0), Err(Error::BufferTooSmall));
    assert_eq!(rb.commit(&acting, f32::NAN), Err(Error::NonFinite));
    assert_eq!(
        RollbackConfig::new(1, f32::NAN).validate(),
        Err(Error::config("margin", "must be finite and >= 0"))
    );
}

// -------------------------------------------------------------- watchdog

#[test]
fn watchdog_refuses_each_cause_and_counts_it() {
    let mut wd = Watchdog::new(WatchdogConfig::new(5)).unwrap();
    let mut acting = tiny(1.0);
    let good = tiny(2.0);
    assert_eq!(
        wd.review(Err::<(), _>(Error::GradientOverflow), &good, 1, &mut acting),
        Err(Refusal::Learner(Error::GradientOverflow))
    );
    // Every weight is checked: a NaN in the very last one is found.
    let mut poisoned = good.clone();
    let last = Tiny::LEN - 1;
    *poisoned.get_flat_mut(last).unwrap() = f32::INFINITY;
    assert_eq!(
        wd.review(Ok(()), &poisoned, 1, &mut acting),
        Err(Refusal::NonFinite { index: last as u32 })
    );
    assert_eq!(
        wd.review(Ok(()), &good, 6, &mut acting),
        Err(Refusal::Overrun { duration: 6 })
    );
    assert_eq!(acting, tiny(1.0));
    assert_eq!(wd.review(Ok(()), &good, 5, &mut acting), Ok(()));
    assert_eq!(acting, good);
    let st = wd.stats;
    assert_eq!(
        (st.learner, st.non_finite, st.overrun, st.published),
        (1, 1, 1, 1)
    );
    // Out of domain: a Gaussian log σ beyond its limit.
    type G = crate::policy::GaussianActor<crate::nn::Mlp<2, 4, 1>, 1>;
    let mut g = G::ZERO;
    let mut wild = G::ZERO;
    wild.head.log_std[0] = 100.0;
    assert!(matches!(
        wd.review(Ok(()), &wild, 0, &mut g),
        Err(Refusal::OutOfDomain(Error::OutOfDomain { .. }))
    ));
    assert_eq!(wd.stats.out_of_domain, 1);
}

#[test]
fn watchdog_notices_an_update_that_never_ends() {
    let mut wd = Watchdog::new(WatchdogConfig::new(10)).unwrap();
    let mut acting = tiny(1.0);
    assert!(!wd.overdue(100));
    wd.begin(u32::MAX - 3); // the clock wraps during the update
    assert!(wd.running());
    assert!(!wd.overdue(6)); // 10 ticks
    assert!(wd.overdue(7)); // 11 ticks
    assert!(wd.overdue(500));
    assert_eq!(wd.stats.overrun, 1); // counted once
    assert_eq!(
        wd.finish(900, Ok(()), &tiny(3.0), &mut acting),
        Err(Refusal::Overrun { duration: 904 })
    );
    assert_eq!(wd.stats.overrun, 1);
    assert!(!wd.running());
    assert_eq!(acting, tiny(1.0));
    assert!(matches!(
        wd.finish(901, Ok(()), &tiny(3.0), &mut acting),
        Err(Refusal::Learner(Error::InvalidState { .. }))
    ));
    wd.begin(0);
    assert_eq!(wd.finish(10, Ok(()), &tiny(3.0), &mut acting), Ok(()));
    assert_eq!(acting, tiny(3.0));
}

// ------------------------------------------------------- fault injection

use drill::cartpole::{FALLBACK_GAINS, Pd, tuning_score};

const EPISODES: usize = drill::cartpole::EPISODES;

type Agent = agent::Ppo<CartPoleContinuous, 64, 2048>;
type Learned = Deployed<Agent>;

/// A policy trained by PPO on CartPoleContinuous (seed 0, the harness's
/// tuned configuration), to a held-out mean ≥ 475.
fn learned() -> &'static Learned {
    static LEARNED: OnceLock<Learned> = OnceLock::new();
    LEARNED.get_or_init(|| {
        let steps = 200_000;
        let config = PpoConfig {
            total_steps: steps,
            ..PpoConfig::CARTPOLE_CONTINUOUS
        };
        let mut agent = std::boxed::Box::new(Agent::new(config));
        let (mut env, mut eval_env) = (CartPoleContinuous::new(), CartPoleContinuous::new());
        let mut trainer = Trainer::<_, Xoshiro128PlusPlus>::start(
            &mut *agent,
            &mut env,
            RunConfig::new(steps, 475.0),
            0,
        )
        .unwrap();
        let outcome = trainer
            .run(&mut *agent, &mut env, &mut eval_env, &mut ())
            .unwrap();
        assert!(outcome.report.mean >= 475.0, "{outcome:?}");
        agent.policy()
    })
}

/// What a run did.
#[derive(Clone, Debug, Default)]
struct Run {
    returns: Vec<f32>,
    /// Mean score per tick over the run.
    mean_score: f32,
    /// No episode terminated.
    held: bool,
    /// A readable account of the pieces' counters.
    what: String,
    /// The acting policy at the end equals the trained one, bit for bit.
    policy_intact: bool,
}

impl Run {
    fn total(&self) -> f32 {
        self.returns.iter().sum()
    }
}

/// One drill of [`EPISODES`] episodes with `fault`, acted by `arm`
/// ([`drill::cartpole::drill`]).
fn run(fault: Fault, arm: Arm) -> Run {
    let trained = learned();
    let mut store = [0u8; serialize::encoded_len::<Learned>()];
    let mut candidate = trained.clone();
    let d: Drill<EPISODES> = drill::cartpole::drill(
        drill::cartpole::Scenario::Tuned,
        fault,
        arm,
        trained,
        &mut candidate,
        &mut store,
        <crate::nn::Mlp<4, 64, 1> as Params>::TENSORS,
    )
    .unwrap();
    let (sv, sh, rb, wd) = (d.supervisor, d.shield, d.rollback, d.watchdog);
    let refusals = d.refusals;
    Run {
        returns: d.returns.to_vec(),
        mean_score: d.mean_score,
        held: d.held,
        policy_intact: d.policy_intact,
        what: match arm {
            Arm::Guarded => format!(
                "switches {}→fallback ({}) / {}→learned; fallback ticks {}/{}; readings NaN {}, stuck {}; \
                 shield {} interventions; watchdog refused {refusals} (NaN {}, overrun {}), published {}; \
                 rollback {} (corrupt {})",
                sv.to_fallback,
                causes(&sv),
                sv.to_learned,
                sv.ticks_fallback,
                sv.ticks_fallback + sv.ticks_learned,
                sv.non_finite_obs,
                sv.stuck_obs,
                sh.interventions,
                wd.non_finite,
                wd.overrun,
                wd.published,
                rb.rolled_back,
                rb.corrupt,
            ),
            _ => String::new(),
        },
    }
}

fn causes(s: &SupervisorStats) -> String {
    let mut parts = Vec::new();
    for (n, name) in [
        (s.non_finite, "NaN"),
        (s.stuck, "stuck"),
        (s.envelope, "envelope"),
        (s.performance, "performance"),
        (s.policy_error, "policy error"),
        (s.refused, "refused"),
    ] {
        if n > 0 {
            parts.push(format!("{name} {n}"));
        }
    }
    if parts.is_empty() {
        String::from("-")
    } else {
        parts.join(", ")
    }
}

/// The claim of every fault run: the guarded run holds the envelope (no
/// episode terminates) and its return is at least the fallback-only run's
/// in every episode (hence over the run: the sum over the 5 episodes).
fn assert_safe(fault: Fault) -> (Run, Run) {
    let guarded = run(fault, Arm::Guarded);
    let fallback = run(fault, Arm::Fallback);
    assert!(guarded.held, "{fault:?}: envelope left: {guarded:?}");
    for (k, (g, f)) in guarded.returns.iter().zip(&fallback.returns).enumerate() {
        assert!(g >= f, "{fault:?}: episode {k}: guarded {g} < fallback {f}");
    }
    assert!(guarded.total() >= fallback.total());
    (guarded, fallback)
}

#[test]
fn fault_poisoned_update_is_refused_and_the_previous_policy_keeps_acting() {
    let (g, _) = assert_safe(Fault::PoisonedUpdate);
    assert!(g.policy_intact, "{g:?}");
    assert!(
        g.what
            .contains("watchdog refused 5 (NaN 5, overrun 0), published 0;"),
        "{}",
        g.what
    );
    // Without the watchdog the NaN policy errs on every tick.
    let u = run(Fault::PoisonedUpdate, Arm::Unguarded);
    assert!(!u.held, "{u:?}");
}

/// The maths tier these tests run with (`micromath` takes precedence).
const FAST_MATH: bool = cfg!(all(feature = "fast-math", not(feature = "micromath")));

#[test]
fn fault_nan_sensors_hand_control_to_the_fallback_which_coasts() {
    let (g, _) = assert_safe(Fault::NanSensors);
    // The switch itself, in the two episodes the learned policy still acts
    // in (the performance check latches the PD in after about 800 ticks)…
    // (One with the `fast-math` backend, whose last bits move the first
    // episode's performance latch ahead of the NaN readings.)
    let nan_switches = if FAST_MATH { 1 } else { 2 };
    assert!(
        g.what
            .contains(&std::format!("(NaN {nan_switches}, performance 1)")),
        "{}",
        g.what
    );
    // …and every NaN reading seen.
    assert!(g.what.contains("readings NaN 50,"), "{}", g.what);
    assert!(g.policy_intact);
}

#[test]
fn fault_stuck_sensor_is_detected_after_k_readings() {
    let (g, _) = assert_safe(Fault::StuckSensor);
    // The switch itself, in the two episodes the learned policy still acts
    // in (the performance check latches the PD in after about 800 ticks)…
    let stuck_switches = if FAST_MATH { 1 } else { 2 };
    assert!(
        g.what
            .contains(&std::format!("(stuck {stuck_switches}, performance 1)")),
        "{}",
        g.what
    );
    // …and the reading of tick 99 repeats for 20 more ticks: 21 identical
    // readings per episode, judged stuck from the 5th on: 17.
    assert!(g.what.contains("stuck 85;"), "{}", g.what);
}

#[test]
fn fault_diverging_update_is_rolled_back_to_the_last_good_policy() {
    let (g, _) = assert_safe(Fault::DivergingUpdate);
    // Each episode's published policy was rolled back, bit for bit.
    assert!(g.policy_intact, "{g:?}");
    assert!(
        g.what.contains(&format!("rollback {EPISODES} ")),
        "{}",
        g.what
    );
    // The fault is real: acting alone, the diverged policy fails.
    let u = run(Fault::DivergingUpdate, Arm::Unguarded);
    assert!(u.total() < g.total(), "{u:?}");
}

#[test]
fn fault_diverging_update_with_a_corrupt_store_latches_the_fallback() {
    let (g, _) = assert_safe(Fault::DivergingCorruptStore);
    assert!(!g.policy_intact); // nothing was loaded from the corrupt store
    // Every rollback failed on the CRC; the fallback kept control instead.
    assert!(
        g.what.contains(&format!("rollback 0 (corrupt {EPISODES})")),
        "{}",
        g.what
    );
}

#[test]
fn fault_overrun_update_is_refused_and_the_loop_keeps_acting() {
    let (g, _) = assert_safe(Fault::OverrunUpdate);
    assert!(g.policy_intact, "{g:?}");
    // Noticed while running (counted once each) and refused when it ended.
    assert!(
        g.what
            .contains("watchdog refused 5 (NaN 0, overrun 5), published 0;"),
        "{}",
        g.what
    );
}

#[test]
fn nominal_run_is_safe_too() {
    let (g, _) = assert_safe(Fault::Nominal);
    assert!(g.policy_intact);
}

/// The table of the module docs: `cargo test -p microrl --lib
/// safety::tests::fault_table -- --nocapture`.
#[test]
fn fault_table() {
    println!(
        "| fault | what happened (guarded) | envelope held guarded / fallback / unguarded | return guarded / fallback / unguarded (5 episodes) | mean score guarded / fallback |"
    );
    println!("|---|---|---|---|---|");
    let yes = |b: bool| if b { "yes" } else { "**no**" };
    for &fault in drill::cartpole::Scenario::Tuned.faults() {
        let (g, f) = assert_safe(fault);
        let u = run(fault, Arm::Unguarded);
        println!(
            "| {fault:?} | {} | {} / {} / {} | {} / {} / {} | {:.4} / {:.4} |",
            g.what,
            yes(g.held),
            yes(f.held),
            yes(u.held),
            g.total(),
            f.total(),
            u.total(),
            g.mean_score,
            f.mean_score,
        );
    }
}

/// The fallback's gains are the best of a grid on [`TUNING_SEEDS`]: the
/// largest total return, ties broken by the best mean score.
#[test]
fn fallback_gains_are_the_grid_optimum_on_tuning_seeds() {
    let mut best = ([0.0f32; 4], f32::MIN, f32::MIN);
    for kx in [0.0, 0.4, 1.6, 6.4, 25.6] {
        for kv in [0.0, 0.8, 3.2, 12.8, 51.2] {
            for kt in [8.0, 32.0, 128.0, 512.0] {
                for kw in [1.0, 4.0, 16.0, 64.0] {
                    let k = [kx, kv, kt, kw];
                    let (s, r) = tuning_score(&Pd(k)).unwrap();
                    if (r, s) > (best.1, best.2) {
                        best = (k, r, s);
                    }
                }
            }
        }
    }
    println!(
        "best gains {:?}: return {} score {}",
        best.0, best.1, best.2
    );
    assert_eq!(best.0, FALLBACK_GAINS);
}

// --------------------------------------------------------------- guarded

type Small = crate::policy::Policy<crate::policy::GaussianActor<crate::nn::Mlp<2, 4, 1>, 1>, 2>;

/// A policy whose command is `bias` everywhere (clipped to ±1).
fn constant(bias: f32) -> Small {
    let mut p = Small::ZERO;
    p.space = crate::env::Continuous::symmetric(1.0);
    p.actor.net.second.second.bias[0] = bias;
    p
}

#[test]
fn guarded_composes_the_pieces() {
    // Fallback: 0.75, or an error when obs[1] > 5.
    let fallback = |o: &SVector<f32, 2>| {
        if o[1] > 5.0 {
            Err(Error::Plant { what: "fallback" })
        } else {
            Ok(v1(0.75))
        }
    };
    let mut store = [0u8; serialize::encoded_len::<Small>()];
    let mut g = Guarded::new(
        constant(0.25),
        1.0,
        fallback,
        Supervisor::new(
            SupervisorConfig {
                min_dwell: 1,
                stuck_ticks: 0,
                ..SupervisorConfig::DEFAULT
            },
            Bounds::new([-1.0, -10.0], [1.0, 10.0]),
        )
        .unwrap(),
        Shield::new(ShieldConfig::<1>::symmetric(1.0), Unconstrained).unwrap(),
        Rollback::new(RollbackConfig::new(2, 0.5), &mut store[..]).unwrap(),
        Watchdog::new(WatchdogConfig::new(10)).unwrap(),
    )
    .unwrap();
    let origin = SVector::from([0.0, 0.0]);
    let t = g.act(&origin);
    assert_eq!((t.mode, t.action[0]), (Mode::Learned, 0.25));
    assert_eq!(g.record(1.0), Ok(Verdict::Pending)); // no trial
    // A published policy acts from the next tick, on trial.
    assert_eq!(g.publish(Ok(()), &constant(-0.5), 1), Ok(()));
    assert!(g.rollback.on_trial());
    assert_eq!(g.act(&origin).action[0], -0.5);
    // Its error hands control to the fallback on the spot and rolls it back.
    g.policy.actor.net.first.bias[0] = f32::NAN;
    let t = g.act(&origin);
    assert_eq!(t.mode, Mode::Fallback);
    assert_eq!(t.switched_to_fallback, Some(Cause::PolicyError));
    assert!(t.rolled_back && t.rollback_error.is_none());
    assert_eq!(t.action[0], 0.75);
    assert_eq!(g.policy, constant(0.25));
    // The fallback's error: the safe action (0).
    let t = g.act(&SVector::from([0.0, 6.0]));
    assert_eq!((t.mode, t.action[0]), (Mode::Fallback, 0.0));
    assert!(t.interventions.has(Interventions::NON_FINITE));
    // Back to the learned policy; a NaN reading: the safe action, not the
    // fallback's 0.75 on the held reading.
    assert_eq!(g.act(&origin).mode, Mode::Learned);
    let t = g.act(&SVector::from([f32::NAN, 0.0]));
    assert_eq!((t.mode, t.action[0]), (Mode::Fallback, 0.0));
    g.stale_command = StaleCommand::Fallback;
    assert_eq!(g.act(&SVector::from([f32::NAN, 0.0])).action[0], 0.75);
    g.stale_command = StaleCommand::SafeAction;
    // A trial that stays good over its window is promoted.
    assert_eq!(g.act(&origin).mode, Mode::Learned);
    g.publish(Ok(()), &constant(0.5), 1).unwrap();
    assert_eq!(g.act(&origin).action[0], 0.5);
    assert_eq!(g.record(0.75), Ok(Verdict::Pending));
    assert_eq!(g.act(&origin).action[0], 0.5);
    assert_eq!(g.record(0.75), Ok(Verdict::Promoted { mean: 0.75 }));
    assert_eq!(g.rollback.stats.promoted, 1);
    assert_eq!(g.rollback.good_score(), Some(0.75));
    // A refused publish keeps the previous policy acting.
    assert!(
        g.publish(Err::<(), _>(Error::GradientOverflow), &constant(-1.0), 1)
            .is_err()
    );
    assert_eq!(g.act(&origin).action[0], 0.5);
    assert_eq!(g.watchdog.stats.learner, 1);
    // A corrupt store: the rollback fails, the fallback is latched.
    g.publish(Ok(()), &constant(-0.75), 1).unwrap();
    g.rollback.store_mut()[40] ^= 1;
    g.policy.actor.net.first.bias[0] = f32::NAN;
    let t = g.act(&origin);
    assert_eq!(t.rollback_error, Some(Error::ChecksumMismatch));
    assert!((0..5).all(|_| g.act(&origin).mode == Mode::Fallback));
}
