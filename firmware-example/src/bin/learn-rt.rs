//! PPO learns CartPole while it controls it: a 50 Hz control loop in a
//! timer interrupt acts with the published policy, the learner in thread
//! mode updates on the previous rollout and publishes — the lagged schedule
//! of `microrl::algo::ppo::lagged`, bit-identical to the desktop's
//! `LaggedPpo` run through `Trainer::run` — with its real-time behaviour
//! measured in instructions under QEMU's `-icount`.
//!
//! Design:
//! - **Two rhythms.** The control loop is the `TIMER0` interrupt (CMSDK APB
//!   timer, IRQ 8, NVIC priority 0, the highest; see
//!   [`microrl_firmware::cmsdk`] for why not SysTick), every [`PERIOD`]: it
//!   reads the plant (the simulated CartPole's state, `cursor.obs`), acts
//!   with the published policy through `behave` — normalise, sample,
//!   command the actuator, the plant steps — and pushes the `Tick` into a
//!   lock-free, allocation-free `heapless::spsc::Queue` of two rollouts
//!   (512 ticks), so the learner may take up to a rollout's time per
//!   update. At a rollout boundary (every 256 ticks) it switches to the
//!   policy the learner published, if any ([`Published`]: two slots, an
//!   `AtomicU8` front index, one atomic switch). The learner, in thread
//!   mode, waits (`WFI` on a board) until a whole rollout is queued, drains it,
//!   `ingest`s, `update`s, exports into the back slot and publishes, then
//!   runs the trainer's own evaluation gate (`Trainer::after_update`:
//!   quick and deciding evaluations on the selection stream, on its own
//!   simulated CartPole) and stop rule (`Trainer::ends_run`), and at the end
//!   the held-out report (`Trainer::finish_with`) — the steps `Trainer::run`
//!   is made of, so the desktop cannot gate differently.
//! - **Overrun rule.** If the learner has not published by a rollout
//!   boundary, the control loop keeps acting with the last published
//!   policy and counts an overrun (the run is then no longer the desktop's
//!   schedule). A full queue drops the tick and counts it. With the rates
//!   below both stay 0 (the log says so; the host test checks it).
//! - **Time.** Under `-icount shift=0` QEMU executes one instruction per
//!   virtual nanosecond and the timers count the virtual 25 MHz clock: 40
//!   instructions a count. The control period is 20 ms of a 168 MHz
//!   Cortex-M4 at the cycle model's 2.0 cycles per instruction (its
//!   estimate for the PPO update, `firmware-example/README.md`):
//!   3.36 M cycles = 1.68 M instructions = 42 000 counts. Run QEMU with
//!   `-icount shift=0`; under QEMU the learner's wait spins instead of
//!   sleeping (see [`sleep_until`]), so every interrupt is taken at its
//!   exact instruction.
//! - **Measurements** (clock counts; ×40 for instructions): per tick the
//!   latency from the timer's interrupt to the handler (`TIMER0`'s own
//!   counter), entry → actuator written (the plant wrapper [`Timed`] reads
//!   the clock when `behave` hands it the command, before the simulated
//!   physics runs) in a histogram (worst, median), the whole handler (with
//!   the physics, the reset at an episode's end and the push), the jitter
//!   (spread of the entry times' offsets from the ideal 50 Hz grid) and
//!   deadline misses (actuator written later than [`DEADLINE`], 1 ms,
//!   after the tick's ideal time); in thread mode the time asleep and the
//!   time in updates and in evaluations, each net of the interrupts inside
//!   it, so control + learning + evaluation + idle + the rest (draining,
//!   logging) is the whole run; and the publish latency, from an update's
//!   end to the control loop's switch.
//! - **Memory**: the learner (`agent::Ppo<CartPole, 32, 256>`), the queue,
//!   the drained rollout and the two policy slots in `static`s (`.bss`);
//!   the control loop's state in a `Mutex<RefCell<…>>` the interrupt takes
//!   in a critical section (it is the highest priority: nothing else waits).
//!
//! Logs `rt: …` (every figure), then `solved: …` like `train-ppo`; exits 0
//! iff solved.

#![no_std]
#![no_main]
#![deny(unsafe_code)] // one `allow`: the `DefaultHandler` signature cortex-m-rt requires

