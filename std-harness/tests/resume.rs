//! A run killed at any moment resumes bit-identically.
//!
//! `microrl train --checkpoint-every 1` is killed (`SIGKILL`) at random
//! moments, then continued with `microrl train --resume DIR` (itself killed
//! again at random in some trials) until it completes. Each trial's final
//! policy must be byte-identical to an uninterrupted run's, and its learning
//! curve and summary equal but for wall-clock times. A kill before the first
//! checkpoint leaves nothing to resume: the trial then starts over, as a
//! user would.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const TRIALS: usize = 20;

fn microrl() -> Command {
    Command::new(env!("CARGO_BIN_EXE_microrl"))
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("microrl-resume-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::remove_dir_all(checkpoint(&d));
    d
}

fn checkpoint(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap().to_os_string();
    name.push(".checkpoint");
    out.with_file_name(name)
}

const ARGS: [&str; 7] = [
    "train",
    "--steps",
    "6000",
    "--no-early-stop",
    "--seed",
    "5",
    "--small",
];

/// Runs `cmd` to completion, or kills it after `kill_after`; `true` if it completed.
fn run(mut cmd: Command, kill_after: Option<Duration>) -> bool {
    cmd.stdout(Stdio::null());
    let Some(delay) = kill_after else {
        // A run left alone must succeed: when it does not, its error is
        // what the failure report needs.
        let out = cmd.stderr(Stdio::piped()).output().expect("microrl runs");
        if !out.status.success() {
            eprintln!(
                "a run that was not killed failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        return out.status.success();
    };
    let mut child = cmd.stderr(Stdio::null()).spawn().expect("microrl starts");
    let deadline = std::time::Instant::now() + delay;
    while std::time::Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return status.success();
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
    false
}

/// The summary without its wall-clock time and paths.
fn summary(out: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out.join("summary.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for key in ["wall_s", "policy", "curve_csv", "curve_png"] {
        v.as_object_mut().unwrap().remove(key);
    }
    v
}

/// The curve without its wall-clock column.
fn curve(out: &Path) -> Vec<String> {
    std::fs::read_to_string(out.join("curve.csv"))
        .unwrap()
        .lines()
        .map(|l| l.rsplit_once(',').unwrap().0.to_string())
        .collect()
}

#[test]
fn killed_runs_resume_bit_identically() {
    let reference = dir("reference");
    let mut cmd = microrl();
    cmd.args(ARGS).arg("--out").arg(&reference);
    let started = std::time::Instant::now();
    assert!(run(cmd, None), "the uninterrupted run");
    let full = started.elapsed();
    let policy = std::fs::read(reference.join("policy.mrlp")).unwrap();

    // A deterministic stream of kill times over the run's duration.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |max: Duration| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        max.mul_f64((state % 10_000) as f64 / 10_000.0)
    };
    let (mut kills, mut resumes) = (0, 0);
    for trial in 0..TRIALS {
        let out = dir(&format!("trial{trial}"));
        let mut first = microrl();
        first
            .args(ARGS)
            .args(["--checkpoint-every", "1", "--out"])
            .arg(&out);
        let mut done = run(first, Some(next(full)));
        kills += usize::from(!done);
        // Keep going like an operator: resume if there is a checkpoint,
        // otherwise start over; every other trial is killed once more.
        let mut attempt = 0;
        while !done {
            attempt += 1;
            assert!(attempt < 10, "trial {trial} never completed");
            let mut cmd = microrl();
            if checkpoint(&out).join("state.mrlc").is_file() {
                cmd.args(["train", "--resume"]).arg(&out);
                resumes += 1;
            } else {
                cmd.args(ARGS)
                    .args(["--checkpoint-every", "1", "--out"])
                    .arg(&out);
            }
            let kill = (trial % 2 == 1 && attempt == 1).then(|| next(full));
            done = run(cmd, kill);
            kills += usize::from(!done);
        }
        assert_eq!(
            std::fs::read(out.join("policy.mrlp")).unwrap(),
            policy,
            "trial {trial}: the resumed run's policy differs"
        );
        assert_eq!(summary(&out), summary(&reference), "trial {trial}");
        assert_eq!(curve(&out), curve(&reference), "trial {trial}");
        assert!(
            !checkpoint(&out).exists(),
            "a completed run keeps no checkpoint"
        );
        let _ = std::fs::remove_dir_all(&out);
    }
    println!("{TRIALS} trials: {kills} kills, {resumes} resumes, all bit-identical");
    assert!(kills >= TRIALS, "too few kills landed: {kills}");
    assert!(resumes >= TRIALS / 2, "too few resumes: {resumes}");
    let _ = std::fs::remove_dir_all(&reference);
}

#[test]
fn resume_without_a_checkpoint_is_a_clear_error() {
    let out = dir("none");
    let output = microrl()
        .args(["train", "--resume"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no checkpoint"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

/// A `--final-eval-only` run resumes as one: killed once its first
/// checkpoint is on disk, the resumed run still evaluates only at the end
/// and ends as the uninterrupted run.
#[test]
fn a_final_eval_only_run_resumes_without_evaluating() {
    let args = [&ARGS[..], &["--final-eval-only"]].concat();
    let reference = dir("final-only-reference");
    let mut cmd = microrl();
    cmd.args(&args).arg("--out").arg(&reference);
    assert!(run(cmd, None), "the uninterrupted run");
    assert_eq!(summary(&reference)["run"]["quick_episodes"], 0);

    let out = dir("final-only");
    let mut resumed = false;
    for _ in 0..5 {
        let mut child = microrl()
            .args(&args)
            .args(["--checkpoint-every", "1", "--out"])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill it as soon as a checkpoint exists (if it finishes first,
        // try again).
        let state = checkpoint(&out).join("state.mrlc");
        while child.try_wait().unwrap().is_none() && !state.is_file() {
            std::thread::sleep(Duration::from_micros(200));
        }
        let _ = child.kill();
        let _ = child.wait();
        if state.is_file() {
            let mut cmd = microrl();
            cmd.args(["train", "--resume"]).arg(&out);
            assert!(run(cmd, None), "the resumed run");
            resumed = true;
            break;
        }
        let _ = std::fs::remove_dir_all(&out);
    }
    assert!(resumed, "no checkpoint to resume from in 5 tries");
    assert_eq!(summary(&out), summary(&reference));
    assert_eq!(curve(&out), curve(&reference));
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&reference);
}

/// The learn-while-controlling schedule (`--lag 1`) killed mid-run resumes
/// bit for bit: the checkpoint holds the pending rollout, the published
/// policy and the control loop's RNG stream.
#[test]
fn a_lagged_run_resumes_bit_identically() {
    const LAGGED: &[&str] = &[
        "train",
        "--lag",
        "1",
        "--seed",
        "2",
        "--steps",
        "12000",
        "--no-early-stop",
    ];
    let reference = dir("lagged-reference");
    let mut cmd = microrl();
    cmd.args(LAGGED).arg("--out").arg(&reference);
    let started = std::time::Instant::now();
    assert!(run(cmd, None), "the uninterrupted run");
    let full = started.elapsed();
    assert_eq!(summary(&reference)["lag"], 1);
    let out = dir("lagged-killed");
    let (mut kills, mut resumes) = (0, 0);
    for fraction in [0.3, 0.6] {
        let _ = std::fs::remove_dir_all(&out);
        let mut done = false;
        let mut attempt = 0;
        while !done {
            attempt += 1;
            assert!(attempt < 10, "the lagged run never completed");
            let mut cmd = microrl();
            if checkpoint(&out).join("state.mrlc").is_file() {
                cmd.args(["train", "--resume"]).arg(&out);
                resumes += 1;
            } else {
                cmd.args(LAGGED)
                    .args(["--checkpoint-every", "1", "--out"])
                    .arg(&out);
            }
            done = run(cmd, (attempt == 1).then(|| full.mul_f64(fraction)));
            kills += usize::from(!done);
        }
        assert_eq!(
            std::fs::read(out.join("policy.mrlp")).unwrap(),
            std::fs::read(reference.join("policy.mrlp")).unwrap(),
            "killed at {fraction} of the run"
        );
        assert_eq!(summary(&out), summary(&reference));
        assert_eq!(curve(&out), curve(&reference));
    }
    println!("lagged: {kills} kills, {resumes} resumes, bit-identical");
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&reference);
}

/// The kept policy (`--keep-best`, on by default) is part of the
/// checkpoint: a run killed after it kept a policy that is no longer the
/// current one resumes to the uninterrupted run's result (its `best.mrlp`
/// restored, not re-chosen among the later policies), and a `best.mrlp`
/// that is not the one its `progress.json` was written with is refused.
#[test]
fn a_kept_policy_survives_a_kill_and_a_resume() {
    let reference = dir("kept-reference");
    let mut cmd = microrl();
    cmd.args(ARGS).arg("--out").arg(&reference);
    assert!(run(cmd, None), "the uninterrupted run");
    let expected = summary(&reference);
    let kept_step = expected["kept_step"].as_u64().unwrap();
    assert!(
        kept_step < expected["steps_run"].as_u64().unwrap(),
        "the reference must keep an earlier policy than its last: {expected}"
    );
    let out = dir("kept");
    let progress = checkpoint(&out).join("progress.json");
    // A checkpoint written after the kept policy, before the run's end.
    let past_the_kept = || {
        let Ok(text) = std::fs::read_to_string(&progress) else {
            return false;
        };
        let Ok(p) = serde_json::from_str::<serde_json::Value>(&text) else {
            return false;
        };
        p["best"]["score"].is_u64() && p["best"]["step"].as_u64() == Some(kept_step)
    };
    let mut landed = false;
    for _ in 0..10 {
        let _ = std::fs::remove_dir_all(&out);
        let _ = std::fs::remove_dir_all(checkpoint(&out));
        let mut child = microrl()
            .args(ARGS)
            .args(["--checkpoint-every", "1", "--out"])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        while child.try_wait().unwrap().is_none() && !past_the_kept() {
            std::thread::sleep(Duration::from_micros(100));
        }
        let _ = child.kill();
        let _ = child.wait();
        if past_the_kept() {
            landed = true;
            break;
        }
    }
    assert!(landed, "no checkpoint past the kept policy in 10 tries");
    // Another run's kept policy in its place is refused, naming the file.
    let best = checkpoint(&out).join("best.mrlp");
    let own = std::fs::read(&best).unwrap();
    let mut other = own.clone();
    let n = other.len();
    other[n / 2] ^= 1;
    std::fs::write(&best, &other).unwrap();
    let refused = microrl()
        .args(["train", "--resume"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("best.mrlp"), "{stderr}");
    std::fs::write(&best, own).unwrap();
    let mut cmd = microrl();
    cmd.args(["train", "--resume"]).arg(&out);
    assert!(run(cmd, None), "the resumed run");
    assert_eq!(summary(&out), expected);
    assert_eq!(
        std::fs::read(out.join("policy.mrlp")).unwrap(),
        std::fs::read(reference.join("policy.mrlp")).unwrap()
    );
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&reference);
}
