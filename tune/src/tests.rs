//! The tuner's tests: budgets, how values enter a configuration, and a
//! small search end to end (rungs, survivors, the base run, determinism,
//! refused candidates).

use super::*;
use microrl::agent;
use microrl::algo::PpoConfig;
use microrl::env::CartPole;
use microrl::optim::Schedule;

#[test]
fn budgets_grow_by_eta_up_to_the_maximum() {
    let options = TuneOptions::DEFAULT;
    assert_eq!(options.budgets(), vec![10_000, 30_000, 90_000]);
    let options = TuneOptions {
        min_steps: 1_000,
        max_steps: 8_999,
        eta: 2,
        ..TuneOptions::DEFAULT
    };
    assert_eq!(options.budgets(), vec![1_000, 2_000, 4_000, 8_000]);
}

/// Out-of-range options are refused by [`TuneOptions::validate`] (which
/// [`tune`] calls first) naming the field and its option, and `budgets`
/// ends for them too: an `η` of 0 or 1, or a zero first budget, never
/// grows, and once pushed budgets until memory ran out.
#[test]
fn out_of_range_options_are_refused_naming_them_and_budgets_end() {
    let cases: [(TuneOptions, &str); 8] = [
        (
            TuneOptions {
                eta: 1,
                ..TuneOptions::DEFAULT
            },
            "--eta",
        ),
        (
            TuneOptions {
                eta: 0,
                ..TuneOptions::DEFAULT
            },
            "--eta",
        ),
        (
            TuneOptions {
                eta: 1025,
                ..TuneOptions::DEFAULT
            },
            "--eta",
        ),
        (
            TuneOptions {
                min_steps: 0,
                ..TuneOptions::DEFAULT
            },
            "--min-steps",
        ),
        (
            TuneOptions {
                candidates: 1_000_000_000,
                ..TuneOptions::DEFAULT
            },
            "--candidates",
        ),
        (
            TuneOptions {
                candidates: 0,
                ..TuneOptions::DEFAULT
            },
            "--candidates",
        ),
        (
            TuneOptions {
                max_steps: u64::MAX,
                ..TuneOptions::DEFAULT
            },
            "--max-steps",
        ),
        (
            TuneOptions {
                report_episodes: u32::MAX,
                ..TuneOptions::DEFAULT
            },
            "report_episodes",
        ),
    ];
    for (options, name) in cases {
        let e = options.validate().unwrap_err().to_string();
        assert!(e.contains(name), "{options:?}: {e}");
        assert!(options.budgets().len() <= 64, "{options:?}");
        let refused = tune(
            ppo_space(false),
            PpoConfig::CARTPOLE,
            CartPole::new,
            |c| Box::new(agent::Ppo::<CartPole, 32, 256>::new(c)),
            &options,
            |_| {},
        );
        assert!(refused.is_err(), "{options:?}");
    }
    assert!(TuneOptions::DEFAULT.validate().is_ok());
}

#[test]
fn values_enter_the_configuration_as_its_fields() {
    let base = PpoConfig::CARTPOLE; // learning rate 1e-3 → 0, annealed
    let values = [("learning_rate", 3e-4), ("epochs", 4.0), ("gamma", 0.95)];
    let (config, overrides) = apply(&base, &values, 12_345).unwrap();
    assert_eq!(config.learning_rate, Schedule::linear_to_zero(3e-4));
    assert_eq!(config.epochs, 4);
    assert_eq!(config.gamma, 0.95);
    assert_eq!(config.total_steps, 12_345);
    assert_eq!(overrides.len(), 3);
    assert!(!overrides.contains_key("total_steps"));
    // A constant learning rate stays a constant.
    let constant = PpoConfig {
        learning_rate: Schedule::Constant(1e-3),
        ..PpoConfig::DEFAULT
    };
    let (config, _) = apply(&constant, &values[..1], 1).unwrap();
    assert_eq!(config.learning_rate, Schedule::Constant(3e-4));
    let error = apply(&base, &[("learning_rat", 1.0)], 1).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the configuration has no field `learning_rat`"
    );
}

type Small = agent::Ppo<CartPole, 16, 256>;

