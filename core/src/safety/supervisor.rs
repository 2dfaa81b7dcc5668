//! [`Supervisor`]: which controller acts — the learned policy or the
//! fallback.
//!
//! The simplex architecture (Sha, "Using Simplicity to Control Complexity",
//! IEEE Software 2001; Seto, Krogh, Sha, Chutinan, "The Simplex
//! architecture for safe online control system upgrades", ACC 1998): a
//! high-performance but unverified controller (here, the learned policy)
//! runs while the plant is inside a recoverable envelope; a simple, trusted
//! controller (the fallback: a PD law, an LQR) takes over when the plant
//! leaves it or the complex controller misbehaves, and hands back only once
//! the plant is well inside again.
//!
//! Design:
//! - **Causes, checked every tick, in this order**: a non-finite observation
//!   (a NaN or infinite sensor reading), a stuck sensor (the same
//!   observation, bit for bit, at [`SupervisorConfig::stuck_ticks`]
//!   consecutive ticks), leaving the [`Envelope`] (margin `< 0`), a
//!   refusal of the learned policy ([`Supervisor::latch`]), and its running
//!   performance falling below the fallback's reference by more than a
//!   margin; and, on the tick it happens, an `Err` from the learned policy
//!   ([`Supervisor::policy_failed`]).
//! - **Hysteresis.** Control returns to the learned policy only after at
//!   least [`min_dwell`](SupervisorConfig::min_dwell) ticks under the
//!   fallback, with a finite, changing observation whose envelope margin is
//!   at least [`reentry_margin`](SupervisorConfig::reentry_margin) (a band
//!   inside the envelope), so the two controllers do not chatter at the
//!   envelope's edge. A performance trip is *latched* until a new policy is
//!   published ([`Supervisor::policy_published`]): the same deterministic
//!   policy would fall short again.
//! - **No NaN reaches a controller.** On a non-finite reading the
//!   supervisor hands the controllers the last finite observation (a
//!   zero-order hold; zeros if there never was one) and marks the decision
//!   not [`fresh`](Decision::fresh), as it does for a stuck reading; what to
//!   command without news from the plant is the caller's choice
//!   ([`Guarded`](super::Guarded) sends the shield's safe action by
//!   default, see [`StaleCommand`](super::StaleCommand)).
//! - **Performance** is an exponential moving average of a per-tick score
//!   the caller reports ([`Supervisor::record`]; the plant's reward or a
//!   tracking cost's negative) over the ticks the learned policy acted:
//!   `m ← m + α (r − m)`, starting at the first score, judged after
//!   [`perf_warmup`](SupervisorConfig::perf_warmup) scores.

use nalgebra::SVector;

use crate::error::Error;

/// A region of observations the learned policy may act in: `margin(obs)`
/// is `≥ 0` inside, `< 0` outside, and grows towards the inside (NaN counts
/// as outside). Implemented for [`Bounds`] and for closures
/// `Fn(&SVector<f32, OBS>) -> f32`.
pub trait Envelope<const OBS: usize> {
    /// The signed margin of `obs`.
    fn margin(&self, obs: &SVector<f32, OBS>) -> f32;
}

impl<F, const OBS: usize> Envelope<OBS> for F
where
    F: Fn(&SVector<f32, OBS>) -> f32,
{
    #[inline]
    fn margin(&self, obs: &SVector<f32, OBS>) -> f32 {
        self(obs)
    }
}

/// Per-dimension bounds `low ≤ obs ≤ high`; a dimension with an infinite
/// bound on either side is not constrained.
///
/// The margin is the smallest distance to a bound in units of the
/// half-width: `minᵢ min(obsᵢ − lowᵢ, highᵢ − obsᵢ) / ((highᵢ − lowᵢ)/2)`,
/// 1 at the centre, 0 on a bound, negative outside — so a re-entry band of
/// 0.5 means "back in the inner half of every constrained dimension".
///
/// ```
/// use microrl::safety::{Bounds, Envelope};
/// use microrl::SVector;
/// let b = Bounds::new([-2.0, -1.0], [2.0, f32::INFINITY]);
/// assert_eq!(b.margin(&SVector::from([0.0, 100.0])), 1.0);
/// assert_eq!(b.margin(&SVector::from([1.0, 0.0])), 0.5);
/// assert!(b.margin(&SVector::from([3.0, 0.0])) < 0.0);
/// assert!(b.margin(&SVector::from([f32::NAN, 0.0])) < 0.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Bounds<const OBS: usize> {
    /// Lower bound per dimension (`-f32::INFINITY`: unconstrained).
    pub low: [f32; OBS],
    /// Upper bound per dimension (`f32::INFINITY`: unconstrained).
    pub high: [f32; OBS],
}

