//! The crate's single error type.
//!
//! Every fallible operation in microrl returns [`Result<T, Error>`](Result).
//! [`Error`] is a small `Copy` enum so it can be returned from firmware hot paths,
//! stored in statistics structs and logged with `defmt` (behind the `defmt`
//! feature) without formatting machinery. Operations that fail leave the state
//! they were given untouched: parameters are only written once every input has
//! been checked.

use core::fmt;

/// Why an operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// An input (observation, reward, gradient, loaded weight) was NaN or infinite.
    NonFinite,
    /// A discrete action index was not smaller than the number of actions.
    InvalidAction,
    /// `update` was called without a complete, not yet trained-on rollout
    /// (none collected since the last update, or the last `collect` was
    /// refused and its partial rollout discarded).
    RolloutIncomplete,
    /// A reward's return or advantage is so large (beyond 1e15) that
    /// training on it would overflow `f32`; the rollout was refused.
    ValueOverflow,
    /// A gradient component is so large (|g| > 1e15) that the optimiser's
    /// moments or the gradient norm would overflow; nothing was applied.
    GradientOverflow,
    /// A hyper-parameter is outside its valid range: `field` names it (the
    /// configuration struct's field name, which is also its key in a TOML or
    /// JSON configuration) and `reason` states the constraint it broke.
    InvalidConfig {
        /// The offending field, e.g. `"clip_range"` or `"adam.eps"`.
        field: &'static str,
        /// The constraint, e.g. `"must be > 0"`.
        reason: &'static str,
    },
    /// The output buffer is smaller than the encoded size.
    BufferTooSmall,
    /// The byte slice ends before the header or payload it announces.
    Truncated,
    /// The byte slice does not start with microrl's magic number.
    BadMagic,
    /// The blob was written by an unsupported format version.
    UnsupportedVersion,
    /// The blob's layer dimensions or tensor kinds differ from the destination's.
    ShapeMismatch,
    /// The byte slice is longer than the blob its header describes.
    TrailingBytes,
    /// The CRC-32 stored in the blob does not match its contents.
    ChecksumMismatch,
    /// The environment — a real plant's sensors or actuators — reported a
    /// fault; `what` says which (e.g. `"encoder read"`).
    Plant {
        /// What failed.
        what: &'static str,
    },
    /// A loaded (or saved) value is finite but outside the domain of its
    /// tensor: a negative normaliser variance or count, a `log_std` outside
    /// [`LOG_STD_MIN`](crate::policy::LOG_STD_MIN)`..=`[`LOG_STD_MAX`](crate::policy::LOG_STD_MAX),
    /// actuator bounds with `low > high`. `tensor` is the index of the
    /// offending tensor in the blob (the order of
    /// [`Params::tensor`](crate::Params::tensor)) and `reason` the constraint
    /// it broke.
    OutOfDomain {
        /// Index of the offending tensor.
        tensor: u32,
        /// The constraint, e.g. `"variance must be >= 0"`.
        reason: &'static str,
    },
    /// An episode ran for `max_steps` steps without terminating or being
    /// truncated (see [`algo::evaluate_capped`](crate::algo::evaluate_capped)).
    EpisodeTooLong {
        /// The step cap that was reached.
        max_steps: u32,
    },
    /// A saved state is well-formed but not one its owner can be in (an
    /// all-zero xoshiro state, a negative step counter, a flag other than
    /// 0 or 1); `what` says which.
    InvalidState {
        /// What is wrong, e.g. `"xoshiro128++ state is all-zero"`.
        what: &'static str,
    },
    /// A checkpoint was requested between `collect` and `update`: a PPO
    /// rollout is collected but not yet trained on. Checkpoints are taken
    /// between iterations of the training loop.
    MidIteration,
    /// A training input the caller assembled is malformed (a preference
    /// naming a segment that does not exist, an empty minibatch); `what`
    /// says which.
    InvalidInput {
        /// What is wrong, e.g. `"preference names a segment past the end"`.
        what: &'static str,
    },
    /// The file was written by a build with another maths backend
    /// ([`MathBackend`](crate::math::MathBackend)): the same weights give
    /// actions that can differ in the last bit. A policy blob returns it
    /// from [`serialize::load`](crate::serialize::load) only once every other
    /// check has passed, so
    /// [`serialize::load_any_backend`](crate::serialize::load_any_backend)
    /// would accept it; a checkpoint is refused (its resume could not be
    /// bit for bit).
    Backend {
        /// The backend that wrote the file.
        file: crate::math::MathBackend,
        /// This build's backend ([`math::BACKEND`](crate::math::BACKEND)).
        build: crate::math::MathBackend,
    },
}

