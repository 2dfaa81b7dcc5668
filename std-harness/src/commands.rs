//! The subcommands. Each returns a [`Report`]: lines for people and one JSON
//! value for machines; `main` prints the lines, then (with `--json`) the JSON
//! object as the very last line of standard output.

mod validate;

pub use validate::*;

use std::path::{Path, PathBuf};

use anyhow::Context;
use microrl::{math, serialize};
use serde_json::{Value, json};

use crate::arch::{self, Arch};
use crate::atomic;
use crate::eval;
use crate::policy_file::{self, PolicyFile};
use crate::train::{self, EnvName, TrainOptions};
use crate::{overlay, plot};

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
            "{:<20} {:<24} {:>8} {:>12} {:>14} {:>8} {:>10}",
            "arch", "layers", "params", "inference B", "train state B", "cache B", "blob B"
        ),
    ];
    for f in &footprints {
        lines.push(format!(
            "{:<20} {:<24} {:>8} {:>12} {:>14} {:>8} {:>10}",
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
    let training = training_ram();
    lines.push(String::new());
    lines.push(
        "training-state RAM on the MCU-sized 4-32-32 CartPole nets (the whole agent: networks, \
         gradients, optimiser, rollout, caches, normalisers), bytes measured with core::mem::size_of"
            .to_string(),
    );
    lines.push(format!("{:<12} {:>10}  {}", "algo", "agent B", "storage"));
    for t in &training {
        lines.push(format!("{:<12} {:>10}  {}", t.algo, t.bytes, t.storage));
    }
    Report {
        lines,
        json: json!({ "command": "info", "architectures": footprints, "training": training }),
    }
}

/// One row of `microrl info`'s training-state table.
#[derive(Debug, serde::Serialize)]
pub struct TrainingRam {
    /// `--algo` value.
    pub algo: &'static str,
    /// `size_of` the whole agent.
    pub bytes: usize,
    /// What the agent holds besides the two networks' training state.
    pub storage: &'static str,
}

/// The training-state RAM of every algorithm on the firmware's 4-32-32
/// CartPole networks (`agent::*<CartPole, 32, …>`, the rollout lengths the
/// harness uses with `--small`), as compiled for a Cortex-M.
///
/// The rollout agents hold their update's batched-pass storage for
/// [`DEFAULT_CHUNK`](microrl::algo::DEFAULT_CHUNK) samples: 32 here, 1 on a
/// Cortex-M. That storage is an array per network layer, linear in the
/// chunk, plus (on desktops only) each layer's transposed weights for the
/// input-gradient kernel; on a Cortex-M it is one sample's worth.
pub fn training_ram() -> Vec<TrainingRam> {
    use crate::train::{A2C_STEPS, GRPO_STEPS, PPO_CARTPOLE_STEPS, REINFORCE_STEPS, TRPO_STEPS};
    use microrl::agent;
    use microrl::env::CartPole;
    use std::mem::size_of;
    let on_mcu = |desktop: usize| desktop - desktop_batch_storage();
    vec![
        TrainingRam {
            algo: "ppo",
            bytes: on_mcu(size_of::<agent::Ppo<CartPole, 32, PPO_CARTPOLE_STEPS>>()),
            storage: "actor + critic with Adam, 256-step rollout",
        },
        TrainingRam {
            algo: "ppo-penalty",
            bytes: on_mcu(size_of::<agent::Ppo<CartPole, 32, PPO_CARTPOLE_STEPS>>()),
            storage: "as ppo (the KL coefficient is one f32)",
        },
        TrainingRam {
            algo: "ppo --kl-ref",
            bytes: on_mcu(size_of::<agent::Anchored<CartPole, 32, PPO_CARTPOLE_STEPS>>()),
            storage: "as ppo, plus the frozen reference policy (inference only)",
        },
        TrainingRam {
            algo: "trpo",
            bytes: on_mcu(size_of::<agent::Trpo<CartPole, 32, TRPO_STEPS>>()),
            storage: "actor (no optimiser step) + critic with Adam, 4 actor-sized CG vectors, 1024-step rollout",
        },
        TrainingRam {
            algo: "grpo",
            bytes: size_of::<agent::Grpo<CartPole, 32, GRPO_STEPS>>(),
            storage: "actor with Adam, no critic; 4096-step rollout (a group of 8 whole episodes)",
        },
        TrainingRam {
            algo: "ppo @4096",
            bytes: on_mcu(size_of::<agent::Ppo<CartPole, 32, GRPO_STEPS>>()),
            storage: "ppo with grpo's rollout length: the difference is what dropping the critic saves",
        },
        TrainingRam {
            algo: "reward-model",
            bytes: size_of::<microrl::algo::RewardLearner<crate::preference::RewardNet>>(),
            storage: "Bradley-Terry 4-32-32-1 reward model with Adam (segments: 804 B each, caller-owned)",
        },
        TrainingRam {
            algo: "a2c",
            bytes: on_mcu(size_of::<agent::A2c<CartPole, 32, A2C_STEPS>>()),
            storage: "actor + critic with Adam, 32-step rollout",
        },
        TrainingRam {
            algo: "reinforce",
            bytes: on_mcu(size_of::<agent::Reinforce<CartPole, 32, REINFORCE_STEPS>>()),
            storage: "actor + baseline with Adam, one 500-step episode",
        },
        TrainingRam {
            algo: "ac",
            bytes: size_of::<agent::ActorCritic<CartPole, 32>>(),
            storage: "actor + critic with Adam, no rollout",
        },
    ]
}

/// `microrl init`: writes a freshly initialised policy blob.
pub fn init(arch: Arch, seed: u64, out: &Path) -> anyhow::Result<Report> {
    let blob = arch::init_blob(arch, seed)?;
    atomic::write_file(out, &blob)?;
    Ok(Report {
        lines: vec![format!(
            "wrote {} ({} bytes): {} policy, {} init, seed {seed}",
            out.display(),
            blob.len(),
            arch.layers(),
            if arch.squashed() {
                "PyTorch's default"
            } else {
                "orthogonal"
            }
        )],
        json: json!({
            "command": "init", "arch": arch, "seed": seed,
            "path": out, "bytes": blob.len(), "crc32": format!("{:08x}", serialize::crc32(&blob[..blob.len().saturating_sub(4)])),
        }),
    })
}

/// `microrl inspect`: verifies a blob's checksum and lists its tensors.
pub fn inspect(path: &Path) -> anyhow::Result<Report> {
    let file = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if file.starts_with(&microrl::checkpoint::MAGIC) {
        return inspect_checkpoint(path, &file);
    }
    let file_len = file.len();
    let PolicyFile { blob, task } =
        policy_file::from_bytes(file).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let header =
        serialize::verify(&blob).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut lines = vec![format!(
        "{}: microrl parameter blob v{}, {} tensors, {} parameters, {} bytes, CRC-32 ok",
        path.display(),
        header.version,
        header.tensors,
        header.scalars,
        file_len
    )];
    lines.push(match &task {
        Some(task) => format!("  trained on: {}", task.describe()),
        None => "  trained on: not recorded (a file without a task record)".to_string(),
    });
    lines.push(format!(
        "  maths backend: {}{}",
        header.backend,
        if header.backend == math::BACKEND {
            String::new()
        } else {
            format!(
                " (this tool computes with {}: actions can differ in the last bit)",
                math::BACKEND
            )
        }
    ));
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
            microrl::params::tag::BOUNDS => "action bounds",
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
    let arch = Arch::detect(&blob);
    match arch {
        Some(a) => lines.push(format!(
            "  architecture: {} ({} policy for {}: actor, observation normaliser, action space)",
            a.name(),
            a.layers(),
            a.env().name()
        )),
        None => lines.push("  architecture: none known to this tool".to_string()),
    }
    Ok(Report {
        lines,
        json: json!({
            "command": "inspect", "path": path, "bytes": file_len, "version": header.version,
            "task": task.as_ref().map(|t| json!({ "env": t.env, "plant": t.plant })),
            "backend": header.backend.name(),
            "crc32": format!("{:08x}", serialize::crc32(&blob[..blob.len().saturating_sub(4)])),
            "tensors": tensors, "params": header.scalars, "arch": arch,
        }),
    })
}

/// `microrl inspect` of a checkpoint (`state.mrlc` of a run's
/// `DIR.checkpoint/`): its framing — version, maths backend, length,
/// CRC-32. Whether it fits an agent is what `train --resume` checks.
fn inspect_checkpoint(path: &Path, blob: &[u8]) -> anyhow::Result<Report> {
    let info = microrl::checkpoint::file_info(blob)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let resumable = if info.backend == math::BACKEND {
        String::new()
    } else {
        format!(
            " (this tool computes with {}: it cannot resume this run)",
            math::BACKEND
        )
    };
    Ok(Report {
        lines: vec![
            format!(
                "{}: microrl checkpoint v{}, {} bytes, CRC-32 ok",
                path.display(),
                info.version,
                blob.len()
            ),
            format!("  maths backend: {}{resumable}", info.backend),
        ],
        json: json!({
            "command": "inspect", "path": path, "kind": "checkpoint", "bytes": blob.len(),
            "version": info.version, "backend": info.backend.name(),
        }),
    })
}

/// The `note:` that `act`, `eval` and `export` print for a policy file
/// written with another maths backend than this tool's
/// ([`math::BACKEND`], `fast-math`): they use it all the same — the
/// weights are valid, only the last bits of `exp`/`tanh` differ — and say
/// once that the actions can differ from the writer's. `None` for the same
/// backend, or a file that is not a policy (the command reports that).
pub fn backend_note(path: &Path) -> Option<String> {
    let blob = std::fs::read(path).ok()?;
    let backend = serialize::read_header(&blob).ok()?.backend;
    (backend != math::BACKEND).then(|| {
        format!(
            "{} was written with the `{backend}` maths backend; this tool computes with `{}`, so \
             its actions can differ from the writer's in the last bit, and a `{}` firmware's \
             serialize::load reports Error::Backend for it (docs/formats.md, \"Maths backend\")",
            path.display(),
            math::BACKEND,
            math::BACKEND
        )
    })
}

/// `microrl act`: the deployed policy's command at one observation (the
/// architecture is recognised from the file unless `arch` is given).
pub fn act(arch: Option<Arch>, policy: &Path, obs: &[f32]) -> anyhow::Result<Report> {
    let blob = policy_file::read(policy)?.blob;
    let arch = match arch {
        Some(a) => a,
        None => eval::detect(&blob).with_context(|| policy.display().to_string())?,
    };
    let action = arch::act(arch, &blob, obs)?;
    let line = match (
        &action.discrete,
        &action.probs,
        &action.continuous,
        &action.bounds,
    ) {
        (Some(a), Some(p), _, _) => format!("action {a} (probabilities {p:?})"),
        (_, _, Some(c), Some(b)) if arch.kind() == arch::PolicyKind::Squashed => {
            format!("action {c:?} (tanh of the actor's mean, scaled to the actuator bounds {b:?})")
        }
        (_, _, Some(c), Some(b)) => {
            format!("action {c:?} (the Gaussian mean clipped to the actuator bounds {b:?})")
        }
        _ => "no action".to_string(),
    };
    Ok(Report {
        lines: vec![line],
        json: json!({ "command": "act", "arch": arch, "policy": policy, "obs": obs, "action": action }),
    })
}

/// Default output path for `init`.
pub fn default_policy_path(arch: Arch) -> PathBuf {
    PathBuf::from(format!("{}.mrlp", arch.name()))
}

/// `microrl train --resume DIR`: continues a checkpointed run.
pub fn resume(dir: &Path) -> anyhow::Result<Report> {
    summary_report(train::resume(dir, true)?)
}

/// `microrl train`: trains one seed and writes the policy, curve and plot.
pub fn train(opts: &TrainOptions) -> anyhow::Result<Report> {
    opts.check()?;
    summary_report(train::train(opts)?)
}

fn summary_report(s: train::TrainSummary) -> anyhow::Result<Report> {
    let mut lines = vec![format!(
        "{} on {}, seed {}: {} steps in {:.2} s; {}-episode deterministic eval on held-out start states {:.1} ± {:.1}",
        s.algo, s.env, s.seed, s.steps_run, s.wall_s, s.eval_episodes, s.eval_mean, s.eval_std
    )];
    if let Some(score) = s.kept_score
        && s.kept_step != s.steps_run
    {
        lines.push(format!(
            "kept the policy of step {} (mean {score:.1} on the {} keep-best start states), not the last; --last keeps the last",
            s.kept_step, s.keep_best
        ));
    }
    lines.push(match (s.solved_at_step, s.solved) {
        (Some(step), true) => format!(
            "solved (eval ≥ {}) at step {step}: selection eval {:.1}, held-out eval {:.1}",
            s.threshold,
            s.select_mean.unwrap_or(f32::NAN),
            s.eval_mean
        ),
        (Some(step), false) => format!(
            "selection eval passed at step {step} ({:.1}) but the held-out eval {:.1} is below {}: not solved",
            s.select_mean.unwrap_or(f32::NAN),
            s.eval_mean,
            s.threshold
        ),
        (None, _) => match train::threshold_json(s.threshold) {
            Some(t) => format!("not solved (eval < {t}) within {} steps", s.steps),
            None => format!("{} has no solved threshold (compare with its baseline)", s.env),
        },
    });
    if let Some(d) = &s.last_update {
        lines.push(format!(
            "last update: policy loss {:.4}, value loss {:.4}, entropy {:.3}, approx_kl {:.5}, clip fraction {:.3}, explained variance {:.3}",
            d.policy_loss, d.value_loss, d.entropy, d.approx_kl, d.clip_fraction, d.explained_variance
        ));
    }
    if let (Some(p), Some(c), Some(g)) = (&s.policy, &s.curve_csv, &s.curve_png) {
        lines.push(format!(
            "wrote {}, {}, {}",
            p.display(),
            c.display(),
            g.display()
        ));
    }
    let mut json = serde_json::to_value(&s)?;
    json["command"] = json!("train");
    Ok(Report { lines, json })
}

/// `microrl plot`: the learning curves of the runs in `dirs` in one PNG
/// (800x500) at `out`, written atomically.
pub fn plot(dirs: &[PathBuf], out: &Path) -> anyhow::Result<Report> {
    let runs = dirs
        .iter()
        .map(|d| overlay::read_run(d))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let png = overlay::render(&runs, plot::DEFAULT_WIDTH, plot::DEFAULT_HEIGHT)?;
    atomic::write_file(out, &png)?;
    let mut lines = vec![format!(
        "wrote {} ({} runs of {}, threshold {})",
        out.display(),
        runs.len(),
        runs[0].identity.env,
        overlay::threshold_text(runs[0].identity.threshold)
    )];
    for run in &runs {
        lines.push(format!(
            "  {}: {}, {} curve rows, held-out eval {:.1}",
            run.dir.display(),
            run.label(),
            run.rows,
            run.identity.eval_mean
        ));
    }
    let runs_json: Vec<Value> = runs
        .iter()
        .map(|r| {
            json!({ "dir": r.dir, "algo": r.identity.algo, "env": r.identity.env, "seed": r.identity.seed,
                    "rows": r.rows, "eval_mean": r.identity.eval_mean })
        })
        .collect();
    Ok(Report {
        lines,
        json: json!({ "command": "plot", "out": out, "width": plot::DEFAULT_WIDTH, "height": plot::DEFAULT_HEIGHT,
                      "env": runs[0].identity.env, "threshold": runs[0].identity.threshold, "runs": runs_json }),
    })
}

/// `microrl eval`: deterministic evaluation of a policy file (on the task
/// it records, else the one its architecture acts in, unless `env` is
/// given; a policy recorded for another task is refused unless `any_env`).
/// Returns the report and the line to print on standard error
/// ([`PolicyFile::check_task`]).
pub fn eval(
    env: Option<EnvName>,
    policy: &Path,
    episodes: u32,
    seed: u64,
    plant: &toml::Table,
    any_env: bool,
) -> anyhow::Result<(Report, Option<String>)> {
    anyhow::ensure!(
        episodes > 0,
        "--episodes must be > 0: an evaluation of no episodes says nothing"
    );
    anyhow::ensure!(
        episodes <= crate::limits::MAX_EPISODES,
        "--episodes must be at most {}, got {episodes}",
        crate::limits::MAX_EPISODES
    );
    let (file, env, said) = policy_for_task(policy, env, Some(plant), any_env)?;
    let s = eval::eval(Some(env), &file.blob, episodes, seed, plant)?;
    let verdict = match train::threshold_json(s.threshold) {
        Some(t) if s.solved => format!("meets threshold {t}"),
        Some(t) => format!("below threshold {t}"),
        None => "no solved threshold".to_string(),
    };
    let mut lines = vec![format!(
        "{}: {} deterministic episodes on {}: mean return {:.1} ± {:.1} ({verdict})",
        policy.display(),
        s.episodes,
        s.env,
        s.mean,
        s.std,
    )];
    if let Some(effort) = s.mean_effort {
        lines.push(format!(
            "mean squared actuator command per step: {effort:.4}"
        ));
    }
    let mut json = serde_json::to_value(&s)?;
    json["command"] = json!("eval");
    json["policy"] = json!(policy);
    Ok((Report { lines, json }, said))
}

/// The policy file at `path` and the task to run it on: `env`, else the
/// task the file records, else its architecture's; checked against the
/// record ([`PolicyFile::check_task`], which returns the line to print).
///
/// # Errors
/// Unreadable, not a policy, or recorded for another task (without
/// `any_env`).
pub fn policy_for_task(
    path: &Path,
    env: Option<EnvName>,
    plant: Option<&toml::Table>,
    any_env: bool,
) -> anyhow::Result<(PolicyFile, EnvName, Option<String>)> {
    let file = policy_file::read(path)?;
    let env = match env.or(file.env()) {
        Some(env) => env,
        None => eval::detect(&file.blob)
            .with_context(|| path.display().to_string())?
            .env(),
    };
    let said = file.check_task(path, env, plant, any_env)?;
    Ok((file, env, said))
}

/// `microrl export`: checks that a trained policy file loads as `env`'s
/// policy type and writes it for the firmware, as raw bytes (`.mrlp`/`.bin`)
/// or as a Rust source file with a `static` byte array (`.rs`): the
/// parameter blob the firmware's `serialize::load` reads, without the
/// file's task record. A policy recorded for another task is refused
/// unless `any_env`; returns the report and the line to print on standard
/// error ([`PolicyFile::check_task`]).
pub fn export(
    env: Option<EnvName>,
    policy: &Path,
    out: &Path,
    any_env: bool,
) -> anyhow::Result<(Report, Option<String>)> {
    let (file, env, said) = policy_for_task(policy, env, None, any_env)?;
    let blob = file.blob;
    // Loading validates checksum, shapes, tensor kinds and finiteness.
    let arch = eval::detect(&blob).with_context(|| policy.display().to_string())?;
    eval::eval(Some(env), &blob, 1, 0, &toml::Table::new())?;
    let is_rust = out.extension().is_some_and(|e| e == "rs");
    if is_rust {
        let mut src = format!(
            "// Generated by `microrl export {} --env {}`: a trained microrl\n\
             // policy (actor weights, observation statistics, action space) in the core's binary\n\
             // format, CRC-32 {:08x}. Load it with `microrl::serialize::load`.\n\
             pub static POLICY: [u8; {}] = [",
            policy.display(),
            env.name(),
            serialize::crc32(&blob[..blob.len().saturating_sub(4)]),
            blob.len()
        );
        for (i, b) in blob.iter().enumerate() {
            if i % 16 == 0 {
                src.push_str("\n   ");
            }
            src.push_str(&format!(" 0x{b:02x},"));
        }
        src.push_str("\n];\n");
        atomic::write_file(out, src.as_bytes())?;
    } else {
        atomic::write_file(out, &blob)?;
    }
    Ok((
        Report {
            lines: vec![format!(
                "exported {} ({} bytes, {} policy for {}) to {}",
                policy.display(),
                blob.len(),
                arch.name(),
                env.name(),
                out.display()
            )],
            json: json!({ "command": "export", "env": env.name(), "arch": arch, "policy": policy, "out": out,
                      "bytes": blob.len(), "format": if is_rust { "rust" } else { "binary" } }),
        },
        said,
    ))
}

/// What the actor's and critic's batched-pass storage of the 4-32-32
/// CartPole networks takes here beyond a Cortex-M's: the desktop's
/// [`DEFAULT_CHUNK`](microrl::algo::DEFAULT_CHUNK) − 1 further samples and
/// its transposed weights. (A batch is linear in its samples, so one
/// sample's worth is the difference between the 2- and 1-sample sizes.)
fn desktop_batch_storage() -> usize {
    use microrl::algo::{Actor, Critic, DEFAULT_CHUNK};
    use microrl::nn::Mlp;
    use microrl::policy::CategoricalActor;
    use std::mem::size_of;
    type A = CategoricalActor<Mlp<4, 32, 2>>;
    type C = Mlp<4, 32, 1>;
    let chunk = size_of::<<A as Actor<4>>::Batch<DEFAULT_CHUNK>>()
        + size_of::<<C as Critic<4>>::Batch<DEFAULT_CHUNK>>();
    let per_sample = (size_of::<<A as Actor<4>>::Batch<2>>()
        - size_of::<<A as Actor<4>>::Batch<1>>())
        + (size_of::<<C as Critic<4>>::Batch<2>>() - size_of::<<C as Critic<4>>::Batch<1>>());
    chunk - per_sample
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
        // One training-state row per algorithm, PPO's the size of its agent
        // type with the Cortex-M's one sample per batched pass and no
        // transposed weights: 4·32 + 32·32 + 32·2 floats for the actor's
        // layers, 4·32 + 32·32 + 32·1 for the critic's.
        let training = report.json["training"].as_array().unwrap();
        assert_eq!(training[0]["algo"], "ppo");
        let transposed = 2 * 4 * ((4 * 32 + 32 * 32 + 32 * 2) + (4 * 32 + 32 * 32 + 32));
        assert_eq!(
            training[0]["bytes"],
            std::mem::size_of::<microrl::agent::Ppo<microrl::env::CartPole, 32, 256, 1>>()
                - transposed
        );
        assert!(training.iter().any(|t| t["algo"] == "ppo-penalty"));
    }

    #[test]
    fn init_inspect_act_round_trip() {
        let dir = std::env::temp_dir().join(format!("microrl-harness-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.mrlp");
        init(Arch::Pendulum, 1, &path).unwrap();
        let report = inspect(&path).unwrap();
        assert_eq!(report.json["arch"], "pendulum");
        // Actor (6 layer tensors + log_std), normaliser (3), bounds (2).
        assert_eq!(report.json["tensors"].as_array().unwrap().len(), 12);
        let report = act(None, &path, &[1.0, 0.0, 0.0]).unwrap();
        assert!(report.json["action"]["continuous"].is_array());
        assert_eq!(report.json["action"]["bounds"][0][1], 2.0);
        // Corrupt one byte: inspect must refuse.
        let mut blob = std::fs::read(&path).unwrap();
        blob[100] ^= 1;
        std::fs::write(&path, &blob).unwrap();
        assert!(inspect(&path).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
