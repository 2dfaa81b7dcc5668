//! The suite's rows, verdict and baselines.

use super::*;

#[test]
fn the_baselines_score_what_docs_plants_md_commits() {
    // docs/plants.md, "Baselines": held-out mean returns of the committed
    // gains over 200 episodes from seed 2000.
    let expected = [
        (EnvName::Acrobot, -87.505),
        (EnvName::MountaincarContinuous, 97.977),
        (EnvName::CartpoleSwingup, 446.650),
        (EnvName::Servo, -9.372),
        (EnvName::Quadrotor2d, 442.770),
    ];
    for (env, mean) in expected {
        let got = baseline_held_out(env).unwrap().unwrap();
        assert!((got - mean).abs() < 5e-3, "{}: {got} vs {mean}", env.name());
    }
    assert_eq!(baseline_held_out(EnvName::Cartpole).unwrap(), None);
}

#[test]
fn every_suite_plant_has_a_default_algorithm_that_applies() {
    for env in PLANTS {
        let algos = default_algos(env);
        assert!(!algos.is_empty());
        assert!(algos.iter().all(|&a| applies(env, a)), "{}", env.name());
    }
    assert!(!applies(EnvName::Acrobot, Algo::Sac));
    assert!(applies(EnvName::Servo, Algo::Td3));
    assert!(!applies(EnvName::Servo, Algo::Trpo));
}

fn args(envs: Vec<EnvName>, algos: Vec<Algo>, steps: u64) -> SuiteArgs {
    SuiteArgs {
        envs,
        algos,
        seeds: 2,
        steps: Some(steps),
        overrides: Overrides::default(),
        keep_best: 0,
        threads: 2,
        progress: false,
    }
}

#[test]
fn a_short_suite_fails_with_one_row_per_plant_and_algorithm() {
    // 2 000 steps learn nothing: every row is below its baseline, the
    // verdict fails, and the JSON carries every field the acceptance names.
    let (report, pass) = run(&args(
        vec![EnvName::Servo, EnvName::Acrobot],
        vec![Algo::Ppo],
        2_048,
    ))
    .unwrap();
    assert!(!pass);
    let rows = report.json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for (row, plant) in rows.iter().zip(["servo", "acrobot"]) {
        assert_eq!(row["plant"], plant);
        assert_eq!(row["algo"], "ppo");
        assert_eq!(row["seeds"], 2);
        assert_eq!(row["steps"], 2_048);
        assert_eq!(row["per_seed"].as_array().unwrap().len(), 2);
        assert!(row["cpu_s"].as_f64().unwrap() > 0.0);
        assert_eq!(row["beats"], false);
        let per_seed: Vec<f64> = row["per_seed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let worst = per_seed.iter().copied().fold(f64::INFINITY, f64::min);
        assert_eq!(row["learned"].as_f64().unwrap(), worst);
        assert!(row["learned"].as_f64().unwrap() < row["baseline"].as_f64().unwrap());
    }
    assert!(report.lines.last().unwrap().contains("0/2 rows beat"));
}

#[test]
fn a_row_is_the_train_command_scored_like_eval_on_the_held_out_stream() {
    // A row's seed-0 score is `microrl eval --episodes 200 --seed 2000` of
    // the policy `microrl train --no-early-stop` writes, bit for bit.
    let (env, algo, steps) = (EnvName::MountaincarContinuous, Algo::Sac, 600);
    // Both keep the best evaluated policy, by the same rule.
    let (report, _) = run(&SuiteArgs {
        seeds: 1,
        keep_best: KEEP_BEST_EPISODES,
        ..args(vec![env], vec![algo], steps)
    })
    .unwrap();
    let dir = std::env::temp_dir().join(format!("microrl-suite-row-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    crate::train::train(&TrainOptions {
        out: Some(dir.clone()),
        ..row_options(env, algo, 0, steps)
    })
    .unwrap();
    let blob = crate::policy_file::read(&dir.join(crate::train::POLICY_FILE))
        .unwrap()
        .blob;
    let _ = std::fs::remove_dir_all(&dir);
    let eval = crate::eval::eval(
        Some(env),
        &blob,
        HELD_OUT_EPISODES,
        HELD_OUT_SEED,
        &toml::Table::new(),
    )
    .unwrap();
    // JSON writes an f32 as its shortest decimal, which reads back as that
    // f32 exactly (not as the f32's exact f64 value).
    let learned = report.json["rows"][0]["learned"].as_f64().unwrap() as f32;
    assert_eq!(learned.to_bits(), eval.mean.to_bits());
}

#[test]
fn refuses_a_plant_without_baseline_and_an_algorithm_that_does_not_apply() {
    let e = run(&args(vec![EnvName::Cartpole], vec![], 1_000)).unwrap_err();
    assert!(e.to_string().contains("no classical baseline"), "{e}");
    let e = run(&args(vec![EnvName::Acrobot], vec![Algo::Sac], 1_000)).unwrap_err();
    assert!(e.to_string().contains("not sac on acrobot"), "{e}");
}

/// `microrl suite --algo sac` (no `--env`) trains the continuous plants;
/// a plant named with several algorithms gets the rows that apply to it.
#[test]
fn an_algorithm_for_continuous_actions_gets_the_continuous_plants() {
    use EnvName::{Acrobot, CartpoleSwingup, MountaincarContinuous, Quadrotor2d, Servo};
    let continuous = [MountaincarContinuous, CartpoleSwingup, Servo, Quadrotor2d];
    assert_eq!(plants_for(&[Algo::Td3]), continuous);
    assert_eq!(plants_for(&[Algo::Sac, Algo::Td3]), continuous);
    assert_eq!(plants_for(&[]), PLANTS);
    assert_eq!(plants_for(&[Algo::Sac, Algo::Ppo]), PLANTS);
    assert_eq!(
        row_algos(Acrobot, &[Algo::Ppo, Algo::Sac]).unwrap(),
        [Algo::Ppo]
    );
    assert_eq!(
        row_algos(Servo, &[Algo::Ppo, Algo::Sac]).unwrap(),
        [Algo::Ppo, Algo::Sac]
    );
    assert_eq!(row_algos(Servo, &[]).unwrap(), default_algos(Servo));
    let e = row_algos(Acrobot, &[Algo::Sac, Algo::Td3]).unwrap_err();
    assert!(e.to_string().contains("not sac or td3 on acrobot"), "{e}");
}
