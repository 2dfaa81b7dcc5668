//! Hyper-parameter schedules over training progress (learning rate, PPO clip range).
//!
//! A schedule is evaluated at `progress ∈ [0, 1]`, the fraction of training
//! already done (CleanRL anneals with `frac = 1 − (update − 1) / num_updates`,
//! i.e. `progress = (update − 1) / num_updates`).
//!
//! With the `serde` feature a schedule reads and writes as a bare number
//! (constant) or a table `{ start = …, end = … }` (linear), e.g.
//! `learning_rate = 3e-4` or `learning_rate = { start = 1e-3, end = 0.0 }`.

use crate::error::Error;

/// A value that may change over training.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Schedule {
    /// The same value throughout.
    Constant(f32),
    /// Linear interpolation from `start` (progress 0) to `end` (progress 1).
    Linear {
        /// Value at the start of training.
        start: f32,
        /// Value at the end of training.
        end: f32,
    },
}

impl Schedule {
    /// Linear decay from `start` to zero (SB3's and CleanRL's `anneal_lr`).
    pub const fn linear_to_zero(start: f32) -> Self {
        Self::Linear { start, end: 0.0 }
    }

    /// The value at `progress` (clamped to `[0, 1]`; NaN counts as 0).
    pub fn value(&self, progress: f32) -> f32 {
        match *self {
            Self::Constant(v) => v,
            Self::Linear { start, end } => {
                let p = if progress > 0.0 {
                    progress.min(1.0)
                } else {
                    0.0
                };
                let v = start + (end - start) * p;
                if v.is_finite() {
                    v
                } else {
                    // The exact value lies between `start` and `end`; near
                    // `f32::MAX` the rounded sum can overflow to ∞ (found by
                    // `tests/tests/properties.rs::schedules_stay_finite`).
                    crate::math::clamp(v, start.min(end), start.max(end))
                }
            }
        }
    }

    /// Checks that the schedule starts finite, `> 0` and `≤ max`, and never
    /// goes below zero nor above `max`.
    ///
    /// # Errors
    /// `InvalidConfig` naming `field` otherwise.
    pub fn validate(&self, field: &'static str, max: f32) -> Result<(), Error> {
        let (start, end) = match *self {
            Self::Constant(v) => (v, v),
            Self::Linear { start, end } => (start, end),
        };
        if !(start.is_finite() && start > 0.0 && start <= max) {
            return Err(Error::config(
                field,
                "must start finite, > 0 and not absurdly large",
            ));
        }
        if !(end.is_finite() && end >= 0.0 && end <= max) {
            return Err(Error::config(field, "must end finite and >= 0"));
        }
        Ok(())
    }

    /// The value after `step` of `total` steps.
    pub fn at(&self, step: u64, total: u64) -> f32 {
        if total == 0 {
            return self.value(1.0);
        }
        self.value(step as f32 / total as f32)
    }
}

#[cfg(feature = "serde")]
mod serde_impl {
    use core::fmt;

    use serde::de::{self, MapAccess, Visitor};
    use serde::ser::SerializeStruct;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Schedule;

