//! `microrl validate`: trains several seeds of one configuration in
//! parallel and gates on how many reach the threshold. Apart from the other
//! subcommands because most of it is its pool of training threads
//! (`train_seeds`: starting them, and a thread that cannot start, a failed
//! seed or a panic as one error).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::json;

use super::Report;
use crate::train::{self, TrainOptions};

/// One seed's row of `microrl validate`.
#[derive(Clone, Debug, Serialize)]
pub struct SeedResult {
    /// Seed.
    pub seed: u64,
    /// First step the deciding evaluation (selection start states) reached the threshold.
    pub solved_at_step: Option<u64>,
    /// Final evaluation mean.
    pub eval_mean: f32,
    /// Wall time of this seed (on its own core).
    pub wall_s: f64,
    /// The seed passed: the held-out evaluation reached the threshold.
    pub pass: bool,
}

/// Stack of each training thread (generous, as when it was introduced;
/// the agents themselves are boxed).
const TRAIN_THREAD_STACK: usize = 64 << 20;

/// `microrl validate`: trains `seeds` seeds in parallel (`jobs` threads, at
/// most one per seed) and checks that at least `min_pass` reach `threshold`.
/// The report's `pass` field is what the process exit status reflects.
///
/// # Errors
/// `seeds`, `min_pass` or `jobs` out of range, invalid training options, a
/// SAC or TD3 budget that ends before the first update
/// ([`TrainOptions::no_update`]), a seed's training failing, or a training thread that cannot be started
/// (those already started stop without training).
pub fn validate(
    base: &TrainOptions,
    seeds: u64,
    min_pass: u64,
    jobs: usize,
) -> anyhow::Result<(Report, bool)> {
    anyhow::ensure!(
        seeds > 0,
        "--seeds must be > 0: a gate over no seeds cannot fail"
    );
    anyhow::ensure!(
        (1..=seeds).contains(&min_pass),
        "--min-pass must be between 1 and --seeds ({seeds})"
    );
    anyhow::ensure!(jobs > 0, "--jobs must be > 0");
    base.check()?;
    if let Some(why) = base.no_update()? {
        anyhow::bail!("{why} (validate refuses a gate over untrained policies)");
    }
    let start = std::time::Instant::now();
    let threshold = base.threshold;
    let jobs = jobs.min(usize::try_from(seeds).unwrap_or(usize::MAX));
    let mut summaries = train_seeds(base, seeds, jobs, |_| TRAIN_THREAD_STACK)?;
    summaries.sort_by_key(|s| s.seed);
    let rows: Vec<SeedResult> = summaries
        .iter()
        .map(|s| SeedResult {
            seed: s.seed,
            solved_at_step: s.solved_at_step,
            eval_mean: s.eval_mean,
            wall_s: s.wall_s,
            pass: s.eval_mean >= threshold,
        })
        .collect();
    let passed = rows.iter().filter(|r| r.pass).count() as u64;
    let ok = passed >= min_pass;
    let mut lines = vec![
        format!(
            "validate {} on {}: {seeds} seeds, {} steps each, threshold {threshold}, {jobs} parallel jobs",
            base.algo.name(),
            base.env.name(),
            base.steps
        ),
        format!(
            "{:>6} {:>18} {:>13} {:>9} {:>6}",
            "seed", "steps-to-threshold", "held-out eval", "wall s", "pass"
        ),
    ];
    for r in &rows {
        lines.push(format!(
            "{:>6} {:>18} {:>13.2} {:>9.2} {:>6}",
            r.seed,
            r.solved_at_step.map_or("-".to_string(), |s| s.to_string()),
            r.eval_mean,
            r.wall_s,
            if r.pass { "yes" } else { "no" }
        ));
    }
    let mut walls: Vec<f64> = rows.iter().map(|r| r.wall_s).collect();
    walls.sort_by(f64::total_cmp);
    let median_wall = walls.get(walls.len() / 2).copied().unwrap_or(0.0);
    lines.push(format!(
        "{passed}/{seeds} seeds passed (required {min_pass}): {}; median wall {median_wall:.2} s per seed, {:.1} s in total",
        if ok { "PASS" } else { "FAIL" },
        start.elapsed().as_secs_f64()
    ));
    let json = json!({
        "command": "validate", "env": base.env.name(), "algo": base.algo.name(), "steps": base.steps,
        "seeds": seeds, "threshold": crate::train::threshold_json(threshold), "min_pass": min_pass, "passed": passed, "pass": ok,
        "median_wall_s": median_wall, "wall_s": start.elapsed().as_secs_f64(), "results": rows,
    });
    Ok((Report { lines, json }, ok))
}

/// The run directory of seed `seed` of `validate --out DIR`: `DIR/seed<N>`.
pub fn seed_dir(out: &Path, seed: u64) -> PathBuf {
    out.join(format!("seed{seed}"))
}

