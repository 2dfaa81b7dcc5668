//! A policy file as the CLI writes it: the core's parameter blob
//! (`microrl::serialize`, unchanged) followed by a *task record* — the task
//! (environment and plant parameters) the policy was trained on — so that
//! `eval`, `export`, `act` and `export --format safetensors` refuse a
//! policy for another task instead of letting it drive a plant whose
//! observation size happens to agree.
//!
//! The record, after the blob's CRC-32 (little-endian):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `b"MRLT"` |
//! | 4 | 2 | record version ([`VERSION`]) |
//! | 6 | 2 | length `E` of the task's name |
//! | 8 | 2 | length `P` of the plant text |
//! | 10 | `E` | the task's `--env` name (UTF-8) |
//! | 10 + `E` | `P` | the plant parameters that differ from the task's defaults, as TOML (`KEY = VALUE` lines; empty: the defaults) |
//! | 10 + `E` + `P` | 4 | CRC-32 of the record's preceding bytes |
//!
//! The blob keeps its bytes, its format version and its CRC-32 (a
//! summary's `policy_crc32`, `inspect`'s `crc32`): the record is outside
//! it, so the firmware's `serialize::load` reads what `export` writes for
//! it, the blob alone. A file that ends with its blob — written before the
//! record existed, by `export` for a firmware, or by another tool — is a
//! policy without a task record: read as before, with one `warning:`.

use std::path::Path;

use anyhow::Context;
use microrl::serialize;

use crate::train::{EnvName, show_plant};

/// The record's magic number.
pub const MAGIC: [u8; 4] = *b"MRLT";
/// The record's format version.
pub const VERSION: u16 = 1;
/// The longest plant text a record holds.
const MAX_PLANT_TEXT: usize = 4096;

/// The task a policy was trained on.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskRecord {
    /// The task's `--env` name (a name this build may not know: a newer
    /// writer's task, which is never this build's).
    pub env: String,
    /// Its plant parameters that differ from the task's defaults (`--plant`).
    pub plant: toml::Table,
}

impl TaskRecord {
    /// The record of `env` with the plant parameters `plant`.
    pub fn new(env: EnvName, plant: &toml::Table) -> Self {
        Self {
            env: env.name().into(),
            plant: plant.clone(),
        }
    }

    /// `env`, or `env (KEY=VALUE,…)` for a changed plant.
    pub fn describe(&self) -> String {
        if self.plant.is_empty() {
            self.env.clone()
        } else {
            format!("{} ({})", self.env, show_plant(&self.plant))
        }
    }

