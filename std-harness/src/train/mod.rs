//! Training, evaluation and validation on the desktop: configuration and
//! hooks around the core's training loop.
//!
//! Design:
//! - **The loop is the core's.** [`train`] picks the agent type for the
//!   (environment, algorithm, `--small`) the user named — each an alias from
//!   [`microrl::agent`] — and hands it to [`microrl::train::Trainer`], the
//!   same loop the firmware runs. What lives here is configuration and
//!   [`Hooks`]: the progress bar, the learning curve, the last update's
//!   diagnostics.
//! - **Configuration is data.** The tuned defaults per (environment,
//!   algorithm, and for CartPole PPO whether it is the plain default run:
//!   [`TrainOptions::default_run`]) are the core's config structs
//!   ([`AlgoConfig`]); `--config`
//!   TOML keys are their field names, merged over the defaults and
//!   deserialised into the struct (an unknown key is an error naming it), and
//!   the agent's `init` validates every value before any rollout.
//!   `summary.json` records the full effective configuration, and
//!   `--config runs/X/summary.json` reproduces the run.
//! - **What "solved" means.** The core's rule: a quick 10-episode evaluation
//!   after every rollout (every 1 000 steps for the online actor-critic),
//!   the deciding `eval_episodes`-episode evaluation when that reaches the
//!   threshold — both on the *selection* start states — and the reported
//!   evaluation on *held-out* start states that never influenced stopping.
//!   `solved_at_step` is when the deciding evaluation passed; `eval_mean` is
//!   the held-out report.
//! - **Determinism.** Training and the two evaluation streams are xoshiro
//!   streams seeded from `--seed` (the core's `select_seed`/`report_seed`),
//!   so a run is reproducible bit for bit, on the desktop and on the MCU.

mod agents;
mod observer;
mod options;
mod overrides;
mod registry;
mod replay;
mod resume;
mod run;
mod summary;
#[cfg(test)]
mod tests;

pub use agents::*;
use observer::Observer;
pub use options::*;
pub use overrides::*;
pub use registry::*;
pub use replay::*;
pub use resume::*;
pub use run::*;
pub use summary::*;

/// PPO rollout length for CartPole (one minibatch = a quarter).
pub const PPO_CARTPOLE_STEPS: usize = 256;
/// PPO rollout length for the continuous tasks.
pub const PPO_CONTINUOUS_STEPS: usize = 2048;
/// PPO rollout capacity of every other task: SB3's `n_steps` (the core's
/// default `PpoConfig` fills it).
pub const PPO_STEPS: usize = 2048;
/// TRPO rollout length (every task): the Fisher matrix and the KL of the
/// line search are averaged over it.
pub const TRPO_STEPS: usize = 1024;
/// GRPO rollout capacity (every task): a group of 8 whole CartPole
/// episodes (8 × 500 steps) fits.
pub const GRPO_STEPS: usize = 4096;
/// A2C rollout length (n of the n-step return).
pub const A2C_STEPS: usize = 32;
/// `--algo ac --lag 1`: control ticks per block of the lagged schedule (the
/// firmware's `learn-rt-ac`: a quarter second at 1 kHz).
pub const AC_LAG_BLOCK: usize = 250;
/// `--algo sac|td3 --lag 1`: control ticks per block of the lagged
/// schedule (the firmware's `learn-rt-sac`: a quarter second of Pendulum
/// at 20 Hz; longer blocks cost Pendulum's SAC its solves, `docs/firmware.md`).
pub const OFFPOLICY_LAG_BLOCK: usize = 5;
/// REINFORCE keeps episodes of up to this many steps whole (CartPole's limit).
pub const REINFORCE_STEPS: usize = 500;
/// SAC/TD3 replay ring capacity: RL Zoo's Pendulum run (20 000 steps) fits
/// whole (the ring is boxed: ~0.9 MB on continuous CartPole).
pub const OFFPOLICY_CAP: usize = 20_000;
/// SAC/TD3 minibatch capacity (SB3's `batch_size` 256).
pub const OFFPOLICY_BATCH: usize = 256;
/// SAC/TD3: environment steps between evaluations (one iteration is one
/// environment step).
pub const OFFPOLICY_EVAL_INTERVAL: u64 = 1000;
/// Online actor-critic: steps between evaluations.
pub const AC_EVAL_INTERVAL: u64 = 1000;
/// PPO on Pendulum: steps between evaluations (every rollout for the other
/// tasks). Pendulum's returns are heavy-tailed (a few start states the policy
/// does not yet swing up from cost −1 000 or more), so judging after every
/// 2 048-step rollout stops at the first lucky pass of a barely-good policy,
/// which then misses the held-out evaluation (11/20 seeds pass it); every
/// 20 000 steps the policy has trained further when it is judged (20/20).
pub const PENDULUM_EVAL_INTERVAL: u64 = 20_000;
/// A learning-curve row at least this often (environment steps).
const CURVE_INTERVAL: u64 = 1000;
/// The files of a run directory (`--out`).
pub const POLICY_FILE: &str = "policy.mrlp";
/// The learning curve's CSV in a run directory.
pub const CURVE_CSV_FILE: &str = "curve.csv";
/// The learning curve's plot in a run directory.
pub const CURVE_PNG_FILE: &str = "curve.png";
/// Every figure and the full configuration of a run.
pub const SUMMARY_FILE: &str = "summary.json";
/// Everything a run directory holds.
pub const RUN_FILES: [&str; 4] = [POLICY_FILE, CURVE_CSV_FILE, CURVE_PNG_FILE, SUMMARY_FILE];

/// Trains as `opts` says, writes the outputs and returns the summary.
pub fn train(opts: &TrainOptions) -> anyhow::Result<TrainSummary> {
    train_from(opts, None)
}
