//! A learner that learns tick by tick (the online actor-critic, SAC,
//! TD3: `microrl::algo::TickLearner`) learning a plant while it controls
//! it, on three priorities — the runtime of `learn-rt-ac` and
//! `learn-rt-sac`, for any such learner, plant and network size: a firmware
//! is [`learn_rt_lagged!`](crate::learn_rt_lagged) with its agent type, its
//! plant and its rates.
//!
//! | context | priority | does |
//! |---|---|---|
//! | `TIMER0` interrupt, every period | 0 (highest) | act with the published behaviour, write the actuator, queue the tick ([`ControlLoop`]); at every block boundary switch behaviour and pend the learner |
//! | the learner ([`LEARNER`], software-pended) | 1 | drain each whole block, one `TickLearner::ingest_tick` per tick, publish; snapshot the policies the trainer must judge ([`Learner::run`]) |
//! | thread mode | lowest | judge each snapshot in order with the trainer's gate, stop at the verdict, report |
//!
//! The policies judged are exactly those the desktop's
//! `microrl::algo::Lagged` is judged at, with its step, update and episode
//! counts, so the outcome and the weights equal the desktop's bit for bit.
//! The learner keeps learning while the verdict is computed; the snapshot
//! is the result.

use core::cell::RefCell;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use cortex_m::interrupt::{Mutex, free};
use heapless::spsc::{Consumer, Producer, Queue};
use microrl::algo::Tick;
use microrl::algo::lagged::{ActionOf, Behave, LaggedLearner, TickLearner, init_lagged};
use microrl::env::Env;
use microrl::policy::Controller;
use microrl::rand_core::SeedableRng;
use microrl::train::{Agent, Learner as Learns, RunConfig, Trainer, report_seed, select_seed};
use microrl::{Params, SVector};
use rand_xoshiro::Xoshiro128PlusPlus;

use super::{
    ControlLoop, FAULT, LEARNER_DONE, Net, Shares, TASK_COUNTS, Timed, Timing, UPDATE_DONE_AT,
    sleep_until,
};
use crate::cmsdk::{Clock, LEARNER};
use crate::progress::LogStats;
use crate::publish::{Published, Writer};
use crate::run::SEED;
use crate::{Log, exit, finish_budget, ok_or_exit, policy_fnv};

/// The learner's NVIC priority: below the control loop's 0 (the M4 keeps
/// the top 3 bits).
pub const LEARNER_PRIORITY: u8 = 0x20;

/// Thread mode's verdict is in: the learner learns no further.
static STOP: AtomicBool = AtomicBool::new(false);
/// Blocks the control loop has started (its boundaries crossed).
static BLOCKS_STARTED: AtomicU32 = AtomicU32::new(0);
/// The learner could not hand a snapshot over (the judge's queue was full).
static JUDGE_FULL: AtomicU32 = AtomicU32::new(0);

/// A policy the trainer must judge, as the desktop's `Lagged` stands after
/// the same block.
pub struct Snapshot<P, S> {
    /// The learner's deployable policy after the block.
    pub policy: P,
    /// `Agent::steps` there: blocks learned plus the one acted meanwhile.
    pub steps: u64,
    /// Gradient steps since the previous snapshot (the trainer's update count).
    pub updates: u64,
    /// Training episodes ended through the block acted meanwhile.
    pub episodes: u64,
    /// The block's statistics.
    pub stats: S,
}

impl<P, S> Snapshot<P, S> {
    /// An empty slot (a `static` initialiser).
    pub const fn empty(policy: P, stats: S) -> Self {
        Self {
            policy,
            steps: 0,
            updates: 0,
            episodes: 0,
            stats,
        }
    }
}

/// The deployable policy of `L` (what the trainer judges).
pub type DeployedOf<L> = <L as Agent>::Policy;
/// A snapshot of `L`.
pub type SnapshotOf<L, const OBS: usize> =
    Snapshot<DeployedOf<L>, <L as LaggedLearner<OBS>>::Stats>;
