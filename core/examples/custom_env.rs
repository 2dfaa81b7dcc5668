//! A plant of your own, a DC-motor speed loop, learned by PPO and by the online
//! actor-critic; "solved" means better than the best proportional controller.
//!
//! `cargo run --release -p microrl --example custom_env --features std [-- out.mrlp]`
//! saves the PPO policy (default: the temp directory); exits 1 unless both solve.

use microrl::algo::{AcConfig, PpoConfig};
use microrl::env::{Continuous, Env, Step};
use microrl::train::{Evaluation, Hooks, Learner, RunConfig, Trainer};
use microrl::{Error, SVector, agent, error::check_finite, optim::Schedule, rng::uniform_range};
use rand_core::Rng;
use rand_xoshiro::Xoshiro128PlusPlus;

/// Speed ω (rad/s) under PWM duty u: ω' = (K·12 V·u − ω)/τ with K = 10 rad/s/V,
/// τ = 50 ms, Euler at 100 Hz; an episode is 1 s from a random speed to a random
/// target. Reward: −(error / 100 rad/s)² − 0.01·u².
#[derive(Default)]
struct Motor {
    speed: f32,
    target: f32,
    t: u32,
}

impl Env for Motor {
    type Obs = SVector<f32, 2>; // [target − speed, speed]: the sizes, stated once
    type Space = Continuous<1>; // one actuator, the duty cycle
    /// The best P controller's return (duty = 0.072·error: −1.128 over 200 000
    /// episodes; every other gain does worse), rounded up: solved = beats any P gain.
    const SOLVED_RETURN: f32 = -1.12;
    fn action_space(&self) -> Continuous<1> {
        Continuous::symmetric(1.0) // ±100 % duty: the agent clips its commands to it
    }
    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Self::Obs {
        self.speed = uniform_range(rng, -100.0, 100.0);
        self.target = uniform_range(rng, -100.0, 100.0);
        self.t = 0;
        Self::Obs::new(self.target - self.speed, self.speed)
    }
    fn step(&mut self, duty: SVector<f32, 1>) -> Result<Step<Self::Obs>, Error> {
        check_finite(duty[0])?;
        self.speed += 0.2 * (120.0 * duty[0] - self.speed); // dt/τ = 10 ms / 50 ms
        self.t += 1;
        let error = self.target - self.speed;
        Ok(Step {
            obs: Self::Obs::new(error, self.speed),
            reward: -(error / 100.0).powi(2) - 0.01 * duty[0] * duty[0],
            terminated: false,
            truncated: self.t == 100, // a time limit, not a terminal state
        })
    }
}

/// Prints the learning curve: every evaluation the trainer runs.
struct Print(&'static str);
impl<S> Hooks<S> for Print {
    fn on_evaluation(&mut self, e: &Evaluation) {
        let (name, step, kind, mean, std) = (self.0, e.step, e.kind, e.mean, e.std);
        println!("{name:>3} {step:>5} steps: {kind:?} return {mean:.3} ± {std:.3}");
    }
}

/// Trains `agent` from seed 0; true if it beats every P gain on held-out starts.
fn train<L: Learner<Motor>>(name: &'static str, agent: &mut L) -> Result<bool, Error> {
    let (mut env, mut eval_env) = (Motor::default(), Motor::default());
    // Train the whole budget (the learning rates anneal over it) rather than stop
    // at the first passing evaluation; report on 1 000 held-out episodes.
    let mut run = RunConfig::new(STEPS, Motor::SOLVED_RETURN);
    (run.early_stop, run.eval_interval, run.report_episodes) = (false, 2_000, 1_000);
    let mut trainer = Trainer::<_, Xoshiro128PlusPlus>::start(agent, &mut env, run, 0)?;
    let outcome = trainer.run(agent, &mut env, &mut eval_env, &mut Print(name))?;
    Ok(outcome.solved(Motor::SOLVED_RETURN))
}

const STEPS: u64 = 20_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut ppo = agent::Ppo::<Motor, 32, 1024>::new(PpoConfig::DEFAULT);
    ppo.config.learning_rate = Schedule::linear_to_zero(3e-3); // 3e-3 → 0 over total_steps
    (ppo.config.total_steps, ppo.config.gamma) = (STEPS, 0.9);
    let mut ac = agent::ActorCritic::<Motor, 32>::new(AcConfig::DEFAULT);
    ac.config.actor_lr = Schedule::linear_to_zero(1e-3);
    (ac.config.total_steps, ac.config.gamma) = (STEPS, 0.9);
    let (ppo_solved, ac_solved) = (train("ppo", &mut ppo)?, train("ac", &mut ac)?);
    println!("better than any P gain: ppo {ppo_solved}, ac {ac_solved}");

    let path = std::env::args().nth(1).map(std::path::PathBuf::from);
    let path = path.unwrap_or_else(|| std::env::temp_dir().join("motor.mrlp"));
    std::fs::write(&path, microrl::serialize::to_vec(&ppo.policy())?)?;
    println!("PPO policy saved to {}", path.display());
    std::process::exit(if ppo_solved && ac_solved { 0 } else { 1 })
}
