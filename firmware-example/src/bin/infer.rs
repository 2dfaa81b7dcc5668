//! Deterministic inference on the simulated CartPole: loads the exported
//! policy (`policies/cartpole-small.mrlp`, written by `microrl train --small`
//! and `microrl export`),
//! runs `EPISODES` episodes with the most probable action at every step and
//! logs each episode's return, length and FNV-1a checksums of the action
//! sequence and of the observations' `f32` bits. Exits 0 (QEMU status) on
//! success, non-zero on any error or panic.
//!
//! On the Cortex-M4F (hard-float ARM) it acts through the assembly kernels of
//! `microrl_firmware::kernel` (`FrozenPolicy`, with `σ = √(σ² + ε)`
//! computed once after loading), bit-identical to the core's
//! `Controller::act`, which it uses on targets without them (the Cortex-M0
//! build): the firmware test compares every episode with the desktop's.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use cortex_m_rt::entry;
#[cfg(not(all(target_arch = "arm", target_abi = "eabihf")))]
use microrl::Controller;
use microrl::env::CartPole;
use microrl::{Params, agent, serialize};
use microrl_firmware::episode::{Failed, play};
#[cfg(all(target_arch = "arm", target_abi = "eabihf"))]
use microrl_firmware::kernel;
use microrl_firmware::{Fnv1a, exit, log_stack};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

/// The harness's MCU-sized CartPole policy (`microrl train --small`): a
/// 4-32-32-2 tanh MLP producing logits, the frozen observation normaliser
/// and the (parameterless) discrete action space.
type Policy = agent::Policy<CartPole, 32>;

/// The exported blob, in flash.
static BLOB: &[u8] = include_bytes!("../../policies/cartpole-small.mrlp");

/// What acts for `policy`: on a hard-float ARM target the assembly kernels
/// (`FrozenPolicy::act`, the same bits as `Controller::act`).
#[cfg(all(target_arch = "arm", target_abi = "eabihf"))]
fn deployed(policy: &Policy) -> kernel::FrozenPolicy<'_, 4, 32, 2> {
    kernel::FrozenPolicy::new(policy)
}

/// What acts for `policy`: elsewhere (the Cortex-M0) the core's
/// `Controller::act`.
#[cfg(not(all(target_arch = "arm", target_abi = "eabihf")))]
fn deployed(policy: &Policy) -> &Policy {
    policy
}

const EPISODES: u32 = 5;
const SEED: u64 = 0;

#[entry]
fn main() -> ! {
    // The weights (1 291 f32, 5 164 bytes) live on the stack: `Policy::ZERO` is a
    // plain value and `load` overwrites it in place, so no `static mut`.
    let mut policy = Policy::ZERO;
    if let Err(e) = serialize::load(&mut policy, BLOB) {
        defmt::error!("loading the policy failed: {}", e);
        exit(false);
    }
    defmt::info!(
        "policy loaded: {=usize} bytes, {=usize} parameters",
        BLOB.len(),
        <Policy as Params>::LEN
    );

    let policy = deployed(&policy);

    let mut env = CartPole::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(SEED);
    let mut actions_all = Fnv1a::default();
    let mut obs_all = Fnv1a::default();
    let mut total = 0.0f32;

    for episode in 0..EPISODES {
        let played = match play(&mut env, &mut rng, |obs| policy.act(obs), episode) {
            Ok(played) => played,
            Err(Failed { what, step, error }) => {
                defmt::error!(
                    "episode {=u32} step {=u32}: {=str} failed: {}",
                    episode,
                    step,
                    what,
                    error
                );
                exit(false);
            }
        };
        actions_all.write_u32(played.actions.0);
        obs_all.write_u32(played.observations.0);
        total += played.ret;
    }
    defmt::info!(
        "done: {=u32} episodes, mean return {=f32}, actions_fnv {=u32:#010x} obs_fnv {=u32:#010x}",
        EPISODES,
        total / EPISODES as f32,
        actions_all.0,
        obs_all.0
    );
    log_stack();
    exit(true)
}
