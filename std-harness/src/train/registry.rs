//! The registry of tasks and algorithms: their names (`--env`, `--algo`), tuned
//! defaults ([`AlgoConfig`], [`default_steps`]) and how each agent type takes
//! its configuration ([`Configure`]).
//!
//! Design: **one row per plant.** [`for_each_task!`] holds the table of the
//! plants the CLI names — variant, command-line name, plant type, parameter
//! type, PPO rollout capacity and, for a continuous plant, the critics'
//! input size of SAC and TD3 — and hands it to a macro: here to generate
//! [`EnvName`] and each plant's [`Task`] impl, in `run.rs` to dispatch
//! `--env` to its agent types. Everything else that needs a plant's type is
//! generic over [`Task`]. Defaults are per algorithm and action type, with
//! tuned exceptions for the first three plants; a new plant gets the
//! defaults every plant of its action type gets.

use anyhow::{Context, bail};
use microrl::SVector;
use microrl::algo::{
    A2cConfig, AcConfig, GrpoConfig, Ppo, PpoConfig, ReinforceConfig, SacConfig, Td3Config,
    TrpoConfig,
};
use microrl::env::{ActionSpace, Continuous, Discrete, Env, EnvState, PlantRangeError};
use microrl::optim::Schedule;
use serde::{Deserialize, Serialize};

use super::*;

/// The plants the CLI names, one row each, handed to the macro `$m`:
/// `Variant = "name", PlantType, ParamsType, ppo = ROLLOUT[, oa = OBS + ACT];`
/// (`oa`: continuous plants only, the input size of SAC's and TD3's
/// critics; a plant without it is discrete and has no SAC/TD3 agents).
macro_rules! for_each_task {
    ($m:ident) => {
        $m! {
            /// Gymnasium CartPole-v1, two discrete actions.
            Cartpole = "cartpole", microrl::env::CartPole, microrl::env::CartPoleParams,
                ppo = $crate::train::PPO_CARTPOLE_STEPS;
            /// CartPole with a continuous force in [−1, 1] · 10 N.
            CartpoleContinuous = "cartpole-continuous", microrl::env::CartPoleContinuous,
                microrl::env::CartPoleParams, ppo = $crate::train::PPO_CONTINUOUS_STEPS, oa = 5;
            /// Gymnasium Pendulum-v1, torque in [−2, 2].
            Pendulum = "pendulum", microrl::env::Pendulum, microrl::env::PendulumParams,
                ppo = $crate::train::PPO_CONTINUOUS_STEPS, oa = 4;
            /// Gymnasium Acrobot-v1, three discrete torques (−1, 0, +1 N·m).
            Acrobot = "acrobot", microrl::env::Acrobot, microrl::env::AcrobotParams,
                ppo = $crate::train::PPO_STEPS;
            /// Gymnasium MountainCarContinuous-v0, force in [−1, 1].
            MountaincarContinuous = "mountaincar-continuous", microrl::env::MountainCarContinuous,
                microrl::env::MountainCarParams, ppo = $crate::train::PPO_STEPS, oa = 3;
            /// Cart-pole swing-up from hanging, force in [−1, 1] · 10 N.
            CartpoleSwingup = "cartpole-swingup", microrl::env::CartPoleSwingUp,
                microrl::env::CartPoleSwingUpParams, ppo = $crate::train::PPO_STEPS, oa = 6;
            /// DC-motor position servo at 1 kHz, duty in [−1, 1].
            Servo = "servo", microrl::env::Servo, microrl::env::ServoParams,
                ppo = $crate::train::PPO_STEPS, oa = 4;
            /// Planar quadrotor recovering to hover, two rotor thrusts in [−1, 1].
            Quadrotor2d = "quadrotor-2d", microrl::env::Quadrotor2d,
                microrl::env::Quadrotor2dParams, ppo = $crate::train::PPO_STEPS, oa = 8;
            /// A one-input plant of the procedural family (`--plant seed=N`).
            Family = "family", microrl::env::family::Plant1,
                $crate::train::FamilySeed1, ppo = $crate::train::PPO_STEPS, oa = 8;
            /// A two-input plant of the procedural family (`--plant seed=N`).
            Family2 = "family-2", microrl::env::family::Plant2,
                $crate::train::FamilySeed2, ppo = $crate::train::PPO_STEPS, oa = 12;
            /// A three-level plant of the procedural family (`--plant seed=N`).
            FamilyDiscrete = "family-discrete", microrl::env::family::PlantDiscrete,
                $crate::train::FamilySeedDiscrete, ppo = $crate::train::PPO_STEPS;
        }
    };
}
pub(crate) use for_each_task;

