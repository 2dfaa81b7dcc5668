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
//! Then the reverse: exporting each imported policy gives back the source
//! tensors bit for bit, and the committed `sb3-cartpole.microrl.safetensors`
//! (the file `tests/fixtures/check_sb3_export.py` loaded into an SB3 policy
//! and checked action for action against SB3) is what `microrl export`
//! writes today.

use std::path::{Path, PathBuf};

use microrl::nn::Layer;
use microrl::{Controller, Params, SVector, serialize};
use microrl_harness::interop::{self, Layout, VecNormalizeStats};
use microrl_harness::train::EnvName;
use safetensors::{Dtype, SafeTensors};

/// Largest accepted |Δ| between microrl's and PyTorch's Gaussian means.
const MEAN_TOL: f32 = 1e-5;

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
type PendulumSquashedPolicy =
    microrl::Deployed<microrl::agent::Sac<microrl::env::Pendulum, 64, 1, 1, 4>>;

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

/// The deployed SAC/TD3 policy (`tanh(μ(s))` of the actor, scaled to the
/// bounds) equals SB3's `predict(obs, deterministic=True)` within
/// [`MEAN_TOL`], and its network output SB3's actor output in `[−1, 1]`.
fn squashed(name: &str, expected_tensors: &[&str]) {
    let imported = import(name, Layout::Sb3, EnvName::Pendulum);
    assert_eq!(imported.tensors, expected_tensors, "{name}");
    let policy = load::<PendulumSquashedPolicy>(&imported.blob);
    assert_eq!((policy.space.low, policy.space.high), ([-2.0], [2.0]));
    let parity = read(&format!("{name}.parity.safetensors"));
    let parity = SafeTensors::deserialize(&parity).unwrap();
    let (shape, obs) = f32s(&parity, "obs");
    assert_eq!(shape[1], 3);
    let (_, squashed) = f32s(&parity, "mean");
    let (_, actions) = f32s(&parity, "action");
    let (mut max_squashed, mut max_action, mut saturated) = (0.0f32, 0.0f32, 0);
    for ((o, &want), &action) in obs.chunks_exact(3).zip(&squashed).zip(&actions) {
        let o = SVector::<f32, 3>::from_column_slice(o);
        let ours = policy.net.forward(&o)[0];
        let command = policy.act(&o).unwrap()[0];
        max_squashed = max_squashed.max((ours - want).abs());
        max_action = max_action.max((command - action).abs());
        saturated += usize::from(want.abs() > 0.999);
    }
    println!(
        "{name}: {} observations ({saturated} saturated beyond |0.999|), \
         max |Δ tanh(μ)| {max_squashed:.3e}, max |Δ action| {max_action:.3e}",
        actions.len()
    );
    assert!(
        max_squashed <= MEAN_TOL,
        "{name}: max |Δ tanh(μ)| {max_squashed}"
    );
    assert!(
        max_action <= 2.0 * MEAN_TOL,
        "{name}: max |Δ action| {max_action}"
    );
    assert!(
        saturated < actions.len(),
        "{name}: a policy saturated everywhere"
    );
}

/// SB3's SAC and TD3 actors, imported, act as SB3's `predict` ([`squashed`]).
#[test]
fn sb3_sac_and_td3_actors_act_as_sb3() {
    squashed(
        "sb3-sac-pendulum",
        &[
            "actor.latent_pi.0.weight",
            "actor.latent_pi.0.bias",
            "actor.latent_pi.2.weight",
            "actor.latent_pi.2.bias",
            "actor.mu.weight",
            "actor.mu.bias",
        ],
    );
    let td3: Vec<String> = (0..3)
        .flat_map(|k| ["weight", "bias"].map(|t| format!("actor.mu.{}.{t}", 2 * k)))
        .collect();
    squashed(
        "sb3-td3-pendulum",
        &td3.iter().map(String::as_str).collect::<Vec<_>>(),
    );
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
/// for bit (names, shapes, dtype, bytes), for every fixture.
#[test]
fn export_of_the_import_is_the_source_bit_for_bit() {
    for (name, layout, env) in [
        ("sb3-cartpole", Layout::Sb3, EnvName::Cartpole),
        ("sb3-cartpole-vecnorm", Layout::Sb3, EnvName::Cartpole),
        ("sb3-pendulum", Layout::Sb3, EnvName::Pendulum),
        ("sb3-pendulum-vecnorm", Layout::Sb3, EnvName::Pendulum),
        ("cleanrl-cartpole", Layout::Cleanrl, EnvName::Cartpole),
        ("cleanrl-pendulum", Layout::Cleanrl, EnvName::Pendulum),
    ] {
        let imported = import(name, layout, env);
        let exported = interop::export(layout, &imported.blob).unwrap();
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
