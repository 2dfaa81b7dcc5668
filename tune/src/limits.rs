//! Upper bounds of the command-line options that size work or memory and
//! are not bounded where they are used (`reward-model`'s are in
//! `microrl_harness::preference`). Each is refused above its bound with one `error:`
//! line naming the option and the bound, before anything is allocated or
//! any training starts.

/// `validate --seeds`: at most 1 024 seeds. A seed is a whole training run
/// (seconds to minutes each, run `--jobs` at a time), so 1 024 is already
/// hours of work on a large machine and far beyond what a pass/fail gate
/// needs (the default is 10); the bound keeps a typo such as 4294967296
/// from queueing billions of runs and their result rows.
pub const MAX_SEEDS: u64 = 1024;

/// `--steps` of `train`, `validate`, `suite` and `bench`, and `tune
/// --min-steps`/`--max-steps`: at most 10⁹ environment steps a run. The
/// longest budget microrl uses is 10⁶ (the suite's PPO rows); 10⁹ is days
/// of training, and the bound keeps a typo from starting a run that never
/// ends.
pub const MAX_STEPS: u64 = 1_000_000_000;

/// Episodes of one evaluation: `eval --episodes`, `train`/`validate
/// --eval-episodes`, `suite --keep-best` (and the tuner's
/// [`TuneOptions`](crate::TuneOptions) evaluations): at most 10 000.
/// The standard error of a mean return falls as `1/√episodes`; 10 000
/// episodes already pin it to 1 % of the returns' spread (the defaults are
/// 20 to 200), and the bound keeps a typo such as 4294967295 from running
/// an evaluation for ever — `train` runs one after every rollout.
pub const MAX_EPISODES: u32 = 10_000;

/// `tune --candidates`: at most 1 024 configurations drawn for the first
/// rung (the default is 27). Each is `--seeds` training runs at the first
/// rung's budget, so 1 024 is already a long search, and the bound keeps a
/// typo from allocating the draws of a billion candidates.
pub const MAX_CANDIDATES: usize = 1024;

/// `tune --eta`: at most 1 024 (the default is 3). The search keeps the
/// best `1/η` of each rung and multiplies the budget by `η`, so an `η`
/// beyond the candidates keeps one candidate after the first rung.
pub const MAX_ETA: usize = 1024;
