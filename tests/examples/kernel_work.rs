//! Fixed amounts of kernel work, for CPU-time comparisons between builds.
//!
//! Wall-clock benchmarks (`benches/core.rs`, criterion) are the micro
//! figures; on a shared machine they wobble with the neighbours' load. This
//! binary does a fixed amount of one kind of work and nothing else, so its
//! CPU time (user + sys, from `/usr/bin/time`) compares two builds — e.g.
//! baseline x86-64 against `-C target-cpu=x86-64-v3`, or two commits — run
//! alternately on one pinned core:
//!
//! ```sh
//! cargo build --release -p microrl-tests --example kernel_work
//! /usr/bin/time -f "%U %S" taskset -c 1 target/release/examples/kernel_work update 300
//! ```
//!
//! Modes (`kernel_work MODE REPS`):
//! - `forward`: 64 per-sample forward passes of a 4-64-64-2 network, `REPS` times;
//! - `minibatch`: the batched training passes (forward + backward) of a
//!   64-sample minibatch through a 4-64-64-2 network in chunks of 8, `REPS` times;
//! - `update`: `REPS` × (collect a 256-step CartPole rollout, one PPO update:
//!   10 epochs × 4 minibatches of 64 through the 4-64-64-2 actor and the
//!   4-64-64-1 critic, Adam) — 2 560 gradient-samples of about 53 kFLOP each
//!   per update (2 FLOP per multiply-add of the forward, weight-gradient and
//!   input-gradient passes);
//! - `collect`: the same rollouts without the updates (subtract it from
//!   `update` for the update alone);
//! - `rlzoo-update` / `rlzoo-collect`: the same with RL Zoo's CartPole-v1
//!   shape (`std-harness/benches/peers/microrl_cartpole_rlzoo.toml`): 8
//!   environment copies × 32 steps, one minibatch of 256, 20 epochs, the
//!   harness's 32-sample chunks — 5 120 gradient-samples of 52 352 FLOP each
//!   per update, so `REPS` updates are `REPS × 268.0` MFLOP.

use std::hint::black_box;

use microrl::Params;
use microrl::SVector;
use microrl::algo::{Cursor, Ppo, PpoConfig};
use microrl::env::CartPole;
use microrl::nn::{Layer, Mlp, Zeroed, gain};
use microrl::policy::CategoricalActor;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

type Agent = Ppo<CategoricalActor<Mlp<4, 64, 2>>, Mlp<4, 64, 1>, 4, 256>;
type Net = Mlp<4, 64, 2>;

/// 64 fixed observations.
fn inputs() -> Vec<SVector<f32, 4>> {
    (0..64)
        .map(|k| SVector::<f32, 4>::from_fn(|i, _| ((k * 7 + i * 3) % 11) as f32 * 0.1 - 0.5))
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(Ok(reps))) = (args.get(1), args.get(2).map(|r| r.parse::<usize>()))
    else {
        eprintln!(
            "usage: kernel_work forward|minibatch|update|collect|rlzoo-update|rlzoo-collect REPS"
        );
        std::process::exit(2);
    };
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(1);
    let mut net = Net::ZERO;
    net.init_orthogonal(&mut rng, gain::HIDDEN, gain::POLICY);
    match mode.as_str() {
        "forward" => {
            let inputs = inputs();
            let mut sum = 0.0f32;
            for _ in 0..reps {
                for x in &inputs {
                    sum += black_box(&net).forward(black_box(x))[0];
                }
            }
            black_box(sum);
        }
        "minibatch" => {
            let inputs = inputs();
            let mut grad = Net::ZERO;
            let mut batch = Box::new(<<Net as Layer>::Batch<8> as Zeroed>::ZERO);
            let d_out = SVector::<f32, 2>::new(0.1, -0.1);
            for _ in 0..reps {
                for chunk in inputs.chunks(8) {
                    let n = chunk.len();
                    Net::batch_inputs(&mut batch)[..n].copy_from_slice(black_box(chunk));
                    net.forward_batch(&mut batch, n);
                    Net::batch_d_outputs(&mut batch)[..n].fill(black_box(d_out));
                    net.backward_batch(&mut batch, n, &mut grad, None);
                }
            }
            black_box(&grad);
        }
        "update" | "collect" => {
            let config = PpoConfig {
                epochs: 10,
                minibatches: 4,
                ..PpoConfig::DEFAULT
            };
            ppo_rounds::<1>(config, reps, mode == "update", &mut rng);
        }
        "rlzoo-update" | "rlzoo-collect" => {
            let config = PpoConfig {
                epochs: 20,
                minibatches: 1,
                n_envs: 8,
                n_steps: 32,
                gamma: 0.98,
                gae_lambda: 0.8,
                ent_coef: 0.0,
                vf_coef: 1.0,
                ..PpoConfig::DEFAULT
            };
            ppo_rounds::<8>(config, reps, mode == "rlzoo-update", &mut rng);
        }
        _ => {
            eprintln!(
                "unknown mode {mode}: forward|minibatch|update|collect|rlzoo-update|rlzoo-collect"
            );
            std::process::exit(2);
        }
    }
}

/// `reps` × (collect a rollout from `N_ENVS` CartPole copies, then one PPO
/// update unless `update` is false, when the rollout is dropped instead).
fn ppo_rounds<const N_ENVS: usize>(
    config: PpoConfig,
    reps: usize,
    update: bool,
    rng: &mut Xoshiro128PlusPlus,
) {
    let mut agent = Box::new(Agent::new(config));
    let mut envs = [CartPole::new(); N_ENVS];
    agent.init(&envs[0], rng).expect("init");
    let mut cursors: [Cursor<SVector<f32, 4>>; N_ENVS] =
        core::array::from_fn(|k| Cursor::start(&mut envs[k], rng));
    for _ in 0..reps {
        agent
            .collect_envs(&mut envs, &mut cursors, rng, |_| {})
            .expect("collect");
        if update {
            black_box(agent.update(rng).expect("update"));
        } else {
            agent.rollout.clear();
        }
    }
}