impl<const OBS: usize> Bounds<OBS> {
    /// `low..=high` per dimension.
    pub const fn new(low: [f32; OBS], high: [f32; OBS]) -> Self {
        Self { low, high }
    }

    /// Checks the bounds: not NaN, and `low < high` where both are finite.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `envelope.low` or `envelope.high`.
    pub fn validate(&self) -> Result<(), Error> {
        for i in 0..OBS {
            if self.low[i].is_nan() {
                return Err(Error::config("envelope.low", "must not be NaN"));
            }
            if self.high[i].is_nan() {
                return Err(Error::config("envelope.high", "must not be NaN"));
            }
            if self.low[i].partial_cmp(&self.high[i]) != Some(core::cmp::Ordering::Less) {
                return Err(Error::config("envelope.high", "must be > envelope.low"));
            }
        }
        Ok(())
    }
}

impl<const OBS: usize> Envelope<OBS> for Bounds<OBS> {
    fn margin(&self, obs: &SVector<f32, OBS>) -> f32 {
        let mut margin = 1.0f32;
        for i in 0..OBS {
            let (low, high, x) = (self.low[i], self.high[i], obs[i]);
            if !x.is_finite() {
                return -1.0;
            }
            if !(low.is_finite() && high.is_finite()) {
                continue;
            }
            let half = 0.5 * (high - low);
            let m = (x - low).min(high - x) / half;
            if m < margin {
                margin = m;
            }
        }
        margin
    }
}

/// How the [`Supervisor`] switches (see the [module docs](self)).
///
/// ```
/// use microrl::safety::SupervisorConfig;
/// let config = SupervisorConfig { min_dwell: 25, stuck_ticks: 5, ..SupervisorConfig::DEFAULT };
/// assert_eq!(config.validate(), Ok(()));
/// let bad = SupervisorConfig { perf_alpha: 0.0, ..config };
/// assert_eq!(bad.validate(), Err(microrl::Error::config("perf_alpha", "must be in (0, 1]")));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct SupervisorConfig {
    /// Envelope margin at or above which control may return to the learned
    /// policy (`≥ 0`; with [`Bounds`], `< 1`). Default 0.5.
    pub reentry_margin: f32,
    /// Ticks under the fallback before control may return. Default 50.
    pub min_dwell: u32,
    /// `K`: the same observation at `K` consecutive ticks is a stuck sensor
    /// (`≥ 2`, or 0 to disable). Default 5.
    pub stuck_ticks: u32,
    /// `α` of the performance average, in `(0, 1]`. Default 0.01 (about
    /// the last 100 ticks).
    pub perf_alpha: f32,
    /// The fallback's reference performance: its mean per-tick score
    /// (finite). Default 0.
    pub perf_reference: f32,
    /// How far below the reference the average may fall before the fallback
    /// takes over (`≥ 0`; `f32::INFINITY` disables the performance check).
    /// Default `f32::INFINITY`.
    pub perf_margin: f32,
    /// Scores of the learned policy before its average is judged. Default 100.
    pub perf_warmup: u32,
}

