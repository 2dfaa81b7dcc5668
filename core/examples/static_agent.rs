//! The whole learning agent in a `static`, the way firmware holds it: no heap,
//! no `Box`, no `Vec`, and never a copy of the agent on the stack.
//!
//! Networks, gradients, Adam moments, the rollout and the observation
//! statistics are one fixed-size value. `Agent::ZERO` is all zero bytes, so the
//! `static` lands in `.bss`: zeroed at start-up, no bytes in the image
//! (`nm -C` lists `AGENT` as `b`). `Agent::new(config)` is `const` too, but its
//! non-zero configuration puts the whole agent in `.data`, ~55 KB of image.
//! On a microcontroller the cell would be `static_cell::ConstStaticCell` or
//! `critical_section::Mutex<RefCell<_>>`; on the desktop, std's `Mutex` (whose
//! `new` is `const`) does it without `unsafe`.
//!
//! `cargo run --release -p microrl --example static_agent` trains CartPole to
//! its solved threshold (exits non-zero if it does not).

use microrl::agent;
use microrl::algo::{PpoConfig, UpdateStats};
use microrl::env::{CartPole, Env};
use microrl::train::{Evaluation, Hooks, RunConfig, Trainer};
use rand_xoshiro::Xoshiro128PlusPlus;
use std::sync::Mutex;

/// 4-32-32-2 actor, 4-32-32-1 critic, a 256-step rollout.
type Agent = agent::Ppo<CartPole, 32, 256>;

/// The agent, zeroed; `main` sets its configuration, `Trainer::start` initialises it in place.
static AGENT: Mutex<Agent> = Mutex::new(Agent::ZERO);

const STEPS: u64 = 50_000;
/// Evaluate (and log) every five 256-step rollouts.
const EVERY: u64 = 5 * 256;

/// Logs the update diagnostics and the evaluations.
struct Log;
impl Hooks<UpdateStats> for Log {
    fn on_update(&mut self, steps: u64, s: &UpdateStats) {
        if steps.is_multiple_of(EVERY) {
            let (kl, entropy, ev) = (s.approx_kl, s.entropy, s.explained_variance);
            println!("{steps:>6} steps: kl {kl:.4}, entropy {entropy:.3}, explained var {ev:.2}");
        }
    }
    fn on_evaluation(&mut self, e: &Evaluation) {
        let (kind, mean, episodes) = (e.kind, e.mean, e.episodes);
        println!(
            "{:>6} steps: {kind:?} evaluation {mean:.1} ({episodes} episodes)",
            e.step
        );
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut agent = AGENT.lock().map_err(|_| "agent lock poisoned")?;
    agent.config = PpoConfig {
        total_steps: STEPS,
        ..PpoConfig::CARTPOLE
    };
    let run = RunConfig {
        eval_interval: EVERY,
        ..RunConfig::new(STEPS, CartPole::SOLVED_RETURN)
    };
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    // The trainer borrows the agent for each call; the agent never moves.
    let mut trainer = Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, run, 0)?;
    let outcome = trainer.run(&mut *agent, &mut env, &mut eval_env, &mut Log)?;

    let on_stack = 0u8;
    let (bytes, at) = (size_of::<Agent>(), &*agent as *const Agent);
    println!(
        "agent: {bytes} bytes in the static at {at:p} (the stack is near {:p})",
        &on_stack
    );
    let (steps, report) = (outcome.steps, outcome.report.mean);
    if !outcome.solved(CartPole::SOLVED_RETURN) {
        return Err(format!("not solved in {steps} steps (held-out return {report:.1})").into());
    }
    println!("solved after {steps} steps: held-out return {report:.1}");
    Ok(())
}
