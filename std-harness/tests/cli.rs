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
    assert_eq!(json["architectures"][0]["inference_bytes"], 18440);
}

#[test]
fn init_inspect_act() {
    let dir = std::env::temp_dir().join(format!("microrl-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cartpole.mrlp");
    let path_str = path.to_str().unwrap();
    let (ok, stdout, stderr) = microrl(&["init", "--seed", "3", "--out", path_str, "--json"]);
    assert!(ok, "{stderr}");
    assert_eq!(last_json(&stdout)["bytes"], 18532);
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
