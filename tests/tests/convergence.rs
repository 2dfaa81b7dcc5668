//! Convergence tests: real training runs through the harness's tuned defaults,
//! a few seeds each, judged by the same 100-episode deterministic evaluation
//! `microrl train` reports.
//!
//! The acceptance figures (PPO on CartPole ≥ 475 within 100k steps for 9 of 10
//! seeds, and so on) are measured with `microrl validate` over more seeds; these
//! tests keep a small, fast sample of them in every `cargo test` run, so a
//! regression in the core or the defaults fails CI. Seeds are fixed: the runs
//! are deterministic, so a failure reproduces exactly.

use microrl_harness::train::{Algo, EnvName, TrainOptions, TrainSummary, train};

fn run(env: EnvName, algo: Algo, seed: u64, steps: u64) -> TrainSummary {
    let opts = TrainOptions::new(env, algo, seed, steps);
    let summary = train(&opts).expect("training runs");
    println!(
        "{} {} seed {seed}: solved at {:?}, eval {:.1} ± {:.1}, {:.2} s",
        algo.name(),
        env.name(),
        summary.solved_at_step,
        summary.eval_mean,
        summary.eval_std,
        summary.wall_s
    );
    summary
}

fn assert_solved(s: &TrainSummary, budget: u64) {
    let step = s
        .solved_at_step
        .unwrap_or_else(|| panic!("{} {} seed {} not solved: {s:?}", s.algo, s.env, s.seed));
    assert!(step <= budget);
    assert!(s.eval_mean >= s.threshold, "{s:?}");
    assert_eq!(s.eval_episodes, 100);
}

#[test]
fn ppo_solves_cartpole_within_100k_steps() {
    for seed in 0..3 {
        assert_solved(&run(EnvName::Cartpole, Algo::Ppo, seed, 100_000), 100_000);
    }
}

/// PPO-penalty (no clipping, adaptive KL coefficient) within its 150k budget.
#[test]
fn ppo_penalty_solves_cartpole() {
    for seed in [0, 1] {
        assert_solved(
            &run(EnvName::Cartpole, Algo::PpoPenalty, seed, 150_000),
            150_000,
        );
    }
}

#[test]
fn online_actor_critic_solves_cartpole() {
    assert_solved(&run(EnvName::Cartpole, Algo::Ac, 4, 500_000), 500_000);
}

#[test]
fn a2c_solves_cartpole() {
    assert_solved(&run(EnvName::Cartpole, Algo::A2c, 1, 500_000), 500_000);
}

#[test]
fn reinforce_solves_cartpole() {
    assert_solved(
        &run(EnvName::Cartpole, Algo::Reinforce, 0, 500_000),
        500_000,
    );
}

#[test]
fn gaussian_ppo_solves_continuous_cartpole() {
    assert_solved(
        &run(EnvName::CartpoleContinuous, Algo::Ppo, 1, 200_000),
        200_000,
    );
}

#[test]
fn gaussian_ppo_solves_pendulum() {
    assert_solved(&run(EnvName::Pendulum, Algo::Ppo, 3, 300_000), 300_000);
}

#[test]
fn training_is_deterministic() {
    let a = run(EnvName::Cartpole, Algo::Ppo, 7, 4096);
    let b = run(EnvName::Cartpole, Algo::Ppo, 7, 4096);
    assert_eq!(
        (a.solved_at_step, a.eval_mean, a.eval_std, a.episodes),
        (b.solved_at_step, b.eval_mean, b.eval_std, b.episodes)
    );
}
