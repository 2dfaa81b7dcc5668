//! The online actor-critic learns the DC-motor servo while it controls it
//! at 1 kHz: the `TIMER0` interrupt acts every millisecond with the
//! published policy, the learner in thread mode steps through the previous
//! block of ticks and publishes — the lagged schedule of
//! `microrl::algo::ac::lagged`, bit-identical to the desktop's `LaggedAc`
//! run through `Trainer::run` — with its real-time behaviour measured in
//! instructions under QEMU's `-icount` ([`microrl_firmware::rt`]).
//!
//! Design:
//! - **Three priorities** (the RTIC/embassy `multiprio` pattern, on bare
//!   NVIC priorities): the control loop is the `TIMER0` interrupt at
//!   priority 0 (every millisecond: act, write the actuator, queue the
//!   tick); the learner is a software-pended interrupt
//!   ([`microrl_firmware::cmsdk::LEARNER`]) at priority 1, raised by the
//!   control loop at each block boundary — it drains the block tick by tick
//!   (`ingest`: one TD step weighted by the truncated importance ratio,
//!   straight from the queue, so no block buffer), publishes, and hands the
//!   policies the trainer must judge to thread mode; thread mode runs the
//!   trainer's evaluations on its own simulated servo, with whatever time
//!   is left. The learner therefore keeps pace with the plant however long
//!   an evaluation takes, and an evaluation never delays a publish.
//! - **Blocks**: the control loop switches policy only at a block boundary
//!   (every [`BLOCK`] ticks, 0.25 s); block j is acted by the policy the
//!   learner published after block j − 2. The tick queue holds two blocks.
//! - **Deterministic judging**: the policies judged are exactly the
//!   desktop's — a snapshot of the learner's policy after each block whose
//!   step count reaches the next evaluation (`Trainer::after_update`'s
//!   rule), with the step, update and episode counts the desktop's
//!   `LaggedAc` has there — judged in order by `Trainer::after_update` with
//!   the selection stream. The run stops at the first snapshot that solves
//!   (or at the budget); its weights and outcome are the desktop's, bit for
//!   bit. The learner may have learned further blocks while the verdict was
//!   computed; they are discarded (the snapshot is the result).
//! - **The plant**: `microrl::env::Servo` (armature current, Coulomb
//!   friction, dead-zone, saturation; integrated in `f64`, 10 sub-steps a
//!   period), a random start angle and target per 0.5 s episode. Its
//!   physics runs in the interrupt after the actuator is written ([`rt::Timed`]),
//!   as the world's part of the period.
//! - **The learner's size**: `agent::ActorCritic<Servo, 8>` (3-8-8-1
//!   Gaussian actor, 3-8-8-1 critic) with `AcConfig::PLANT` (reward
//!   scaling, a 10 000-step critic warm-up): one online step takes about a
//!   third of a millisecond of the modelled 168 MHz core.
//! - **Judged**: every [`EVAL_INTERVAL`] steps (10 quick episodes; 100
//!   deciding ones when the quick mean passes), solved at a mean of −50 (a
//!   mean tracking error under a tenth of a turn; not commanding the motor
//!   scores about −160).
//!
//! Logs `rt: …` (every figure), then `trained: …` (the outcome, solved or
//! not, and the weights' checksum); exits 0 when the run completed in real
//! time (an error, a stray interrupt or a failed calibration exits 1).

#![no_std]
#![no_main]
#![deny(unsafe_code)] // one `allow`: the `DefaultHandler` signature cortex-m-rt requires

use core::cell::RefCell;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use cortex_m::interrupt::{Mutex, free};
use cortex_m_rt::{entry, exception};
use heapless::spsc::{Consumer, Producer, Queue};
use microrl::algo::{AcConfig, AcStats, Tick};
use microrl::env::{Env, Servo};
use microrl::rand_core::SeedableRng;
use microrl::train::{RunConfig, Trainer, report_seed, select_seed};
use microrl::{SVector, agent};
use microrl_firmware::cmsdk::{Clock, LEARNER};
use microrl_firmware::publish::{Published, Reader, Writer};
use microrl_firmware::rt::{self, FAULT, Net, Shares, Timing, UPDATE_DONE_AT, sleep_until};
use microrl_firmware::run::{SEED, TrainingAgent};
use microrl_firmware::{Log, exit, finish_budget, ok_or_exit, params_fnv};
use rand_xoshiro::Xoshiro128PlusPlus;
use static_cell::ConstStaticCell;

