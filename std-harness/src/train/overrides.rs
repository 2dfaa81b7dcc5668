//! `--config` TOML overrides merged over the tuned defaults.

use std::path::Path;

use anyhow::Context;

/// Hyper-parameter overrides: a TOML table whose keys are the field names of
/// the algorithm's configuration struct (`PpoConfig`, `A2cConfig`,
/// `ReinforceConfig`, `AcConfig`), merged over the tuned defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides(pub toml::Table);

impl Overrides {
    /// Reads a TOML file of overrides, or the `config` object of a run's
    /// `summary.json` (so `--config runs/X/summary.json` reproduces run X).
    pub fn from_file(path: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        if path.extension().is_some_and(|e| e == "json") {
            let summary: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("parsing {}", path.display()))?;
            let config = summary.get("config").with_context(|| {
                format!(
                    "{}: no `config` object (not a summary.json?)",
                    path.display()
                )
            })?;
            let mut table = json_config(config)
                .with_context(|| format!("{}: `config` is not a table", path.display()))?;
            if let Some(algo) = summary.get("algo").and_then(serde_json::Value::as_str) {
                fill_added_keys(&mut table, algo);
            }
            return Ok(Overrides(table));
        }
        Self::parse(&text).with_context(|| format!("parsing {}", path.display()))
    }

    /// The run's budget: `steps` (the command line's `--steps`), else the
    /// file's `total_steps`, else `default`. The budget is written into
    /// the overrides' `total_steps` where the file sets one, so the
    /// schedules anneal over the steps the loop really runs; the note says
    /// what was taken from `file` or replaced in it.
    ///
    /// # Errors
    /// A `total_steps` that is not a whole number of steps above 0, naming
    /// `file`.
    pub fn budget(
        &mut self,
        steps: Option<u64>,
        default: impl FnOnce() -> u64,
        file: &Path,
    ) -> anyhow::Result<(u64, Option<String>)> {
        let Some(value) = self.0.get("total_steps") else {
            return Ok((steps.unwrap_or_else(default), None));
        };
        let saved = value
            .as_integer()
            .and_then(|n| u64::try_from(n).ok())
            .filter(|&n| n > 0)
            .with_context(|| {
                format!(
                    "{}: `total_steps` = {value} must be a whole number of steps above 0",
                    file.display()
                )
            })?;
        Ok(match steps {
            None => (
                saved,
                Some(format!(
                    "steps {saved} (its total_steps) taken from {}",
                    file.display()
                )),
            ),
            Some(steps) => {
                let wide = i64::try_from(steps).context("--steps beyond i64")?;
                self.0
                    .insert("total_steps".into(), toml::Value::Integer(wide));
                let note = (steps != saved).then(|| {
                    format!(
                        "--steps {steps} replaces the total_steps {saved} of {}",
                        file.display()
                    )
                });
                (steps, note)
            }
        })
    }

    /// Parses TOML text.
    ///
    /// # Errors
    /// The TOML is malformed: one line naming the line and column.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        toml::from_str(text).map(Overrides).map_err(|e| {
            let at = e.span().map(|span| {
                let before = text.get(..span.start).unwrap_or(text);
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                format!("line {line}, column {column}: ")
            });
            anyhow::anyhow!(
                "{}{}",
                at.unwrap_or_default(),
                e.message().trim().replace('\n', " ")
            )
        })
    }
}

