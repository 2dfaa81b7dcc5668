//! [`Shield`]: the last word on every actuator command.
//!
//! A *post-posed shield* in the sense of Alshiekh et al., "Safe
//! Reinforcement Learning via Shielding" (AAAI 2018): the learner proposes an
//! action, the shield lets it through when it is safe and otherwise
//! substitutes a safe one, and the learner is told which action was
//! *applied*, so that it learns from what the plant actually received.
//!
//! Design:
//! - **Four corrections, in a fixed order.** A non-finite proposal (NaN from
//!   a broken network, an `Err` the caller turned into NaN) is replaced by
//!   [`ShieldConfig::safe_action`]; the caller's safe-set map
//!   ([`SafeSet::project`], e.g. "no torque that pushes further towards the
//!   end stop") maps an unsafe command into the safe set; the actuator bounds
//!   clip it; the rate limit bounds the change from the previously applied
//!   command. Bounds and rate are the actuator's hard limits and come last,
//!   so the applied command always satisfies them; when the rate limit keeps
//!   the command from reaching the safe set in one tick, it moves towards it
//!   at the maximum rate (documented, and counted as a rate intervention).
//! - **Generic, not a trait object.** The safe-set map is a type parameter
//!   (a closure `Fn(&obs, action) -> action`, or [`Unconstrained`]), so it
//!   inlines, needs no allocation and no `dyn`.
//! - **It reports.** [`Shield::apply`] returns a [`Shielded`] with the
//!   proposal, the applied command and which corrections fired
//!   ([`Interventions`]); [`ShieldStats`] counts ticks and each cause.

use nalgebra::SVector;

use crate::error::Error;
use crate::math;

/// Limits of an `A`-dimensional actuator (see the [module docs](self)).
///
/// ```
/// use microrl::safety::ShieldConfig;
/// // ±1 (CartPoleContinuous's force), at most 0.25 change per tick.
/// let config = ShieldConfig::<1>::symmetric(1.0).with_max_delta(0.25);
/// assert_eq!(config.validate(), Ok(()));
/// let bad = ShieldConfig::<1> { max_delta: [0.0], ..config };
/// assert_eq!(
///     bad.validate(),
///     Err(microrl::Error::config("max_delta", "must be > 0 (f32::INFINITY: no rate limit)"))
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ShieldConfig<const A: usize> {
    /// Lower actuator bound per dimension (finite).
    pub low: [f32; A],
    /// Upper actuator bound per dimension (finite, `≥ low`).
    pub high: [f32; A],
    /// Largest change of the applied command per tick, per dimension
    /// (`> 0`; `f32::INFINITY` for no rate limit).
    pub max_delta: [f32; A],
    /// The command substituted for a non-finite proposal, before the bounds
    /// and the rate limit (finite, within `low..=high`).
    pub safe_action: [f32; A],
}

impl<const A: usize> ShieldConfig<A> {
    /// Bounds `low..=high`, no rate limit, safe action the midpoint.
    pub const fn new(low: [f32; A], high: [f32; A]) -> Self {
        let mut safe_action = [0.0; A];
        let mut i = 0;
        while i < A {
            safe_action[i] = 0.5 * low[i] + 0.5 * high[i];
            i += 1;
        }
        Self {
            low,
            high,
            max_delta: [f32::INFINITY; A],
            safe_action,
        }
    }

    /// `−limit..=limit` on every dimension, no rate limit, safe action 0.
    pub const fn symmetric(limit: f32) -> Self {
        Self::new([-limit; A], [limit; A])
    }

    /// The same limits with the rate limit `max_delta` on every dimension.
    pub const fn with_max_delta(mut self, max_delta: f32) -> Self {
        self.max_delta = [max_delta; A];
        self
    }

    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming `low`, `high`, `max_delta` or
    /// `safe_action`.
    pub fn validate(&self) -> Result<(), Error> {
        for i in 0..A {
            if !self.low[i].is_finite() {
                return Err(Error::config("low", "must be finite"));
            }
            if !self.high[i].is_finite() {
                return Err(Error::config("high", "must be finite"));
            }
            if self.low[i] > self.high[i] {
                return Err(Error::config("high", "must be >= low"));
            }
            // `> 0` is false for NaN.
            if self.max_delta[i].partial_cmp(&0.0) != Some(core::cmp::Ordering::Greater) {
                return Err(Error::config(
                    "max_delta",
                    "must be > 0 (f32::INFINITY: no rate limit)",
                ));
            }
            let s = self.safe_action[i];
            if !(s >= self.low[i] && s <= self.high[i]) {
                return Err(Error::config(
                    "safe_action",
                    "must be finite and within low..=high",
                ));
            }
        }
        Ok(())
    }
}

