//! Policies trained with Stable-Baselines3 or CleanRL, in and out:
//! `microrl import` and `microrl export --format safetensors`.
//!
//! Design:
//! - **The file is the PyTorch `state_dict`**, saved with
//!   `safetensors.torch.save_file` and read with the `safetensors` crate.
//!   Only the actor's tensors are read; everything else (the critic, the
//!   optimiser's leftovers) is ignored. The tensor names come from the
//!   library's module tree ([`Layout`]): SB3's `MlpPolicy` has
//!   `mlp_extractor.policy_net.{0,2}` (the tanh hidden layers), `action_net`
//!   (logits or Gaussian mean) and `log_std` (`[ACT]`); CleanRL's `ppo.py`
//!   has `actor.{0,2,4}`, `ppo_continuous_action.py` has `actor_mean.{0,2,4}`
//!   and `actor_logstd` (`[1, ACT]`). SAC and TD3 actors are recognised by
//!   their names (SB3's SAC: `actor.latent_pi.{0,2}` and the mean head
//!   `actor.mu`; SB3's TD3: `actor.mu.{0,2,4}`; CleanRL's: `fc1`, `fc2` and
//!   `fc_mean` or `fc_mu`, with the `action_scale`/`action_bias` buffers;
//!   see [`Family`]) and map onto the `*-squashed` architectures
//!   (`tanh(μ(s))` scaled to the bounds) of their hidden sizes: 64-64,
//!   256-256 (SB3's SAC default, CleanRL's) or 400-300 (SB3's TD3 default).
//!   Their file does not say which algorithm trained them, so exporting one
//!   takes it ([`OffPolicyAlgo`], `--algo`).
//! - **Mapped tensor by tensor onto microrl's format.** The destination is
//!   the [`Policy`](microrl::Policy) type of an [`Arch`] — the same types the
//!   firmware links — and is walked through [`Params`]: every tensor's
//!   shape and kind ([`tag`]) says which source tensor fills it. PyTorch's
//!   `Linear.weight` is `[out, in]` row-major; microrl's
//!   [`Dense`](microrl::nn::Dense) weight is `out × in` column-major, so
//!   weights are transposed on the way in and out and every value keeps its
//!   bits (`export` after `import` gives back the source tensors bit for bit).
//!   A wrong or missing tensor is refused with one message naming the tensor
//!   and the expected and found shapes.
//! - **Activation.** Hidden layers of tanh (SB3's and CleanRL's default for
//!   PPO) or ReLU (`activation_fn=nn.ReLU`): the ReLU ones map onto the
//!   `*-relu` architectures ([`Arch::CartpoleRelu`], …), the same tensors
//!   with the ReLU tag in the policy file. A `state_dict` does not record
//!   the activation; it is taken from the file's `activation_fn` metadata
//!   when there is one (this module's export and `tests/fixtures/gen_sb3.py`
//!   write one; any other activation is refused), else from
//!   `--activation`, else for PPO tanh is assumed — and `microrl import`
//!   says so on standard error, since SB3's documented
//!   `save_file(policy.state_dict())` writes no metadata and a ReLU policy
//!   read as tanh acts differently. An SB3 SAC/TD3 actor is never assumed
//!   ReLU: without metadata it needs `--activation relu` (a tanh SAC actor
//!   read as ReLU acted 1.9 off on Pendulum's ±2); CleanRL's SAC/TD3 actors
//!   are ReLU in code. Only ReLU SAC/TD3 actors are imported.
//! - **VecNormalize.** SB3 feeds the network
//!   `clip((obs − mean) / √(var + epsilon), −clip_obs, clip_obs)`; microrl's
//!   frozen [`RunningNorm`] computes `clip((obs − μ) / √(σ² + 1e-8), −10, 10)`
//!   in `f32`. The statistics travel as JSON (the fields of `VecNormalize`:
//!   [`VecNormalizeStats`]). A different `epsilon` is folded into the stored
//!   variance, `σ² = var + epsilon − 1e-8` (rounded once to `f32`), so the
//!   square root sees the same sum; `clip_obs` must be microrl's 10 (SB3's
//!   default), anything else is refused. SB3 computes in `float64` and rounds
//!   the normalised observation to `float32`; microrl computes in `f32`, so
//!   the network inputs can differ in the last bits (the parity tests measure
//!   what that does to the actions).

mod command;
mod vecnormalize;

pub use command::*;
pub use vecnormalize::*;

use std::collections::BTreeMap;

use anyhow::{Context, bail, ensure};
use microrl::normalize::RunningNorm;
use microrl::params::tag;
use microrl::{Params, serialize};
use safetensors::{Dtype, SafeTensors, tensor::TensorView};
use serde::Serialize;