/// The JSON form of an algorithm's configuration (`summary.json`'s `config`,
/// a checkpoint's `progress.json`): serde_json's, except that a non-finite
/// float — PPO-penalty's `clip_range = inf` —, which JSON cannot hold and
/// serde_json writes as `null`, is written as the string `"inf"`, `"-inf"`
/// or `"nan"`; [`json_config`] reads those back as the float.
///
/// # Errors
/// The configuration does not serialise (not a struct of TOML values).
pub fn config_json<T: serde::Serialize>(config: &T) -> anyhow::Result<serde_json::Value> {
    fn patch(json: &mut serde_json::Value, toml: &toml::Value) {
        match toml {
            toml::Value::Float(x) if !x.is_finite() && json.is_null() => {
                let text = if x.is_nan() {
                    "nan"
                } else if *x > 0.0 {
                    "inf"
                } else {
                    "-inf"
                };
                *json = serde_json::Value::String(text.into());
            }
            toml::Value::Table(table) => {
                if let Some(object) = json.as_object_mut() {
                    for (key, value) in object.iter_mut() {
                        if let Some(t) = table.get(key) {
                            patch(value, t);
                        }
                    }
                }
            }
            toml::Value::Array(items) => {
                if let Some(array) = json.as_array_mut() {
                    for (value, t) in array.iter_mut().zip(items) {
                        patch(value, t);
                    }
                }
            }
            _ => {}
        }
    }
    let mut json = serde_json::to_value(config)?;
    patch(&mut json, &toml::Value::try_from(config)?);
    Ok(json)
}

/// Keys added to an algorithm's configuration after runs were saved
/// without them, each with the value that reproduces those runs:
/// `(algorithms, key, value)`.
const ADDED_KEYS: [(&[&str], &str, toml::Value); 4] = [
    (
        &["ppo", "ppo-penalty"],
        "bound_coef",
        toml::Value::Float(0.0),
    ),
    (
        &["ppo", "ppo-penalty"],
        "noise_beta",
        toml::Value::Float(0.0),
    ),
    (&["ac"], "rest_init", toml::Value::Boolean(false)),
    (
        &["ppo", "ppo-penalty", "ac"],
        "scale_free_returns",
        toml::Value::Boolean(false),
    ),
];

/// Completes a saved run's configuration table (a `summary.json`'s or a
/// checkpoint's, of algorithm `algo`): a key in [`ADDED_KEYS`] that the run
/// did not save did not exist when it ran, so it gets the value that
/// reproduces the run rather than today's default (`bound_coef` is 1e-4
/// in `PpoConfig::PLANT`, 0 before it existed).
pub fn fill_added_keys(table: &mut toml::Table, algo: &str) {
    for (algos, key, value) in ADDED_KEYS {
        if algos.contains(&algo) && !table.contains_key(key) {
            table.insert(key.to_owned(), value);
        }
    }
}

/// The configuration table of [`config_json`]'s JSON: the strings `"inf"`,
/// `"-inf"` and `"nan"` read as those floats.
///
/// # Errors
/// Not a JSON object, or a `null` value (named).
pub fn json_config(json: &serde_json::Value) -> anyhow::Result<toml::Table> {
    fn value(key: &str, json: &serde_json::Value) -> anyhow::Result<toml::Value> {
        use serde_json::Value as J;
        Ok(match json {
            J::Null => anyhow::bail!("`{key}` is null"),
            J::Bool(b) => toml::Value::Boolean(*b),
            J::Number(n) => match n.as_i64() {
                Some(i) => toml::Value::Integer(i),
                None => toml::Value::Float(
                    n.as_f64()
                        .with_context(|| format!("`{key}`: {n} is out of range"))?,
                ),
            },
            J::String(s) => match s.as_str() {
                "inf" => toml::Value::Float(f64::INFINITY),
                "-inf" => toml::Value::Float(f64::NEG_INFINITY),
                "nan" => toml::Value::Float(f64::NAN),
                _ => toml::Value::String(s.clone()),
            },
            J::Array(items) => toml::Value::Array(
                items
                    .iter()
                    .map(|v| value(key, v))
                    .collect::<anyhow::Result<_>>()?,
            ),
            J::Object(object) => toml::Value::Table(
                object
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), value(k, v)?)))
                    .collect::<anyhow::Result<_>>()?,
            ),
        })
    }
    match value("config", json)? {
        toml::Value::Table(table) => Ok(table),
        other => anyhow::bail!("invalid type: {}, expected a table", other.type_str()),
    }
}
