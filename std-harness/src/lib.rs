//! Desktop side of microrl: the `microrl` command-line tool.
//!
//! The harness works on the same types the firmware uses. A policy
//! architecture is a Rust type with its sizes fixed at compile time, so the
//! harness knows a closed set of them ([`Arch`]) and dispatches on the name the
//! user gives. Every command prints a human-readable report and, with
//! `--json`, exactly one JSON object as its last line of standard output.

pub mod arch;
pub mod atomic;
pub mod batch;
pub mod commands;
pub mod curve;
pub mod eval;
pub mod interop;
pub mod limits;
pub mod overlay;
pub mod paths;
pub mod plot;
pub mod preference;
pub mod train;
pub mod tune;

pub use arch::Arch;
