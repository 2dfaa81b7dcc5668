use super::*;

/// The bench of the dev split's first two plants, one seed, short runs.
fn quick(out: Option<PathBuf>) -> Report {
    quick_with(out, None)
}

fn quick_with(out: Option<PathBuf>, reference_from: Option<PathBuf>) -> Report {
    run(&args(out, reference_from)).unwrap()
}

fn args(out: Option<PathBuf>, reference_from: Option<PathBuf>) -> BenchArgs {
    BenchArgs {
        split: Split::Dev,
        algos: vec![Algo::Ppo],
        seeds: 1,
        steps: Some(4_096),
        plants: Some(2),
        threads: 0,
        progress: false,
        out,
        overrides: Overrides::default(),
        reference_from,
        reward_scale: 1.0,
        obs_scale: 1.0,
        keep_best: microrl::train::KEEP_BEST_EPISODES,
    }
}

#[test]
fn the_json_has_the_documented_schema() {
    let dir = std::env::temp_dir().join(format!("microrl-bench-{}", std::process::id()));
    let out = dir.join("bench");
    let report = quick(Some(out.clone()));
    let j = &report.json;
    assert_eq!(j["command"], "bench");
    assert_eq!(j["split"], "dev");
    assert_eq!(j["plants"], 2);
    let rows = j["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for (row, seed) in rows.iter().zip([10_000u64, 10_001]) {
        assert_eq!(row["plant"], seed);
        assert_eq!(row["algo"], "ppo");
        assert_eq!(row["class"], generate(seed).class.name());
        for key in [
            "baseline",
            "learned_worst",
            "sb3_defaults_worst",
            "ratio",
            "sb3_defaults_ratio",
            "cpu_s",
        ] {
            assert!(row[key].as_f64().is_some(), "{key}: {row}");
        }
        assert!(row["baseline"].as_f64().unwrap() < 0.0);
        assert!(row["baseline_law"] == "pid" || row["baseline_law"] == "lqi");
        // The ratio is the worst seed's cost over the baseline's.
        let ratio = row["learned_worst"].as_f64().unwrap() / row["baseline"].as_f64().unwrap();
        assert!((row["ratio"].as_f64().unwrap() - ratio).abs() < 1e-6 * ratio);
    }
    let s = &j["summary"]["ppo"];
    for key in [
        "beats_baseline",
        "beats_sb3_defaults",
        "median_ratio",
        "plants",
    ] {
        assert!(s[key].as_f64().is_some(), "{key}: {s}");
    }
    assert_eq!(s["plants"], 2);
    // The same JSON and a plot were written.
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("bench.json")).unwrap()).unwrap();
    assert_eq!(&written, j);
    assert!(
        std::fs::read(out.join("bench.png"))
            .unwrap()
            .starts_with(b"\x89PNG")
    );
    // The reference rows taken from that file are the ones computed.
    let again = quick_with(None, Some(out.join("bench.json")));
    let timeless = |rows: &serde_json::Value| {
        let mut rows = rows.clone();
        for row in rows.as_array_mut().unwrap() {
            row["cpu_s"] = serde_json::Value::Null;
        }
        rows
    };
    assert_eq!(timeless(&again.json["rows"]), timeless(&j["rows"]));
    // Reference rows kept by another rule are not these rows.
    assert_eq!(j["keep_best"], microrl::train::KEEP_BEST_EPISODES);
    let e = run(&BenchArgs {
        keep_best: 0,
        reference_from: Some(out.join("bench.json")),
        ..args(None, None)
    })
    .unwrap_err();
    assert!(e.to_string().contains("kept the best policy on 20"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
    // The reference runs SB3's defaults: no normalisation, constant rate.
    match reference(EnvName::Family, Algo::Ac, 10).1 {
        AlgoConfig::Ppo(c) => assert!(!c.normalize_obs && c.minibatches == 32),
        other => panic!("{other:?}"),
    }
}

#[test]
fn summary_counts_and_medians() {
    let row = |learned: f32, sb3: f32| Row {
        plant: 1,
        class: "x",
        env: "family",
        baseline: -1.0,
        baseline_law: "pid",
        pid: -1.0,
        idle: -2.5,
        algo: "ppo",
        learned_worst: learned,
        learned_per_seed: vec![learned],
        sb3_defaults_worst: sb3,
        sb3_defaults_per_seed: vec![sb3],
        ratio: cost_ratio(learned, -1.0),
        sb3_defaults_ratio: cost_ratio(sb3, -1.0),
        steps: 1,
        cpu_s: 0.0,
        sb3_defaults_cpu_s: 0.0,
        error: None,
    };
    let rows = [
        row(-0.5, -0.6),
        row(-2.0, -1.9),
        row(f32::NEG_INFINITY, -3.0),
    ];
    let s = summarise(rows.iter());
    assert_eq!(s.plants, 3);
    assert_eq!(s.beats_baseline, 1);
    assert_eq!(s.beats_sb3_defaults, 1);
    assert_eq!(s.within_10pct_of_sb3_defaults, 2);
    assert_eq!(s.median_ratio, 2.0);
    assert_eq!(s.sb3_defaults_median_ratio, f64::from(1.9f32));
    assert_eq!(s.sb3_defaults_beats_baseline, 1);
    assert_eq!(s.worse_than_idle, 1);
}