impl SupervisorConfig {
    /// See each field.
    pub const DEFAULT: Self = Self {
        reentry_margin: 0.5,
        min_dwell: 50,
        stuck_ticks: 5,
        perf_alpha: 0.01,
        perf_reference: 0.0,
        perf_margin: f32::INFINITY,
        perf_warmup: 100,
    };

    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first offending field.
    pub fn validate(&self) -> Result<(), Error> {
        if !(self.reentry_margin >= 0.0 && self.reentry_margin.is_finite()) {
            return Err(Error::config("reentry_margin", "must be finite and >= 0"));
        }
        if self.stuck_ticks == 1 {
            return Err(Error::config(
                "stuck_ticks",
                "must be >= 2, or 0 to disable",
            ));
        }
        if !(self.perf_alpha > 0.0 && self.perf_alpha <= 1.0) {
            return Err(Error::config("perf_alpha", "must be in (0, 1]"));
        }
        if !self.perf_reference.is_finite() {
            return Err(Error::config("perf_reference", "must be finite"));
        }
        if self.perf_margin.is_nan() || self.perf_margin < 0.0 {
            return Err(Error::config(
                "perf_margin",
                "must be >= 0 (f32::INFINITY: no performance check)",
            ));
        }
        Ok(())
    }
}

impl Default for SupervisorConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Who acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Mode {
    /// The learned policy.
    Learned,
    /// The fallback controller.
    Fallback,
}

/// Why the fallback took over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Cause {
    /// A non-finite observation.
    NonFinite,
    /// The same observation at `stuck_ticks` consecutive ticks.
    Stuck,
    /// The observation left the envelope.
    Envelope,
    /// The learned policy's average score fell below the reference by more
    /// than the margin.
    Performance,
    /// The learned policy returned an error.
    PolicyError,
    /// The learned policy was refused ([`Supervisor::latch`], e.g. after a
    /// failed rollback): held until a new policy is published.
    Refused,
}

/// What [`Supervisor::observe`] decided for this tick.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision<const OBS: usize> {
    /// Who acts this tick.
    pub mode: Mode,
    /// The observation the controllers get: the reading, or the last finite
    /// one when the reading is not finite.
    pub obs: SVector<f32, OBS>,
    /// Set on the tick the fallback took over: why.
    pub switched_to_fallback: Option<Cause>,
    /// `true` on the tick control returned to the learned policy.
    pub handed_back: bool,
    /// `false` when the reading carries no news: non-finite, or stuck
    /// (identical for at least `stuck_ticks` ticks).
    pub fresh: bool,
}

/// Counts a firmware can log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SupervisorStats {
    /// Ticks the learned policy acted.
    pub ticks_learned: u64,
    /// Ticks the fallback acted.
    pub ticks_fallback: u64,
    /// Switches to the fallback.
    pub to_fallback: u64,
    /// Switches back to the learned policy.
    pub to_learned: u64,
    /// Switches caused by a non-finite observation.
    pub non_finite: u64,
    /// Switches caused by a stuck sensor.
    pub stuck: u64,
    /// Switches caused by leaving the envelope.
    pub envelope: u64,
    /// Switches caused by low performance.
    pub performance: u64,
    /// Switches caused by an error of the learned policy.
    pub policy_error: u64,
    /// Switches caused by [`Supervisor::latch`].
    pub refused: u64,
    /// Non-finite readings seen (each replaced by the last finite one).
    pub non_finite_obs: u64,
    /// Readings judged stuck (the `stuck_ticks`-th identical one and each
    /// after it).
    pub stuck_obs: u64,
}

impl SupervisorStats {
    /// All zero.
    pub const ZERO: Self = Self {
        ticks_learned: 0,
        ticks_fallback: 0,
        to_fallback: 0,
        to_learned: 0,
        non_finite: 0,
        stuck: 0,
        envelope: 0,
        performance: 0,
        policy_error: 0,
        refused: 0,
        non_finite_obs: 0,
        stuck_obs: 0,
    };
}