/// The cell the control loop of `L` on plant `P` lives in.
pub type ControlCell<P, L, const OBS: usize> =
    Mutex<RefCell<Option<ControlLoop<P, <L as LaggedLearner<OBS>>::Behaviour, OBS>>>>;
/// A tick of `L`'s control loop.
pub type TickOf<L, const OBS: usize> =
    Tick<OBS, ActionOf<<L as LaggedLearner<OBS>>::Behaviour, OBS>>;

/// The learner task's state.
pub struct Learner<L: TickLearner<OBS> + Agent + 'static, const OBS: usize> {
    /// The agent.
    pub agent: &'static mut L,
    /// The training stream (an off-policy learner's minibatches): the
    /// trainer's, cloned after its start, as the desktop's iterations draw
    /// from it.
    pub rng: Xoshiro128PlusPlus,
    /// Ticks from the control loop.
    pub ticks: Consumer<'static, TickOf<L, OBS>>,
    /// Where it publishes.
    pub writer: Writer<L::Behaviour>,
    /// Snapshots to thread mode.
    pub judge: Producer<'static, SnapshotOf<L, OBS>>,
    /// The last snapshot, waiting for the next block's episodes (valid
    /// while [`holding`](Self::holding)); built in place, never on the
    /// interrupt's stack.
    pub held: &'static mut SnapshotOf<L, OBS>,
    /// [`held`](Self::held) holds a snapshot.
    pub holding: bool,
    /// Blocks learned.
    pub blocks: u32,
    /// Ticks per block.
    pub block: usize,
    /// The run's budget and evaluation interval.
    pub run: RunConfig,
    /// Training episodes ended so far.
    pub episodes: u64,
    /// Gradient steps since the last snapshot.
    pub updates: u64,
    /// The step count of the next evaluation (the trainer's rule).
    pub next_eval: u64,
    /// The snapshot at the end of the budget is sent: nothing more to learn.
    pub finished: bool,
}

impl<L, const OBS: usize> Learner<L, OBS>
where
    L: TickLearner<OBS> + Agent + 'static,
    L::Policy: Params,
{
    /// Every whole block queued: learned tick by tick, published, and
    /// snapshotted when the trainer would judge there.
    pub fn run(&mut self, clock: Clock) {
        while !STOP.load(Ordering::Relaxed) && !self.finished && self.ticks.len() >= self.block {
            let mut stats = L::NO_STATS;
            for _ in 0..self.block {
                let Some(tick) = self.ticks.dequeue() else {
                    FAULT.store(true, Ordering::Relaxed);
                    return;
                };
                if tick.terminated || tick.truncated {
                    self.episodes += 1;
                }
                let Ok(n) = self.agent.ingest_tick(&tick, &mut self.rng, &mut stats) else {
                    FAULT.store(true, Ordering::Relaxed);
                    return;
                };
                self.updates += n;
            }
            self.blocks += 1;
            // The previous snapshot's episodes run through this block.
            if self.holding {
                self.held.episodes = self.episodes;
                let mut snapshot = Snapshot {
                    policy: <L::Policy as Params>::ZERO,
                    ..*self.held
                };
                snapshot.policy.copy_from(&self.held.policy);
                let last = snapshot.steps >= self.run.total_steps;
                if self.judge.enqueue(snapshot).is_err() {
                    // A lost judgement: the run can no longer be the
                    // desktop's (`judge_queue` too small), so it stops.
                    JUDGE_FULL.fetch_add(1, Ordering::Relaxed);
                    FAULT.store(true, Ordering::Relaxed);
                    return;
                }
                self.holding = false;
                if last {
                    // The budget's last judgement is in thread mode's
                    // hands: the desktop's run learns no further.
                    self.finished = true;
                    LEARNER_DONE.store(true, Ordering::Relaxed);
                    return;
                }
            }
            UPDATE_DONE_AT.store(clock.now(), Ordering::Relaxed);
            // Block j's behaviour acts from block j + 2: publish only once
            // block j + 1 has started (and the control loop has switched to
            // the last publish). The control loop preempts this task, so
            // the waits end at its next tick at the latest.
            while BLOCKS_STARTED.load(Ordering::Acquire) < self.blocks + 1 {}
            while !self.writer.ready() {}
            if let Some(back) = self.writer.back() {
                self.agent.publish(back);
            }
            self.writer.publish();
            let steps = self.agent.ticks_learned() + self.block as u64;
            if steps >= self.next_eval || steps >= self.run.total_steps {
                while self.next_eval <= steps {
                    self.next_eval = self.next_eval.saturating_add(self.run.eval_interval);
                }
                self.agent.export(&mut self.held.policy);
                self.held.steps = steps;
                self.held.updates = self.updates;
                self.held.stats = L::block_stats(stats, self.block);
                self.holding = true;
                self.updates = 0;
            }
        }
    }
}