use crate::arch::{self, Activation, Arch, PolicyFor, PolicyKind, PolicyVisitor, TaskOf};
#[cfg(test)]
use crate::arch::{CartPolePolicy, CartPoleSmallPolicy, PendulumPolicy};
use crate::train::EnvName;

/// The tensor names of the library a policy was trained with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// Stable-Baselines3 `MlpPolicy` (PPO, A2C): `mlp_extractor.policy_net.*`,
    /// `action_net.*`, `log_std`.
    Sb3,
    /// CleanRL `ppo.py` (`actor.*`) and `ppo_continuous_action.py`
    /// (`actor_mean.*`, `actor_logstd`).
    Cleanrl,
}

impl Layout {
    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Sb3 => "sb3",
            Layout::Cleanrl => "cleanrl",
        }
    }

    /// The module path of dense layer `k` of `layers` (without `.weight`).
    fn layer(self, gaussian: bool, k: usize, layers: usize) -> String {
        match self {
            Layout::Sb3 if k + 1 == layers => "action_net".to_owned(),
            Layout::Sb3 => format!("mlp_extractor.policy_net.{}", 2 * k),
            Layout::Cleanrl if gaussian => format!("actor_mean.{}", 2 * k),
            Layout::Cleanrl => format!("actor.{}", 2 * k),
        }
    }

    /// The name and PyTorch shape of the Gaussian's `log_std` for `act` actions.
    fn log_std(self, act: usize) -> (&'static str, Vec<usize>) {
        match self {
            Layout::Sb3 => ("log_std", vec![act]),
            Layout::Cleanrl => ("actor_logstd", vec![1, act]),
        }
    }
}

/// Which actor a `state_dict` holds: PPO/A2C's (SB3's `MlpPolicy`,
/// CleanRL's `ppo*.py`), or an off-policy agent's deterministic-at-test-time
/// actor — SAC's squashed Gaussian (SB3: `actor.latent_pi.{0,2}` and the
/// mean head `actor.mu`; CleanRL: `fc1`, `fc2`, `fc_mean`) or TD3's (SB3:
/// `actor.mu.{0,2,4}`; CleanRL: `fc1`, `fc2`, `fc_mu`). SAC's `log_std`
/// head (`actor.log_std`, `fc_logstd`) and every critic are not read: the
/// deployed policy is `tanh(μ(s))` scaled to the bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    OnPolicy,
    Sac,
    Td3,
}

impl Family {
    /// The family of `tensors` in `layout`.
    fn of(layout: Layout, tensors: &SafeTensors<'_>) -> Family {
        let has = |name: &str| tensors.tensor(name).is_ok();
        match layout {
            Layout::Sb3 if has("actor.latent_pi.0.weight") => Family::Sac,
            Layout::Sb3 if has("actor.mu.0.weight") => Family::Td3,
            Layout::Cleanrl if has("fc_mean.weight") => Family::Sac,
            Layout::Cleanrl if has("fc_mu.weight") => Family::Td3,
            _ => Family::OnPolicy,
        }
    }

    /// The off-policy family of `algo`.
    fn from_algo(algo: OffPolicyAlgo) -> Family {
        match algo {
            OffPolicyAlgo::Sac => Family::Sac,
            OffPolicyAlgo::Td3 => Family::Td3,
        }
    }

    /// The algorithm as [`Imported`] reports it (none for PPO's).
    fn algo(self) -> Option<OffPolicyAlgo> {
        match self {
            Family::OnPolicy => None,
            Family::Sac => Some(OffPolicyAlgo::Sac),
            Family::Td3 => Some(OffPolicyAlgo::Td3),
        }
    }

    /// The module path of dense layer `k` of `layers` (without `.weight`).
    fn layer(self, layout: Layout, gaussian: bool, k: usize, layers: usize) -> String {
        let last = k + 1 == layers;
        match (self, layout) {
            (Family::OnPolicy, _) => layout.layer(gaussian, k, layers),
            (Family::Sac, Layout::Sb3) if last => "actor.mu".to_owned(),
            (Family::Sac, Layout::Sb3) => format!("actor.latent_pi.{}", 2 * k),
            (Family::Td3, Layout::Sb3) => format!("actor.mu.{}", 2 * k),
            (Family::Sac, Layout::Cleanrl) if last => "fc_mean".to_owned(),
            (Family::Td3, Layout::Cleanrl) if last => "fc_mu".to_owned(),
            (_, Layout::Cleanrl) => format!("fc{}", k + 1),
        }
    }
}

