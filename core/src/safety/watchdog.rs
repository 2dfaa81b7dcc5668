//! [`Watchdog`]: may this update's result be published?
//!
//! A learner on the device updates a *training* copy of the policy; the
//! copy that acts changes only when the watchdog lets the update through.
//! An update is refused — and the previous policy keeps acting — when:
//! - the learner itself refused it (returned an `Err`:
//!   [`Refusal::Learner`]);
//! - any parameter is NaN or infinite ([`Refusal::NonFinite`] with the
//!   index of the first one, in [`Params::get_flat`] order: every weight is
//!   checked), or a finite one lies outside its tensor's domain
//!   ([`Refusal::OutOfDomain`]: e.g. a Gaussian `log σ` beyond its limits,
//!   which would fail every `act`);
//! - it took longer than [`WatchdogConfig::max_duration`]
//!   ([`Refusal::Overrun`]). The duration is in the caller's unit (control
//!   ticks, a cycle counter); [`Watchdog::begin`] and [`Watchdog::overdue`]
//!   let the control loop notice an update that never ends *while it runs*
//!   (the loop keeps acting with the previous policy), and its result, if
//!   it ever comes, is refused by [`Watchdog::finish`].
//!
//! The checks run in that order; every refusal is counted by cause
//! ([`WatchdogStats`]).

use crate::error::Error;
use crate::params::Params;

/// How long an update may take.
///
/// ```
/// use microrl::safety::WatchdogConfig;
/// assert_eq!(WatchdogConfig::new(200).validate(), Ok(()));
/// assert_eq!(
///     WatchdogConfig::new(0).validate(),
///     Err(microrl::Error::config("max_duration", "must be > 0"))
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct WatchdogConfig {
    /// The longest duration an update may have and be published (`> 0`, in
    /// the caller's unit). Default 1000.
    pub max_duration: u32,
}

impl WatchdogConfig {
    /// See each field.
    pub const DEFAULT: Self = Self::new(1000);

    /// Updates may take up to `max_duration`.
    pub const fn new(max_duration: u32) -> Self {
        Self { max_duration }
    }

    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `max_duration`.
    pub fn validate(&self) -> Result<(), Error> {
        if self.max_duration == 0 {
            return Err(Error::config("max_duration", "must be > 0"));
        }
        Ok(())
    }
}

impl Default for WatchdogConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Why an update was not published.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Refusal {
    /// The learner returned this error.
    Learner(Error),
    /// Parameter `index` (flat order) is NaN or infinite.
    NonFinite {
        /// The first non-finite parameter.
        index: u32,
    },
    /// A finite parameter is outside its tensor's domain.
    OutOfDomain(Error),
    /// The update took `duration`, more than the limit.
    Overrun {
        /// The update's duration.
        duration: u32,
    },
}

/// Counts a firmware can log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WatchdogStats {
    /// Updates published.
    pub published: u64,
    /// Updates the learner refused.
    pub learner: u64,
    /// Updates with a non-finite parameter.
    pub non_finite: u64,
    /// Updates with a parameter outside its domain.
    pub out_of_domain: u64,
    /// Updates that took too long (counted once each, when first noticed).
    pub overrun: u64,
}

impl WatchdogStats {
    /// All zero.
    pub const ZERO: Self = Self {
        published: 0,
        learner: 0,
        non_finite: 0,
        out_of_domain: 0,
        overrun: 0,
    };
}

/// The publish gate (see the [module docs](self)).
///
/// ```
/// use microrl::safety::{Refusal, Watchdog, WatchdogConfig};
/// use microrl::{policy::CategoricalActor, nn::Mlp, Params};
///
/// type P = CategoricalActor<Mlp<2, 4, 2>>;
/// let mut watchdog = Watchdog::new(WatchdogConfig::new(10))?;
/// let mut acting = P::ZERO;
/// let mut candidate = P::ZERO;
/// candidate.net.first.bias[3] = f32::NAN; // a poisoned update
/// assert_eq!(
///     watchdog.review(Ok(()), &candidate, 3, &mut acting),
///     Err(Refusal::NonFinite { index: 11 }) // 2×4 weights, then bias 3
/// );
/// assert!(acting.is_finite()); // the previous policy keeps acting
/// candidate.net.first.bias[3] = 0.25;
/// assert_eq!(watchdog.review(Ok(()), &candidate, 30, &mut acting), Err(Refusal::Overrun { duration: 30 }));
/// assert_eq!(watchdog.review(Ok(()), &candidate, 3, &mut acting), Ok(()));
/// assert_eq!(acting.net.first.bias[3], 0.25);
/// assert_eq!((watchdog.stats.non_finite, watchdog.stats.overrun, watchdog.stats.published), (1, 1, 1));
/// # Ok::<(), microrl::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Watchdog {
    config: WatchdogConfig,
    /// When the running update began, if one is running.
    started: Option<u32>,
    /// The running update's overrun was already counted.
    overrun_counted: bool,
    /// Counts since construction.
    pub stats: WatchdogStats,
}

