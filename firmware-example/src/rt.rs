//! The real-time runtime of the learn-while-controlling binaries
//! (`learn-rt`: PPO on CartPole at 50 Hz; `learn-rt-ac`: the online
//! actor-critic on the servo at 1 kHz): what is the same whatever the
//! learner — time, the control tick's measurements, the learner's wait,
//! the calibration and the report.
//!
//! Design:
//! - **Two rhythms.** The control loop is the `TIMER0` interrupt (CMSDK APB
//!   timer, IRQ 8, NVIC priority 0, the highest; see [`crate::cmsdk`] for
//!   why not SysTick) every period; it acts with the published policy
//!   ([`crate::publish`]) and queues each tick. The learner is thread mode:
//!   it waits with [`sleep_until`], learns, publishes. A binary's
//!   `DefaultHandler` calls [`enter`] for the tick's entry time and
//!   latency, then its own control loop.
//! - **Time.** Under `-icount shift=0` QEMU executes one instruction per
//!   virtual nanosecond and the timers count the virtual 25 MHz clock:
//!   [`INSTR_PER_COUNT`] instructions a count. A control period is the
//!   rate's share of a 168 MHz Cortex-M4 at the cycle model's
//!   [`MODEL_CPI`] cycles per instruction (its estimate for the training
//!   kernels, `firmware-example/README.md`): [`period_counts`]. Run QEMU
//!   with `-icount shift=0`; under QEMU the learner's wait spins instead of
//!   sleeping (see [`sleep_until`]), so every interrupt is taken at its
//!   exact instruction.
//! - **Measurements** ([`Timing`], clock counts; ×40 for instructions): per
//!   tick the latency from the timer's interrupt to the handler, entry →
//!   actuator written (a histogram: worst, median), the whole handler, the
//!   jitter (spread of the entry times' offsets from the ideal grid) and
//!   deadline misses; in thread mode ([`Net`]) the time asleep, learning
//!   and evaluating, each net of the interrupts inside it; and the publish
//!   latency, from an update's end to the control loop's switch.
//!   [`report`] logs them as the two `rt:` lines the host test parses.

pub mod lagged;

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use heapless::spsc::Producer;
use microrl::algo::lagged::{ActionOf, Behave};
use microrl::algo::{Cursor, Tick};
use microrl::env::{Env, Step};
use microrl::rand_core::Rng;
use microrl::rng::Xoshiro128pp;
use microrl::{Error, SVector};

use crate::cmsdk::{Clock, TIMER0};
use crate::exit;
use crate::icount::{NOP_LOOP_INSTRUCTIONS, nop_loop};
use crate::latency::{Histogram, Spread};
use crate::publish::Reader;

/// Instructions per clock count under `-icount shift=0` (checked by
/// [`calibrate`]).
pub const INSTR_PER_COUNT: u32 = 40;
/// Cycles per instruction of the time model (module docs).
pub const MODEL_CPI: u32 = 2;
/// The modelled core clock.
pub const CORE_HZ: u32 = 168_000_000;
/// Histogram bins of one count each: up to 20 480 instructions.
pub const BINS: usize = 512;

/// A control period at `rate_hz` in clock counts (168 MHz, CPI 2).
pub const fn period_counts(rate_hz: u32) -> u32 {
    CORE_HZ / rate_hz / MODEL_CPI / INSTR_PER_COUNT
}

/// Clock counts spent in the control interrupt so far.
pub static CONTROL_COUNTS: AtomicU32 = AtomicU32::new(0);
/// Clock counts spent in tasks between the control loop and thread mode
/// (`learn-rt-ac`'s learner), net of the control loop's inside them.
pub static TASK_COUNTS: AtomicU32 = AtomicU32::new(0);
/// When the update whose policy is published ended (clock).
pub static UPDATE_DONE_AT: AtomicU32 = AtomicU32::new(0);
/// The control loop failed (a plant or policy error): the learner exits.
pub static FAULT: AtomicBool = AtomicBool::new(false);
/// The learner has learned its whole budget and publishes no more: the
/// control loop keeps acting with the last behaviour and queues nothing,
/// and a boundary without a switch is no overrun.
pub static LEARNER_DONE: AtomicBool = AtomicBool::new(false);
/// `TIMER0`'s reload for one period of the clock (set by [`calibrate`]).
static RELOAD0: AtomicU32 = AtomicU32::new(0);
/// `TIMER0` counts and clock counts over the calibration loop: the ratio
/// of the two timers' rates (set by [`calibrate`]).
static RATE0: AtomicU32 = AtomicU32::new(1);
static RATE1: AtomicU32 = AtomicU32::new(1);

