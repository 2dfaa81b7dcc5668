//! Desktop side of microrl: the `microrl` command-line tool.
//!
//! The harness works on the same types the firmware uses. A policy
//! architecture is a Rust type with its sizes fixed at compile time, so the
//! harness knows a closed set of them ([`Arch`]) and dispatches on the name the
//! user gives. Every command prints a human-readable report and, with
//! `--json`, exactly one JSON object as its last line of standard output.

/// An enum of named rows, for `clap` and `serde`: the enum with its
/// variants' documentation, `ALL` in row order and `name()`, the
/// command-line and JSON name (which must be the variant's kebab-case name:
/// `clap` and `serde` derive theirs from it).
macro_rules! named_enum {
    ($(#[$attr:meta])* $enum:ident { $( $(#[$doc:meta])* $variant:ident = $name:literal ),* $(,)? }) => {
        $(#[$attr])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum $enum {
            $( $(#[$doc])* #[value(name = $name)] #[serde(rename = $name)] $variant, )*
        }

        impl $enum {
            /// Every value, in row order.
            pub const ALL: [$enum; [$($name),*].len()] = [$($enum::$variant),*];

            /// The name used on the command line and in JSON.
            pub fn name(self) -> &'static str {
                match self {
                    $($enum::$variant => $name,)*
                }
            }
        }
    };
}

pub mod arch;
pub mod atomic;
pub mod batch;
pub mod bench;
pub mod commands;
pub mod curve;
pub mod eval;
pub mod interop;
pub use microrl_tune::limits;
pub mod overlay;
pub mod paths;
pub mod plot;
pub mod policy_file;
pub use microrl_tune::pool;
pub mod preference;
pub mod suite;
pub mod train;
pub mod tune;

pub use arch::Arch;
