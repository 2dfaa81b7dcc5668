//! PPO learns CartPole while it controls it: a 50 Hz control loop in a
//! timer interrupt acts with the published policy, the learner in thread
//! mode updates on the previous rollout and publishes — the lagged schedule
//! of `microrl::algo::lagged` (a rollout a block), bit-identical to the desktop's
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
//! - **Time and measurements**: [`microrl_firmware::rt`] — the control
//!   period is 20 ms of the modelled 168 MHz Cortex-M4 (1.68 M
//!   instructions), the deadline 1 ms after the tick's ideal time; the
//!   actuator's write time is read where `behave` hands the plant its
//!   command ([`rt::Timed`]), before the simulated physics runs.
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
use core::sync::atomic::Ordering;

use cortex_m::interrupt::{Mutex, free};
use cortex_m_rt::{entry, exception};
use heapless::spsc::{Consumer, Producer, Queue};
use microrl::agent;
use microrl::algo::lagged::init_lagged;
use microrl::algo::{Episode, PpoConfig, Tick};
use microrl::env::CartPole;
use microrl::rand_core::SeedableRng;
use microrl::train::{Hooks, RunConfig, Trainer, report_seed, select_seed};
use microrl_firmware::cmsdk::Clock;
use microrl_firmware::publish::{Published, Reader, Writer};
use microrl_firmware::rt::{self, Shares, Timing, UPDATE_DONE_AT, sleep_until};
use microrl_firmware::run::{SEED, TrainingAgent, cartpole_run};
use microrl_firmware::{Log, exit, finish, ok_or_exit};
use rand_xoshiro::Xoshiro128PlusPlus;
use static_cell::ConstStaticCell;

type Agent = agent::Ppo<CartPole, 32, ROLLOUT>;
type Deployed = agent::Policy<CartPole, 32>;
/// The control loop (`microrl_firmware::rt`), in the interrupt's hands while it runs.
type Control = rt::ControlLoop<CartPole, Deployed, 4>;
type CartTick = Tick<4, usize>;

/// Rollout length (as `train-ppo`).
const ROLLOUT: usize = 256;
/// The queue's `N`: `heapless` holds `N − 1`, two rollouts.
const QUEUE: usize = 2 * ROLLOUT + 1;
/// Budget 100 000 steps, an evaluation after every update, early stop.
const RUN: RunConfig = cartpole_run(100_000, 1);

/// The control rate.
const RATE_HZ: u32 = 50;
/// The control period in clock counts: 20 ms at 168 MHz, CPI 2.
const PERIOD: u32 = rt::period_counts(RATE_HZ);
/// The deadline: the actuator written within 1 ms of the tick's ideal time.
const DEADLINE: u32 = PERIOD / 20;

static AGENT: ConstStaticCell<Agent> = ConstStaticCell::new(Agent::ZERO);
static TICKS: ConstStaticCell<Queue<CartTick, QUEUE>> = ConstStaticCell::new(Queue::new());
static ROLLOUT_BUF: ConstStaticCell<[CartTick; ROLLOUT]> =
    ConstStaticCell::new([Tick::zero(0); ROLLOUT]);
static POLICIES: ConstStaticCell<Published<Deployed>> =
    ConstStaticCell::new(Published::new(Deployed::ZERO, Deployed::ZERO));
/// The control loop's state.
static CONTROL: Mutex<RefCell<Option<Control>>> = Mutex::new(RefCell::new(None));

/// Every external interrupt lands here (cortex-m-rt without a device
/// crate); only `TIMER0`'s is enabled. cortex-m-rt requires the
/// `DefaultHandler` to be declared `unsafe fn`; its body does nothing
/// unsafe.
#[allow(unsafe_code)]
#[exception]
unsafe fn DefaultHandler(irqn: i16) {
    let Some((_, entry, latency)) = rt::enter(irqn) else {
        return;
    };
    free(|cs| {
        if let Some(control) = CONTROL.borrow(cs).borrow_mut().as_mut() {
            control.tick(entry, latency);
        }
    });
}

#[entry]
fn main() -> ! {
    defmt::info!(
        "learn-rt: cartpole at {=u32} Hz, actor 4-32-32-2, critic 4-32-32-1, rollout {=usize}, period {=u32} instructions, agent {=usize} bytes static",
        RATE_HZ,
        ROLLOUT,
        rt::instr(PERIOD),
        size_of::<Agent>()
    );
    let clock = Clock::start();
    rt::calibrate(clock, PERIOD);
    let Some(mut peripherals) = cortex_m::Peripherals::take() else {
        exit(false)
    };

    // The desktop's start: the learner and the control loop's stream from
    // the training stream, then the trainer (which resets the plant).
    let ppo = AGENT.take();
    ppo.configure(PpoConfig::CARTPOLE, RUN.total_steps);
    let (mut plant, mut eval_env) = (CartPole::new(), CartPole::new());
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(SEED);
    let acting = ok_or_exit(init_lagged(ppo, &plant, &mut rng), "init");
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
        block: ROLLOUT as u32,
        acted: 0,
        timing: Timing::new(PERIOD, DEADLINE),
    };
    free(|cs| CONTROL.borrow(cs).replace(Some(control)));

    let rollout = ROLLOUT_BUF.take();
    let mut log = Log::every(1);
    let mut shares = Shares::default();
    let mut episode = (0.0f64, 0u32);
    let mut stopping = false;

    let start = clock.now();
    rt::start_control(&mut peripherals.NVIC);

    let steps = loop {
        sleep_until(clock, &mut shares.idle, || consumer.len() >= ROLLOUT);
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
        let stats = shares.learning.time(clock, || {
            ok_or_exit(ppo.ingest(&rollout[..]), "ingest");
            ok_or_exit(ppo.update(&mut trainer.rng), "update")
        });
        UPDATE_DONE_AT.store(clock.now(), Ordering::Relaxed);
        sleep_until(clock, &mut shares.idle, || writer.ready());
        shares.learning.time(clock, || {
            if let Some(back) = writer.back() {
                ppo.export(back);
            }
            writer.publish();
        });
        let steps = ppo.steps + ROLLOUT as u64;
        let progress = shares.evaluating.time(clock, || {
            let gate = trainer.after_update(&*ppo, steps, 1, &stats, &mut eval_env, &mut log);
            ok_or_exit(gate, "evaluation")
        });
        stopping = trainer.ends_run(&progress, &mut log) || steps >= RUN.total_steps;
    };
    rt::stop_control();
    let total = u64::from(clock.now().wrapping_sub(start));
    let Some(control) = free(|cs| CONTROL.borrow(cs).take()) else {
        exit(false)
    };
    // The held-out report, after the control loop stopped.
    let report_start = clock.now();
    let outcome = trainer.finish_with(&*ppo, steps, &mut eval_env, &mut log);
    let outcome = ok_or_exit(outcome, "report");
    let report_counts = clock.now().wrapping_sub(report_start);
    rt::report(RATE_HZ, &control.timing, &shares, total, report_counts);
    finish(&outcome, RUN.threshold, ppo.policy_fnv())
}
