//! Upper bounds of the command-line options that size work or memory and
//! are not bounded where they are used (`reward-model`'s are in
//! [`crate::preference`]). Each is refused above its bound with one `error:`
//! line naming the option and the bound, before anything is allocated.

/// `validate --seeds`: at most 1 024 seeds. A seed is a whole training run
/// (seconds to minutes each, run `--jobs` at a time), so 1 024 is already
/// hours of work on a large machine and far beyond what a pass/fail gate
/// needs (the default is 10); the bound keeps a typo such as 4294967296
/// from queueing billions of runs and their result rows.
pub const MAX_SEEDS: u64 = 1024;
