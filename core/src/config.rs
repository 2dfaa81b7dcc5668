//! Validation helpers and the `serde` glue shared by every configuration
//! struct.
//!
//! Design: each configuration (`PpoConfig`, `AcConfig`, `AdamConfig`, …) has
//! a `validate` method that checks *every* field before an agent touches
//! anything, and refuses with [`Error::InvalidConfig`] naming the field (its
//! Rust name, which is also its key in TOML/JSON) and the constraint. The
//! helpers here keep those methods one line per field.
//!
//! With the `serde` feature the configurations derive `Serialize` and
//! `Deserialize` (no_std, no allocation): a [`Schedule`](crate::optim::Schedule)
//! is written as a number (constant) or `{ start = …, end = … }` (linear),
//! and an `Option<f32>` switch such as `max_grad_norm` as a number or `false`
//! (off) — TOML has no null.

use crate::error::Error;

/// The most passes or inner iterations of one update: PPO's and GRPO's
/// `epochs`, TRPO's `critic_epochs`, `cg_iters` and `line_search_steps`
/// (1 000). The defaults are 4 to 15; a `u16` field could otherwise ask for
/// 65 535 passes over every rollout, an update that does not end in any
/// reasonable time.
pub const MAX_ITERATIONS: u16 = 1_000;

/// `1..=`[`MAX_ITERATIONS`] (an update's passes or inner iterations).
///
/// # Errors
/// `InvalidConfig` naming `field` otherwise.
#[inline]
pub fn iterations(field: &'static str, n: u16) -> Result<(), Error> {
    check(
        field,
        (1..=MAX_ITERATIONS).contains(&n),
        "must be in 1..=1000 (MAX_ITERATIONS)",
    )
}

/// `Ok` when `ok`, otherwise `InvalidConfig { field, reason }`.
///
/// # Errors
/// As described.
#[inline]
pub fn check(field: &'static str, ok: bool, reason: &'static str) -> Result<(), Error> {
    if ok {
        Ok(())
    } else {
        Err(Error::config(field, reason))
    }
}

/// `x ∈ [0, 1]` (a discount, a GAE λ).
///
/// # Errors
/// `InvalidConfig` naming `field` otherwise (NaN included).
#[inline]
pub fn unit(field: &'static str, x: f32) -> Result<(), Error> {
    check(field, (0.0..=1.0).contains(&x), "must be in [0, 1]")
}

/// A finite `x ≥ 0` (a loss coefficient).
///
/// # Errors
/// `InvalidConfig` naming `field` otherwise.
#[inline]
pub fn non_negative(field: &'static str, x: f32) -> Result<(), Error> {
    check(field, x.is_finite() && x >= 0.0, "must be finite and >= 0")
}

/// `None` (the feature is off) or a finite `x > 0`.
///
/// # Errors
/// `InvalidConfig` naming `field` for zero, negative, NaN or infinite.
#[inline]
pub fn positive_or_off(field: &'static str, x: Option<f32>) -> Result<(), Error> {
    check(
        field,
        x.is_none_or(|x| x.is_finite() && x > 0.0),
        "must be finite and > 0 (or off)",
    )
}

/// Numbers read through `deserialize_any` (settings that are a number *or*
/// something else). `serde_json` with its `arbitrary_precision` feature —
/// switched on for the whole build by any crate that asks for it — hands a
/// bare number to such a visitor as a one-key map from
/// `"$serde_json::private::Number"` to the number's decimal text; visitors
/// name that key in their field enum and read the rest with [`json_number::rest`].
#[cfg(feature = "serde")]
pub(crate) mod json_number {
    use core::fmt;

    use serde::de::{self, MapAccess, Visitor};
    use serde::{Deserialize, Deserializer};

    /// A number given as its decimal text, rounded once from `f64` as the
    /// plain-number path does.
    struct NumberText(f32);

    impl<'de> Deserialize<'de> for NumberText {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<NumberText, D::Error> {
            struct Text;
            impl Visitor<'_> for Text {
                type Value = NumberText;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a number's decimal text")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<NumberText, E> {
                    v.trim()
                        .parse::<f64>()
                        .map(|x| NumberText(x as f32))
                        .map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self))
                }
            }
            d.deserialize_str(Text)
        }
    }

    /// Reads the rest of a map whose first key was `serde_json`'s number key.
    ///
    /// # Errors
    /// A value that is not a number's text, or a second key.
    pub(crate) fn rest<'de, M: MapAccess<'de>>(mut map: M) -> Result<f32, M::Error> {
        let x = map.next_value::<NumberText>()?.0;
        match map.next_key::<de::IgnoredAny>()? {
            None => Ok(x),
            Some(_) => Err(de::Error::custom("a number's map has one key")),
        }
    }
}