fn small_search(space: &[Dim]) -> TuneReport<PpoConfig> {
    let options = TuneOptions {
        candidates: 4,
        eta: 2,
        min_steps: 1_024,
        max_steps: 2_048,
        seeds: 2,
        tuning_episodes: 5,
        report_episodes: 10,
        threads: 2,
        seed: 3,
    };
    tune(
        space,
        PpoConfig::CARTPOLE,
        CartPole::new,
        |config| Box::new(Small::new(config)),
        &options,
        |_| {},
    )
    .unwrap()
}

/// 4 candidates × 2 seeds at 1 024 steps, the best 2 at 2 048, then the
/// base configuration at 2 048: the winner is the best survivor of the last
/// rung by its tuning score, and the search is deterministic.
#[test]
fn a_small_search_keeps_the_best_half_each_rung() {
    let report = small_search(&PPO_SPACE[..3]);
    assert_eq!(report.budgets, vec![1_024, 2_048]);
    assert_eq!(report.candidates.len(), 4);
    assert_eq!(report.trials.len(), 4 + 2 + 1);
    let rung0: Vec<_> = report.trials.iter().filter(|t| t.rung == Some(0)).collect();
    let rung1: Vec<_> = report.trials.iter().filter(|t| t.rung == Some(1)).collect();
    assert_eq!((rung0.len(), rung1.len()), (4, 2));
    // The survivors are rung 0's two best.
    let mut by_score = rung0.clone();
    by_score.sort_by(|a, b| b.score().total_cmp(&a.score()));
    let survivors: Vec<_> = by_score[..2].iter().map(|t| t.candidate).collect();
    for t in &rung1 {
        assert!(survivors.contains(&t.candidate));
        assert_eq!((t.steps, t.tuning.len(), t.held_out.len()), (2_048, 2, 2));
    }
    // The winner is the best of the last rung, or the defaults if they
    // scored better on the tuning stream.
    let best = report.best_trial().unwrap();
    let base = report.base_trial().unwrap();
    assert!(rung1.iter().all(|t| t.score() <= best.score()));
    if report.best_candidate == DEFAULTS {
        assert!(base.score() > rung1.iter().map(|t| t.score()).fold(f32::MIN, f32::max));
        assert!(report.best_overrides.is_empty());
    } else {
        assert!(base.score() <= best.score());
    }
    assert_eq!(report.base_trial().unwrap().steps, 2_048);
    assert_eq!(report.best.total_steps, 2_048);
    let again = small_search(&PPO_SPACE[..3]);
    let timeless = |r: &TuneReport<PpoConfig>| {
        let mut trials = r.trials.clone();
        trials.iter_mut().for_each(|t| t.wall_s = 0.0);
        trials
    };
    assert_eq!(timeless(&again), timeless(&report));
    assert_eq!(again.best_overrides, report.best_overrides);
    let text = report.overrides_toml();
    let parsed: toml::Table = toml::from_str(&text).unwrap();
    assert_eq!(parsed, report.best_overrides);
}

/// A candidate the core refuses (3 minibatches do not divide a 256-step
/// rollout) scores −∞ with the core's reason and never wins.
#[test]
fn a_refused_candidate_scores_minus_infinity_with_its_reason() {
    const BAD: [Dim; 1] = [Dim {
        key: "minibatches",
        scale: Scale::Choice(&[3.0]),
    }];
    let report = small_search(&BAD);
    let refused: Vec<_> = report.trials.iter().filter(|t| t.rung.is_some()).collect();
    assert!(refused.iter().all(|t| t.score() == f32::NEG_INFINITY));
    assert!(
        refused[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("minibatches")),
        "{:?}",
        refused[0].error
    );
    assert!(report.base_trial().unwrap().score().is_finite());
}

/// A discrete plant's search leaves out the noise's colour (its categorical
/// actor samples the same without it); a continuous plant's searches it.
#[test]
fn a_discrete_plant_searches_no_noise_colour() {
    let keys = |space: &[Dim]| space.iter().map(|d| d.key).collect::<Vec<_>>();
    assert!(keys(ppo_space(true)).contains(&"noise_beta"));
    assert!(!keys(ppo_space(false)).contains(&"noise_beta"));
    assert_eq!(ppo_space(false), &PPO_SPACE[..PPO_SPACE.len() - 1]);
}
