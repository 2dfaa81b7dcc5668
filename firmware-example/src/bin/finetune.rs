//! KL-anchored fine-tuning on the MCU: a policy validated on the desktop
//! meets a changed plant and keeps learning on the device.
//!
//! The reference is the exported desktop policy `policies/cartpole-small.mrlp`
//! (4-32-32-2, `microrl train --small`), read from flash into the agent's
//! frozen [`reference`](microrl::algo::Anchored::reference). The plant is
//! CartPole with a control loop four times slower (`tau = 0.08` s instead of
//! 0.02 s), on which the reference balances for only ~100 steps.
//!
//! Two fine-tuning runs, each started from the reference
//! ([`Anchored::init`](microrl::algo::Anchored::init) copies its actor and
//! observation statistics; the critic starts fresh):
//! - `β = 0`: plain PPO from the reference;
//! - `β = 1`: every step's reward is charged `β·(log π − log π_ref)`, so
//!   the policy adapts while staying close to the validated one.
//!
//! Each run is the core's [`Trainer`] with the protocol of
//! `microrl train --small --plant tau=0.08 --kl-ref policies/cartpole-small.mrlp
//! --kl-beta β --steps 20000 --no-early-stop` on the desktop (same seeds and
//! evaluations, the whole 20 000-step budget), so the host test
//! (`finetune_recovers_like_the_desktop`) requires the same solving step,
//! reported evaluation, weights and KL, bit for bit.
//!
//! Logs, per run: the progress lines ([`Log`]), then
//! `finetune: beta <β> reference <return> (<bits>) solved <bool> step <first
//! passing step> updates <n> eval <return> (<bits>) kl <mean per-step KL of
//! the last rollout> (<bits>) policy_fnv <checksum>`. The reference's return is its 100-episode
//! evaluation on the changed plant from the report stream's start states —
//! the very states the fine-tuned policy's reported evaluation uses. Exits 0
//! iff both runs solve the changed plant.
//!
//! The agent (`agent::Anchored<CartPole, 32, 256>`: PPO's training state
//! plus the 5 KB reference) is one `static`; the second run re-initialises
//! it in place ([`Ppo::init`](microrl::algo::Ppo::init) resets every
//! weight, moment, normaliser, counter and the rollout).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use core::ops::ControlFlow;

use cortex_m_rt::entry;
use microrl::algo::{AnchorConfig, Episode, PpoConfig, UpdateStats, evaluate};
use microrl::env::{CartPole, CartPoleParams, Env};
use microrl::train::{Evaluation, Hooks, Progress, RunConfig, Trainer, report_seed};
use microrl::{agent, serialize};
use microrl_firmware::{Log, exit, log_stack, ok_or_exit, params_fnv};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;
use static_cell::ConstStaticCell;

type Agent = agent::Anchored<CartPole, 32, 256>;

/// The validated desktop policy, in flash.
static REFERENCE: &[u8] = include_bytes!("../../policies/cartpole-small.mrlp");

/// The changed plant: the control loop runs every 80 ms instead of 20 ms.
const PLANT: CartPoleParams = CartPoleParams {
    tau: 0.08,
    ..CartPoleParams::DEFAULT
};

/// `β` of the two runs: plain PPO, then anchored.
const BETAS: [f32; 2] = [0.0, 1.0];

const SEED: u64 = 0;
/// `microrl train --small --steps 20000 --no-early-stop`'s run: an
/// evaluation after every rollout until solved, then every 10 000 steps; the
/// whole budget is spent, so both runs' KL is measured after the same
/// number of updates.
const RUN: RunConfig = RunConfig {
    eval_interval: 1,
    early_stop: false,
    ..RunConfig::new(20_000, CartPole::SOLVED_RETURN)
};

static AGENT: ConstStaticCell<Agent> = ConstStaticCell::new(Agent::ZERO);

/// [`Log`], keeping the last update's mean per-step KL to the reference.
struct Anchoring {
    log: Log<UpdateStats>,
    kl: f32,
}

impl Hooks<UpdateStats> for Anchoring {
    fn on_episode(&mut self, episode: Episode) {
        self.log.on_episode(episode);
    }

    fn on_update(&mut self, steps: u64, stats: &UpdateStats) {
        self.kl = stats.kl_reference;
        self.log.on_update(steps, stats);
    }

    fn on_evaluation(&mut self, evaluation: &Evaluation) {
        self.log.on_evaluation(evaluation);
    }

    fn on_iteration(&mut self, progress: &Progress) -> ControlFlow<()> {
        self.log.on_iteration(progress)
    }
}

#[entry]
fn main() -> ! {
    let agent = AGENT.take();
    let plant = ok_or_exit(CartPole::with_params(PLANT), "plant");
    defmt::info!(
        "finetune: cartpole tau {=f64} s, reference {=usize} bytes, agent {=usize} bytes static",
        PLANT.tau,
        REFERENCE.len(),
        size_of::<Agent>()
    );
    let mut all_solved = true;
    for beta in BETAS {
        ok_or_exit(
            serialize::load(&mut agent.reference, REFERENCE),
            "reference",
        );
        agent.anchor = AnchorConfig {
            kl_coef: beta,
            kl_target: None,
        };
        // The reference's observation statistics stay frozen (`microrl train
        // --kl-ref` sets the same): the fine-tuned policy starts as exactly
        // the reference's function of the raw observation.
        agent.ppo.config = PpoConfig {
            total_steps: RUN.total_steps,
            normalize_obs: false,
            ..PpoConfig::CARTPOLE
        };
        let (mut env, mut eval_env) = (plant, plant);
        // The reference on the changed plant, on the reported evaluation's
        // start states.
        let mut report_rng = Xoshiro128PlusPlus::seed_from_u64(report_seed(SEED));
        let before = evaluate(
            &agent.reference,
            &mut eval_env,
            RUN.report_episodes,
            &mut report_rng,
        );
        let (before, _) = ok_or_exit(before, "reference evaluation");

        let trainer = Trainer::<_, Xoshiro128PlusPlus>::start(agent, &mut env, RUN, SEED);
        let mut trainer = ok_or_exit(trainer, "start");
        let mut hooks = Anchoring {
            log: Log::every(1),
            kl: f32::NAN,
        };
        let outcome = trainer.run(agent, &mut env, &mut eval_env, &mut hooks);
        let outcome = ok_or_exit(outcome, "fine-tuning");
        let solved = outcome.solved(RUN.threshold);
        all_solved &= solved;
        defmt::info!(
            "finetune: beta {=f32} reference {=f32} ({=u32:#010x}) solved {=bool} step {=u64} updates {=u64} eval {=f32} ({=u32:#010x}) kl {=f32} ({=u32:#010x}) policy_fnv {=u32:#010x}",
            beta,
            before,
            before.to_bits(),
            solved,
            outcome.solved_at_step.unwrap_or(outcome.steps),
            outcome.updates,
            outcome.report.mean,
            outcome.report.mean.to_bits(),
            hooks.kl,
            hooks.kl.to_bits(),
            params_fnv(agent.ppo.actor(), &agent.ppo.obs_norm)
        );
    }
    log_stack();
    exit(all_solved)
}
