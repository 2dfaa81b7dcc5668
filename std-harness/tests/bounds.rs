//! What the `microrl` binary refuses up front, naming the option or field,
//! and what it says instead of saying nothing: every count is bounded
//! (options and configuration fields), `tune`'s options are checked before
//! anything is allocated, a refused `suite` configuration is an error and
//! not a losing row, a SAC/TD3 budget that ends before the first update is
//! said, an option refused is named as typed, a failed write to standard
//! output is one `error:` line, and a plant without a solved threshold has
//! a `null` one in JSON.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{assert_one_line_error, last_json, microrl, refused_naming, s, temp_dir};

/// Runs `microrl args` and expects a refusal within `secs` seconds: one
/// `error:` line holding every one of `needles`. A command that is still
/// running then is killed and fails the test (it ran without bound).
fn refused_within(args: &[&str], secs: u64, needles: &[&str]) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_microrl"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} still running after {secs} s: not refused up front");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success(), "{args:?} accepted: {stderr}");
    assert!(out.status.code().is_some(), "{args:?}: killed by a signal");
    assert_one_line_error(&stderr, args);
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "{args:?}: no `{needle}` in {stderr}"
        );
    }
    stderr
}

/// `microrl tune --eta 1`, `--eta 0`, `--min-steps 0` once pushed budgets
/// until a 1 GB allocation aborted, `--candidates 1000000000` drew 24 GB
/// of candidates: each is refused naming the option and its range.
#[test]
fn tune_options_out_of_range_are_refused_naming_the_option() {
    for (option, value, bound) in [
        ("--eta", "1", "2..=1024"),
        ("--eta", "0", "2..=1024"),
        ("--eta", "100000", "2..=1024"),
        ("--min-steps", "0", "1..="),
        ("--max-steps", "2000000000", "1..=1000000000"),
        ("--candidates", "1000000000", "1..=1024"),
        ("--candidates", "0", "1..=1024"),
    ] {
        refused_within(&["tune", option, value], 10, &[option, bound]);
    }
}

