//! Shared helpers for microrl's cross-crate integration tests (`tests/*.rs`).
//!
//! The integration tests exercise the crates together through their public
//! APIs only: the harness writes what the core reads, and training loops are
//! assembled from the core's building blocks exactly as a user would.

use rand_core::SeedableRng;

pub mod drill;
use rand_xoshiro::Xoshiro128PlusPlus;

/// The generator the tests use, seeded.
pub fn rng(seed: u64) -> Xoshiro128PlusPlus {
    Xoshiro128PlusPlus::seed_from_u64(seed)
}

/// Reading committed fixtures whose floats are strings: Python's shortest
/// round-tripping `repr`, read back exactly by Rust's correctly rounded
/// `str::parse` (serde_json's default float parser is off by an ulp for
/// some 17-digit values). Use as
/// `#[serde(deserialize_with = "microrl_tests::fixture::floats")]`.
pub mod fixture {
    use serde::{Deserialize, Deserializer};

    fn parse<E: serde::de::Error>(s: &str) -> Result<f64, E> {
        s.parse()
            .map_err(|e| E::custom(format!("float {s:?}: {e}")))
    }

    /// A list of float strings.
    ///
    /// # Errors
    /// A string that is not a float, naming it.
    pub fn floats<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|s| parse(s))
            .collect()
    }

    /// A list of lists of float strings.
    ///
    /// # Errors
    /// As [`floats`].
    pub fn float_rows<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<f64>>, D::Error> {
        Vec::<Vec<String>>::deserialize(d)?
            .iter()
            .map(|row| row.iter().map(|s| parse(s)).collect())
            .collect()
    }
}
