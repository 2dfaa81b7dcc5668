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