use core::cell::RefCell;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use cortex_m::interrupt::{Mutex, free};
use cortex_m_rt::{entry, exception};
use heapless::spsc::{Consumer, Producer, Queue};
use microrl::algo::{Cursor, Episode, PpoConfig, Tick, behave};
use microrl::env::{CartPole, Discrete, Env, Step};
use microrl::rand_core::{Rng, SeedableRng};
use microrl::rng::Xoshiro128pp;
use microrl::train::{Hooks, RunConfig, Trainer, report_seed, select_seed};
use microrl::{Error, SVector, agent};
use microrl_firmware::cmsdk::{Clock, TIMER0};
use microrl_firmware::icount::{NOP_LOOP_INSTRUCTIONS, nop_loop};
use microrl_firmware::latency::{Histogram, Spread};
use microrl_firmware::publish::{Published, Reader, Writer};
use microrl_firmware::run::{SEED, TrainingAgent, cartpole_run};
use microrl_firmware::{Log, exit, finish, ok_or_exit};
use rand_xoshiro::Xoshiro128PlusPlus;
use static_cell::ConstStaticCell;

type Agent = agent::Ppo<CartPole, 32, ROLLOUT>;
type Deployed = agent::Policy<CartPole, 32>;
type CartTick = Tick<4, usize>;

/// Rollout length (as `train-ppo`).
const ROLLOUT: usize = 256;
/// The queue's `N`: `heapless` holds `N − 1`, two rollouts.
const QUEUE: usize = 2 * ROLLOUT + 1;
/// Budget 100 000 steps, an evaluation after every update, early stop.
const RUN: RunConfig = cartpole_run(100_000, 1);

/// The control rate.
const RATE_HZ: u32 = 50;
/// Instructions per clock count under `-icount shift=0` (checked at start).
const INSTR_PER_COUNT: u32 = 40;
/// Cycles per instruction of the time model (module docs).
const MODEL_CPI: u32 = 2;
/// The modelled core clock.
const CORE_HZ: u32 = 168_000_000;
/// The control period in clock counts: 20 ms at 168 MHz, CPI 2.
const PERIOD: u32 = CORE_HZ / RATE_HZ / MODEL_CPI / INSTR_PER_COUNT;
/// The deadline: the actuator written within 1 ms of the tick's ideal time.
const DEADLINE: u32 = PERIOD / 20;
/// Histogram bins of one count: up to 20 480 instructions.
const BINS: usize = 512;

static AGENT: ConstStaticCell<Agent> = ConstStaticCell::new(Agent::ZERO);
static TICKS: ConstStaticCell<Queue<CartTick, QUEUE>> = ConstStaticCell::new(Queue::new());
static ROLLOUT_BUF: ConstStaticCell<[CartTick; ROLLOUT]> =
    ConstStaticCell::new([Tick::zero(0); ROLLOUT]);
static POLICIES: ConstStaticCell<Published<Deployed>> =
    ConstStaticCell::new(Published::new(Deployed::ZERO, Deployed::ZERO));
/// The control loop's state, in the interrupt's hands while it runs.
static CONTROL: Mutex<RefCell<Option<ControlLoop>>> = Mutex::new(RefCell::new(None));
/// Clock counts spent in the control interrupt so far.
static CONTROL_COUNTS: AtomicU32 = AtomicU32::new(0);
/// When the update whose policy is published ended (clock).
static UPDATE_DONE_AT: AtomicU32 = AtomicU32::new(0);
/// `TIMER0`'s reload for one [`PERIOD`] of the clock (set by [`calibrate`]).
static RELOAD0: AtomicU32 = AtomicU32::new(PERIOD - 1);
/// `TIMER0` counts and clock counts over the calibration loop: the ratio
/// of the two timers' rates (set by [`calibrate`]).
static RATE0: AtomicU32 = AtomicU32::new(1);
static RATE1: AtomicU32 = AtomicU32::new(1);
/// The control loop failed (a plant or policy error): the learner exits.
static FAULT: AtomicBool = AtomicBool::new(false);

/// The plant with its actuator's write time: `step` is where `behave`
/// hands over the command, so the clock is read there, before the
/// simulated physics (the world's part of the period) runs.
struct Timed {
    plant: CartPole,
    clock: Clock,
    written: u32,
}

impl Env for Timed {
    type Obs = SVector<f32, 4>;
    type Space = Discrete<2>;

    fn action_space(&self) -> Discrete<2> {
        self.plant.action_space()
    }

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 4> {
        self.plant.reset(rng)
    }

