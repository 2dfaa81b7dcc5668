//! [`Rollback`]: keep the last good policy, judge each new one, restore the
//! good one when the new one does worse.
//!
//! Design:
//! - **The last good policy is a blob**, in the checksummed format of
//!   [`serialize`], at the start of a byte buffer the
//!   caller owns (`[u8; N]`, `&mut [u8]`, a RAM mirror of a flash page: any
//!   `AsRef<[u8]> + AsMut<[u8]>`). It is written only when a policy is
//!   committed or promoted ([`RollbackStats::writes`] counts them, for flash
//!   wear), and read only to restore.
//! - **A trial per published policy.** [`Rollback::published`] starts a
//!   trial; every [`Rollback::record`] adds one score (the caller's unit: a
//!   tick's reward, an episode's return) until [`RollbackConfig::window`]
//!   scores are in. Then, with `m` the trial's mean and `g` the last good
//!   policy's: `m < g − margin` restores the last good policy into the
//!   acting one; otherwise the acting policy becomes the last good one, with
//!   `g ← m`. [`Rollback::reject`] restores at once (e.g. the policy drove
//!   the plant out of its envelope).
//! - **A corrupted blob is detected, reported and never loaded**:
//!   [`serialize::load`] checks the CRC-32 and
//!   every value before writing anything, so a failed restore leaves the
//!   acting policy as it was and returns the error
//!   ([`Error::ChecksumMismatch`] for a flipped bit); [`Rollback::check`]
//!   verifies the blob without loading it (at boot, or periodically).

use crate::error::Error;
use crate::params::Params;
use crate::serialize;

/// How a published policy is judged.
///
/// ```
/// use microrl::safety::RollbackConfig;
/// assert_eq!(RollbackConfig::new(500, 0.05).validate(), Ok(()));
/// assert_eq!(
///     RollbackConfig::new(0, 0.05).validate(),
///     Err(microrl::Error::config("window", "must be > 0"))
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct RollbackConfig {
    /// Scores in a trial (`> 0`). Default 500.
    pub window: u32,
    /// How far the trial's mean score may fall below the last good policy's
    /// before it is rolled back (finite, `≥ 0`). Default 0.
    pub margin: f32,
}

impl RollbackConfig {
    /// See each field.
    pub const DEFAULT: Self = Self::new(500, 0.0);

    /// A trial of `window` scores, rolled back below the good mean − `margin`.
    pub const fn new(window: u32, margin: f32) -> Self {
        Self { window, margin }
    }

    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `window` or `margin`.
    pub fn validate(&self) -> Result<(), Error> {
        if self.window == 0 {
            return Err(Error::config("window", "must be > 0"));
        }
        if !(self.margin >= 0.0 && self.margin.is_finite()) {
            return Err(Error::config("margin", "must be finite and >= 0"));
        }
        Ok(())
    }
}

impl Default for RollbackConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What a [`Rollback::record`] concluded.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Verdict {
    /// No trial, or its window is not full yet.
    Pending,
    /// The trial ended with mean `mean`: the acting policy is the new last
    /// good one.
    Promoted {
        /// The trial's mean score.
        mean: f32,
    },
    /// The trial ended (or was cut short) with mean `mean`: the last good
    /// policy was restored into the acting one.
    RolledBack {
        /// The trial's mean score (NaN when cut short before any score).
        mean: f32,
    },
}

/// Counts a firmware can log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RollbackStats {
    /// Trials started.
    pub trials: u64,
    /// Trials that ended in a promotion.
    pub promoted: u64,
    /// Restores of the last good policy (window verdicts and rejections).
    pub rolled_back: u64,
    /// Blobs written to the store.
    pub writes: u64,
    /// Restores or checks refused because the stored blob is corrupt.
    pub corrupt: u64,
}

impl RollbackStats {
    /// All zero.
    pub const ZERO: Self = Self {
        trials: 0,
        promoted: 0,
        rolled_back: 0,
        writes: 0,
        corrupt: 0,
    };
}

/// The last good policy in a caller-owned store `B`, and the trial of the
/// acting one (see the [module docs](self)).
///
/// ```
/// use microrl::safety::{Rollback, RollbackConfig, Verdict};
/// use microrl::{policy::CategoricalActor, nn::Mlp, serialize, Params};
///
/// type P = CategoricalActor<Mlp<2, 4, 2>>;
/// let mut store = [0u8; serialize::encoded_len::<P>()];
/// let mut rollback = Rollback::new(RollbackConfig::new(2, 0.1), &mut store[..])?;
/// let mut acting = P::ZERO;
/// acting.net.first.bias.fill(0.5);
/// rollback.commit(&acting, 1.0)?; // the last good policy scores 1.0 per tick
///
/// acting.net.first.bias.fill(-3.0); // a new policy is published…
/// rollback.published();
/// assert_eq!(rollback.record(0.2, &mut acting)?, Verdict::Pending);
/// assert_eq!(rollback.record(0.4, &mut acting)?, Verdict::RolledBack { mean: 0.3 });
/// assert_eq!(acting.net.first.bias[0], 0.5); // …and rolled back
/// # Ok::<(), microrl::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Rollback<B> {
    config: RollbackConfig,
    store: B,
    /// Mean score of the last good policy, once one is stored.
    good: Option<f32>,
    /// A trial is running.
    trial: bool,
    sum: f64,
    n: u32,
    /// Counts since construction.
    pub stats: RollbackStats,
}

impl<B: AsRef<[u8]> + AsMut<[u8]>> Rollback<B> {
    /// A rollback over `store`, holding no good policy yet.
    ///
    /// # Errors
    /// As [`RollbackConfig::validate`].
    pub fn new(config: RollbackConfig, store: B) -> Result<Self, Error> {
        config.validate()?;
        Ok(Self {
            config,
            store,
            good: None,
            trial: false,
            sum: 0.0,
            n: 0,
            stats: RollbackStats::ZERO,
        })
    }