/// An off-policy algorithm whose actor is deployed as `tanh(μ(s))` scaled
/// to the bounds (`microrl export --algo`): which library actor's tensor
/// names a `*-squashed` policy is written under, since its file does not
/// say which algorithm trained it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OffPolicyAlgo {
    /// SAC: SB3's `actor.latent_pi.{0,2}`, `actor.mu`; CleanRL's `fc1`,
    /// `fc2`, `fc_mean` (SAC's `log_std` head is not written).
    Sac,
    /// TD3: SB3's `actor.mu.{0,2,4}`; CleanRL's `fc1`, `fc2`, `fc_mu`.
    Td3,
}

impl OffPolicyAlgo {
    /// The name as the libraries write it.
    pub fn name(self) -> &'static str {
        match self {
            OffPolicyAlgo::Sac => "SAC",
            OffPolicyAlgo::Td3 => "TD3",
        }
    }
}

/// The result of [`import`].
#[derive(Clone, Debug)]
pub struct Imported {
    /// The architecture the tensors were mapped onto.
    pub arch: Arch,
    /// The policy file (microrl's binary format).
    pub blob: Vec<u8>,
    /// The source tensors that were read, in microrl's order.
    pub tensors: Vec<String>,
    /// Whether the policy normalises observations (VecNormalize statistics).
    pub normalised: bool,
    /// The hidden layers' activation.
    pub activation: Activation,
    /// Whether the file stated it, `--activation` gave it, the layout fixes
    /// it, or it was assumed.
    pub activation_source: ActivationSource,
    /// The off-policy algorithm whose actor the file holds (none: PPO's).
    pub algo: Option<OffPolicyAlgo>,
}

/// Maps the actor of a safetensors `state_dict` (`file`'s bytes) trained
/// with `layout`'s library onto the microrl policy for `env`, with the
/// observation statistics `stats` (none: raw observations).
///
/// CartPole's 4-32-32-2 (`--small`) architecture is chosen when the first
/// hidden layer has 32 units; every other PPO actor has 64. A SAC or TD3
/// actor (recognised by its tensor names) maps onto the `*-squashed`
/// architecture of its hidden sizes (64-64, 256-256 or 400-300).
///
/// # Errors
/// A file that is not safetensors, a metadata `activation_fn` other than
/// tanh or ReLU, a missing tensor, a tensor of the wrong shape or dtype
/// (naming it, with the expected and found shapes), statistics that do not
/// fit, and values microrl's format refuses (non-finite, `log_std` outside
/// ±20); an SB3 SAC/TD3 actor without `activation_fn` metadata (see
/// [`import_with`]), a tanh one, one of another size, CleanRL buffers that
/// are not the task's bounds.
pub fn import(
    layout: Layout,
    file: &[u8],
    stats: Option<&VecNormalizeStats>,
    env: EnvName,
) -> anyhow::Result<Imported> {
    import_with(layout, file, stats, env, None)
}

/// [`import`] of an MLP whose hidden layers use `activation` (`None`: what
/// the file's `activation_fn` metadata states, else for a PPO actor tanh,
/// assumed; an SB3 SAC/TD3 actor's is never assumed, CleanRL's is ReLU).
///
/// # Errors
/// As [`import`]; also a file whose `activation_fn` is neither tanh nor
/// ReLU, or differs from `activation`; an SB3 SAC/TD3 actor with neither
/// metadata nor `activation`, or a tanh one.
pub fn import_with(
    layout: Layout,
    file: &[u8],
    stats: Option<&VecNormalizeStats>,
    env: EnvName,
    activation: Option<Activation>,
) -> anyhow::Result<Imported> {
    let tensors = SafeTensors::deserialize(file).context("not a safetensors file")?;
    let (_, header) = SafeTensors::read_metadata(file).context("not a safetensors file")?;
    let stated = header
        .metadata()
        .as_ref()
        .and_then(|m| m.get("activation_fn"));
    let family = Family::of(layout, &tensors);
    if family != Family::OnPolicy {
        return import_offpolicy(layout, family, &tensors, stats, env, stated, activation);
    }
    let (activation, how) = match (stated, activation) {
        (Some(text), given) => {
            let Some(stated) = parse_activation(text) else {
                bail!(
                    "the file's activation_fn is {text}: microrl imports tanh and ReLU MLPs \
                     (tanh is SB3's and CleanRL's default for PPO)"
                );
            };
            if let Some(given) = given {
                ensure!(
                    given == stated,
                    "the file's activation_fn is {text} but --activation {} was given",
                    given.name()
                );
            }
            (stated, ActivationSource::Stated)
        }
        (None, Some(given)) => (given, ActivationSource::Given),
        (None, None) => (Activation::Tanh, ActivationSource::Assumed),
    };
    // The task's tanh architecture whose first layer has the file's shape
    // (CartPole: 64 or 32 units), else its first.
    let candidates: Vec<Arch> = Arch::ALL
        .into_iter()
        .filter(|a| a.env() == env && !a.squashed() && a.activation() == Activation::Tanh)
        .collect();
    let fits = |a: &Arch| {
        let first = format!(
            "{}.weight",
            layout.layer(a.kind() == PolicyKind::Gaussian, 0, 3)
        );
        let shape = a.first_layer();
        tensors
            .tensor(&first)
            .is_ok_and(|t| t.shape() == [shape.rows as usize, shape.cols as usize])
    };
    let arch = candidates
        .iter()
        .copied()
        .find(fits)
        .or_else(|| candidates.first().copied())
        .with_context(|| format!("no architecture acts in {}", env.name()))?;
    let arch = arch.with_activation(activation);
    let source = Source {
        layout,
        family,
        tensors: &tensors,
        arch,
        env,
    };
    let (blob, names) = arch.with_policy(Mapped {
        source: &source,
        stats,
    })?;
    Ok(Imported {
        arch,
        blob,
        tensors: names,
        normalised: stats.is_some_and(|s| s.norm_obs),
        activation,
        activation_source: how,
        algo: None,
    })
}

