//! PPO over environment copies (SB3's `n_envs × n_steps` rollouts) through
//! the harness: RL Zoo's CartPole-v1 configuration, exactly as
//! `std-harness/benches/peers/microrl_cartpole_rlzoo.toml` states it
//! (`n_envs = 8`, `n_steps = 32`, one minibatch of 256, 20 epochs), solves
//! CartPole within RL Zoo's 100k-step budget, and its `summary.json`
//! reproduces the run bit for bit.

use std::path::PathBuf;

use microrl_harness::train::{Algo, EnvName, Overrides, TrainOptions, TrainSummary, train};

fn zoo_toml() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../std-harness/benches/peers/microrl_cartpole_rlzoo.toml")
}

fn run(seed: u64, overrides: Overrides, out: Option<PathBuf>) -> TrainSummary {
    let opts = TrainOptions {
        overrides,
        out,
        ..TrainOptions::new(EnvName::Cartpole, Algo::Ppo, seed, 100_000)
    };
    let summary = train(&opts).expect("training runs");
    println!(
        "ppo cartpole n_envs 8 x n_steps 32, seed {seed}: solved at {:?}, eval {:.1} ± {:.1}, {:.2} s",
        summary.solved_at_step, summary.eval_mean, summary.eval_std, summary.wall_s
    );
    summary
}

#[test]
fn rl_zoo_cartpole_with_8_copies_of_32_steps_solves() {
    let zoo = Overrides::from_file(&zoo_toml()).expect("the RL Zoo TOML parses");
    for seed in 0..3 {
        let s = run(seed, zoo.clone(), None);
        let ppo = s.config.ppo().expect("a PPO configuration");
        assert_eq!((ppo.n_envs, ppo.n_steps, ppo.minibatches), (8, 32, 1));
        let step = s
            .solved_at_step
            .unwrap_or_else(|| panic!("seed {seed} not solved: {s:?}"));
        assert!(step <= 100_000);
        // Whole rollouts of 8 × 32 samples.
        assert_eq!(s.steps_run % 256, 0);
        assert!(s.eval_mean >= s.threshold, "{s:?}");
        assert_eq!(s.eval_episodes, 100);
    }
}

/// `--config runs/X/summary.json` carries `n_envs` and `n_steps` and
/// reproduces the run: the same policy, bit for bit.
#[test]
fn a_summary_reproduces_a_run_over_copies() {
    let dir = std::env::temp_dir().join(format!("microrl-vec-env-{}", std::process::id()));
    let (a, b) = (dir.join("a"), dir.join("b"));
    let _ = std::fs::remove_dir_all(&dir);
    let zoo = Overrides::from_file(&zoo_toml()).expect("the RL Zoo TOML parses");
    let first = run(3, zoo, Some(a.clone()));
    let recorded = Overrides::from_file(&a.join("summary.json")).expect("summary.json reads");
    assert_eq!(
        recorded.0.get("n_envs").and_then(toml::Value::as_integer),
        Some(8)
    );
    let again = run(3, recorded, Some(b));
    assert!(first.policy_crc32.is_some());
    assert_eq!(again.policy_crc32, first.policy_crc32);
    assert_eq!(again.solved_at_step, first.solved_at_step);
    let _ = std::fs::remove_dir_all(&dir);
}
