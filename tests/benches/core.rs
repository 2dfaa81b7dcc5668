//! Criterion benchmarks of microrl's hot paths on the host CPU.
//!
//! What is measured (one call each, `std::hint::black_box` around inputs and
//! outputs so nothing is optimised away):
//!
//! - `forward/<size>`: inference, [`Layer::forward`] of one observation.
//! - `backward/<size>`: one training sample, `forward_train` then `backward`
//!   accumulating into a gradient (what every algorithm does per sample).
//! - `backward_only/<size>`: `backward` alone, on a cache recorded once.
//! - `minibatch_64/<size>/…`: a 64-sample minibatch's training passes
//!   (forward with cache, backward into one gradient): `per_sample` loops
//!   `forward_train` + `backward`; `batched_64` and `batched_8` run
//!   [`Layer::forward_batch`] + [`Layer::backward_batch`] over chunks of 64
//!   and 8 samples (the same gradient bits).
//! - `ppo_update/cartpole_64`: one [`Ppo::update`] on a full 256-step CartPole
//!   rollout (10 epochs × 4 minibatches: 2 560 actor + critic samples and 40
//!   Adam steps). The same rollout is reused every iteration: the weights
//!   change, the amount of work does not.
//! - `ppo_collect/cartpole_64`: one [`Ppo::collect`] of 256 environment steps
//!   (policy sampling, critic values, observation normalisation, GAE).
//! - `gae/256`: [`Rollout::compute_advantages`](microrl::algo::Rollout::compute_advantages)
//!   over a 256-step rollout.
//! - `env_step/cartpole`, `env_step/pendulum`: one [`Env::step`], resetting
//!   when an episode ends.
//!
//! Sizes: `4-64-64-2` is the CartPole policy (`Mlp<4, 64, 2>`, the SB3/CleanRL
//! default) and `4-32-32-2` the smaller network used on microcontrollers
//! (`Mlp<4, 32, 2>`). All networks use tanh hidden activations.
//!
//! Run (about a minute; measurement times are short on purpose):
//!
//! ```text
//! cargo bench -p microrl-tests --bench core
//! # with the polynomial tanh/exp of microrl::math::fast instead of libm:
//! cargo bench -p microrl-tests --bench core --features microrl/fast-math
//! ```
//!
//! (`--features fast-math` on this crate is the same pass-through.) Cargo
//! unifies features, so any dependency that enables `microrl/fast-math` turns
//! it on here too; `microrl-harness` (a dependency of this crate) currently
//! does, so both commands measure the fast maths until it stops. The bench
//! prints which `tanh`/`exp` it runs with. Results, including the medians, land
//! in `target/criterion/<group>/<name>/new/estimates.json`. These are host
//! numbers: they rank changes, they do not predict MCU timings.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use microrl::Params;
use microrl::SVector;
use microrl::algo::{Cursor, Ppo, PpoConfig};
use microrl::env::{CartPole, Env, Pendulum};
use microrl::nn::{Layer, Mlp, Zeroed, gain};
use microrl::policy::CategoricalActor;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

type Agent = Ppo<CategoricalActor<Mlp<4, 64, 2>>, Mlp<4, 64, 1>, 4, 256>;

/// A plausible CartPole observation.
const OBS: [f32; 4] = [0.02, -0.15, 0.03, 0.2];

fn rng() -> Xoshiro128PlusPlus {
    Xoshiro128PlusPlus::seed_from_u64(0)
}

/// An orthogonally initialised `4 → H → H → 2` policy network, boxed (the
/// 64-wide one is 18 KiB).
fn net<const H: usize>() -> Box<Mlp<4, H, 2>> {
    let mut net = Box::new(Mlp::<4, H, 2>::ZERO);
    net.init_orthogonal(&mut rng(), gain::HIDDEN, gain::POLICY);
    net
}

fn bench_network<const H: usize>(c: &mut Criterion, size: &str) {
    let obs = SVector::<f32, 4>::from(OBS);
    let d_out = SVector::<f32, 2>::new(0.1, -0.1);
    let net = net::<H>();

    c.benchmark_group("forward").bench_function(size, |b| {
        b.iter(|| black_box(&*net).forward(black_box(&obs)));
    });

    let mut grad = Box::new(Mlp::<4, H, 2>::ZERO);
    let mut cache = Mlp::<4, H, 2>::ZERO_CACHE;
    c.benchmark_group("backward").bench_function(size, |b| {
        b.iter(|| {
            let net = black_box(&*net);
            net.forward_train(black_box(&obs), &mut cache);
            net.backward(&cache, black_box(&d_out), &mut grad)
        });
    });

    // A 64-sample minibatch: per-sample passes, then the batched passes in
    // chunks of 64 and of 8 (the same gradient, bit for bit).
    let inputs: Vec<SVector<f32, 4>> = (0..64)
        .map(|k| SVector::<f32, 4>::from(OBS) * (1.0 + 0.01 * k as f32))
        .collect();
    let mut group = c.benchmark_group("minibatch_64");
    group.bench_function(format!("{size}/per_sample"), |b| {
        b.iter(|| {
            let net = black_box(&*net);
            for x in &inputs {
                net.forward_train(black_box(x), &mut cache);
                net.backward(&cache, black_box(&d_out), &mut grad);
            }
        });
    });
    bench_batched::<H, 64>(
        &mut group,
        &format!("{size}/batched_64"),
        &net,
        &inputs,
        &mut grad,
    );
    bench_batched::<H, 8>(
        &mut group,
        &format!("{size}/batched_8"),
        &net,
        &inputs,
        &mut grad,
    );
    group.finish();

    net.forward_train(&obs, &mut cache);
    c.benchmark_group("backward_only")
        .bench_function(size, |b| {
            b.iter(|| black_box(&*net).backward(black_box(&cache), black_box(&d_out), &mut grad));
        });
    black_box(&grad);
}