/// Generates [`EnvName`] and the [`Task`] impls from [`for_each_task!`]'s rows.
macro_rules! define_tasks {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, $plant:ty, $params:ty,
        ppo = $n:expr $(, oa = $oa:literal)?; )*) => {
        named_enum! {
            /// A training task.
            #[derive(Deserialize)]
            EnvName { $( $(#[$doc])* $variant = $name ),* }
        }

        impl EnvName {
            /// Mean return that counts as solved (the plant's `SOLVED_RETURN`).
            pub fn threshold(self) -> f32 {
                match self {
                    $(EnvName::$variant => <$plant as Env>::SOLVED_RETURN,)*
                }
            }

            /// Observation size.
            pub fn obs_dim(self) -> usize {
                match self {
                    $(EnvName::$variant => microrl::env::obs_dim::<$plant>(),)*
                }
            }

            /// The action space is continuous.
            pub fn continuous(self) -> bool {
                match self {
                    $(EnvName::$variant => <<$plant as Env>::Space as Metering>::CONTINUOUS,)*
                }
            }
        }

        $(
            impl Task for $plant {
                const ENV: EnvName = EnvName::$variant;
                type Params = $params;
                fn build(params: $params) -> Result<Self, microrl::Error> {
                    <$plant>::with_params(params.into())
                }
                fn check(params: &$params) -> Result<(), PlantRangeError> {
                    params.check()
                }
            }
        )*
    };
}

for_each_task!(define_tasks);

impl EnvName {
    /// The continuous tasks' names, for messages: `a, b or c`.
    pub fn continuous_names() -> String {
        let names: Vec<&str> = EnvName::ALL
            .into_iter()
            .filter(|e| e.continuous())
            .map(EnvName::name)
            .collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.join(""),
        }
    }
}

/// A plant the CLI names (a row of [`for_each_task!`]): built from its
/// parameter struct, which `--plant` sets.
pub trait Task: Env<Space: Metering> + EnvState + Clone + 'static {
    /// Its `--env` value.
    const ENV: EnvName;
    /// Its physical parameters: TOML keys are the fields, each with a range.
    type Params: Serialize + serde::de::DeserializeOwned + Default;
    /// The plant with `params`.
    ///
    /// # Errors
    /// The core's refusal of `params`.
    fn build(params: Self::Params) -> Result<Self, microrl::Error>;
    /// The parameter struct's own range check.
    ///
    /// # Errors
    /// The first field outside its range.
    fn check(params: &Self::Params) -> Result<(), PlantRangeError>;
    /// The plant with `--plant`'s parameters (`table`; empty: Gymnasium's).
    ///
    /// # Errors
    /// As [`plant_params`], and the core's refusal.
    fn plant(table: &toml::Table) -> anyhow::Result<Self> {
        Self::build(plant_params::<Self>(table)?)
            .map_err(|e| anyhow::anyhow!("invalid --plant: {e}"))
    }
}

/// What an action space tells the CLI: whether it is continuous, and the
/// squared command of an action (`eval`'s `mean_effort`).
pub trait Metering: ActionSpace {
    /// Continuous (SAC and TD3 apply).
    const CONTINUOUS: bool;
    /// `Σ a²` of a continuous command; `None` for a discrete action.
    fn effort(action: &Self::Action) -> Option<f64>;
}

impl<const N: usize> Metering for Discrete<N> {
    const CONTINUOUS: bool = false;
    fn effort(_: &usize) -> Option<f64> {
        None
    }
}

impl<const A: usize> Metering for Continuous<A> {
    const CONTINUOUS: bool = true;
    fn effort(action: &SVector<f32, A>) -> Option<f64> {
        Some(action.iter().map(|&a| f64::from(a) * f64::from(a)).sum())
    }
}

