//! `microrl eval`: deterministic evaluation of any policy file, and the
//! recognition of a file's architecture that `act`, `eval`, `export` and
//! `inspect` share.

use microrl::env::{CartPoleContinuous, Env, Pendulum};
use microrl::{Params, SVector, serialize};
use rand_xoshiro::Xoshiro128PlusPlus;
use serde::Serialize;

use crate::arch::Arch;
use crate::train::{EnvName, cartpole_plant, plant_params};
use anyhow::bail;

/// The result of `microrl eval`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EvalSummary {
    /// Task name.
    pub env: &'static str,
    /// The policy's architecture.
    pub arch: Arch,
    /// Episodes played.
    pub episodes: u32,
    /// Mean return.
    pub mean: f32,
    /// Standard deviation of the returns.
    pub std: f32,
    /// Threshold the task counts as solved at.
    pub threshold: f32,
    /// `mean >= threshold`.
    pub solved: bool,
    /// Continuous tasks: the mean squared actuator command per step
    /// (cartpole-continuous: `a²` with `a ∈ [−1, 1]`; pendulum: torque²),
    /// the effort an energy-aware controller keeps low.
    pub mean_effort: Option<f32>,
}

/// `E` with a tally of the squared command of every step.
struct Metered<E> {
    env: E,
    effort: f64,
    steps: u64,
}

impl<E: Env<Space = microrl::env::Continuous<1>>> Env for Metered<E> {
    type Obs = E::Obs;
    type Space = E::Space;
    const SOLVED_RETURN: f32 = E::SOLVED_RETURN;
    fn action_space(&self) -> Self::Space {
        self.env.action_space()
    }
    fn reset<R: rand_core::Rng + ?Sized>(&mut self, rng: &mut R) -> Self::Obs {
        self.env.reset(rng)
    }
    fn step(
        &mut self,
        action: SVector<f32, 1>,
    ) -> Result<microrl::env::Step<E::Obs>, microrl::Error> {
        let step = self.env.step(action)?;
        self.effort += f64::from(action[0]) * f64::from(action[0]);
        self.steps += 1;
        Ok(step)
    }
}

/// Loads `blob` (any policy file `train`, `init` or `export` wrote), checks
/// it acts in `env` (default: the task its architecture is for) and plays
/// `episodes` deterministic episodes on the plant with the parameters of
/// `plant` (empty: Gymnasium's).
pub fn eval(
    env: Option<EnvName>,
    blob: &[u8],
    episodes: u32,
    seed: u64,
    plant: &toml::Table,
) -> anyhow::Result<EvalSummary> {
    use rand_core::SeedableRng;
    anyhow::ensure!(episodes > 0, "--episodes must be > 0");
    let arch = detect(blob)?;
    let env = env.unwrap_or(arch.env());
    anyhow::ensure!(
        arch.env() == env,
        "this is a {} policy ({}): it acts in {}, not {}",
        arch.name(),
        arch.layers(),
        arch.env().name(),
        env.name()
    );
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
    fn play<P, E, const OBS: usize>(
        blob: &[u8],
        mut env: E,
        episodes: u32,
        rng: &mut Xoshiro128PlusPlus,
    ) -> anyhow::Result<(f32, f32)>
    where
        P: Params + microrl::Controller<OBS, Action = microrl::env::ActionOf<E>>,
        E: Env<Obs = SVector<f32, OBS>>,
    {
        let policy = crate::arch::load::<P>(blob)?;
        microrl::algo::evaluate(&*policy, &mut env, episodes, rng).map_err(anyhow::Error::msg)
    }
    use crate::arch::{
        CartPoleContinuousPolicy, CartPoleContinuousReluPolicy, CartPoleContinuousSquashedPolicy,
        CartPolePolicy, CartPoleReluPolicy, CartPoleSmallPolicy, CartPoleSmallReluPolicy,
        PendulumPolicy, PendulumReluPolicy, PendulumSquashedPolicy,
    };
    fn metered<P, E, const OBS: usize>(
        blob: &[u8],
        env: E,
        episodes: u32,
        rng: &mut Xoshiro128PlusPlus,
    ) -> anyhow::Result<(f32, f32, Option<f32>)>
    where
        P: Params + microrl::Controller<OBS, Action = SVector<f32, 1>>,
        E: Env<Obs = SVector<f32, OBS>, Space = microrl::env::Continuous<1>>,
    {
        let mut env = Metered {
            env,
            effort: 0.0,
            steps: 0,
        };
        let policy = crate::arch::load::<P>(blob)?;
        let (mean, std) = microrl::algo::evaluate(&*policy, &mut env, episodes, rng)
            .map_err(anyhow::Error::msg)?;
        Ok((
            mean,
            std,
            Some((env.effort / env.steps.max(1) as f64) as f32),
        ))
    }
    let r = &mut rng;
    let (mean, std, mean_effort) = match arch.env() {
        EnvName::Cartpole => {
            let plant = cartpole_plant(plant)?;
            let (m, s) = match arch {
                Arch::CartpoleSmall => play::<CartPoleSmallPolicy, _, 4>(blob, plant, episodes, r)?,
                Arch::CartpoleRelu => play::<CartPoleReluPolicy, _, 4>(blob, plant, episodes, r)?,
                Arch::CartpoleSmallRelu => {
                    play::<CartPoleSmallReluPolicy, _, 4>(blob, plant, episodes, r)?
                }
                _ => play::<CartPolePolicy, _, 4>(blob, plant, episodes, r)?,
            };
            (m, s, None)
        }
        EnvName::CartpoleContinuous => {
            let plant = CartPoleContinuous::with_params(plant_params(plant)?)
                .map_err(|e| anyhow::anyhow!("invalid --plant: {e}"))?;
            match arch {
                Arch::CartpoleContinuousRelu => {
                    metered::<CartPoleContinuousReluPolicy, _, 4>(blob, plant, episodes, r)?
                }
                Arch::CartpoleContinuousSquashed => {
                    metered::<CartPoleContinuousSquashedPolicy, _, 4>(blob, plant, episodes, r)?
                }
                _ => metered::<CartPoleContinuousPolicy, _, 4>(blob, plant, episodes, r)?,
            }
        }
        EnvName::Pendulum => {
            let plant = Pendulum::with_params(plant_params(plant)?)
                .map_err(|e| anyhow::anyhow!("invalid --plant: {e}"))?;
            match arch {
                Arch::PendulumRelu => {
                    metered::<PendulumReluPolicy, _, 3>(blob, plant, episodes, r)?
                }
                Arch::PendulumSquashed => {
                    metered::<PendulumSquashedPolicy, _, 3>(blob, plant, episodes, r)?
                }
                _ => metered::<PendulumPolicy, _, 3>(blob, plant, episodes, r)?,
            }
        }
    };
    let threshold = env.threshold();
    Ok(EvalSummary {
        env: env.name(),
        arch,
        episodes,
        mean,
        std,
        threshold,
        solved: mean >= threshold,
        mean_effort,
    })
}

/// The architecture of a policy file, or an error saying why none loads it.
pub fn detect(blob: &[u8]) -> anyhow::Result<Arch> {
    if let Some(arch) = Arch::detect(blob) {
        return Ok(arch);
    }
    // Say why: the format-level error if the blob is damaged, else a shape mismatch.
    serialize::verify(blob).map_err(|e| anyhow::anyhow!("not a valid policy file: {e}"))?;
    bail!(
        "not a policy file of a known architecture ({})",
        Arch::ALL.map(Arch::name).join(", ")
    )
}