/// Instructions for `counts` clock counts.
pub fn instr(counts: u32) -> u32 {
    counts.saturating_mul(INSTR_PER_COUNT)
}

/// Per mille of `part` in `whole`.
pub fn permille(part: u64, whole: u64) -> u32 {
    (part * 1000 / whole.max(1)) as u32
}

/// The interrupt's first step: the clock at entry and the latency since
/// `TIMER0` expired (clock counts), with the interrupt cleared; `None` (and
/// [`FAULT`] set) for any other interrupt than `TIMER0`'s.
#[inline(always)]
pub fn enter(irqn: i16) -> Option<(Clock, u32, u32)> {
    let clock = Clock::running();
    let entry = clock.now();
    let since = TIMER0.since_expiry(RELOAD0.load(Ordering::Relaxed));
    TIMER0.clear_interrupt();
    let latency = since * RATE1.load(Ordering::Relaxed) / RATE0.load(Ordering::Relaxed).max(1);
    if irqn != TIMER0.irq() as i16 {
        FAULT.store(true, Ordering::Relaxed);
        return None;
    }
    Some((clock, entry, latency))
}

/// Starts the control loop: `TIMER0` every calibrated period, its
/// interrupt at the highest priority.
pub fn start_control(nvic: &mut cortex_m::peripheral::NVIC) {
    TIMER0.start(RELOAD0.load(Ordering::Relaxed), true);
    TIMER0.unmask(nvic, 0);
}

/// Stops the control loop.
pub fn stop_control() {
    TIMER0.mask();
    TIMER0.stop();
}

/// A plant with its actuator's write time: `step` is where `behave` hands
/// over the command, so the clock is read there, before the simulated
/// physics (the world's part of the period) runs.
pub struct Timed<P> {
    /// The (simulated) plant.
    pub plant: P,
    /// The clock.
    pub clock: Clock,
    /// When the last command was written.
    pub written: u32,
}

impl<P: Env> Env for Timed<P> {
    type Obs = P::Obs;
    type Space = P::Space;

    fn action_space(&self) -> P::Space {
        self.plant.action_space()
    }

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> P::Obs {
        self.plant.reset(rng)
    }

    fn step(&mut self, action: microrl::env::ActionOf<P>) -> Result<Step<P::Obs>, Error> {
        self.written = self.clock.now();
        self.plant.step(action)
    }
}

/// The control loop's state: the plant, the acting stream, the queue to
/// the learner, the published behaviour (`B`: an on-policy learner's
/// `Policy`, an off-policy learner's `Explorer`) and the measurements. The
/// behaviour changes only at a block boundary, every `block` ticks.
pub struct ControlLoop<P, B: Behave<OBS> + 'static, const OBS: usize> {
    /// The plant, timed.
    pub plant: Timed<P>,
    /// Where the current episode stands.
    pub cursor: Cursor<SVector<f32, OBS>>,
    /// The control loop's own stream (actions, episode resets).
    pub rng: Xoshiro128pp,
    /// Ticks to the learner.
    pub queue: Producer<'static, Tick<OBS, ActionOf<B, OBS>>>,
    /// The published behaviour.
    pub policy: Reader<B>,
    /// Ticks per block (a rollout, for PPO).
    pub block: u32,
    /// Ticks acted since the run began (the schedule's step index; `u64`,
    /// as the desktop's, where [`Timing::ticks`] wraps).
    pub acted: u64,
    /// What it measures.
    pub timing: Timing,
}