/// The plant parameters of `table` merged over Gymnasium's (`E::Params`'s
/// `Default`).
///
/// # Errors
/// A key the parameters do not have, a value that is not a number, or one
/// outside its physical range, named.
pub fn plant_params<E: Task>(table: &toml::Table) -> anyhow::Result<E::Params> {
    let mut merged = toml::Table::try_from(E::Params::default())?;
    for (key, value) in table {
        if !merged.contains_key(key) {
            let known: Vec<&str> = merged.keys().map(String::as_str).collect();
            bail!(
                "invalid --plant: no parameter `{key}` (known: {})",
                known.join(", ")
            );
        }
        merged.insert(key.clone(), value.clone());
    }
    let params: E::Params = toml::Value::Table(merged)
        .try_into()
        .map_err(|e: toml::de::Error| anyhow::anyhow!("invalid --plant: {}", e.message().trim()))?;
    E::check(&params).map_err(|e| anyhow::anyhow!("invalid --plant: {e}"))?;
    Ok(params)
}

/// The environment-step budget of `algo` on `env` when `--steps` is not
/// given: tuned for the first three plants; `PpoConfig::PLANT`'s 1 000 000
/// for PPO on the suite's plants (one budget for all five, 2 000 episodes of the 500-step ones:
/// with half of it the swing-up's worst seed fell just below its baseline,
/// docs/plants.md); 50 000
/// for SAC and TD3 and 500 000 for every other algorithm elsewhere.
pub fn default_steps(env: EnvName, algo: Algo) -> u64 {
    match (algo, env) {
        (Algo::Ppo, EnvName::Cartpole) => 100_000,
        (Algo::Ppo, EnvName::CartpoleContinuous) => 200_000,
        (Algo::Ppo, EnvName::Pendulum) => 300_000,
        (Algo::Ppo, _) => PpoConfig::PLANT.total_steps,
        (Algo::PpoPenalty, EnvName::Cartpole) => 150_000,
        (Algo::Trpo, EnvName::Cartpole) => 200_000,
        (Algo::Grpo | Algo::Gspo, EnvName::Cartpole) => 300_000,
        (Algo::Sac | Algo::Td3, EnvName::Pendulum) => 20_000,
        (Algo::Sac | Algo::Td3, _) => 50_000,
        _ => 500_000,
    }
}

/// A training algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Algo {
    /// PPO with GAE.
    Ppo,
    /// PPO-penalty: PPO without clipping, its surrogate penalised by
    /// `β·KL[π_old ‖ π]` with `β` adapted towards a target KL.
    PpoPenalty,
    /// TRPO: the natural-gradient step (conjugate gradient on Fisher-vector
    /// products) largest within a KL radius, by backtracking line search.
    Trpo,
    /// GRPO: PPO's clipped update without a critic, advantages relative
    /// to a group of episodes from the same start state.
    Grpo,
    /// GSPO: GRPO with one clipped importance ratio per episode (the
    /// geometric mean of its steps' ratios).
    Gspo,
    /// A2C (n-step returns, one gradient step per rollout).
    A2c,
    /// Online one-step actor-critic (TD(0), O(1) memory).
    Ac,
    /// REINFORCE with a learned baseline.
    Reinforce,
    /// SAC: off-policy, twin critics, a tanh-squashed Gaussian actor and a
    /// learned entropy coefficient (continuous actions).
    Sac,
    /// TD3: off-policy, twin critics, target smoothing and delayed actor
    /// updates (continuous actions).
    Td3,
}

impl Algo {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Algo::Ppo => "ppo",
            Algo::PpoPenalty => "ppo-penalty",
            Algo::Trpo => "trpo",
            Algo::Grpo => "grpo",
            Algo::Gspo => "gspo",
            Algo::A2c => "a2c",
            Algo::Ac => "ac",
            Algo::Reinforce => "reinforce",
            Algo::Sac => "sac",
            Algo::Td3 => "td3",
        }
    }
}