/// Trains seeds `0..seeds` on `jobs` threads (thread `i` with a stack of
/// `stack(i)` bytes), each thread taking the next seed until none is left.
///
/// No thread starts training before every thread has started.
///
/// # Errors
/// A thread cannot be started (out of memory or threads): the threads
/// already started end without training, and the error says which thread
/// failed. A seed's training fails: the others stop taking seeds, and the
/// error of the lowest failing seed is returned. A thread panicked.
fn train_seeds(
    base: &TrainOptions,
    seeds: u64,
    jobs: usize,
    stack: impl Fn(usize) -> usize,
) -> anyhow::Result<Vec<train::TrainSummary>> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let next = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    // Set once every thread is started (true) or one could not be (false).
    let all_started = std::sync::OnceLock::<bool>::new();
    let worker = || {
        let mut done = Vec::new();
        if !*all_started.wait() {
            return done;
        }
        while !stop.load(Ordering::Relaxed) {
            let seed = next.fetch_add(1, Ordering::Relaxed);
            if seed >= seeds {
                break;
            }
            let opts = TrainOptions {
                seed,
                progress: false,
                out: base.out.as_ref().map(|d| seed_dir(d, seed)),
                ..base.clone()
            };
            let result = train::train(&opts);
            if result.is_err() {
                stop.store(true, Ordering::Relaxed);
            }
            done.push((seed, result));
        }
        done
    };
    /// Releases the waiting threads (to end without training) if the
    /// spawning loop unwinds before it decides.
    struct ReleaseOnUnwind<'a>(&'a std::sync::OnceLock<bool>);
    impl Drop for ReleaseOnUnwind<'_> {
        fn drop(&mut self) {
            let _ = self.0.set(false);
        }
    }
    std::thread::scope(|scope| {
        let release = ReleaseOnUnwind(&all_started);
        let mut handles = Vec::with_capacity(jobs);
        let mut spawn_error = None;
        for i in 0..jobs {
            match std::thread::Builder::new()
                .name(format!("train-{i}"))
                .stack_size(stack(i))
                .spawn_scoped(scope, worker)
            {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    spawn_error = Some(anyhow::anyhow!(
                        "could not start training thread {} of {jobs}: {e}; \
                         the {i} already started stopped without training; try a smaller --jobs",
                        i + 1
                    ));
                    break;
                }
            }
        }
        let _ = all_started.set(spawn_error.is_none());
        drop(release);
        // Join every started thread by hand: a panic becomes an error here
        // instead of being re-raised when the scope ends.
        let mut summaries = Vec::new();
        let mut failures = Vec::new();
        let mut panicked = false;
        for handle in handles {
            match handle.join() {
                Ok(done) => {
                    for (seed, result) in done {
                        match result {
                            Ok(s) => summaries.push(s),
                            Err(e) => failures.push((seed, e)),
                        }
                    }
                }
                Err(_) => panicked = true,
            }
        }
        if let Some(e) = spawn_error {
            return Err(e);
        }
        failures.sort_by_key(|(seed, _)| *seed);
        if let Some((seed, e)) = failures.into_iter().next() {
            return Err(e.context(format!("seed {seed}")));
        }
        anyhow::ensure!(!panicked, "a training thread panicked");
        Ok(summaries)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::EnvName;

    #[test]
    fn a_training_thread_that_cannot_start_is_an_error() {
        use crate::train::Algo;
        let base = TrainOptions::new(EnvName::Cartpole, Algo::Ppo, 0, 256);
        // The OS refuses a 2^62-byte stack (beyond any address space), as it
        // refuses a 64 MiB one under a low `ulimit -v`.
        let huge = usize::MAX / 4;
        let err = train_seeds(&base, 4, 3, |i| if i == 0 { 1 << 20 } else { huge }).unwrap_err();
        let msg = format!("{err:#}");
        assert!(
            msg.contains("could not start training thread 2 of 3")
                && msg.contains("1 already started stopped without training"),
            "{msg}"
        );
        let err = train_seeds(&base, 2, 2, |_| huge).unwrap_err();
        assert!(format!("{err:#}").contains("thread 1 of 2"), "{err:#}");
        // The same pool with stacks the OS grants trains every seed.
        let done = train_seeds(&base, 3, 2, |_| 8 << 20).unwrap();
        let mut seeds: Vec<u64> = done.iter().map(|s| s.seed).collect();
        seeds.sort_unstable();
        assert_eq!(seeds, [0, 1, 2]);
    }

    #[test]
    fn validate_refuses_empty_gates_and_zero_jobs() {
        use crate::train::Algo;
        let base = TrainOptions::new(EnvName::Cartpole, Algo::Ppo, 0, 256);
        for (seeds, min_pass, jobs, needle) in [
            (0, 0, 1, "--seeds"),
            (2, 0, 1, "--min-pass"),
            (2, 3, 1, "--min-pass"),
            (2, 1, 0, "--jobs"),
        ] {
            let err = validate(&base, seeds, min_pass, jobs).unwrap_err();
            assert!(format!("{err:#}").contains(needle), "{needle}: {err:#}");
        }
        // --jobs is clamped to the number of seeds.
        let (report, _) = validate(&base, 1, 1, 64).unwrap();
        assert!(
            report.lines[0].contains("1 parallel jobs"),
            "{}",
            report.lines[0]
        );
    }
}