impl<P, B, const OBS: usize> ControlLoop<P, B, OBS>
where
    P: Env<Obs = SVector<f32, OBS>, Space = B::Space>,
    B: Behave<OBS> + 'static,
{
    /// One control tick, entered at clock `entry`, `latency` counts after
    /// the timer's interrupt: switch behaviour at a block boundary, act
    /// with the published one (`Behave::behave`: normalise, sample, write
    /// the actuator, step the plant), queue the tick. Returns whether the
    /// tick ended a block. On a plant or policy error the control loop
    /// stops (its timer too) and [`FAULT`] tells the learner.
    #[inline(always)]
    pub fn tick(&mut self, entry: u32, latency: u32) -> bool {
        let n = self.timing.ticks;
        let ideal = self.timing.begin(entry, latency);
        if n.is_multiple_of(self.block) {
            // Block j is acted by the behaviour of the learner's step
            // through block j − 2 (θ₀ for blocks 0 and 1).
            let switched = self.policy.switch();
            self.timing.boundary(switched, entry, n / self.block);
        }
        let acted = self.policy.front().behave(
            self.acted,
            &mut self.plant,
            &mut self.cursor,
            &mut self.rng,
            &mut |_| {},
        );
        let Ok(tick) = acted else {
            FAULT.store(true, Ordering::Relaxed);
            stop_control();
            return false;
        };
        self.acted += 1;
        self.timing.written(self.plant.written, entry, ideal);
        // Once the learner is done, nothing more is queued (nor dropped).
        let queued = LEARNER_DONE.load(Ordering::Relaxed) || self.queue.enqueue(tick).is_ok();
        self.timing.end(entry, self.plant.clock.now(), queued);
        (n + 1).is_multiple_of(self.block)
    }
}

/// What the control loop measures (clock counts).
pub struct Timing {
    /// The control period.
    pub period: u32,
    /// Actuator written later than this after the tick's ideal time: a
    /// deadline miss.
    pub deadline: u32,
    /// Entry → actuator written.
    pub to_actuator: Histogram<BINS>,
    /// Entry → end of the handler's work (physics, reset, push included).
    pub handler_worst: u32,
    /// Timer interrupt → handler entry.
    pub latency: Spread,
    /// Entry offsets from the ideal grid `first + n · period`.
    pub offsets: Spread,
    /// The ideal time of tick 0 (its entry less its latency).
    pub grid: u32,
    /// Ticks whose actuator was written after the deadline.
    pub deadline_misses: u32,
    /// Boundaries at which the scheduled policy was not yet published.
    pub overruns: u32,
    /// Ticks the full queue refused.
    pub dropped: u32,
    /// Update end → switch, worst and sum over the switches after θ₀.
    pub publish_worst: u32,
    pub publish_sum: u64,
    /// Ticks acted.
    pub ticks: u32,
    /// Policies switched to (θ₀ is the first).
    pub switched: u32,
}

impl Timing {
    /// Nothing measured yet, for a control `period` and `deadline` (clock
    /// counts).
    pub const fn new(period: u32, deadline: u32) -> Self {
        Self {
            period,
            deadline,
            to_actuator: Histogram::new(),
            handler_worst: 0,
            latency: Spread::new(),
            offsets: Spread::new(),
            grid: 0,
            deadline_misses: 0,
            overruns: 0,
            dropped: 0,
            publish_worst: 0,
            publish_sum: 0,
            ticks: 0,
            switched: 0,
        }
    }

    /// A tick entered at `entry`, `latency` after its interrupt: records
    /// both and returns its ideal time.
    #[inline(always)]
    pub fn begin(&mut self, entry: u32, latency: u32) -> u32 {
        if self.ticks == 0 {
            self.grid = entry.wrapping_sub(latency);
        }
        let ideal = self.grid.wrapping_add(self.ticks.wrapping_mul(self.period));
        self.latency.record(latency as i32);
        self.offsets.record(entry.wrapping_sub(ideal) as i32);
        ideal
    }

    /// At a block boundary: `switched` tells whether the control loop
    /// switched to a newly published policy at `entry`; block `block` is to
    /// be acted by the policy of the learner's step through block
    /// `block − 2` (θ₀ for blocks 0 and 1), the `max(1, block)`-th switched
    /// to: fewer switches (the learner late) or more (a policy published
    /// before its block) count as an overrun — the schedule left.
    #[inline(always)]
    pub fn boundary(&mut self, switched: bool, entry: u32, block: u32) {
        if switched {
            self.switched += 1;
            if self.switched > 1 {
                let waited = entry.wrapping_sub(UPDATE_DONE_AT.load(Ordering::Relaxed));
                self.publish_worst = self.publish_worst.max(waited);
                self.publish_sum += u64::from(waited);
            }
        }
        if self.switched != block.max(1) && !LEARNER_DONE.load(Ordering::Relaxed) {
            self.overruns += 1;
        }
    }