/// The effective configuration of a run's algorithm: the core's struct,
/// serialised with its field names (what `summary.json` records).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AlgoConfig {
    /// PPO.
    Ppo(PpoConfig),
    /// TRPO (collects and fits its critic with the PPO machinery, see
    /// [`TrpoConfig::to_ppo`]).
    Trpo(TrpoConfig),
    /// GRPO (no critic).
    Grpo(GrpoConfig),
    /// A2C (runs on the PPO machinery, see [`A2cConfig::to_ppo`]).
    A2c(A2cConfig),
    /// REINFORCE with a baseline.
    Reinforce(ReinforceConfig),
    /// The online actor-critic.
    Ac(AcConfig),
    /// SAC.
    Sac(SacConfig),
    /// TD3.
    Td3(Td3Config),
}

impl AlgoConfig {
    /// The tuned PPO settings for `env` over a budget of `steps`;
    /// `default_run`: plain PPO on the 64-64 CartPole nets (see
    /// [`TrainOptions::default_run`]).
    fn ppo_defaults(env: EnvName, steps: u64, default_run: bool) -> PpoConfig {
        match env {
            // The default run: RL Zoo's settings with fewer epochs, a larger
            // learning rate and λ 0.9, tuned for CPU time to solve on seeds
            // 10–49 (40/40 pass held-out; median 0.118 → 0.086 s, mean 0.209
            // → 0.101 s, worst 0.50 → 0.21 s, `perf stat` task-clock on one
            // core). Its neighbours (epochs 3, 5; lr 2e-3, 3e-3; λ 0.85,
            // 0.92, 0.95; γ 0.99; clip 0.3; 2 or 8 minibatches; 128-step
            // rollouts) were all slower.
            EnvName::Cartpole if default_run => PpoConfig {
                total_steps: steps,
                learning_rate: Schedule::linear_to_zero(2.5e-3),
                gae_lambda: 0.9,
                epochs: 4,
                ..PpoConfig::CARTPOLE
            },
            // RL Zoo's tuned CartPole hyper-parameters (γ 0.98, λ 0.8, lr and
            // clip annealed from 1e-3 / 0.2), with 10 epochs of 4 minibatches:
            // `--small` (the firmware's nets and protocol), `--kl-ref`,
            // `--reward-model` and PPO-penalty.
            EnvName::Cartpole => PpoConfig {
                total_steps: steps,
                ..PpoConfig::CARTPOLE
            },
            EnvName::CartpoleContinuous => PpoConfig {
                total_steps: steps,
                ..PpoConfig::CARTPOLE_CONTINUOUS
            },
            // RL Zoo's Pendulum settings (lr 1e-3, reward scaling in place of
            // gSDE) with γ 0.95 and 5 epochs: swept over seeds 10–29 with the
            // evaluation every PENDULUM_EVAL_INTERVAL steps, 20/20 pass the
            // held-out evaluation at about half the CPU of γ 0.9 and 10 epochs
            // (11/20).
            EnvName::Pendulum => PpoConfig {
                total_steps: steps,
                learning_rate: Schedule::linear_to_zero(1e-3),
                gamma: 0.95,
                gae_lambda: 0.95,
                epochs: 5,
                minibatches: 32,
                normalize_reward: true,
                ..PpoConfig::DEFAULT
            },
            // Every other plant (the suite's): the core's plant defaults —
            // SB3's with SB3's minibatch size, 64 (32 minibatches of the
            // 2 048-step rollout: 320 gradient steps per update, not 40), and
            // for continuous commands rl_games' bound loss, the coloured
            // noise and the learning rate annealed to zero. Measured on the
            // suite (`microrl suite --algo ppo`, docs/plants.md): with 4
            // minibatches no plant beat its baseline; with 32, see there.
            _ if env.continuous() => PpoConfig {
                total_steps: steps,
                ..PpoConfig::PLANT
            },
            _ => PpoConfig {
                total_steps: steps,
                ..PpoConfig::PLANT_DISCRETE
            },
        }
    }

