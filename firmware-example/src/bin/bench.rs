//! Deterministic instruction counts of inference and training under QEMU.
//!
//! Run under `qemu-system-arm … -icount shift=0` (see the README): QEMU's
//! virtual clock then advances 1 ns per executed guest instruction and the
//! SysTick counter of [`microrl_firmware::icount`] turns into an instruction
//! counter (one tick = 40 instructions on `mps2-an386`, measured below).
//! Without `-icount` the figures are host-timing noise and the calibration
//! check fails.
//!
//! Design:
//! - **Calibration first.** A `nop` loop whose instructions per iteration are
//!   known from the disassembly (`nop; subs; bne`: 3, see the README) fixes
//!   the instructions per tick; a second loop longer than one SysTick period
//!   (2^24 ticks) checks the period counting; a phase sweep measures the fixed
//!   overhead of one measurement exactly. The run fails (exit 1) if the
//!   ratio is not an integer, e.g. without `-icount`.
//! - **Repetition and an empty baseline.** Every per-operation figure is one
//!   measurement of `R` repetitions minus one measurement of the same loop
//!   with an empty body (the same indexing and `black_box`es), divided by `R`:
//!   the fixed overhead cancels and the tick quantisation leaves an error
//!   below `2 · 40 / R` instructions per operation. The PPO collect and
//!   update are single measurements of millions of instructions (±40).
//! - **Representative inputs.** Inference cycles through 8 observations
//!   (CartPole states for the 4-input nets, uniform in `[-1, 1)` for the
//!   18-input one) on orthogonally initialised weights; the deployed
//!   policy's normaliser holds the statistics of those observations. The network kernels
//!   are branch-free (tanh clamps with predicated moves), so the counts
//!   hardly depend on the weights or the inputs.
//! - **Memory.** The two training agents (41.7 KB + 54.0 KB) live in
//!   `static`s: [`ConstStaticCell`]s holding the agents' all-zero `ZERO`
//!   values, which land in `.bss` (no flash image, never built on the stack);
//!   the configuration is set and `init` runs in place. The
//!   inference-only policies (up to 22.7 KB) live on the stack of one
//!   function at a time; the run logs the measured stack peak. No
//!   `static mut`, no `unsafe`.
//! - **Output.** One defmt line per figure, `bench <name>: <n> instructions`
//!   followed by the raw data in parentheses, for a host test to parse.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use core::hint::black_box;

use cortex_m::asm::nop;
use cortex_m::peripheral::DWT;
use cortex_m_rt::entry;
use microrl::algo::{AcConfig, Actor, Cursor, PpoConfig};
use microrl::env::{CartPole, Discrete, Env};
use microrl::nn::{Dense, Identity, Layer, Mlp};
use microrl::normalize::RunningNorm;
use microrl::policy::CategoricalActor;
use microrl::{Controller, Params, Policy, SVector, agent};
use microrl_firmware::icount::{NOP_LOOP_INSTRUCTIONS, Ticks, nop_loop, repeat};
use microrl_firmware::kernel::{self, OutputLayer};
use microrl_firmware::{exit, log_stack, ok_or_exit};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;
use static_cell::ConstStaticCell;

/// Online actor-critic on CartPole with the 4-32-32 actor and critic of the
/// firmware's training binaries.
type AcAgent = agent::ActorCritic<CartPole, 32>;
/// PPO rollout length (as `train-ppo` and `microrl train --small`).
const ROLLOUT: usize = 256;
type PpoAgent = agent::Ppo<CartPole, 32, ROLLOUT>;

/// PPO with the tuned CartPole hyper-parameters (γ 0.98, λ 0.8, 10 epochs of
/// 4 minibatches, learning rate 1e-3 at the first update).
const PPO_CONFIG: PpoConfig = PpoConfig {
    total_steps: 100_000,
    ..PpoConfig::CARTPOLE
};

static AC: ConstStaticCell<AcAgent> = ConstStaticCell::new(AcAgent::ZERO);
static PPO: ConstStaticCell<PpoAgent> = ConstStaticCell::new(PpoAgent::ZERO);

const SEED: u64 = 0;
/// Repetitions of one inference per measurement.
const INFER_REPS: u32 = 1000;
/// Online actor-critic steps per measurement.
const AC_REPS: u32 = 500;
/// Observations cycled through by the inference benchmarks.
const N_OBS: usize = 8;

/// Instructions per operation: `(ticks(body) − ticks(empty)) · ipt / reps`,
/// rounded. Logs `bench <name>: <n> instructions (…)`.
fn report(name: &str, ipt: u64, reps: u32, body: u64, empty: u64) -> u32 {
    let instructions = body.saturating_sub(empty) * ipt;
    let per_op = (instructions + u64::from(reps) / 2) / u64::from(reps);
    defmt::info!(
        "bench {=str}: {=u32} instructions ({=u32} reps, {=u64} ticks, empty loop {=u64} ticks)",
        name,
        per_op as u32,
        reps,
        body,
        empty
    );
    per_op as u32
}

