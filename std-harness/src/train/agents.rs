//! The agent type of each built-in plant and algorithm, for commands that
//! train many short runs of one configuration (`microrl tune`, `microrl
//! suite`).
//!
//! The plant and the agent are types (their sizes are const generics), so
//! a command that works for every plant is written once as a [`WithAgent`]
//! — a generic method over the plant `E`, the learner `L` and its
//! configuration `C` — and [`with_agent`] calls it with the types the
//! (plant, algorithm) pair names. The agents are those of `microrl train`
//! on the same plant: 64-wide networks, the plant's PPO rollout, the
//! off-policy replay ring of [`OFFPOLICY_CAP`] transitions.

use anyhow::bail;
use microrl::env::{ActionOf, Env, EnvState};
use microrl::train::Learner;
use microrl::{Controller, Params, SVector, agent};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Algo, AlgoConfig, EnvName, OFFPOLICY_BATCH, OFFPOLICY_CAP, Task, for_each_task};
use crate::tune::{AC_SPACE, Dim, SAC_SPACE, TD3_SPACE, ppo_space};

/// A job generic over a built-in plant's agent: [`with_agent`] calls
/// [`WithAgent::run`] with the types of the pair it was given.
pub trait WithAgent {
    /// What the job returns.
    type Output;
    /// The command and its verb, for the refusal of an algorithm that does
    /// not apply (`"microrl tune searches"`).
    const REFUSAL: &'static str;
    /// Runs the job: `space` is the algorithm's search space, `base` the
    /// configuration, `plant` the plant (with `--plant`'s parameters) and
    /// `make_agent` a fresh boxed agent with a given configuration.
    ///
    /// # Errors
    /// The job's own.
    fn run<E, L, C, const OBS: usize>(
        self,
        space: &'static [Dim],
        base: C,
        plant: E,
        make_agent: impl Fn(C) -> Box<L> + Send + Sync + Copy + 'static,
    ) -> anyhow::Result<Self::Output>
    where
        E: Env<Obs = SVector<f32, OBS>> + EnvState + Clone + Send + Sync + 'static,
        L: Learner<E> + 'static,
        L::Policy: Params + Controller<OBS, Action = ActionOf<E>>,
        C: Clone + Send + Sync + Serialize + DeserializeOwned + 'static;
}

/// Calls `job` with the plant `env` (its `--plant` parameters in `plant`),
/// the agent type of `base`'s algorithm on it, and `base` (the resolved
/// configuration of `algo`, which names it in a refusal).
///
/// # Errors
/// An algorithm without a search space or not for this action space
/// (ppo and ac on every plant, sac and td3 on the continuous ones), invalid
/// `plant` parameters, and the job's own errors.
pub fn with_agent<J: WithAgent>(
    env: EnvName,
    algo: Algo,
    base: AlgoConfig,
    plant: &toml::Table,
    job: J,
) -> anyhow::Result<J::Output> {
    macro_rules! boxed {
        ($agent:ty) => {
            |config| {
                let mut agent: Box<$agent> = Box::new(<$agent>::ZERO);
                agent.config = config;
                agent
            }
        };
    }
    // SAC and TD3 hold a replay ring of megabytes: built on the heap in
    // place (`boxed`), never on the stack.
    macro_rules! boxed_offpolicy {
        ($agent:ty) => {
            |config| <$agent>::boxed(config)
        };
    }
    macro_rules! by_algo {
        ($plant:ty, $n:expr $(, oa = $oa:literal)?) => {{
            let plant = <$plant as Task>::plant(plant)?;
            match base {
                AlgoConfig::Ppo(c) => {
                    job.run(ppo_space(env.continuous()), c, plant, boxed!(agent::Ppo<$plant, 64, { $n }>))
                }
                AlgoConfig::Ac(c) => {
                    job.run(&AC_SPACE, c, plant, boxed!(agent::ActorCritic<$plant, 64>))
                }
                $(
                    AlgoConfig::Sac(c) => job.run(
                        &SAC_SPACE,
                        c,
                        plant,
                        boxed_offpolicy!(agent::Sac<$plant, 64, OFFPOLICY_CAP, OFFPOLICY_BATCH, $oa>),
                    ),
                    AlgoConfig::Td3(c) => job.run(
                        &TD3_SPACE,
                        c,
                        plant,
                        boxed_offpolicy!(agent::Td3<$plant, 64, OFFPOLICY_CAP, OFFPOLICY_BATCH, $oa>),
                    ),
                )?
                _ => bail!(
                    "{} ppo and ac on every plant, sac and td3 on the continuous ones ({}): not {} on {}",
                    J::REFUSAL,
                    EnvName::continuous_names(),
                    algo.name(),
                    env.name()
                ),
            }
        }};
    }
    macro_rules! by_task {
        ($( $(#[$doc:meta])* $variant:ident = $name:literal, $plant:ty, $params:ty,
            ppo = $n:expr $(, oa = $oa:literal)?; )*) => {
            match env {
                $(EnvName::$variant => by_algo!($plant, $n $(, oa = $oa)?),)*
            }
        };
    }
    for_each_task!(by_task)
}
