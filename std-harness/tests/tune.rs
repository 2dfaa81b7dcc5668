//! `microrl tune` end to end on a built-in plant: a small search writes
//! `tuned.toml`, `tune.json` and `tune.png`; `microrl train --config
//! tuned.toml` reads the winner; an algorithm without a search space, or
//! SAC on a discrete plant, is refused in one line.

mod common;

use common::{last_json, refused_naming, s, succeeds, temp_dir};

#[test]
fn a_small_search_writes_a_config_train_reads() {
    let dir = temp_dir("tune");
    let out = dir.join("search");
    let summary = last_json(&succeeds(&[
        "tune",
        "--env",
        "cartpole",
        "--algo",
        "ppo",
        "--candidates",
        "4",
        "--eta",
        "2",
        "--min-steps",
        "1024",
        "--max-steps",
        "2048",
        "--seeds",
        "2",
        "--out",
        s(&out),
        "--json",
    ]));
    assert_eq!(summary["command"], "tune");
    assert_eq!(summary["budgets"], serde_json::json!([1024, 2048]));
    // 4 candidates, the best 2, then the defaults.
    assert_eq!(summary["trials"].as_array().unwrap().len(), 7);
    assert!(
        summary["tuned_held_out"]
            .as_f64()
            .is_some_and(f64::is_finite)
    );
    assert!(
        summary["default_held_out"]
            .as_f64()
            .is_some_and(f64::is_finite)
    );
    for file in ["tuned.toml", "tune.json", "tune.png"] {
        assert!(out.join(file).is_file(), "{file}");
    }
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("tune.json")).unwrap()).unwrap();
    assert_eq!(written, summary);
    // The winner's values are what `train --config` reads.
    let run = dir.join("run");
    let trained = last_json(&succeeds(&[
        "train",
        "--config",
        s(&out.join("tuned.toml")),
        "--steps",
        "1024",
        "--no-early-stop",
        "--eval-episodes",
        "3",
        "--out",
        s(&run),
        "--json",
    ]));
    let overrides = summary["best_overrides"].as_object().unwrap();
    for (key, value) in overrides {
        if let Some(x) = value.as_f64() {
            let got = trained["config"][key].as_f64().unwrap();
            assert!(
                (got - x).abs() <= 1e-6 * x.abs().max(1.0),
                "{key}: {got} vs {x}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn algorithms_without_a_search_space_are_refused() {
    refused_naming(
        &["tune", "--algo", "trpo", "--candidates", "1"],
        &["microrl tune searches", "trpo"],
    );
    refused_naming(
        &["tune", "--algo", "sac", "--env", "cartpole"],
        &["microrl tune searches", "sac", "cartpole"],
    );
}
