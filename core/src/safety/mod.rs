//! The safety net for learning while controlling: the pieces that keep a
//! plant safe while a policy that is still learning acts on it.
//!
//! Four pieces, each usable alone, composed by [`Guarded`]:
//!
//! | piece | protects against | literature |
//! |---|---|---|
//! | [`Shield`] | commands outside the actuator's bounds or rate, or outside a safe set; NaN commands | shielding: Alshiekh, Bloem, Ehlers, Könighofer, Niekum, Topcu, "Safe Reinforcement Learning via Shielding", AAAI 2018 |
//! | [`Supervisor`] (with a fallback [`Controller`](crate::Controller)) | the plant leaving its envelope, NaN or stuck sensors, a policy that performs worse than the fallback or fails | the simplex architecture: Sha, "Using Simplicity to Control Complexity", IEEE Software 2001 |
//! | [`Rollback`] | a newly published policy that performs worse than the last good one | — (checkpoint / last-known-good, with [`serialize`](crate::serialize)'s CRC-32) |
//! | [`Watchdog`] | publishing an update with NaN weights, one the learner refused, one that overran its time | — |
//!
//! Design:
//! - **Caller-owned memory, no allocation, no panics on data paths.** Every
//!   piece is a fixed-size value; the rollback's store is the caller's byte
//!   buffer. Every configuration has a `validate()` returning
//!   [`Error::InvalidConfig`](crate::Error::InvalidConfig) naming the field,
//!   and every piece has a statistics struct of plain counters for logging.
//! - **Generic, no trait objects.** The fallback is any
//!   [`Controller`](crate::Controller) (a closure implementing a PD law is
//!   one), the envelope any [`Envelope`] (per-dimension [`Bounds`] or a
//!   closure), the safe set any [`SafeSet`] (a closure or [`Unconstrained`]).
//! - **Continuous actions** (`SVector<f32, A>`): bounds and rates are what a
//!   shield of a discrete action space would not need.
//! - **Deterministic.** Nothing here draws random numbers; the same
//!   readings give the same commands on every platform.
//!
//! ## Fault injection
//!
//! `core/src/safety/tests.rs` injects each fault on `CartPoleContinuous`
//! (Gymnasium CartPole's physics with a continuous force): a policy trained
//! there by PPO acts inside [`Guarded`], with a PD fallback whose gains were
//! chosen by a grid search on tuning seeds that the fault runs do not use.
//! Each run is 5 episodes of up to 500 ticks from the same start states; the
//! fault hits every episode. "Envelope held" means no episode terminated
//! (`|x| ≤ 2.4`, `|θ| ≤ 12°` at every tick); the returns are the plant's
//! (+1 per tick), summed over the 5 episodes, and the guarded run's return
//! is asserted to be at least the fallback-only run's (the same `Guarded`
//! with an envelope the learned policy is never inside: the same sensor
//! checks, stale-reading command and shield, same start states, same fault)
//! in every episode, hence over the run. The fallback is
//! `a = 6.4x + 12.8ẋ + 128θ + 16θ̇` (near bang-bang: the best of a
//! 5×5×4×4 logarithmic grid, interior on every axis, behind the same shield:
//! `±1`, at most 1.0 change per tick). Produced by
//! `cargo test -p microrl --lib safety::tests::fault_table -- --nocapture`:
//!
//! | fault | what happened (guarded) | envelope held guarded / fallback / unguarded | return guarded / fallback / unguarded (5 episodes) | mean score guarded / fallback |
//! |---|---|---|---|---|
//! | Nominal | switches 1→fallback (performance 1) / 0→learned; fallback ticks 1696/2500; readings NaN 0, stuck 0; shield 22 interventions; watchdog refused 0 (NaN 0, overrun 0), published 0; rollback 0 (corrupt 0) | yes / yes / **no** | 2500 / 2500 / 2447 | -0.0127 / -0.0002 |
//! | PoisonedUpdate | switches 1→fallback (performance 1) / 0→learned; fallback ticks 1696/2500; readings NaN 0, stuck 0; shield 22 interventions; watchdog refused 5 (NaN 5, overrun 0), published 0; rollback 0 (corrupt 0) | yes / yes / **no** | 2500 / 2500 / 385 | -0.0127 / -0.0002 |
//! | NanSensors | switches 3→fallback (NaN 2, performance 1) / 2→learned; fallback ticks 1682/2500; readings NaN 50, stuck 0; shield 77 interventions; watchdog refused 0 (NaN 0, overrun 0), published 0; rollback 0 (corrupt 0) | yes / yes / **no** | 2500 / 2500 / 2446 | -0.0118 / -0.0002 |
//! | StuckSensor | switches 3→fallback (stuck 2, performance 1) / 2→learned; fallback ticks 1699/2500; readings NaN 0, stuck 85; shield 116 interventions; watchdog refused 0 (NaN 0, overrun 0), published 0; rollback 0 (corrupt 0) | yes / yes / **no** | 2500 / 2500 / 2447 | -0.0123 / -0.0002 |
//! | DivergingUpdate | switches 6→fallback (envelope 5, performance 1) / 6→learned; fallback ticks 254/2500; readings NaN 0, stuck 0; shield 86 interventions; watchdog refused 0 (NaN 0, overrun 0), published 5; rollback 5 (corrupt 0) | yes / yes / **no** | 2500 / 2500 / 147 | -0.0109 / -0.0002 |
//! | OverrunUpdate | switches 1→fallback (performance 1) / 0→learned; fallback ticks 1696/2500; readings NaN 0, stuck 0; shield 22 interventions; watchdog refused 5 (NaN 0, overrun 5), published 0; rollback 0 (corrupt 0) | yes / yes / **no** | 2500 / 2500 / 447 | -0.0127 / -0.0002 |
//! | DivergingCorruptStore | switches 5→fallback (envelope 5) / 4→learned; fallback ticks 2385/2500; readings NaN 0, stuck 0; shield 102 interventions; watchdog refused 0 (NaN 0, overrun 0), published 5; rollback 0 (corrupt 5) | yes / yes / **no** | 2500 / 2500 / 147 | -0.0019 / -0.0002 |
//!
//! "Unguarded" is the same fault without the net: the learned policy's
//! command sent as is (0 when it errs), publishes copied straight into it.
//! The score is the per-tick `−((x/2.4)² + (θ/12°)²)` the supervisor and
//! the rollback judge by (fallback reference: its mean on the tuning seeds;
//! performance margin 0.05; rollback window 200 ticks, margin 0.05).
//!
//! Read it with its limits: the plant's return (+1 per tick alive) only
//! tells whether the pole stayed up, and there the guarded run equals the
//! fallback-only run (2500 = 2500) in every row, while the learned policy
//! alone loses episodes in every row, even without a fault (2447: one of
//! the five episodes ends 53 ticks early). By the finer score
//! the trained policy is a worse regulator than the tuned PD (−0.0127 against
//! −0.0002 per tick), so the performance check hands the fallback control
//! after about 800 ticks in the runs without a publish and keeps it there
//! (latched until a new policy is published): the sensor faults of episodes
//! 0 and 1 hit the learned policy, those of episodes 2–4 the fallback.
//! The drills of [`drill::cartpole::Scenario::Relay`] give the net a
//! fallback that costs (a relay at full force, the score charging the
//! effort) and add a regressed and an underperforming update; their
//! figures are recorded and checked on the desktop and on the MCU, and each
//! mechanism removed in turn fails one (docs/safety.md).

pub mod drill;
pub mod guarded;
pub mod rollback;
pub mod shield;
pub mod supervisor;
pub mod watchdog;

pub use guarded::{Guarded, StaleCommand, Tick};
pub use rollback::{Rollback, RollbackConfig, RollbackStats, Verdict};
pub use shield::{
    Interventions, SafeSet, Shield, ShieldConfig, ShieldStats, Shielded, Unconstrained,
};
pub use supervisor::{
    Bounds, Cause, Decision, Envelope, Mode, Supervisor, SupervisorConfig, SupervisorStats,
};
pub use watchdog::{Refusal, Watchdog, WatchdogConfig, WatchdogStats};

#[cfg(test)]
mod tests;
