//! Prints fingerprints of trained weights: the same on every target and build.
//!
//! microrl's arithmetic is written to give the same bits everywhere: libm
//! instead of the platform's maths, no fused multiply-add (Rust never
//! contracts `a * b + c`), fixed summation orders that do not depend on the
//! SIMD width, and batched passes with the per-sample bits. This example trains
//! two agents for a fixed number of updates from seed 0 — PPO on CartPole
//! (categorical actor, 64-wide networks) and PPO on Pendulum (Gaussian
//! actor) — and prints an FNV-1a hash of each one's weights and of its last
//! update's diagnostics. Build it with other code generation and compare:
//!
//! ```text
//! cargo run --release -p microrl --example bit_identity
//! RUSTFLAGS="-C target-cpu=x86-64-v3" cargo run --release -p microrl --example bit_identity --target-dir target/avx2
//! ```
//!
//! The workspace test `tests/tests/simd_identity.rs` does exactly that (the
//! baseline x86-64 build against an AVX2 + FMA build); the firmware tests
//! compare the desktop with a Cortex-M4F.

use microrl::algo::{Cursor, PpoConfig, UpdateStats};
use microrl::env::{CartPole, Pendulum};
use microrl::{Params, agent};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

/// Updates per agent.
const UPDATES: usize = 12;

/// FNV-1a over the bits of every parameter, then of the diagnostics.
fn fingerprint<P: Params>(params: &P, stats: &UpdateStats) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |x: f32| {
        for b in x.to_bits().to_le_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for t in 0..P::TENSORS {
        params.tensor(t).iter().for_each(|&x| eat(x));
    }
    let s = stats;
    for x in [
        s.policy_loss,
        s.value_loss,
        s.entropy,
        s.approx_kl,
        s.clip_fraction,
        s.grad_norm,
    ] {
        eat(x);
    }
    h
}

/// `UPDATES` PPO iterations (collect, update) of `Agent` on `env`, seed 0.
macro_rules! train {
    ($agent:ty, $env:expr, $config:expr) => {{
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(0);
        let mut env = $env;
        let mut agent = Box::new(<$agent>::new($config));
        agent.init(&env, &mut rng).expect("valid configuration");
        let mut cursor = Cursor::start(&mut env, &mut rng);
        let mut stats = UpdateStats::default();
        for _ in 0..UPDATES {
            agent
                .collect(&mut env, &mut cursor, &mut rng, |_| {})
                .expect("collect");
            stats = agent.update(&mut rng).expect("update");
        }
        fingerprint(&agent.train.params, &stats)
    }};
}

fn main() {
    let cartpole = train!(agent::Ppo<CartPole, 64, 256>, CartPole::new(), PpoConfig::CARTPOLE);
    let pendulum = train!(
        agent::Ppo<Pendulum, 64, 512>,
        Pendulum::new(),
        PpoConfig {
            minibatches: 8,
            ..PpoConfig::DEFAULT
        }
    );
    println!("cartpole-ppo {cartpole:016x}");
    println!("pendulum-ppo {pendulum:016x}");
}
