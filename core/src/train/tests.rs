//! Unit tests of `train`.

use super::*;
use crate::algo::{Ppo, PpoConfig};
use crate::env::{Discrete, Step};
use crate::nn::Mlp;
use crate::policy::CategoricalActor;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

/// Episodes of 4 steps whose every reward is the start state `u ∈ [0, 1)`
/// drawn at reset: an episode's return identifies its start state.
#[derive(Clone, Default)]
struct Starts {
    u: f32,
    t: u32,
}

impl Env for Starts {
    type Obs = SVector<f32, 2>;
    type Space = Discrete<2>;
    const SOLVED_RETURN: f32 = 0.0;
    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 2> {
        self.u = crate::rng::uniform(rng);
        self.t = 0;
        SVector::<f32, 2>::new(self.u, 0.0)
    }
    fn step(&mut self, _action: usize) -> Result<Step<SVector<f32, 2>>, Error> {
        self.t += 1;
        Ok(Step {
            obs: SVector::<f32, 2>::new(self.u, self.t as f32),
            reward: self.u,
            terminated: self.t == 4,
            truncated: false,
        })
    }
}

type Agent = Ppo<CategoricalActor<Mlp<2, 4, 2>>, Mlp<2, 4, 1>, 2, 16>;

#[derive(Default)]
struct Count {
    episodes: u64,
    updates: u64,
    evaluations: std::vec::Vec<Evaluation>,
    stop_after: Option<u64>,
    iterations: u64,
}

impl<S> Hooks<S> for Count {
    fn on_episode(&mut self, _: Episode) {
        self.episodes += 1;
    }
    fn on_update(&mut self, _: u64, _: &S) {
        self.updates += 1;
    }
    fn on_evaluation(&mut self, e: &Evaluation) {
        self.evaluations.push(*e);
    }
    fn on_iteration(&mut self, _: &Progress) -> ControlFlow<()> {
        self.iterations += 1;
        if self.stop_after == Some(self.iterations) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// A whole run of a fresh agent on [`Starts`] with `config` and `seed`.
fn run_on_starts(config: RunConfig, seed: u64) -> (Outcome, Count) {
    let mut agent = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
    let (mut env, mut eval_env) = (Starts::default(), Starts::default());
    let mut trainer =
        Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, config, seed).unwrap();
    let mut hooks = Count::default();
    let outcome = trainer
        .run(&mut *agent, &mut env, &mut eval_env, &mut hooks)
        .unwrap();
    (outcome, hooks)
}

fn mean_return(seed: u64, skip: u32, episodes: u32) -> f32 {
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
    let mut env = Starts::default();
    for _ in 0..skip {
        env.reset(&mut rng);
    }
    // As `evaluate` sums: every step's reward and every return in f64.
    let sum: f64 = (0..episodes)
        .map(|_| {
            let u = f64::from(env.reset(&mut rng)[0]);
            ((u + u) + u) + u
        })
        .sum();
    (sum / f64::from(episodes)) as f32
}

/// The deciding evaluation must clear the threshold by `select_margin`
/// standard errors: a mean that reaches it is not enough.
#[test]
fn the_deciding_mean_must_clear_the_threshold_by_the_margin() {
    let bound = RunConfig {
        select_episodes: 4,
        select_margin: 2.0,
        ..RunConfig::new(1, 0.0)
    };
    assert_eq!(bound.lower_bound(10.0, 3.0), 7.0);
    // Seed 0: the first quick evaluation (the selection stream's first 3
    // start states) passes, and the deciding one (the next 5) has its
    // mean exactly at the threshold.
    let (quick, threshold) = (
        mean_return(select_seed(0), 0, 3),
        mean_return(select_seed(0), 3, 5),
    );
    assert!(quick > threshold);
    let run = |select_margin: f32| {
        let config = RunConfig {
            eval_interval: 1,
            quick_episodes: 3,
            select_episodes: 5,
            select_margin,
            ..RunConfig::new(64, threshold)
        };
        let (outcome, hooks) = run_on_starts(config, 0);
        let decided = hooks
            .evaluations
            .iter()
            .filter(|e| e.kind == EvalKind::Select)
            .count();
        (outcome, decided)
    };
    let (plain, decided) = run(0.0);
    assert_eq!(
        (plain.solved_at_step, plain.steps, decided),
        (Some(16), 16, 1)
    );
    // The same first deciding evaluation, refused: its mean is the
    // threshold and its standard deviation is not 0.
    let (margin, decided) = run(1.0);
    assert!(decided >= 1);
    assert_eq!((margin.solved_at_step, margin.steps), (None, 64));
    assert!(margin.selection.is_none());
}

/// The loop stops at the first deciding evaluation that passes, and the
/// reported evaluation plays start states from its own stream.
#[test]
fn stops_on_selection_and_reports_on_held_out_starts() {
    let config = RunConfig {
        eval_interval: 1,
        quick_episodes: 3,
        select_episodes: 5,
        report_episodes: 7,
        ..RunConfig::new(1_000, 0.0)
    };
    let (outcome, hooks) = run_on_starts(config, 11);
    // Every return is ≥ 0: solved at the first evaluation, after one rollout.
    assert_eq!(outcome.solved_at_step, Some(16));
    assert_eq!((outcome.steps, outcome.updates, hooks.updates), (16, 1, 1));
    assert_eq!(outcome.episodes, 4);
    assert_eq!(hooks.episodes, 4);
    let kinds: std::vec::Vec<EvalKind> = hooks.evaluations.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [EvalKind::Quick, EvalKind::Select, EvalKind::Report]);
    // The selection stream: 3 quick episodes, then 5 deciding ones.
    let select = outcome.selection.unwrap();
    assert_eq!(select.mean, mean_return(select_seed(11), 3, 5));
    // The report stream: its own start states.
    assert_eq!(outcome.report.episodes, 7);
    assert_eq!(outcome.report.mean, mean_return(report_seed(11), 0, 7));
    assert_ne!(outcome.report.mean, mean_return(select_seed(11), 8, 7));
    assert!(outcome.solved(0.0));
    assert!(!outcome.solved(3.9));
}

