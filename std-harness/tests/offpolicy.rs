//! SAC and TD3 through the CLI: `train --algo sac|td3` on the continuous
//! plants, the policy file they write (`*-squashed`: the deterministic
//! `tanh(μ(s))` scaled to the bounds) read back by `eval`, `act` and
//! `info`, and the refusal on a discrete plant. Short budgets: these check
//! the plumbing and determinism; learning itself is checked in the core
//! (`sac_trainer_solves_pendulum`) and in the benchmarks.

use std::path::Path;
use std::process::{Command, Output};

fn microrl(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_microrl"))
        .args(args)
        .output()
        .expect("run microrl")
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("microrl-offpolicy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn json_line(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "microrl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().expect("a JSON line");
    serde_json::from_str(last).expect("JSON")
}

/// Trains `algo` on `env` for `steps` into `dir`; returns the summary.
fn train(algo: &str, env: &str, steps: &str, dir: &Path) -> serde_json::Value {
    let out = microrl(&[
        "train",
        "--algo",
        algo,
        "--env",
        env,
        "--steps",
        steps,
        "--seed",
        "1",
        "--no-early-stop",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    json_line(&out)
}

#[test]
fn sac_and_td3_train_and_their_policy_files_evaluate_and_act() {
    let tmp = temp_dir("train");
    for (algo, env, arch) in [
        ("sac", "pendulum", "pendulum-squashed"),
        ("td3", "cartpole-continuous", "cartpole-continuous-squashed"),
        ("sac", "cartpole-continuous", "cartpole-continuous-squashed"),
    ] {
        let dir = tmp.join(format!("{algo}-{env}"));
        let summary = train(algo, env, "400", &dir);
        assert_eq!(summary["algo"], algo);
        assert_eq!(summary["steps_run"], 400);
        // 400 steps past learning_starts 100: 300 gradient steps.
        assert_eq!(summary["updates"], 300, "{algo} {env}");
        assert_eq!(summary["config"]["batch_size"], 256);
        let crc = summary["policy_crc32"].as_str().unwrap().to_string();
        // The same seed trains the same bits.
        let again = train(algo, env, "400", &tmp.join("again"));
        assert_eq!(again["policy_crc32"].as_str().unwrap(), crc, "{algo} {env}");
        std::fs::remove_dir_all(tmp.join("again")).unwrap();

        let policy = dir.join("policy.mrlp");
        let eval = json_line(&microrl(&[
            "eval",
            policy.to_str().unwrap(),
            "--episodes",
            "2",
            "--json",
        ]));
        assert_eq!(eval["arch"], arch);
        assert!(eval["mean"].as_f64().unwrap().is_finite());
        let obs = if env == "pendulum" {
            "1,0,0"
        } else {
            "0,0,0.01,0"
        };
        let act = microrl(&["act", policy.to_str().unwrap(), "--obs", obs]);
        assert!(
            act.status.success(),
            "{}",
            String::from_utf8_lossy(&act.stderr)
        );
    }
    let info = microrl(&["info", "--json"]);
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(text.contains("pendulum-squashed"), "{text}");
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn sac_refuses_a_discrete_plant_naming_the_algorithm() {
    let out = microrl(&[
        "train", "--algo", "sac", "--env", "cartpole", "--steps", "100",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--algo sac") && err.contains("continuous action space"),
        "{err}"
    );
}

#[test]
fn sac_config_keys_are_checked_by_name() {
    let tmp = temp_dir("config");
    let config = tmp.join("sac.toml");
    std::fs::write(&config, "batch_size = 300\n").unwrap();
    let out = microrl(&[
        "train",
        "--algo",
        "sac",
        "--env",
        "pendulum",
        "--steps",
        "200",
        "--config",
        config.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("batch_size"), "{err}");
    std::fs::remove_dir_all(&tmp).unwrap();
}

/// `--lag 1`: SAC and TD3 on the learn-while-controlling schedule (blocks
/// of 5 ticks; a warm-up of 100 random steps for both) train, record the
/// lag, and learn other weights than the blocking run of the same seed
/// (the published actor acts, not the learner's own); a second run of the
/// same seed gives the same bytes.
#[test]
fn sac_and_td3_learn_while_controlling_with_lag_1() {
    let tmp = temp_dir("lag");
    let config = tmp.join("warmup.toml");
    std::fs::write(&config, "learning_starts = 100\n").unwrap();
    for algo in ["sac", "td3"] {
        let run = |name: &str, lag: &str| {
            let dir = tmp.join(format!("{algo}-{name}"));
            let out = microrl(&[
                "train",
                "--algo",
                algo,
                "--env",
                "pendulum",
                "--lag",
                lag,
                "--config",
                config.to_str().unwrap(),
                "--steps",
                "400",
                "--seed",
                "1",
                "--no-early-stop",
                // The learned weights, not the kept best (at 400 steps the
                // step-0 policy, the same for both schedules).
                "--last",
                "--out",
                dir.to_str().unwrap(),
                "--json",
            ]);
            (
                json_line(&out),
                std::fs::read(dir.join("policy.mrlp")).unwrap(),
            )
        };
        let (summary, policy) = run("a", "1");
        assert_eq!(summary["lag"], 1, "{summary}");
        assert_eq!(summary["steps"], 400, "{summary}");
        // One gradient step per step learned from after the warm-up: the
        // last block of 5 is acted, not yet learned.
        assert_eq!(summary["updates"], 295, "{summary}");
        assert_eq!(
            run("b", "1").1,
            policy,
            "{algo}: the same seed, other bytes"
        );
        let (blocking, blocking_policy) = run("blocking", "0");
        assert_eq!(blocking["updates"], 300, "{blocking}");
        assert_ne!(
            blocking_policy, policy,
            "{algo}: the lagged run learned the blocking run's weights"
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