    /// The tuned defaults for `env` and `algo` over a budget of `steps`
    /// (`default_run`: see [`TrainOptions::default_run`]).
    pub fn defaults(env: EnvName, algo: Algo, steps: u64, default_run: bool) -> Self {
        let pendulum = env == EnvName::Pendulum;
        let gamma = if pendulum { 0.9 } else { 0.99 };
        match algo {
            Algo::Ppo => AlgoConfig::Ppo(Self::ppo_defaults(env, steps, default_run)),
            // PPO-penalty (Schulman et al. 2017 §4): no clipping, β = 1 adapted
            // towards d_targ = 0.01, on the tuned PPO settings.
            Algo::PpoPenalty => AlgoConfig::Ppo(PpoConfig {
                clip_range: Schedule::Constant(f32::INFINITY),
                kl_coef: 1.0,
                kl_target: Some(0.01),
                ..Self::ppo_defaults(env, steps, false)
            }),
            Algo::Trpo => AlgoConfig::Trpo(TrpoConfig {
                total_steps: steps,
                gamma,
                critic_minibatches: 8,
                normalize_reward: pendulum,
                ..TrpoConfig::DEFAULT
            }),
            Algo::Grpo => AlgoConfig::Grpo(GrpoConfig {
                total_steps: steps,
                ..GrpoConfig::DEFAULT
            }),
            Algo::Gspo => AlgoConfig::Grpo(GrpoConfig {
                total_steps: steps,
                sequence_ratio: true,
                ..GrpoConfig::DEFAULT
            }),
            Algo::A2c => AlgoConfig::A2c(A2cConfig {
                total_steps: steps,
                normalize_reward: pendulum,
                gamma,
                ..A2cConfig::DEFAULT
            }),
            Algo::Reinforce => AlgoConfig::Reinforce(ReinforceConfig {
                total_steps: steps,
                gamma,
                ..ReinforceConfig::DEFAULT
            }),
            // The core's plant defaults (reward scaling, critic warm-up) on
            // every plant but the two whose DEFAULT runs are pinned.
            Algo::Ac => AlgoConfig::Ac(AcConfig {
                total_steps: steps,
                gamma,
                ..if matches!(
                    env,
                    EnvName::Cartpole | EnvName::CartpoleContinuous | EnvName::Pendulum
                ) {
                    AcConfig::DEFAULT
                } else {
                    AcConfig::PLANT
                }
            }),
            // RL Zoo's Pendulum-v1 settings; SB3's defaults elsewhere. The
            // replay ring holds the whole budget up to OFFPOLICY_CAP.
            Algo::Sac => AlgoConfig::Sac(SacConfig {
                buffer_size: replay_size(steps),
                ..if pendulum {
                    SacConfig::PENDULUM
                } else {
                    SacConfig::DEFAULT
                }
            }),
            Algo::Td3 => AlgoConfig::Td3(Td3Config {
                buffer_size: replay_size(steps),
                ..if pendulum {
                    Td3Config::PENDULUM
                } else {
                    Td3Config::DEFAULT
                }
            }),
        }
    }

    /// The defaults with `overrides` merged over them (nested tables such as
    /// `adam` merge key by key; a `{ start, end }` schedule is replaced
    /// whole, and one missing `start` or `end` is refused).
    ///
    /// # Errors
    /// A key the algorithm does not have, or a value of the wrong type; both
    /// name the key. Value ranges are checked by the agent's `init`.
    pub fn resolve(
        env: EnvName,
        algo: Algo,
        steps: u64,
        default_run: bool,
        o: &Overrides,
    ) -> anyhow::Result<Self> {
        fn merged<T: Serialize + serde::de::DeserializeOwned>(
            defaults: &T,
            o: &Overrides,
            algo: Algo,
        ) -> anyhow::Result<T> {
            let mut table = toml::Table::try_from(defaults)?;
            for (key, value) in &o.0 {
                let Some(slot) = table.get_mut(key) else {
                    let keys: Vec<&str> = table.keys().map(String::as_str).collect();
                    bail!(
                        "config key `{key}` does not apply to {} (its keys: {})",
                        algo.name(),
                        keys.join(", ")
                    );
                };
                merge(slot, value.clone());
            }
            toml::Value::Table(table)
                .try_into()
                .map_err(|e| anyhow::anyhow!("config for {}: {e}", algo.name()))
        }
        /// A `{ start, end }` schedule: replaced whole, never merged, so
        /// that one without its `end` is refused rather than completed
        /// from the default's.
        fn schedule(table: &toml::Table) -> bool {
            table.len() == 2 && table.contains_key("start") && table.contains_key("end")
        }
        fn merge(slot: &mut toml::Value, value: toml::Value) {
            match (slot, value) {
                (toml::Value::Table(into), toml::Value::Table(from)) if !schedule(into) => {
                    for (k, v) in from {
                        match into.get_mut(&k) {
                            Some(s) => merge(s, v),
                            None => {
                                into.insert(k, v);
                            }
                        }
                    }
                }
                (slot, value) => *slot = value,
            }
        }
        Ok(match Self::defaults(env, algo, steps, default_run) {
            AlgoConfig::Ppo(c) => AlgoConfig::Ppo(merged(&c, o, algo)?),
            AlgoConfig::Trpo(c) => AlgoConfig::Trpo(merged(&c, o, algo)?),
            AlgoConfig::Grpo(c) => AlgoConfig::Grpo(merged(&c, o, algo)?),
            AlgoConfig::A2c(c) => AlgoConfig::A2c(merged(&c, o, algo)?),
            AlgoConfig::Reinforce(c) => AlgoConfig::Reinforce(merged(&c, o, algo)?),
            AlgoConfig::Ac(c) => AlgoConfig::Ac(merged(&c, o, algo)?),
            AlgoConfig::Sac(c) => AlgoConfig::Sac(merged(&c, o, algo)?),
            AlgoConfig::Td3(c) => AlgoConfig::Td3(merged(&c, o, algo)?),
        })
    }

