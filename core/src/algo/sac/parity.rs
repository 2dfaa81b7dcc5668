//! SAC update parity with an independent PyTorch reference (and the shared
//! fixture helpers TD3's parity test uses).
//!
//! `core/tests/fixtures/offpolicy_reference.json` is written by
//! `core/tests/fixtures/gen_offpolicy_reference.py`: an SB3/CleanRL-style
//! PyTorch implementation (`nn.Linear` MLPs, `torch.distributions.Normal`,
//! autograd, `optim.Adam`, float64) of the update the [module docs](super)
//! state. It is committed, so this test needs neither Python nor the
//! network. To regenerate it (from the workspace root):
//!
//! ```text
//! python3 -m venv /tmp/venv-torch
//! /tmp/venv-torch/bin/pip install torch numpy
//! /tmp/venv-torch/bin/python core/tests/fixtures/gen_offpolicy_reference.py > core/tests/fixtures/offpolicy_reference.json
//! cargo test -p microrl --lib parity -- --nocapture
//! ```
//!
//! Each SAC case fixes the actor's, critics' and target critics' weights,
//! `log α`, six replay transitions (two terminated) and, per update, the
//! minibatch's replay indices and the recorded noises `ε′` and `ε`, which
//! [`Sac::update_with`] takes as [`Draws`]. Two updates per case, one with a
//! learned `α` (target interval 1) and one with a fixed `α` (interval 2, so
//! the second update leaves the targets alone). Checked:
//! - every weight after each update (actor, critics, target critics,
//!   `log α`) within [`WEIGHT_TOL`] relative (floor 0.1),
//! - the losses and `mean log π` within [`STATS_TOL`],
//! - the gradient each network's first Adam step received — read back from
//!   Adam's first moment, `g = m/(1 − β₁)` — against the reference's
//!   *central finite differences* of its float64 loss (critic, actor, α)
//!   within [`GRADIENT_TOL`] (floor 1 % of the largest component).

use std::format;
use std::println;
use std::string::String;
use std::vec::Vec;

use serde_json::Value;

use super::*;
use crate::algo::offpolicy::Draws;
use crate::algo::replay::Transition;
use crate::nn::Mlp;

/// Weights after an update (f32 against float64, Adam's normalised steps).
pub(crate) const WEIGHT_TOL: f64 = 1e-5;
/// Losses and other statistics.
pub(crate) const STATS_TOL: f64 = 1e-4;
/// The applied gradient against the reference's finite differences.
pub(crate) const GRADIENT_TOL: f64 = 1e-4;

pub(crate) fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/offpolicy_reference.json"
    );
    let text = std::fs::read_to_string(path).expect("read the committed fixture");
    serde_json::from_str(&text).expect("parse the fixture")
}

pub(crate) fn f64_of(v: &Value) -> f64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a number string: {v}"))
}

pub(crate) fn f32_of(v: &Value) -> f32 {
    f64_of(v) as f32
}

pub(crate) fn floats(v: &Value) -> Vec<f64> {
    v.as_array().expect("array").iter().map(f64_of).collect()
}

pub(crate) fn vector<const D: usize>(v: &Value) -> SVector<f32, D> {
    let xs = floats(v);
    assert_eq!(xs.len(), D);
    SVector::from_fn(|i, _| xs[i] as f32)
}

/// Writes the flat values `v` into `p` (serialisation order).
pub(crate) fn set<P: Params>(p: &mut P, v: &Value) {
    let xs = floats(v);
    assert_eq!(xs.len(), P::LEN, "tensor length");
    for (k, x) in xs.iter().enumerate() {
        *p.get_flat_mut(k).expect("in range") = *x as f32;
    }
}

/// Largest `|a − b| / max(|b|, floor)` over the flat values.
pub(crate) fn worst(got: &[f64], expected: &[f64], floor: f64) -> f64 {
    assert_eq!(got.len(), expected.len());
    got.iter()
        .zip(expected)
        .map(|(a, b)| (a - b).abs() / b.abs().max(floor))
        .fold(0.0, f64::max)
}

/// Checks `p` against `expected` within `tol` (floor 0.1); returns the
/// largest relative error.
pub(crate) fn check_weights<P: Params>(what: &str, p: &P, expected: &Value, tol: f64) -> f64 {
    let got: Vec<f64> = (0..P::LEN)
        .map(|k| f64::from(p.get_flat(k).unwrap()))
        .collect();
    let err = worst(&got, &floats(expected), 0.1);
    assert!(err < tol, "{what}: relative error {err:e}");
    err
}

/// The gradient of a network's first Adam step, `m/(1 − β₁)`, against the
/// reference's finite differences (floor 1 % of the largest component).
pub(crate) fn check_first_gradient<P: Params>(
    what: &str,
    m: &P,
    beta1: f32,
    expected: &Value,
) -> f64 {
    let got: Vec<f64> = (0..P::LEN)
        .map(|k| f64::from(m.get_flat(k).unwrap() / (1.0 - beta1)))
        .collect();
    let expected = floats(expected);
    let floor = 1e-2 * expected.iter().fold(0.0f64, |a, b| a.max(b.abs()));
    let err = worst(&got, &expected, floor);
    assert!(
        err < GRADIENT_TOL,
        "{what} gradient: relative error {err:e}"
    );
    err
}

pub(crate) fn check_stat(what: &str, got: f32, expected: &Value) -> f64 {
    let b = f64_of(expected);
    let err = (f64::from(got) - b).abs() / b.abs().max(1e-2);
    assert!(err < STATS_TOL, "{what}: {got} vs {b}");
    err
}

