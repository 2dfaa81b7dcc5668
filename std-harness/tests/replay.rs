//! `microrl train --config runs/X/summary.json` replays run X.
//!
//! For every option of `train` that shapes a run, a short run with a
//! non-default value is replayed from its `summary.json` alone (no other
//! option but `--out`): the replay's summary — its `policy_crc32`, its
//! budget, its options, its evaluations — must be the original's but for
//! wall-clock time and output paths. An option that does not shape the run
//! (`--checkpoint-every`) is replayed too, to show that leaving it out
//! changes nothing.

mod common;

use std::path::Path;

use common::{microrl, s, succeeds, temp_dir};

/// A run's summary without its wall-clock time and output paths.
fn summary(out: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out.join("summary.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for key in ["wall_s", "policy", "curve_csv", "curve_png"] {
        v.as_object_mut().unwrap().remove(key);
    }
    v
}

/// The short CartPole PPO run every PPO case changes one option of.
const BASE: [&str; 2] = ["--steps", "2048"];

#[test]
fn a_summary_json_replays_every_option_of_its_run() {
    let dir = temp_dir("replay");
    let base = dir.join("base");
    succeeds(&[&["train", "--out", s(&base)][..], &BASE].concat());
    let reference = base.join("policy.mrlp");
    let model = dir.join("reward-model.mrlp");
    succeeds(&[
        "reward-model",
        "--segments",
        "40",
        "--pairs",
        "80",
        "--epochs",
        "2",
        "--out",
        s(&model),
    ]);
    let toml = dir.join("config.toml");
    std::fs::write(&toml, "normalize_obs = false\ngamma = 0.95\n").unwrap();
    // `--last`: the trained actor is the result, not the step-0 policy that
    // scores best this early.
    let sac = [
        "--env", "pendulum", "--algo", "sac", "--steps", "1200", "--last",
    ];
    let td3_toml = dir.join("td3.toml");
    std::fs::write(&td3_toml, "learning_starts = 200\npolicy_delay = 3\n").unwrap();
    // (case, the options of the original run, whether they are BASE's changes)
    let cases: Vec<(&str, Vec<&str>, bool)> = vec![
        ("seed", vec!["--seed", "3", "--steps", "2048"], false),
        ("steps", vec!["--steps", "1024"], false),
        ("algo", vec!["--algo", "a2c"], true),
        ("env", vec!["--env", "acrobot"], true),
        ("plant", vec!["--plant", "masspole=0.3"], true),
        ("small", vec!["--small"], true),
        ("lag", vec!["--lag", "1"], true),
        (
            "config (normalisation, gamma)",
            vec!["--config", s(&toml)],
            true,
        ),
        ("eval-episodes", vec!["--eval-episodes", "7"], true),
        ("select-margin", vec!["--select-margin", "0"], true),
        ("no-early-stop", vec!["--no-early-stop"], true),
        ("final-eval-only", vec!["--final-eval-only"], true),
        ("keep-best", vec!["--keep-best", "3"], true),
        ("last", vec!["--last"], true),
        (
            "kl-ref",
            vec![
                "--kl-ref",
                s(&reference),
                "--kl-beta",
                "0.3",
                "--kl-target",
                "0.02",
            ],
            true,
        ),
        ("reward-model", vec!["--reward-model", s(&model)], true),
        (
            "reward-weights, value-weights",
            vec![
                "--env",
                "cartpole-continuous",
                "--reward-weights",
                "0.8,0.2",
                "--value-weights",
                "0.6,0.4",
                "--steps",
                "4096",
            ],
            false,
        ),
        ("sac budget", sac.to_vec(), false),
        ("sac lag", [&sac[..], &["--lag", "1"]].concat(), false),
        (
            "td3 budget and config",
            vec![
                "--env",
                "pendulum",
                "--algo",
                "td3",
                "--steps",
                "1500",
                "--last",
                "--config",
                s(&td3_toml),
            ],
            false,
        ),
        (
            "checkpoint-every (shapes nothing)",
            vec!["--checkpoint-every", "3"],
            true,
        ),
    ];
    let mut failed = Vec::new();
    for (i, (case, options, on_base)) in cases.iter().enumerate() {
        let original = dir.join(format!("{i}-original"));
        let replay = dir.join(format!("{i}-replay"));
        let options = if *on_base {
            [&BASE[..], options].concat()
        } else {
            options.clone()
        };
        let (ok, _, err) = microrl(&[&["train", "--out", s(&original)][..], &options].concat());
        assert!(ok, "{case}: {err}");
        let config = original.join("summary.json");
        let (ok, _, err) = microrl(&["train", "--config", s(&config), "--out", s(&replay)]);
        if !ok {
            failed.push(format!("{case}: replay refused: {err}"));
            continue;
        }
        let (a, b) = (summary(&original), summary(&replay));
        if a != b {
            let differ: Vec<String> = a
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, v)| b.get(k.as_str()) != Some(v))
                .map(|(k, v)| format!("{k}: {v} → {}", b.get(k.as_str()).unwrap_or(&"none".into())))
                .collect();
            failed.push(format!("{case}: {}", differ.join("; ")));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failed.is_empty(), "not replayed:\n{}", failed.join("\n"));
}