/// A map from any command to a safe one at observation `obs`: the shield's
/// model of the safe set. Implemented for closures
/// `Fn(&SVector<f32, OBS>, SVector<f32, A>) -> SVector<f32, A>` and for
/// [`Unconstrained`].
pub trait SafeSet<const OBS: usize, const A: usize> {
    /// `action` when it is safe at `obs`, otherwise a safe replacement.
    fn project(&self, obs: &SVector<f32, OBS>, action: SVector<f32, A>) -> SVector<f32, A>;
}

impl<F, const OBS: usize, const A: usize> SafeSet<OBS, A> for F
where
    F: Fn(&SVector<f32, OBS>, SVector<f32, A>) -> SVector<f32, A>,
{
    #[inline]
    fn project(&self, obs: &SVector<f32, OBS>, action: SVector<f32, A>) -> SVector<f32, A> {
        self(obs, action)
    }
}

/// No safe-set constraint beyond the bounds and the rate limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unconstrained;

impl<const OBS: usize, const A: usize> SafeSet<OBS, A> for Unconstrained {
    #[inline]
    fn project(&self, _obs: &SVector<f32, OBS>, action: SVector<f32, A>) -> SVector<f32, A> {
        action
    }
}

/// Which corrections [`Shield::apply`] made, as bit flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Interventions(pub u8);

impl Interventions {
    /// The proposal was not finite: [`ShieldConfig::safe_action`] replaced it.
    pub const NON_FINITE: u8 = 1;
    /// The safe-set map changed the command (or returned a non-finite one,
    /// which was replaced by the safe action).
    pub const SAFE_SET: u8 = 2;
    /// The actuator bounds clipped the command.
    pub const BOUNDS: u8 = 4;
    /// The rate limit held the command back.
    pub const RATE: u8 = 8;

    /// `true` when any correction was made.
    pub const fn any(self) -> bool {
        self.0 != 0
    }

    /// `true` when the correction `flag` was made.
    pub const fn has(self, flag: u8) -> bool {
        self.0 & flag != 0
    }
}

/// What one [`Shield::apply`] did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shielded<const A: usize> {
    /// The command as proposed.
    pub proposed: SVector<f32, A>,
    /// The command applied to the actuator: what learning must store.
    pub action: SVector<f32, A>,
    /// The corrections made.
    pub interventions: Interventions,
}

impl<const A: usize> Shielded<A> {
    /// `true` when the shield changed the proposal.
    pub const fn intervened(&self) -> bool {
        self.interventions.any()
    }
}

/// Counts a firmware can log: ticks shielded and each cause of intervention
/// (one tick can have several causes; `interventions` counts it once).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ShieldStats {
    /// Commands shielded.
    pub ticks: u64,
    /// Commands changed by at least one correction.
    pub interventions: u64,
    /// Non-finite proposals replaced by the safe action.
    pub non_finite: u64,
    /// Commands the safe-set map changed.
    pub safe_set: u64,
    /// Commands clipped to the actuator bounds.
    pub bounds: u64,
    /// Commands held back by the rate limit.
    pub rate: u64,
}

impl ShieldStats {
    /// All zero.
    pub const ZERO: Self = Self {
        ticks: 0,
        interventions: 0,
        non_finite: 0,
        safe_set: 0,
        bounds: 0,
        rate: 0,
    };
}