/// The batched passes over `inputs` in chunks of `BATCH` samples.
fn bench_batched<const H: usize, const BATCH: usize>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    net: &Mlp<4, H, 2>,
    inputs: &[SVector<f32, 4>],
    grad: &mut Mlp<4, H, 2>,
) {
    let d_out = SVector::<f32, 2>::new(0.1, -0.1);
    let mut batch = Box::new(<<Mlp<4, H, 2> as Layer>::Batch<BATCH> as Zeroed>::ZERO);
    group.bench_function(name, |b| {
        b.iter(|| {
            let net = black_box(net);
            for chunk in inputs.chunks(BATCH) {
                let n = chunk.len();
                Mlp::<4, H, 2>::batch_inputs(&mut batch)[..n].copy_from_slice(black_box(chunk));
                net.forward_batch(&mut batch, n);
                Mlp::<4, H, 2>::batch_d_outputs(&mut batch)[..n].fill(black_box(d_out));
                net.backward_batch(&mut batch, n, grad, None);
            }
        });
    });
}

/// Whether `microrl::math` runs the `fast-math` approximations (they differ
/// from libm in the last bits somewhere on any spread of inputs).
fn fast_math_enabled() -> bool {
    (1..64).all(|k| {
        let x = k as f32 * 0.093 - 3.0;
        microrl::math::tanh(x).to_bits() == microrl::math::fast::tanh(x).to_bits()
            && microrl::math::exp(x).to_bits() == microrl::math::fast::exp(x).to_bits()
    })
}

fn networks(c: &mut Criterion) {
    eprintln!(
        "microrl::math: {}",
        if fast_math_enabled() {
            "fast-math (polynomial tanh/exp)"
        } else {
            "libm tanhf/expf"
        }
    );
    bench_network::<64>(c, "4-64-64-2");
    bench_network::<32>(c, "4-32-32-2");
}

fn ppo(c: &mut Criterion) {
    let config = PpoConfig {
        epochs: 10,
        minibatches: 4,
        ..PpoConfig::DEFAULT
    };
    let mut rng = rng();
    let mut agent = Box::new(Agent::new(config));
    let mut env = CartPole::new();
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);

    c.benchmark_group("ppo_collect")
        .bench_function("cartpole_64", |b| {
            b.iter(|| {
                agent
                    .collect(&mut env, &mut cursor, &mut rng, |episode| {
                        black_box(episode);
                    })
                    .unwrap();
            });
        });

    c.benchmark_group("gae").bench_function("256", |b| {
        b.iter(|| {
            black_box(&mut agent.rollout).compute_advantages(0.0, 0.99, 0.95);
        });
    });

    // A fresh agent for the update, so the learning-rate schedule sits at the
    // start of training (collecting above advanced its step count).
    let mut agent = Box::new(Agent::new(config));
    agent.init(&env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    agent
        .collect(&mut env, &mut cursor, &mut rng, |_| {})
        .unwrap();
    let mut group = c.benchmark_group("ppo_update");
    // Tens of milliseconds per update: equal-sized samples, not a linear ramp.
    group.sampling_mode(SamplingMode::Flat).sample_size(10);
    // An update consumes its rollout: collect a fresh one (untimed) before
    // each timed update.
    group.bench_function("cartpole_64", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                agent
                    .collect(&mut env, &mut cursor, &mut rng, |_| {})
                    .unwrap();
                let start = std::time::Instant::now();
                black_box(agent.update(&mut rng).unwrap());
                total += start.elapsed();
            }
            total
        });
    });
    group.finish();
}

fn envs(c: &mut Criterion) {
    let mut group = c.benchmark_group("env_step");
    let mut rng = rng();

    let mut cartpole = CartPole::new();
    cartpole.reset(&mut rng);
    let mut t = 0usize;
    group.bench_function("cartpole", |b| {
        b.iter(|| {
            // Alternate pushes so episodes last; reset like a training loop.
            t += 1;
            let step = cartpole.step(black_box(t & 1)).unwrap();
            if step.done() {
                cartpole.reset(&mut rng);
            }
            step
        });
    });

    let mut pendulum = Pendulum::new();
    pendulum.reset(&mut rng);
    group.bench_function("pendulum", |b| {
        b.iter(|| {
            let step = pendulum
                .step(black_box(SVector::<f32, 1>::new(0.5)))
                .unwrap();
            if step.done() {
                pendulum.reset(&mut rng);
            }
            step
        });
    });
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = networks, ppo, envs
}
criterion_main!(benches);
