//! `cargo +nightly fuzz run resume_checkpoint` (from `fuzz/`): feeds
//! arbitrary bytes, as they are and with their CRC-32 recomputed, to
//! `Trainer::resume` for a small PPO agent on CartPole.
//!
//! Checked on every input: no panic; on an error neither the agent nor the
//! environment changed; on success every restored value is finite and in
//! its domain.

#![no_main]

use libfuzzer_sys::fuzz_target;
use microrl::algo::PpoConfig;
use microrl::env::CartPole;
use microrl::rng::Xoshiro128pp;
use microrl::train::Trainer;
use microrl::{Params, SVector, agent, serialize};

type Agent = agent::Ppo<CartPole, 8, 64>;
type Run = Trainer<SVector<f32, 4>, Xoshiro128pp>;

fn bits<P: Params>(p: &P) -> Vec<u32> {
    (0..P::TENSORS)
        .flat_map(|i| p.tensor(i).iter().map(|x| x.to_bits()))
        .collect()
}

fn check(bytes: &[u8]) {
    let mut agent = Box::new(Agent::new(PpoConfig::CARTPOLE));
    let mut env = CartPole::new();
    let before = (
        bits(&agent.train.params),
        bits(&agent.obs_norm),
        agent.steps,
    );
    let env_before = env;
    match Run::resume(&mut *agent, &mut env, bytes) {
        Ok(_) => {
            assert!(agent.train.params.is_finite());
            assert!(agent.train.optimizer.v.is_finite());
            assert!(agent.obs_norm.check_domain().is_ok());
        }
        Err(_) => {
            let after = (
                bits(&agent.train.params),
                bits(&agent.obs_norm),
                agent.steps,
            );
            assert_eq!(after, before, "refused resume changed the agent");
            assert_eq!(env, env_before, "refused resume changed the environment");
        }
    }
}

fuzz_target!(|bytes: &[u8]| {
    check(bytes);
    if bytes.len() >= 4 {
        let mut fixed = bytes.to_vec();
        let n = fixed.len() - 4;
        let crc = serialize::crc32(&fixed[..n]);
        fixed[n..].copy_from_slice(&crc.to_le_bytes());
        check(&fixed);
    }
});
