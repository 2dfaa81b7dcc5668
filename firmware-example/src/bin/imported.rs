//! A policy trained with Stable-Baselines3 on the MCU: the 4-64-64-2 PPO
//! CartPole policy of `tests/fixtures/sb3/`, imported with `microrl import`
//! (`policies/sb3-cartpole.mrlp`).
//!
//! Builds for the Cortex-M4F (`mps2-an386`) and the Cortex-M0 (QEMU
//! `microbit`, `--target thumbv6m-none-eabi`: no FPU, 16 KB of RAM). The
//! 18 KB policy does not fit the M0's RAM, so it is not loaded at run time:
//! build.rs turns the policy file into a constant of the deployed type and
//! the `static` below stays in flash, used in place.
//!
//! Three parts, each one defmt line the host test parses:
//! - **parity**: the deployed action at 1 024 observations of SB3's parity
//!   fixture (768 from rollouts, 256 far out of distribution), compared
//!   with the action SB3's `predict(obs, deterministic=True)` took there;
//!   logs how many agree and an FNV-1a checksum of the action sequence;
//! - **episodes**: `EPISODES` CartPole episodes acting with the policy, as
//!   `infer` does (return bits, length, action and observation checksums),
//!   for the host to replay bit for bit;
//! - **icount** (meaningful under `-icount shift=0`): instructions of one
//!   forward pass and of one deployed command (normalise, forward, argmax),
//!   counted with SysTick against a `nop` loop of known length.
//!
//! Exits 0 iff every action agrees with SB3's.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use core::hint::black_box;

use cortex_m_rt::entry;
use microrl::env::CartPole;
use microrl::nn::Layer;
use microrl::{Controller, SVector, agent};
use microrl_firmware::episode::play;
use microrl_firmware::icount::{NOP_LOOP_INSTRUCTIONS, Ticks, nop_loop, repeat};
use microrl_firmware::{Fnv1a, exit, log_stack, ok_or_exit};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

/// The SB3 `MlpPolicy` actor: 4-64-64-2 tanh MLP, logits, frozen normaliser.
type Policy = agent::Policy<CartPole, 64>;

/// In flash: the constant build.rs generated from the imported policy file.
static POLICY: Policy = include!(concat!(env!("OUT_DIR"), "/imported_policy.rs"));

/// Observations from SB3's parity fixture: 4 little-endian `f32` each.
static OBSERVATIONS: &[u8] = include_bytes!("../../policies/sb3-cartpole-observations.bin");
/// SB3's deterministic action at each observation, one byte each.
static SB3_ACTIONS: &[u8] = include_bytes!("../../policies/sb3-cartpole-actions.bin");

const EPISODES: u32 = 2;
const SEED: u64 = 0;
/// Forward passes per instruction-count measurement.
const REPS: u32 = 64;

fn observation(bytes: &[u8]) -> SVector<f32, 4> {
    SVector::<f32, 4>::from_fn(|i, _| {
        f32::from_le_bytes([
            bytes[4 * i],
            bytes[4 * i + 1],
            bytes[4 * i + 2],
            bytes[4 * i + 3],
        ])
    })
}

#[entry]
fn main() -> ! {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        exit(false)
    };

    // Parity with SB3.
    let (mut agree, mut first_difference, mut actions) = (0u32, -1i32, Fnv1a::default());
    let n = SB3_ACTIONS.len() as u32;
    for (k, (bytes, &sb3)) in OBSERVATIONS.chunks_exact(16).zip(SB3_ACTIONS).enumerate() {
        let action = ok_or_exit(POLICY.act(&observation(bytes)), "act");
        actions.write(&[action as u8]);
        if action == usize::from(sb3) {
            agree += 1;
        } else if first_difference < 0 {
            first_difference = k as i32;
        }
    }
    defmt::info!(
        "parity: {=u32} observations, {=u32} actions equal SB3's, first difference {=i32}, actions_fnv {=u32:#010x}",
        n,
        agree,
        first_difference,
        actions.0
    );

    // Episodes, as `infer` plays them.
    let mut env = CartPole::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(SEED);
    for episode in 0..EPISODES {
        if let Err(failed) = play(&mut env, &mut rng, |obs| POLICY.act(obs), episode) {
            ok_or_exit(Err(failed.error), failed.what)
        }
    }

    // Instruction counts.
    let ticks = Ticks::start(peripherals.SYST);
    let (n1, n2) = (100_000u32, 200_000u32);
    let (t1, ()) = ticks.measure(|| nop_loop(black_box(n1)));
    let (t2, ()) = ticks.measure(|| nop_loop(black_box(n2)));
    let calibration = (NOP_LOOP_INSTRUCTIONS * u64::from(n2 - n1), t2 - t1);
    let inputs: [SVector<f32, 4>; 8] =
        core::array::from_fn(|k| observation(&OBSERVATIONS[16 * k..]));
    let (empty, ()) = ticks.measure(|| {
        repeat(REPS, |i| {
            black_box(&inputs[i as usize % 8]);
        })
    });
    let (forward, ()) = ticks.measure(|| {
        repeat(REPS, |i| {
            black_box(POLICY.actor.net.forward(black_box(&inputs[i as usize % 8])));
        })
    });
    let (command, ()) = ticks.measure(|| {
        repeat(REPS, |i| {
            let _ = black_box(POLICY.act(black_box(&inputs[i as usize % 8])));
        })
    });
    let per_op = |body: u64| {
        let (instructions, dt) = calibration;
        let total = u128::from(body.saturating_sub(empty)) * u128::from(instructions);
        let per = (total + u128::from(dt) * u128::from(REPS) / 2)
            / (u128::from(dt.max(1)) * u128::from(REPS));
        per as u64
    };
    defmt::info!(
        "icount: forward {=u64} instructions, command {=u64} instructions ({=u32} reps; {=u64} ticks, {=u64} ticks, empty {=u64} ticks; calibration {=u64} instructions in {=u64} ticks)",
        per_op(forward),
        per_op(command),
        REPS,
        forward,
        command,
        empty,
        calibration.0,
        calibration.1
    );
    log_stack();
    exit(agree == n)
}
