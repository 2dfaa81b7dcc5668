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
//! is asserted to be at least the fallback-only run's (the fallback behind
//! the same sensor hold and shield, same start states, same fault) in every
//! episode. Produced by
//! `cargo test -p microrl --lib safety::tests::fault_table -- --nocapture`:
//!
//! | fault | what happened | envelope held | return guarded / fallback |
//! |---|---|---|---|
//! | (filled in by the tests) | | | |
//!
//! The unguarded column of the test's output shows the same fault without
//! the net: the learned policy's command sent as is (0 when it errs).

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
