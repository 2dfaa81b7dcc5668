//! A policy file records the task it was trained on: `eval --env E` and
//! `export --env E` (both formats) refuse a policy recorded for another
//! task, naming both, unless `--any-env`; a file without the record (older,
//! or exported for a firmware) is still accepted, with one `warning:`.

mod common;

use std::fs;

use common::{last_json, microrl, refused_naming, s, succeeds, temp_dir};

#[test]
fn a_policy_for_another_task_is_refused_unless_any_env() {
    let dir = temp_dir("policy-task");
    let run = dir.join("run");
    let stdout = succeeds(&[
        "train",
        "--env",
        "pendulum",
        "--steps",
        "2048",
        "--json",
        "--out",
        s(&run),
    ]);
    let crc = last_json(&stdout)["policy_crc32"].clone();
    let policy = run.join("policy.mrlp");
    let p = s(&policy);
    // Refused by eval and by both exports, naming both tasks; nothing written.
    let out = dir.join("out.mrlp");
    let st = dir.join("out.safetensors");
    for args in [
        vec!["eval", p, "--env", "servo", "--episodes", "1"],
        vec!["export", p, "--env", "servo", "--out", s(&out)],
        vec![
            "export",
            p,
            "--env",
            "servo",
            "--format",
            "safetensors",
            "--out",
            s(&st),
        ],
    ] {
        refused_naming(&args, &["pendulum", "servo", "--any-env"]);
    }
    assert!(!out.exists() && !st.exists());
    // Nor does it anchor a fine-tune of another task.
    refused_naming(
        &["train", "--env", "servo", "--kl-ref", p, "--steps", "100"],
        &["--kl-ref", "pendulum", "servo"],
    );

    let inspected = last_json(&succeeds(&["inspect", p, "--json"]));
    assert_eq!(inspected["task"]["env"], "pendulum", "{inspected}");
    // The summary's CRC is still the parameters' (the blob's).
    assert_eq!(inspected["crc32"], crc);

    // --any-env runs it all the same, and says so.
    for args in [
        vec!["eval", p, "--env", "servo", "--episodes", "1", "--any-env"],
        vec!["export", p, "--env", "servo", "--out", s(&out), "--any-env"],
    ] {
        let (ok, _, err) = microrl(&args);
        assert!(ok, "{args:?}: {err}");
        assert!(
            err.contains("pendulum") && err.contains("--any-env"),
            "{err}"
        );
    }
    // Its own task needs no --env and no flag.
    let (ok, stdout, err) = microrl(&["eval", p, "--episodes", "1", "--json"]);
    assert!(ok, "{err}");
    assert_eq!(last_json(&stdout)["env"], "pendulum");
    assert!(err.is_empty(), "{err}");

    // `export` writes the firmware's blob: the file without its record, the
    // format before the record existed. Such a file is still accepted, by
    // every command, with one warning where a task is checked.
    let blob = fs::read(&out).unwrap();
    let file = fs::read(&policy).unwrap();
    assert!(file.len() > blob.len() && file.starts_with(&blob));
    let old = s(&out);
    let (ok, _, err) = microrl(&["eval", old, "--env", "servo", "--episodes", "1"]);
    assert!(ok, "{err}");
    assert!(
        err.starts_with("warning: ") && err.trim_end().lines().count() == 1,
        "{err}"
    );
    let (ok, stdout, err) = microrl(&["eval", old, "--episodes", "1", "--json"]);
    assert!(ok, "{err}");
    assert_eq!(last_json(&stdout)["env"], "pendulum");
    let inspected = last_json(&succeeds(&["inspect", old, "--json"]));
    assert!(inspected["task"].is_null(), "{inspected}");
    assert_eq!(inspected["crc32"], crc);
    succeeds(&["act", old, "--obs", "1,0,0"]);
    succeeds(&["act", p, "--obs", "1,0,0"]);

    // A damaged record is refused naming it.
    let mut bad = file.clone();
    *bad.last_mut().unwrap() ^= 1;
    let damaged = dir.join("damaged.mrlp");
    fs::write(&damaged, &bad).unwrap();
    refused_naming(&["eval", s(&damaged), "--episodes", "1"], &["task record"]);
    let _ = fs::remove_dir_all(&dir);
}
