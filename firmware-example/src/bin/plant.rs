//! Learning on a plant: the shape to copy to a board.
//!
//! A plant is the hardware behind [`Plant`] — read the sensors, write the
//! actuator, wait one control period, reset for a new episode — and a
//! [`Task`] says what is good (reward, episode length, what counts as
//! solved). [`PlantEnv`] makes the pair a `microrl` environment, and the
//! core's [`Trainer`] trains any agent on it. Here the plant is
//! [`SimMotor`], a simulated DC motor (first-order speed response, PWM
//! output through `embedded_hal::pwm::SetDutyCycle`) tracking random speed
//! set-points; on a board, swap in your own `Plant` implementation and keep
//! the rest.
//!
//! 1. Train `agent::ActorCritic<PlantEnv<SimMotor, TrackSpeed>, 16>` (online:
//!    one update per control step, 2-16-16 networks, no rollout buffer)
//!    until the deciding 100-episode evaluation beats the ideal static
//!    feed-forward controller; a 10-episode evaluation every 1 000 steps.
//! 2. Export the policy, save it in the checksummed format (what a board
//!    writes to flash), load it back.
//! 3. Run the deployed policy in a plain control loop on the plant: read →
//!    [`Controller::act`] → write → wait.
//!
//! Exits 0 iff the reported evaluation (held-out start states) passes too.
//!
//! One physical plant: `Trainer::run` takes a training and an evaluation
//! environment. A simulation has two; on a board both are the same motor,
//! and after an evaluation the training episode would continue from an
//! observation that is out of date — see the README ("One plant") for how
//! to evaluate on the training plant.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use cortex_m_rt::entry;
use microrl::algo::{AcConfig, evaluate};
use microrl::env::Env;
use microrl::train::{RunConfig, report_seed};
use microrl::{Controller, Params, agent, serialize};
use microrl_firmware::plant::sim::{FeedForward, SimMotor, TrackSpeed};
use microrl_firmware::plant::{Plant, PlantEnv, Task};
use microrl_firmware::run::{SEED, TrainingAgent, train};
use microrl_firmware::{finish, ok_or_exit, params_fnv};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;
use static_cell::ConstStaticCell;

/// The environment: the motor and its objective.
type Motor = PlantEnv<SimMotor, TrackSpeed>;
/// The learner, sized from the environment: 2-16-16-1 Gaussian actor,
/// 2-16-16-1 critic.
type Agent = agent::ActorCritic<Motor, 16>;
/// What a board loads and runs.
type Deployed = microrl::Deployed<Agent>;

/// Control steps between evaluations (and progress lines).
const EVAL_INTERVAL: u64 = 1_000;
const RUN: RunConfig = RunConfig {
    eval_interval: EVAL_INTERVAL,
    ..RunConfig::new(50_000, Motor::SOLVED_RETURN)
};
/// Episodes of the deployed control loop.
const DEPLOYED_EPISODES: u32 = 3;

static AGENT: ConstStaticCell<Agent> = ConstStaticCell::new(Agent::ZERO);

#[entry]
fn main() -> ! {
    let agent = AGENT.take();
    agent.configure(AcConfig::DEFAULT, RUN.total_steps);
    defmt::info!(
        "plant: simulated DC motor, actor 2-16-16-1 (Gaussian), critic 2-16-16-1, agent {=usize} bytes static, solved at {=f32}",
        size_of::<Agent>(),
        RUN.threshold
    );

    // 1. Train. Two simulated motors: one to learn on, one to evaluate on.
    let mut env = PlantEnv::new(SimMotor::new(), TrackSpeed);
    let mut eval_env = PlantEnv::new(SimMotor::new(), TrackSpeed);
    let outcome = train(agent, &mut env, &mut eval_env, RUN, EVAL_INTERVAL);

    // The baseline on the reported evaluation's start states.
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(report_seed(SEED));
    let episodes = RUN.report_episodes;
    let baseline = evaluate(&FeedForward, &mut eval_env, episodes, &mut rng);
    let (mean, std) = ok_or_exit(baseline, "baseline");
    defmt::info!(
        "baseline: static feed-forward on the same {=u32} episodes: {=f32} ± {=f32}",
        episodes,
        mean,
        std
    );

    // 2. Export, save (a board writes `blob` to flash), load.
    let mut policy = Deployed::ZERO;
    agent.export(&mut policy);
    let mut blob = [0u8; serialize::encoded_len::<Deployed>()];
    ok_or_exit(serialize::save(&policy, &mut blob), "save");
    let mut loaded = Deployed::ZERO;
    ok_or_exit(serialize::load(&mut loaded, &blob), "load");
    defmt::info!(
        "policy: {=usize} parameters, blob {=usize} bytes, policy_fnv {=u32:#010x}",
        Deployed::LEN,
        blob.len(),
        params_fnv(&loaded.actor, &loaded.obs_norm)
    );

    // 3. Deploy: the control loop a board runs, on the plant itself.
    let mut motor = SimMotor::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(SEED + 1);
    for episode in 0..DEPLOYED_EPISODES {
        let Ok(()) = motor.reset(&mut rng);
        let mut ret = 0.0;
        for _ in 0..<TrackSpeed as Task<SimMotor>>::EPISODE_STEPS {
            let Ok(obs) = motor.read();
            let command = ok_or_exit(loaded.act(&obs), "act");
            let Ok(()) = motor.write(command);
            motor.wait();
            let Ok(next) = motor.read();
            ret += TrackSpeed.reward(&next, &command);
        }
        defmt::info!(
            "deployed: episode {=u32}: set-point {=f32} rad/s, speed {=f32} rad/s after 1 s, duty {=u16}/1000, return {=f32}",
            episode,
            motor.target,
            motor.speed,
            motor.out.pwm.duty,
            ret
        );
    }

    finish(&outcome, RUN.threshold, agent.policy_fnv())
}