/// Hidden width of both networks.
const H: usize = 8;
type Agent = agent::ActorCritic<Servo, H>;
type Deployed = agent::Policy<Servo, H>;
/// The actor inside it, as the control loop's generic parts name it.
type Actor = <<Servo as Env>::Space as agent::ActorFor>::Actor<3, H>;
/// The control loop (`microrl_firmware::rt`), in the interrupt's hands while it runs.
type Control = rt::ControlLoop<Servo, Actor, 3>;
type ServoTick = Tick<3, SVector<f32, 1>>;

/// Ticks per block: the control loop switches policy every 0.25 s (a
/// quarter of a second of lag: on the desktop, seeds 0–4, the schedule
/// solved 4 of 5 with blocks of 250 and of 100 ticks, 3 of 5 with 1 000;
/// `docs/firmware.md`).
const BLOCK: usize = 250;
/// The tick queue's `N`: `heapless` holds `N − 1`, two blocks.
const QUEUE: usize = 2 * BLOCK + 1;
/// Snapshots awaiting judgement (`N − 1`): a deciding evaluation of 100
/// episodes takes about 40 s of the evaluator's share, 8 snapshots' worth.
const SNAPSHOTS: usize = 17;
/// Judge every 5 000 steps (5 s of control).
const EVAL_INTERVAL: u64 = 5_000;
/// Budget 100 000 steps (100 s of control), early stop at −50.
const RUN: RunConfig = RunConfig {
    eval_interval: EVAL_INTERVAL,
    ..RunConfig::new(100_000, -50.0)
};

/// The control rate.
const RATE_HZ: u32 = 1_000;
/// The control period in clock counts: 1 ms at 168 MHz, CPI 2.
const PERIOD: u32 = rt::period_counts(RATE_HZ);
/// The deadline: the actuator written within a fifth of the period (200 µs)
/// of the tick's ideal time.
const DEADLINE: u32 = PERIOD / 5;
/// The learner's NVIC priority: below the control loop's 0 (the M4 keeps
/// the top 3 bits).
const LEARNER_PRIORITY: u8 = 0x20;

/// A policy the trainer must judge, as the desktop's `LaggedAc` stands
/// after the same block.
struct Snapshot {
    policy: Deployed,
    /// `Agent::steps` there: blocks learned plus the one acted meanwhile.
    steps: u64,
    /// Online steps since the previous snapshot (the trainer's update count).
    updates: u64,
    /// Training episodes ended through the block acted meanwhile.
    episodes: u64,
    /// The block's mean statistics.
    stats: AcStats,
}

static AGENT: ConstStaticCell<Agent> = ConstStaticCell::new(Agent::ZERO);
static TICKS: ConstStaticCell<Queue<ServoTick, QUEUE>> = ConstStaticCell::new(Queue::new());
static JUDGE: ConstStaticCell<Queue<Snapshot, SNAPSHOTS>> = ConstStaticCell::new(Queue::new());
static POLICIES: ConstStaticCell<Published<Deployed>> =
    ConstStaticCell::new(Published::new(Deployed::ZERO, Deployed::ZERO));
static HELD: ConstStaticCell<Option<Snapshot>> = ConstStaticCell::new(None);
/// The control loop's state.
static CONTROL: Mutex<RefCell<Option<Control>>> = Mutex::new(RefCell::new(None));
/// The learner's state: taken out for the task's run (no critical section
/// while it learns), put back after.
static LEARNING: Mutex<RefCell<Option<Learner>>> = Mutex::new(RefCell::new(None));
/// Thread mode's verdict is in: the learner learns no further.
static STOP: AtomicBool = AtomicBool::new(false);
/// The learner could not hand a snapshot over (the judge's queue was full).
static JUDGE_FULL: AtomicU32 = AtomicU32::new(0);

