//! The training run every training binary shares: the core's `Trainer`
//! started from [`SEED`], run to the end with the defmt [`Log`] hooks, and
//! the end-of-run report with the checksum of the trained policy.
//!
//! A binary keeps only what is its own: the agent's type and configuration
//! (in a `static`, see the binaries), the budget and evaluation interval,
//! and its banner line (a defmt format string is a literal at its call
//! site). The steps are split so that a binary with more to do (`plant`
//! deploys the policy afterwards, `train-resume` resets in the middle) can
//! call the parts it shares:
//!
//! - [`cartpole_run`]: the `RunConfig` of a CartPole trainer;
//! - [`train`]: `Trainer::start` then [`run_to_end`], exiting on an error;
//! - [`run_to_end`]: `Trainer::run` with [`Log::every`], exiting on an error;
//! - [`TrainingAgent`]: a training agent's configuration with the run's
//!   budget, and [`params_fnv`] of its actor and normaliser for [`finish`];
//! - [`train_cartpole`]: all of it on two fresh CartPoles, then [`finish`];
//! - [`cartpole_trainer!`](crate::cartpole_trainer): a CartPole training
//!   binary's `static` agent and entry point, around [`train_cartpole`].
//!
//! Every step is the one the binaries wrote out before, in the same order
//! with the same values: the runs and their checksums are unchanged bit for
//! bit (host tests in `tests/tests/firmware.rs`).

use microrl::SVector;
use microrl::algo::{AcConfig, ActorCritic, Critic, Ppo, PpoConfig};
use microrl::env::{CartPole, Env};
use microrl::nn::Network;
use microrl::policy::Actor;
use microrl::train::{Learner, Outcome, RunConfig, Trainer};
use rand_core::Rng;
use rand_xoshiro::Xoshiro128PlusPlus;

use crate::{Log, LogStats, finish, ok_or_exit, params_fnv};

/// The seed of every training run on the MCU: the desktop's default, so
/// that the host tests can reproduce each run there.
pub const SEED: u64 = 0;

/// A CartPole trainer's run: a budget of `total_steps`, an evaluation every
/// `eval_interval` steps (1: after every iteration), early stop at
/// [`CartPole::SOLVED_RETURN`].
pub const fn cartpole_run(total_steps: u64, eval_interval: u64) -> RunConfig {
    RunConfig {
        eval_interval,
        ..RunConfig::new(total_steps, CartPole::SOLVED_RETURN)
    }
}

/// What the training binaries do with their agents besides training them:
/// PPO's and the online actor-critic's.
pub trait TrainingAgent {
    /// The algorithm's hyper-parameters.
    type Config;
    /// Sets the configuration to `config` with the budget `total_steps`
    /// (which the learning-rate schedules anneal over).
    fn configure(&mut self, config: Self::Config, total_steps: u64);
    /// [`params_fnv`] of the agent's actor and observation normaliser (the
    /// tensors its `export` copies).
    fn policy_fnv(&self) -> u32;
}

/// The items of a [`TrainingAgent`] implementation: both agents keep their
/// hyper-parameters (`$config`) in `config`, and have an `actor()` and an
/// `obs_norm`.
macro_rules! training_agent {
    ($config:ident) => {
        type Config = $config;

        #[inline(always)]
        fn configure(&mut self, config: $config, total_steps: u64) {
            self.config = $config {
                total_steps,
                ..config
            };
        }

        fn policy_fnv(&self) -> u32 {
            params_fnv(self.actor(), &self.obs_norm)
        }
    };
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize>
    TrainingAgent for Ppo<A, C, OBS, N, CHUNK>
{
    training_agent!(PpoConfig);
}

impl<A: Actor<OBS>, C: Network<OBS, 1>, const OBS: usize> TrainingAgent for ActorCritic<A, C, OBS> {
    training_agent!(AcConfig);
}

/// The `static` agent and the `#[entry]` of a CartPole training binary:
/// `static AGENT` holds a zero `$agent` (in `.bss`); `main` logs the
/// banner — the defmt format string `$banner` with the arguments `$arg`
/// and `size_of::<$agent>()` — then [`train_cartpole`]s the agent with
/// `$config`, `$run` and a progress line every `$log_every` steps. A
/// function cannot declare the `static` of a binary's own agent type, nor
/// its entry point.
#[macro_export]
macro_rules! cartpole_trainer {
    ($agent:ty, $config:expr, $run:expr, $log_every:expr, $banner:literal $(, $arg:expr)* $(,)?) => {
        static AGENT: static_cell::ConstStaticCell<$agent> =
            static_cell::ConstStaticCell::new(<$agent>::ZERO);

        #[cortex_m_rt::entry]
        fn main() -> ! {
            defmt::info!($banner, $($arg,)* size_of::<$agent>());
            $crate::run::train_cartpole(AGENT.take(), $config, $run, $log_every)
        }
    };
}

/// [`Trainer::run`] of `trainer` to the end (evaluations on `eval_env`), a
/// progress line every `log_every` steps; exits with status 1 if it fails.
#[inline(always)]
pub fn run_to_end<R, L, E, const OBS: usize>(
    trainer: &mut Trainer<SVector<f32, OBS>, R>,
    agent: &mut L,
    env: &mut E,
    eval_env: &mut E,
    log_every: u64,
) -> Outcome
where
    R: Rng,
    L: Learner<E>,
    L::Stats: LogStats,
    E: Env<Obs = SVector<f32, OBS>>,
{
    let outcome = trainer.run(agent, env, eval_env, &mut Log::every(log_every));
    ok_or_exit(outcome, "training")
}

/// Starts a [`Trainer`] with `rand_xoshiro`'s `Xoshiro128PlusPlus` for
/// `agent` on `env` from [`SEED`], then [`run_to_end`]; exits with status 1
/// if either fails.
#[inline(always)]
pub fn train<L, E, const OBS: usize>(
    agent: &mut L,
    env: &mut E,
    eval_env: &mut E,
    run: RunConfig,
    log_every: u64,
) -> Outcome
where
    L: Learner<E>,
    L::Stats: LogStats,
    E: Env<Obs = SVector<f32, OBS>>,
{
    let trainer = Trainer::<_, Xoshiro128PlusPlus>::start(agent, env, run, SEED);
    let mut trainer = ok_or_exit(trainer, "start");
    run_to_end(&mut trainer, agent, env, eval_env, log_every)
}

/// [`configure`](TrainingAgent::configure)s `agent` with `config` and the
/// run's budget, [`train`]s it on a fresh CartPole (evaluations on a second
/// one), then [`finish`]es: exits 0 iff solved.
#[inline(always)]
pub fn train_cartpole<L>(agent: &mut L, config: L::Config, run: RunConfig, log_every: u64) -> !
where
    L: Learner<CartPole> + TrainingAgent,
    L::Stats: LogStats,
{
    agent.configure(config, run.total_steps);
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let outcome = train(agent, &mut env, &mut eval_env, run, log_every);
    finish(&outcome, run.threshold, agent.policy_fnv())
}
