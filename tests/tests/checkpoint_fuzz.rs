//! Bounded in-process fuzzing of the checkpoint loader (`Trainer::resume`):
//! 100 000 mutations of a real checkpoint — bit flips, overwritten words,
//! truncations, extensions — with the CRC-32 recomputed on half of them so
//! the header, size, value and domain checks behind the checksum are
//! reached. Every input must either resume (and then hold only finite
//! values) or be refused with the agent and the environment untouched; no
//! input may panic. (Coverage-guided: `cd fuzz && cargo +nightly fuzz run
//! resume_checkpoint`.)

use microrl::algo::PpoConfig;
use microrl::env::CartPole;
use microrl::rng::Xoshiro128pp;
use microrl::train::{RunConfig, Trainer};
use microrl::{Params, SVector, agent, serialize};
use rand_core::{Rng, SeedableRng};

type Agent = agent::Ppo<CartPole, 8, 64>;
type Run = Trainer<SVector<f32, 4>, Xoshiro128pp>;

const MUTATIONS: u32 = 100_000;

fn push<P: Params>(out: &mut Vec<u32>, p: &P) {
    for i in 0..P::TENSORS {
        out.extend(p.tensor(i).iter().map(|x| x.to_bits()));
    }
}

/// Every bit of the agent's persistent state.
fn agent_bits(a: &Agent) -> Vec<u32> {
    let mut out = Vec::new();
    push(&mut out, &a.train.params);
    push(&mut out, &a.train.optimizer.m);
    push(&mut out, &a.train.optimizer.v);
    push(&mut out, &a.obs_norm);
    push(&mut out, &a.return_norm);
    out.push(a.train.optimizer.t);
    out.push(a.discounted_return.to_bits());
    out.push(a.steps as u32);
    out.push((a.steps >> 32) as u32);
    out
}

fn checkpoint() -> Vec<u8> {
    let config = PpoConfig {
        total_steps: 2_000,
        ..PpoConfig::CARTPOLE
    };
    let mut agent = Box::new(Agent::new(config));
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let run = RunConfig {
        eval_interval: 1,
        ..RunConfig::new(2_000, 475.0)
    };
    let mut trainer = Run::start(&mut *agent, &mut env, run, 4).unwrap();
    for _ in 0..3 {
        trainer
            .iterate(&mut *agent, &mut env, &mut eval_env, &mut ())
            .unwrap();
    }
    let mut out = vec![0u8; Run::checkpoint_len::<Agent, CartPole>()];
    let len = trainer.save(&*agent, &env, &mut out).unwrap();
    out.truncate(len);
    out
}

fn mutate(blob: &mut Vec<u8>, rng: &mut Xoshiro128pp) {
    let n = blob.len();
    if n < 4 {
        blob.extend((0..4).map(|_| rng.next_u32() as u8));
        return;
    }
    match rng.next_u32() % 6 {
        0 => {
            let k = rng.next_u32() as usize % n;
            blob[k] ^= 1 << (rng.next_u32() % 8);
        }
        1 => {
            // A whole little-endian word: a count, a length, a float.
            let k = (rng.next_u32() as usize % (n / 4)) * 4;
            let word = match rng.next_u32() % 5 {
                0 => 0,
                1 => u32::MAX,
                2 => f32::NAN.to_bits(),
                3 => f32::INFINITY.to_bits(),
                _ => rng.next_u32(),
            };
            blob[k..k + 4].copy_from_slice(&word.to_le_bytes());
        }
        2 => blob.truncate(rng.next_u32() as usize % n),
        3 => blob.extend((0..1 + rng.next_u32() % 16).map(|_| rng.next_u32() as u8)),
        4 => {
            for _ in 0..1 + rng.next_u32() % 8 {
                let k = rng.next_u32() as usize % n;
                blob[k] = rng.next_u32() as u8;
            }
        }
        _ => {
            // Header fields (the first 44 bytes).
            let k = rng.next_u32() as usize % 44.min(n);
            blob[k] = blob[k].wrapping_add(1 + (rng.next_u32() % 255) as u8);
        }
    }
}

fn fix_crc(blob: &mut [u8]) {
    if blob.len() >= 4 {
        let n = blob.len() - 4;
        let crc = serialize::crc32(&blob[..n]);
        blob[n..].copy_from_slice(&crc.to_le_bytes());
    }
}

#[test]
fn mutated_checkpoints_never_panic_and_never_touch_the_destination() {
    let good = checkpoint();
    let config = PpoConfig {
        total_steps: 2_000,
        ..PpoConfig::CARTPOLE
    };
    let mut rng = Xoshiro128pp::seed_from_u64(17);
    let (mut resumed, mut refused) = (0u32, 0u32);
    let mut agent = Box::new(Agent::new(config));
    let fresh = agent_bits(&agent);
    let mut env = CartPole::new();
    for k in 0..MUTATIONS {
        let mut blob = good.clone();
        for _ in 0..1 + rng.next_u32() % 3 {
            mutate(&mut blob, &mut rng);
        }
        if k % 2 == 0 {
            fix_crc(&mut blob);
        }
        let env_before = env;
        match Run::resume(&mut *agent, &mut env, &blob) {
            Ok(_) => {
                resumed += 1;
                assert!(agent.train.params.is_finite());
                assert!(agent.train.optimizer.m.is_finite());
                assert!(agent.train.optimizer.v.is_finite());
                assert!(agent.obs_norm.check_domain().is_ok());
                // Back to a fresh destination for the next input.
                *agent = Agent::new(config);
                env = CartPole::new();
            }
            Err(_) => {
                refused += 1;
                assert_eq!(agent_bits(&agent), fresh, "input {k}: agent changed");
                assert_eq!(env, env_before, "input {k}: environment changed");
            }
        }
    }
    println!("{MUTATIONS} mutated checkpoints: {resumed} resumed, {refused} refused");
    assert!(refused > MUTATIONS / 2);
    // The unmutated checkpoint resumes.
    Run::resume(&mut *agent, &mut env, &good).unwrap();
}
