//! Unit tests of the desktop training run.

use super::*;
use microrl::algo::PpoConfig;
use microrl::optim::Schedule;
use std::path::{Path, PathBuf};

/// The PPO configuration `microrl train` resolves for `opts`.
fn ppo(opts: &TrainOptions) -> PpoConfig {
    let resolved = AlgoConfig::resolve(
        opts.env,
        opts.algo,
        opts.steps,
        opts.default_run(),
        &opts.overrides,
    );
    match resolved {
        Ok(AlgoConfig::Ppo(c)) => c,
        other => panic!("not a PPO configuration: {other:?}"),
    }
}

/// Plain PPO on the 64-64 CartPole nets gets the settings tuned for time
/// to solve; `--small` (the firmware's protocol, whose policy file the
/// firmware tests pin), `--kl-ref`, `--reward-model` and PPO-penalty keep
/// RL Zoo's, with which their figures were measured.
#[test]
fn only_the_default_run_gets_the_time_tuned_settings() {
    let plain = TrainOptions::new(EnvName::Cartpole, Algo::Ppo, 0, 100_000);
    let zoo = PpoConfig {
        total_steps: 100_000,
        ..PpoConfig::CARTPOLE
    };
    assert_eq!(
        ppo(&plain),
        PpoConfig {
            learning_rate: Schedule::linear_to_zero(2.5e-3),
            gae_lambda: 0.9,
            epochs: 4,
            ..zoo
        }
    );
    let small = TrainOptions {
        small: true,
        ..plain.clone()
    };
    let rewarded = TrainOptions {
        reward_model: Some(PathBuf::from("rm.mrlp")),
        ..plain.clone()
    };
    let anchored = TrainOptions {
        anchor: Some(AnchorOptions {
            reference: PathBuf::from("ref.mrlp"),
            kl_coef: 0.1,
            kl_target: None,
        }),
        ..plain.clone()
    };
    for opts in [&small, &rewarded, &anchored] {
        assert!(!opts.default_run());
        assert_eq!(ppo(opts), zoo);
    }
    let penalty = TrainOptions::new(EnvName::Cartpole, Algo::PpoPenalty, 0, 100_000);
    assert_eq!(ppo(&penalty).epochs, 10);
    let pendulum = TrainOptions::new(EnvName::Pendulum, Algo::Ppo, 0, 300_000);
    assert!(!pendulum.default_run());
}