/// The switching logic of the simplex architecture (see the
/// [module docs](self)), over an [`Envelope`] `E`.
///
/// ```
/// use microrl::safety::{Bounds, Mode, Supervisor, SupervisorConfig};
/// use microrl::SVector;
/// let config = SupervisorConfig { min_dwell: 2, ..SupervisorConfig::DEFAULT };
/// let mut sup = Supervisor::new(config, Bounds::new([-1.0], [1.0]))?;
/// assert_eq!(sup.observe(&SVector::from([0.1])).mode, Mode::Learned);
/// assert_eq!(sup.observe(&SVector::from([f32::NAN])).mode, Mode::Fallback);
/// assert_eq!(sup.observe(&SVector::from([0.2])).mode, Mode::Fallback); // dwell
/// assert_eq!(sup.observe(&SVector::from([0.3])).mode, Mode::Learned);
/// assert_eq!(sup.stats.non_finite, 1);
/// # Ok::<(), microrl::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Supervisor<const OBS: usize, E> {
    config: SupervisorConfig,
    /// The envelope.
    pub envelope: E,
    mode: Mode,
    cause: Option<Cause>,
    /// Ticks since the last switch to the fallback.
    dwell: u32,
    /// The previous reading, bit for bit (for the stuck-sensor check).
    previous: Option<SVector<f32, OBS>>,
    /// Consecutive ticks with the same reading (1 for a new one).
    same: u32,
    /// The last finite reading.
    last_finite: SVector<f32, OBS>,
    /// Performance average and the number of scores in it.
    perf: f32,
    perf_count: u32,
    /// A performance trip waiting for a new policy.
    perf_latched: bool,
    /// A refusal ([`Supervisor::latch`]) waiting for a new policy.
    refused: bool,
    /// Who acted at the last `observe` (the score that follows is theirs).
    acted: Mode,
    /// Counts since construction.
    pub stats: SupervisorStats,
}

impl<const OBS: usize, E: Envelope<OBS>> Supervisor<OBS, E> {
    /// A supervisor with the learned policy in control.
    ///
    /// # Errors
    /// As [`SupervisorConfig::validate`].
    pub fn new(config: SupervisorConfig, envelope: E) -> Result<Self, Error> {
        config.validate()?;
        Ok(Self {
            config,
            envelope,
            mode: Mode::Learned,
            cause: None,
            dwell: 0,
            previous: None,
            same: 0,
            last_finite: SVector::zeros(),
            perf: 0.0,
            perf_count: 0,
            perf_latched: false,
            refused: false,
            acted: Mode::Learned,
            stats: SupervisorStats::ZERO,
        })
    }

    /// The configuration.
    pub const fn config(&self) -> &SupervisorConfig {
        &self.config
    }

    /// Who acts now.
    pub const fn mode(&self) -> Mode {
        self.mode
    }

    /// Why the fallback is acting (`None` while the learned policy acts).
    pub const fn cause(&self) -> Option<Cause> {
        self.cause
    }

    /// Who acted at the last tick (after [`observe`](Self::observe), and
    /// after [`policy_failed`](Self::policy_failed) or
    /// [`latch`](Self::latch) on that tick).
    pub const fn acted(&self) -> Mode {
        self.acted
    }

    /// The learned policy's performance average, once it has a score.
    pub fn performance(&self) -> Option<f32> {
        (self.perf_count > 0).then_some(self.perf)
    }

