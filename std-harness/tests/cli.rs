//! The `microrl` binary as a user runs it: exit codes and the `--json` contract
//! (exactly one JSON object, on the last line of standard output).

mod common;

use std::process::Command;

use common::{
    assert_one_line_error, fails_naming, last_json, listing, microrl, refused, refused_naming,
    remove_holding, succeeds, temp_dir,
};

#[test]
fn info_json() {
    let (ok, stdout, _) = microrl(&["info", "--json"]);
    assert!(ok);
    let json = last_json(&stdout);
    assert_eq!(json["architectures"][0]["params"], 4610);
    // Actor (4 610) + normaliser (2·4 + 1) floats.
    assert_eq!(json["architectures"][0]["inference_bytes"], 18476);
}

/// `act`'s text names the rule that made the command: a Gaussian policy's
/// clipped mean, a SAC/TD3 actor's scaled `tanh` (issue 50, item 15).
#[test]
fn act_names_the_rule_of_each_continuous_policy() {
    let dir = temp_dir("act-rule");
    for (arch, rule) in [
        ("pendulum", "the Gaussian mean clipped"),
        ("pendulum-squashed", "tanh of the actor's mean, scaled"),
    ] {
        let path = dir.join(format!("{arch}.mrlp"));
        let path = path.to_str().unwrap();
        succeeds(&["init", "--arch", arch, "--out", path]);
        let stdout = succeeds(&["act", path, "--obs", "1,0,0"]);
        assert!(stdout.contains(rule), "{arch}: {stdout}");
    }
}