/// The learner task (priority 1): its state taken out of `cell` in a short
/// critical section, run with interrupts on, put back.
pub fn learner_task<L, const OBS: usize>(cell: &Mutex<RefCell<Option<Learner<L, OBS>>>>)
where
    L: TickLearner<OBS> + Agent + 'static,
    L::Policy: Params,
{
    let clock = Clock::running();
    let Some(mut learner) = free(|cs| cell.borrow(cs).take()) else {
        return;
    };
    let mut net = Net(0);
    net.time(clock, || learner.run(clock));
    TASK_COUNTS.fetch_add(net.0.max(0) as u32, Ordering::Relaxed);
    free(|cs| cell.borrow(cs).replace(Some(learner)));
}

/// The `static` storage of one run ([`learn_rt_lagged!`](crate::learn_rt_lagged)
/// declares it): the tick queue of `N − 1` ticks (two blocks), the judge's
/// queue of `J − 1` snapshots, the published behaviour's two slots, the
/// held snapshot, and the cells the control loop and the learner live in.
pub struct Statics<P, L, const OBS: usize, const N: usize, const J: usize>
where
    L: TickLearner<OBS> + Agent + 'static,
    L::Behaviour: 'static,
    P: 'static,
{
    /// Control loop → learner.
    pub ticks: &'static mut Queue<TickOf<L, OBS>, N>,
    /// Learner → thread mode.
    pub judge: &'static mut Queue<SnapshotOf<L, OBS>, J>,
    /// The published behaviour's two slots.
    pub policies: &'static mut Published<L::Behaviour>,
    /// The held snapshot's slot.
    pub held: &'static mut SnapshotOf<L, OBS>,
    /// The control loop's cell.
    pub control: &'static ControlCell<P, L, OBS>,
    /// The learner's cell.
    pub learning: &'static Mutex<RefCell<Option<Learner<L, OBS>>>>,
}

/// Every external interrupt: the learner's task, or the control tick
/// (which pends the learner at the end of a block).
#[inline(always)]
pub fn on_interrupt<P, L, const OBS: usize>(
    irqn: i16,
    control: &ControlCell<P, L, OBS>,
    learning: &Mutex<RefCell<Option<Learner<L, OBS>>>>,
) where
    P: Env<Obs = SVector<f32, OBS>, Space = <L::Behaviour as Behave<OBS>>::Space>,
    L: TickLearner<OBS> + Agent + 'static,
    L::Behaviour: 'static,
    L::Policy: Params,
{
    if irqn == LEARNER.irq() as i16 {
        learner_task(learning);
        return;
    }
    let Some((_, entry, latency)) = super::enter(irqn) else {
        return;
    };
    free(|cs| {
        if let Some(control) = control.borrow(cs).borrow_mut().as_mut() {
            if control.timing.ticks.is_multiple_of(control.block) {
                BLOCKS_STARTED.fetch_add(1, Ordering::Release);
            }
            if control.tick(entry, latency) {
                // A block is queued: the learner's turn, once this returns.
                LEARNER.pend();
            }
        }
    });
}

