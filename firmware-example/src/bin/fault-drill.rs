//! The safety net's fault drills on the MCU: a learned CartPoleContinuous
//! policy (`policies/cartpole-continuous-32.mrlp`: PPO with the CLI's
//! `cartpole-continuous` configuration and 4-32-32-1 networks, seed 0,
//! written and checked by `tests/tests/firmware.rs`) inside
//! `microrl::safety::Guarded`
//! with the grid-tuned PD fallback, 5 episodes per drill, each fault of
//! `microrl::safety::drill::Fault` injected in every episode (a poisoned
//! update, NaN sensors, a stuck sensor, a diverging update, an update that
//! overruns, a diverging update with a corrupt last-good store), acted by
//! each arm (guarded, the fallback alone, the policy unguarded) —
//! `microrl::safety::drill::cartpole::drill`, the very function the desktop
//! runs, so the host test compares every figure bit for bit.
//!
//! Memory: the trained policy, the learner's publish buffer and the
//! last-good store in `static`s (5 KB each); the `Guarded` controller with
//! its acting policy on the stack (the drill builds it by value: a few
//! copies of the policy in flight, hence the 32-wide networks).
//!
//! Logs one `drill <fault> <arm>: …` line per drill, then the stack; exits
//! 0 when every drill ran.

#![no_std]
#![no_main]
#![deny(unsafe_code)]

use cortex_m_rt::entry;
use microrl::env::CartPoleContinuous;
use microrl::nn::Mlp;
use microrl::safety::drill::{Arm, Fault, cartpole};
use microrl::{Params, agent, serialize};
use microrl_firmware::{Fnv1a, exit, log_stack, ok_or_exit};
use static_cell::ConstStaticCell;

type Policy = agent::Policy<CartPoleContinuous, 32>;
/// The tensors a faulty update corrupts: the actor network's.
const WEIGHT_TENSORS: usize = <Mlp<4, 32, 1> as Params>::TENSORS;
const STORE_LEN: usize = serialize::encoded_len::<Policy>();
/// The policy file, in flash.
static BLOB: &[u8] = include_bytes!("../../policies/cartpole-continuous-32.mrlp");

static TRAINED: ConstStaticCell<Policy> = ConstStaticCell::new(Policy::ZERO);
static CANDIDATE: ConstStaticCell<Policy> = ConstStaticCell::new(Policy::ZERO);
static STORE: ConstStaticCell<[u8; STORE_LEN]> = ConstStaticCell::new([0; STORE_LEN]);

#[entry]
fn main() -> ! {
    let trained = TRAINED.take();
    ok_or_exit(serialize::load(trained, BLOB), "policy file");
    let (candidate, store) = (CANDIDATE.take(), STORE.take());
    defmt::info!(
        "fault-drill: cartpole-continuous, 4-32-32-1 policy ({=usize} parameters), PD fallback, {=usize} episodes per drill",
        Policy::LEN,
        cartpole::EPISODES
    );
    for fault in Fault::ALL {
        for arm in [Arm::Guarded, Arm::Fallback, Arm::Unguarded] {
            candidate.clone_from(trained);
            store.fill(0);
            let drill = cartpole::drill(fault, arm, trained, candidate, store, WEIGHT_TENSORS);
            let d = ok_or_exit(drill, "drill");
            let mut returns = Fnv1a::default();
            returns.write_f32s(&d.returns);
            let (sv, rb, wd) = (d.supervisor, d.rollback, d.watchdog);
            defmt::info!(
                "drill {=?} {=?}: total {=f32} ({=u32:#010x}) min_episode {=f32} held {=bool} intact {=bool} refusals {=u32} to_fallback {=u64} fallback_ticks {=u64} published {=u64} rolled_back {=u64} corrupt {=u64} score {=u32:#010x} returns_fnv {=u32:#010x}",
                fault,
                arm,
                d.total(),
                d.total().to_bits(),
                d.returns.iter().copied().fold(f32::INFINITY, f32::min),
                d.held,
                d.policy_intact,
                d.refusals,
                sv.to_fallback,
                sv.ticks_fallback,
                wd.published,
                rb.rolled_back,
                rb.corrupt,
                d.mean_score.to_bits(),
                returns.0
            );
        }
    }
    log_stack();
    exit(true)
}