impl Watchdog {
    /// A watchdog with no update running.
    ///
    /// # Errors
    /// As [`WatchdogConfig::validate`].
    pub fn new(config: WatchdogConfig) -> Result<Self, Error> {
        config.validate()?;
        Ok(Self {
            config,
            started: None,
            overrun_counted: false,
            stats: WatchdogStats::ZERO,
        })
    }

    /// The configuration.
    pub const fn config(&self) -> &WatchdogConfig {
        &self.config
    }

    /// Why `candidate`, the result `outcome` of an update that took
    /// `duration`, may not be published; `Ok` if it may. Counts nothing.
    ///
    /// # Errors
    /// The first [`Refusal`] that applies, in the order of the
    /// [module docs](self).
    pub fn inspect<P: Params, T>(
        &self,
        outcome: Result<T, Error>,
        candidate: &P,
        duration: u32,
    ) -> Result<(), Refusal> {
        if let Err(e) = outcome {
            return Err(Refusal::Learner(e));
        }
        let mut index = 0u32;
        for i in 0..P::TENSORS {
            for &x in candidate.tensor(i) {
                if !x.is_finite() {
                    return Err(Refusal::NonFinite { index });
                }
                index = index.saturating_add(1);
            }
        }
        candidate.check_domain().map_err(Refusal::OutOfDomain)?;
        if duration > self.config.max_duration {
            return Err(Refusal::Overrun { duration });
        }
        Ok(())
    }

    /// [`inspect`](Self::inspect)s the update, counts the verdict, and on
    /// `Ok` copies `candidate` into `acting` (publishes it). On a refusal
    /// `acting` is unchanged.
    ///
    /// # Errors
    /// The [`Refusal`].
    pub fn review<P: Params, T>(
        &mut self,
        outcome: Result<T, Error>,
        candidate: &P,
        duration: u32,
        acting: &mut P,
    ) -> Result<(), Refusal> {
        let verdict = self.inspect(outcome, candidate, duration);
        let s = &mut self.stats;
        match verdict {
            Ok(()) => {
                acting.copy_from(candidate);
                s.published += 1;
            }
            Err(Refusal::Learner(_)) => s.learner += 1,
            Err(Refusal::NonFinite { .. }) => s.non_finite += 1,
            Err(Refusal::OutOfDomain(_)) => s.out_of_domain += 1,
            Err(Refusal::Overrun { .. }) => {
                // An overrun noticed by `overdue` is counted once.
                if !core::mem::take(&mut self.overrun_counted) {
                    s.overrun += 1;
                }
            }
        }
        self.overrun_counted = false;
        verdict
    }

    /// An update begins at time `now` (the caller's clock, wrapping).
    pub fn begin(&mut self, now: u32) {
        self.started = Some(now);
        self.overrun_counted = false;
    }

    /// `true` when an update is running and has run longer than the limit
    /// at time `now`: the control loop keeps the previous policy and may
    /// abandon the update. Counted once per update.
    pub fn overdue(&mut self, now: u32) -> bool {
        match self.started {
            Some(start) if now.wrapping_sub(start) > self.config.max_duration => {
                if !self.overrun_counted {
                    self.overrun_counted = true;
                    self.stats.overrun += 1;
                }
                true
            }
            _ => false,
        }
    }

    /// `true` while an update begun with [`begin`](Self::begin) has not
    /// finished.
    pub const fn running(&self) -> bool {
        self.started.is_some()
    }

    /// The update begun with [`begin`](Self::begin) finished at `now`:
    /// [`review`](Self::review) with its duration.
    ///
    /// # Errors
    /// The [`Refusal`]; [`Refusal::Learner`] with
    /// [`Error::InvalidState`] when no update was begun.
    pub fn finish<P: Params, T>(
        &mut self,
        now: u32,
        outcome: Result<T, Error>,
        candidate: &P,
        acting: &mut P,
    ) -> Result<(), Refusal> {
        let Some(start) = self.started.take() else {
            self.stats.learner += 1;
            return Err(Refusal::Learner(Error::InvalidState {
                what: "no update was begun",
            }));
        };
        self.review(outcome, candidate, now.wrapping_sub(start), acting)
    }
}