/// Learns `plant` with `agent` (configured) while controlling it at
/// `rate_hz`, the behaviour switched every `block` ticks, judged and
/// stopped by `run`, from the firmware's seed — the desktop's
/// `Lagged<…, block>` run through `Trainer::run`, bit for bit. `eval_env`
/// is the trainer's own simulated plant. Logs the `rt:` lines and the
/// `trained:` line and exits (0 when the run completed in real time).
#[allow(clippy::too_many_arguments)]
pub fn run<P, L, const OBS: usize, const N: usize, const J: usize>(
    agent: &'static mut L,
    mut plant: P,
    mut eval_env: P,
    run: RunConfig,
    rate_hz: u32,
    block: usize,
    statics: Statics<P, L, OBS, N, J>,
) -> !
where
    P: Env<Obs = SVector<f32, OBS>, Space = <L::Behaviour as Behave<OBS>>::Space> + 'static,
    L: TickLearner<OBS> + Agent + Learns<P> + 'static,
    L::Behaviour: 'static,
    L::Policy: Params + Controller<OBS, Action = ActionOf<L::Behaviour, OBS>>,
    <L as LaggedLearner<OBS>>::Stats: LogStats,
{
    if !run.early_stop {
        // After a solve the trainer judges every `solved_eval_interval`
        // steps, a grid the learner's snapshots do not follow.
        defmt::error!("learn_rt_lagged: RunConfig::early_stop must be on");
        exit(false);
    }
    let period = super::period_counts(rate_hz);
    let clock = Clock::start();
    super::calibrate(clock, period);
    let Some(mut peripherals) = cortex_m::Peripherals::take() else {
        exit(false)
    };

    // The desktop's start (`Lagged`'s `init`, then `Trainer::start`).
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(SEED);
    let acting = ok_or_exit(init_lagged(agent, &plant, &mut rng), "init");
    let select = Xoshiro128PlusPlus::seed_from_u64(select_seed(SEED));
    let report = Xoshiro128PlusPlus::seed_from_u64(report_seed(SEED));
    let trainer = Trainer::new(run, &mut plant, rng, select, report);
    let mut trainer = ok_or_exit(trainer, "start");

    let (reader, mut writer) = statics.policies.split();
    if let Some(back) = writer.back() {
        agent.publish(back);
    }
    writer.publish();
    let (producer, consumer) = statics.ticks.split();
    let (to_judge, mut judged) = statics.judge.split();
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
        block: block as u32,
        acted: 0,
        // The deadline: the actuator written within a fifth of the period.
        timing: Timing::new(period, period / 5),
    };
    let learner = Learner {
        agent,
        rng: trainer.rng.clone(),
        ticks: consumer,
        writer,
        judge: to_judge,
        held: statics.held,
        holding: false,
        blocks: 0,
        block,
        run,
        episodes: 0,
        updates: 0,
        next_eval: run.eval_interval,
        finished: false,
    };
    free(|cs| {
        statics.control.borrow(cs).replace(Some(control));
        statics.learning.borrow(cs).replace(Some(learner));
    });

    let mut log = Log::every(1);
    let mut shares = Shares::default();
    let start = clock.now();
    LEARNER.unmask(&mut peripherals.NVIC, LEARNER_PRIORITY);
    super::start_control(&mut peripherals.NVIC);

    // Thread mode: judge each snapshot in order, as `Trainer::run` judges
    // after each of the desktop's iterations.
    // Each snapshot is judged in place (`peek`), not moved onto thread
    // mode's stack: a snapshot holds a policy (2.9 KB for `learn-rt-sac`),
    // and thread mode's stack lies under the learner's and the control
    // loop's interrupts. The last stays queued for the report.
    loop {
        sleep_until(clock, &mut shares.idle, || judged.ready());
        let Some(snapshot) = judged.peek() else {
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
        if trainer.ends_run(&progress, &mut log) || snapshot.steps >= run.total_steps {
            break;
        }
        let _ = judged.dequeue();
    }
    STOP.store(true, Ordering::Relaxed);
    LEARNER.mask();
    super::stop_control();
    let total = u64::from(clock.now().wrapping_sub(start));
    let Some(control) = free(|cs| statics.control.borrow(cs).take()) else {
        exit(false)
    };
    let blocks_learned = free(|cs| {
        statics
            .learning
            .borrow(cs)
            .borrow()
            .as_ref()
            .map_or(0, |l| l.agent.ticks_learned())
    }) / block as u64;
    shares.learning = Net(i64::from(TASK_COUNTS.load(Ordering::Relaxed)));
    let report_start = clock.now();
    let Some(last) = judged.peek() else {
        exit(false)
    };
    let outcome = trainer.finish_with(&last.policy, last.steps, &mut eval_env, &mut log);
    let outcome = ok_or_exit(outcome, "report");
    let report_counts = clock.now().wrapping_sub(report_start);
    super::report(rate_hz, &control.timing, &shares, total, report_counts);
    defmt::info!(
        "rt: judge_queue_full {=u32} blocks_learned {=u64} judged_at_steps {=u64}",
        JUDGE_FULL.load(Ordering::Relaxed),
        blocks_learned,
        last.steps
    );
    finish_budget(&outcome, run.threshold, policy_fnv(&last.policy))
}

