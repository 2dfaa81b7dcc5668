//! Independent jobs on a scoped pool of worker threads: each worker takes
//! the next index until none is left, so long and short jobs balance
//! without a queue. `microrl tune` and `microrl suite` run their trainings
//! on it (a training is one job; its results go to the caller's slots).

use std::sync::atomic::{AtomicUsize, Ordering};

/// The workers for `total` jobs when `requested` were asked for (0: every
/// core); at least 1, at most `total`.
pub fn workers(requested: usize, total: usize) -> usize {
    match requested {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
        n => n,
    }
    .min(total.max(1))
}

/// Calls `job(k)` once for every `k` in `0..total` on
/// [`workers(threads, total)`](workers) scoped threads; returns when all
/// have run.
pub fn for_each_index(total: usize, threads: usize, job: impl Fn(usize) + Sync) {
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..workers(threads, total) {
            scope.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k >= total {
                        break;
                    }
                    job(k);
                }
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn every_index_runs_once() {
        let seen = Mutex::new(vec![0u32; 37]);
        for_each_index(37, 3, |k| seen.lock().unwrap()[k] += 1);
        assert_eq!(*seen.lock().unwrap(), vec![1; 37]);
        for_each_index(0, 0, |_| panic!("no jobs"));
    }

    #[test]
    fn workers_are_between_one_and_the_jobs() {
        assert_eq!(workers(5, 3), 3);
        assert_eq!(workers(2, 10), 2);
        assert_eq!(workers(4, 0), 1);
        assert!(workers(0, 1000) >= 1);
    }
}
