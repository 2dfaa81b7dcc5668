//! Online one-step actor-critic learns CartPole on the MCU, with the smallest
//! memory of the learners: no rollout buffer, only the two networks, their
//! gradients and Adam moments, in one [`ActorCritic`] value in a `static`
//! ([`ConstStaticCell`] holding `ActorCritic::ZEROED`, so it sits in `.bss`).
//!
//! Every environment step is one update (TD error `δ = r + γ V(s') − V(s)`,
//! critic on `½ δ²`, actor on `−δ log π(a|s)`; Sutton & Barto 2018, §13.5).
//! The protocol is `microrl train --algo ac --small` step for step: the same
//! seeds and RNG streams, a 10-episode deterministic evaluation every 1 000
//! steps and the deciding 100-episode one when that reaches 475. Logs progress
//! after each block and the final evaluation; exits 0 when the 100-episode
//! evaluation reaches 475, 1 if the budget runs out first or on any error.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use cortex_m_rt::entry;
use microrl::algo::{AcConfig, ActorCritic, Cursor, evaluate};
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
type Agent = ActorCritic<Actor, Critic, 4>;

const SEED: u64 = 0;
/// Step budget.
const TOTAL_STEPS: u64 = 60_000;
/// Online steps between evaluations.
const BLOCK: u64 = 1_000;
const CONFIG: AcConfig = AcConfig {
    total_steps: TOTAL_STEPS,
    ..AcConfig::DEFAULT
};
/// Evaluation return that counts as solved.
const THRESHOLD: f32 = CartPole::SOLVED_RETURN;

/// The agent: both networks with gradients and Adam moments, and the
/// observation statistics.
static AGENT: ConstStaticCell<Agent> = ConstStaticCell::new(Agent::ZEROED);

#[entry]
fn main() -> ! {
    let agent = AGENT.take();
    agent.config = CONFIG;
    defmt::info!(
        "ac: cartpole, actor 4-32-32-2, critic 4-32-32-1, agent {=usize} bytes static",
        core::mem::size_of::<Agent>()
    );
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(SEED);
    let mut eval_rng = Xoshiro128PlusPlus::seed_from_u64(eval_seed(SEED));
    ok_or_exit(agent.init(&mut rng), "init");
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let mut cursor = Cursor::start(&mut env, &mut rng);

    let mut solved = None;
    let (mut mean, mut std) = (f32::NAN, f32::NAN);
    while agent.steps < TOTAL_STEPS {
        let (mut episodes, mut return_sum) = (0u32, 0.0f32);
        for _ in 0..BLOCK {
            let step = agent.step(&mut env, &mut cursor, &mut rng, |e| {
                episodes += 1;
                return_sum += e.ret;
            });
            ok_or_exit(step, "step");
        }
        let eval = evaluate_gated(&*agent, &mut eval_env, THRESHOLD, &mut eval_rng);
        let eval = ok_or_exit(eval, "evaluate");
        defmt::info!(
            "steps {=u64}: train return {=f32} ({=u32} episodes) eval {=f32}",
            agent.steps,
            if episodes > 0 {
                return_sum / episodes as f32
            } else {
                f32::NAN
            },
            episodes,
            eval.quick
        );
        if let Some(full) = eval.full {
            (mean, std) = full;
        }
        if eval.solved(THRESHOLD) {
            solved = Some(agent.steps);
            break;
        }
    }
    if solved.is_none() {
        let full = evaluate(&*agent, &mut eval_env, EVAL_EPISODES, &mut eval_rng);
        (mean, std) = ok_or_exit(full, "evaluate");
    }
    defmt::info!(
        "final eval {=u32} episodes: {=f32} ({=u32:#010x}) ± {=f32} after {=u64} steps, policy_fnv {=u32:#010x}",
        EVAL_EPISODES,
        mean,
        mean.to_bits(),
        std,
        agent.steps,
        params_fnv(&agent.actor.params, &agent.obs_norm)
    );
    log_stack();
    match solved {
        Some(step) => {
            defmt::info!("solved: step {=u64}", step);
            exit(true)
        }
        None => {
            defmt::error!("not solved within {=u64} steps", TOTAL_STEPS);
            exit(false)
        }
    }
}
