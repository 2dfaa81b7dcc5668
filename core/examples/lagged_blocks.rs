//! How the lagged schedule's block length costs SAC on Pendulum: the
//! learn-while-controlling firmware `learn-rt-sac`'s agent (3-24-24 actor,
//! twin 4-24-24-1 critics, minibatches of 64, RL Zoo's settings) trained
//! through the core's `Trainer` for seeds 0–4, 20 000 steps, judged every
//! 1 000, solved at −200 — blocking (`agent::Sac`) or on the lagged
//! schedule with blocks of 1, 5, 20, 50 or 100 ticks (`agent::LaggedSac`),
//! with a replay ring of 2 000 or 1 500 transitions. With `fast-math`, the
//! firmware's maths (`docs/firmware.md`, "Block length"):
//!
//! ```sh
//! cargo run --release -p microrl --features fast-math,std --example lagged_blocks -- 2000 blocking 1 5 20 50 100
//! cargo run --release -p microrl --features fast-math,std --example lagged_blocks -- 1500 blocking 5
//! ```

use microrl::agent;
use microrl::algo::SacConfig;
use microrl::env::{Env, Pendulum};
use microrl::train::{Learner, RunConfig, Trainer};
use rand_xoshiro::Xoshiro128PlusPlus;

/// One run of `agent` (boxed by the caller: SAC is ~120 KB) from `seed`:
/// the solving step (if any) and the held-out mean.
fn run<L: Learner<Pendulum>>(agent: &mut L, seed: u64) -> (Option<u64>, f32) {
    let (mut env, mut eval_env) = (Pendulum::new(), Pendulum::new());
    let run = RunConfig {
        eval_interval: 1_000,
        ..RunConfig::new(20_000, Pendulum::SOLVED_RETURN)
    };
    let mut trainer =
        Trainer::<_, Xoshiro128PlusPlus>::start(agent, &mut env, run, seed).expect("a valid run");
    let outcome = trainer
        .run(agent, &mut env, &mut eval_env, &mut ())
        .expect("training");
    (outcome.solved_at_step, outcome.report.mean)
}

/// SAC with a ring of `CAP`, blocking or lagged by `block` ticks.
fn runs<const CAP: usize>(schedule: &str) {
    let config = SacConfig {
        buffer_size: CAP as u32,
        batch_size: 64,
        ..SacConfig::PENDULUM
    };
    // Built on the heap in place (`boxed`), never on the stack.
    let mut solved = 0;
    for seed in 0..5 {
        let (at, mean) = match schedule {
            "blocking" => run(
                &mut *agent::Sac::<Pendulum, 24, CAP, 64, 4>::boxed(config),
                seed,
            ),
            "1" => run(
                &mut *agent::LaggedSac::<Pendulum, 24, CAP, 64, 4, 1>::boxed(config),
                seed,
            ),
            "5" => run(
                &mut *agent::LaggedSac::<Pendulum, 24, CAP, 64, 4, 5>::boxed(config),
                seed,
            ),
            "20" => run(
                &mut *agent::LaggedSac::<Pendulum, 24, CAP, 64, 4, 20>::boxed(config),
                seed,
            ),
            "50" => run(
                &mut *agent::LaggedSac::<Pendulum, 24, CAP, 64, 4, 50>::boxed(config),
                seed,
            ),
            "100" => run(
                &mut *agent::LaggedSac::<Pendulum, 24, CAP, 64, 4, 100>::boxed(config),
                seed,
            ),
            other => panic!("schedule {other}: blocking, 1, 5, 20, 50 or 100"),
        };
        solved += usize::from(at.is_some());
        println!("ring {CAP}, {schedule}: seed {seed} solved at {at:?}, held-out {mean:.1}");
    }
    println!("ring {CAP}, {schedule}: {solved} of 5 solved");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (ring, schedules) = args.split_first().expect("usage: RING SCHEDULE…");
    for schedule in schedules {
        match ring.as_str() {
            "2000" => runs::<2_000>(schedule),
            "1500" => runs::<1_500>(schedule),
            other => panic!("ring {other}: 2000 or 1500"),
        }
    }
}
