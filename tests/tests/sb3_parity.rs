//! Parity with Stable-Baselines3 and CleanRL: a policy trained in PyTorch,
//! imported with `microrl import` and deployed as a microrl [`Policy`], acts
//! as the library's own `predict(obs, deterministic=True)` does.
//!
//! The fixtures in `tests/fixtures/sb3/` are committed, so this test needs
//! neither Python nor the network. To regenerate them (from the workspace
//! root; see the script's header):
//!
//! ```text
//! python3 -m venv /tmp/venv-torch
//! /tmp/venv-torch/bin/pip install torch numpy stable-baselines3 gymnasium safetensors
//! /tmp/venv-torch/bin/python tests/fixtures/gen_sb3.py
//! cargo test -p microrl-tests --test sb3_parity -- --nocapture
//! ```
//!
//! For every fixture policy: the `state_dict` (and VecNormalize statistics)
//! go through [`interop::import`], the resulting policy file is loaded as the
//! deployed type the firmware links, and on every recorded observation
//! (10 000 for SB3, 2 000 for the untrained CleanRL actors; the last tenth
//! far out of distribution):
//! - categorical: the deployed action equals SB3's on *every* observation;
//! - Gaussian: the network's mean (before the actuator clip) is within
//!   [`MEAN_TOL`] of SB3's unclipped mean, and the deployed command (the
//!   mean clipped to the bounds stored in the file) within [`MEAN_TOL`] of
//!   what `predict` returns (SB3 clips to the action space's bounds).
//!
//! The differences come from the arithmetic, not the mapping: PyTorch's
//! matrix products sum in another order (and may fuse multiply-adds),
//! VecNormalize normalises in `float64`, and the workspace builds the core
//! with `fast-math` (tanh within 6e-7). The largest differences are printed.
//!
//! SAC and TD3 actors (SB3's at 64-64 and at their default sizes, SAC
//! 256-256 and TD3 400-300; CleanRL's, 256-256) are deployed as `tanh(μ(s))`
//! scaled to the bounds: that output within [`MEAN_TOL`] of the actor's and
//! the command within [`SQUASHED_TOL`] of the library's deterministic
//! action, each times the observation's [`input_scale`].
//!
//! Then the reverse: exporting each imported policy gives back the source
//! tensors bit for bit, and the committed `sb3-cartpole.microrl.safetensors`
//! (the file `tests/fixtures/check_sb3_export.py` loaded into an SB3 policy
//! and checked action for action against SB3) is what `microrl export`
//! writes today; for SAC and TD3, `tests/fixtures/check_offpolicy_export.py`
//! recorded the actions SB3's and CleanRL's actors take with microrl's
//! exported policies loaded, which microrl's policies take too.

use std::path::{Path, PathBuf};

use microrl::algo::offpolicy::TanhPolicy;
use microrl::nn::{Chain, Dense, Layer, Relu, Tanh};
use microrl::{Controller, Params, SVector, serialize};
use microrl_harness::interop::{self, Layout, OffPolicyAlgo, VecNormalizeStats};
use microrl_harness::train::EnvName;
use safetensors::{Dtype, SafeTensors};

/// Largest accepted |Δ| between microrl's and PyTorch's Gaussian means
/// (and SAC/TD3 actors' `tanh(μ)`).
const MEAN_TOL: f32 = 1e-5;
/// Largest accepted |Δ| between microrl's and the library's SAC/TD3
/// commands on Pendulum's ±2 (twice [`MEAN_TOL`]: `tanh(μ)` scaled by 2).
const SQUASHED_TOL: f32 = 2.0 * MEAN_TOL;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/sb3")
        .join(name)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The `f32` values of a fixture tensor.
fn f32s(file: &SafeTensors, name: &str) -> (Vec<usize>, Vec<f32>) {
    let t = file.tensor(name).unwrap();
    assert_eq!(t.dtype(), Dtype::F32, "{name}");
    let values = t
        .data()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    (t.shape().to_vec(), values)
}