/// `serde(with = "crate::config::optional")` for `Option<f32>` switches: a
/// number is `Some`, `false` (or a unit/none) is `None`; `None` serialises
/// as `false`.
#[cfg(feature = "serde")]
pub mod optional {
    use core::fmt;

    use serde::de::{self, MapAccess, Visitor};
    use serde::{Deserializer, Serializer};

    /// Writes `Some(x)` as `x` and `None` as `false`.
    ///
    /// # Errors
    /// The serializer's.
    pub fn serialize<S: Serializer>(value: &Option<f32>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(x) => s.serialize_f32(*x),
            None => s.serialize_bool(false),
        }
    }

    struct OptionalF32;

    impl<'de> Visitor<'de> for OptionalF32 {
        type Value = Option<f32>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a number, or `false` to switch it off")
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(Some(v as f32))
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v as f32))
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(v as f32))
        }

        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            if v {
                Err(E::invalid_value(de::Unexpected::Bool(true), &self))
            } else {
                Ok(None)
            }
        }

        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(OptionalF32)
        }

        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
            match map.next_key::<NumberKey>()? {
                Some(NumberKey::Number) => super::json_number::rest(map).map(Some),
                None => Err(de::Error::invalid_length(0, &self)),
            }
        }
    }

    /// The only map [`OptionalF32`] reads: `arbitrary_precision`'s number.
    #[derive(serde::Deserialize)]
    #[serde(field_identifier)]
    enum NumberKey {
        #[serde(rename = "$serde_json::private::Number")]
        Number,
    }

    /// Reads a number as `Some`, `false`/null as `None`.
    ///
    /// # Errors
    /// Anything else.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f32>, D::Error> {
        d.deserialize_any(OptionalF32)
    }
}

/// A setting's name and a change that puts it out of range.
#[cfg(test)]
pub(crate) type Refusal<C> = (&'static str, fn(&mut C));

/// `validate` accepts `ok`, and refuses `ok` changed by each of `cases`
/// with [`Error::InvalidConfig`] naming that case's setting.
#[cfg(test)]
pub(crate) fn assert_refused_by_name<C: Copy>(
    ok: C,
    cases: &[Refusal<C>],
    validate: impl Fn(&C) -> Result<(), Error>,
) {
    assert_eq!(validate(&ok), Ok(()));
    for &(field, set) in cases {
        let mut config = ok;
        set(&mut config);
        let result = validate(&config);
        assert!(
            matches!(result, Err(Error::InvalidConfig { field: f, .. }) if f == field),
            "{field}: {result:?}"
        );
    }
}

#[cfg(all(test, feature = "serde"))]
mod tests {
    use crate::algo::sac::EntCoef;
    use crate::optim::Schedule;

    /// An `Option<f32>` switch read through [`optional`](super::optional).
    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Switch(#[serde(with = "super::optional")] Option<f32>);

    /// Every setting read through `deserialize_any` takes a number both as a
    /// bare number and as `serde_json`'s `arbitrary_precision` map (the form
    /// it takes in a build where any crate switches that feature on), and
    /// refuses a second key in that map.
    #[test]
    fn numbers_read_in_arbitrary_precision_form() {
        let plain = "0.25";
        let map = r#"{"$serde_json::private::Number":"0.25"}"#;
        let two = r#"{"$serde_json::private::Number":"0.25","start":1}"#;
        for json in [plain, map] {
            assert_eq!(
                serde_json::from_str::<Switch>(json).unwrap(),
                Switch(Some(0.25))
            );
            assert_eq!(
                serde_json::from_str::<Schedule>(json).unwrap(),
                Schedule::Constant(0.25)
            );
            assert_eq!(
                serde_json::from_str::<EntCoef>(json).unwrap(),
                EntCoef::Fixed(0.25)
            );
        }
        assert!(serde_json::from_str::<Switch>(two).is_err());
        assert!(serde_json::from_str::<Schedule>(two).is_err());
        assert!(serde_json::from_str::<EntCoef>(two).is_err());
        assert!(serde_json::from_str::<Switch>(r#"{"$serde_json::private::Number":"x"}"#).is_err());
    }
}
