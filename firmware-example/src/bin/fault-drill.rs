//! The safety net's fault drills on the MCU: a learned CartPoleContinuous
//! policy (`policies/cartpole-continuous-32.mrlp`: PPO with the CLI's
//! `cartpole-continuous` configuration and 4-32-32-1 networks, seed 0,
//! written and checked by `tests/tests/firmware.rs`) inside
//! `microrl::safety::Guarded`, in both scenarios of
//! `microrl::safety::drill::cartpole::Scenario` (the grid-tuned PD fallback
//! judged by the state; a relay fallback that costs full actuator effort),
//! 5 episodes per drill, each fault of the scenario injected in every
//! episode (poisoned, diverging, overrunning, regressed and underperforming
//! updates, NaN and stuck sensors, a diverging update with a corrupt
//! last-good store), acted by each arm (guarded, the fallback alone, the
//! policy unguarded) — `microrl::safety::drill::cartpole::drill`, the very
//! function the desktop runs.
//!
//! Each drill's line carries every counter and switch of the pieces; the
//! host test compares every line with the recorded one
//! (`tests/fixtures/fault-drill.txt`, which the desktop's drills match too)
//! and checks the drill's claims on the MCU's own figures.
//!
//! Memory: the trained policy, the learner's publish buffer and the
//! last-good store in `static`s (5 KB each); the `Guarded` controller with
//! its acting policy on the stack (the drill builds it by value: a few
//! copies of the policy in flight, hence the 32-wide networks).
//!
//! Logs one `drill <scenario> <fault> <arm>: …` line per drill (`STOPPED
//! drill …: <error>` for one that stops), then the stack; exits 0 when
//! every drill ran.

#![no_std]
#![no_main]
#![deny(unsafe_code)]

use cortex_m_rt::entry;
use microrl::env::CartPoleContinuous;
use microrl::nn::Mlp;
use microrl::safety::drill::Arm;
use microrl::safety::drill::cartpole::{self, Scenario};
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
        "fault-drill: cartpole-continuous, 4-32-32-1 policy ({=usize} parameters), tuned PD and relay fallbacks, {=usize} episodes per drill",
        Policy::LEN,
        cartpole::EPISODES
    );
    // A drill that stops (the plant refused a command) is logged and the
    // others run; the exit status is then 1.
    let mut stopped = false;
    for scenario in Scenario::ALL {
        for &fault in scenario.faults() {
            for arm in [Arm::Guarded, Arm::Fallback, Arm::Unguarded] {
                candidate.clone_from(trained);
                store.fill(0);
                let drill = cartpole::drill(
                    scenario,
                    fault,
                    arm,
                    trained,
                    candidate,
                    store,
                    WEIGHT_TENSORS,
                );
                let d = match drill {
                    Ok(d) => d,
                    Err(e) => {
                        defmt::error!("STOPPED drill {=?} {=?} {=?}: {}", scenario, fault, arm, e);
                        stopped = true;
                        continue;
                    }
                };
                let mut returns = Fnv1a::default();
                returns.write_f32s(&d.returns);
                let (sv, sh, rb, wd) = (d.supervisor, d.shield, d.rollback, d.watchdog);
                defmt::info!(
                    "drill {=?} {=?} {=?}: returns {=[?]} returns_fnv {=u32:#010x} score {=u32:#010x} score_milli {=i32} held {=bool} intact {=bool} refusals {=u32} to_fallback {=u64} non_finite {=u64} stuck {=u64} envelope {=u64} performance {=u64} policy_error {=u64} refused {=u64} to_learned {=u64} fallback_ticks {=u64} nan_readings {=u64} stuck_readings {=u64} shield {=u64} shield_nan {=u64} shield_safe_set {=u64} published {=u64} wd_non_finite {=u64} overrun {=u64} trials {=u64} promoted {=u64} rolled_back {=u64} writes {=u64} corrupt {=u64} switch_at {=[?]} restored_at {=[?]} events {=u32:#010x}",
                    scenario,
                    fault,
                    arm,
                    &d.returns.map(|r| r as u32)[..],
                    returns.0,
                    d.mean_score.to_bits(),
                    (d.mean_score * 1000.0) as i32,
                    d.held,
                    d.policy_intact,
                    d.refusals,
                    sv.to_fallback,
                    sv.non_finite,
                    sv.stuck,
                    sv.envelope,
                    sv.performance,
                    sv.policy_error,
                    sv.refused,
                    sv.to_learned,
                    sv.ticks_fallback,
                    sv.non_finite_obs,
                    sv.stuck_obs,
                    sh.interventions,
                    sh.non_finite,
                    sh.safe_set,
                    wd.published,
                    wd.non_finite,
                    wd.overrun,
                    rb.trials,
                    rb.promoted,
                    rb.rolled_back,
                    rb.writes,
                    rb.corrupt,
                    &d.switch_at[..],
                    &d.restored_at[..],
                    d.events
                );
            }
        }
    }
    log_stack();
    exit(!stopped)
}