/// A count in a configuration that would run without end (a TD3 or SAC
/// round of 4294967295 gradient steps hung; PPO's 65535 epochs, TRPO's
/// 65535 conjugate-gradient iterations) is refused naming the field and
/// its bound, before the first step.
#[test]
fn configuration_counts_are_bounded_naming_the_field() {
    let dir = temp_dir("config-counts");
    for (algo, env, key, value, bound) in [
        (
            "td3",
            "pendulum",
            "gradient_steps",
            "4294967295",
            "1..=1000",
        ),
        (
            "sac",
            "pendulum",
            "gradient_steps",
            "4294967295",
            "1..=1000",
        ),
        (
            "sac",
            "pendulum",
            "target_update_interval",
            "4294967295",
            "1000000000",
        ),
        (
            "td3",
            "pendulum",
            "policy_delay",
            "4294967295",
            "1000000000",
        ),
        ("td3", "pendulum", "train_freq", "4294967295", "1000000000"),
        ("ppo", "cartpole", "epochs", "65535", "1..=1000"),
        ("grpo", "cartpole", "epochs", "65535", "1..=1000"),
        ("trpo", "cartpole", "cg_iters", "65535", "1..=1000"),
        ("trpo", "cartpole", "line_search_steps", "65535", "1..=1000"),
    ] {
        let config = dir.join(format!("{algo}-{key}.toml"));
        std::fs::write(&config, format!("{key} = {value}\n")).unwrap();
        for command in ["train", "validate"] {
            refused_within(
                &[
                    command,
                    "--algo",
                    algo,
                    "--env",
                    env,
                    "--config",
                    s(&config),
                    "--steps",
                    "20000",
                ],
                20,
                &[&format!("`{key}`"), bound],
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every count option has a documented maximum, refused naming the option
/// and the bound before any work: `eval --episodes 4294967295`,
/// `--eval-episodes 1000000000` and `suite --keep-best 4294967295` ran
/// without bound.
#[test]
fn count_options_are_bounded_naming_the_option_and_the_bound() {
    let dir = temp_dir("count-options");
    let policy = dir.join("p.mrlp");
    assert!(microrl(&["init", "--out", s(&policy)]).0);
    let p = s(&policy);
    let cases: [&[&str]; 10] = [
        &["eval", p, "--episodes", "4294967295"],
        &["eval", p, "--episodes", "10001"],
        &["train", "--eval-episodes", "1000000000"],
        &["validate", "--eval-episodes", "4294967295", "--seeds", "1"],
        &["suite", "--keep-best", "4294967295"],
        &["suite", "--keep-best", "10001"],
        &["train", "--steps", "18446744073709551615"],
        &["validate", "--steps", "1000000001", "--seeds", "1"],
        &["suite", "--steps", "1000000001"],
        &["bench", "--steps", "1000000001"],
    ];
    for args in cases {
        let option = args.iter().find(|a| a.starts_with("--")).unwrap();
        let bound = if option.contains("steps") {
            "1000000000"
        } else {
            "10000"
        };
        refused_within(args, 10, &[option, bound]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `suite --steps 0` and a `suite --config` the core refuses (`gamma = 2`)
/// were reported as "0/1 rows beat their baseline: FAIL" after training:
/// each is one `error:` line naming the option or key, before any run.
#[test]
fn a_refused_suite_configuration_is_an_error_before_any_run() {
    let dir = temp_dir("suite-config");
    refused_within(
        &["suite", "--steps", "0", "--env", "servo"],
        10,
        &["--steps"],
    );
    for (text, key) in [
        ("gamma = 2\n", "`gamma`"),
        ("epochs = 65535\n", "`epochs`"),
        ("total_steps = 0\n", "`total_steps`"),
    ] {
        let config = dir.join("c.toml");
        std::fs::write(&config, text).unwrap();
        let line = refused_within(
            &["suite", "--env", "servo", "--config", s(&config), "--json"],
            20,
            &[key],
        );
        assert!(!line.contains("FAIL"), "{line}");
    }
    // SAC's rows too (each row's agent checks its own configuration).
    let config = dir.join("sac.toml");
    std::fs::write(&config, "gradient_steps = 4294967295\n").unwrap();
    refused_within(
        &[
            "suite",
            "--env",
            "servo",
            "--algo",
            "sac",
            "--config",
            s(&config),
        ],
        20,
        &["`gradient_steps`", "sac"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A TD3 or SAC budget that ends before the first update (TD3 on Pendulum
/// learns from step 10 000) trained nothing and said nothing: `train` says
/// so in a `warning:` line (and still runs), `validate` refuses it; a
/// budget past it says nothing.
#[test]
fn a_budget_before_the_first_update_is_said_by_train_and_refused_by_validate() {
    let dir = temp_dir("learning-starts");
    for algo in ["td3", "sac"] {
        let out = dir.join(algo);
        let args = [
            "train",
            "--algo",
            algo,
            "--env",
            "pendulum",
            "--steps",
            "50",
            "--eval-episodes",
            "1",
            "--out",
            s(&out),
            "--json",
        ];
        let (ok, stdout, stderr) = microrl(&args);
        assert!(ok, "{stderr}");
        assert_eq!(last_json(&stdout)["updates"], 0);
        let warning: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("warning: "))
            .collect();
        assert_eq!(warning.len(), 1, "{stderr}");
        assert!(
            warning[0].contains("--steps 50") && warning[0].contains("learning_starts"),
            "{stderr}"
        );
        refused_within(
            &[
                "validate", "--algo", algo, "--env", "pendulum", "--steps", "50", "--seeds", "1",
            ],
            20,
            &["--steps 50", "learning_starts"],
        );
    }
    // Past learning_starts (and a multiple of train_freq): no warning.
    let config = dir.join("early.toml");
    std::fs::write(&config, "learning_starts = 10\nbatch_size = 8\n").unwrap();
    let (ok, stdout, stderr) = microrl(&[
        "train",
        "--algo",
        "td3",
        "--env",
        "pendulum",
        "--config",
        s(&config),
        "--steps",
        "11",
        "--eval-episodes",
        "1",
        "--out",
        s(&dir.join("early")),
        "--json",
    ]);
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    assert_eq!(last_json(&stdout)["updates"], 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `train --algo sac --kl-ref P` was refused naming `normalize_obs`, a key
/// the user never wrote: the refusal names `--kl-ref`.
#[test]
fn an_option_refused_for_an_algorithm_is_named_as_typed() {
    let dir = temp_dir("kl-ref");
    let policy = dir.join("p.mrlp");
    assert!(microrl(&["init", "--arch", "pendulum", "--out", s(&policy)]).0);
    for algo in ["sac", "td3", "ac", "trpo", "a2c"] {
        let line = refused_naming(
            &[
                "train",
                "--algo",
                algo,
                "--env",
                "pendulum",
                "--kl-ref",
                s(&policy),
                "--out",
                s(&dir.join("run")),
            ],
            &["--kl-ref"],
        );
        assert!(!line.contains("normalize_obs"), "{line}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A failed write to standard output (`> /dev/full`) panicked ("internal
/// error … please report it"): it is one `error:` line naming standard
/// output and exit status 1, for the report lines and for `--json`.
#[test]
fn a_failed_write_to_standard_output_is_one_error_line() {
    let full = Path::new("/dev/full");
    if !full.exists() {
        eprintln!("SKIPPED a_failed_write_to_standard_output_is_one_error_line: no /dev/full here");
        return;
    }
    let dir = temp_dir("dev-full");
    let policy = dir.join("p.mrlp");
    let p = s(&policy);
    let run = dir.join("run");
    let cases: [&[&str]; 5] = [
        &["info"],
        &["init", "--out", p],
        &["eval", p, "--episodes", "1", "--json"],
        &["inspect", p],
        &[
            "train",
            "--steps",
            "256",
            "--eval-episodes",
            "1",
            "--out",
            s(&run),
            "--json",
        ],
    ];
    for args in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_microrl"))
            .args(args)
            .stdout(std::fs::File::create(full).unwrap())
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_one_line_error(&stderr, args);
        assert!(stderr.contains("standard output"), "{args:?}: {stderr}");
    }
    // What was written to files is written: the run is complete.
    assert!(run.join("summary.json").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A plant without a solved threshold (the suite's, the family's) printed
/// `"threshold": 3.4028234663852886e38` in JSON: it is `null` in `train`'s
/// JSON and summary (and its `run`), in `eval`'s and `plot`'s, which reads
/// the summary back; a plant with one keeps its number.
#[test]
fn a_plant_without_a_solved_threshold_has_a_null_threshold_in_json() {
    let dir = temp_dir("threshold");
    let run = dir.join("run");
    let (ok, stdout, stderr) = microrl(&[
        "train",
        "--algo",
        "sac",
        "--env",
        "servo",
        "--steps",
        "20",
        "--eval-episodes",
        "1",
        "--out",
        s(&run),
        "--json",
    ]);
    assert!(ok, "{stderr}");
    let printed = last_json(&stdout);
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    for json in [&printed, &written] {
        assert!(json["threshold"].is_null(), "{}", json["threshold"]);
        assert!(json["run"]["threshold"].is_null(), "{}", json["run"]);
    }
    assert!(!stdout.contains("e38"), "{stdout}");
    let plot = last_json(&common::succeeds(&[
        "plot",
        s(&run),
        "--out",
        s(&dir.join("plot.png")),
        "--json",
    ]));
    assert!(plot["threshold"].is_null(), "{plot}");
    let eval = common::succeeds(&[
        "eval",
        s(&run.join("policy.mrlp")),
        "--episodes",
        "1",
        "--json",
    ]);
    assert!(last_json(&eval)["threshold"].is_null(), "{eval}");
    assert!(!eval.contains("e38"), "{eval}");
    // Pendulum has one.
    let policy = dir.join("pendulum.mrlp");
    assert!(microrl(&["init", "--arch", "pendulum", "--out", s(&policy)]).0);
    let eval = common::succeeds(&["eval", s(&policy), "--episodes", "1", "--json"]);
    assert_eq!(last_json(&eval)["threshold"], -200.0);
    std::fs::remove_dir_all(&dir).unwrap();
}