/// [`import`] of a SAC or TD3 actor (SB3's or CleanRL's): ReLU hidden
/// layers, onto the task's `*-squashed` architecture whose hidden sizes are
/// the file's (64-64, SB3's SAC default 256-256 — also CleanRL's SAC and
/// TD3 — or SB3's TD3 default 400-300). A `state_dict` does not record the
/// activation and SB3 takes it from `policy_kwargs`, so an SB3 file must
/// state ReLU (`activation_fn` metadata) or be given `--activation relu`:
/// a tanh actor read as ReLU acts far from its own actions, and none is
/// assumed. CleanRL's actors are ReLU in code. CleanRL's `action_scale` and
/// `action_bias` buffers must be the task's bounds. VecNormalize statistics
/// do not apply (SB3's and CleanRL's off-policy agents and microrl's train
/// on raw observations).
fn import_offpolicy(
    layout: Layout,
    family: Family,
    tensors: &SafeTensors<'_>,
    stats: Option<&VecNormalizeStats>,
    env: EnvName,
    stated: Option<&String>,
    given: Option<Activation>,
) -> anyhow::Result<Imported> {
    let algo = family.algo().map_or("PPO", OffPolicyAlgo::name);
    let library = match layout {
        Layout::Sb3 => "SB3",
        Layout::Cleanrl => "CleanRL",
    };
    ensure!(
        stats.is_none(),
        "--vecnormalize: a {library} {algo} actor reads raw observations; microrl's SAC/TD3 policies hold no normaliser"
    );
    let how = match (stated, stated.map(|t| parse_activation(t)), given) {
        (Some(text), Some(Some(Activation::Relu)), Some(Activation::Tanh)) => {
            bail!("the file's activation_fn is {text} but --activation tanh was given")
        }
        (_, Some(Some(Activation::Relu)), _) => ActivationSource::Stated,
        (Some(text), _, _) => bail!(
            "the file's activation_fn is {text}: microrl imports {algo} actors with ReLU hidden layers \
             (SB3's and CleanRL's default)"
        ),
        (None, _, Some(Activation::Tanh)) => bail!(
            "--activation tanh: microrl imports {algo} actors with ReLU hidden layers (SB3's and \
             CleanRL's default), not tanh ones"
        ),
        (None, _, Some(Activation::Relu)) => ActivationSource::Given,
        (None, _, None) if layout == Layout::Cleanrl => ActivationSource::Layout,
        (None, _, None) => bail!(
            "the file does not state its activation (no activation_fn metadata), and an SB3 {algo} \
             actor may have been trained with any (policy_kwargs activation_fn): pass \
             --activation relu if it kept SB3's default ReLU (a tanh actor read as ReLU acts far \
             from its own actions; microrl imports ReLU {algo} actors only)"
        ),
    };
    let candidates: Vec<Arch> = Arch::ALL
        .into_iter()
        .filter(|a| a.env() == env && a.squashed())
        .collect();
    ensure!(
        !candidates.is_empty(),
        "a {library} {algo} actor acts in a continuous space: use --env {}",
        EnvName::continuous_names()
    );
    // The architecture whose first layer has the file's shape; else the
    // one with the file's hidden width (the shape's error names the
    // observations); else, for a missing tensor, the first (the error
    // lists the file's tensors); else the sizes microrl has are named.
    let first = format!("{}.weight", family.layer(layout, false, 0, 3));
    let found = tensors.tensor(&first).ok().map(|t| t.shape().to_vec());
    let arch = match &found {
        None => candidates[0],
        Some(shape) => {
            let rows = |a: &Arch| a.first_layer().rows as usize;
            let cols = |a: &Arch| a.first_layer().cols as usize;
            match candidates
                .iter()
                .find(|a| shape[..] == [rows(a), cols(a)])
                .or_else(|| candidates.iter().find(|a| shape.first() == Some(&rows(a))))
            {
                Some(&arch) => arch,
                None => bail!(
                    "tensor `{first}` has shape {}: microrl imports {algo} actors for {} with hidden \
                     layers of {}",
                    shape_text(shape),
                    env.name(),
                    candidates
                        .iter()
                        .map(|a| a.hidden_sizes())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
    };
    let source = Source {
        layout,
        family,
        tensors,
        arch,
        env,
    };
    let (blob, names) = arch.with_policy(Mapped {
        source: &source,
        stats: None,
    })?;
    Ok(Imported {
        arch,
        blob,
        tensors: names,
        normalised: false,
        activation: Activation::Relu,
        activation_source: how,
        algo: family.algo(),
    })
}

/// Where [`import`]'s activation came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActivationSource {
    /// The file's `activation_fn` metadata.
    Stated,
    /// `--activation`.
    Given,
    /// Fixed by the layout: CleanRL's SAC and TD3 actors are ReLU in code.
    Layout,
    /// Neither: tanh, SB3's and CleanRL's default for PPO, assumed.
    Assumed,
}

/// The activation an `activation_fn` metadata entry names: its last word,
/// case-insensitive, is `tanh` or `relu` (`Tanh`, `ReLU`, `nn.ReLU`,
/// `<class 'torch.nn.modules.activation.ReLU'>`); anything else
/// (`LeakyReLU`, `ReLU6`, `ELU`) is `None`.
fn parse_activation(text: &str) -> Option<Activation> {
    let word = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .rfind(|w| !w.is_empty())?
        .to_ascii_lowercase();
    match word.as_str() {
        "tanh" => Some(Activation::Tanh),
        "relu" => Some(Activation::Relu),
        _ => None,
    }
}

/// [`Source::map`] onto an architecture's policy type.
struct Mapped<'a> {
    source: &'a Source<'a>,
    stats: Option<&'a VecNormalizeStats>,
}

impl PolicyVisitor for Mapped<'_> {
    type Out = anyhow::Result<(Vec<u8>, Vec<String>)>;
    fn visit<P: PolicyFor<E, OBS>, E: TaskOf<OBS>, const OBS: usize>(self, _: Arch) -> Self::Out {
        self.source.map::<P, OBS>(self.stats)
    }
}