    /// The actuator was written at `written` for the tick entered at
    /// `entry` with ideal time `ideal`.
    #[inline(always)]
    pub fn written(&mut self, written: u32, entry: u32, ideal: u32) {
        self.to_actuator.record(written.wrapping_sub(entry));
        if written.wrapping_sub(ideal) > self.deadline {
            self.deadline_misses += 1;
        }
    }

    /// The tick's handler ends at `now`; `queued` tells whether its tick was
    /// queued.
    #[inline(always)]
    pub fn end(&mut self, entry: u32, now: u32, queued: bool) {
        if !queued {
            self.dropped += 1;
        }
        self.ticks += 1;
        let busy = now.wrapping_sub(entry);
        self.handler_worst = self.handler_worst.max(busy);
        CONTROL_COUNTS.fetch_add(busy, Ordering::Relaxed);
    }
}

/// Time in one context, net of the interrupts inside it — the control
/// loop's and the tasks' ([`TASK_COUNTS`]) — (signed: a
/// short window's two clock reads and the interrupt's own are each
/// quantised to a count, so one window may come out a count below zero;
/// the errors cancel in the sum).
#[derive(Clone, Copy, Default)]
pub struct Net(pub i64);

impl Net {
    /// Runs `f`, adding its clock counts less the interrupts' to `self`.
    #[inline(always)]
    pub fn time<T>(&mut self, clock: Clock, f: impl FnOnce() -> T) -> T {
        let interrupts = || {
            CONTROL_COUNTS
                .load(Ordering::Relaxed)
                .wrapping_add(TASK_COUNTS.load(Ordering::Relaxed))
        };
        let (t0, c0) = (clock.now(), interrupts());
        let out = f();
        let (t1, c1) = (clock.now(), interrupts());
        self.0 += i64::from(t1.wrapping_sub(t0)) - i64::from(c1.wrapping_sub(c0));
        out
    }
}

/// Waits until `ready()`; exits if the control loop failed. On a board the
/// core sleeps (`WFI`) between interrupts; under QEMU (the `semihosting`
/// build) it spins instead: QEMU 7.2's `-icount` loses timer interrupts
/// across `WFI` with `sleep=off` (993 of 2 759 periods in a `learn-rt` run)
/// and ties them to the host's timing with `sleep=on` (entries up to 0.9 of
/// a period late on a loaded host), while a spinning core takes every
/// interrupt at its exact instruction. Idle time is the same either way:
/// the wait less the interrupts inside it.
pub fn sleep_until(clock: Clock, idle: &mut Net, mut ready: impl FnMut() -> bool) {
    idle.time(clock, || {
        while !ready() {
            if FAULT.load(Ordering::Relaxed) {
                defmt::error!(
                    "control loop or learner failed (plant, policy, a refused tick, a stray interrupt, or a full judge queue)"
                );
                exit(false);
            }
            wait_for_interrupt();
        }
    });
}

/// One wait for the next interrupt (see [`sleep_until`]).
#[inline(always)]
fn wait_for_interrupt() {
    #[cfg(feature = "semihosting")]
    nop_loop(16);
    #[cfg(not(feature = "semihosting"))]
    cortex_m::asm::wfi();
}