/// A learn-while-controlling firmware for a learner that learns tick by
/// tick (`microrl::algo::TickLearner`: the online actor-critic, SAC, TD3)
/// in one macro call: the `static`s (agent, tick queue of two blocks, the
/// judge's queue, the published behaviour, the control loop's and
/// learner's cells), the interrupt handler and `main`, which logs `banner`
/// (with the agent's size), sets the agent's `config` and calls
/// [`run`](crate::rt::lagged::run). `config` is the desktop's: for the
/// online actor-critic, `total_steps` is the run's budget (as `microrl
/// train` sets it), or its learning-rate schedules differ. `judge_queue`
/// is how many snapshots may await judgement; a snapshot the queue cannot
/// take stops the run with a fault (it could no longer be the desktop's).
///
/// `plant` is any `Env` — a simulation, or real sensors and an actuator
/// behind [`PlantEnv`](crate::plant::PlantEnv). `new_plant` is evaluated
/// twice: the plant the control loop drives and the trainer's own copy
/// that the evaluations run on, so the gate needs a simulation of the
/// plant; without one, set `quick_episodes: 0` in `run` (no gate: the run
/// learns to its budget) and judge the policy on the real plant with
/// `microrl::safety`'s running-performance check instead.
///
/// ```ignore
/// microrl_firmware::learn_rt_lagged! {
///     agent: agent::ActorCritic<Servo, 8>,  // the learner
///     plant: Servo, obs: 3,                 // the plant and its observation size
///     new_plant: Servo::new(),              // the controlled plant (and the trainer's copy)
///     config: AcConfig { total_steps: 100_000, ..AcConfig::PLANT },
///     run: RUN,                             // budget, evaluation interval, threshold
///     rate_hz: 1_000, block: 250,           // control rate, ticks per behaviour switch
///     judge_queue: 16,                      // snapshots that may await judgement
///     banner: "servo at 1 kHz, agent {=usize} bytes static",
/// }
/// ```
#[macro_export]
macro_rules! learn_rt_lagged {
    (
        agent: $agent:ty,
        plant: $plant:ty,
        obs: $obs:literal,
        new_plant: $new:expr,
        config: $config:expr,
        run: $run:expr,
        rate_hz: $rate:expr,
        block: $block:expr,
        judge_queue: $judge:expr,
        banner: $banner:literal $(,)?
    ) => {
        type RtAgent = $agent;
        type RtBehaviour = <RtAgent as $crate::microrl::algo::LaggedLearner<$obs>>::Behaviour;
        type RtDeployed = $crate::rt::lagged::DeployedOf<RtAgent>;
        type RtSnapshot = $crate::rt::lagged::SnapshotOf<RtAgent, $obs>;
        type RtTick = $crate::rt::lagged::TickOf<RtAgent, $obs>;
        /// Ticks per block.
        const RT_BLOCK: usize = $block;
        /// The tick queue's `N`: `heapless` holds `N − 1`, two blocks.
        const RT_QUEUE: usize = 2 * RT_BLOCK + 1;
        /// The judge's queue's `N`: `heapless` holds `N − 1` snapshots.
        const RT_JUDGE: usize = $judge + 1;
        const _: () = assert!(
            RT_BLOCK > 0,
            "learn_rt_lagged!: block must be at least 1 tick"
        );
        const _: () = assert!(
            $judge > 0,
            "learn_rt_lagged!: judge_queue must hold at least 1 snapshot"
        );

        static AGENT: $crate::static_cell::ConstStaticCell<RtAgent> =
            $crate::static_cell::ConstStaticCell::new(
                <RtAgent as $crate::microrl::algo::LaggedLearner<$obs>>::ZERO,
            );
        static TICKS: $crate::static_cell::ConstStaticCell<
            $crate::heapless::spsc::Queue<RtTick, RT_QUEUE>,
        > = $crate::static_cell::ConstStaticCell::new($crate::heapless::spsc::Queue::new());
        static JUDGE: $crate::static_cell::ConstStaticCell<
            $crate::heapless::spsc::Queue<RtSnapshot, RT_JUDGE>,
        > = $crate::static_cell::ConstStaticCell::new($crate::heapless::spsc::Queue::new());
        static POLICIES: $crate::static_cell::ConstStaticCell<
            $crate::publish::Published<RtBehaviour>,
        > = $crate::static_cell::ConstStaticCell::new($crate::publish::Published::new(
            <RtAgent as $crate::microrl::algo::LaggedLearner<$obs>>::ZERO_BEHAVIOUR,
            <RtAgent as $crate::microrl::algo::LaggedLearner<$obs>>::ZERO_BEHAVIOUR,
        ));
        static HELD: $crate::static_cell::ConstStaticCell<RtSnapshot> =
            $crate::static_cell::ConstStaticCell::new($crate::rt::lagged::Snapshot::empty(
                <RtDeployed as $crate::microrl::Params>::ZERO,
                <RtAgent as $crate::microrl::algo::TickLearner<$obs>>::NO_STATS,
            ));
        static CONTROL: $crate::cortex_m::interrupt::Mutex<
            ::core::cell::RefCell<Option<$crate::rt::ControlLoop<$plant, RtBehaviour, $obs>>>,
        > = $crate::cortex_m::interrupt::Mutex::new(::core::cell::RefCell::new(None));
        static LEARNING: $crate::cortex_m::interrupt::Mutex<
            ::core::cell::RefCell<Option<$crate::rt::lagged::Learner<RtAgent, $obs>>>,
        > = $crate::cortex_m::interrupt::Mutex::new(::core::cell::RefCell::new(None));

        /// Every external interrupt lands here (cortex-m-rt without a
        /// device crate): the control loop's timer and the learner's
        /// software-pended line. cortex-m-rt requires the `DefaultHandler`
        /// to be declared `unsafe fn`; its body does nothing unsafe.
        #[allow(unsafe_code)]
        #[$crate::cortex_m_rt::exception]
        unsafe fn DefaultHandler(irqn: i16) {
            $crate::rt::lagged::on_interrupt(irqn, &CONTROL, &LEARNING);
        }

        #[$crate::cortex_m_rt::entry]
        fn main() -> ! {
            ::defmt::info!($banner, size_of::<RtAgent>());
            let statics = $crate::rt::lagged::Statics {
                ticks: TICKS.take(),
                judge: JUDGE.take(),
                policies: POLICIES.take(),
                held: HELD.take(),
                control: &CONTROL,
                learning: &LEARNING,
            };
            let agent = AGENT.take();
            agent.config = $config;
            $crate::rt::lagged::run(agent, $new, $new, $run, $rate, RT_BLOCK, statics)
        }
    };
}
