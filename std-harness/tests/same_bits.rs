//! Same bits: the trained policy of every algorithm and task keeps its CRC.
//!
//! Each row is a `microrl train … --json` run and the `policy_crc32` it
//! printed when the row was recorded (x86-64; the bits do not depend on the
//! SIMD width — `tests/tests/simd_identity.rs` — nor on the machine). A
//! change to the code that moves any of these bits fails here: a refactor
//! must keep them, and a deliberate change to the maths must say so by
//! updating the row in the same commit.

use std::path::Path;
use std::process::Command;

/// `(name, train arguments separated by spaces, policy_crc32)`.
const ROWS: &[(&str, &str, &str)] = &[
    ("default-s0", "--seed 0", "940916ac"),
    ("default-s3", "--seed 3", "6f501cdc"),
    ("a2c-s1", "--algo a2c --seed 1", "f5bdec15"),
    ("ac-s1", "--algo ac --seed 1", "46977c55"),
    ("trpo-s1", "--algo trpo --seed 1", "80f3a150"),
    ("grpo-s1", "--algo grpo --seed 1", "5e6105f1"),
    ("gspo-s1", "--algo gspo --seed 1", "c0b1fa94"),
    ("ppo-penalty-s1", "--algo ppo-penalty --seed 1", "490aa5f2"),
    ("reinforce-s1", "--algo reinforce --seed 1", "55198eea"),
    ("pendulum-s0", "--env pendulum --seed 0", "24bb500b"),
    (
        "cartpole-continuous-s1",
        "--env cartpole-continuous --seed 1",
        "6c6358e6",
    ),
    ("small-s0", "--small --seed 0", "4c7d58ef"),
    (
        "multi-critic-s0",
        "--env cartpole-continuous --reward-weights 0.9,0.1 --value-weights 0.5,0.5 --seed 0",
        "b1c18add",
    ),
    ("plant-s2", "--plant masspole=0.3 --seed 2", "90d263bf"),
];

fn train_crc(args: &[&str], out: &Path) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_microrl"))
        .arg("train")
        .args(args)
        .arg("--json")
        .arg("--out")
        .arg(out)
        .output()
        .expect("run microrl");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "train {args:?}: {stderr}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(stdout.lines().last().expect("a JSON line")).expect("JSON");
    summary["policy_crc32"]
        .as_str()
        .expect("policy_crc32")
        .to_string()
}

#[test]
fn every_algorithm_and_task_trains_the_recorded_bits() {
    let dir = std::env::temp_dir().join(format!("microrl-same-bits-{}", std::process::id()));
    let mut differ = Vec::new();
    for (name, args, crc) in ROWS {
        let args: Vec<&str> = args.split_whitespace().collect();
        let got = train_crc(&args, &dir.join(name));
        if got != *crc {
            differ.push(format!("{name}: {got} (recorded {crc})"));
        }
    }
    // KL-anchored fine-tuning from the small policy above, on a changed plant.
    let reference = dir.join("small-s0").join("policy.mrlp");
    let reference = reference.to_str().unwrap();
    let args = [
        "--kl-ref",
        reference,
        "--plant",
        "masspole=0.2",
        "--small",
        "--seed",
        "0",
        "--kl-beta",
        "0.1",
    ];
    let got = train_crc(&args, &dir.join("kl-ref-s0"));
    if got != "f928df84" {
        differ.push(format!("kl-ref-s0: {got} (recorded f928df84)"));
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        differ.is_empty(),
        "policies changed:\n{}",
        differ.join("\n")
    );
}
