//! The classical baseline of every plant of a family split: the PID's and
//! the LQI's tuning scores, the one kept, and its held-out score against
//! doing nothing and the untuned PID.
//!
//! ```sh
//! cargo run --release -p microrl --features std --example family_baselines -- dev
//! ```

use microrl::Controller;
use microrl::SVector;
use microrl::algo::evaluate;
use microrl::baseline::family::{
    FamilyBaseline, FamilyLqr, FamilyPid, fit, fit_lqr, fit_pid, score_on,
};
use microrl::baseline::{EpisodeReset, HELD_OUT_SEED};
use microrl::env::ActionOf;
use microrl::env::family::{FamilyEnv, Plant1, Plant2, PlantDiscrete, Split, generate};
use microrl::rng::Xoshiro128pp;
use rand_core::SeedableRng;

const HELD_OUT: u32 = 200;

fn held_out<P, C, const OBS: usize>(c: &C, plant: &P) -> f32
where
    P: FamilyEnv<Obs = SVector<f32, OBS>>,
    C: Controller<OBS, Action = ActionOf<P>> + EpisodeReset,
{
    score_on(c, plant, HELD_OUT, HELD_OUT_SEED).unwrap_or(f32::NEG_INFINITY)
}

fn row<P, const OBS: usize>(plant: P) -> String
where
    P: FamilyEnv<Obs = SVector<f32, OBS>>,
    FamilyPid<P>: Controller<OBS, Action = ActionOf<P>>,
    FamilyLqr<P>: Controller<OBS, Action = ActionOf<P>>,
{
    let p = plant.description();
    let rest = P::command(&p, [p.u_rest(); 2]);
    let idle = |_: &SVector<f32, OBS>| Ok::<_, microrl::Error>(rest);
    let mut env = plant.clone();
    let zero = evaluate(
        &idle,
        &mut env,
        HELD_OUT,
        &mut Xoshiro128pp::seed_from_u64(HELD_OUT_SEED),
    )
    .map_or(f32::NEG_INFINITY, |r| r.0);
    let untuned = held_out(&FamilyPid::<P>::untuned(&p), &plant);
    let (_, pid) = fit_pid(&plant);
    let lqr = fit_lqr(&plant).map_or(f32::NEG_INFINITY, |r| r.1);
    let (best, _) = fit(&plant);
    let score = held_out(&best, &plant);
    let name = match &best {
        FamilyBaseline::Pid(_) => "pid",
        FamilyBaseline::Lqr(_) => "lqi",
    };
    format!(
        "{:<18} n={:<4} sub={:<4} delay={:<2} zero={:<11.4e} untuned={:<11.4e} pid={:<11.4e} lqi={:<11.4e} {name} held-out={:<11.4e} ratio={:.3}",
        p.class.name(),
        p.episode_steps,
        p.substeps,
        p.delay_steps,
        zero,
        untuned,
        pid,
        lqr,
        score,
        score / zero
    )
}

fn main() {
    let split = match std::env::args().nth(1).as_deref() {
        Some("validation") => Split::Validation,
        Some("test") => Split::Test,
        _ => Split::Dev,
    };
    for i in 0..split.len() {
        let seed = split.seed(i).unwrap();
        let p = generate(seed);
        let t = std::time::Instant::now();
        let line = match (p.inputs, p.discrete) {
            (1, false) => row(Plant1::with_params(p).unwrap()),
            (2, _) => row(Plant2::with_params(p).unwrap()),
            _ => row(PlantDiscrete::with_params(p).unwrap()),
        };
        println!(
            "{seed} {}{line} ({:.1}s)",
            if p.discrete { "D " } else { "" },
            t.elapsed().as_secs_f32()
        );
    }
}