/// One phase sweep: `iterations` back-to-back measurements of an empty block,
/// each followed by `PAD` `nop`s. Returns the ticks of the whole sweep and
/// the sum of the individual measurements.
#[inline(never)]
fn sweep<const PAD: usize>(ticks: &Ticks, iterations: u32) -> (u64, u64) {
    let mut sum = 0;
    let (total, ()) = ticks.measure(|| {
        for _ in 0..black_box(iterations) {
            let (t, ()) = ticks.measure(|| ());
            sum += t;
            for _ in 0..PAD {
                nop();
            }
        }
    });
    (total, sum)
}

/// Measures the instructions per SysTick tick and the fixed measurement
/// overhead; exits 1 if the clock is not an exact instruction counter.
fn calibrate(ticks: &Ticks) -> u64 {
    let (n1, n2) = (1_000_000u32, 2_000_000u32);
    let (t1, ()) = ticks.measure(|| nop_loop(black_box(n1)));
    let (t2, ()) = ticks.measure(|| nop_loop(black_box(n2)));
    let loop_instructions = NOP_LOOP_INSTRUCTIONS * u64::from(n2 - n1);
    let dt = t2 - t1;
    // Nearest integer ratio; the difference of two measurements is exact to ±1 tick.
    let ipt = (loop_instructions + dt / 2) / dt.max(1);
    let milli = loop_instructions * 1000 / dt.max(1);
    defmt::info!(
        "calibration: {=u64} loop instructions in {=u64} ticks: {=u64}.{=u64:03} instructions per tick",
        loop_instructions,
        dt,
        milli / 1000,
        milli % 1000
    );
    if ipt == 0 || (dt * ipt).abs_diff(loop_instructions) > ipt {
        defmt::error!(
            "calibration: not an integer number of instructions per tick (run QEMU with -icount shift=0)"
        );
        exit(false);
    }

    // Longer than one SysTick period: checks the period counting.
    let n = 240_000_000u32;
    let (t, ()) = ticks.measure(|| nop_loop(black_box(n)));
    let expected = NOP_LOOP_INSTRUCTIONS * u64::from(n);
    defmt::info!(
        "calibration: {=u64} loop instructions (> 2^24 ticks) in {=u64} ticks = {=u64} instructions",
        expected,
        t,
        t * ipt
    );
    if (t * ipt).abs_diff(expected) > 2 * ipt {
        defmt::error!("calibration: SysTick period counting is off");
        exit(false);
    }

    // Phase sweep: measurement k starts at phase φ₀ + k·L (mod ipt) for a loop
    // period of L instructions. If gcd(L, ipt) = 1, any ipt consecutive
    // measurements see every phase once, and their ticks sum to exactly the
    // overhead O in instructions: Σ_p ⌊(p + O)/ipt⌋ = O over p = 0..ipt.
    // Four paddings make at least one period coprime to 40.
    let iterations = 10 * ipt as u32;
    let sweeps = [
        sweep::<0>(ticks, iterations),
        sweep::<1>(ticks, iterations),
        sweep::<2>(ticks, iterations),
        sweep::<3>(ticks, iterations),
    ];
    let mut overhead = None;
    for (pad, &(total, sum)) in sweeps.iter().enumerate() {
        let period = (total * ipt + u64::from(iterations) / 2) / u64::from(iterations);
        let coprime = gcd(period, ipt) == 1;
        let o = sum * ipt / u64::from(iterations);
        defmt::info!(
            "calibration: sweep pad {=usize}: loop period {=u64} instructions, coprime {=bool}, overhead {=u64} instructions ({=u64} ticks over {=u32} measurements)",
            pad,
            period,
            coprime,
            o,
            sum,
            iterations
        );
        if coprime && overhead.is_none() {
            overhead = Some(o);
        }
    }
    match overhead {
        Some(o) => defmt::info!(
            "calibration: {=u64} instructions per tick, measurement overhead {=u64} instructions",
            ipt,
            o
        ),
        None => defmt::warn!("calibration: no sweep period coprime to the tick"),
    }
    ipt
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Reads the DWT cycle counter around a known loop: QEMU does not implement
/// the DWT, so it stays 0 there (the reason this binary uses SysTick).
fn probe_dwt(mut dcb: cortex_m::peripheral::DCB, mut dwt: DWT) {
    dcb.enable_trace();
    dwt.enable_cycle_counter();
    let before = DWT::cycle_count();
    nop_loop(black_box(1000));
    let after = DWT::cycle_count();
    defmt::info!(
        "dwt: CYCCNT {=u32} -> {=u32} around 3000 instructions ({=str})",
        before,
        after,
        if after == before {
            "not implemented"
        } else {
            "counting"
        }
    );
}

/// Forward pass, the actor's deterministic action ([`Actor::mode`]) and the
/// deployed policy's command ([`Controller::act`]: normalise with frozen
/// statistics, then the mode) of a freshly initialised
/// `CategoricalActor<N>`, `INFER_REPS` times each.
#[inline(never)]
fn bench_inference<const OBS: usize, const H: usize, const ACT: usize>(
    ticks: &Ticks,
    ipt: u64,
    names: [&str; 6],
    obs: &[SVector<f32, OBS>; N_OBS],
    rng: &mut Xoshiro128PlusPlus,
) where
    Dense<H, ACT, Identity>: OutputLayer<H, ACT>,
{
    type N<const OBS: usize, const H: usize, const ACT: usize> = Mlp<OBS, H, ACT>;
    // On this function's stack: gone once it returns.
    let mut policy = Policy {
        actor: CategoricalActor {
            net: N::<OBS, H, ACT>::ZERO,
        },
        obs_norm: RunningNorm::ZERO,
        space: Discrete::<ACT>,
    };
    Actor::init(&mut policy.actor, rng);
    for o in obs {
        ok_or_exit(policy.obs_norm.update(o), "normaliser");
    }
    defmt::info!(
        "{=str}: {=usize} parameters, {=usize} bytes",
        names[2],
        Policy::<CategoricalActor<N<OBS, H, ACT>>, OBS>::LEN,
        core::mem::size_of::<Policy<CategoricalActor<N<OBS, H, ACT>>, OBS>>()
    );
    // Check once, outside the measurements, that inference succeeds and
    // that the assembly kernels give the core's bits.
    for o in obs {
        let action = ok_or_exit(policy.act(o), "act");
        let same = kernel::mlp_forward(&policy.actor.net, o) == policy.actor.net.forward(o)
            && kernel::actor_mode(&policy.actor, o) == policy.actor.mode(o)
            && kernel::policy_act(&policy, o) == Ok(action)
            && kernel::FrozenPolicy::new(&policy).act(o) == Ok(action);
        if !same {
            defmt::error!(
                "{=str}: the assembly kernel differs from the core",
                names[2]
            );
            exit(false);
        }
    }
    let reps = INFER_REPS;
    let idx = |i: u32| i as usize % N_OBS;
    let (empty, ()) = ticks.measure(|| {
        repeat(reps, |i| {
            black_box(&obs[idx(i)]);
        })
    });
    let (mlp, ()) = ticks.measure(|| {
        repeat(reps, |i| {
            black_box(policy.actor.net.forward(black_box(&obs[idx(i)])));
        })
    });
    let (mode, ()) = ticks.measure(|| {
        repeat(reps, |i| {
            let _ = black_box(policy.actor.mode(black_box(&obs[idx(i)])));
        })
    });
    let (act, ()) = ticks.measure(|| {
        repeat(reps, |i| {
            let _ = black_box(policy.act(black_box(&obs[idx(i)])));
        })
    });
    let (mlp_asm, ()) = ticks.measure(|| {
        repeat(reps, |i| {
            black_box(kernel::mlp_forward(
                &policy.actor.net,
                black_box(&obs[idx(i)]),
            ));
        })
    });
    let (mode_asm, ()) = ticks.measure(|| {
        repeat(reps, |i| {
            let _ = black_box(kernel::actor_mode(&policy.actor, black_box(&obs[idx(i)])));
        })
    });
    // The deployed policy's `√(σ² + ε)` are computed once, when it is
    // frozen for the kernel, outside the measurement (statistics never
    // change in deployment); each repetition is the per-call work.
    let frozen = kernel::FrozenPolicy::new(&policy);
    let (act_asm, ()) = ticks.measure(|| {
        repeat(reps, |i| {
            let _ = black_box(frozen.act(black_box(&obs[idx(i)])));
        })
    });
    report(names[0], ipt, reps, mlp, empty);
    report(names[1], ipt, reps, mode, empty);
    report(names[2], ipt, reps, act, empty);
    report(names[3], ipt, reps, mlp_asm, empty);
    report(names[4], ipt, reps, mode_asm, empty);
    report(names[5], ipt, reps, act_asm, empty);
}

/// `N_OBS` CartPole observations along a random-action trajectory.
fn cartpole_observations(rng: &mut Xoshiro128PlusPlus) -> [SVector<f32, 4>; N_OBS] {
    let mut env = CartPole::new();
    let mut obs = [env.reset(rng); N_OBS];
    for o in obs.iter_mut().skip(1) {
        let action = microrl::rng::below(rng, 2) as usize;
        let step = ok_or_exit(env.step(action), "step");
        *o = if step.done() {
            env.reset(rng)
        } else {
            step.obs
        };
    }
    obs
}

#[entry]
fn main() -> ! {
    let Some(p) = cortex_m::Peripherals::take() else {
        defmt::error!("peripherals already taken");
        exit(false)
    };
    probe_dwt(p.DCB, p.DWT);
    let ticks = Ticks::start(p.SYST);
    let ipt = calibrate(&ticks);
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(SEED);

    // Inference.
    let cartpole_obs = cartpole_observations(&mut rng);
    let mut wide_obs = [SVector::<f32, 18>::zeros(); N_OBS];
    for o in wide_obs.iter_mut() {
        for x in o.iter_mut() {
            *x = microrl::rng::uniform_range(&mut rng, -1.0, 1.0);
        }
    }
    bench_inference::<4, 64, 2>(
        &ticks,
        ipt,
        [
            "mlp-4-64-64-2",
            "act-4-64-64-2",
            "policy-4-64-64-2",
            "mlp-4-64-64-2-asm",
            "act-4-64-64-2-asm",
            "policy-4-64-64-2-asm",
        ],
        &cartpole_obs,
        &mut rng,
    );
    bench_inference::<18, 64, 4>(
        &ticks,
        ipt,
        [
            "mlp-18-64-64-4",
            "act-18-64-64-4",
            "policy-18-64-64-4",
            "mlp-18-64-64-4-asm",
            "act-18-64-64-4-asm",
            "policy-18-64-64-4-asm",
        ],
        &wide_obs,
        &mut rng,
    );
    bench_inference::<4, 32, 2>(
        &ticks,
        ipt,
        [
            "mlp-4-32-32-2",
            "act-4-32-32-2",
            "policy-4-32-32-2",
            "mlp-4-32-32-2-asm",
            "act-4-32-32-2-asm",
            "policy-4-32-32-2-asm",
        ],
        &cartpole_obs,
        &mut rng,
    );

    // Online actor-critic: one env step + forward/backward/Adam of both nets.
    let ac = AC.take();
    ac.config = AcConfig::DEFAULT;
    defmt::info!(
        "ac: actor 4-32-32-2, critic 4-32-32-1, agent {=usize} bytes static",
        core::mem::size_of::<AcAgent>()
    );
    let mut env = CartPole::new();
    ok_or_exit(ac.init(&env, &mut rng), "ac init");
    let mut cursor = Cursor::start(&mut env, &mut rng);
    let mut episodes = 0u32;
    let (empty, ()) = ticks.measure(|| {
        repeat(AC_REPS, |i| {
            black_box(i);
        })
    });
    let (steps, ()) = ticks.measure(|| {
        repeat(AC_REPS, |_| {
            let stats = ac.step(&mut env, &mut cursor, &mut rng, |_| episodes += 1);
            black_box(ok_or_exit(stats, "ac step"));
        })
    });
    report("ac-step", ipt, AC_REPS, steps, empty);
    defmt::info!(
        "ac: {=u32} episodes ended during the measured steps",
        episodes
    );

    // PPO: one rollout of 256 steps, then one update (10 epochs × 4 minibatches).
    let ppo = PPO.take();
    ppo.config = PPO_CONFIG;
    defmt::info!(
        "ppo: actor 4-32-32-2, critic 4-32-32-1, rollout {=usize}, agent {=usize} bytes static",
        ROLLOUT,
        core::mem::size_of::<PpoAgent>()
    );
    let mut env = CartPole::new();
    ok_or_exit(ppo.init(&env, &mut rng), "ppo init");
    let mut cursor = Cursor::start(&mut env, &mut rng);
    let (collect, result) = ticks.measure(|| ppo.collect(&mut env, &mut cursor, &mut rng, |_| {}));
    ok_or_exit(result, "ppo collect");
    report("ppo-collect-256", ipt, 1, collect, 0);
    report("ppo-collect-per-step", ipt, ROLLOUT as u32, collect, 0);
    let (update, result) = ticks.measure(|| ppo.update(&mut rng));
    let stats = ok_or_exit(result, "ppo update");
    report("ppo-update-256", ipt, 1, update, 0);
    defmt::info!(
        "ppo: update ran {=u16} epochs, approx_kl {=f32}, clip_fraction {=f32}",
        stats.epochs,
        stats.approx_kl,
        stats.clip_fraction
    );

    log_stack();
    defmt::info!("bench: done");
    exit(true)
}