#[test]
fn init_inspect_act() {
    let dir = std::env::temp_dir().join(format!("microrl-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cartpole.mrlp");
    let path_str = path.to_str().unwrap();
    let stdout = succeeds(&["init", "--seed", "3", "--out", path_str, "--json"]);
    assert_eq!(last_json(&stdout)["bytes"], 18604);
    let (ok, stdout, _) = microrl(&["inspect", path_str, "--json"]);
    assert!(ok);
    assert_eq!(last_json(&stdout)["arch"], "cartpole");
    let (ok, stdout, _) = microrl(&["act", path_str, "--obs", "-0.01,0,0.02,0", "--json"]);
    assert!(ok);
    let action = last_json(&stdout)["action"]["discrete"].clone();
    assert!(action.as_u64().unwrap() < 2);
    // Every command takes its policy file as POLICY; `--policy POLICY` still
    // works (hidden), and spaces around the observation's numbers are fine.
    let stdout = succeeds(&[
        "act",
        "--policy",
        path_str,
        "--obs",
        "-0.01, 0, 0.02, 0",
        "--json",
    ]);
    assert_eq!(last_json(&stdout)["action"]["discrete"], action);
    let (ok, stdout, _) = microrl(&["inspect", "--policy", path_str, "--json"]);
    assert!(ok);
    assert_eq!(last_json(&stdout)["arch"], "cartpole");
    for (args, needle) in [
        (
            &["act", path_str, "--obs", "0.1,x,0,0"][..],
            "not a number: \"x\"",
        ),
        (&["act", path_str][..], "--obs"),
        (&["act", "--obs", "0,0,0,0"][..], "POLICY"),
        (
            &["inspect", path_str, "--policy", path_str][..],
            "cannot be used with",
        ),
        (&["eval", "--episodes", "3"][..], "POLICY"),
        (&["export", "--out", "x.rs"][..], "POLICY"),
    ] {
        let line = refused(args);
        assert!(line.contains(needle), "{args:?}: {line}");
    }
    // A corrupted file is refused with a non-zero exit and a clear message.
    let mut blob = std::fs::read(&path).unwrap();
    blob[40] ^= 0x10;
    std::fs::write(&path, &blob).unwrap();
    fails_naming(&["inspect", path_str], "CRC-32");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The maths backend: `inspect` shows it; `act`, `eval` and `export` use a
/// policy of another backend (its header written directly, as a libm build
/// would) with one `note:` naming both backends, and none for the tool's
/// own. A committed policy from before the field reads as fast-math.
#[test]
fn another_maths_backend_is_shown_and_noted() {
    let dir = temp_dir("backend");
    let path = dir.join("cartpole.mrlp");
    let path_str = path.to_str().unwrap();
    succeeds(&["init", "--seed", "3", "--out", path_str]);
    let blob = std::fs::read(&path).unwrap();
    // The CLI computes with fast-math, code 0: today's bytes.
    assert_eq!(blob[6..8], [0, 0]);
    let stdout = succeeds(&["inspect", path_str, "--json"]);
    assert!(
        stdout.contains("\n  maths backend: fast-math\n"),
        "{stdout}"
    );
    assert_eq!(last_json(&stdout)["backend"], "fast-math");
    let obs = ["--obs", "-0.01,0,0.02,0"];
    let (ok, own, stderr) = microrl(&["act", path_str, obs[0], obs[1], "--json"]);
    assert!(ok && stderr.is_empty(), "{stderr}");

    let mut libm = blob.clone();
    libm[6..8].copy_from_slice(&1u16.to_le_bytes());
    let n = libm.len();
    let crc = microrl::serialize::crc32(&libm[..n - 4]);
    libm[n - 4..].copy_from_slice(&crc.to_le_bytes());
    let other = dir.join("libm.mrlp");
    let other_str = other.to_str().unwrap();
    std::fs::write(&other, &libm).unwrap();
    let stdout = succeeds(&["inspect", other_str, "--json"]);
    assert!(
        stdout.contains("\n  maths backend: libm (this tool computes with fast-math"),
        "{stdout}"
    );
    assert_eq!(last_json(&stdout)["backend"], "libm");
    assert_eq!(last_json(&stdout)["arch"], "cartpole");
    let out = dir.join("exported.mrlp");
    for args in [
        &["act", other_str, obs[0], obs[1], "--json"][..],
        &["eval", other_str, "--episodes", "1"][..],
        &["export", other_str, "--out", out.to_str().unwrap()][..],
    ] {
        let (ok, stdout, stderr) = microrl(args);
        assert!(ok, "{args:?}: {stderr}");
        let notes: Vec<_> = stderr.lines().collect();
        // `eval` and `export` check the task a policy file records; this
        // one (an `init` file) records none, which they say after the note.
        let checked = usize::from(args[0] != "act");
        assert_eq!(notes.len(), 1 + checked, "{args:?}: {stderr}");
        assert!(
            notes[1..]
                .iter()
                .all(|w| w.starts_with("warning: ") && w.contains("records no task")),
            "{args:?}: {stderr}"
        );
        assert!(
            notes[0].starts_with("note: ")
                && notes[0].contains("`libm` maths backend")
                && notes[0].contains("computes with `fast-math`"),
            "{args:?}: {stderr}"
        );
        if args[0] == "act" {
            // The same weights: here the same action.
            assert_eq!(
                last_json(&stdout)["action"]["discrete"],
                last_json(&own)["action"]["discrete"]
            );
        }
    }
    // `export` copies the file: its backend goes with it.
    assert_eq!(std::fs::read(&out).unwrap(), libm);

    // A committed policy from before the field: reserved 0, fast-math.
    let committed = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../firmware-example/policies/cartpole-small.mrlp"
    );
    assert_eq!(std::fs::read(committed).unwrap()[4..8], [1, 0, 0, 0]);
    let stdout = succeeds(&["inspect", committed, "--json"]);
    assert_eq!(last_json(&stdout)["backend"], "fast-math");
    assert_eq!(last_json(&stdout)["arch"], "cartpole-small");

    // A checkpoint's framing: `MRLC`, format 4, the backend, the length, a
    // header of zeros and the CRC (what `inspect` reads of it).
    for (code, line) in [
        (0u16, "  maths backend: fast-math\n"),
        (
            1,
            "  maths backend: libm (this tool computes with fast-math: it cannot resume this run)\n",
        ),
    ] {
        let mut state = b"MRLC".to_vec();
        state.extend(4u16.to_le_bytes());
        state.extend(code.to_le_bytes());
        state.extend(48u32.to_le_bytes());
        state.resize(44, 0);
        let crc = microrl::serialize::crc32(&state);
        state.extend(crc.to_le_bytes());
        let file = dir.join("state.mrlc");
        std::fs::write(&file, &state).unwrap();
        let stdout = succeeds(&["inspect", file.to_str().unwrap(), "--json"]);
        assert!(
            stdout.contains("microrl checkpoint v4, 48 bytes, CRC-32 ok\n"),
            "{stdout}"
        );
        assert!(stdout.contains(line), "{stdout}");
        let json = last_json(&stdout);
        assert_eq!(json["kind"], "checkpoint");
        assert_eq!(
            json["backend"],
            if code == 0 { "fast-math" } else { "libm" }
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn train_eval_export() {
    let dir = temp_dir("train");
    let out = dir.join("run");
    let out_str = out.to_str().unwrap();
    let stdout = succeeds(&["train", "--seed", "0", "--out", out_str, "--json"]);
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
    let stdout = succeeds(&["eval", policy_str, "--episodes", "20", "--json"]);
    assert!(last_json(&stdout)["mean"].as_f64().unwrap() >= 475.0);
    // The wrong task's policy type is refused, not misread.
    fails_naming(&["eval", policy_str, "--env", "pendulum"], "not pendulum");
    // `act` and `inspect` accept the file `train` wrote and name its architecture.
    let (ok, stdout, stderr) =
        microrl(&["act", policy_str, "--obs", "0.01,0,-0.02,0.03", "--json"]);
    assert!(ok, "{stderr}");
    assert!(last_json(&stdout)["action"]["discrete"].as_u64().unwrap() < 2);
    let stdout = succeeds(&["inspect", policy_str, "--json"]);
    assert_eq!(last_json(&stdout)["arch"], "cartpole");

    // summary.json records the full configuration: training again from it
    // reproduces the policy byte for byte.
    let again = dir.join("again");
    let summary = out.join("summary.json");
    succeeds(&[
        "train",
        "--seed",
        "0",
        "--config",
        summary.to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read(again.join("policy.mrlp")).unwrap(),
        std::fs::read(&policy).unwrap()
    );

    let rs = dir.join("policy.rs");
    let stdout = succeeds(&[
        "export",
        policy_str,
        "--out",
        rs.to_str().unwrap(),
        "--json",
    ]);
    let bytes = last_json(&stdout)["bytes"].as_u64().unwrap();
    let src = std::fs::read_to_string(&rs).unwrap();
    assert!(src.contains(&format!("pub static POLICY: [u8; {bytes}]")));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--final-eval-only`: no evaluation while training (so no solved step and
/// no evaluation in the learning curve), the reported one after the whole
/// budget, and the same policy as a run that evaluates (the evaluations
/// draw from their own random streams).
#[test]
fn final_eval_only_trains_the_same_policy_without_evaluating() {
    let dir = temp_dir("final-eval-only");
    let run = |name: &str, flag: &str| {
        let out = dir.join(name);
        let args = [
            "train",
            "--steps",
            "8192",
            "--eval-episodes",
            "5",
            flag,
            "--json",
        ];
        let (ok, stdout, stderr) =
            microrl(&[&args[..], &["--out", out.to_str().unwrap()]].concat());
        assert!(ok, "{stderr}");
        let curve = std::fs::read_to_string(out.join("curve.csv")).unwrap();
        (last_json(&stdout), curve)
    };
    let (evaluating, evaluating_curve) = run("evaluating", "--no-early-stop");
    let (final_only, final_only_curve) = run("final-only", "--final-eval-only");
    assert_eq!(evaluating["run"]["quick_episodes"], 10);
    let evaluated = |curve: &str| {
        curve
            .lines()
            .skip(1)
            .filter(|l| l.split(',').nth(3) != Some(""))
            .count()
    };
    assert!(evaluated(&evaluating_curve) > 0, "{evaluating_curve}");
    assert!(final_only["solved_at_step"].is_null(), "{final_only}");
    assert_eq!(final_only["run"]["quick_episodes"], 0);
    assert_eq!(final_only["run"]["early_stop"], false);
    assert_eq!(evaluated(&final_only_curve), 0, "{final_only_curve}");
    for key in [
        "steps_run",
        "updates",
        "episodes",
        "policy_crc32",
        "eval_mean",
        "eval_episodes",
    ] {
        assert_eq!(final_only[key], evaluating[key], "{key}");
    }
    assert_eq!(final_only["eval_episodes"], 5);
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
    // The 5 292-byte parameter blob, then the 22-byte record of its task.
    assert_eq!(std::fs::metadata(&policy).unwrap().len(), 5292 + 22);
    let policy_str = policy.to_str().unwrap();
    let stdout = succeeds(&["eval", policy_str, "--json"]);
    assert!(last_json(&stdout)["mean"].as_f64().unwrap() >= 475.0);
    let raw = dir.join("small.mrlp");
    // For the firmware: the blob alone.
    succeeds(&["export", policy_str, "--out", raw.to_str().unwrap()]);
    assert_eq!(
        std::fs::read(&raw).unwrap(),
        std::fs::read(&policy).unwrap()[..5292]
    );
    // --small is the CartPole architecture only.
    fails_naming(
        &["train", "--small", "--env", "pendulum", "--steps", "10"],
        "--small",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn config_overrides_are_checked() {
    let dir = temp_dir("config");
    let config = dir.join("ppo.toml");
    std::fs::write(&config, "learning_rate = 5e-4\nepochs = 4\n").unwrap();
    let cfg = config.to_str().unwrap();
    let stdout = succeeds(&[
        "train",
        "--steps",
        "512",
        "--config",
        cfg,
        "--out",
        dir.join("r").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(last_json(&stdout)["steps"], 512);
    // A key the algorithm does not have is an error, not silently ignored.
    std::fs::write(&config, "actor_lr = 1e-3\n").unwrap();
    fails_naming(&["train", "--steps", "512", "--config", cfg], "actor_lr");
    std::fs::write(&config, "not_a_key = 1\n").unwrap();
    fails_naming(&["train", "--steps", "512", "--config", cfg], "not_a_key");
    // Out-of-range values are refused before any rollout, naming the field.
    // Every optional switch (a number, or `false` for off) refuses NaN,
    // negative and zero values too; the online actor-critic's own keys as well.
    let mut cases = vec![
        ("ppo", "clip_range = -0.2\n".to_string(), "clip_range"),
        ("ppo", "clip_range = nan\n".to_string(), "clip_range"),
        ("ppo", "learning_rate = 1e9\n".to_string(), "learning_rate"),
        ("ppo", "epochs = 0\n".to_string(), "epochs"),
        ("ppo", "[adam]\neps = 0.0\n".to_string(), "adam.eps"),
        (
            "ppo",
            "learning_rate = { start = 1e-3, end = -1e-3 }\n".to_string(),
            "learning_rate",
        ),
    ];
    for key in ["max_grad_norm", "value_clip", "target_kl"] {
        for value in ["-1.0", "nan", "0.0"] {
            cases.push(("ppo", format!("{key} = {value}\n"), key));
        }
    }
    for key in ["actor_lr", "critic_lr"] {
        for value in ["-1e-3", "nan", "1e9"] {
            cases.push(("ac", format!("{key} = {value}\n"), key));
        }
    }
    for (algo, text, field) in &cases {
        std::fs::write(&config, text).unwrap();
        let line = refused(&["train", "--algo", algo, "--steps", "512", "--config", cfg]);
        assert!(
            line.contains(&format!("`{field}`")),
            "{algo} {text}: {line}"
        );
    }
    // A malformed file is one line too, naming where.
    std::fs::write(&config, "gamma = \n").unwrap();
    refused_naming(&["train", "--steps", "512", "--config", cfg], &["line 1"]);
    // Nested keys merge over the defaults; a feature switches off with `false`.
    std::fs::write(&config, "max_grad_norm = false\n[adam]\neps = 1e-7\n").unwrap();
    let stdout = succeeds(&["train", "--steps", "512", "--config", cfg, "--json"]);
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

#[test]
fn zero_budgets_episodes_and_jobs_are_refused_naming_the_option() {
    let dir = temp_dir("zero");
    let policy = dir.join("p.mrlp");
    let policy = policy.to_str().unwrap();
    succeeds(&["init", "--out", policy]);
    // A directory that is not a run is refused before training, untouched.
    let mine = dir.join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), "keep").unwrap();
    let mine = mine.to_str().unwrap();
    for (args, option) in [
        (&["validate", "--seeds", "0"][..], "--seeds"),
        (
            &["validate", "--seeds", "2", "--min-pass", "0"],
            "--min-pass",
        ),
        (
            &["validate", "--seeds", "2", "--min-pass", "3"],
            "--min-pass",
        ),
        (
            &[
                "validate",
                "--env",
                "pendulum",
                "--steps",
                "0",
                "--eval-episodes",
                "0",
            ],
            "--steps",
        ),
        (
            &[
                "validate",
                "--seeds",
                "1",
                "--steps",
                "256",
                "--eval-episodes",
                "0",
            ],
            "--eval-episodes",
        ),
        (
            &["validate", "--seeds", "1", "--threshold", "nan"],
            "--threshold",
        ),
        (&["validate", "--seeds", "2", "--jobs", "0"], "--jobs"),
        (&["train", "--steps", "0"], "--steps"),
        (
            &["train", "--steps", "256", "--eval-episodes", "0"],
            "--eval-episodes",
        ),
        (&["eval", policy, "--episodes", "0"], "--episodes"),
        (&["train", "--sed", "3"], "--seed"),
        (&["eval"], "POLICY"),
        (&["train", "--out", mine], "notes.txt"),
        (&["train", "--out", "."], "name the run directory"),
    ] {
        let line = refused(args);
        assert!(line.contains(option), "{args:?}: {line}");
        assert!(!line.contains("meets"), "{args:?}: {line}");
    }
    assert_eq!(listing(&dir.join("mine")), ["notes.txt"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(unix)]
#[test]
fn validate_jobs_beyond_memory_is_an_error_not_a_panic() {
    // 64 training threads of 64 MiB stacks need 4 GiB of address space; under
    // a 1 GB limit some cannot start.
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1000000 && exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_microrl"))
        .args([
            "validate", "--seeds", "64", "--jobs", "64", "--steps", "256",
        ])
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run sh");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_one_line_error(&stderr, "validate --jobs 64 under ulimit -v");
    assert!(
        stderr.contains("could not start training thread"),
        "{stderr}"
    );
}

const RUN_FILES: [&str; 4] = ["curve.csv", "curve.png", "policy.mrlp", "summary.json"];

fn read_run(run: &std::path::Path) -> Vec<Vec<u8>> {
    RUN_FILES
        .iter()
        .map(|f| std::fs::read(run.join(f)).unwrap())
        .collect()
}

#[cfg(unix)]
#[test]
fn a_full_disk_leaves_the_old_outputs_intact() {
    // `ulimit -f 1`: no file may grow past 512 bytes, so every write of a
    // policy (18 604 bytes) is cut short. SIGXFSZ is ignored, so the write
    // fails with EFBIG instead of killing the process.
    fn limited(args: &[&str]) -> String {
        let out = Command::new("sh")
            .arg("-c")
            .arg("trap '' XFSZ; ulimit -f 1 && exec \"$@\"")
            .arg("sh")
            .arg(env!("CARGO_BIN_EXE_microrl"))
            .args(args)
            .env("RUST_BACKTRACE", "1")
            .output()
            .expect("run sh");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_one_line_error(&stderr, args);
        assert!(stderr.contains("File too large"), "{args:?}: {stderr}");
        stderr
    }
    let dir = temp_dir("full");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (policy, rs, raw, run) = (path("p.mrlp"), path("p.rs"), path("q.mrlp"), path("run"));
    for args in [
        &["init", "--out", &policy][..],
        &["export", &policy, "--out", &rs],
        &["export", &policy, "--out", &raw],
        &["train", "--steps", "600", "--out", &run],
    ] {
        let (ok, _, stderr) = microrl(args);
        assert!(ok, "{stderr}");
    }
    let before: Vec<Vec<u8>> = [&policy, &rs, &raw]
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    let run_before = read_run(std::path::Path::new(&run));

    let line = limited(&["init", "--seed", "1", "--out", &policy]);
    assert!(line.contains("p.mrlp"), "{line}");
    let line = limited(&["export", &policy, "--out", &rs]);
    assert!(line.contains("p.rs"), "{line}");
    limited(&["export", &policy, "--out", &raw]);
    let line = limited(&["train", "--seed", "1", "--steps", "600", "--out", &run]);
    assert!(line.contains("run"), "{line}");

    for (p, old) in [&policy, &rs, &raw].iter().zip(&before) {
        assert!(&std::fs::read(p).unwrap() == old, "{p} changed");
    }
    assert!(
        read_run(std::path::Path::new(&run)) == run_before,
        "run changed"
    );
    // No temporary file or directory is left behind.
    assert_eq!(listing(&dir), ["p.mrlp", "p.rs", "q.mrlp", "run"]);
    assert_eq!(listing(std::path::Path::new(&run)), RUN_FILES);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Checks `run` is one complete run — every file non-empty, the summary's
/// policy path present, the policy loading (`inspect`) with the CRC-32 the
/// summary records, the curve ending at the summary's step count — and
/// returns its seed.
fn complete_run(run: &std::path::Path) -> u64 {
    for file in RUN_FILES {
        let len = std::fs::metadata(run.join(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"))
            .len();
        assert!(len > 0, "{file} is empty");
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.join("summary.json")).unwrap())
            .expect("summary.json parses");
    let policy = summary["policy"].as_str().expect("policy path");
    assert!(std::path::Path::new(policy).is_file(), "{policy}");
    let stdout = succeeds(&["inspect", policy, "--json"]);
    assert_eq!(
        last_json(&stdout)["crc32"],
        summary["policy_crc32"],
        "policy and summary of different runs"
    );
    let csv = std::fs::read_to_string(run.join("curve.csv")).unwrap();
    let last_step = csv.lines().last().unwrap().split(',').next().unwrap();
    assert_eq!(
        last_step,
        summary["steps_run"].to_string(),
        "curve and summary of different runs"
    );
    assert!(
        std::fs::read(run.join("curve.png"))
            .unwrap()
            .starts_with(b"\x89PNG")
    );
    summary["seed"].as_u64().unwrap()
}

#[cfg(unix)]
#[test]
fn a_killed_training_leaves_the_old_run_or_the_new_one() {
    use std::time::{Duration, Instant};
    const KILLS: u64 = 12;
    let dir = temp_dir("kill");
    let run = dir.join("run");
    let run_str = run.to_str().unwrap();
    let train = |seed: u64| {
        let seed = seed.to_string();
        let args = [
            "train",
            "--seed",
            &seed,
            "--steps",
            "4096",
            "--no-early-stop",
            "--out",
            run_str,
        ]
        .map(str::to_string);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_microrl"));
        cmd.args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        cmd
    };
    // The run to replace, and how long one takes on this machine.
    let start = Instant::now();
    assert!(train(0).status().unwrap().success());
    let full = start.elapsed();
    assert_eq!(complete_run(&run), 0);

    // xorshift64*, seeded from the clock (printed, to replay a failure).
    let mut state = std::env::var("MICRORL_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("kill test: MICRORL_KILL_SEED={state}, one run takes {full:?}");
    let mut random = move |below: u64| {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D) % below.max(1)
    };
    let mut outcomes = Vec::new();
    for seed in 1..=KILLS {
        let old = complete_run(&run);
        let mut child = train(seed).spawn().unwrap();
        let staging = format!("run.tmp-{}-", child.id());
        // Odd kills: at a random moment of the run (mostly while it trains).
        // Even kills: right after one step of writing the outputs, in turn —
        // the staging directory created, 2 of its 4 files written, all 4,
        // the swap done — each watched for by polling.
        let mut swapped_before_kill = false;
        let when = if seed % 2 == 1 {
            let delay = Duration::from_micros(random(full.as_micros() as u64 * 6 / 5));
            std::thread::sleep(delay);
            format!("at {delay:?}")
        } else {
            use std::os::unix::fs::MetadataExt;
            // The directory's and its files' identity and contents stamps:
            // they change when the directory is swapped, or — what this test
            // is there to catch — when a file is rewritten in place.
            let stamps = || {
                [&run, &run.join("policy.mrlp"), &run.join("summary.json")].map(|p| {
                    std::fs::metadata(p)
                        .ok()
                        .map(|m| (m.ino(), m.len(), m.mtime(), m.mtime_nsec()))
                })
            };
            let before = stamps();
            let changed = || stamps() != before;
            let staged_files = || {
                listing(&dir)
                    .iter()
                    .find(|n| n.starts_with(&staging))
                    .and_then(|n| std::fs::read_dir(dir.join(n)).ok())
                    .map(|d| d.count())
            };
            let (event, reached): (&str, Box<dyn Fn() -> bool>) = match seed / 2 % 4 {
                1 => (
                    "staging directory created",
                    Box::new(|| staged_files().is_some()),
                ),
                2 => ("2 files staged", Box::new(|| staged_files() >= Some(2))),
                3 => ("4 files staged", Box::new(|| staged_files() >= Some(4))),
                _ => ("the run directory changed", Box::new(changed)),
            };
            // Spin: an in-place write takes microseconds.
            let deadline = Instant::now() + full * 4 + Duration::from_secs(2);
            while Instant::now() < deadline && child.try_wait().unwrap().is_none() && !reached() {
                std::thread::yield_now();
            }
            swapped_before_kill = changed();
            format!("after {event}")
        };
        let _ = child.kill();
        let status = child.wait().unwrap();
        let now = complete_run(&run);
        assert!(
            now == old || now == seed,
            "kill {when}: run of seed {now}, expected {old} or {seed}"
        );
        if swapped_before_kill {
            assert_eq!(now, seed, "kill {when}: the directory had changed before");
        }
        outcomes.push(format!(
            "kill {when}: {} ({})",
            if now == seed { "new run" } else { "old run" },
            if status.success() {
                "had finished"
            } else {
                "killed"
            }
        ));
    }
    eprintln!("kill test:\n  {}", outcomes.join("\n  "));
    // A complete run clears what the killed ones left beside the directory.
    assert!(train(KILLS + 1).status().unwrap().success());
    assert_eq!(complete_run(&run), KILLS + 1);
    remove_holding(&dir, &["run"]);
}

/// Decodes a PNG into (width, height, RGB pixels).
fn decode_png(path: &std::path::Path) -> (u32, u32, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap();
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

#[test]
fn plot_overlays_runs_of_one_task_and_refuses_the_rest() {
    let dir = temp_dir("plot");
    let train = |name: &str, args: &[&str]| {
        let out = dir.join(name);
        let mut all = vec!["train", "--steps", "2048", "--out", out.to_str().unwrap()];
        all.extend_from_slice(args);
        succeeds(&all);
        out
    };
    let a = train("a", &["--seed", "0"]);
    let b = train("b", &["--seed", "1", "--algo", "a2c"]);
    let pendulum = train("pendulum", &["--env", "pendulum"]);
    let png = dir.join("overlay.png");
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let (ok, stdout, stderr) =
        microrl(&["plot", &path(&a), &path(&b), "--out", &path(&png), "--json"]);
    assert!(ok, "{stderr}");
    let json = last_json(&stdout);
    assert_eq!(json["command"], "plot");
    assert_eq!(json["env"], "cartpole");
    assert_eq!(json["threshold"], 475.0);
    assert_eq!(json["runs"][0]["seed"], 0);
    assert_eq!(json["runs"][1]["algo"], "a2c");
    assert!(json["runs"][1]["rows"].as_u64().unwrap() > 1, "{json}");
    let (w, h, pixels) = decode_png(&png);
    assert_eq!((w, h), (800, 500));
    let count = |rgb: [u8; 3]| pixels.chunks_exact(3).filter(|p| *p == rgb).count();
    // Not blank: both runs' colours (tab10 blue, orange) and the threshold's green.
    let white = count([255, 255, 255]) as u32;
    assert!(
        white < w * h * 97 / 100,
        "{white} of {} pixels white",
        w * h
    );
    for rgb in [[31, 119, 180], [255, 127, 14], [44, 160, 44]] {
        assert!(count(rgb) > 500, "{rgb:?}: {} pixels", count(rgb));
    }
    let before = std::fs::read(&png).unwrap();

    // Refusals: one line each, the output left as it was.
    let not_a_run = dir.join("not-a-run");
    std::fs::create_dir_all(&not_a_run).unwrap();
    refused_naming(
        &["plot", &path(&a), &path(&not_a_run), "--out", &path(&png)],
        &["not a run directory", "summary.json"],
    );
    refused_naming(
        &["plot", &path(&a.join("curve.csv")), "--out", &path(&png)],
        &["not a directory"],
    );
    refused_naming(
        &["plot", &path(&a), &path(&pendulum), "--out", &path(&png)],
        &["cartpole run", "pendulum run"],
    );
    // The same task judged by another threshold.
    let other = dir.join("other-threshold");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(b.join("curve.csv"), other.join("curve.csv")).unwrap();
    let summary = std::fs::read_to_string(b.join("summary.json")).unwrap();
    let mut summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    summary["threshold"] = serde_json::json!(195.0);
    std::fs::write(other.join("summary.json"), summary.to_string()).unwrap();
    refused_naming(
        &["plot", &path(&a), &path(&other), "--out", &path(&png)],
        &["threshold 475", "threshold 195"],
    );
    // A damaged curve names its file and line.
    std::fs::write(
        other.join("curve.csv"),
        "step,episodes,mean_return,eval_mean,eval_std,wall_s\n1,x,3,,,0\n",
    )
    .unwrap();
    summary["threshold"] = serde_json::json!(475.0);
    std::fs::write(other.join("summary.json"), summary.to_string()).unwrap();
    refused_naming(
        &["plot", &path(&other), "--out", &path(&png)],
        &["curve.csv", "line 2"],
    );
    refused_naming(&["plot", "--out", &path(&png)], &["RUN_DIR"]);
    assert_eq!(std::fs::read(&png).unwrap(), before);
    refused_naming(
        &[
            "plot",
            &path(&a),
            "--out",
            &path(&dir.join("no-such-dir/p.png")),
        ],
        &["no-such-dir"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A changed plant (`--plant`) and a KL-anchored fine-tune (`--kl-ref`):
/// the plant changes what a policy earns, the fine-tune starts from the
/// reference and records its anchor and KL, and misuse is refused naming the
/// option.
#[test]
fn plant_parameters_and_kl_anchored_fine_tuning() {
    let dir = temp_dir("anchor");
    let reference = dir.join("ref");
    let r = reference.to_str().unwrap();
    let (ok, _, err) = microrl(&["train", "--out", r, "--json"]);
    assert!(ok, "{err}");
    let policy = reference.join("policy.mrlp");
    let p = policy.to_str().unwrap();
    let eval = |plant: &str| -> f64 {
        let (ok, out, err) = microrl(&["eval", p, "--plant", plant, "--json"]);
        assert!(ok, "{err}");
        last_json(&out)["mean"].as_f64().unwrap()
    };
    // A control loop four times slower than the one the policy learned on.
    let nominal = eval("tau=0.02");
    let slow = eval("tau=0.08");
    assert_eq!(nominal, 500.0);
    assert!(slow < 300.0, "{slow}");

    let tuned = dir.join("tuned");
    let (ok, out, err) = microrl(&[
        "train",
        "--plant",
        "tau=0.08",
        "--kl-ref",
        p,
        "--kl-beta",
        "0.5",
        "--steps",
        "2048",
        "--no-early-stop",
        "--out",
        tuned.to_str().unwrap(),
        "--json",
    ]);
    assert!(ok, "{err}");
    let s = last_json(&out);
    assert_eq!(s["plant"]["tau"], 0.08);
    assert_eq!(s["anchor"]["reference"], p);
    assert_eq!(s["config"]["normalize_obs"], false);
    let kl = s["last_update"]["kl_reference"].as_f64().unwrap();
    assert!(kl.is_finite() && kl.abs() < 5.0, "{kl}");

    for (args, what) in [
        (vec!["eval", p, "--plant", "bogus=1"], "bogus"),
        (vec!["eval", p, "--plant", "tau"], "KEY=VALUE"),
        (vec!["eval", p, "--plant", "masspole=-1"], "masspole"),
        (vec!["train", "--algo", "a2c", "--kl-ref", p], "--algo ppo"),
        (vec!["train", "--small", "--kl-ref", p], "--kl-ref"),
    ] {
        let err = refused(&args);
        assert!(err.contains(what), "{args:?}: {err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Fusion weights: the wrong task, algorithm, count or sum is refused in
/// one line naming the option.
#[test]
fn reward_and_value_weights_are_refused_naming_the_option() {
    for (args, needle) in [
        (
            &["train", "--reward-weights", "0.9,0.1"][..],
            "--reward-weights: cartpole has one",
        ),
        (
            &[
                "train",
                "--env",
                "cartpole-continuous",
                "--reward-weights",
                "0.9,0.2",
            ],
            "`reward_weights` must be finite, non-negative and sum to 1",
        ),
        (
            &["train", "--value-weights", "0.6,0.6"],
            "`value_weights` must be",
        ),
        (
            &["train", "--value-weights", "0.5"],
            "--value-weights takes two weights",
        ),
        (
            &["train", "--algo", "trpo", "--value-weights", "0.5,0.5"],
            "use --algo ppo",
        ),
    ] {
        let line = refused(args);
        assert!(line.contains(needle), "{args:?}: {line}");
    }
}

/// Multi-reward, multi-critic PPO trains end to end and records its weights.
#[test]
fn multi_critic_ppo_trains_and_records_its_weights() {
    let stdout = succeeds(&[
        "train",
        "--env",
        "cartpole-continuous",
        "--steps",
        "4096",
        "--no-early-stop",
        "--reward-weights",
        "0.9,0.1",
        "--value-weights",
        "0.5,0.5",
        "--eval-episodes",
        "2",
        "--json",
    ]);
    let json = last_json(&stdout);
    assert_eq!(
        json["weights"]["reward"],
        serde_json::json!([0.9f32, 0.1f32])
    );
    assert_eq!(json["weights"]["value"], serde_json::json!([0.5, 0.5]));
    assert_eq!(json["steps_run"], 4096);
}
