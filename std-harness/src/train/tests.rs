//! Unit tests of the desktop training run.

use super::*;
use microrl::algo::PpoConfig;
use microrl::optim::Schedule;
use std::path::PathBuf;

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