    /// The record's bytes.
    ///
    /// # Errors
    /// A name or plant text too long for the record.
    pub fn to_bytes(&self) -> anyhow::Result<Vec<u8>> {
        let plant = toml::to_string(&self.plant)?;
        anyhow::ensure!(
            plant.len() <= MAX_PLANT_TEXT && self.env.len() <= MAX_PLANT_TEXT,
            "the task record of {} is too long for a policy file",
            self.describe()
        );
        let mut out = Vec::with_capacity(14 + self.env.len() + plant.len());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        for len in [self.env.len(), plant.len()] {
            out.extend_from_slice(&u16::try_from(len)?.to_le_bytes());
        }
        out.extend_from_slice(self.env.as_bytes());
        out.extend_from_slice(plant.as_bytes());
        let crc = serialize::crc32(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        Ok(out)
    }

    /// Reads a record that is all of `bytes`.
    ///
    /// # Errors
    /// Not exactly one valid record, named.
    fn parse(bytes: &[u8]) -> Result<Self, &'static str> {
        let u16_at = |at: usize| {
            bytes
                .get(at..at + 2)
                .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
        };
        let (Some(version), Some(e), Some(p)) = (u16_at(4), u16_at(6), u16_at(8)) else {
            return Err("truncated");
        };
        if version != usize::from(VERSION) {
            return Err("of an unsupported version");
        }
        if bytes.len() != 14 + e + p {
            return Err("of the wrong length");
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        if serialize::crc32(body).to_le_bytes() != crc {
            return Err("damaged (CRC-32 mismatch)");
        }
        let text = |range: std::ops::Range<usize>| {
            std::str::from_utf8(&body[range]).map_err(|_| "not UTF-8")
        };
        let env = text(10..10 + e)?.to_owned();
        let plant = toml::from_str(text(10 + e..10 + e + p)?).map_err(|_| "not a plant table")?;
        Ok(Self { env, plant })
    }
}

/// A policy file read: its parameter blob and its task record.
#[derive(Clone, Debug, PartialEq)]
pub struct PolicyFile {
    /// The core's parameter blob (what `serialize::load` reads).
    pub blob: Vec<u8>,
    /// The task it was trained on (`None`: a file without the record).
    pub task: Option<TaskRecord>,
}

/// The blob followed by `task`'s record: the bytes of a policy file.
///
/// # Errors
/// As [`TaskRecord::to_bytes`].
pub fn with_task(blob: &[u8], task: &TaskRecord) -> anyhow::Result<Vec<u8>> {
    Ok([blob, &task.to_bytes()?].concat())
}

/// Splits a policy file's bytes into its blob and task record. Bytes
/// beyond the blob that are not a task record stay with the blob, for
/// `serialize::load` to refuse as it always has (trailing bytes).
///
/// # Errors
/// A task record that is damaged, truncated or of another version.
pub fn from_bytes(bytes: Vec<u8>) -> anyhow::Result<PolicyFile> {
    let end = serialize::read_header(&bytes)
        .ok()
        .and_then(|h| usize::try_from(h.blob_len()).ok())
        .filter(|&end| end < bytes.len() && bytes[end..].starts_with(&MAGIC));
    let Some(end) = end else {
        return Ok(PolicyFile {
            blob: bytes,
            task: None,
        });
    };
    let task = TaskRecord::parse(&bytes[end..])
        .map_err(|why| anyhow::anyhow!("its task record is {why}"))?;
    let mut blob = bytes;
    blob.truncate(end);
    Ok(PolicyFile {
        blob,
        task: Some(task),
    })
}

/// Reads the policy file at `path`.
///
/// # Errors
/// Unreadable, or a damaged task record (naming the file).
pub fn read(path: &Path) -> anyhow::Result<PolicyFile> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    from_bytes(bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

impl PolicyFile {
    /// The task it records, if this build knows it.
    pub fn env(&self) -> Option<EnvName> {
        let task = self.task.as_ref()?;
        EnvName::ALL.into_iter().find(|e| e.name() == task.env)
    }

    /// Checks that this policy (from `path`) was trained on `env`: another
    /// task is refused naming both, unless `any_env`. Returns the line to
    /// print on standard error once the command succeeds: a `warning:` for
    /// a file without a task record, a `note:` for another task allowed by
    /// `any_env` or for the same task on other plant parameters than the
    /// policy's (`plant`; `None`: not compared) — a robustness evaluation,
    /// which `--plant` asks for explicitly.
    ///
    /// # Errors
    /// The policy was trained on another task and `any_env` is off.
    pub fn check_task(
        &self,
        path: &Path,
        env: EnvName,
        plant: Option<&toml::Table>,
        any_env: bool,
    ) -> anyhow::Result<Option<String>> {
        let recorded = self.task.as_ref().map(|t| &t.plant);
        let plant = plant.or(recorded).cloned().unwrap_or_default();
        let target = TaskRecord::new(env, &plant);
        let Some(task) = &self.task else {
            return Ok(Some(format!(
                "warning: {} records no task (an older file, or one written by `init` or \
                 `export`): not checked against {}",
                path.display(),
                target.describe()
            )));
        };
        if task.env != target.env {
            anyhow::ensure!(
                any_env,
                "{} was trained on {}, not {}: a policy for one task does not drive another \
                 (--any-env to run it on {} all the same)",
                path.display(),
                task.describe(),
                target.describe(),
                target.env
            );
            return Ok(Some(format!(
                "note: {} was trained on {}; running it on {} (--any-env)",
                path.display(),
                task.describe(),
                target.describe()
            )));
        }
        Ok((!same_plant(&task.plant, &plant)).then(|| {
            format!(
                "note: {} was trained on {}; running it on {}",
                path.display(),
                task.describe(),
                target.describe()
            )
        }))
    }
}

/// The same plant parameters: the same keys, each the same number
/// (`1` and `1.0` alike).
fn same_plant(a: &toml::Table, b: &toml::Table) -> bool {
    let number = |v: &toml::Value| match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(x) => Some(*x),
        _ => None,
    };
    a.len() == b.len()
        && a.iter().all(|(k, v)| {
            b.get(k)
                .is_some_and(|w| v == w || (number(v).is_some() && number(v) == number(w)))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_record_round_trips_and_a_damaged_one_is_refused() {
        let blob = crate::arch::init_blob(crate::Arch::Pendulum, 0).unwrap();
        let mut plant = toml::Table::new();
        plant.insert("m".into(), toml::Value::Float(1.5));
        let task = TaskRecord::new(EnvName::Pendulum, &plant);
        let file = with_task(&blob, &task).unwrap();
        let read = from_bytes(file.clone()).unwrap();
        assert_eq!(read.blob, blob);
        assert_eq!(read.task.as_ref(), Some(&task));
        // A file without a record is the blob.
        assert_eq!(from_bytes(blob.clone()).unwrap().task, None);
        for at in blob.len()..file.len() {
            let mut bad = file.clone();
            bad[at] ^= 1;
            // The magic's bytes: then the tail is not a record, and the
            // blob has trailing bytes for `serialize::load` to refuse.
            match from_bytes(bad) {
                Ok(read) => assert!(at < blob.len() + 4 && read.task.is_none()),
                Err(e) => assert!(e.to_string().contains("task record"), "{e}"),
            }
        }
        assert!(from_bytes(file[..file.len() - 1].to_vec()).is_err());
    }
}
