//! Acrobot-v1 and MountainCarContinuous-v0 through the CLI: each trains for
//! a short budget with two algorithms, and the policy file it writes is
//! evaluated, acted with, inspected and exported; `--plant` takes their
//! parameters and refuses an out-of-range one naming the field. Short
//! budgets: these check the plumbing, not learning (the defaults for these
//! plants are the untuned ones every plant of the action type gets).

mod common;

use common::{last_json, refused_naming, s, succeeds, temp_dir};

/// Trains `algo` on `env` for `steps` (five-episode evaluations) into
/// `dir`; returns the summary.
fn train(env: &str, algo: &str, steps: &str, dir: &std::path::Path) -> serde_json::Value {
    last_json(&succeeds(&[
        "train",
        "--env",
        env,
        "--algo",
        algo,
        "--steps",
        steps,
        "--seed",
        "1",
        "--eval-episodes",
        "5",
        "--no-early-stop",
        "--out",
        s(dir),
        "--json",
    ]))
}

/// `train` with `args` is refused before it trains, in one line naming
/// every one of `needles` (its output directory stays unwritten).
fn refused_training(dir: &std::path::Path, args: &[&str], needles: &[&str]) {
    let out = dir.join("refused");
    let mut all = vec!["train", "--steps", "100", "--out", s(&out)];
    all.extend_from_slice(args);
    refused_naming(&all, needles);
    assert!(!out.exists(), "{args:?} wrote {}", out.display());
}

/// The run in `dir` is `env`'s, its policy of architecture `arch`: `eval`
/// plays it, `act` commands the plant, `export` writes it for the firmware.
fn check_policy(env: &str, arch: &str, dir: &std::path::Path, obs: &str) -> serde_json::Value {
    let policy = dir.join("policy.mrlp");
    let p = s(&policy);
    let inspected = last_json(&succeeds(&["inspect", p, "--json"]));
    assert_eq!(inspected["arch"], arch);
    let eval = last_json(&succeeds(&["eval", p, "--episodes", "3", "--json"]));
    assert_eq!(eval["env"], env);
    assert_eq!(eval["arch"], arch);
    assert!(eval["mean"].as_f64().is_some_and(f64::is_finite), "{eval}");
    let act = last_json(&succeeds(&["act", p, "--obs", obs, "--json"]));
    let rs = dir.join("policy.rs");
    let export = last_json(&succeeds(&[
        "export",
        p,
        "--env",
        env,
        "--out",
        s(&rs),
        "--json",
    ]));
    assert_eq!(export["arch"], arch);
    let src = std::fs::read_to_string(&rs).unwrap();
    assert!(src.contains(&format!("--env {env}")), "{src}");
    serde_json::json!({ "eval": eval, "act": act })
}

