//! Units do not matter: a preset's held-out result on a family plant is the
//! same, within 5 %, when the plant's reward is multiplied by 1e-4 or 1e4
//! or its observation units by 1e-3 or 1e3 (`--plant reward_scale=K`,
//! `obs_scale=K`).
//!
//! What makes it so (docs/plants.md, "Invariance"): observation
//! normalisation (Gymnasium's running statistics) for the units, and for
//! the reward the scale-free return statistics of `PpoConfig::PLANT`
//! (`scale_free_returns`: SB3's `VecNormalize` assumes rewards of order one
//! and left a plant at reward × 1e-4 36 % worse). The baselines read the
//! observation divided by `obs_unit` and their cost is linear in
//! `cost_scale`, so the ratio to the baseline moves exactly as the learned
//! return divided by the reward's factor, which is what is compared.
//!
//! The plants are the dev plants whose three bench seeds agree within 2 %
//! (docs/plants.md, the dev table): the changed units perturb the run's
//! last bits, after which it is a run from the same seed on a slightly
//! different trajectory, so a plant whose seeds spread by 20 % would test
//! the spread, not the units. Each run is a full bench run (300 000 steps).

use std::process::Command;

/// Dev plants (generator seeds) whose bench seeds agree within 2 %.
const PLANTS: [u64; 3] = [10_005, 10_006, 10_008];
/// `(key, factor)` of each changed-units variant.
const VARIANTS: [(&str, f64); 4] = [
    ("reward_scale", 1e-4),
    ("reward_scale", 1e4),
    ("obs_scale", 1e-3),
    ("obs_scale", 1e3),
];
/// The bound on the relative change of the held-out cost.
const TOLERANCE: f64 = 0.05;

/// Trains `algo`'s plant preset on `plant` with `key = factor` and returns
/// the held-out mean return divided by the reward's factor.
fn held_out(algo: &str, plant: u64, key: &str, factor: f64) -> std::thread::JoinHandle<f64> {
    let (algo, key) = (algo.to_owned(), key.to_owned());
    std::thread::spawn(move || {
        let out = std::env::temp_dir().join(format!(
            "microrl-invariance-{}-{algo}-{plant}-{key}-{factor}",
            std::process::id()
        ));
        let output = Command::new(env!("CARGO_BIN_EXE_microrl"))
            .args(["train", "--env", "family", "--algo", &algo, "--seed", "0"])
            .args(["--steps", "300000", "--json", "--out"])
            .arg(&out)
            .arg("--plant")
            .arg(format!("seed={plant},{key}={factor}"))
            .output()
            .expect("run microrl");
        let _ = std::fs::remove_dir_all(&out);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{plant} {key}={factor}: {stderr}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        let summary: serde_json::Value =
            serde_json::from_str(stdout.lines().last().expect("a JSON line")).expect("JSON");
        let eval = summary["eval_mean"].as_f64().expect("eval_mean");
        if key == "reward_scale" {
            eval / factor
        } else {
            eval
        }
    })
}

/// Every variant of every plant against the plant in its own units.
fn assert_invariant(algo: &str) {
    for plant in PLANTS {
        let base = held_out(algo, plant, "reward_scale", 1.0);
        let variants: Vec<_> = VARIANTS
            .iter()
            .map(|&(key, factor)| (key, factor, held_out(algo, plant, key, factor)))
            .collect();
        let base = base.join().unwrap();
        for (key, factor, run) in variants {
            let changed = run.join().unwrap();
            let change = changed / base - 1.0;
            assert!(
                change.abs() < TOLERANCE,
                "{algo} on plant {plant} with {key} = {factor}: held-out cost {changed} against {base} \
                 in the plant's own units ({:+.1} %)",
                100.0 * change
            );
        }
    }
}

#[test]
fn ppo_plant_preset_does_not_see_the_units() {
    assert_invariant("ppo");
}