    fn step(&mut self, action: usize) -> Result<Step<SVector<f32, 4>>, Error> {
        self.written = self.clock.now();
        self.plant.step(action)
    }
}

/// What the control loop measures (clock counts).
struct Timing {
    /// Entry → actuator written.
    to_actuator: Histogram<BINS>,
    /// Entry → end of the handler's work (physics, reset, push included).
    handler_worst: u32,
    /// Timer interrupt → handler entry.
    latency: Spread,
    /// Entry offsets from the ideal grid `first + n · PERIOD`.
    offsets: Spread,
    /// The ideal time of tick 0 (its entry less its latency).
    grid: u32,
    deadline_misses: u32,
    overruns: u32,
    dropped: u32,
    /// Update end → switch, worst and sum over the switches after θ₀.
    publish_worst: u32,
    publish_sum: u64,
}

struct ControlLoop {
    plant: Timed,
    cursor: Cursor<SVector<f32, 4>>,
    rng: Xoshiro128pp,
    queue: Producer<'static, CartTick>,
    policy: Reader<Deployed>,
    /// Ticks acted.
    ticks: u32,
    /// Policies switched to (θ₀ is the first).
    switched: u32,
    timing: Timing,
}

impl ControlLoop {
    /// One control tick, entered at clock `entry`, `latency` counts after
    /// the timer's interrupt.
    #[inline(always)]
    fn tick(&mut self, entry: u32, latency: u32) {
        let n = self.ticks;
        let t = &mut self.timing;
        if n == 0 {
            t.grid = entry.wrapping_sub(latency);
        }
        let ideal = t.grid.wrapping_add(n.wrapping_mul(PERIOD));
        t.latency.record(latency as i32);
        t.offsets.record(entry.wrapping_sub(ideal) as i32);
        if n.is_multiple_of(ROLLOUT as u32) {
            if self.policy.switch() {
                self.switched += 1;
                if self.switched > 1 {
                    let waited = entry.wrapping_sub(UPDATE_DONE_AT.load(Ordering::Relaxed));
                    t.publish_worst = t.publish_worst.max(waited);
                    t.publish_sum += u64::from(waited);
                }
            }
            // Rollout j is acted by the policy of update j − 1 (θ₀ for 0, 1).
            let rollout = n / ROLLOUT as u32;
            if self.switched < rollout.max(1) {
                t.overruns += 1;
            }
        }
        let acted = behave(
            self.policy.front(),
            &mut self.plant,
            &mut self.cursor,
            &mut self.rng,
            &mut |_| {},
        );
        let Ok(tick) = acted else {
            FAULT.store(true, Ordering::Relaxed);
            TIMER0.stop();
            return;
        };
        let to_actuator = self.plant.written.wrapping_sub(entry);
        t.to_actuator.record(to_actuator);
        if self.plant.written.wrapping_sub(ideal) > DEADLINE {
            t.deadline_misses += 1;
        }
        if self.queue.enqueue(tick).is_err() {
            t.dropped += 1;
        }
        self.ticks = n + 1;
        let busy = self.plant.clock.now().wrapping_sub(entry);
        t.handler_worst = t.handler_worst.max(busy);
        CONTROL_COUNTS.fetch_add(busy, Ordering::Relaxed);
    }
}

/// Every external interrupt lands here (cortex-m-rt without a device
/// crate); only `TIMER0`'s is enabled. cortex-m-rt requires the
/// `DefaultHandler` to be declared `unsafe fn`; its body does nothing
/// unsafe.
#[allow(unsafe_code)]
#[exception]
unsafe fn DefaultHandler(irqn: i16) {
    let clock = Clock::running();
    let entry = clock.now();
    let since = TIMER0.since_expiry(RELOAD0.load(Ordering::Relaxed));
    TIMER0.clear_interrupt();
    // In clock counts.
    let latency = since * RATE1.load(Ordering::Relaxed) / RATE0.load(Ordering::Relaxed).max(1);
    if irqn != TIMER0.irq() as i16 {
        FAULT.store(true, Ordering::Relaxed);
        return;
    }
    free(|cs| {
        if let Some(control) = CONTROL.borrow(cs).borrow_mut().as_mut() {
            control.tick(entry, latency);
        }
    });
}

/// Thread-mode time, net of the control interrupts inside it (signed: a
/// short window's two clock reads and the interrupt's own are each
/// quantised to a count, so one window may come out a count below zero;
/// the errors cancel in the sum).
#[derive(Clone, Copy, Default)]
struct Net(i64);