/// The learner task's state.
struct Learner {
    ac: &'static mut Agent,
    ticks: Consumer<'static, ServoTick>,
    writer: Writer<Deployed>,
    judge: Producer<'static, Snapshot>,
    /// The last snapshot, waiting for the next block's episodes.
    held: &'static mut Option<Snapshot>,
    /// Training episodes ended so far.
    episodes: u64,
    /// Online steps since the last snapshot.
    updates: u64,
    /// The step count of the next evaluation (the trainer's rule).
    next_eval: u64,
}

impl Learner {
    /// Every whole block queued: learned tick by tick, published, and
    /// snapshotted when the trainer would judge there.
    fn run(&mut self, clock: Clock) {
        while !STOP.load(Ordering::Relaxed) && self.ticks.len() >= BLOCK {
            let mut sum = AcStats::default();
            for _ in 0..BLOCK {
                let Some(tick) = self.ticks.dequeue() else {
                    FAULT.store(true, Ordering::Relaxed);
                    return;
                };
                if tick.terminated || tick.truncated {
                    self.episodes += 1;
                }
                let Ok(s) = self.ac.ingest(&tick) else {
                    FAULT.store(true, Ordering::Relaxed);
                    return;
                };
                sum.delta += s.delta;
                sum.value += s.value;
                sum.entropy += s.entropy;
            }
            self.updates += BLOCK as u64;
            // The previous snapshot's episodes run through this block.
            if let Some(mut snapshot) = self.held.take() {
                snapshot.episodes = self.episodes;
                if self.judge.enqueue(snapshot).is_err() {
                    JUDGE_FULL.fetch_add(1, Ordering::Relaxed);
                }
            }
            UPDATE_DONE_AT.store(clock.now(), Ordering::Relaxed);
            // The control loop switched to the last publish at this
            // block's start; it preempts this task, so the wait is short.
            while !self.writer.ready() {}
            if let Some(back) = self.writer.back() {
                self.ac.export(back);
            }
            self.writer.publish();
            let steps = self.ac.steps + BLOCK as u64;
            if steps >= self.next_eval || steps >= RUN.total_steps {
                while self.next_eval <= steps {
                    self.next_eval += RUN.eval_interval;
                }
                let n = BLOCK as f32;
                let mut policy = Deployed::ZERO;
                self.ac.export(&mut policy);
                *self.held = Some(Snapshot {
                    policy,
                    steps,
                    updates: self.updates,
                    episodes: 0,
                    stats: AcStats {
                        delta: sum.delta / n,
                        value: sum.value / n,
                        entropy: sum.entropy / n,
                    },
                });
                self.updates = 0;
            }
        }
    }
}

/// Every external interrupt lands here (cortex-m-rt without a device
/// crate); only `TIMER0`'s is enabled. cortex-m-rt requires the
/// `DefaultHandler` to be declared `unsafe fn`; its body does nothing
/// unsafe.
#[allow(unsafe_code)]
#[exception]
unsafe fn DefaultHandler(irqn: i16) {
    if irqn == LEARNER.irq() as i16 {
        learner_task();
        return;
    }
    let Some((_, entry, latency)) = rt::enter(irqn) else {
        return;
    };
    free(|cs| {
        if let Some(control) = CONTROL.borrow(cs).borrow_mut().as_mut()
            && control.tick(entry, latency)
        {
            // A block is queued: the learner's turn, once this returns.
            LEARNER.pend();
        }
    });
}

/// The learner task (priority 1): its state taken out of [`LEARNING`] in
/// a short critical section, run with interrupts on, put back.
fn learner_task() {
    let clock = Clock::running();
    let Some(mut learner) = free(|cs| LEARNING.borrow(cs).take()) else {
        return;
    };
    let mut net = Net(0);
    net.time(clock, || learner.run(clock));
    rt::TASK_COUNTS.fetch_add(net.0.max(0) as u32, Ordering::Relaxed);
    free(|cs| LEARNING.borrow(cs).replace(Some(learner)));
}