    /// Decides who acts on the reading `obs` (call once per tick, before
    /// acting).
    pub fn observe(&mut self, obs: &SVector<f32, OBS>) -> Decision<OBS> {
        let finite = obs.iter().all(|x| x.is_finite());
        // Stuck: bit-identical to the previous reading.
        let same = self.previous.is_some_and(|p| {
            p.iter()
                .zip(obs.iter())
                .all(|(a, b)| a.to_bits() == b.to_bits())
        });
        self.same = if same { self.same.saturating_add(1) } else { 1 };
        self.previous = Some(*obs);
        if finite {
            self.last_finite = *obs;
        } else {
            self.stats.non_finite_obs += 1;
        }
        // A non-finite reading is refused as such, not also as stuck.
        let stuck = finite && self.config.stuck_ticks >= 2 && self.same >= self.config.stuck_ticks;
        self.stats.stuck_obs += u64::from(stuck);
        let margin = if finite {
            self.envelope.margin(obs)
        } else {
            -1.0
        };
        let cause = if !finite {
            Some(Cause::NonFinite)
        } else if stuck {
            Some(Cause::Stuck)
        } else if margin.is_nan() || margin < 0.0 {
            Some(Cause::Envelope)
        } else if self.refused {
            Some(Cause::Refused)
        } else if self.perf_latched {
            Some(Cause::Performance)
        } else {
            None
        };
        let mut decision = Decision {
            mode: self.mode,
            obs: self.last_finite,
            switched_to_fallback: None,
            handed_back: false,
            fresh: finite && !stuck,
        };
        match self.mode {
            Mode::Learned => {
                if let Some(cause) = cause {
                    self.switch_to_fallback(cause);
                    decision.switched_to_fallback = Some(cause);
                }
            }
            Mode::Fallback => {
                self.dwell = self.dwell.saturating_add(1);
                let clear = cause.is_none() && margin >= self.config.reentry_margin;
                if clear && self.dwell >= self.config.min_dwell {
                    self.mode = Mode::Learned;
                    self.cause = None;
                    self.stats.to_learned += 1;
                    decision.handed_back = true;
                }
            }
        }
        decision.mode = self.mode;
        self.acted = self.mode;
        match self.mode {
            Mode::Learned => self.stats.ticks_learned += 1,
            Mode::Fallback => self.stats.ticks_fallback += 1,
        }
        decision
    }

    /// The tick counted for the learned policy at `observe` is the
    /// fallback's after all.
    fn take_this_tick(&mut self) {
        if self.acted == Mode::Learned && self.stats.ticks_learned > 0 {
            self.stats.ticks_learned -= 1;
            self.stats.ticks_fallback += 1;
        }
        self.acted = Mode::Fallback;
    }

    fn switch_to_fallback(&mut self, cause: Cause) {
        self.mode = Mode::Fallback;
        self.cause = Some(cause);
        self.dwell = 0;
        let s = &mut self.stats;
        s.to_fallback += 1;
        match cause {
            Cause::NonFinite => s.non_finite += 1,
            Cause::Stuck => s.stuck += 1,
            Cause::Envelope => s.envelope += 1,
            Cause::Performance => s.performance += 1,
            Cause::PolicyError => s.policy_error += 1,
            Cause::Refused => s.refused += 1,
        }
    }

    /// The learned policy returned an error this tick: the fallback takes
    /// over now (this tick's command should be the fallback's). Counted in
    /// the ticks under the fallback from the next tick on.
    pub fn policy_failed(&mut self) {
        if self.mode == Mode::Learned {
            self.switch_to_fallback(Cause::PolicyError);
            self.take_this_tick();
        }
    }

    /// Reports the score of the tick just acted (after the plant's step). A
    /// score of the learned policy updates its performance average and may
    /// trip (latch) the performance check, effective from the next
    /// [`observe`](Self::observe); a fallback's score is ignored, as is a
    /// non-finite one.
    pub fn record(&mut self, score: f32) {
        if self.acted != Mode::Learned || !score.is_finite() {
            return;
        }
        self.perf = if self.perf_count == 0 {
            score
        } else {
            self.perf + self.config.perf_alpha * (score - self.perf)
        };
        self.perf_count = self.perf_count.saturating_add(1);
        let floor = self.config.perf_reference - self.config.perf_margin;
        if self.perf_count >= self.config.perf_warmup.max(1) && self.perf < floor {
            self.perf_latched = true;
        }
    }

    /// Hands control to the fallback now (if the learned policy has it) and
    /// keeps it there until the next [`policy_published`](Self::policy_published),
    /// e.g. when the acting policy is known bad and no good one could be
    /// restored.
    pub fn latch(&mut self) {
        self.refused = true;
        if self.mode == Mode::Learned {
            self.switch_to_fallback(Cause::Refused);
            self.take_this_tick();
        }
    }

    /// A new learned policy was published (or the last good one restored):
    /// clears a performance trip and a [`latch`](Self::latch) and starts the
    /// performance average afresh.
    pub fn policy_published(&mut self) {
        self.perf_latched = false;
        self.refused = false;
        self.perf_count = 0;
        self.perf = 0.0;
    }
}
