//! SAC's hyper-parameters, named as SB3's `SAC` arguments.

use crate::algo::offpolicy::{MAX_INTERVAL, Schedule};
use crate::config::check;
use crate::error::Error;
use crate::optim::AdamConfig;

/// The entropy coefficient `α` (SB3's `ent_coef`).
///
/// With the `serde` feature it is written as SB3 spells it: a number is a
/// fixed `α` (`ent_coef = 0.1`), `"auto"` a learned one starting at 1 and
/// `"auto_0.1"` a learned one starting at 0.1; a number in a string
/// (`"0.1"`, which SB3's `float(ent_coef)` also reads) is fixed. The
/// tagged tables `{ auto = 1.0 }` and `{ fixed = 0.1 }`, what runs saved
/// before these spellings recorded, are read too.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
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

#[cfg(feature = "serde")]
mod sb3_spelling {
    use core::fmt;

    use serde::de::{self, MapAccess, Visitor};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::EntCoef;

    /// SB3's prefix of a learned `α`: `"auto"` or `"auto_<initial α>"`.
    const AUTO: &str = "auto";

    impl Serialize for EntCoef {
        /// `Fixed(α)` as the number `α`, `Auto(1.0)` as `"auto"`, `Auto(α)`
        /// as `"auto_α"` (`f32`'s shortest form, which reads back to the
        /// same bits).
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match *self {
                EntCoef::Fixed(alpha) => s.serialize_f32(alpha),
                EntCoef::Auto(alpha) if alpha.to_bits() == 1f32.to_bits() => s.serialize_str(AUTO),
                EntCoef::Auto(alpha) => s.collect_str(&format_args!("{AUTO}_{alpha}")),
            }
        }
    }

    struct Sb3Visitor;

    impl Sb3Visitor {
        /// A number read as SB3's `float(…)` (a Python float, then `f32`).
        fn number<E: de::Error>(&self, text: &str) -> Result<f32, E> {
            text.trim()
                .parse::<f64>()
                .map(|x| x as f32)
                .map_err(|_| E::invalid_value(de::Unexpected::Str(text), self))
        }
    }

    impl<'de> Visitor<'de> for Sb3Visitor {
        type Value = EntCoef;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(
                "SB3's ent_coef: a number (a fixed α), \"auto\" or \"auto_<initial α>\" (a learned α)",
            )
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<EntCoef, E> {
            Ok(EntCoef::Fixed(v as f32))
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<EntCoef, E> {
            Ok(EntCoef::Fixed(v as f32))
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<EntCoef, E> {
            Ok(EntCoef::Fixed(v as f32))
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<EntCoef, E> {
            if v == AUTO {
                return Ok(EntCoef::Auto(1.0));
            }
            match v.strip_prefix(AUTO) {
                Some(rest) => match rest.strip_prefix('_') {
                    Some(initial) => self.number(initial).map(EntCoef::Auto),
                    None => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
                },
                None => self.number(v).map(EntCoef::Fixed),
            }
        }

        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<EntCoef, M::Error> {
            let coef = match map.next_key::<Tag>()? {
                Some(Tag::Auto) => EntCoef::Auto(map.next_value()?),
                Some(Tag::Fixed) => EntCoef::Fixed(map.next_value()?),
                Some(Tag::Number) => {
                    return crate::config::json_number::rest(map).map(EntCoef::Fixed);
                }
                None => return Err(de::Error::invalid_length(0, &self)),
            };
            match map.next_key::<Tag>()? {
                None => Ok(coef),
                Some(_) => Err(de::Error::invalid_length(2, &self)),
            }
        }
    }

    /// The tag of the form saved before SB3's spellings, or the key under
    /// which `serde_json` with its `arbitrary_precision` feature (switched on
    /// by any crate in the build) hands a bare number to `deserialize_any`:
    /// a map of that one key to the number's text.
    #[derive(Deserialize)]
    #[serde(field_identifier, rename_all = "lowercase")]
    enum Tag {
        Auto,
        Fixed,
        #[serde(rename = "$serde_json::private::Number")]
        Number,
    }

    impl<'de> Deserialize<'de> for EntCoef {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<EntCoef, D::Error> {
            d.deserialize_any(Sb3Visitor)
        }
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

    /// Every SB3 spelling of `ent_coef` reads as SB3 means it, the saved
    /// tagged form still reads, anything else is refused with what is
    /// expected, and every value writes back to the same bits.
    #[cfg(feature = "serde")]
    #[test]
    fn ent_coef_reads_and_writes_sb3_spellings() {
        use std::string::ToString;
        let read = |json: &str| serde_json::from_str::<EntCoef>(json);
        let cases = [
            ("0.1", EntCoef::Fixed(0.1)),
            ("0", EntCoef::Fixed(0.0)),
            ("2", EntCoef::Fixed(2.0)),
            (r#""0.1""#, EntCoef::Fixed(0.1)),
            (r#""auto""#, EntCoef::Auto(1.0)),
            (r#""auto_0.1""#, EntCoef::Auto(0.1)),
            (r#""auto_1e-3""#, EntCoef::Auto(1e-3)),
            (r#"{"auto":0.5}"#, EntCoef::Auto(0.5)),
            (r#"{"fixed":0.2}"#, EntCoef::Fixed(0.2)),
        ];
        for (json, coef) in cases {
            assert_eq!(read(json).unwrap(), coef, "{json}");
        }
        for bad in [
            r#""automatic""#,
            r#""auto_""#,
            r#""auto_x""#,
            r#""fast""#,
            "true",
            "{}",
            r#"{"auto":1.0,"fixed":0.1}"#,
        ] {
            let e = read(bad).unwrap_err().to_string();
            assert!(
                e.contains("a number (a fixed α)") || e.contains("auto` or `fixed"),
                "{bad}: {e}"
            );
        }
        for coef in [
            EntCoef::Auto(1.0),
            EntCoef::Auto(0.1),
            EntCoef::Auto(3.3e-7),
            EntCoef::Fixed(0.1),
            EntCoef::Fixed(0.0),
            EntCoef::Fixed(1e6),
        ] {
            let json = serde_json::to_string(&coef).unwrap();
            let back = read(&json).unwrap();
            assert_eq!(back.is_auto(), coef.is_auto(), "{json}");
            assert_eq!(back.initial().to_bits(), coef.initial().to_bits(), "{json}");
        }
        assert_eq!(
            serde_json::to_string(&EntCoef::Auto(1.0)).unwrap(),
            r#""auto""#
        );
        assert_eq!(
            serde_json::to_string(&EntCoef::Auto(0.1)).unwrap(),
            r#""auto_0.1""#
        );
        assert_eq!(serde_json::to_string(&EntCoef::Fixed(0.1)).unwrap(), "0.1");
        let config = SacConfig {
            ent_coef: EntCoef::Fixed(0.1),
            ..SacConfig::DEFAULT
        };
        let json = serde_json::to_string(&config).unwrap();
        assert_eq!(serde_json::from_str::<SacConfig>(&json).unwrap(), config);
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
