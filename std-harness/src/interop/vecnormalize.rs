//! SB3's `VecNormalize` observation statistics as JSON ([`VecNormalizeStats`]),
//! checked field by field, to and from microrl's frozen [`RunningNorm`].

use anyhow::ensure;
use microrl::Params;
use microrl::normalize::{self, RunningNorm};
use serde::{Deserialize, Serialize};

use crate::train::EnvName;

use super::*;

/// `VecNormalize`'s observation statistics as JSON:
/// `{"obs_rms": {"mean": [...], "var": [...], "count": n}, "clip_obs": 10.0,
/// "epsilon": 1e-8, "norm_obs": true}` (other fields are ignored).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VecNormalizeStats {
    /// The running mean and variance.
    pub obs_rms: ObsRms,
    /// Normalised observations are clipped to `±clip_obs`.
    pub clip_obs: f64,
    /// Added to the variance under the square root.
    pub epsilon: f64,
    /// `false`: observations were not normalised (the statistics are unused).
    #[serde(default = "yes")]
    pub norm_obs: bool,
}

pub(crate) fn yes() -> bool {
    true
}

/// Marks a non-finite token of a statistics file once turned into a JSON
/// string (starts with NUL, which no real field value holds).
pub(crate) const NON_FINITE: &str = "\u{0}non-finite:";

/// `text` with every bare `NaN`, `Infinity` and `-Infinity` outside string
/// literals turned into a string `"\u0000non-finite:TOKEN"`; `None` if there
/// is none.
pub(crate) fn quote_non_finite(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 32);
    let (mut in_string, mut escaped, mut found) = (false, false, false);
    let mut rest = text;
    'scan: while let Some(c) = rest.chars().next() {
        if !in_string {
            for token in ["-Infinity", "Infinity", "NaN"] {
                if let Some(after) = rest.strip_prefix(token) {
                    out.push_str("\"\\u0000non-finite:");
                    out.push_str(token);
                    out.push('"');
                    rest = after;
                    found = true;
                    continue 'scan;
                }
            }
        }
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    found.then_some(out)
}

/// Replaces the marked non-finite values of [`quote_non_finite`] by `null`
/// in the fields microrl does not read; refuses one in a field it reads
/// (`path` is the field's path so far, `obs_rms.var[2]`).
pub(crate) fn drop_non_finite(value: &mut serde_json::Value, path: &str) -> anyhow::Result<()> {
    use serde_json::Value;
    match value {
        Value::String(s) => {
            if let Some(token) = s.strip_prefix(NON_FINITE) {
                let read = ["clip_obs", "epsilon", "obs_rms.count"].contains(&path)
                    || path.starts_with("obs_rms.mean")
                    || path.starts_with("obs_rms.var");
                ensure!(
                    !read,
                    "{path} is {token}: the statistics must be finite numbers (Python's json.dump \
                     writes a NaN or infinite float as the non-JSON token {token})"
                );
                *value = Value::Null;
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                drop_non_finite(item, &format!("{path}[{i}]"))?;
            }
        }
        Value::Object(fields) => {
            for (key, item) in fields.iter_mut() {
                let path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                drop_non_finite(item, &path)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// `VecNormalize.obs_rms`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ObsRms {
    /// Per-dimension mean.
    pub mean: Vec<f64>,
    /// Per-dimension (population) variance.
    pub var: Vec<f64>,
    /// Observations folded in (absent: 1e-4, `RunningMeanStd`'s prior).
    #[serde(default)]
    pub count: Option<f64>,
}

impl VecNormalizeStats {
    /// Parses the JSON text of a statistics file.
    ///
    /// Python's `json.dump` writes non-finite floats as the bare tokens
    /// `NaN`, `Infinity` and `-Infinity`, which JSON does not allow. They
    /// are accepted in fields microrl does not read (dropped as `null`) and
    /// refused, naming the field (`obs_rms.mean[1]`), in those it reads.
    ///
    /// # Errors
    /// Malformed JSON or missing fields, with serde's position; a
    /// non-finite token in a field microrl reads.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let Some(quoted) = quote_non_finite(text) else {
            return Ok(serde_json::from_str(text)?);
        };
        let mut value: serde_json::Value = serde_json::from_str(&quoted)?;
        drop_non_finite(&mut value, "")?;
        Ok(serde_json::from_value(value)?)
    }

    /// The frozen normaliser that feeds the network what VecNormalize fed it.
    pub(crate) fn to_running_norm<const N: usize>(
        &self,
        env: EnvName,
    ) -> anyhow::Result<RunningNorm<N>> {
        let mut norm = RunningNorm::<N>::ZERO;
        if !self.norm_obs {
            return Ok(norm); // empty: the identity
        }
        for (field, values) in [("mean", &self.obs_rms.mean), ("var", &self.obs_rms.var)] {
            ensure!(
                values.len() == N,
                "obs_rms.{field} has {} values, expected {N} for {}",
                values.len(),
                env.name()
            );
        }
        ensure!(
            self.clip_obs == f64::from(normalize::CLIP),
            "clip_obs {} is not supported: microrl's observation normaliser clips at ±{} \
             (VecNormalize's default)",
            self.clip_obs,
            normalize::CLIP
        );
        ensure!(
            self.epsilon.is_finite() && self.epsilon >= 0.0,
            "epsilon {} must be finite and >= 0",
            self.epsilon
        );
        let count = self.obs_rms.count.unwrap_or(1e-4);
        ensure!(
            count.is_finite() && (count as f32) > 0.0 && (count as f32).is_finite(),
            "obs_rms.count = {} must be > 0 and at most {:e} (microrl keeps it as an f32)",
            number_text(count),
            f32::MAX
        );
        for i in 0..N {
            let (mean, var) = (self.obs_rms.mean[i], self.obs_rms.var[i]);
            ensure!(
                mean.is_finite() && (mean as f32).is_finite(),
                "obs_rms.mean[{i}] = {mean} is not a finite f32"
            );
            ensure!(
                var.is_finite() && var >= 0.0,
                "obs_rms.var[{i}] = {var} must be finite and >= 0"
            );
            // microrl adds its own ε under the root: store var + epsilon − ε.
            let folded = var + self.epsilon - f64::from(normalize::EPSILON);
            ensure!(
                folded >= 0.0 && (folded as f32).is_finite(),
                "obs_rms.var[{i}] = {var} with epsilon {} cannot be represented: \
                 microrl's normaliser adds {:e}",
                self.epsilon,
                normalize::EPSILON
            );
            norm.mean[i] = mean as f32;
            norm.var[i] = folded as f32;
        }
        norm.count[0] = count as f32;
        Ok(norm)
    }

    /// The statistics of a microrl normaliser, exactly: `var` and `epsilon`
    /// are microrl's `f32` values, so importing them back gives the same bits.
    pub(crate) fn from_running_norm<const N: usize>(norm: &RunningNorm<N>) -> Self {
        Self {
            obs_rms: ObsRms {
                mean: norm.mean.iter().map(|&x| f64::from(x)).collect(),
                var: norm.var.iter().map(|&x| f64::from(x)).collect(),
                count: Some(f64::from(norm.count[0])),
            },
            clip_obs: f64::from(normalize::CLIP),
            epsilon: f64::from(normalize::EPSILON),
            norm_obs: true,
        }
    }
}
