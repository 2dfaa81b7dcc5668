//! PPO learns CartPole from scratch on the MCU.
//!
//! Everything is sized at compile time: a 4-32-32-2 categorical actor, a
//! 4-32-32-1 critic, their gradients and Adam moments, and a 256-step rollout,
//! all inside one [`Ppo`] value in a `static` ([`ConstStaticCell`] holding
//! `Ppo::ZEROED`, so it sits in `.bss`: no flash image, no stack temporary; no
//! allocator, no `static mut`, no `unsafe`). The CartPole simulation runs on the
//! MCU too.
//!
//! The protocol is `microrl train --small` (the desktop harness) step for
//! step: the same seeds and RNG streams, collect 256 steps, one PPO update
//! (`PpoConfig::CARTPOLE`: 10 epochs × 4 minibatches), then a 10-episode
//! deterministic evaluation, and when that reaches 475 the deciding
//! 100-episode one. So the update at which the MCU solves the task, its
//! evaluation and the learned weights are the desktop's, bit for bit — the
//! host test `firmware_train_ppo_matches_desktop` checks exactly that.
//!
//! Logs one line per update and exits 0 as soon as the 100-episode
//! deterministic evaluation reaches 475; exits 1 if the step budget runs out
//! first, or on any error.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use cortex_m_rt::entry;
use microrl::algo::Cursor;
use microrl::algo::ppo::{Ppo, PpoConfig};
use microrl::env::{CartPole, Env};
use microrl::nn::Mlp;
use microrl::policy::CategoricalPolicy;
use microrl_firmware::{
    EVAL_EPISODES, eval_seed, evaluate_gated, exit, log_stack, ok_or_exit, params_fnv,
};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;
use static_cell::ConstStaticCell;

/// 4-32-32-2 tanh MLP producing the two action logits.
type Actor = CategoricalPolicy<Mlp<4, 32, 2>>;
/// 4-32-32-1 tanh MLP, the state value.
type Critic = Mlp<4, 32, 1>;
/// Steps per rollout (one PPO update per rollout).
const ROLLOUT: usize = 256;
type Agent = Ppo<Actor, Critic, 4, ROLLOUT>;

const SEED: u64 = 0;
/// Step budget; the learning rate and clip range anneal to zero over it.
const TOTAL_STEPS: u64 = 100_000;
const CONFIG: PpoConfig = PpoConfig {
    total_steps: TOTAL_STEPS,
    ..PpoConfig::CARTPOLE
};
/// Evaluation return that counts as solved.
const THRESHOLD: f32 = CartPole::SOLVED_RETURN;

/// The agent: parameters, gradients, Adam moments, rollout and normalisers.
static AGENT: ConstStaticCell<Agent> = ConstStaticCell::new(Agent::ZEROED);

#[entry]
fn main() -> ! {
    let agent = AGENT.take();
    agent.config = CONFIG;
    defmt::info!(
        "ppo: cartpole, actor 4-32-32-2, critic 4-32-32-1, rollout {=usize}, agent {=usize} bytes static",
        ROLLOUT,
        core::mem::size_of::<Agent>()
    );
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(SEED);
    let mut eval_rng = Xoshiro128PlusPlus::seed_from_u64(eval_seed(SEED));
    ok_or_exit(agent.init(&mut rng), "init");
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let mut cursor = Cursor::start(&mut env, &mut rng);

    let mut updates = 0u32;
    while agent.steps < TOTAL_STEPS {
        let (mut episodes, mut return_sum) = (0u32, 0.0f32);
        let collected = agent.collect(&mut env, &mut cursor, &mut rng, |e| {
            episodes += 1;
            return_sum += e.ret;
        });
        ok_or_exit(collected, "collect");
        let stats = ok_or_exit(agent.update(&mut rng), "update");
        updates += 1;

        // The agent acts with its current actor and observation statistics
        // (`Act`), exactly as its exported `policy()` would, without a copy.
        let eval = evaluate_gated(&*agent, &mut eval_env, THRESHOLD, &mut eval_rng);
        let eval = ok_or_exit(eval, "evaluate");
        defmt::info!(
            "update {=u32} steps {=u64}: train return {=f32} ({=u32} episodes) eval {=f32} approx_kl {=f32} clip_fraction {=f32} explained_variance {=f32}",
            updates,
            agent.steps,
            if episodes > 0 {
                return_sum / episodes as f32
            } else {
                f32::NAN
            },
            episodes,
            eval.quick,
            stats.approx_kl,
            stats.clip_fraction,
            stats.explained_variance
        );
        if let Some((mean, std)) = eval.full {
            defmt::info!(
                "eval {=u32} episodes: {=f32} ({=u32:#010x}) ± {=f32}",
                EVAL_EPISODES,
                mean,
                mean.to_bits(),
                std
            );
        }
        if eval.solved(THRESHOLD) {
            let mean = eval.full.map_or(f32::NAN, |(mean, _)| mean);
            defmt::info!(
                "solved: step {=u64} updates {=u32} eval {=f32} ({=u32:#010x}) policy_fnv {=u32:#010x}",
                agent.steps,
                updates,
                mean,
                mean.to_bits(),
                params_fnv(agent.actor(), &agent.obs_norm)
            );
            log_stack();
            exit(true);
        }
    }
    defmt::error!("not solved within {=u64} steps", TOTAL_STEPS);
    log_stack();
    exit(false)
}