    /// The PPO machinery's configuration (PPO, A2C, REINFORCE).
    pub fn ppo(&self) -> Option<PpoConfig> {
        match *self {
            AlgoConfig::Ppo(c) => Some(c),
            AlgoConfig::Trpo(c) => Some(c.to_ppo()),
            AlgoConfig::A2c(c) => Some(c.to_ppo()),
            AlgoConfig::Reinforce(c) => Some(c.into()),
            AlgoConfig::Ac(_) | AlgoConfig::Grpo(_) | AlgoConfig::Sac(_) | AlgoConfig::Td3(_) => {
                None
            }
        }
    }
}

/// Sets an agent's configuration from the resolved [`AlgoConfig`].
pub trait Configure {
    /// Installs `config`.
    ///
    /// # Errors
    /// `config` is for another kind of agent.
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()>;
}

impl<A, C, const OBS: usize, const N: usize> Configure for Ppo<A, C, OBS, N>
where
    A: microrl::policy::Actor<OBS>,
    C: microrl::algo::Critic<OBS>,
{
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()> {
        self.config = config
            .ppo()
            .context("the online actor-critic's config given to a rollout agent")?;
        Ok(())
    }
}

impl<A, C, const OBS: usize, const N: usize> Configure for microrl::algo::Anchored<A, C, OBS, N>
where
    A: microrl::policy::Actor<OBS>,
    C: microrl::algo::Critic<OBS>,
{
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()> {
        self.ppo.configure(config)
    }
}

impl<A, C, const OBS: usize, const N: usize> Configure for microrl::algo::Reinforce<A, C, OBS, N>
where
    A: microrl::policy::Actor<OBS>,
    C: microrl::algo::Critic<OBS>,
{
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()> {
        self.inner.configure(config)
    }
}

impl<A, C, const OBS: usize, const N: usize> Configure for microrl::algo::Trpo<A, C, OBS, N>
where
    A: microrl::policy::Actor<OBS>,
    C: microrl::algo::Critic<OBS>,
{
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()> {
        match config {
            AlgoConfig::Trpo(c) => {
                self.config = c;
                self.inner.config = c.to_ppo();
                Ok(())
            }
            _ => bail!("another algorithm's config given to TRPO"),
        }
    }
}

impl<A, const OBS: usize, const N: usize, const CHUNK: usize> Configure
    for microrl::algo::Grpo<A, OBS, N, CHUNK>
where
    A: microrl::policy::Actor<OBS>,
{
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()> {
        match config {
            AlgoConfig::Grpo(c) => {
                self.config = c;
                Ok(())
            }
            _ => bail!("another algorithm's config given to GRPO"),
        }
    }
}

