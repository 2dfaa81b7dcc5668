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
            let table: toml::Table = serde_json::from_value(config.clone())
                .with_context(|| format!("{}: `config` is not a table", path.display()))?;
            return Ok(Overrides(table));
        }
        Self::parse(&text).with_context(|| format!("parsing {}", path.display()))
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