#[test]
fn a_hook_can_stop_the_run_and_the_budget_ends_it() {
    let config = RunConfig {
        quick_episodes: 0,
        ..RunConfig::new(160, 0.0)
    };
    let run = |stop_after| {
        let mut agent = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
        let (mut env, mut eval_env) = (Starts::default(), Starts::default());
        let mut trainer =
            Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, config, 1).unwrap();
        let mut hooks = Count {
            stop_after,
            ..Count::default()
        };
        trainer
            .run(&mut *agent, &mut env, &mut eval_env, &mut hooks)
            .unwrap()
    };
    assert_eq!(run(Some(3)).steps, 48);
    let full = run(None);
    assert_eq!((full.steps, full.solved_at_step), (160, None));
}

/// `between` runs after every iteration that does not end the run, and
/// can stop it.
#[test]
fn run_with_calls_between_iterations_and_can_stop() {
    let config = RunConfig {
        quick_episodes: 0,
        ..RunConfig::new(160, 0.0)
    };
    let mut agent = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
    let (mut env, mut eval_env) = (Starts::default(), Starts::default());
    let mut trainer =
        Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, config, 1).unwrap();
    let mut seen = std::vec::Vec::new();
    let outcome = trainer
        .run_with(
            &mut *agent,
            &mut env,
            &mut eval_env,
            &mut (),
            |t, a, _, _| {
                seen.push((t.updates, a.steps));
                if seen.len() == 3 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        )
        .unwrap();
    assert_eq!(seen, [(1, 16), (2, 32), (3, 48)]);
    assert_eq!(outcome.steps, 48);
}

/// One environment: evaluations run on it and the training episode
/// restarts; the run is still deterministic.
#[test]
fn a_single_plant_serves_training_and_evaluation() {
    let run = || {
        let mut agent = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
        let mut env = Starts::default();
        let config = RunConfig {
            eval_interval: 32,
            early_stop: false,
            solved_eval_interval: 32,
            ..RunConfig::new(128, 0.0)
        };
        let mut trainer =
            Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, config, 5).unwrap();
        let mut hooks = Count::default();
        let outcome = trainer
            .run_single(&mut *agent, &mut env, &mut hooks)
            .unwrap();
        (outcome, hooks.evaluations.len())
    };
    let (outcome, evaluations) = run();
    assert_eq!(outcome.steps, 128);
    assert_eq!(outcome.solved_at_step, Some(32));
    // Quick + deciding at 32, quick at 64, 96, 128, and the report.
    assert_eq!(evaluations, 6);
    assert_eq!(run().0, outcome);
}

#[test]
fn run_config_refuses_vacuous_gates() {
    let ok = RunConfig::new(100, 1.0);
    assert_eq!(ok.validate(), Ok(()));
    for (c, field) in [
        (
            RunConfig {
                total_steps: 0,
                ..ok
            },
            "total_steps",
        ),
        (
            RunConfig {
                threshold: f32::NAN,
                ..ok
            },
            "threshold",
        ),
        (
            RunConfig {
                eval_interval: 0,
                ..ok
            },
            "eval_interval",
        ),
        (
            RunConfig {
                select_episodes: 0,
                ..ok
            },
            "select_episodes",
        ),
        (
            RunConfig {
                report_episodes: 0,
                ..ok
            },
            "report_episodes",
        ),
    ] {
        assert!(
            matches!(c.validate(), Err(Error::InvalidConfig { field: f, .. }) if f == field),
            "{c:?}"
        );
    }
}

#[test]
fn evaluations_display_for_logs() {
    let e = Evaluation {
        kind: EvalKind::Report,
        step: 2048,
        episodes: 100,
        mean: 500.0,
        std: 0.0,
    };
    assert_eq!(
        std::format!("{e}"),
        "held-out eval at step 2048: 500.0 ± 0.0 (100 episodes)"
    );
}

/// The policy's parameters, flat, for comparing two policies exactly.
fn flat<P: crate::Params>(p: &P) -> std::vec::Vec<u32> {
    let mut out = std::vec::Vec::new();
    let mut k = 0;
    while let Some(x) = p.get_flat(k) {
        out.push(x.to_bits());
        k += 1;
    }
    out
}

