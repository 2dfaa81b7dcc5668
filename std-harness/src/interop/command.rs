//! The two commands around the mapping: `microrl import` and `microrl
//! export --format safetensors` ([`import_command`], [`export_command`]).
//! Apart from the mapping (the parent module) because they are what touches
//! files and standard error: reading the inputs, the notes, the refusals
//! about `--vecnormalize`, writing the outputs and the [`Report`].

use std::path::Path;

use anyhow::{Context, bail};
use microrl::serialize;
use serde_json::json;

use super::{ActivationSource, Layout, OffPolicyAlgo, VecNormalizeStats, export_with, import_with};
use crate::arch::Activation;
use crate::atomic;
use crate::commands::Report;
use crate::train::EnvName;

/// `microrl import`: reads `file` (and `vecnormalize`), writes the policy to `out`.
pub fn import_command(
    layout: Layout,
    file: &Path,
    vecnormalize: Option<&Path>,
    env: EnvName,
    activation: Option<Activation>,
    out: &Path,
) -> anyhow::Result<Report> {
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let stats = match vecnormalize {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            Some(VecNormalizeStats::parse(&text).with_context(|| path.display().to_string())?)
        }
        None => None,
    };
    let imported = import_with(layout, &bytes, stats.as_ref(), env, activation)
        .with_context(|| format!("importing {}", file.display()))?;
    // (A SAC/TD3 actor's activation is never assumed: see `import_with`.)
    if imported.activation_source == ActivationSource::Assumed {
        eprintln!(
            "note: {} does not state its activation (no activation_fn metadata): assuming tanh, \
             SB3's and CleanRL's default; pass --activation relu for a policy trained with \
             activation_fn=nn.ReLU",
            file.display()
        );
    }
    // The file records the task it was imported for after the blob.
    let task = crate::policy_file::TaskRecord::new(env, &toml::Table::new());
    atomic::write_file(out, &crate::policy_file::with_task(&imported.blob, &task)?)?;
    let crc = serialize::crc32(&imported.blob[..imported.blob.len() - 4]);
    Ok(Report {
        lines: vec![format!(
            "imported {} ({}{}: {} actor tensors{}) as a {} policy ({}) to {} ({} bytes, CRC-32 {crc:08x})",
            file.display(),
            layout.name(),
            imported
                .algo
                .map_or(String::new(), |a| format!(" {}", a.name())),
            imported.tensors.len(),
            if imported.normalised {
                ", VecNormalize observation statistics"
            } else {
                ""
            },
            env.name(),
            imported.arch.layers(),
            out.display(),
            imported.blob.len()
        )],
        json: json!({
            "command": "import", "from": layout, "algo": imported.algo, "env": env.name(), "arch": imported.arch,
            "activation": imported.activation, "activation_source": imported.activation_source,
            "tensors": imported.tensors, "normalised": imported.normalised, "path": out,
            "bytes": imported.blob.len(), "crc32": format!("{crc:08x}"),
        }),
    })
}

/// `microrl export --format safetensors`: checks `policy` acts in `env`
/// (default: the task it records, else its architecture's; another task
/// than the recorded one is refused unless `any_env`), writes its actor under
/// `layout`'s names (a SAC/TD3 policy: those of `algo`'s actor) to `out`,
/// and its observation statistics to `vecnormalize` (required when the
/// policy has any).
pub fn export_command(
    layout: Layout,
    algo: Option<OffPolicyAlgo>,
    env: Option<EnvName>,
    policy: &Path,
    out: &Path,
    vecnormalize: Option<&Path>,
    any_env: bool,
) -> anyhow::Result<(Report, Option<String>)> {
    let (file, env, said) = crate::commands::policy_for_task(policy, env, None, any_env)?;
    let blob = file.blob;
    let exported =
        export_with(layout, algo, &blob).with_context(|| policy.display().to_string())?;
    // As for the firmware export: the policy must load and act in the task.
    crate::eval::eval(Some(env), &blob, 1, 0, &toml::Table::new())?;
    let stats = match (&exported.stats, vecnormalize) {
        (Some(stats), Some(path)) => Some((stats, path)),
        (Some(_), None) => bail!(
            "{} normalises its observations: pass --vecnormalize FILE.json to write the statistics \
             the exported network needs",
            policy.display()
        ),
        (None, Some(_)) => bail!(
            "{} has no observation statistics (it acts on raw observations): drop --vecnormalize",
            policy.display()
        ),
        (None, None) => None,
    };
    atomic::write_file(out, &exported.safetensors)?;
    if let Some((stats, path)) = stats {
        let text = serde_json::to_string_pretty(stats)? + "\n";
        atomic::write_file(path, text.as_bytes())?;
    }
    Ok((
        Report {
            lines: vec![format!(
                "exported {} ({} policy, {}) to {} as {}{} tensors: {}{}",
                policy.display(),
                exported.arch.name(),
                exported.arch.layers(),
                out.display(),
                layout.name(),
                algo.map_or(String::new(), |a| format!(" {}", a.name())),
                exported.tensors.join(", "),
                match stats {
                    Some((_, path)) => format!("; VecNormalize statistics to {}", path.display()),
                    None => String::new(),
                }
            )],
            json: json!({
                "command": "export", "format": "safetensors", "to": layout, "algo": algo,
                "arch": exported.arch,
                "policy": policy, "out": out, "tensors": exported.tensors,
                "vecnormalize": stats.map(|(_, path)| path), "bytes": exported.safetensors.len(),
            }),
        },
        said,
    ))
}
