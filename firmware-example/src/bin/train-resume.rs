//! A training run that survives a reset, bit for bit.
//!
//! `train-ppo`'s run (`agent::Ppo<CartPole, 32, 256>`, `PpoConfig::CARTPOLE`,
//! seed 0, an evaluation after every rollout) with the checkpointable RNG
//! `microrl::rng::Xoshiro128pp` (the same stream as `rand_xoshiro`'s
//! `Xoshiro128PlusPlus`): [`ITERATIONS`] updates, then [`Trainer::save`] into
//! a `static` byte buffer (the stand-in for a flash sector), then a simulated
//! reset — the agent zeroed in place, the trainer and both environments
//! dropped — then fresh ones, [`Trainer::resume`] from the buffer and
//! [`Trainer::run`] to the end. The `solved:` line must be `train-ppo`'s and
//! the desktop's (host test
//! `train_resume_after_reset_matches_the_uninterrupted_run`).
//!
//! Logs one line per update ([`Log`]), the checkpoint's size; exits 0 iff
//! solved.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use core::ops::ControlFlow;

use cortex_m_rt::entry;
use microrl::SVector;
use microrl::agent;
use microrl::algo::PpoConfig;
use microrl::checkpoint::checkpoint_len;
use microrl::env::CartPole;
use microrl::rng::Xoshiro128pp;
use microrl::train::{Hooks, RunConfig, Trainer};
use microrl_firmware::run::{SEED, TrainingAgent, cartpole_run, run_to_end};
use microrl_firmware::{Log, finish, ok_or_exit};
use static_cell::ConstStaticCell;

type Agent = agent::Ppo<CartPole, 32, 256>;
type Run = Trainer<SVector<f32, 4>, Xoshiro128pp>;

/// `train-ppo`'s run: budget 100 000 steps, an evaluation after every
/// rollout, early stop.
const RUN: RunConfig = cartpole_run(100_000, 1);
const CONFIG: PpoConfig = PpoConfig {
    total_steps: RUN.total_steps,
    ..PpoConfig::CARTPOLE
};
/// Updates before the reset (`train-ppo` solves after 13).
const ITERATIONS: u32 = 5;
/// Bytes of the checkpoint.
const LEN: usize = checkpoint_len::<Agent, CartPole, Xoshiro128pp>();

static AGENT: ConstStaticCell<Agent> = ConstStaticCell::new(Agent::ZERO);
/// The stand-in for a flash sector (zero: in `.bss`).
static SAVED: ConstStaticCell<[u8; LEN]> = ConstStaticCell::new([0; LEN]);

#[entry]
fn main() -> ! {
    let agent = AGENT.take();
    let saved = SAVED.take();
    agent.config = CONFIG;
    defmt::info!(
        "resume: ppo cartpole, agent {=usize} bytes static, checkpoint {=usize} bytes, reset after {=u32} updates",
        size_of::<Agent>(),
        LEN,
        ITERATIONS
    );

    // Before the reset: ITERATIONS updates, then the checkpoint.
    {
        let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
        let mut trainer = ok_or_exit(Run::start(agent, &mut env, RUN, SEED), "start");
        let mut log = Log::every(1);
        for _ in 0..ITERATIONS {
            let progress = trainer.iterate(agent, &mut env, &mut eval_env, &mut log);
            let progress = ok_or_exit(progress, "training");
            let _: ControlFlow<()> = log.on_iteration(&progress);
        }
        let written = ok_or_exit(trainer.save(agent, &env, saved), "save");
        defmt::info!(
            "checkpoint: {=usize} bytes saved at step {=u64} after {=u64} updates",
            written,
            agent.steps,
            trainer.updates
        );
    } // The trainer and both environments are dropped here.

    // The reset: every byte of the agent zero again (written in place).
    *agent = Agent::ZERO;
    agent.config = CONFIG;

    // After the reset: fresh environments, the run from the buffer.
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let mut trainer = ok_or_exit(Run::resume(agent, &mut env, saved), "resume");
    defmt::info!(
        "resumed: step {=u64} updates {=u64}",
        agent.steps,
        trainer.updates
    );
    let outcome = run_to_end(&mut trainer, agent, &mut env, &mut eval_env, 1);
    finish(&outcome, RUN.threshold, agent.policy_fnv())
}