/// [`unmap`] of a policy file as its architecture's policy type, under
/// the names of `family`'s actor.
struct Unmap<'a> {
    layout: Layout,
    family: Family,
    blob: &'a [u8],
}

impl PolicyVisitor for Unmap<'_> {
    type Out = anyhow::Result<Unmapped>;
    fn visit<P: PolicyFor<E, OBS>, E: TaskOf<OBS>, const OBS: usize>(
        self,
        arch: Arch,
    ) -> Self::Out {
        match (P::KIND == PolicyKind::Squashed, self.family) {
            (true, Family::OnPolicy) => bail!(
                "{} is a SAC/TD3 policy (tanh(μ(s)) scaled to the bounds) and its file does not say \
                 which: pass --algo sac or --algo td3 to write that actor's tensor names",
                arch.name()
            ),
            (false, Family::Sac | Family::Td3) => bail!(
                "--algo names a SAC/TD3 actor; {} is a {} PPO-family policy: drop --algo",
                arch.name(),
                match P::KIND {
                    PolicyKind::Categorical => "categorical",
                    _ => "Gaussian",
                }
            ),
            _ => unmap::<P, OBS>(self.layout, self.family, self.blob),
        }
    }
}

/// What [`import`] reads from.
struct Source<'a> {
    layout: Layout,
    family: Family,
    tensors: &'a SafeTensors<'a>,
    arch: Arch,
    env: EnvName,
}

/// `tag`'s kind (weight, bias, log_std, statistics, bounds) without the
/// activation byte.
fn kind(shape_tag: u32) -> u32 {
    shape_tag & !0xff
}

/// Where each actor tensor of policy type `P` comes from: the source name,
/// its PyTorch shape and whether it is a weight matrix (transposed).
fn actor_tensors<P: Params>(
    layout: Layout,
    family: Family,
) -> Vec<(usize, String, Vec<usize>, bool)> {
    let shapes: Vec<_> = (0..P::TENSORS).map(P::shape).collect();
    let layers = shapes.iter().filter(|s| kind(s.tag) == tag::WEIGHT).count();
    let gaussian = shapes.iter().any(|s| kind(s.tag) == tag::LOG_STD);
    let mut out = Vec::new();
    let mut layer = 0;
    for (i, s) in shapes.iter().enumerate() {
        let (rows, cols) = (s.rows as usize, s.cols as usize);
        match kind(s.tag) {
            tag::WEIGHT => out.push((
                i,
                format!("{}.weight", family.layer(layout, gaussian, layer, layers)),
                vec![rows, cols],
                true,
            )),
            tag::BIAS => {
                out.push((
                    i,
                    format!("{}.bias", family.layer(layout, gaussian, layer, layers)),
                    vec![rows],
                    false,
                ));
                layer += 1;
            }
            tag::LOG_STD => {
                let (name, shape) = layout.log_std(rows);
                out.push((i, name.to_owned(), shape, false));
            }
            _ => {}
        }
    }
    out
}

