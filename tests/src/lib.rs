//! Shared helpers for microrl's cross-crate integration tests (`tests/*.rs`).
//!
//! The integration tests exercise the crates together through their public
//! APIs only: the harness writes what the core reads, and training loops are
//! assembled from the core's building blocks exactly as a user would.

use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

/// The generator the tests use, seeded.
pub fn rng(seed: u64) -> Xoshiro128PlusPlus {
    Xoshiro128PlusPlus::seed_from_u64(seed)
}