#[entry]
fn main() -> ! {
    defmt::info!(
        "learn-rt-ac: servo at {=u32} Hz, actor 3-8-8-1, critic 3-8-8-1, block {=usize}, period {=u32} instructions, agent {=usize} bytes static",
        RATE_HZ,
        BLOCK,
        rt::instr(PERIOD),
        size_of::<Agent>()
    );
    let clock = Clock::start();
    rt::calibrate(clock, PERIOD);
    let Some(mut peripherals) = cortex_m::Peripherals::take() else {
        exit(false)
    };

    // The desktop's start (`LaggedAc`'s `init`, then `Trainer::start`).
    let ac = AGENT.take();
    ac.configure(AcConfig::PLANT, RUN.total_steps);
    let (mut plant, mut eval_env) = (Servo::new(), Servo::new());
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(SEED);
    let acting = ok_or_exit(ac.init_lagged(&plant, &mut rng), "init");
    let select = Xoshiro128PlusPlus::seed_from_u64(select_seed(SEED));
    let report = Xoshiro128PlusPlus::seed_from_u64(report_seed(SEED));
    let trainer = Trainer::new(RUN, &mut plant, rng, select, report);
    let mut trainer = ok_or_exit(trainer, "start");

    let (reader, mut writer): (Reader<Deployed>, Writer<Deployed>) = POLICIES.take().split();
    if let Some(back) = writer.back() {
        ac.export(back);
    }
    writer.publish();
    let (producer, consumer): (Producer<ServoTick>, Consumer<ServoTick>) = TICKS.take().split();
    let (to_judge, mut judged): (Producer<Snapshot>, Consumer<Snapshot>) = JUDGE.take().split();
    let control = Control {
        plant: rt::Timed {
            plant,
            clock,
            written: 0,
        },
        cursor: trainer.cursor.clone(),
        rng: acting,
        queue: producer,
        policy: reader,
        block: BLOCK as u32,
        timing: Timing::new(PERIOD, DEADLINE),
    };
    let learner = Learner {
        ac,
        ticks: consumer,
        writer,
        judge: to_judge,
        held: HELD.take(),
        episodes: 0,
        updates: 0,
        next_eval: RUN.eval_interval,
    };
    free(|cs| {
        CONTROL.borrow(cs).replace(Some(control));
        LEARNING.borrow(cs).replace(Some(learner));
    });

    let mut log = Log::every(1);
    let mut shares = Shares::default();
    let start = clock.now();
    LEARNER.unmask(&mut peripherals.NVIC, LEARNER_PRIORITY);
    rt::start_control(&mut peripherals.NVIC);

    // Thread mode: judge each snapshot in order, as `Trainer::run` judges
    // after each of the desktop's iterations.
    let last = loop {
        sleep_until(clock, &mut shares.idle, || judged.ready());
        let Some(snapshot) = judged.dequeue() else {
            exit(false)
        };
        trainer.episodes = snapshot.episodes;
        let progress = shares.evaluating.time(clock, || {
            let gate = trainer.after_update(
                &snapshot.policy,
                snapshot.steps,
                snapshot.updates,
                &snapshot.stats,
                &mut eval_env,
                &mut log,
            );
            ok_or_exit(gate, "evaluation")
        });
        if trainer.ends_run(&progress, &mut log) || snapshot.steps >= RUN.total_steps {
            break snapshot;
        }
    };
    STOP.store(true, Ordering::Relaxed);
    LEARNER.mask();
    rt::stop_control();
    let total = u64::from(clock.now().wrapping_sub(start));
    let Some(control) = free(|cs| CONTROL.borrow(cs).take()) else {
        exit(false)
    };
    shares.learning = Net(i64::from(rt::TASK_COUNTS.load(Ordering::Relaxed)));
    let report_start = clock.now();
    let outcome = trainer.finish_with(&last.policy, last.steps, &mut eval_env, &mut log);
    let outcome = ok_or_exit(outcome, "report");
    let report_counts = clock.now().wrapping_sub(report_start);
    rt::report(RATE_HZ, &control.timing, &shares, total, report_counts);
    defmt::info!(
        "rt: judge_queue_full {=u32} blocks_learned {=u64} judged_at_steps {=u64}",
        JUDGE_FULL.load(Ordering::Relaxed),
        free(|cs| LEARNING
            .borrow(cs)
            .borrow()
            .as_ref()
            .map_or(0, |l| l.ac.steps))
            / BLOCK as u64,
        last.steps
    );
    finish_budget(
        &outcome,
        RUN.threshold,
        params_fnv(&last.policy.actor, &last.policy.obs_norm),
    )
}