/// Checks that a clock count is [`INSTR_PER_COUNT`] instructions (QEMU
/// with `-icount shift=0`), exits 1 otherwise; then measures `TIMER0`'s
/// rate against the clock's and sets its reload for one `period` of the
/// clock (QEMU 7.2's `mps2-an386` runs `TIMER0` at 16 MHz, not the
/// 25 MHz of `TIMER1`: measured, not assumed).
pub fn calibrate(clock: Clock, period: u32) {
    let (n1, n2) = (100_000u32, 200_000u32);
    TIMER0.start(u32::MAX, false);
    let v0 = TIMER0.value();
    let t0 = clock.now();
    nop_loop(n1);
    let t1 = clock.now();
    nop_loop(n2);
    let t2 = clock.now();
    let v2 = TIMER0.value();
    TIMER0.stop();
    let (counts0, counts1) = (v0.wrapping_sub(v2), t2.wrapping_sub(t0));
    RATE0.store(counts0, Ordering::Relaxed);
    RATE1.store(counts1, Ordering::Relaxed);
    let reload = (u64::from(period) * u64::from(counts0) + u64::from(counts1) / 2)
        / u64::from(counts1.max(1));
    RELOAD0.store((reload as u32).saturating_sub(1), Ordering::Relaxed);
    defmt::info!(
        "calibration: TIMER0 {=u32} counts while the clock counted {=u32}: reload {=u32} for {=u32} clock counts",
        counts0,
        counts1,
        (reload as u32).saturating_sub(1),
        period
    );
    let dt = u64::from(t2.wrapping_sub(t1).wrapping_sub(t1.wrapping_sub(t0)));
    let loop_instr = NOP_LOOP_INSTRUCTIONS * u64::from(n2 - n1);
    let per = u64::from(INSTR_PER_COUNT);
    defmt::info!(
        "calibration: {=u64} loop instructions in {=u64} clock counts",
        loop_instr,
        dt
    );
    if (dt * per).abs_diff(loop_instr) > 2 * per {
        defmt::error!(
            "calibration: not {=u32} instructions per count (run QEMU with -icount shift=0)",
            INSTR_PER_COUNT
        );
        exit(false);
    }
}

/// Thread mode's time, by what it did (clock counts, net of the control
/// interrupts).
#[derive(Clone, Copy, Default)]
pub struct Shares {
    /// Waiting for ticks or for the control loop's switch.
    pub idle: Net,
    /// Learning and publishing.
    pub learning: Net,
    /// The trainer's evaluations.
    pub evaluating: Net,
}

/// Logs the two `rt:` lines: the control loop's figures and the CPU
/// shares over the `total` clock counts of the run (and the held-out
/// report's counts, after the control loop stopped).
pub fn report(rate_hz: u32, t: &Timing, shares: &Shares, total: u64, report_counts: u32) {
    let control_counts = u64::from(CONTROL_COUNTS.load(Ordering::Relaxed));
    let switches_after_first = u64::from(t.switched.saturating_sub(1)).max(1);
    let (latency_min, latency_max) = t.latency.range();
    defmt::info!(
        "rt: rate_hz {=u32} period_instr {=u32} ticks {=u32} worst_tick_instr {=u32} median_tick_instr {=u32} worst_handler_instr {=u32} latency_instr {=i32} {=i32} jitter_instr {=u32} deadline_instr {=u32} deadline_misses {=u32} overruns {=u32} dropped {=u32} switches {=u32} publish_latency_worst_instr {=u32} publish_latency_mean_instr {=u64}",
        rate_hz,
        instr(t.period),
        t.ticks,
        instr(t.to_actuator.worst()),
        instr(t.to_actuator.median()),
        instr(t.handler_worst),
        latency_min * INSTR_PER_COUNT as i32,
        latency_max * INSTR_PER_COUNT as i32,
        instr(t.offsets.spread()),
        instr(t.deadline),
        t.deadline_misses,
        t.overruns,
        t.dropped,
        t.switched,
        instr(t.publish_worst),
        t.publish_sum * u64::from(INSTR_PER_COUNT) / switches_after_first
    );
    let [idle, learning, evaluating] =
        [shares.idle, shares.learning, shares.evaluating].map(|n| n.0.max(0) as u64);
    let other = total.saturating_sub(control_counts + idle + learning + evaluating);
    defmt::info!(
        "rt: total_instr {=u64} control_permille {=u32} learning_permille {=u32} evaluation_permille {=u32} idle_permille {=u32} other_permille {=u32} report_instr {=u64}",
        total * u64::from(INSTR_PER_COUNT),
        permille(control_counts, total),
        permille(learning, total),
        permille(evaluating, total),
        permille(idle, total),
        permille(other, total),
        u64::from(report_counts) * u64::from(INSTR_PER_COUNT)
    );
}