fn i32s(file: &SafeTensors, name: &str) -> Vec<i32> {
    let t = file.tensor(name).unwrap();
    assert_eq!(t.dtype(), Dtype::I32, "{name}");
    t.data()
        .chunks_exact(4)
        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Imports fixture `name` (with its `.vecnormalize.json` if there is one).
fn import(name: &str, layout: Layout, env: EnvName) -> interop::Imported {
    let stats = std::fs::read_to_string(fixture(&format!("{name}.vecnormalize.json")))
        .ok()
        .map(|text| VecNormalizeStats::parse(&text).unwrap());
    let file = read(&format!("{name}.safetensors"));
    let imported = interop::import(layout, &file, stats.as_ref(), env).unwrap();
    assert_eq!(imported.normalised, stats.is_some());
    imported
}

type CartPolePolicy = microrl::agent::Policy<microrl::env::CartPole, 64>;
type PendulumPolicy = microrl::agent::Policy<microrl::env::Pendulum, 64>;
/// The network of a deployed Pendulum SAC/TD3 policy with hidden layers of
/// `H1` and `H2` ReLU units (`TanhPolicy<SquashedNet<H1, H2>, 1>`).
type SquashedNet<const H1: usize, const H2: usize> =
    Chain<Dense<3, H1, Relu>, Chain<Dense<H1, H2, Relu>, Dense<H2, 1, Tanh>>>;

fn load<P: Params>(blob: &[u8]) -> Box<P> {
    let mut policy = Box::new(P::ZERO);
    serialize::load(&mut *policy, blob).unwrap();
    policy
}

/// The deployed categorical policy picks SB3's action on every observation.
fn categorical(name: &str, layout: Layout) {
    let imported = import(name, layout, EnvName::Cartpole);
    let policy = load::<CartPolePolicy>(&imported.blob);
    let parity = read(&format!("{name}.parity.safetensors"));
    let parity = SafeTensors::deserialize(&parity).unwrap();
    let (shape, obs) = f32s(&parity, "obs");
    assert_eq!(shape[1], 4);
    let expected = i32s(&parity, "action");
    let (_, logits) = f32s(&parity, "logits");
    let mut mismatches = Vec::new();
    let mut counts = [0usize; 2];
    let mut max_logit_delta = 0.0f32;
    for (k, (o, &want)) in obs.chunks_exact(4).zip(&expected).enumerate() {
        let o = SVector::<f32, 4>::from_column_slice(o);
        let action = policy.act(&o).unwrap();
        counts[action] += 1;
        if action as i32 != want {
            mismatches.push((k, action, want, &logits[2 * k..2 * k + 2]));
        }
        let input = policy.obs_norm.normalize(&o).unwrap();
        let ours = policy.actor.net.forward(&input);
        let theirs = &logits[2 * k..2 * k + 2];
        // SB3 stores log-softmax logits: compare the margins.
        let delta = ((ours[1] - ours[0]) - (theirs[1] - theirs[0])).abs();
        max_logit_delta = max_logit_delta.max(delta);
    }
    println!(
        "{name}: {} observations, {} equal actions (actions 0/1: {}/{}), \
         max |Δ logit margin| {max_logit_delta:.3e}",
        expected.len(),
        expected.len() - mismatches.len(),
        counts[0],
        counts[1]
    );
    assert!(mismatches.is_empty(), "{name}: {mismatches:?}");
    assert!(
        counts[0] > expected.len() / 10 && counts[1] > expected.len() / 10,
        "{name}: a trivial policy {counts:?}"
    );
}

/// The deployed Gaussian policy's mean and command equal SB3's within [`MEAN_TOL`].
fn gaussian(name: &str, layout: Layout) {
    let imported = import(name, layout, EnvName::Pendulum);
    let policy = load::<PendulumPolicy>(&imported.blob);
    assert_eq!((policy.space.low, policy.space.high), ([-2.0], [2.0]));
    let parity = read(&format!("{name}.parity.safetensors"));
    let parity = SafeTensors::deserialize(&parity).unwrap();
    let (shape, obs) = f32s(&parity, "obs");
    assert_eq!(shape[1], 3);
    let (_, means) = f32s(&parity, "mean");
    let (_, actions) = f32s(&parity, "action");
    let (mut max_mean, mut max_action, mut clipped) = (0.0f32, 0.0f32, 0);
    for ((o, &mean), &action) in obs.chunks_exact(3).zip(&means).zip(&actions) {
        let o = SVector::<f32, 3>::from_column_slice(o);
        let ours = policy
            .actor
            .mean(&policy.obs_norm.normalize(&o).unwrap())
            .unwrap()[0];
        let command = policy.act(&o).unwrap()[0];
        max_mean = max_mean.max((ours - mean).abs());
        max_action = max_action.max((command - action).abs());
        clipped += usize::from(mean.abs() > 2.0);
    }
    println!(
        "{name}: {} observations ({clipped} means beyond the ±2 bounds), \
         max |Δ mean| {max_mean:.3e}, max |Δ clipped action| {max_action:.3e}",
        means.len()
    );
    assert!(max_mean <= MEAN_TOL, "{name}: max |Δ mean| {max_mean}");
    assert!(
        max_action <= MEAN_TOL,
        "{name}: max |Δ action| {max_action}"
    );
}

/// The tensors an actor of `algo` in `layout` is read from: SB3's module
/// tree, CleanRL's `fc*` layers and buffers.
fn offpolicy_tensors(layout: Layout, algo: OffPolicyAlgo) -> Vec<String> {
    let layers: [&str; 3] = match (layout, algo) {
        (Layout::Sb3, OffPolicyAlgo::Sac) => ["actor.latent_pi.0", "actor.latent_pi.2", "actor.mu"],
        (Layout::Sb3, OffPolicyAlgo::Td3) => ["actor.mu.0", "actor.mu.2", "actor.mu.4"],
        (Layout::Cleanrl, OffPolicyAlgo::Sac) => ["fc1", "fc2", "fc_mean"],
        (Layout::Cleanrl, OffPolicyAlgo::Td3) => ["fc1", "fc2", "fc_mu"],
    };
    let mut names: Vec<String> = layers
        .iter()
        .flat_map(|l| [format!("{l}.weight"), format!("{l}.bias")])
        .collect();
    if layout == Layout::Cleanrl {
        names.extend(["action_scale".to_owned(), "action_bias".to_owned()]);
    }
    names
}

/// How far a deployed SAC/TD3 policy is from the library's on a set of
/// observations ([`squashed_deltas`]).
struct Deltas {
    /// Largest |Δ| of the network's output, `tanh(μ(s))` in `[−1, 1]`.
    squashed: f32,
    /// Largest |Δ| of the command scaled to the bounds.
    action: f32,
    /// The same, each |Δ| divided by [`input_scale`] of its observation.
    scaled_squashed: f32,
    scaled_action: f32,
    /// How many of the library's outputs are saturated beyond |0.999|.
    saturated: usize,
}

/// `max(1, ‖obs‖∞ / 100)`: how much an observation far out of distribution
/// (up to 10⁴ in the fixtures) magnifies float32 rounding. The first layer's
/// pre-activations grow with the observation, and where the output is
/// moderate they cancel: at `[1000, 1000, −1000]` PyTorch's own float32
/// `tanh(μ)` of the CleanRL SAC fixture is 1.8e-5 from its float64 value.
fn input_scale(obs: &[f32]) -> f32 {
    obs.iter().fold(1.0f32, |m, x| m.max(x.abs() / 100.0))
}

/// [`Deltas`] of the deployed SAC/TD3 policy `policy` from the library's
/// `squashed` outputs and `actions` on `obs`.
fn squashed_deltas<N>(
    policy: &TanhPolicy<N, 1>,
    obs: &[f32],
    squashed: &[f32],
    actions: &[f32],
) -> Deltas
where
    N: Layer<Input = SVector<f32, 3>, Output = SVector<f32, 1>>,
{
    let mut d = Deltas {
        squashed: 0.0,
        action: 0.0,
        scaled_squashed: 0.0,
        scaled_action: 0.0,
        saturated: 0,
    };
    for ((o, &want), &action) in obs.chunks_exact(3).zip(squashed).zip(actions) {
        let scale = input_scale(o);
        let o = SVector::<f32, 3>::from_column_slice(o);
        let ours = (policy.net.forward(&o)[0] - want).abs();
        let command = (policy.act(&o).unwrap()[0] - action).abs();
        d.squashed = d.squashed.max(ours);
        d.action = d.action.max(command);
        d.scaled_squashed = d.scaled_squashed.max(ours / scale);
        d.scaled_action = d.scaled_action.max(command / scale);
        d.saturated += usize::from(want.abs() > 0.999);
    }
    d
}

/// The deployed SAC/TD3 policy (`tanh(μ(s))` of the actor, scaled to the
/// bounds) of fixture `name`, an `algo` actor in `layout` with hidden
/// layers `H1`-`H2`, equals the library's deterministic action (SB3's
/// `predict(obs, deterministic=True)`, CleanRL's
/// `tanh(mean) · action_scale + action_bias`) within [`SQUASHED_TOL`], and
/// its network output the
/// actor's output in `[−1, 1]` within [`MEAN_TOL`] — each bound times
/// [`input_scale`] of the observation (1 for every observation within
/// ±100).
fn squashed<const H1: usize, const H2: usize>(name: &str, layout: Layout, algo: OffPolicyAlgo)
where
    SquashedNet<H1, H2>: Layer<Input = SVector<f32, 3>, Output = SVector<f32, 1>> + Params,
{
    let imported = import(name, layout, EnvName::Pendulum);
    assert_eq!(imported.tensors, offpolicy_tensors(layout, algo), "{name}");
    assert_eq!(imported.algo, Some(algo), "{name}");
    assert_eq!(imported.arch.hidden_sizes(), format!("{H1}-{H2}"), "{name}");
    let policy = load::<TanhPolicy<SquashedNet<H1, H2>, 1>>(&imported.blob);
    assert_eq!((policy.space.low, policy.space.high), ([-2.0], [2.0]));
    let parity = read(&format!("{name}.parity.safetensors"));
    let parity = SafeTensors::deserialize(&parity).unwrap();
    let (shape, obs) = f32s(&parity, "obs");
    assert_eq!(shape[1], 3);
    let (_, squashed) = f32s(&parity, "mean");
    let (_, actions) = f32s(&parity, "action");
    let d = squashed_deltas(&policy, &obs, &squashed, &actions);
    println!(
        "{name} ({}): {} observations ({} saturated beyond |0.999|), max |Δ tanh(μ)| {:.3e}, \
         max |Δ action| {:.3e}; divided by the input scale {:.3e}, {:.3e}",
        imported.arch.name(),
        actions.len(),
        d.saturated,
        d.squashed,
        d.action,
        d.scaled_squashed,
        d.scaled_action
    );
    assert!(
        d.scaled_squashed <= MEAN_TOL,
        "{name}: max |Δ tanh(μ)| / input scale {}",
        d.scaled_squashed
    );
    assert!(
        d.scaled_action <= SQUASHED_TOL,
        "{name}: max |Δ action| / input scale {}",
        d.scaled_action
    );
    assert!(
        d.saturated <= actions.len() * 9 / 10,
        "{name}: a policy saturated almost everywhere"
    );
    assert!(
        actions.iter().any(|a| a.abs() > 0.2),
        "{name}: a policy that hardly acts"
    );
}

/// SB3's SAC and TD3 actors, imported, act as SB3's `predict` ([`squashed`]):
/// at 64-64 and at SB3's default sizes, SAC 256-256 and TD3 400-300.
#[test]
fn sb3_sac_and_td3_actors_act_as_sb3() {
    squashed::<64, 64>("sb3-sac-pendulum", Layout::Sb3, OffPolicyAlgo::Sac);
    squashed::<64, 64>("sb3-td3-pendulum", Layout::Sb3, OffPolicyAlgo::Td3);
    squashed::<256, 256>("sb3-sac-pendulum-256", Layout::Sb3, OffPolicyAlgo::Sac);
    squashed::<400, 300>("sb3-td3-pendulum-400-300", Layout::Sb3, OffPolicyAlgo::Td3);
}

/// CleanRL's SAC and TD3 actors (`sac_continuous_action.py`,
/// `td3_continuous_action.py`: `fc1`, `fc2`, `fc_mean`/`fc_mu`, 256-256
/// ReLU, the `action_scale`/`action_bias` buffers), imported, act as
/// CleanRL's deterministic action ([`squashed`]).
#[test]
fn cleanrl_sac_and_td3_actors_act_as_cleanrl() {
    squashed::<256, 256>("cleanrl-sac-pendulum", Layout::Cleanrl, OffPolicyAlgo::Sac);
    squashed::<256, 256>("cleanrl-td3-pendulum", Layout::Cleanrl, OffPolicyAlgo::Td3);
}

/// A SAC actor with tanh hidden layers saved without metadata (SB3 takes
/// the activation from `policy_kwargs`; the `state_dict` does not record
/// it): the import is refused unless told the activation, since read as
/// ReLU — what `--activation relu` forces, and what the import once
/// assumed — it acts far from SB3's own actions on Pendulum's ±2.
#[test]
fn a_tanh_sac_actor_read_as_relu_acts_far_from_sb3() {
    let name = "sb3-sac-pendulum-tanh";
    let file = read(&format!("{name}.safetensors"));
    match interop::import(Layout::Sb3, &file, None, EnvName::Pendulum) {
        Ok(i) => panic!("{name} imported: {:?} ({:?})", i.arch, i.activation_source),
        Err(e) => assert!(e.to_string().contains("pass --activation relu"), "{e}"),
    }
    let forced = interop::import_with(
        Layout::Sb3,
        &file,
        None,
        EnvName::Pendulum,
        Some(microrl_harness::arch::Activation::Relu),
    )
    .unwrap();
    let policy = load::<TanhPolicy<SquashedNet<64, 64>, 1>>(&forced.blob);
    let parity = read(&format!("{name}.parity.safetensors"));
    let parity = SafeTensors::deserialize(&parity).unwrap();
    let (_, obs) = f32s(&parity, "obs");
    let (_, squashed) = f32s(&parity, "mean");
    let (_, actions) = f32s(&parity, "action");
    let max_action = squashed_deltas(&policy, &obs, &squashed, &actions).action;
    println!("{name} read as ReLU: max |Δ action| {max_action:.3} on ±2");
    assert!(max_action > 1.0, "{name}: max |Δ action| {max_action}");
}

/// Every fixture as its source: a discrete policy takes the same action on
/// every observation ([`categorical`]), a Gaussian one has the same mean and
/// command ([`gaussian`]).
#[test]
fn imported_policies_act_as_their_source_on_every_observation() {
    let categorical: fn(&str, Layout) = categorical;
    for (name, layout, check) in [
        ("sb3-cartpole", Layout::Sb3, categorical),
        ("sb3-cartpole-vecnorm", Layout::Sb3, categorical),
        ("cleanrl-cartpole", Layout::Cleanrl, categorical),
        ("sb3-pendulum", Layout::Sb3, gaussian),
        ("sb3-pendulum-vecnorm", Layout::Sb3, gaussian),
        ("cleanrl-pendulum", Layout::Cleanrl, gaussian),
    ] {
        check(name, layout);
    }
}

/// Exporting an imported policy reproduces the source's actor tensors bit
/// for bit (names, shapes, dtype, bytes), for every fixture: a SAC/TD3
/// actor under its own algorithm's names (`--algo`), CleanRL's with its
/// `action_scale`/`action_bias` buffers.
#[test]
fn export_of_the_import_is_the_source_bit_for_bit() {
    let (sac, td3) = (Some(OffPolicyAlgo::Sac), Some(OffPolicyAlgo::Td3));
    for (name, layout, env, algo) in [
        ("sb3-cartpole", Layout::Sb3, EnvName::Cartpole, None),
        ("sb3-cartpole-vecnorm", Layout::Sb3, EnvName::Cartpole, None),
        ("sb3-pendulum", Layout::Sb3, EnvName::Pendulum, None),
        ("sb3-pendulum-vecnorm", Layout::Sb3, EnvName::Pendulum, None),
        ("cleanrl-cartpole", Layout::Cleanrl, EnvName::Cartpole, None),
        ("cleanrl-pendulum", Layout::Cleanrl, EnvName::Pendulum, None),
        ("sb3-sac-pendulum", Layout::Sb3, EnvName::Pendulum, sac),
        ("sb3-td3-pendulum", Layout::Sb3, EnvName::Pendulum, td3),
        ("sb3-sac-pendulum-256", Layout::Sb3, EnvName::Pendulum, sac),
        (
            "sb3-td3-pendulum-400-300",
            Layout::Sb3,
            EnvName::Pendulum,
            td3,
        ),
        (
            "cleanrl-sac-pendulum",
            Layout::Cleanrl,
            EnvName::Pendulum,
            sac,
        ),
        (
            "cleanrl-td3-pendulum",
            Layout::Cleanrl,
            EnvName::Pendulum,
            td3,
        ),
    ] {
        let imported = import(name, layout, env);
        let exported = interop::export_with(layout, algo, &imported.blob).unwrap();
        let source = read(&format!("{name}.safetensors"));
        let source = SafeTensors::deserialize(&source).unwrap();
        let ours = SafeTensors::deserialize(&exported.safetensors).unwrap();
        assert_eq!(ours.len(), imported.tensors.len());
        for tensor in &imported.tensors {
            let (a, b) = (source.tensor(tensor).unwrap(), ours.tensor(tensor).unwrap());
            assert_eq!(a.shape(), b.shape(), "{name}: {tensor}");
            assert_eq!(a.dtype(), b.dtype(), "{name}: {tensor}");
            assert!(a.data() == b.data(), "{name}: {tensor} differs");
        }
        assert_eq!(exported.stats.is_some(), imported.normalised, "{name}");
        // The statistics re-import to the same policy file.
        let again =
            interop::import(layout, &exported.safetensors, exported.stats.as_ref(), env).unwrap();
        assert_eq!(again.blob, imported.blob, "{name}");
    }
}

/// The committed microrl export that `check_sb3_export.py` loaded into SB3
/// (and found acting as SB3 on every fixture observation) is exactly what
/// `microrl export --format safetensors` writes today.
#[test]
fn committed_export_is_what_microrl_writes() {
    for (name, env) in [
        ("sb3-cartpole", EnvName::Cartpole),
        ("sb3-pendulum-vecnorm", EnvName::Pendulum),
    ] {
        let imported = import(name, Layout::Sb3, env);
        let exported = interop::export(Layout::Sb3, &imported.blob).unwrap();
        let committed = read(&format!("{name}.microrl.safetensors"));
        assert!(
            committed == exported.safetensors,
            "{name}: the export changed; rerun tests/fixtures/check_sb3_export.py"
        );
        if let Some(stats) = exported.stats {
            let text = std::fs::read_to_string(fixture(&format!("{name}.microrl.json"))).unwrap();
            assert_eq!(VecNormalizeStats::parse(&text).unwrap(), stats, "{name}");
        }
    }
}

/// microrl's SAC and TD3 policies, exported under SB3's and CleanRL's names
/// (`export --algo sac|td3`), act in those libraries as in microrl:
/// `tests/fixtures/check_offpolicy_export.py` loaded each export into the
/// library's actor (SB3's `model.policy`, CleanRL's `Actor`; only the
/// critics, TD3's target actor and SAC's `log_std` head missing) and
/// recorded its deterministic actions on 10 000 observations (1 000 far out
/// of distribution). Here `microrl export` still writes the file it loaded
/// (length and CRC-32), and microrl's deployed policy takes the recorded
/// actions within [`SQUASHED_TOL`]. The sources: SAC and TD3 trained by
/// microrl (64-64, committed), and PyTorch's default initialisation at SB3's
/// default sizes (`init_blob(arch, 1)`, as `microrl init --seed 1`).
#[test]
fn exported_sac_and_td3_actors_act_in_sb3_and_cleanrl_as_in_microrl() {
    use microrl_harness::{Arch, arch, policy_file};
    let (sac, td3) = (OffPolicyAlgo::Sac, OffPolicyAlgo::Td3);
    for (case, source, layout, algo) in [
        (
            "microrl-sac-pendulum.sb3-sac",
            "microrl-sac-pendulum",
            Layout::Sb3,
            sac,
        ),
        (
            "microrl-td3-pendulum.sb3-td3",
            "microrl-td3-pendulum",
            Layout::Sb3,
            td3,
        ),
        (
            "pendulum-squashed-256.sb3-sac",
            "pendulum-squashed-256",
            Layout::Sb3,
            sac,
        ),
        (
            "pendulum-squashed-256.cleanrl-sac",
            "pendulum-squashed-256",
            Layout::Cleanrl,
            sac,
        ),
        (
            "pendulum-squashed-256.cleanrl-td3",
            "pendulum-squashed-256",
            Layout::Cleanrl,
            td3,
        ),
        (
            "pendulum-squashed-400-300.sb3-td3",
            "pendulum-squashed-400-300",
            Layout::Sb3,
            td3,
        ),
    ] {
        let blob = match Arch::ALL.into_iter().find(|a| a.name() == source) {
            Some(arch) => arch::init_blob(arch, 1).unwrap(),
            None => {
                policy_file::from_bytes(read(&format!("{source}.mrlp")))
                    .unwrap()
                    .blob
            }
        };
        let arch = Arch::detect(&blob).unwrap();
        let exported = interop::export_with(layout, Some(algo), &blob).unwrap();
        let recorded = read(&format!("export-offpolicy/{case}.safetensors"));
        let (_, header) = SafeTensors::read_metadata(&recorded).unwrap();
        let metadata = header.metadata().clone().unwrap();
        assert_eq!(
            (
                metadata["export_bytes"].as_str(),
                metadata["export_crc32"].as_str()
            ),
            (
                exported.safetensors.len().to_string().as_str(),
                format!("{:08x}", serialize::crc32(&exported.safetensors)).as_str()
            ),
            "{case}: the export changed; rerun tests/fixtures/check_offpolicy_export.py"
        );
        let recorded = SafeTensors::deserialize(&recorded).unwrap();
        let (_, actions) = f32s(&recorded, "action");
        let observations = read(&metadata["obs"]);
        let (_, obs) = f32s(&SafeTensors::deserialize(&observations).unwrap(), "obs");
        assert_eq!(obs.len(), 3 * actions.len());
        let act = arch::actor(arch, &blob).unwrap();
        let mut max_action = 0.0f32;
        for (o, &want) in obs.chunks_exact(3).zip(&actions) {
            let ours = act(o).unwrap().continuous.unwrap()[0];
            max_action = max_action.max((ours - want).abs());
        }
        println!(
            "{case} ({}): {} observations, max |Δ action| {max_action:.3e} (|action| mean {:.3})",
            arch.name(),
            actions.len(),
            actions.iter().map(|a| a.abs()).sum::<f32>() / actions.len() as f32
        );
        assert!(
            max_action <= SQUASHED_TOL,
            "{case}: max |Δ action| {max_action}"
        );
    }
}