/// The action bounds (`low`, `high`) of `policy`, if its type has them.
fn bounds<P: Params>(policy: &P) -> Option<(&[f32], &[f32])> {
    let first = (0..P::TENSORS).find(|&i| kind(P::shape(i).tag) == tag::BOUNDS)?;
    Some((policy.tensor(first), policy.tensor(first + 1)))
}

/// CleanRL's `action_scale` and `action_bias` buffers for bounds `low`,
/// `high`: `(high − low) / 2` and `(high + low) / 2`, in `f32` as numpy
/// computes them from the `float32` bounds of a Gymnasium `Box`.
fn cleanrl_buffers(low: &[f32], high: &[f32]) -> [(&'static str, Vec<f32>); 2] {
    let scale = low.iter().zip(high).map(|(l, h)| (h - l) / 2.0).collect();
    let bias = low.iter().zip(high).map(|(l, h)| (h + l) / 2.0).collect();
    [("action_scale", scale), ("action_bias", bias)]
}

/// Index of the normaliser's first tensor (its mean) in policy type `P`.
fn statistics_index<P: Params>() -> Option<usize> {
    (0..P::TENSORS).find(|&i| kind(P::shape(i).tag) == tag::STATISTICS)
}

fn shape_text(shape: &[usize]) -> String {
    format!(
        "[{}]",
        shape
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `value` as a person reads it: plain, or in scientific notation when very
/// large or small (`1e30`, not thirty-one digits).
fn number_text<T>(value: T) -> String
where
    T: Copy + Into<f64> + std::fmt::Display + std::fmt::LowerExp,
{
    let a = value.into().abs();
    if a.is_finite() && a != 0.0 && !(1e-4..1e6).contains(&a) {
        format!("{value:e}")
    } else {
        format!("{value}")
    }
}

/// Element `k` of a row-major tensor of `shape` as a PyTorch index (`[3, 5]`).
fn index_text(shape: &[usize], mut k: usize) -> String {
    let mut index = vec![0; shape.len()];
    for (d, &n) in shape.iter().enumerate().rev() {
        index[d] = k % n.max(1);
        k /= n.max(1);
    }
    shape_text(&index)
}

/// Refuses a source tensor with a value microrl's policy format cannot hold,
/// naming the tensor as the file does, the element and the bound: NaN or
/// infinite anywhere, and for `log_std` a value outside
/// [`LOG_STD_MIN`](microrl::policy::LOG_STD_MIN)`..=`[`LOG_STD_MAX`](microrl::policy::LOG_STD_MAX).
fn check_values(name: &str, shape: &[usize], values: &[f32], log_std: bool) -> anyhow::Result<()> {
    use microrl::policy::{LOG_STD_MAX, LOG_STD_MIN};
    if let Some(k) = values.iter().position(|v| !v.is_finite()) {
        bail!(
            "tensor `{name}` holds {} at {}: microrl's policies hold finite numbers only",
            values[k],
            index_text(shape, k)
        );
    }
    if log_std
        && let Some(k) = values
            .iter()
            .position(|v| !(LOG_STD_MIN..=LOG_STD_MAX).contains(v))
    {
        bail!(
            "tensor `{name}` holds {} at {}: log_std must lie in [{LOG_STD_MIN}, {LOG_STD_MAX}]",
            number_text(values[k]),
            index_text(shape, k)
        );
    }
    Ok(())
}

impl Source<'_> {
    /// The source tensor `name` as `f32`s in PyTorch's (row-major) order.
    fn read(&self, name: &str, expected: &[usize]) -> anyhow::Result<Vec<f32>> {
        let what = format!("{} ({})", self.env.name(), self.arch.layers());
        let Ok(view) = self.tensors.tensor(name) else {
            let mut names = self.tensors.names();
            names.sort_unstable();
            bail!(
                "no tensor `{name}` in the file (needed for {what} in the {} layout; the file has {})",
                self.layout.name(),
                names.join(", ")
            );
        };
        ensure!(
            view.shape() == expected,
            "tensor `{name}` has shape {}, expected {} for {what}",
            shape_text(view.shape()),
            shape_text(expected)
        );
        ensure!(
            view.dtype() == Dtype::F32,
            "tensor `{name}` is {}, expected F32",
            view.dtype()
        );
        Ok(view
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    /// Fills a fresh `P` (the task's action bounds, an empty normaliser)
    /// with the source's actor and `stats`, and serialises it.
    fn map<P: Params, const OBS: usize>(
        &self,
        stats: Option<&VecNormalizeStats>,
    ) -> anyhow::Result<(Vec<u8>, Vec<String>)> {
        let mut policy = arch::load::<P>(&arch::init_blob(self.arch, 0)?)?;
        let mut names = Vec::new();
        let tensors = actor_tensors::<P>(self.layout, self.family);
        for (i, name, shape, is_weight) in &tensors {
            let (i, is_weight) = (*i, *is_weight);
            let values = self.read(name, shape)?;
            check_values(name, shape, &values, kind(P::shape(i).tag) == tag::LOG_STD)?;
            let dst = policy.tensor_mut(i);
            if is_weight {
                // PyTorch [out, in] row-major → microrl out × in column-major.
                let (rows, cols) = (shape[0], shape[1]);
                for r in 0..rows {
                    for c in 0..cols {
                        dst[c * rows + r] = values[r * cols + c];
                    }
                }
            } else {
                dst.copy_from_slice(&values);
            }
            names.push(name.clone());
        }
        if self.family != Family::OnPolicy && self.layout == Layout::Cleanrl {
            let (low, high) = bounds::<P>(&policy).context("a SAC/TD3 policy without bounds")?;
            for (name, want) in cleanrl_buffers(low, high) {
                let got = self.read(name, &[want.len()])?;
                check_values(name, &[want.len()], &got, false)?;
                if let Some(k) = (0..want.len())
                    .find(|&k| (got[k] - want[k]).abs() > 1e-6 * want[k].abs().max(1.0))
                {
                    bail!(
                        "tensor `{name}` holds {} at [{k}], expected {} for {}'s action bounds \
                         [{}, {}] ({name} = (high {} low) / 2)",
                        number_text(got[k]),
                        number_text(want[k]),
                        self.env.name(),
                        low[k],
                        high[k],
                        if name == "action_scale" { "-" } else { "+" }
                    );
                }
                names.push(name.to_owned());
            }
        }
        if let Some(stats) = stats {
            let norm = stats
                .to_running_norm::<OBS>(self.env)
                .context("VecNormalize statistics")?;
            let first = statistics_index::<P>().context("policy without a normaliser")?;
            for t in 0..<RunningNorm<OBS> as Params>::TENSORS {
                policy.tensor_mut(first + t).copy_from_slice(norm.tensor(t));
            }
        }
        // The values were checked above; what the core still refuses is
        // named by the file's tensor name where there is one.
        let name_of = |index: u32| {
            tensors
                .iter()
                .find(|(i, ..)| *i == index as usize)
                .map_or_else(
                    || format!("{index} (the observation statistics)"),
                    |t| format!("`{}`", t.1),
                )
        };
        let blob = serialize::to_vec(&*policy).map_err(|e| match e {
            microrl::Error::OutOfDomain { tensor, reason } => {
                anyhow::anyhow!(
                    "tensor {} is out of microrl's domain: {reason}",
                    name_of(tensor)
                )
            }
            e => anyhow::anyhow!("{e}"),
        })?;
        Ok((blob, names))
    }
}

/// The result of [`export`].
#[derive(Clone, Debug)]
pub struct Exported {
    /// The policy's architecture.
    pub arch: Arch,
    /// The safetensors file: the actor's tensors under `layout`'s names.
    pub safetensors: Vec<u8>,
    /// The names written, in microrl's order.
    pub tensors: Vec<String>,
    /// The observation statistics, if the policy normalises observations.
    pub stats: Option<VecNormalizeStats>,
}

/// Writes a microrl policy file's actor as a safetensors `state_dict` under
/// `layout`'s names (weights back to PyTorch's `[out, in]`), loadable with
/// `policy.load_state_dict(load_file(path), strict=False)`; the normaliser,
/// if it holds statistics, as [`VecNormalizeStats`]. A SAC/TD3 policy
/// needs [`export_with`] (which actor's names).
///
/// # Errors
/// A blob that is not a policy of a known architecture; a SAC/TD3 policy.
pub fn export(layout: Layout, blob: &[u8]) -> anyhow::Result<Exported> {
    export_with(layout, None, blob)
}

/// [`export`] of a policy file, a `*-squashed` one under the names of
/// `algo`'s actor (SB3: loadable into `model.policy` of a SAC or TD3 with
/// the same `net_arch`; CleanRL: into its `Actor`, with the
/// `action_scale`/`action_bias` buffers of the policy's bounds). SAC's
/// `log_std` head is not written (the deployed policy has none). The
/// metadata names `activation_fn`, and for a SAC/TD3 policy `net_arch`
/// (as SB3's `policy_kwargs` spell them).
///
/// # Errors
/// As [`export`]; a `*-squashed` policy without `algo`, or `algo` for a
/// PPO-family policy.
pub fn export_with(
    layout: Layout,
    algo: Option<OffPolicyAlgo>,
    blob: &[u8],
) -> anyhow::Result<Exported> {
    let arch = Arch::detect(blob).context("not a microrl policy of a known architecture")?;
    let family = algo.map_or(Family::OnPolicy, Family::from_algo);
    let (tensors, stats) = arch.with_policy(Unmap {
        layout,
        family,
        blob,
    })?;
    let activation = match arch.activation() {
        Activation::Tanh => "Tanh",
        Activation::Relu => "ReLU",
    };
    let mut metadata = BTreeMap::from([("activation_fn".to_owned(), activation.to_owned())]);
    if family != Family::OnPolicy {
        let sizes = arch.hidden_sizes().replace('-', ", ");
        metadata.insert("net_arch".to_owned(), format!("[{sizes}]"));
    }
    let views = tensors
        .iter()
        .map(|(name, shape, bytes)| {
            TensorView::new(Dtype::F32, shape.clone(), bytes).map(|v| (name.clone(), v))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let safetensors = with_metadata(&safetensors::serialize(views, None)?, &metadata)?;
    Ok(Exported {
        arch,
        safetensors,
        tensors: tensors.into_iter().map(|(name, ..)| name).collect(),
        stats,
    })
}

/// The safetensors file `plain` (written without metadata) with `metadata`
/// as its header's first entry, in key order: the crate writes a metadata
/// map in hash order, which would make the same export differ from run to
/// run. A safetensors file is an 8-byte little-endian header length, the
/// JSON header (padded with spaces to a multiple of 8 bytes) and the data,
/// whose offsets are relative to the data's start and so unchanged.
fn with_metadata(plain: &[u8], metadata: &BTreeMap<String, String>) -> anyhow::Result<Vec<u8>> {
    let len = plain
        .get(..8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes)
        .and_then(|n| usize::try_from(n).ok())
        .context("safetensors header length")?;
    let header = plain
        .get(8..8 + len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .context("safetensors header")?;
    let rest = header
        .trim_end()
        .strip_prefix('{')
        .context("safetensors header is not a JSON object")?;
    let mut json = format!("{{\"__metadata__\":{}", serde_json::to_string(metadata)?);
    if rest != "}" {
        json.push(',');
    }
    json.push_str(rest);
    while json.len() % 8 != 0 {
        json.push(' ');
    }
    let mut out = Vec::with_capacity(8 + json.len() + plain.len() - 8 - len);
    out.extend_from_slice(&(json.len() as u64).to_le_bytes());
    out.extend_from_slice(json.as_bytes());
    out.extend_from_slice(&plain[8 + len..]);
    SafeTensors::deserialize(&out).context("the exported safetensors file")?;
    Ok(out)
}

/// The named actor tensors (`f32` little-endian bytes in PyTorch's order)
/// and the statistics of policy file `blob` of type `P`.
type Unmapped = (
    Vec<(String, Vec<usize>, Vec<u8>)>,
    Option<VecNormalizeStats>,
);

fn unmap<P: Params, const OBS: usize>(
    layout: Layout,
    family: Family,
    blob: &[u8],
) -> anyhow::Result<Unmapped> {
    let policy = arch::load::<P>(blob)?;
    let bytes = |values: &[f32]| values.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut out = Vec::new();
    for (i, name, shape, is_weight) in actor_tensors::<P>(layout, family) {
        let src = policy.tensor(i);
        let values: Vec<f32> = if is_weight {
            let (rows, cols) = (shape[0], shape[1]);
            (0..rows * cols)
                .map(|k| src[(k % cols) * rows + k / cols])
                .collect()
        } else {
            src.to_vec()
        };
        out.push((name, shape, bytes(&values)));
    }
    if family != Family::OnPolicy && layout == Layout::Cleanrl {
        let (low, high) = bounds::<P>(&policy).context("a SAC/TD3 policy without bounds")?;
        for (name, values) in cleanrl_buffers(low, high) {
            out.push((name.to_owned(), vec![values.len()], bytes(&values)));
        }
    }
    let Some(first) = statistics_index::<P>() else {
        return Ok((out, None));
    };
    let mut norm = RunningNorm::<OBS>::ZERO;
    for t in 0..<RunningNorm<OBS> as Params>::TENSORS {
        norm.tensor_mut(t).copy_from_slice(policy.tensor(first + t));
    }
    let stats = norm
        .has_statistics()
        .then(|| VecNormalizeStats::from_running_norm(&norm));
    Ok((out, stats))
}

#[cfg(test)]
mod tests;
