//! Instruction counts of `train-sac`'s agent under QEMU `-icount shift=0`.
//!
//! The method is `bench`'s ([`microrl_firmware::icount`]): SysTick turned
//! into an instruction counter, calibrated against a 3-instruction `nop`
//! loop, every figure `R` repetitions minus the same loop with an empty
//! body, divided by `R`. The agent is `train-sac`'s,
//! `agent::Sac<Pendulum, 24, 2_000, 64, 4>` with its configuration, in a
//! `static` (109 KB: `bench`'s two agents do not fit beside it, hence a
//! binary of its own).
//!
//! Figures, in the order of a training run:
//! - `sac-warmup-step`: one environment step of the warm-up
//!   (`OffPolicy::step` before `learning_starts`: a uniform action, the
//!   Pendulum step in software `f64`, the transition stored), mean of the
//!   2 000 that fill the ring;
//! - `pendulum-step`: `Pendulum::step` alone;
//! - `sac-gradient-step`: one `Sac::update` on a full ring (a minibatch of
//!   64: target, critic, actor and `log α` steps, Polyak averaging);
//! - `sac-train-step`: one environment step of training (`OffPolicy::step`:
//!   a sampled action, the step, the transition stored, one gradient step);
//! - `sac-act`: the deterministic action (`Controller::act`).
//!
//! Logs `bench <name>: <n> instructions (…)` per figure, then the stack.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use core::hint::black_box;

use cortex_m_rt::entry;
use microrl::algo::offpolicy::OffPolicy;
use microrl::algo::{Cursor, SacConfig};
use microrl::env::{Env, Pendulum};
use microrl::{Controller, SVector, agent};
use microrl_firmware::icount::{NOP_LOOP_INSTRUCTIONS, Ticks, nop_loop, repeat};
use microrl_firmware::{exit, log_stack, ok_or_exit};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;
use static_cell::ConstStaticCell;

/// `train-sac`'s agent.
type Agent = agent::Sac<Pendulum, 24, 2_000, 64, 4>;
/// `train-sac`'s configuration.
const CONFIG: SacConfig = SacConfig {
    buffer_size: 2_000,
    batch_size: 64,
    ..SacConfig::PENDULUM
};
static AGENT: ConstStaticCell<Agent> = ConstStaticCell::new(Agent::ZERO);

/// Gradient steps and training steps per measurement.
const TRAIN_REPS: u32 = 20;
/// Pendulum steps and deterministic actions per measurement.
const STEP_REPS: u32 = 1_000;

/// `(body − empty) · ipt / reps`, rounded; logs `bench <name>: <n> instructions (…)`.
fn report(name: &str, ipt: u64, reps: u32, body: u64, empty: u64) {
    let per_op = (body.saturating_sub(empty) * ipt + u64::from(reps) / 2) / u64::from(reps);
    defmt::info!(
        "bench {=str}: {=u64} instructions ({=u32} reps, {=u64} ticks, empty loop {=u64} ticks)",
        name,
        per_op,
        reps,
        body,
        empty
    );
}

/// Instructions per SysTick tick from two `nop` loops; exits 1 unless an integer.
fn calibrate(ticks: &Ticks) -> u64 {
    let (n1, n2) = (1_000_000u32, 2_000_000u32);
    let (t1, ()) = ticks.measure(|| nop_loop(black_box(n1)));
    let (t2, ()) = ticks.measure(|| nop_loop(black_box(n2)));
    let instructions = NOP_LOOP_INSTRUCTIONS * u64::from(n2 - n1);
    let dt = (t2 - t1).max(1);
    let ipt = (instructions + dt / 2) / dt;
    defmt::info!(
        "calibration: {=u64} loop instructions in {=u64} ticks: {=u64} instructions per tick",
        instructions,
        dt,
        ipt
    );
    if ipt == 0 || (dt * ipt).abs_diff(instructions) > ipt {
        defmt::error!("calibration: not an instruction counter (run QEMU with -icount shift=0)");
        exit(false);
    }
    ipt
}

#[entry]
fn main() -> ! {
    let Some(p) = cortex_m::Peripherals::take() else {
        defmt::error!("peripherals already taken");
        exit(false)
    };
    let ticks = Ticks::start(p.SYST);
    let ipt = calibrate(&ticks);
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(0);
    let agent = AGENT.take();
    // The whole ring of warm-up steps first, so that minibatches are drawn
    // from a full ring, as in training.
    agent.config = SacConfig {
        learning_starts: 2_000,
        ..CONFIG
    };
    let mut env = Pendulum::new();
    ok_or_exit(agent.init(&env, &mut rng), "init");
    let mut cursor = Cursor::start(&mut env, &mut rng);
    let (empty, ()) = ticks.measure(|| {
        repeat(2_000, |i| {
            black_box(i);
        })
    });
    let (warmup, ()) = ticks.measure(|| {
        repeat(2_000, |_| {
            let stats = agent.step(&mut env, &mut cursor, &mut rng, |_| {});
            black_box(ok_or_exit(stats, "warm-up step"));
        })
    });
    report("sac-warmup-step", ipt, 2_000, warmup, empty);
    agent.config = CONFIG;

    let mut plant = Pendulum::new();
    plant.reset(&mut rng);
    let torque = SVector::<f32, 1>::new(0.5);
    let (empty, ()) = ticks.measure(|| {
        repeat(STEP_REPS, |i| {
            black_box(i);
        })
    });
    let (step, ()) = ticks.measure(|| {
        repeat(STEP_REPS, |_| {
            black_box(ok_or_exit(plant.step(black_box(torque)), "step"));
        })
    });
    report("pendulum-step", ipt, STEP_REPS, step, empty);

    let (empty, ()) = ticks.measure(|| {
        repeat(TRAIN_REPS, |i| {
            black_box(i);
        })
    });
    let (update, ()) = ticks.measure(|| {
        repeat(TRAIN_REPS, |_| {
            black_box(ok_or_exit(agent.update(&mut rng), "update"));
        })
    });
    report("sac-gradient-step", ipt, TRAIN_REPS, update, empty);
    let (train, ()) = ticks.measure(|| {
        repeat(TRAIN_REPS, |_| {
            let stats = agent.step(&mut env, &mut cursor, &mut rng, |_| {});
            black_box(ok_or_exit(stats, "training step"));
        })
    });
    report("sac-train-step", ipt, TRAIN_REPS, train, empty);

    let obs = cursor.obs;
    let (empty, ()) = ticks.measure(|| {
        repeat(STEP_REPS, |i| {
            black_box(i);
        })
    });
    let (act, ()) = ticks.measure(|| {
        repeat(STEP_REPS, |_| {
            let _ = black_box(agent.act(black_box(&obs)));
        })
    });
    report("sac-act", ipt, STEP_REPS, act, empty);

    log_stack();
    defmt::info!("bench-sac: done");
    exit(true)
}