#[test]
fn acrobot_trains_with_ppo_and_a2c_and_its_policy_evaluates_acts_and_exports() {
    let dir = temp_dir("acrobot");
    for algo in ["ppo", "a2c"] {
        let run = dir.join(algo);
        let summary = train("acrobot", algo, "2048", &run);
        assert_eq!(summary["env"], "acrobot");
        assert_eq!(summary["algo"], algo);
        // Gymnasium's reward threshold for Acrobot-v1.
        assert_eq!(summary["threshold"], -100.0);
        assert!(summary["steps_run"].as_u64().unwrap() >= 2048, "{summary}");
        let checked = check_policy("acrobot", "acrobot", &run, "1,0,1,0,0.1,-0.2");
        // Three discrete torques; no actuator effort for a discrete policy.
        assert!(checked["act"]["action"]["discrete"].as_u64().unwrap() < 3);
        assert_eq!(
            checked["act"]["action"]["probs"].as_array().unwrap().len(),
            3
        );
        assert!(checked["eval"]["mean_effort"].is_null());
        // Every Acrobot episode lasts at most 500 steps of reward −1.
        let mean = checked["eval"]["mean"].as_f64().unwrap();
        assert!((-500.0..=0.0).contains(&mean), "{mean}");
    }
    // SAC and TD3 need a continuous plant; the error names the ones there are.
    refused_training(
        &dir,
        &["--env", "acrobot", "--algo", "sac"],
        &["continuous action space", "mountaincar-continuous"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn mountaincar_continuous_trains_with_ppo_and_sac_and_its_policy_evaluates_acts_and_exports() {
    let dir = temp_dir("mountaincar");
    // One PPO rollout; SAC's 100 warm-up steps and 300 updates, written as
    // the deterministic tanh-squashed policy.
    for (algo, steps) in [("ppo", "2048"), ("sac", "400")] {
        let arch = match algo {
            "sac" => "mountaincar-continuous-squashed",
            _ => "mountaincar-continuous",
        };
        let run = dir.join(algo);
        let summary = train("mountaincar-continuous", algo, steps, &run);
        assert_eq!(summary["env"], "mountaincar-continuous");
        // Gymnasium's reward threshold for MountainCarContinuous-v0.
        assert_eq!(summary["threshold"], 90.0);
        let checked = check_policy("mountaincar-continuous", arch, &run, "-0.5,0.01");
        // One force in Gymnasium's bounds [−1, 1].
        let action = &checked["act"]["action"];
        assert_eq!(action["bounds"], serde_json::json!([[-1.0, 1.0]]));
        let force = action["continuous"][0].as_f64().unwrap();
        assert!((-1.0..=1.0).contains(&force), "{force}");
        assert!(checked["eval"]["mean_effort"].as_f64().unwrap() >= 0.0);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn plant_parameters_of_the_new_plants_are_taken_and_checked() {
    let dir = temp_dir("plant");
    // A changed plant trains, is recorded, and evaluates.
    let run = dir.join("heavy");
    let summary = last_json(&succeeds(&[
        "train",
        "--env",
        "acrobot",
        "--algo",
        "ppo",
        "--steps",
        "2048",
        "--eval-episodes",
        "3",
        "--plant",
        "link_mass_2=2.0,torque=2.0",
        "--out",
        s(&run),
        "--json",
    ]));
    assert_eq!(summary["plant"]["link_mass_2"], 2.0);
    let policy = run.join("policy.mrlp");
    let p = s(&policy);
    succeeds(&["eval", p, "--episodes", "2", "--plant", "dt=0.1"]);
    refused_naming(
        &["eval", p, "--plant", "link_mass_1=-1"],
        &["invalid --plant", "link_mass_1"],
    );
    // Out of range: refused before training, naming the field and its
    // range; another plant's key is refused listing this plant's.
    for (env, plant, needles) in [
        ("acrobot", "dt=5", &["invalid --plant", "dt", "5"][..]),
        (
            "mountaincar-continuous",
            "power=0.5",
            &["--plant", "power", "0.1"],
        ),
        (
            "mountaincar-continuous",
            "masspole=0.2",
            &["masspole", "max_speed"],
        ),
    ] {
        refused_training(&dir, &["--env", env, "--plant", plant], needles);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn init_writes_the_new_architectures_and_info_lists_them() {
    let dir = temp_dir("init");
    for (arch, obs) in [
        ("acrobot", "1,0,1,0,0,0"),
        ("acrobot-relu", "1,0,1,0,0,0"),
        ("mountaincar-continuous", "-0.5,0"),
        ("mountaincar-continuous-relu", "-0.5,0"),
        ("mountaincar-continuous-squashed", "-0.5,0"),
    ] {
        let path = dir.join(format!("{arch}.mrlp"));
        succeeds(&["init", "--arch", arch, "--out", s(&path)]);
        let inspected = last_json(&succeeds(&["inspect", s(&path), "--json"]));
        assert_eq!(inspected["arch"], arch);
        succeeds(&["act", s(&path), "--obs", obs]);
    }
    let info = last_json(&succeeds(&["info", "--json"]));
    let names: Vec<&str> = info["architectures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["arch"].as_str().unwrap())
        .collect();
    for arch in ["acrobot", "mountaincar-continuous-squashed"] {
        assert!(names.contains(&arch), "{names:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The plants of the suite without a Gymnasium original — cart-pole
/// swing-up, DC-motor servo, planar quadrotor (two thrusts) — train with
/// SAC and PPO, and their policies evaluate, act (in the actuator bounds)
/// and export; `--plant` takes their parameters and refuses an
/// out-of-range one naming the field.
#[test]
fn swingup_servo_and_quadrotor_train_with_sac_and_ppo_and_their_policies_act() {
    let dir = temp_dir("suite-plants");
    let plants = [
        (
            "cartpole-swingup",
            "0,0,-1,0,0",
            1,
            "force_mag=20",
            "dead_zone=0.1",
        ),
        ("servo", "0.5,0,0", 1, "dead_zone=0.1", "force_mag=20"),
        (
            "quadrotor-2d",
            "0.1,0,0.1,0,0,0",
            2,
            "max_thrust=0.4",
            "dead_zone=0.1",
        ),
    ];
    for (env, obs, actions, good, foreign) in plants {
        for (algo, steps) in [("sac", "400"), ("ppo", "2048")] {
            let arch = match algo {
                "sac" => format!("{env}-squashed"),
                _ => env.to_string(),
            };
            let run = dir.join(format!("{env}-{algo}"));
            let summary = train(env, algo, steps, &run);
            assert_eq!(summary["env"], env);
            let checked = check_policy(env, &arch, &run, obs);
            let action = &checked["act"]["action"]["continuous"];
            let action = action.as_array().unwrap();
            assert_eq!(action.len(), actions, "{checked}");
            assert!(
                action
                    .iter()
                    .all(|a| (-1.0..=1.0).contains(&a.as_f64().unwrap())),
                "{checked}"
            );
        }
        let policy = dir.join(format!("{env}-ppo")).join("policy.mrlp");
        succeeds(&["eval", s(&policy), "--episodes", "2", "--plant", good]);
        let key = foreign.split('=').next().unwrap();
        refused_naming(&["eval", s(&policy), "--plant", foreign], &["--plant", key]);
    }
    refused_training(
        &dir,
        &["--env", "servo", "--plant", "dead_zone=0.9"],
        &["invalid --plant", "dead_zone", "0.5"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn suite_prints_its_rows_as_json_and_exits_non_zero_when_a_row_is_below_its_baseline() {
    // 1 024 steps learn nothing: both rows are below, the exit status is a
    // failure, and the last line is still the JSON object with every row.
    let (ok, stdout, _) = common::microrl(&[
        "suite", "--env", "servo", "--env", "acrobot", "--algo", "ppo", "--seeds", "1", "--steps",
        "1024", "--json",
    ]);
    assert!(!ok, "{stdout}");
    let json = last_json(&stdout);
    assert_eq!(json["command"], "suite");
    assert_eq!(json["pass"], false);
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        for key in [
            "plant", "algo", "seeds", "baseline", "learned", "steps", "cpu_s",
        ] {
            assert!(row.get(key).is_some(), "{key} missing in {row}");
        }
        assert!(row["learned"].as_f64().unwrap() < row["baseline"].as_f64().unwrap());
    }
    // A plant without a baseline is refused in one line naming it.
    refused_naming(
        &["suite", "--env", "cartpole"],
        &["cartpole", "no classical baseline"],
    );
}
