//! `microrl eval`: deterministic evaluation of any policy file, and the
//! recognition of a file's architecture that `act`, `eval`, `export` and
//! `inspect` share.

use microrl::env::{ActionOf, Env};

use microrl::serialize;
use rand_xoshiro::Xoshiro128PlusPlus;
use serde::Serialize;

use crate::arch::{Arch, PolicyFor, PolicyVisitor, TaskOf};
use crate::train::{EnvName, Metering, Task};
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
    /// Threshold the task counts as solved at (`null` in JSON for a plant
    /// without one).
    #[serde(serialize_with = "crate::train::threshold_as_json")]
    pub threshold: f32,
    /// `mean >= threshold`.
    pub solved: bool,
    /// Continuous tasks: the mean squared actuator command per step
    /// (cartpole-continuous: `a²` with `a ∈ [−1, 1]`; pendulum: torque²),
    /// the effort an energy-aware controller keeps low.
    pub mean_effort: Option<f32>,
}

/// `E` with a tally of the squared command of every step (continuous
/// plants; a discrete one leaves `effort` `None`).
struct Metered<E> {
    env: E,
    effort: Option<f64>,
    steps: u64,
}

impl<E: Task> Env for Metered<E> {
    type Obs = E::Obs;
    type Space = E::Space;
    const SOLVED_RETURN: f32 = E::SOLVED_RETURN;
    fn action_space(&self) -> Self::Space {
        self.env.action_space()
    }
    fn reset<R: rand_core::Rng + ?Sized>(&mut self, rng: &mut R) -> Self::Obs {
        self.env.reset(rng)
    }
    fn step(&mut self, action: ActionOf<E>) -> Result<microrl::env::Step<E::Obs>, microrl::Error> {
        let effort = E::Space::effort(&action);
        let step = self.env.step(action)?;
        if let Some(e) = effort {
            *self.effort.get_or_insert(0.0) += e;
        }
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
    let arch = match env.and_then(|env| Arch::detect_for(blob, env)) {
        Some(arch) => arch,
        None => detect(blob)?,
    };
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
    let (mean, std, mean_effort) = arch.with_policy(Play {
        blob,
        plant,
        episodes,
        rng: &mut rng,
    })?;
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

/// [`eval`]'s episodes with the policy type of the file's architecture, on
/// its plant with `--plant`'s parameters.
struct Play<'a> {
    blob: &'a [u8],
    plant: &'a toml::Table,
    episodes: u32,
    rng: &'a mut Xoshiro128PlusPlus,
}

impl PolicyVisitor for Play<'_> {
    /// Mean and standard deviation of the returns, and the mean squared
    /// command per step of a continuous policy.
    type Out = anyhow::Result<(f32, f32, Option<f32>)>;
    fn visit<P: PolicyFor<E, OBS>, E: TaskOf<OBS>, const OBS: usize>(self, _: Arch) -> Self::Out {
        let mut env = Metered {
            env: E::plant(self.plant)?,
            effort: None,
            steps: 0,
        };
        let policy = crate::arch::load::<P>(self.blob)?;
        let (mean, std) = microrl::algo::evaluate(&*policy, &mut env, self.episodes, self.rng)
            .map_err(anyhow::Error::msg)?;
        let effort = env.effort.map(|e| (e / env.steps.max(1) as f64) as f32);
        Ok((mean, std, effort))
    }
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