pub(crate) fn transitions<const OBS: usize, const ACT: usize>(
    case: &Value,
) -> Vec<Transition<OBS, ACT>> {
    case["replay"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| Transition {
            obs: vector(&t["obs"]),
            action: vector(&t["action"]),
            reward: f32_of(&t["reward"]),
            next_obs: vector(&t["next_obs"]),
            terminated: t["terminated"].as_bool().unwrap(),
        })
        .collect()
}

pub(crate) fn draws<const ACT: usize, const BATCH: usize>(update: &Value) -> Draws<ACT, BATCH> {
    let mut draws = Draws::<ACT, BATCH>::ZERO;
    let indices = update["indices"].as_array().unwrap();
    draws.len = indices.len();
    for (k, i) in indices.iter().enumerate() {
        draws.indices[k] = u32::try_from(i.as_u64().unwrap()).unwrap();
        draws.next_noise[k] = vector(&update["next_noise"][k]);
        if let Some(eps) = update.get("pi_noise") {
            draws.pi_noise[k] = vector(&eps[k]);
        }
    }
    draws
}

type Agent = Sac<Chain<Dense<3, 8, Relu>, Dense<8, 8, Relu>>, Mlp<5, 8, 1, Relu>, 3, 2, 5, 8, 8, 8>;

#[test]
fn sac_updates_match_pytorch() {
    let fixture = fixture();
    let (mut worst_weight, mut worst_grad, mut worst_stat) = (0.0f64, 0.0f64, 0.0f64);
    for case in fixture["sac"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        assert_eq!(
            (
                case["obs_dim"].as_u64(),
                case["act_dim"].as_u64(),
                case["hidden"].as_u64()
            ),
            (Some(3), Some(2), Some(8))
        );
        let c = &case["config"];
        let ent_coef = match (c["ent_coef"].get("auto"), c["ent_coef"].get("fixed")) {
            (Some(a), _) => EntCoef::Auto(f32_of(a)),
            (_, Some(a)) => EntCoef::Fixed(f32_of(a)),
            _ => panic!("ent_coef"),
        };
        let config = SacConfig {
            buffer_size: 8,
            batch_size: 8,
            tau: f32_of(&c["tau"]),
            gamma: f32_of(&c["gamma"]),
            learning_rate: f32_of(&c["learning_rate"]),
            ent_coef,
            target_entropy: Some(f32_of(&c["target_entropy"])),
            target_update_interval: u32::try_from(c["target_update_interval"].as_u64().unwrap())
                .unwrap(),
            adam: crate::optim::AdamConfig {
                eps: f32_of(&c["adam_eps"]),
                ..ADAM_TORCH
            },
            ..SacConfig::DEFAULT
        };
        let mut agent = std::boxed::Box::new(Agent::new(config));
        agent.config.validate(8, 8).unwrap();
        let init = &case["init"];
        set(&mut agent.actor.params, &init["actor"]);
        set(&mut agent.critic.params, &init["critic"]);
        set(&mut agent.critic_target, &init["critic_target"]);
        agent.log_alpha.params[0] = f32_of(&init["log_alpha"]);
        for t in transitions::<3, 2>(case) {
            agent.replay.push(&t).unwrap();
        }
        for (u, update) in case["updates"].as_array().unwrap().iter().enumerate() {
            let stats = agent.update_with(&draws::<2, 8>(update)).unwrap();
            let what = |x: &str| format!("{name} update {u}: {x}");
            let e = &update["stats"];
            for (field, got) in [
                ("critic_loss", stats.critic_loss),
                ("actor_loss", stats.actor_loss),
                ("ent_coef", stats.ent_coef),
                ("ent_coef_loss", stats.ent_coef_loss),
                ("log_prob", stats.log_prob),
            ] {
                worst_stat = worst_stat.max(check_stat(&what(field), got, &e[field]));
            }
            let g = &update["grads"];
            let beta1 = ADAM_TORCH.beta1;
            if let Some(expected) = g.get("critic") {
                let err = check_first_gradient(
                    &what("critic"),
                    &agent.critic.optimizer.m,
                    beta1,
                    expected,
                );
                worst_grad = worst_grad.max(err);
            }
            if let Some(expected) = g.get("actor") {
                let err =
                    check_first_gradient(&what("actor"), &agent.actor.optimizer.m, beta1, expected);
                worst_grad = worst_grad.max(err);
            }
            if let Some(expected) = g.get("log_alpha") {
                let err = check_first_gradient(
                    &what("log_alpha"),
                    &agent.log_alpha.optimizer.m,
                    beta1,
                    expected,
                );
                worst_grad = worst_grad.max(err);
            }
            let after = &update["after"];
            let mut err = check_weights(
                &what("actor"),
                &agent.actor.params,
                &after["actor"],
                WEIGHT_TOL,
            );
            err = err.max(check_weights(
                &what("critic"),
                &agent.critic.params,
                &after["critic"],
                WEIGHT_TOL,
            ));
            err = err.max(check_weights(
                &what("critic_target"),
                &agent.critic_target,
                &after["critic_target"],
                WEIGHT_TOL,
            ));
            let la = f64_of(&after["log_alpha"]);
            let la_err = (f64::from(agent.log_alpha.params[0]) - la).abs() / la.abs().max(0.1);
            assert!(la_err < WEIGHT_TOL, "{}: {la_err:e}", what("log_alpha"));
            worst_weight = worst_weight.max(err).max(la_err);
        }
    }
    let versions: String = format!(
        "torch {}, numpy {}",
        fixture["torch"].as_str().unwrap_or("?"),
        fixture["numpy"].as_str().unwrap_or("?")
    );
    println!(
        "SAC parity ({versions}): weights {worst_weight:.2e}, gradients vs finite differences {worst_grad:.2e}, stats {worst_stat:.2e} (max relative errors)"
    );
}
