//! `microrl act POLICY --obs-file OBS.csv|OBS.npy [--out ACTIONS.csv|.npy]`:
//! the deployed policy's command for every observation of a file.
//!
//! - **In**: a CSV of one observation a row (comma-separated numbers; a first
//!   row of names is a header and skipped), or a NumPy `.npy` array of
//!   `float32`/`float64`, shape `[N, OBS]` (or `[OBS]`: one observation).
//! - **Checks**: each row as `act --obs` checks one observation (its length
//!   and finite values); the first bad row is refused naming its number
//!   (1-based, counting observations; for a CSV also its line).
//! - **Out**: one row per observation, in order. CSV (`action`: the action
//!   index of a categorical policy, the clipped command of a Gaussian one) on
//!   standard output, or into `--out`; NPY when `--out` ends in `.npy`:
//!   `int64 [N]` actions of a categorical policy, `float32 [N, ACT]` commands
//!   of a Gaussian one — the shapes Stable-Baselines3's `predict` returns.
//!
//! The `.npy` format (version 1.0–3.0, NumPy's `format.py`) is a magic
//! string, a header length and a Python dict literal giving `descr`,
//! `fortran_order` and `shape`, then the raw array. Reading the three
//! fields and writing a header is a few dozen lines, so it is done here
//! rather than with a crate.

use std::path::Path;

use anyhow::{Context, bail, ensure};
use serde_json::json;

use crate::arch::{self, Action, Arch};
use crate::commands::Report;

/// At most this many observations a file: 10 million rows is about 300 MB
/// of CSV output held until it is written whole (atomically), and hours of
/// evaluation on a microcontroller's worth of data; far more than a batch of
/// logged observations to check a policy on.
pub const MAX_ROWS: usize = 10_000_000;

/// The observations of `path` (CSV or `.npy`), each with its description
/// for messages (`row 3 (line 4)`).
fn read_rows(path: &Path, obs_dim: usize) -> anyhow::Result<Vec<(String, Vec<f32>)>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let rows = if bytes.starts_with(NPY_MAGIC) {
        read_npy(&bytes, obs_dim)?
    } else {
        read_csv(&bytes)?
    };
    ensure!(!rows.is_empty(), "holds no observation");
    Ok(rows)
}

/// A CSV of numbers; a first record with no number in it is a header.
fn read_csv(bytes: &[u8]) -> anyhow::Result<Vec<(String, Vec<f32>)>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(bytes);
    let mut rows = Vec::new();
    let mut first = true;
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, csv::Position::line);
            anyhow::anyhow!("line {line}: {e}")
        })?;
        let line = record.position().map_or(0, csv::Position::line);
        if std::mem::take(&mut first) && record.iter().all(|f| f.parse::<f32>().is_err()) {
            continue; // header
        }
        let what = format!("row {} (line {line})", rows.len() + 1);
        ensure!(rows.len() < MAX_ROWS, "more than {MAX_ROWS} observations");
        let values = record
            .iter()
            .enumerate()
            .map(|(c, field)| {
                field.parse::<f32>().map_err(|_| {
                    anyhow::anyhow!("{what}, column {}: not a number: {field:?}", c + 1)
                })
            })
            .collect::<anyhow::Result<Vec<f32>>>()?;
        rows.push((what, values));
    }
    Ok(rows)
}

const NPY_MAGIC: &[u8] = b"\x93NUMPY";

/// The text of `key`'s value in an `.npy` header dict (`'descr': '<f4'`).
fn npy_field<'a>(header: &'a str, key: &str) -> anyhow::Result<&'a str> {
    let at = header
        .find(&format!("'{key}'"))
        .with_context(|| format!("the .npy header has no '{key}': {header}"))?;
    let rest = header[at + key.len() + 2..].trim_start();
    let rest = rest
        .strip_prefix(':')
        .with_context(|| format!("malformed .npy header: {header}"))?
        .trim_start();
    // A quoted string, a parenthesised tuple, or a bare word.
    let end = match rest.chars().next() {
        Some(q @ ('\'' | '"')) => rest[1..].find(q).map(|i| i + 2),
        Some('(') => rest.find(')').map(|i| i + 1),
        _ => rest.find([',', '}']),
    }
    .with_context(|| format!("malformed .npy header: {header}"))?;
    Ok(rest[..end].trim())
}