    impl Serialize for Schedule {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match *self {
                Schedule::Constant(v) => s.serialize_f32(v),
                Schedule::Linear { start, end } => {
                    let mut st = s.serialize_struct("Linear", 2)?;
                    st.serialize_field("start", &start)?;
                    st.serialize_field("end", &end)?;
                    st.end()
                }
            }
        }
    }

    struct ScheduleVisitor;

    impl<'de> Visitor<'de> for ScheduleVisitor {
        type Value = Schedule;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a number (constant) or { start, end } (linear)")
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Schedule, E> {
            Ok(Schedule::Constant(v as f32))
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Schedule, E> {
            Ok(Schedule::Constant(v as f32))
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Schedule, E> {
            Ok(Schedule::Constant(v as f32))
        }

        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Schedule, M::Error> {
            let (mut start, mut end) = (None, None);
            while let Some(key) = map.next_key::<Key>()? {
                match key {
                    Key::Start => start = Some(map.next_value::<f32>()?),
                    Key::End => end = Some(map.next_value::<f32>()?),
                    Key::Number if start.is_none() && end.is_none() => {
                        return crate::config::json_number::rest(map).map(Schedule::Constant);
                    }
                    Key::Number => return Err(de::Error::custom("a number inside { start, end }")),
                }
            }
            Ok(Schedule::Linear {
                start: start.ok_or_else(|| de::Error::missing_field("start"))?,
                end: end.ok_or_else(|| de::Error::missing_field("end"))?,
            })
        }
    }

    #[derive(Deserialize)]
    #[serde(field_identifier, rename_all = "lowercase")]
    enum Key {
        Start,
        End,
        /// `serde_json`'s `arbitrary_precision` number (see `config::json_number`).
        #[serde(rename = "$serde_json::private::Number")]
        Number,
    }

    impl<'de> Deserialize<'de> for Schedule {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Schedule, D::Error> {
            d.deserialize_any(ScheduleVisitor)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Near `f32::MAX` the interpolation's rounded sum can overflow; the
    /// value stays between the ends (`start + (end − start)` is `∞` here).
    #[test]
    fn linear_values_near_the_largest_float_stay_finite() {
        let s = Schedule::Linear {
            start: 1.346_515_8e38,
            end: f32::MAX,
        };
        assert!(s.validate("learning_rate", f32::MAX).is_ok());
        assert_eq!(s.at(1, 0), f32::MAX);
        assert_eq!(s.value(1.0), f32::MAX);
        assert!(s.value(0.999).is_finite());
    }

    /// The serde form: a number is a constant (read from an unsigned, a
    /// signed or a float number), `{ start, end }` a linear schedule; the
    /// refusal says what was expected. Read through serde's own value
    /// deserializers (JSON's number representation depends on serde_json's
    /// features), written with serde_json.
    #[cfg(feature = "serde")]
    #[test]
    fn serde_reads_every_number_form_and_writes_it_back() {
        use serde::Deserialize;
        use serde::de::IntoDeserializer;
        use serde::de::value::{Error, MapDeserializer};
        let u: serde::de::value::U64Deserializer<Error> = 3u64.into_deserializer();
        assert_eq!(Schedule::deserialize(u).unwrap(), Schedule::Constant(3.0));
        let i: serde::de::value::I64Deserializer<Error> = (-2i64).into_deserializer();
        assert_eq!(Schedule::deserialize(i).unwrap(), Schedule::Constant(-2.0));
        let f: serde::de::value::F64Deserializer<Error> = 0.25f64.into_deserializer();
        assert_eq!(Schedule::deserialize(f).unwrap(), Schedule::Constant(0.25));
        let linear = Schedule::Linear {
            start: 1e-3,
            end: 0.0,
        };
        let map = |fields: &[(&'static str, f32)]| {
            Schedule::deserialize(MapDeserializer::<_, Error>::new(fields.iter().copied()))
        };
        assert_eq!(map(&[("start", 1e-3), ("end", 0.0)]).unwrap(), linear);
        let missing = std::format!("{}", map(&[("start", 1.0)]).unwrap_err());
        assert!(missing.contains("missing field `end`"), "{missing}");
        let s: serde::de::value::StrDeserializer<Error> = "fast".into_deserializer();
        let wrong = std::format!("{}", Schedule::deserialize(s).unwrap_err());
        assert!(
            wrong.contains("a number (constant) or { start, end } (linear)"),
            "{wrong}"
        );
        assert_eq!(
            serde_json::to_string(&Schedule::Constant(0.5)).unwrap(),
            "0.5"
        );
        assert_eq!(
            serde_json::to_string(&linear).unwrap(),
            r#"{"start":0.001,"end":0.0}"#
        );
    }

    #[test]
    fn linear_to_zero_anneals() {
        let s = Schedule::linear_to_zero(3e-4);
        assert_eq!(s.value(0.0), 3e-4);
        assert!((s.value(0.5) - 1.5e-4).abs() < 1e-10);
        assert_eq!(s.value(1.0), 0.0);
        assert_eq!(s.value(2.0), 0.0);
        assert_eq!(s.value(-1.0), 3e-4);
        assert_eq!(s.value(f32::NAN), 3e-4);
        assert_eq!(s.at(25, 100), s.value(0.25));
        assert_eq!(s.at(0, 0), 0.0);
    }

    #[test]
    fn validation_names_the_field() {
        assert!(
            Schedule::linear_to_zero(3e-4)
                .validate("learning_rate", 1.0)
                .is_ok()
        );
        for bad in [
            Schedule::Constant(0.0),
            Schedule::Constant(-1e-3),
            Schedule::Constant(f32::NAN),
            Schedule::Constant(1e9),
            Schedule::Linear {
                start: 1e-3,
                end: -1e-3,
            },
            Schedule::Linear {
                start: 1e-3,
                end: f32::INFINITY,
            },
        ] {
            let err = bad.validate("learning_rate", 1.0).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::InvalidConfig {
                        field: "learning_rate",
                        ..
                    }
                ),
                "{bad:?}: {err:?}"
            );
        }
    }

    #[test]
    fn constant_is_constant() {
        assert_eq!(Schedule::Constant(0.2).value(0.7), 0.2);
    }
}
