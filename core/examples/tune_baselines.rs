//! Tunes every classical baseline's gains on one stream of start states and
//! scores them on another:
//!
//! ```sh
//! cargo run --release -p microrl --example tune_baselines
//! ```
//!
//! For each plant, a multiplicative pattern search
//! ([`microrl::baseline::tune`]) maximises the mean return of
//! `TUNING_EPISODES` episodes drawn from the generator seeded with
//! [`TUNING_SEED`]; the winner is then scored on `HELD_OUT_EPISODES`
//! episodes from [`HELD_OUT_SEED`], which no tuning decision saw. Both
//! scores come from [`microrl::baseline::evaluate`] — `algo::evaluate`, the
//! learned policies' evaluation, with the controller's memory cleared per
//! episode. The table's gains are the committed `TUNED` constants; the last
//! column says whether they agree.

use microrl::baseline::{
    self, AcrobotPfl, EpisodeReset, HELD_OUT_SEED, HoverCascade, MountainCarPump, ServoPid,
    SwingUpEnergy, TUNING_SEED,
};
use microrl::env::{
    Acrobot, AcrobotParams, ActionOf, CartPoleSwingUp, CartPoleSwingUpParams, Env,
    MountainCarContinuous, Quadrotor2d, Quadrotor2dParams, Servo,
};
use microrl::{Controller, SVector};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

const TUNING_EPISODES: u32 = 64;
const HELD_OUT_EPISODES: u32 = 200;

fn mean<C, E, const OBS: usize>(c: &C, mut env: E, episodes: u32, seed: u64) -> f32
where
    C: Controller<OBS, Action = ActionOf<E>> + EpisodeReset,
    E: Env<Obs = SVector<f32, OBS>>,
{
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
    // A failing episode (never with these plants) scores as the worst.
    baseline::evaluate(c, &mut env, episodes, &mut rng).map_or(f32::MIN, |(m, _)| m)
}

/// Tunes from `start`, scores on the held-out stream and prints one row.
fn row<C, E, const OBS: usize, const N: usize>(
    plant: &str,
    names: &str,
    start: [f32; N],
    committed: [f32; N],
    build: impl Fn([f32; N]) -> C,
    env: impl Fn() -> E,
) where
    C: Controller<OBS, Action = ActionOf<E>> + EpisodeReset,
    E: Env<Obs = SVector<f32, OBS>>,
{
    let (gains, tuning) = baseline::tune(start, 2.0, 0.02, 2_000, |g| {
        mean(&build(*g), env(), TUNING_EPISODES, TUNING_SEED)
    });
    let held_out = mean(&build(gains), env(), HELD_OUT_EPISODES, HELD_OUT_SEED);
    let same = if gains == committed { "yes" } else { "NO" };
    println!("| {plant} | {names} = {gains:?} | {tuning:.3} | {held_out:.3} | {same} |");
}

fn main() {
    println!(
        "tuning: {TUNING_EPISODES} episodes from seed {TUNING_SEED}; held-out: {HELD_OUT_EPISODES} episodes from seed {HELD_OUT_SEED}\n"
    );
    println!("| plant | gains | tuning mean return | held-out mean return | committed |");
    println!("|---|---|---|---|---|");
    row(
        "Servo",
        "[kp, ki, kd]",
        [20.0, 40.0, 0.2],
        ServoPid::TUNED,
        |g| ServoPid::new(g, 1e-3),
        Servo::new,
    );
    row(
        "CartPoleSwingUp",
        "[ke, kxs, kvs, kθ, kω, kx, kv, catch_angle]",
        [2.0, 1.0, 1.0, 40.0, 8.0, 2.0, 4.0, 0.4],
        SwingUpEnergy::TUNED,
        |g| SwingUpEnergy::new(g, &CartPoleSwingUpParams::DEFAULT),
        CartPoleSwingUp::new,
    );
    row(
        "Quadrotor2d",
        "[kpx, kdx, kpz, kdz, kpθ, kdθ, tilt]",
        [4.0, 3.0, 8.0, 5.0, 300.0, 30.0, 0.5],
        HoverCascade::TUNED,
        |g| HoverCascade::new(g, &Quadrotor2dParams::DEFAULT),
        Quadrotor2d::new,
    );
    row(
        "Acrobot",
        "[kq, kd, α]",
        [100.0, 10.0, 2.0],
        AcrobotPfl::TUNED,
        |g| AcrobotPfl::new(g, &AcrobotParams::DEFAULT),
        Acrobot::new,
    );
    row(
        "MountainCarContinuous",
        "[kv, A]",
        [100.0, 1.0],
        MountainCarPump::TUNED,
        MountainCarPump::new,
        MountainCarContinuous::new,
    );
}