impl<A, C, const OBS: usize> Configure for microrl::algo::ActorCritic<A, C, OBS>
where
    A: microrl::policy::Actor<OBS>,
    C: microrl::nn::Network<OBS, 1>,
{
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()> {
        match config {
            AlgoConfig::Ac(c) => {
                self.config = c;
                Ok(())
            }
            _ => bail!("a rollout algorithm's config given to the online actor-critic"),
        }
    }
}

/// A lagged schedule takes its learner's configuration.
impl<L, const OBS: usize, const BLOCK: usize> Configure for microrl::algo::Lagged<L, OBS, BLOCK>
where
    L: microrl::algo::LaggedLearner<OBS> + Configure,
{
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()> {
        self.learner.configure(config)
    }
}

/// The replay ring's size for a budget of `steps`: all of it, at most
/// [`OFFPOLICY_CAP`].
fn replay_size(steps: u64) -> u32 {
    u32::try_from(steps.clamp(1, OFFPOLICY_CAP as u64)).unwrap_or(u32::MAX)
}

impl<
    T,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const H: usize,
    const CAP: usize,
    const BATCH: usize,
> Configure for microrl::algo::Sac<T, Q, OBS, ACT, OA, H, CAP, BATCH>
where
    T: microrl::nn::Layer<Input = SVector<f32, OBS>, Output = SVector<f32, H>>,
    Q: microrl::nn::Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()> {
        match config {
            AlgoConfig::Sac(c) => {
                self.config = c;
                Ok(())
            }
            _ => bail!("another algorithm's config given to SAC"),
        }
    }
}

impl<
    N,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const CAP: usize,
    const BATCH: usize,
> Configure for microrl::algo::Td3<N, Q, OBS, ACT, OA, CAP, BATCH>
where
    N: microrl::nn::Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
    Q: microrl::nn::Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    fn configure(&mut self, config: AlgoConfig) -> anyhow::Result<()> {
        match config {
            AlgoConfig::Td3(c) => {
                self.config = c;
                Ok(())
            }
            _ => bail!("another algorithm's config given to TD3"),
        }
    }
}

/// A family plant named by its generator seed (`--plant seed=N`), its
/// reward and its observation units optionally rescaled
/// (`reward_scale`, `obs_scale`: the invariance a default must have): the
/// parameters of `--env family`, `family-2` and `family-discrete`, each
/// defaulting to the first plant of the dev split of its type.
macro_rules! family_seed {
    ($name:ident, $default:literal, $what:literal) => {
        #[doc = concat!("The generator seed of ", $what, " (default ", stringify!($default), ", a dev plant).")]
        #[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct $name {
            /// The plant's generator seed (`microrl::env::family::generate`).
            pub seed: u64,
            /// Multiplies the plant's `cost_scale` (default 1), in [1e-6, 1e6].
            pub reward_scale: f64,
            /// Multiplies the plant's `obs_unit` (default 1), in [1e-6, 1e6].
            pub obs_scale: f64,
        }

        impl Default for $name {
            fn default() -> Self {
                Self {
                    seed: $default,
                    reward_scale: 1.0,
                    obs_scale: 1.0,
                }
            }
        }

        impl $name {
            /// The scales lie in their ranges; any seed names a plant
            /// (whether of this type is checked when it is built).
            ///
            /// # Errors
            /// The first scale outside [1e-6, 1e6].
            pub fn check(&self) -> Result<(), PlantRangeError> {
                for (field, value) in [("reward_scale", self.reward_scale), ("obs_scale", self.obs_scale)] {
                    if !(1e-6..=1e6).contains(&value) {
                        return Err(PlantRangeError { field, value, min: 1e-6, max: 1e6, unit: "(a factor)" });
                    }
                }
                Ok(())
            }
        }

        impl From<$name> for microrl::env::family::PlantParams {
            fn from(choice: $name) -> Self {
                let mut p = microrl::env::family::generate(choice.seed);
                p.cost_scale *= choice.reward_scale;
                p.obs_unit *= choice.obs_scale;
                p
            }
        }
    };
}
family_seed!(FamilySeed1, 10_000, "a one-input continuous family plant");
family_seed!(FamilySeed2, 10_007, "a two-input family plant");
family_seed!(FamilySeedDiscrete, 10_011, "a three-level family plant");
