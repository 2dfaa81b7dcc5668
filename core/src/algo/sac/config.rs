//! SAC's hyper-parameters, named as SB3's `SAC` arguments.

use crate::algo::offpolicy::{MAX_INTERVAL, Schedule};
use crate::config::check;
use crate::error::Error;
use crate::optim::AdamConfig;

/// The entropy coefficient `α` (SB3's `ent_coef`).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum EntCoef {
    /// Learned: `log α` starts at `ln(initial)` and follows the α loss
    /// `−mean(log α · (log π + target_entropy))` (SB3's `"auto"`, whose
    /// initial `α` is 1; `"auto_0.1"` is `Auto(0.1)`).
    Auto(f32),
    /// A constant `α`.
    Fixed(f32),
}

impl EntCoef {
    /// The initial (or constant) `α`.
    pub const fn initial(self) -> f32 {
        match self {
            EntCoef::Auto(a) | EntCoef::Fixed(a) => a,
        }
    }

    /// `true` when `α` is learned.
    pub const fn is_auto(self) -> bool {
        matches!(self, EntCoef::Auto(_))
    }
}

/// SAC hyper-parameters. Defaults are SB3's `SAC` (except `buffer_size`,
/// which must fit the agent's replay capacity `CAP`, and Adam's `ε`, which
/// is PyTorch's default `1e-8` that SB3's off-policy algorithms use).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct SacConfig {
    /// Transitions the replay ring keeps (`≤ CAP`). Default 1 000 000 (SB3),
    /// so an agent with a smaller `CAP` must set it.
    pub buffer_size: u32,
    /// Environment steps of uniformly random actions before learning starts,
    /// at most 10⁹ ([`MAX_INTERVAL`]).
    /// Default 100.
    pub learning_starts: u32,
    /// Minibatch size (`≤ BATCH`). Default 256.
    pub batch_size: u32,
    /// Polyak coefficient `τ` of the target critics. Default 0.005.
    pub tau: f32,
    /// Discount `γ`. Default 0.99.
    pub gamma: f32,
    /// Environment steps between training rounds, 1 to 10⁹
    /// ([`MAX_INTERVAL`]). Default 1.
    pub train_freq: u32,
    /// Gradient steps per training round, 1 to 1 000
    /// ([`MAX_GRADIENT_STEPS`](crate::algo::offpolicy::MAX_GRADIENT_STEPS)).
    /// Default 1.
    pub gradient_steps: u32,
    /// Adam learning rate of actor, critics and `log α`. Default `3e-4`.
    pub learning_rate: f32,
    /// The entropy coefficient. Default `Auto(1.0)` (SB3's `"auto"`).
    pub ent_coef: EntCoef,
    /// Target entropy of the learned `α`; `None` is SB3's `"auto"`,
    /// `−dim(A)`. Default `None`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub target_entropy: Option<f32>,
    /// Gradient steps between Polyak updates of the target critics
    /// (counted over the whole run), 1 to 10⁹
    /// ([`MAX_INTERVAL`]). Default 1.
    pub target_update_interval: u32,
    /// Adam's `β₁, β₂, ε` (every optimiser). Default `0.9, 0.999, 1e-8`.
    pub adam: AdamConfig,
}

/// Adam as PyTorch defaults it (`ε = 1e-8`), what SB3's SAC and TD3 use.
pub const ADAM_TORCH: AdamConfig = AdamConfig {
    beta1: 0.9,
    beta2: 0.999,
    eps: 1e-8,
};

impl SacConfig {
    /// This configuration with its `buffer_size` lowered to `capacity` (the
    /// agent's replay ring `CAP`) where it is larger: SB3's 10⁶ default on a
    /// sized agent ([`agent::SacSized`](crate::agent::SacSized) and
    /// [`agent::Td3Sized`](crate::agent::Td3Sized) state their `CAP`). A
    /// run whose budget fits the ring never wraps it, as SB3's never does.
    pub const fn fitted(self, capacity: usize) -> Self {
        Self {
            buffer_size: crate::algo::offpolicy::fit_buffer(self.buffer_size, capacity),
            ..self
        }
    }

    /// The defaults listed on each field (SB3's).
    pub const DEFAULT: Self = Self {
        buffer_size: 1_000_000,
        learning_starts: 100,
        batch_size: 256,
        tau: 0.005,
        gamma: 0.99,
        train_freq: 1,
        gradient_steps: 1,
        learning_rate: 3e-4,
        ent_coef: EntCoef::Auto(1.0),
        target_entropy: None,
        target_update_interval: 1,
        adam: ADAM_TORCH,
    };

    /// RL Zoo's `Pendulum-v1` settings (`learning_rate = 1e-3`, the rest
    /// SB3's defaults) with a 20 000-transition buffer — RL Zoo's run is
    /// 20 000 steps, so its 10⁶ buffer never wraps either.
    pub const PENDULUM: Self = Self {
        buffer_size: 20_000,
        learning_rate: 1e-3,
        ..Self::DEFAULT
    };

