//! The `microrl` binary as a user runs it: exit codes and the `--json` contract
//! (exactly one JSON object, on the last line of standard output).

use std::process::Command;

fn microrl(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_microrl"))
        .args(args)
        .output()
        .expect("run microrl");
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn last_json(stdout: &str) -> serde_json::Value {
    let last = stdout.lines().last().expect("some output");
    let value: serde_json::Value = serde_json::from_str(last).expect("last line is JSON");
    assert!(value.is_object());
    value
}

#[test]
fn info_json() {
    let (ok, stdout, _) = microrl(&["info", "--json"]);
    assert!(ok);
    let json = last_json(&stdout);
    assert_eq!(json["architectures"][0]["params"], 4610);
    // Actor (4 610) + normaliser (2·4 + 1) floats.
    assert_eq!(json["architectures"][0]["inference_bytes"], 18476);
}

#[test]
fn init_inspect_act() {
    let dir = std::env::temp_dir().join(format!("microrl-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cartpole.mrlp");
    let path_str = path.to_str().unwrap();
    let (ok, stdout, stderr) = microrl(&["init", "--seed", "3", "--out", path_str, "--json"]);
    assert!(ok, "{stderr}");
    assert_eq!(last_json(&stdout)["bytes"], 18604);
    let (ok, stdout, _) = microrl(&["inspect", path_str, "--json"]);
    assert!(ok);
    assert_eq!(last_json(&stdout)["arch"], "cartpole");
    let (ok, stdout, _) = microrl(&[
        "act",
        "--policy",
        path_str,
        "--obs",
        "-0.01,0,0.02,0",
        "--json",
    ]);
    assert!(ok);
    assert!(last_json(&stdout)["action"]["discrete"].as_u64().unwrap() < 2);
    // A corrupted file is refused with a non-zero exit and a clear message.
    let mut blob = std::fs::read(&path).unwrap();
    blob[40] ^= 0x10;
    std::fs::write(&path, &blob).unwrap();
    let (ok, _, stderr) = microrl(&["inspect", path_str]);
    assert!(!ok);
    assert!(stderr.contains("CRC-32"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("microrl-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn train_eval_export() {
    let dir = temp_dir("train");
    let out = dir.join("run");
    let out_str = out.to_str().unwrap();
    let (ok, stdout, stderr) = microrl(&["train", "--seed", "0", "--out", out_str, "--json"]);
    assert!(ok, "{stderr}");
    let json = last_json(&stdout);
    for key in [
        "env",
        "algo",
        "seed",
        "steps",
        "wall_s",
        "eval_mean",
        "eval_std",
        "eval_episodes",
        "solved_at_step",
    ] {
        assert!(json.get(key).is_some(), "missing {key}: {json}");
    }
    assert_eq!(json["env"], "cartpole");
    assert_eq!(json["algo"], "ppo");
    assert_eq!(json["steps"], 100_000);
    assert!(json["eval_mean"].as_f64().unwrap() >= 475.0, "{json}");
    assert!(json["solved_at_step"].as_u64().unwrap() <= 100_000);
    for key in [
        "approx_kl",
        "clip_fraction",
        "explained_variance",
        "entropy",
    ] {
        assert!(
            json["last_update"][key].is_number(),
            "diagnostic {key}: {json}"
        );
    }
    for file in ["policy.mrlp", "curve.csv", "curve.png", "summary.json"] {
        assert!(out.join(file).is_file(), "{file} missing");
    }
    let csv = std::fs::read_to_string(out.join("curve.csv")).unwrap();
    assert!(csv.starts_with("step,episodes,mean_return,eval_mean,eval_std,wall_s"));
    assert!(
        std::fs::read(out.join("curve.png"))
            .unwrap()
            .starts_with(b"\x89PNG")
    );

    // The saved policy (actor + frozen normaliser) evaluates to the same figure.
    let policy = out.join("policy.mrlp");
    let policy_str = policy.to_str().unwrap();
    let (ok, stdout, stderr) =
        microrl(&["eval", "--policy", policy_str, "--episodes", "20", "--json"]);
    assert!(ok, "{stderr}");
    assert!(last_json(&stdout)["mean"].as_f64().unwrap() >= 475.0);
    // The wrong task's policy type is refused, not misread.
    let (ok, _, stderr) = microrl(&["eval", "--policy", policy_str, "--env", "pendulum"]);
    assert!(!ok);
    assert!(stderr.contains("not pendulum"), "{stderr}");
    // `act` and `inspect` accept the file `train` wrote and name its architecture.
    let (ok, stdout, stderr) = microrl(&[
        "act",
        "--policy",
        policy_str,
        "--obs",
        "0.01,0,-0.02,0.03",
        "--json",
    ]);
    assert!(ok, "{stderr}");
    assert!(last_json(&stdout)["action"]["discrete"].as_u64().unwrap() < 2);
    let (ok, stdout, stderr) = microrl(&["inspect", policy_str, "--json"]);
    assert!(ok, "{stderr}");
    assert_eq!(last_json(&stdout)["arch"], "cartpole");

    // summary.json records the full configuration: training again from it
    // reproduces the policy byte for byte.
    let again = dir.join("again");
    let summary = out.join("summary.json");
    let (ok, _, stderr) = microrl(&[
        "train",
        "--seed",
        "0",
        "--config",
        summary.to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert_eq!(
        std::fs::read(again.join("policy.mrlp")).unwrap(),
        std::fs::read(&policy).unwrap()
    );

    let rs = dir.join("policy.rs");
    let (ok, stdout, stderr) = microrl(&[
        "export",
        "--policy",
        policy_str,
        "--out",
        rs.to_str().unwrap(),
        "--json",
    ]);
    assert!(ok, "{stderr}");
    let bytes = last_json(&stdout)["bytes"].as_u64().unwrap();
    let src = std::fs::read_to_string(&rs).unwrap();
    assert!(src.contains(&format!("pub static POLICY: [u8; {bytes}]")));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn small_architecture_trains_evaluates_and_exports() {
    // `--small`: the firmware's 4-32-32 CartPole networks; `eval` and `export`
    // recognise the smaller policy file.
    let dir = temp_dir("small");
    let out = dir.join("run");
    let (ok, stdout, stderr) =
        microrl(&["train", "--small", "--out", out.to_str().unwrap(), "--json"]);
    assert!(ok, "{stderr}");
    assert!(last_json(&stdout)["eval_mean"].as_f64().unwrap() >= 475.0);
    let policy = out.join("policy.mrlp");
    assert_eq!(std::fs::metadata(&policy).unwrap().len(), 5292);
    let policy_str = policy.to_str().unwrap();
    let (ok, stdout, stderr) = microrl(&["eval", "--policy", policy_str, "--json"]);
    assert!(ok, "{stderr}");
    assert!(last_json(&stdout)["mean"].as_f64().unwrap() >= 475.0);
    let raw = dir.join("small.mrlp");
    let (ok, _, stderr) = microrl(&[
        "export",
        "--policy",
        policy_str,
        "--out",
        raw.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert_eq!(
        std::fs::read(&raw).unwrap(),
        std::fs::read(&policy).unwrap()
    );
    // --small is the CartPole architecture only.
    let (ok, _, stderr) = microrl(&["train", "--small", "--env", "pendulum", "--steps", "10"]);
    assert!(!ok);
    assert!(stderr.contains("--small"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn config_overrides_are_checked() {
    let dir = temp_dir("config");
    let config = dir.join("ppo.toml");
    std::fs::write(&config, "learning_rate = 5e-4\nepochs = 4\n").unwrap();
    let cfg = config.to_str().unwrap();
    let (ok, stdout, stderr) = microrl(&[
        "train",
        "--steps",
        "512",
        "--config",
        cfg,
        "--out",
        dir.join("r").to_str().unwrap(),
        "--json",
    ]);
    assert!(ok, "{stderr}");
    assert_eq!(last_json(&stdout)["steps"], 512);
    // A key the algorithm does not have is an error, not silently ignored.
    std::fs::write(&config, "actor_lr = 1e-3\n").unwrap();
    let (ok, _, stderr) = microrl(&["train", "--steps", "512", "--config", cfg]);
    assert!(!ok);
    assert!(stderr.contains("actor_lr"), "{stderr}");
    std::fs::write(&config, "not_a_key = 1\n").unwrap();
    let (ok, _, stderr) = microrl(&["train", "--steps", "512", "--config", cfg]);
    assert!(!ok);
    assert!(stderr.contains("not_a_key"), "{stderr}");
    // Out-of-range values are refused before any rollout, naming the field.
    for (text, field) in [
        ("clip_range = -0.2\n", "clip_range"),
        ("clip_range = nan\n", "clip_range"),
        ("learning_rate = 1e9\n", "learning_rate"),
        ("max_grad_norm = -1.0\n", "max_grad_norm"),
        ("target_kl = nan\n", "target_kl"),
        ("epochs = 0\n", "epochs"),
        ("[adam]\neps = 0.0\n", "adam.eps"),
        (
            "learning_rate = { start = 1e-3, end = -1e-3 }\n",
            "learning_rate",
        ),
    ] {
        std::fs::write(&config, text).unwrap();
        let (ok, _, stderr) = microrl(&["train", "--steps", "512", "--config", cfg]);
        assert!(!ok, "{text} accepted");
        assert!(stderr.contains(&format!("`{field}`")), "{text}: {stderr}");
    }
    // Nested keys merge over the defaults; a feature switches off with `false`.
    std::fs::write(&config, "max_grad_norm = false\n[adam]\neps = 1e-7\n").unwrap();
    let (ok, stdout, stderr) = microrl(&["train", "--steps", "512", "--config", cfg, "--json"]);
    assert!(ok, "{stderr}");
    let json = last_json(&stdout);
    assert_eq!(json["config"]["max_grad_norm"], false);
    assert_eq!(
        json["config"]["adam"]["beta1"].as_f64().unwrap() as f32,
        0.9
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn validate_exit_status_follows_the_pass_criterion() {
    // 256 steps cannot reach 475 on every seed...
    let (ok, stdout, _) = microrl(&[
        "validate",
        "--seeds",
        "2",
        "--steps",
        "256",
        "--threshold",
        "1000",
        "--json",
    ]);
    assert!(!ok, "an unreachable threshold must fail");
    let json = last_json(&stdout);
    assert_eq!(json["pass"], false);
    assert_eq!(json["results"].as_array().unwrap().len(), 2);
    // ...while a threshold every policy meets passes.
    let (ok, stdout, _) = microrl(&[
        "validate",
        "--seeds",
        "2",
        "--steps",
        "256",
        "--threshold",
        "0",
        "--json",
    ]);
    assert!(ok);
    assert_eq!(last_json(&stdout)["passed"], 2);
}