    /// The configuration.
    pub const fn config(&self) -> &RollbackConfig {
        &self.config
    }

    /// The store (to persist it, or to inspect it).
    pub const fn store(&self) -> &B {
        &self.store
    }

    /// The store, mutably (e.g. to load a persisted blob at boot; follow
    /// with [`check`](Self::check)).
    pub fn store_mut(&mut self) -> &mut B {
        &mut self.store
    }

    /// The last good policy's mean score, once one is stored.
    pub const fn good_score(&self) -> Option<f32> {
        self.good
    }

    /// `true` while a published policy is on trial.
    pub const fn on_trial(&self) -> bool {
        self.trial
    }

    /// Stores `policy` as the last good one, with mean score `score`, and
    /// ends any trial.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite `score`; as
    /// [`serialize::save`] (too small a store, a non-finite or out-of-domain
    /// policy). Nothing changes then.
    pub fn commit<P: Params>(&mut self, policy: &P, score: f32) -> Result<(), Error> {
        if !score.is_finite() {
            return Err(Error::NonFinite);
        }
        serialize::save(policy, self.store.as_mut())?;
        self.stats.writes += 1;
        self.good = Some(score);
        self.end_trial();
        Ok(())
    }

    /// Verifies the stored blob (length, CRC-32, tensor count and shapes
    /// against `P`) without loading it.
    ///
    /// # Errors
    /// [`Error::InvalidState`] when no good policy was stored; otherwise as
    /// [`serialize::verify`] (a corrupt blob is counted in
    /// [`RollbackStats::corrupt`]) or [`Error::ShapeMismatch`].
    pub fn check<P: Params>(&mut self) -> Result<(), Error> {
        if self.good.is_none() {
            return Err(Error::InvalidState {
                what: "no good policy stored",
            });
        }
        let result = self.blob::<P>().and_then(|blob| {
            let header = serialize::verify(blob)?;
            if header.tensors as usize != P::TENSORS || header.scalars as usize != P::LEN {
                return Err(Error::ShapeMismatch);
            }
            Ok(())
        });
        if result.is_err() {
            self.stats.corrupt += 1;
        }
        result
    }

    /// The acting policy was just replaced by a newly published one: its
    /// trial starts (a running trial starts over).
    pub fn published(&mut self) {
        self.trial = true;
        self.sum = 0.0;
        self.n = 0;
        self.stats.trials += 1;
    }

    /// Adds the acting policy's `score` to its trial; at the end of the
    /// window promotes `acting` or restores the last good policy into it
    /// (see the [module docs](self)). Without a trial, or with a non-finite
    /// score, nothing happens. With no good policy stored, a full window
    /// promotes.
    ///
    /// # Errors
    /// From the restore ([`Error::ChecksumMismatch`] and the other
    /// [`serialize::load`] errors: `acting` is unchanged and the trial
    /// ends) or the promotion's save (then the last good policy is
    /// restored, as for a rollback).
    pub fn record<P: Params>(&mut self, score: f32, acting: &mut P) -> Result<Verdict, Error> {
        if !self.trial || !score.is_finite() {
            return Ok(Verdict::Pending);
        }
        self.sum += f64::from(score);
        self.n += 1;
        if self.n < self.config.window {
            return Ok(Verdict::Pending);
        }
        let mean = (self.sum / f64::from(self.n)) as f32;
        match self.good {
            Some(good) if mean < good - self.config.margin => {
                self.restore(acting)?;
                Ok(Verdict::RolledBack { mean })
            }
            _ => match self.commit(acting, mean) {
                Ok(()) => {
                    self.stats.promoted += 1;
                    Ok(Verdict::Promoted { mean })
                }
                Err(e) => {
                    self.restore(acting)?;
                    Err(e)
                }
            },
        }
    }

    /// Ends the trial now and restores the last good policy into `acting`.
    ///
    /// # Errors
    /// As [`restore`](Self::restore).
    pub fn reject<P: Params>(&mut self, acting: &mut P) -> Result<Verdict, Error> {
        let mean = if self.n > 0 {
            (self.sum / f64::from(self.n)) as f32
        } else {
            f32::NAN
        };
        self.restore(acting)?;
        Ok(Verdict::RolledBack { mean })
    }

    /// Loads the last good policy into `acting` and ends any trial.
    ///
    /// # Errors
    /// [`Error::InvalidState`] when no good policy was stored; otherwise as
    /// [`serialize::load`] — a corrupted blob ([`Error::ChecksumMismatch`],
    /// counted in [`RollbackStats::corrupt`]) is never loaded. `acting` is
    /// unchanged on error; the trial ends either way.
    pub fn restore<P: Params>(&mut self, acting: &mut P) -> Result<(), Error> {
        self.end_trial();
        if self.good.is_none() {
            return Err(Error::InvalidState {
                what: "no good policy stored",
            });
        }
        let result = self
            .blob::<P>()
            .and_then(|blob| serialize::load(acting, blob));
        match result {
            Ok(()) => {
                self.stats.rolled_back += 1;
                Ok(())
            }
            Err(e) => {
                self.stats.corrupt += 1;
                Err(e)
            }
        }
    }

    /// The stored blob of a `P`.
    fn blob<P: Params>(&self) -> Result<&[u8], Error> {
        self.store
            .as_ref()
            .get(..serialize::encoded_len::<P>())
            .ok_or(Error::Truncated)
    }

    fn end_trial(&mut self) {
        self.trial = false;
        self.sum = 0.0;
        self.n = 0;
    }
}