/// The action shield (see the [module docs](self)): limits, a safe-set map
/// `S` and the previously applied command.
///
/// ```
/// use microrl::safety::{Shield, ShieldConfig};
/// use microrl::SVector;
///
/// // Never push further right when the cart is already right of x = 1.
/// let keep_left = |obs: &SVector<f32, 4>, a: SVector<f32, 1>| {
///     if obs[0] > 1.0 { SVector::from([a[0].min(0.0)]) } else { a }
/// };
/// let mut shield = Shield::new(ShieldConfig::<1>::symmetric(1.0).with_max_delta(0.5), keep_left)?;
/// let obs = SVector::from([1.5, 0.0, 0.0, 0.0]);
/// let first = shield.apply(&obs, SVector::from([0.8]));
/// assert_eq!(first.action[0], 0.0); // the safe-set map refused to push right
/// let second = shield.apply(&SVector::zeros(), SVector::from([f32::NAN]));
/// assert_eq!(second.action[0], 0.0); // NaN became the safe action, 0
/// let third = shield.apply(&SVector::zeros(), SVector::from([3.0]));
/// assert_eq!(third.action[0], 0.5); // clipped to 1, then rate-limited to 0 + 0.5
/// assert_eq!(shield.stats.interventions, 3);
/// # Ok::<(), microrl::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Shield<const A: usize, S> {
    config: ShieldConfig<A>,
    /// The safe-set map.
    pub safe_set: S,
    /// The last applied command (`None` after [`reset`](Self::reset): no rate
    /// limit on the next one).
    last: Option<SVector<f32, A>>,
    /// Counts since construction.
    pub stats: ShieldStats,
}

impl<const A: usize, S> Shield<A, S> {
    /// A shield with a [validated](ShieldConfig::validate) `config`.
    ///
    /// # Errors
    /// As [`ShieldConfig::validate`].
    pub fn new(config: ShieldConfig<A>, safe_set: S) -> Result<Self, Error> {
        config.validate()?;
        Ok(Self {
            config,
            safe_set,
            last: None,
            stats: ShieldStats::ZERO,
        })
    }

    /// The limits.
    pub const fn config(&self) -> &ShieldConfig<A> {
        &self.config
    }

    /// The last applied command, if any since the last reset.
    pub const fn last_applied(&self) -> Option<SVector<f32, A>> {
        self.last
    }

    /// Forgets the last applied command (e.g. the actuator was switched off
    /// between episodes): the next command is not rate-limited.
    pub fn reset(&mut self) {
        self.last = None;
    }

    /// Sets the last applied command (e.g. the actuator's measured position)
    /// so that the next command is rate-limited from it; clipped to the
    /// bounds, a non-finite one replaced by the safe action.
    pub fn reset_to(&mut self, applied: SVector<f32, A>) {
        let mut a = applied;
        for i in 0..A {
            let x = if a[i].is_finite() {
                a[i]
            } else {
                self.config.safe_action[i]
            };
            a[i] = math::clamp(x, self.config.low[i], self.config.high[i]);
        }
        self.last = Some(a);
    }

    /// Shields one command proposed at observation `obs` and records it as
    /// the last applied one. The returned [`Shielded::action`] is finite,
    /// within the bounds and within `max_delta` of the previous one.
    pub fn apply<const OBS: usize>(
        &mut self,
        obs: &SVector<f32, OBS>,
        proposed: SVector<f32, A>,
    ) -> Shielded<A>
    where
        S: SafeSet<OBS, A>,
    {
        let c = &self.config;
        let mut flags = 0u8;
        let mut a = proposed;
        if a.iter().any(|x| !x.is_finite()) {
            flags |= Interventions::NON_FINITE;
            a = SVector::from(c.safe_action);
        }
        let projected = self.safe_set.project(obs, a);
        if projected != a {
            flags |= Interventions::SAFE_SET;
            a = if projected.iter().all(|x| x.is_finite()) {
                projected
            } else {
                SVector::from(c.safe_action)
            };
        }
        for i in 0..A {
            let clipped = math::clamp(a[i], c.low[i], c.high[i]);
            if clipped != a[i] {
                flags |= Interventions::BOUNDS;
                a[i] = clipped;
            }
            if let Some(last) = self.last {
                let limited = math::clamp(a[i], last[i] - c.max_delta[i], last[i] + c.max_delta[i]);
                // Stay within the bounds even when `last ± max_delta` rounds.
                let limited = math::clamp(limited, c.low[i], c.high[i]);
                if limited != a[i] {
                    flags |= Interventions::RATE;
                    a[i] = limited;
                }
            }
        }
        self.last = Some(a);
        let interventions = Interventions(flags);
        let s = &mut self.stats;
        s.ticks += 1;
        s.interventions += u64::from(interventions.any());
        s.non_finite += u64::from(interventions.has(Interventions::NON_FINITE));
        s.safe_set += u64::from(interventions.has(Interventions::SAFE_SET));
        s.bounds += u64::from(interventions.has(Interventions::BOUNDS));
        s.rate += u64::from(interventions.has(Interventions::RATE));
        Shielded {
            proposed,
            action: a,
            interventions,
        }
    }
}
