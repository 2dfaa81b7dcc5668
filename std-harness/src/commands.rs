//! The subcommands. Each returns a [`Report`]: lines for people and one JSON
//! value for machines; `main` prints the lines, then (with `--json`) the JSON
//! object as the very last line of standard output.

use std::path::{Path, PathBuf};

use anyhow::Context;
use microrl::serialize;
use serde_json::{Value, json};

use crate::arch::{self, Arch};

/// What a command produced.
#[derive(Debug, Default)]
pub struct Report {
    /// Human-readable output.
    pub lines: Vec<String>,
    /// Machine-readable summary.
    pub json: Value,
}

/// `microrl info`: parameter counts and memory of every known architecture.
pub fn info() -> Report {
    let footprints: Vec<_> = Arch::ALL.iter().map(|a| a.footprint()).collect();
    let mut lines = vec![
        "microrl policy footprints, bytes measured with core::mem::size_of".to_string(),
        format!(
            "{:<16} {:<24} {:>8} {:>12} {:>14} {:>8} {:>10}",
            "arch", "layers", "params", "inference B", "train state B", "cache B", "blob B"
        ),
    ];
    for f in &footprints {
        lines.push(format!(
            "{:<16} {:<24} {:>8} {:>12} {:>14} {:>8} {:>10}",
            f.arch.name(),
            f.layers,
            f.params,
            f.inference_bytes,
            f.train_state_bytes,
            f.cache_bytes,
            f.blob_bytes
        ));
    }
    lines.push(
        "train state = parameters + gradients + Adam moments (m, v) + step count and config"
            .to_string(),
    );
    Report {
        lines,
        json: json!({ "command": "info", "architectures": footprints }),
    }
}

/// `microrl init`: writes a freshly initialised policy blob.
pub fn init(arch: Arch, seed: u64, out: &Path) -> anyhow::Result<Report> {
    let blob = arch::init_blob(arch, seed)?;
    std::fs::write(out, &blob).with_context(|| format!("writing {}", out.display()))?;
    Ok(Report {
        lines: vec![format!(
            "wrote {} ({} bytes): {} policy, orthogonal init, seed {seed}",
            out.display(),
            blob.len(),
            arch.layers()
        )],
        json: json!({
            "command": "init", "arch": arch, "seed": seed,
            "path": out, "bytes": blob.len(), "crc32": format!("{:08x}", serialize::crc32(&blob[..blob.len() - 4])),
        }),
    })
}

/// `microrl inspect`: verifies a blob's checksum and lists its tensors.
pub fn inspect(path: &Path) -> anyhow::Result<Report> {
    let blob = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let header =
        serialize::verify(&blob).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut lines = vec![format!(
        "{}: microrl parameter blob v{}, {} tensors, {} parameters, {} bytes, CRC-32 ok",
        path.display(),
        header.version,
        header.tensors,
        header.scalars,
        blob.len()
    )];
    let mut tensors = Vec::new();
    for i in 0..header.tensors as usize {
        let shape = serialize::tensor_shape(&blob, i);
        let kind = match shape.tag & 0xFF00 {
            microrl::params::tag::WEIGHT => match shape.tag & 0xFF {
                0 => "weight (identity)",
                1 => "weight (tanh)",
                2 => "weight (relu)",
                _ => "weight (unknown activation)",
            },
            microrl::params::tag::BIAS => "bias",
            microrl::params::tag::LOG_STD => "log_std",
            microrl::params::tag::STATISTICS => "statistics",
            _ => "plain",
        };
        lines.push(format!(
            "  tensor {i}: {} x {} {kind}",
            shape.rows, shape.cols
        ));
        tensors.push(
            json!({ "rows": shape.rows, "cols": shape.cols, "tag": shape.tag, "kind": kind }),
        );
    }
    let matches: Vec<Arch> = Arch::ALL
        .into_iter()
        .filter(|a| {
            a.footprint().blob_bytes == blob.len()
                && arch::act(*a, &blob, &vec![0.0; a.obs_dim()]).is_ok()
        })
        .collect();
    if let Some(a) = matches.first() {
        lines.push(format!("  loads as: {a:?} ({})", a.layers()));
    }
    Ok(Report {
        lines,
        json: json!({
            "command": "inspect", "path": path, "bytes": blob.len(), "version": header.version,
            "tensors": tensors, "params": header.scalars, "arch": matches.first(),
        }),
    })
}

/// `microrl act`: the deterministic action of a policy blob at one observation.
pub fn act(arch: Arch, policy: &Path, obs: &[f32]) -> anyhow::Result<Report> {
    let blob = std::fs::read(policy).with_context(|| format!("reading {}", policy.display()))?;
    let action = arch::act(arch, &blob, obs)?;
    let line = match (&action.discrete, &action.probs, &action.continuous) {
        (Some(a), Some(p), _) => format!("action {a} (probabilities {p:?})"),
        (_, _, Some(c)) => format!("action {c:?} (mean; clip to the actuator range before use)"),
        _ => "no action".to_string(),
    };
    Ok(Report {
        lines: vec![line],
        json: json!({ "command": "act", "arch": arch, "policy": policy, "obs": obs, "action": action }),
    })
}

/// Parses `"0.1,-0.2,…"` into floats.
pub fn parse_obs(text: &str) -> anyhow::Result<Vec<f32>> {
    text.split(',')
        .map(|s| {
            s.trim()
                .parse::<f32>()
                .with_context(|| format!("not a number: {s:?}"))
        })
        .collect()
}

/// Default output path for `init`.
pub fn default_policy_path(arch: Arch) -> PathBuf {
    PathBuf::from(format!("{}.mrlp", arch.name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_lists_every_architecture() {
        let report = info();
        assert_eq!(
            report.json["architectures"].as_array().unwrap().len(),
            Arch::ALL.len()
        );
        assert_eq!(report.json["architectures"][0]["params"], 4610);
    }

    #[test]
    fn init_inspect_act_round_trip() {
        let dir = std::env::temp_dir().join(format!("microrl-harness-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.mrlp");
        init(Arch::Pendulum, 1, &path).unwrap();
        let report = inspect(&path).unwrap();
        assert_eq!(report.json["arch"], "pendulum");
        assert_eq!(report.json["tensors"].as_array().unwrap().len(), 7);
        let report = act(Arch::Pendulum, &path, &parse_obs("1, 0, 0").unwrap()).unwrap();
        assert!(report.json["action"]["continuous"].is_array());
        // Corrupt one byte: inspect must refuse.
        let mut blob = std::fs::read(&path).unwrap();
        blob[100] ^= 1;
        std::fs::write(&path, &blob).unwrap();
        assert!(inspect(&path).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn parse_obs_rejects_garbage() {
        assert_eq!(parse_obs("1,2.5,-3").unwrap(), vec![1.0, 2.5, -3.0]);
        assert!(parse_obs("1,x").is_err());
    }
}