impl Net {
    /// Runs `f`, adding its clock counts less the interrupts' to `self`.
    #[inline(always)]
    fn time<T>(&mut self, clock: Clock, f: impl FnOnce() -> T) -> T {
        let (t0, c0) = (clock.now(), CONTROL_COUNTS.load(Ordering::Relaxed));
        let out = f();
        let (t1, c1) = (clock.now(), CONTROL_COUNTS.load(Ordering::Relaxed));
        self.0 += i64::from(t1.wrapping_sub(t0)) - i64::from(c1.wrapping_sub(c0));
        out
    }
}

/// Waits until `ready()`; exits if the control loop failed. On a board the
/// core sleeps (`WFI`) between interrupts; under QEMU (the `semihosting`
/// build) it spins instead: QEMU 7.2's `-icount` loses timer interrupts
/// across `WFI` with `sleep=off` (993 of 2 759 periods in this run) and
/// ties them to the host's timing with `sleep=on` (entries up to 0.9 of a
/// period late on a loaded host), while a spinning core takes every
/// interrupt at its exact instruction. Idle time is the same either way:
/// the wait less the interrupts inside it.
fn sleep_until(clock: Clock, idle: &mut Net, mut ready: impl FnMut() -> bool) {
    idle.time(clock, || {
        while !ready() {
            if FAULT.load(Ordering::Relaxed) {
                defmt::error!("control loop failed (plant, policy or a stray interrupt)");
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

/// Instructions for `counts` clock counts.
fn instr(counts: u32) -> u32 {
    counts.saturating_mul(INSTR_PER_COUNT)
}

/// Per mille of `part` in `whole`.
fn permille(part: u64, whole: u64) -> u32 {
    (part * 1000 / whole.max(1)) as u32
}

/// Checks that a clock count is [`INSTR_PER_COUNT`] instructions (QEMU
/// with `-icount shift=0`), exits 1 otherwise; then measures `TIMER0`'s
/// rate against the clock's and sets its reload for one [`PERIOD`] of the
/// clock (QEMU 7.2's `mps2-an386` runs `TIMER0` at 16 MHz, not the
/// 25 MHz of `TIMER1`: measured, not assumed).
fn calibrate(clock: Clock) {
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
    let reload = (u64::from(PERIOD) * u64::from(counts0) + u64::from(counts1) / 2)
        / u64::from(counts1.max(1));
    RELOAD0.store((reload as u32).saturating_sub(1), Ordering::Relaxed);
    defmt::info!(
        "calibration: TIMER0 {=u32} counts while the clock counted {=u32}: reload {=u32} for {=u32} clock counts",
        counts0,
        counts1,
        (reload as u32).saturating_sub(1),
        PERIOD
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

#[entry]
fn main() -> ! {
    defmt::info!(
        "learn-rt: cartpole at {=u32} Hz, actor 4-32-32-2, critic 4-32-32-1, rollout {=usize}, period {=u32} instructions, agent {=usize} bytes static",
        RATE_HZ,
        ROLLOUT,
        instr(PERIOD),
        size_of::<Agent>()
    );
    let clock = Clock::start();
    calibrate(clock);
    let Some(mut peripherals) = cortex_m::Peripherals::take() else {
        exit(false)
    };

    // The desktop's start: the learner and the control loop's stream from
    // the training stream, then the trainer (which resets the plant).
    let ppo = AGENT.take();
    ppo.configure(PpoConfig::CARTPOLE, RUN.total_steps);
    let (mut plant, mut eval_env) = (CartPole::new(), CartPole::new());
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(SEED);
    let acting = ok_or_exit(ppo.init_lagged(&plant, &mut rng), "init");
    let select = Xoshiro128PlusPlus::seed_from_u64(select_seed(SEED));
    let report = Xoshiro128PlusPlus::seed_from_u64(report_seed(SEED));
    let trainer = Trainer::new(RUN, &mut plant, rng, select, report);
    let mut trainer = ok_or_exit(trainer, "start");

    // θ₀ published; the control loop switches to it at tick 0.
    let (reader, mut writer): (Reader<Deployed>, Writer<Deployed>) = POLICIES.take().split();
    if let Some(back) = writer.back() {
        ppo.export(back);
    }
    writer.publish();
    let (producer, mut consumer): (Producer<CartTick>, Consumer<CartTick>) = TICKS.take().split();
    let control = ControlLoop {
        plant: Timed {
            plant,
            clock,
            written: 0,
        },
        cursor: trainer.cursor.clone(),
        rng: acting,
        queue: producer,
        policy: reader,
        ticks: 0,
        switched: 0,
        timing: Timing {
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
        },
    };
    free(|cs| CONTROL.borrow(cs).replace(Some(control)));

    let rollout = ROLLOUT_BUF.take();
    let mut log = Log::every(1);
    let (mut idle, mut learning, mut evaluating) = (Net(0), Net(0), Net(0));
    let mut episode = (0.0f64, 0u32);
    let mut stopping = false;

    let start = clock.now();
    TIMER0.start(RELOAD0.load(Ordering::Relaxed), true);
    TIMER0.unmask(&mut peripherals.NVIC, 0);

    let steps = loop {
        sleep_until(clock, &mut idle, || consumer.len() >= ROLLOUT);
        for slot in rollout.iter_mut() {
            let Some(tick) = consumer.dequeue() else {
                exit(false)
            };
            *slot = tick;
        }
        // The training episodes, as the desktop's cursor reports them.
        for tick in rollout.iter() {
            episode.0 += f64::from(tick.reward);
            episode.1 += 1;
            if tick.terminated || tick.truncated {
                trainer.episodes += 1;
                log.on_episode(Episode {
                    ret: episode.0 as f32,
                    len: episode.1,
                });
                episode = (0.0, 0);
            }
        }
        if stopping {
            // The rollout acted while the last update ran: the schedule's end.
            break ppo.steps + ROLLOUT as u64;
        }
        let stats = learning.time(clock, || {
            ok_or_exit(ppo.ingest(&rollout[..]), "ingest");
            ok_or_exit(ppo.update(&mut trainer.rng), "update")
        });
        UPDATE_DONE_AT.store(clock.now(), Ordering::Relaxed);
        sleep_until(clock, &mut idle, || writer.ready());
        learning.time(clock, || {
            if let Some(back) = writer.back() {
                ppo.export(back);
            }
            writer.publish();
        });
        let steps = ppo.steps + ROLLOUT as u64;
        let progress = evaluating.time(clock, || {
            let gate = trainer.after_update(&*ppo, steps, 1, &stats, &mut eval_env, &mut log);
            ok_or_exit(gate, "evaluation")
        });
        stopping = trainer.ends_run(&progress, &mut log) || steps >= RUN.total_steps;
    };
    TIMER0.mask();
    TIMER0.stop();
    let total = u64::from(clock.now().wrapping_sub(start));
    let Some(control) = free(|cs| CONTROL.borrow(cs).take()) else {
        exit(false)
    };
    // The held-out report, after the control loop stopped.
    let report_start = clock.now();
    let outcome = trainer.finish_with(&*ppo, steps, &mut eval_env, &mut log);
    let outcome = ok_or_exit(outcome, "report");
    let report_counts = clock.now().wrapping_sub(report_start);

    let t = &control.timing;
    let control_counts = u64::from(CONTROL_COUNTS.load(Ordering::Relaxed));
    let switches_after_first = u64::from(control.switched.saturating_sub(1)).max(1);
    let (latency_min, latency_max) = t.latency.range();
    defmt::info!(
        "rt: rate_hz {=u32} period_instr {=u32} ticks {=u32} worst_tick_instr {=u32} median_tick_instr {=u32} worst_handler_instr {=u32} latency_instr {=i32} {=i32} jitter_instr {=u32} deadline_instr {=u32} deadline_misses {=u32} overruns {=u32} dropped {=u32} switches {=u32} publish_latency_worst_instr {=u32} publish_latency_mean_instr {=u64}",
        RATE_HZ,
        instr(PERIOD),
        control.ticks,
        instr(t.to_actuator.worst()),
        instr(t.to_actuator.median()),
        instr(t.handler_worst),
        latency_min * INSTR_PER_COUNT as i32,
        latency_max * INSTR_PER_COUNT as i32,
        instr(t.offsets.spread()),
        instr(DEADLINE),
        t.deadline_misses,
        t.overruns,
        t.dropped,
        control.switched,
        instr(t.publish_worst),
        t.publish_sum * u64::from(INSTR_PER_COUNT) / switches_after_first
    );
    let [idle, learning, evaluating] = [idle, learning, evaluating].map(|n| n.0.max(0) as u64);
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
    finish(&outcome, RUN.threshold, ppo.policy_fnv())
}