/// An `.npy` array of `f32` or `f64`, shape `[N, obs_dim]` or `[obs_dim]`.
fn read_npy(bytes: &[u8], obs_dim: usize) -> anyhow::Result<Vec<(String, Vec<f32>)>> {
    let short = || anyhow::anyhow!("a truncated .npy file");
    let major = *bytes.get(6).ok_or_else(short)?;
    let (len, start) = match major {
        1 => (
            u16::from_le_bytes(bytes.get(8..10).ok_or_else(short)?.try_into()?) as usize,
            10,
        ),
        2 | 3 => (
            u32::from_le_bytes(bytes.get(8..12).ok_or_else(short)?.try_into()?) as usize,
            12,
        ),
        v => bail!(".npy format version {v} is not supported (1, 2 or 3)"),
    };
    let header = bytes.get(start..start + len).ok_or_else(short)?;
    let header = std::str::from_utf8(header).context("the .npy header is not text")?;
    let data = &bytes[start + len..];
    let descr = npy_field(header, "descr")?.trim_matches(['\'', '"']);
    let size = match descr {
        "<f4" | "|f4" => 4,
        "<f8" => 8,
        other => bail!(
            "the .npy array holds {other}: expected little-endian float32 (<f4) or float64 (<f8)"
        ),
    };
    ensure!(
        npy_field(header, "fortran_order")? == "False",
        "the .npy array is in Fortran order: save it C-ordered (np.ascontiguousarray)"
    );
    let shape_text = npy_field(header, "shape")?;
    let shape: Vec<usize> = shape_text
        .trim_matches(['(', ')'])
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::parse)
        .collect::<Result<_, _>>()
        .with_context(|| format!("malformed .npy shape {shape_text}"))?;
    let (n, dim) = match shape[..] {
        [n, dim] => (n, dim),
        [dim] => (1, dim),
        _ => bail!("the .npy array has shape {shape_text}: expected (N, {obs_dim})"),
    };
    ensure!(
        dim == obs_dim,
        "the .npy array has shape {shape_text}: expected (N, {obs_dim}), {obs_dim} values an observation"
    );
    ensure!(n <= MAX_ROWS, "more than {MAX_ROWS} observations ({n})");
    ensure!(
        data.len() == n * dim * size,
        "the .npy array of shape {shape_text} needs {} data bytes, the file has {}",
        n * dim * size,
        data.len()
    );
    let value = |k: usize| -> f32 {
        let b = &data[k * size..(k + 1) * size];
        if size == 4 {
            f32::from_le_bytes([b[0], b[1], b[2], b[3]])
        } else {
            f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32
        }
    };
    Ok((0..n)
        .map(|r| {
            (
                format!("row {}", r + 1),
                (0..dim).map(|c| value(r * dim + c)).collect(),
            )
        })
        .collect())
}

/// An `.npy` file (version 1.0) of `descr` values of `shape`, `data` the raw
/// little-endian array.
fn npy(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims = match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    // Magic (6), version (2), length (2), header and '\n': a multiple of 64.
    let pad = (64 - (10 + header.len() + 1) % 64) % 64;
    header.extend(std::iter::repeat_n(' ', pad));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + data.len());
    out.extend_from_slice(NPY_MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// One action as a CSV field: the index, or the command's components.
fn csv_row(action: &Action) -> String {
    match (&action.discrete, &action.continuous) {
        (Some(a), _) => a.to_string(),
        (_, Some(c)) => c
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(","),
        _ => String::new(),
    }
}

/// `microrl act POLICY --obs-file FILE [--out OUT]`.
///
/// # Errors
/// The policy or the file cannot be read, the file is not such a CSV or
/// `.npy`, a row is refused (naming it), or the output cannot be written.
pub fn act_file(
    arch: Option<Arch>,
    policy: &Path,
    obs_file: &Path,
    out: Option<&Path>,
) -> anyhow::Result<Report> {
    let blob = crate::policy_file::read(policy)?.blob;
    let arch = match arch {
        Some(a) => a,
        None => crate::eval::detect(&blob).with_context(|| policy.display().to_string())?,
    };
    let acting = arch::actor(arch, &blob).with_context(|| policy.display().to_string())?;
    let rows = read_rows(obs_file, arch.obs_dim())
        .with_context(|| format!("--obs-file {}", obs_file.display()))?;
    let mut actions = Vec::with_capacity(rows.len());
    for (what, obs) in &rows {
        let action =
            acting(obs).with_context(|| format!("--obs-file {}: {what}", obs_file.display()))?;
        actions.push(action);
    }
    let discrete = actions[0].discrete.is_some();
    let n = actions.len();
    let npy_out = out.is_some_and(|p| p.extension().is_some_and(|e| e == "npy"));
    let mut lines = Vec::new();
    if npy_out {
        let bytes = if discrete {
            let data: Vec<u8> = actions
                .iter()
                .flat_map(|a| (a.discrete.unwrap_or(0) as i64).to_le_bytes())
                .collect();
            npy("<i8", &[n], &data)
        } else {
            let dim = actions[0].continuous.as_ref().map_or(0, Vec::len);
            let data: Vec<u8> = actions
                .iter()
                .flat_map(|a| a.continuous.iter().flatten().flat_map(|x| x.to_le_bytes()))
                .collect();
            npy("<f4", &[n, dim], &data)
        };
        crate::atomic::write_file(out.unwrap_or(Path::new("")), &bytes)?;
    } else {
        let mut text = String::with_capacity(8 * (n + 1));
        text.push_str("action\n");
        for a in &actions {
            text.push_str(&csv_row(a));
            text.push('\n');
        }
        match out {
            Some(path) => crate::atomic::write_file(path, text.as_bytes())?,
            None => lines.extend(text.lines().map(str::to_owned)),
        }
    }
    if let Some(path) = out {
        lines.push(format!(
            "wrote {n} actions of {} ({}) for the observations of {} to {}",
            policy.display(),
            arch.name(),
            obs_file.display(),
            path.display()
        ));
    }
    Ok(Report {
        lines,
        json: json!({
            "command": "act", "arch": arch, "policy": policy, "obs_file": obs_file,
            "rows": n, "out": out, "format": if npy_out { "npy" } else { "csv" },
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_written_reads_back() {
        let data: Vec<u8> = [1.5f32, -2.0, 3.25, 0.0, 7.0, 8.0, 9.0, 10.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let file = npy("<f4", &[2, 4], &data);
        assert_eq!((file.len() - data.len()) % 64, 0);
        let rows = read_npy(&file, 4).unwrap();
        assert_eq!(rows[0].1, [1.5, -2.0, 3.25, 0.0]);
        assert_eq!(rows[1].0, "row 2");
        assert!(read_npy(&file, 3).is_err());
        assert!(read_npy(&file[..file.len() - 1], 4).is_err());
        let one = npy("<i8", &[3], &[0; 24]);
        assert!(String::from_utf8_lossy(&one).contains("'shape': (3,), }"));
    }
}