#[test]
fn keep_best_keeps_the_first_strictly_best_and_never_a_nan() {
    let mut best = KeepBest::new(0u32, 5, 0).unwrap();
    assert_eq!((best.score, best.policy), (None, 0));
    assert!(!best.offer(f32::NAN, 1, |p| *p = 9));
    assert_eq!(best.score, None);
    let offers = [(1.0, 1), (3.0, 2), (3.0, 3), (2.0, 4), (f32::NAN, 5)];
    let kept: std::vec::Vec<bool> = offers
        .iter()
        .map(|&(score, id)| best.offer(score, 10 * u64::from(id), |p| *p = id))
        .collect();
    assert_eq!(kept, [true, true, false, false, false]);
    assert_eq!((best.score, best.policy, best.step), (Some(3.0), 2, 20));
    let e = KeepBest::new(0u32, MAX_KEEP_BEST_EPISODES + 1, 0).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidConfig {
                field: "keep_best",
                ..
            }
        ),
        "{e:?}"
    );
}

/// On [`Starts`] every policy scores the mean of the keep-best start states
/// (a return is its start state): the step-0 policy is kept, the later ones
/// tie and are not; the kept policy is the step-0 export bit for bit, and
/// keeping the best draws nothing from the run's streams.
#[test]
fn keep_best_plays_fixed_starts_keeps_step_0_on_ties_and_leaves_training_alone() {
    let config = RunConfig {
        early_stop: false,
        eval_interval: 1,
        ..RunConfig::new(64, 10.0)
    };
    let seed = 7;
    let train = |keep: u32| {
        let mut agent = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
        let (mut env, mut eval_env) = (Starts::default(), Starts::default());
        let mut trainer =
            Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, config, seed).unwrap();
        let mut best = KeepBest::new(Deployed::<Agent>::ZERO, keep, seed).unwrap();
        let mut step0 = Deployed::<Agent>::ZERO;
        agent.export(&mut step0);
        let mut kept = std::vec::Vec::new();
        kept.push(
            trainer
                .keep_best(&*agent, &mut eval_env, &mut best)
                .unwrap(),
        );
        while crate::train::Agent::steps(&*agent) < config.total_steps {
            let p = trainer
                .iterate(&mut *agent, &mut env, &mut eval_env, &mut ())
                .unwrap();
            assert!(p.evaluation.is_some());
            kept.push(
                trainer
                    .keep_best(&*agent, &mut eval_env, &mut best)
                    .unwrap(),
            );
        }
        let mut last = Deployed::<Agent>::ZERO;
        agent.export(&mut last);
        (best, kept, flat(&step0), flat(&last), trainer)
    };
    let (best, kept, step0, last, trainer) = train(20);
    assert_eq!(kept, [true, false, false, false, false]);
    assert_eq!(best.score, Some(mean_return(keep_best_seed(seed), 0, 20)));
    assert_eq!(best.step, 0);
    assert_eq!(flat(&best.policy), step0);
    assert_ne!(step0, last, "the agent trained");
    // The same run without keeping the best: the same agent, the same streams.
    let (off, kept_off, _, last_off, trainer_off) = train(0);
    assert_eq!(kept_off, [false; 5]);
    assert_eq!(off.score, None);
    assert_eq!(last, last_off);
    assert_eq!(trainer.select_rng, trainer_off.select_rng);
    assert_eq!(trainer.rng, trainer_off.rng);
}

/// The result: the kept policy, unless keeping the best is off, nothing
/// was kept, or the run stopped early on its deciding evaluation.
#[test]
fn settle_returns_the_last_policy_when_off_unscored_or_solved() {
    let mut agent = std::boxed::Box::new(Agent::new(PpoConfig::DEFAULT));
    let mut env = Starts::default();
    let mut trainer =
        Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, RunConfig::new(32, 10.0), 3)
            .unwrap();
    let mut eval_env = Starts::default();
    let mut best = KeepBest::new(Deployed::<Agent>::ZERO, 4, 3).unwrap();
    trainer
        .keep_best(&*agent, &mut eval_env, &mut best)
        .unwrap();
    let step0 = flat(&best.policy);
    trainer
        .iterate(&mut *agent, &mut env, &mut eval_env, &mut ())
        .unwrap();
    let mut last = Deployed::<Agent>::ZERO;
    agent.export(&mut last);
    let mut kept = best.clone();
    kept.settle(&*agent, false);
    assert_eq!((flat(&kept.policy), kept.step), (step0, 0));
    let mut solved = best.clone();
    solved.settle(&*agent, true);
    assert_eq!((flat(&solved.policy), solved.step), (flat(&last), 16));
    let mut off = KeepBest::new(Deployed::<Agent>::ZERO, 0, 3).unwrap();
    assert!(!trainer.keep_best(&*agent, &mut eval_env, &mut off).unwrap());
    off.settle(&*agent, false);
    assert_eq!(flat(&off.policy), flat(&last));
}