impl Error {
    /// `Error::InvalidConfig { field, reason }`, for validation code.
    pub const fn config(field: &'static str, reason: &'static str) -> Self {
        Self::InvalidConfig { field, reason }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let msg = match self {
            Error::InvalidConfig { field, reason } => {
                return write!(f, "invalid configuration: `{field}` {reason}");
            }
            Error::Plant { what } => return write!(f, "the plant reported a fault: {what}"),
            Error::OutOfDomain { tensor, reason } => {
                return write!(f, "tensor {tensor} is out of its domain: {reason}");
            }
            Error::EpisodeTooLong { max_steps } => {
                return write!(
                    f,
                    "episode did not end within {max_steps} steps (no termination or truncation)"
                );
            }
            Error::InvalidState { what } => return write!(f, "invalid saved state: {what}"),
            Error::InvalidInput { what } => return write!(f, "invalid training input: {what}"),
            Error::Backend { file, build } => {
                return write!(
                    f,
                    "written with the `{file}` maths backend, this build computes with `{build}` (actions can differ in the last bit)"
                );
            }
            Error::MidIteration => {
                "checkpoint requested mid-iteration (a rollout awaits its update)"
            }
            Error::NonFinite => "value is NaN or infinite",
            Error::InvalidAction => "action index out of range",
            Error::RolloutIncomplete => "no complete rollout to train on (collect first)",
            Error::ValueOverflow => "return or advantage too large (> 1e15) to train on",
            Error::GradientOverflow => "gradient too large (|g| > 1e15): the update would overflow",
            Error::BufferTooSmall => "output buffer too small",
            Error::Truncated => "input ends early (truncated)",
            Error::BadMagic => "not a microrl parameter blob (bad magic)",
            Error::UnsupportedVersion => "unsupported parameter format version",
            Error::ShapeMismatch => "layer dimensions or tensor kinds do not match",
            Error::TrailingBytes => "bytes after the end of the blob",
            Error::ChecksumMismatch => "CRC-32 mismatch (corrupted data)",
        };
        f.write_str(msg)
    }
}

impl core::error::Error for Error {}

/// `Ok(())` when `x` is finite, [`Error::NonFinite`] otherwise.
#[inline]
pub fn check_finite(x: f32) -> Result<(), Error> {
    if x.is_finite() {
        Ok(())
    } else {
        Err(Error::NonFinite)
    }
}

/// `Ok(())` when every element of `xs` is finite, [`Error::NonFinite`] otherwise.
#[inline]
pub fn check_all_finite(xs: &[f32]) -> Result<(), Error> {
    if xs.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(Error::NonFinite)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finite_checks() {
        assert_eq!(check_finite(1.0), Ok(()));
        assert_eq!(check_finite(f32::NAN), Err(Error::NonFinite));
        assert_eq!(
            check_all_finite(&[0.0, f32::INFINITY]),
            Err(Error::NonFinite)
        );
        assert_eq!(check_all_finite(&[]), Ok(()));
    }

    #[test]
    fn display_is_informative() {
        extern crate std;
        use std::string::ToString;
        assert!(Error::ChecksumMismatch.to_string().contains("CRC-32"));
        assert_eq!(
            Error::OutOfDomain {
                tensor: 8,
                reason: "variance must be >= 0"
            }
            .to_string(),
            "tensor 8 is out of its domain: variance must be >= 0"
        );
        assert!(
            Error::EpisodeTooLong { max_steps: 7 }
                .to_string()
                .contains("within 7 steps")
        );
        assert_eq!(
            Error::config("clip_range", "must be > 0").to_string(),
            "invalid configuration: `clip_range` must be > 0"
        );
    }
}