/// A run saved before `bound_coef` (or `noise_beta`) existed trained
/// without the bound loss (and with white noise): `--config
/// runs/X/summary.json` (and a resume, through the same `fill_added_keys`)
/// gives it `bound_coef = 0` and `noise_beta = 0`, not `PpoConfig::PLANT`'s
/// 1e-4 and `0.5 → 0`, so the run is reproduced; a saved value and other algorithms'
/// configurations are left alone.
#[test]
fn a_run_saved_before_the_bound_loss_is_reproduced_without_it() {
    let dir = std::env::temp_dir().join(format!("microrl-added-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let read = |algo: &str, config: &str| {
        let path = dir.join(format!("{algo}-summary.json"));
        let text = format!(r#"{{"algo": "{algo}", "env": "servo", "config": {config}}}"#);
        std::fs::write(&path, text).unwrap();
        Overrides::from_file(&path).unwrap().0
    };
    let old = read("ppo", r#"{"gamma": 0.99, "minibatches": 32}"#);
    assert_eq!(old.get("bound_coef"), Some(&toml::Value::Float(0.0)));
    assert_eq!(old.get("noise_beta"), Some(&toml::Value::Float(0.0)));
    let mut opts = TrainOptions::new(EnvName::Servo, Algo::Ppo, 0, 100_000);
    assert_eq!(ppo(&opts).bound_coef, 1e-4);
    assert_eq!(ppo(&opts).noise_beta, Schedule::linear_to_zero(0.5));
    opts.overrides = Overrides(old);
    assert_eq!(ppo(&opts).bound_coef, 0.0);
    assert_eq!(ppo(&opts).noise_beta, Schedule::Constant(0.0));
    let saved = read("ppo-penalty", r#"{"bound_coef": 0.5}"#);
    assert_eq!(saved.get("bound_coef"), Some(&toml::Value::Float(0.5)));
    let sac = read("sac", r#"{"gamma": 0.99}"#);
    assert_eq!(sac.get("bound_coef"), None);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--lag 1` with PPO on a plant: the plant's default colour of the
/// exploration noise gives way to the white noise the lagged schedule's
/// control loop draws, so the run trains; a colour the user asks for is
/// refused by the core, naming it.
#[test]
fn a_lagged_plant_run_explores_with_white_noise() {
    let mut opts = TrainOptions::new(EnvName::Servo, Algo::Ppo, 0, 4_096);
    opts.lag = 1;
    let summary = train(&opts).unwrap();
    let AlgoConfig::Ppo(c) = summary.config else {
        panic!("a PPO run")
    };
    assert_eq!(c.noise_beta, Schedule::Constant(0.0));
    let mut asked = toml::Table::new();
    asked.insert("noise_beta".into(), toml::Value::Float(0.5));
    opts.overrides = Overrides(asked);
    let refused = train(&opts).unwrap_err().to_string();
    assert!(refused.contains("noise_beta"), "{refused}");
}

/// A plant with discrete commands (Acrobot) gets `PLANT_DISCRETE`'s
/// constant learning rate, with PPO and PPO-penalty; a continuous plant
/// keeps `PLANT`'s annealing.
#[test]
fn a_discrete_plant_gets_the_constant_learning_rate() {
    for algo in [Algo::Ppo, Algo::PpoPenalty] {
        let acrobot = TrainOptions::new(EnvName::Acrobot, algo, 0, 1_000_000);
        assert_eq!(
            ppo(&acrobot).learning_rate,
            PpoConfig::PLANT_DISCRETE.learning_rate,
            "{algo:?}"
        );
    }
    for env in [EnvName::Servo, EnvName::MountaincarContinuous] {
        let plant = TrainOptions::new(env, Algo::Ppo, 0, 1_000_000);
        assert_eq!(ppo(&plant), PpoConfig::PLANT, "{env:?}");
    }
}

/// The budget: `--steps`, else the file's `total_steps` (written back so
/// the schedules anneal over the steps run), else the default; a bad
/// `total_steps` is refused naming the file.
#[test]
fn the_budget_comes_from_steps_then_the_file_then_the_default() {
    let file = Path::new("run/summary.json");
    let with = |steps: i64| {
        let mut t = toml::Table::new();
        t.insert("total_steps".into(), toml::Value::Integer(steps));
        Overrides(t)
    };
    let (steps, note) = Overrides::default().budget(None, || 7, file).unwrap();
    assert_eq!((steps, note), (7, None));
    let (steps, note) = Overrides::default().budget(Some(5), || 7, file).unwrap();
    assert_eq!((steps, note), (5, None));

    let mut o = with(2_000);
    let (steps, note) = o.budget(None, || 7, file).unwrap();
    assert_eq!(steps, 2_000);
    assert!(note.unwrap().contains("steps 2000"));
    assert_eq!(o, with(2_000));

    let mut o = with(2_000);
    let (steps, note) = o.budget(Some(4_000), || 7, file).unwrap();
    assert_eq!(steps, 4_000);
    assert!(
        note.unwrap()
            .contains("--steps 4000 replaces the total_steps 2000")
    );
    assert_eq!(o, with(4_000));
    let (_, note) = with(2_000).budget(Some(2_000), || 7, file).unwrap();
    assert_eq!(note, None);

    for bad in [
        toml::Value::Integer(0),
        toml::Value::Integer(-3),
        toml::Value::Float(1e6),
    ] {
        let mut t = toml::Table::new();
        t.insert("total_steps".into(), bad.clone());
        let mut o = Overrides(t);
        let before = o.clone();
        let err = o.budget(None, || 7, file).unwrap_err().to_string();
        assert!(
            err.contains("run/summary.json") && err.contains("whole number"),
            "{bad}: {err}"
        );
        assert_eq!(o, before, "a refused budget changes nothing");
    }
}

/// SAC's `ent_coef` as SB3 spells it in a `--config` file: a number is a
/// fixed `α`, `"auto"` a learned one from 1, `"auto_0.1"` one from 0.1
/// (and the tagged table older summaries saved still reads); a spelling
/// SB3 does not have is refused naming what it expects. A run with a fixed
/// `α` saves it in `summary.json` as SB3's number, and `--config
/// summary.json` resolves the same configuration and trains the same
/// policy bits.
#[test]
fn sac_ent_coef_takes_every_sb3_spelling_and_replays_from_the_summary() {
    use microrl::algo::SacConfig;
    use microrl::algo::sac::EntCoef;
    let sac = |text: &str| {
        let overrides = Overrides::parse(text).unwrap();
        AlgoConfig::resolve(EnvName::Pendulum, Algo::Sac, 2_000, false, &overrides).map(|c| {
            let AlgoConfig::Sac(c) = c else {
                panic!("a SAC configuration")
            };
            c
        })
    };
    for (text, coef) in [
        ("ent_coef = 0.1", EntCoef::Fixed(0.1)),
        ("ent_coef = 0", EntCoef::Fixed(0.0)),
        ("ent_coef = '0.1'", EntCoef::Fixed(0.1)),
        ("ent_coef = 'auto'", EntCoef::Auto(1.0)),
        ("ent_coef = 'auto_0.1'", EntCoef::Auto(0.1)),
        ("ent_coef = { auto = 0.5 }", EntCoef::Auto(0.5)),
        ("ent_coef = { fixed = 0.2 }", EntCoef::Fixed(0.2)),
    ] {
        let c = sac(text).unwrap();
        assert_eq!(c.ent_coef, coef, "{text}");
        assert_eq!(
            c,
            SacConfig {
                ent_coef: coef,
                ..sac("").unwrap()
            },
            "{text}: only ent_coef changes"
        );
    }
    assert_eq!(sac("").unwrap().ent_coef, EntCoef::Auto(1.0));
    for bad in [
        "ent_coef = 'automatic'",
        "ent_coef = true",
        "ent_coef = 'auto_'",
    ] {
        let e = sac(bad).unwrap_err().to_string();
        assert!(e.contains("a number (a fixed α)"), "{bad}: {e}");
    }

    let dir = std::env::temp_dir().join(format!("microrl-ent-coef-{}", std::process::id()));
    let mut opts = TrainOptions::new(EnvName::Pendulum, Algo::Sac, 0, 300);
    opts.overrides =
        Overrides::parse("ent_coef = 0.1\nlearning_starts = 200\nbatch_size = 16").unwrap();
    opts.eval_episodes = 1;
    opts.out = Some(dir.join("first"));
    let first = train(&opts).unwrap();
    let AlgoConfig::Sac(c) = first.config else {
        panic!("a SAC run")
    };
    assert_eq!(c.ent_coef, EntCoef::Fixed(0.1));
    let summary = dir.join("first").join(SUMMARY_FILE);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(saved["config"]["ent_coef"], serde_json::json!(0.1f32));
    opts.overrides = Overrides::from_file(&summary).unwrap();
    opts.out = Some(dir.join("replay"));
    let replay = train(&opts).unwrap();
    assert_eq!(replay.config, first.config);
    assert!(first.policy_crc32.is_some());
    assert_eq!(replay.policy_crc32, first.policy_crc32);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// TD3's exploration noise as `docs/plants.md` states it: SB3's default
/// (`action_noise = None`, the bare deterministic actor after the warm-up)
/// on every plant but Pendulum, where RL Zoo's Gaussian `σ = 0.1` is used.
#[test]
fn td3_explores_with_noise_on_pendulum_only() {
    use microrl::algo::Td3Config;
    let td3 = |env| match AlgoConfig::resolve(env, Algo::Td3, 50_000, false, &Overrides::default())
    {
        Ok(AlgoConfig::Td3(c)) => c,
        other => panic!("not a TD3 configuration: {other:?}"),
    };
    assert_eq!(Td3Config::DEFAULT.action_noise, None);
    assert_eq!(td3(EnvName::Pendulum).action_noise, Some(0.1));
    for env in [
        EnvName::CartpoleSwingup,
        EnvName::Servo,
        EnvName::Quadrotor2d,
        EnvName::MountaincarContinuous,
    ] {
        assert_eq!(td3(env).action_noise, None, "{env:?}");
    }
}
