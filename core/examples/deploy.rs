//! Deploying a trained policy: what the firmware keeps, and what it refuses.
//!
//! Trains a small CartPole policy (the desktop's job), exports it as a
//! checksummed blob, then does what a microcontroller does with it: loads it
//! into an inference-only [`microrl::Deployed`] policy and balances the pole.
//! It also shows that the policy carries no training memory, that a corrupted
//! or mismatched blob is refused, and that a NaN sensor reading becomes an
//! error instead of a NaN actuator command.
//!
//! `cargo run --release -p microrl --example deploy` (exits non-zero on any failure).

use microrl::algo::PpoConfig;
use microrl::env::{CartPole, Env};
use microrl::train::{RunConfig, Trainer};
use microrl::{Controller, Deployed, Error, Params, SVector, agent, serialize};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

/// The training agent: 4-32-32-2 actor and 4-32-32-1 critic, Adam, a 256-step rollout.
type Agent = agent::Ppo<CartPole, 32, 256>;
/// What the firmware holds: the actor, the frozen observation statistics and
/// the action space. The same type as `agent::Policy<CartPole, 32>`.
type Policy = Deployed<Agent>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // --- Desktop: train to CartPole's solved threshold, export the blob. ---
    let mut agent = Agent::new(PpoConfig {
        total_steps: 50_000,
        ..PpoConfig::CARTPOLE
    });
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let run = RunConfig::new(50_000, CartPole::SOLVED_RETURN);
    let mut trainer = Trainer::<_, Xoshiro128PlusPlus>::start(&mut agent, &mut env, run, 0)?;
    let outcome = trainer.run(&mut agent, &mut env, &mut eval_env, &mut ())?;
    println!(
        "trained {} steps, held-out return {:.1}",
        outcome.steps, outcome.report.mean
    );
    if !outcome.solved(CartPole::SOLVED_RETURN) {
        return Err("training did not solve CartPole".into());
    }
    // A fixed-size buffer: on a device, a flash page or `include_bytes!("policy.mrlp")`.
    let mut blob = [0u8; serialize::encoded_len::<Policy>()];
    serialize::save(&agent.policy(), &mut blob)?;

    // --- Device: an all-zero policy (there a `static`, in `.bss`), filled from the blob. ---
    let mut policy = Policy::ZERO;
    serialize::load(&mut policy, &blob)?;
    // Weights and statistics only: no gradients, Adam moments, rollout or caches.
    let (bytes, params, agent_bytes) = (size_of::<Policy>(), Policy::LEN, size_of::<Agent>());
    println!(
        "blob of {} bytes -> policy: {params} parameters, {bytes} bytes",
        blob.len()
    );
    println!("(the training agent it came from: {agent_bytes} bytes)");

    // The control loop: raw sensor readings in, actuator commands out.
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(42);
    let (mut obs, mut balanced) = (env.reset(&mut rng), 0);
    loop {
        let action = policy.act(&obs)?;
        assert_eq!(action, agent.act(&obs)?); // bit for bit what the agent chose
        let step = env.step(action)?;
        balanced += 1;
        obs = step.obs;
        if step.done() {
            break;
        }
    }
    println!("deployed policy balanced the pole for {balanced} steps");

    // A single flipped bit anywhere is refused, and the loaded policy is kept.
    let before = policy.clone();
    let mut corrupt = blob;
    corrupt[blob.len() / 2] ^= 0x10;
    let refused = serialize::load(&mut policy, &corrupt);
    println!("corrupted blob: {refused:?}");
    assert_eq!(refused, Err(Error::ChecksumMismatch));
    assert!(policy == before, "a refused blob must not touch the policy");
    // So is a blob for another network: here 64 hidden units instead of 32.
    let mut wider = agent::Policy::<CartPole, 64>::ZERO;
    let wider = serialize::load(&mut wider, &blob);
    println!("blob into a 4-64-64-2 policy: {wider:?}");
    assert_eq!(wider, Err(Error::ShapeMismatch));

    // A broken sensor: NaN in, an error out (the firmware falls back to a safe command).
    let nan = SVector::<f32, 4>::new(0.0, f32::NAN, 0.0, 0.0);
    let command = policy.act(&nan);
    println!("NaN observation: {command:?}");
    assert_eq!(command, Err(Error::NonFinite));

    Ok(())
}
