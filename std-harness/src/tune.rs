//! `microrl tune`: the search of [`microrl_tune`] (re-exported here under
//! its old path, `microrl_harness::tune`) and the command around it.
//!
//! The search itself lives in its own crate so that a user's crate can
//! depend on it without this crate's `fast-math` backend reaching their
//! `microrl` through Cargo's feature unification.

pub use microrl_tune::*;

pub mod command;