    /// Every field zero (invalid), the placeholder in [`Sac::ZERO`](super::Sac::ZERO).
    pub(crate) const ZERO: Self = Self {
        buffer_size: 0,
        learning_starts: 0,
        batch_size: 0,
        tau: 0.0,
        gamma: 0.0,
        train_freq: 0,
        gradient_steps: 0,
        learning_rate: 0.0,
        // `Auto` is the enum's first variant: a zero tag.
        ent_coef: EntCoef::Auto(0.0),
        target_entropy: None,
        target_update_interval: 0,
        adam: AdamConfig {
            beta1: 0.0,
            beta2: 0.0,
            eps: 0.0,
        },
    };

    /// The target entropy in use: the configured one, or `−act_dim`.
    pub fn target_entropy_for(&self, act_dim: usize) -> f32 {
        self.target_entropy.unwrap_or(-(act_dim as f32))
    }

    /// The settings shared with the other off-policy learner.
    pub const fn schedule(&self) -> Schedule {
        Schedule {
            buffer_size: self.buffer_size,
            learning_starts: self.learning_starts,
            batch_size: self.batch_size,
            tau: self.tau,
            gamma: self.gamma,
            train_freq: self.train_freq,
            gradient_steps: self.gradient_steps,
            learning_rate: self.learning_rate,
        }
    }

    /// Checks every field for an agent with replay capacity `capacity` and
    /// minibatch capacity `batch`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first offending field.
    pub fn validate(&self, capacity: usize, batch: usize) -> Result<(), Error> {
        self.schedule().validate(capacity, batch)?;
        let alpha = self.ent_coef.initial();
        check(
            "ent_coef",
            match self.ent_coef {
                // ln α must be finite: α > 0 and not subnormal.
                EntCoef::Auto(a) => a.is_normal() && a > 0.0,
                EntCoef::Fixed(a) => a.is_finite() && a >= 0.0,
            } && alpha <= 1e6,
            "must be finite, > 0 when learned, >= 0 when fixed, and <= 1e6",
        )?;
        check(
            "target_entropy",
            self.target_entropy.is_none_or(f32::is_finite),
            "must be finite (or auto)",
        )?;
        check(
            "target_update_interval",
            (1..=MAX_INTERVAL).contains(&self.target_update_interval),
            "must be in 1..=1000000000 (MAX_INTERVAL)",
        )?;
        self.adam.validate()
    }
}

impl Default for SacConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Refusal, assert_refused_by_name};

    /// `fitted` lowers a buffer larger than the ring to it and leaves a
    /// smaller one and every other field alone (SAC's and TD3's).
    #[test]
    fn fitted_lowers_the_buffer_to_the_ring_only() {
        let sac = SacConfig::DEFAULT.fitted(50_000);
        assert_eq!(
            sac,
            SacConfig {
                buffer_size: 50_000,
                ..SacConfig::DEFAULT
            }
        );
        assert_eq!(SacConfig::PENDULUM.fitted(50_000), SacConfig::PENDULUM);
        assert_eq!(SacConfig::DEFAULT.fitted(usize::MAX), SacConfig::DEFAULT);
        let td3 = crate::algo::Td3Config::DEFAULT.fitted(2_000);
        assert_eq!(
            td3,
            crate::algo::Td3Config {
                buffer_size: 2_000,
                ..crate::algo::Td3Config::DEFAULT
            }
        );
        assert_eq!(
            crate::algo::Td3Config::PENDULUM.fitted(50_000),
            crate::algo::Td3Config::PENDULUM
        );
    }

    /// SAC's own fields, each refused by name; the shared ones are
    /// `Schedule::validate`'s (tested in `offpolicy`), reached through it.
    #[test]
    fn validate_names_the_field() {
        let ok = SacConfig {
            buffer_size: 100,
            batch_size: 32,
            ..SacConfig::DEFAULT
        };
        let cases: [Refusal<SacConfig>; 7] = [
            ("gradient_steps", |c| c.gradient_steps = u32::MAX),
            ("target_update_interval", |c| {
                c.target_update_interval = u32::MAX
            }),
            ("buffer_size", |c| c.buffer_size = 101),
            ("ent_coef", |c| c.ent_coef = EntCoef::Auto(0.0)),
            ("ent_coef", |c| c.ent_coef = EntCoef::Fixed(2e6)),
            ("target_entropy", |c| c.target_entropy = Some(f32::INFINITY)),
            ("target_update_interval", |c| c.target_update_interval = 0),
        ];
        assert_refused_by_name(ok, &cases, |c| c.validate(100, 32));
        // Each shared setting reaches `Schedule` as itself.
        let s = crate::algo::offpolicy::Schedule::DISTINCT;
        let distinct = SacConfig {
            buffer_size: s.buffer_size,
            learning_starts: s.learning_starts,
            batch_size: s.batch_size,
            tau: s.tau,
            gamma: s.gamma,
            train_freq: s.train_freq,
            gradient_steps: s.gradient_steps,
            learning_rate: s.learning_rate,
            ..SacConfig::DEFAULT
        };
        assert_eq!(distinct.schedule(), s);
        let fixed_zero = SacConfig {
            ent_coef: EntCoef::Fixed(0.0),
            ..ok
        };
        assert_eq!(fixed_zero.validate(100, 32), Ok(()));
        assert!(SacConfig::ZERO.validate(100, 32).is_err());
        assert_eq!(ok.target_entropy_for(3), -3.0);
    }
}
