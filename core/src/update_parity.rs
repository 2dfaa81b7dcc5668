//! Whole-update parity with an independent PyTorch reference.
//!
//! `core/tests/fixtures/update_reference.json` is written by
//! `core/tests/fixtures/gen_update_reference.py`: a CleanRL-style PyTorch
//! implementation (autograd, `torch.distributions`, `clip_grad_norm_`,
//! `optim.Adam`, float64) of the update microrl documents. It is committed, so
//! this test needs neither Python nor the network. To regenerate it (from the
//! workspace root):
//!
//! ```text
//! python3 -m venv /tmp/venv-torch
//! /tmp/venv-torch/bin/pip install torch numpy
//! /tmp/venv-torch/bin/python core/tests/fixtures/gen_update_reference.py > core/tests/fixtures/update_reference.json
//! cargo test -p microrl --lib update_parity -- --nocapture
//! ```
//!
//! **Update cases.** For given weights, a fixed rollout and a configuration,
//! microrl's [`Ppo::update`] must reproduce the reference's
//! - GAE advantages and returns (within [`ROLLOUT_TOL`]),
//! - shuffle order (exactly: the fixture states the permutation of every
//!   epoch, which the script computes with its own xoshiro128++/Lemire/
//!   Fisher–Yates),
//! - weights after every epoch's Adam steps (within [`WEIGHT_TOL`]),
//! - diagnostics (`UpdateStats`, within [`STATS_TOL`]; `epochs` exactly),
//! - the gradient the optimiser received in the last minibatch: the
//!   reference's *central finite differences* of that minibatch's float64
//!   total loss (surrogate + value + entropy terms), times the grad-norm clip
//!   coefficient (within [`GRADIENT_TOL`]).
//!
//! Cases: categorical and Gaussian actors, an entropy bonus on each, value
//! clipping, raw (unnormalised) advantages without a grad-norm clip, a target
//! KL that stops the update after epoch 2 of 6, Adam with a large `ε` (0.1,
//! where `+ε` and `−ε` differ), A2C's and REINFORCE's settings (built from
//! [`A2cConfig`] and [`ReinforceConfig`], so their conversions are checked
//! too; REINFORCE on a partial rollout of one 37-step episode),
//! PPO-penalty (no clipping, adaptive `β`: doubled on the categorical case,
//! halved on the Gaussian one, kept when the KL is inside the band; the
//! `β` after the update must be the reference's) and a fixed penalty on top
//! of clipping; multi-reward, multi-critic PPO (two reward channels fused
//! by [`fuse`], two critics [`Critics`] whose fused value must match the
//! reference's, each trained toward the fused return; with and without
//! value clipping).
//!
//! **TRPO cases.** [`Trpo::update`] against a reference whose Fisher-vector
//! products are double-autograd Hessian-vector products of the mean KL
//! (microrl's are `Jᵀ M J p` by forward-mode differentiation): the same
//! conjugate-gradient iterations, step size and line search (the accepted
//! fraction must be the reference's exactly; two cases backtrack, one
//! starts from a negative surrogate on raw advantages), then the
//! critic's regression; weights within [`TRPO_WEIGHT_TOL`].
//!
//! **GRPO cases.** Recorded episodes (two groups of four) are replayed
//! through [`Grpo::collect`], so episode returns, group-relative advantages
//! and stored log-probabilities are checked, then one update with per-step
//! ratios (GRPO) or per-episode geometric-mean ratios (GSPO).
//!
//! **Collect case.** A scripted plant replays recorded raw observations,
//! rewards and episode ends through microrl's [`Ppo::collect`] with
//! observation normalisation and reward scaling on; the stored normalised
//! observations, scaled rewards, values, final values of truncated episodes,
//! advantages, returns and the normaliser's statistics must match the
//! reference (within [`ROLLOUT_TOL`]), and every finished episode must be
//! reported with its raw return and length.
//!
//! Tolerances: the reference is float64 and microrl f32 (with its own `tanh`
//! and `exp`), so every comparison is `|a − b| ≤ tol · max(|b|, floor)`; the
//! largest relative error seen on the committed fixture is printed with
//! `--nocapture`.

use std::boxed::Box;
use std::string::ToString;
use std::vec::Vec;
use std::{format, println};

use crate::algo::buffer::Transition;
use crate::algo::{
    A2cConfig, Critic, Critics, Cursor, Grpo, GrpoConfig, Ppo, PpoConfig, ReinforceConfig, Trpo,
    TrpoConfig, UpdateStats,
};
use crate::env::channels::fuse;
use crate::env::{Discrete, Env, Step};
use crate::nn::Mlp;
use crate::optim::{AdamConfig, Schedule};
use crate::policy::{CategoricalActor, GaussianActor};
use crate::rng::{Xoshiro128pp, shuffle};
use crate::{Error, Params, SVector};
use rand_core::{Rng, SeedableRng};
use serde_json::Value;

/// Advantages, returns, values, normalised observations: f32 vs f64 rounding.
const ROLLOUT_TOL: f32 = 2e-5;
/// Weights after the update.
const WEIGHT_TOL: f32 = 1e-5;
/// TRPO's weights: the natural step solves `(F + c·I) x = g` by conjugate
/// gradient, which amplifies the f32 round-off of the Fisher-vector
/// products by the condition number of `F + c·I` (the worst cases here:
/// damping 0.01, and a Gaussian head; the others agree to ~10⁻⁶).
const TRPO_WEIGHT_TOL: f32 = 2e-4;
/// Diagnostics.
const STATS_TOL: f32 = 1e-4;
/// The applied gradient against the reference's finite differences.
const GRADIENT_TOL: f32 = 1e-4;

const N: usize = 64;
type CatAgent = Ppo<CategoricalActor<Mlp<4, 8, 2>>, Mlp<4, 8, 1>, 4, N>;

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/update_reference.json"
    );
    let text = std::fs::read_to_string(path).expect("read the committed fixture");
    serde_json::from_str(&text).expect("parse the fixture")
}

fn f(v: &Value) -> f32 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an f32 string: {v}"))
}

fn fs(v: &Value) -> Vec<f32> {
    v.as_array().expect("array").iter().map(f).collect()
}

fn flags(v: &Value) -> Vec<bool> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|b| b.as_bool().expect("bool"))
        .collect()
}

fn opt(v: &Value) -> Option<f32> {
    if v.is_null() { None } else { Some(f(v)) }
}

fn vector<const D: usize>(v: &Value) -> SVector<f32, D> {
    SVector::from_column_slice(&fs(v))
}

/// Writes the fixture's tensors (microrl's order) into `params`.
fn load<P: Params>(params: &mut P, tensors: &Value) {
    let tensors = tensors.as_array().expect("tensor list");
    assert_eq!(tensors.len(), P::TENSORS, "tensor count");
    for (i, t) in tensors.iter().enumerate() {
        let values = fs(t);
        let dst = params.tensor_mut(i);
        assert_eq!(dst.len(), values.len(), "tensor {i} length");
        dst.copy_from_slice(&values);
    }
}

/// Largest `|a − b| / max(|b|, floor)` over two parameter sets given as the
/// fixture's tensor list.
fn worst_relative<P: Params>(params: &P, expected: &Value, floor: f32) -> f32 {
    let expected = expected.as_array().expect("tensor list");
    let mut worst = 0.0f32;
    for (i, t) in expected.iter().enumerate() {
        for (&a, b) in params.tensor(i).iter().zip(fs(t)) {
            worst = worst.max((a - b).abs() / b.abs().max(floor));
        }
    }
    worst
}

/// Asserts the update moved `params` far beyond [`WEIGHT_TOL`] from the
/// case's `initial` tensors (a test whose update did nothing cannot pass).
fn assert_moved<P: Params>(what: &str, params: &P, initial: &Value) {
    let moved = worst_relative(params, initial, 0.1);
    assert!(moved > 100.0 * WEIGHT_TOL, "{what} ({moved:.1e})");
}

fn assert_close(what: &str, got: &[f32], expected: &[f32], tol: f32, floor: f32) -> f32 {
    assert_eq!(got.len(), expected.len(), "{what}: length");
    let mut worst = 0.0f32;
    for (k, (&a, &b)) in got.iter().zip(expected).enumerate() {
        let err = (a - b).abs() / b.abs().max(floor);
        assert!(
            err <= tol,
            "{what}[{k}]: microrl {a}, reference {b} (relative error {err:.2e} > {tol:.0e})"
        );
        worst = worst.max(err);
    }
    worst
}

/// Compares the diagnostics named in `fields` with the reference's `expected`
/// stats (relative to `max(|reference|, floor)`, the floor 1e-4 for the KL
/// and 1e-2 otherwise); returns the worst relative error.
fn check_stats(name: &str, stats: &UpdateStats, expected: &Value, fields: &[&str]) -> f32 {
    let mut worst = 0.0f32;
    for &field in fields {
        let (got, floor) = match field {
            "policy_loss" => (stats.policy_loss, 1e-2),
            "value_loss" => (stats.value_loss, 1e-2),
            "entropy" => (stats.entropy, 1e-2),
            "approx_kl" => (stats.approx_kl, 1e-4),
            "clip_fraction" => (stats.clip_fraction, 1e-2),
            "explained_variance" => (stats.explained_variance, 1e-2),
            "grad_norm" => (stats.grad_norm, 1e-2),
            _ => panic!("unknown diagnostic {field}"),
        };
        worst = worst.max(assert_close(
            &format!("{name}: {field}"),
            &[got],
            &[f(&expected[field])],
            STATS_TOL,
            floor,
        ));
    }
    worst
}

/// The case's configuration as a [`PpoConfig`], checking that A2C's and
/// REINFORCE's cases are exactly what their own configurations convert to.
fn config(case: &Value) -> PpoConfig {
    let c = &case["config"];
    let name = case["name"].as_str().unwrap();
    let lr = f(&c["learning_rate"]);
    let from_fixture = PpoConfig {
        total_steps: 100_000,
        learning_rate: Schedule::Constant(lr),
        clip_range: Schedule::Constant(opt(&c["clip_range"]).unwrap_or(f32::INFINITY)),
        gamma: f(&c["gamma"]),
        gae_lambda: f(&c["gae_lambda"]),
        epochs: c["epochs"].as_u64().unwrap() as u16,
        minibatches: c["minibatches"].as_u64().unwrap() as u16,
        normalize_advantages: c["normalize_advantages"].as_bool().unwrap(),
        value_clip: opt(&c["value_clip"]),
        ent_coef: f(&c["ent_coef"]),
        bound_coef: c.get("bound_coef").map_or(0.0, f),
        noise_beta: Schedule::Constant(0.0),
        vf_coef: f(&c["vf_coef"]),
        max_grad_norm: opt(&c["max_grad_norm"]),
        target_kl: opt(&c["target_kl"]),
        kl_coef: f(&c["kl_coef"]),
        kl_target: opt(&c["kl_target"]),
        normalize_obs: false,
        normalize_reward: false,
        scale_free_returns: false,
        adam: AdamConfig {
            eps: f(&c["adam_eps"]),
            ..AdamConfig::DEFAULT
        },
        n_envs: 1,
        n_steps: 0,
    };
    let derived: Option<PpoConfig> = match name {
        "a2c" => Some(
            A2cConfig {
                total_steps: 100_000,
                normalize_obs: false,
                ..A2cConfig::DEFAULT
            }
            .into(),
        ),
        "reinforce" => Some(
            ReinforceConfig {
                total_steps: 100_000,
                normalize_obs: false,
                ..ReinforceConfig::DEFAULT
            }
            .into(),
        ),
        _ => None,
    };
    if let Some(derived) = derived {
        assert_eq!(
            derived, from_fixture,
            "{name}: the algorithm's own configuration"
        );
    }
    from_fixture
}

/// Loads the case's weights and rollout into `agent` (rewards: the
/// fixture's, or `rewards` when given), computes GAE with `(γ, λ)` and
/// checks advantages and returns against the reference. Returns the rollout
/// length and the worst relative error of the advantages.
fn load_rollout<A, C, const OBS: usize>(
    agent: &mut Ppo<A, C, OBS, N>,
    case: &Value,
    action: impl Fn(&Value) -> A::Action,
    rewards: Option<Vec<f32>>,
    (gamma, lambda): (f32, f32),
) -> (usize, f32)
where
    A: crate::algo::Actor<OBS>,
    C: Critic<OBS>,
{
    let name = case["name"].as_str().unwrap();
    load(&mut agent.train.params.actor, &case["actor"]);
    load(&mut agent.train.params.critic, &case["critic"]);
    let r = &case["rollout"];
    let obs = r["obs"].as_array().unwrap();
    let actions = r["actions"].as_array().unwrap();
    let (log_probs, values) = (fs(&r["log_probs"]), fs(&r["values"]));
    let rewards = rewards.unwrap_or_else(|| fs(&r["rewards"]));
    let (terminated, truncated) = (flags(&r["terminated"]), flags(&r["truncated"]));
    let final_values = fs(&r["final_values"]);
    let len = obs.len();
    for t in 0..len {
        agent
            .rollout
            .push(Transition {
                obs: vector(&obs[t]),
                action: action(&actions[t]),
                log_prob: log_probs[t],
                value: values[t],
                reward: rewards[t],
                terminated: terminated[t],
                truncated: truncated[t],
                final_value: final_values[t],
            })
            .unwrap();
    }
    agent
        .rollout
        .compute_advantages(f(&r["last_value"]), gamma, lambda);
    agent.steps = len as u64;

    let e = &case["expected"];
    let adv_err = assert_close(
        &format!("{name}: advantages"),
        &agent.rollout.advantages[..len],
        &fs(&e["advantages"]),
        ROLLOUT_TOL,
        0.1,
    );
    assert_close(
        &format!("{name}: returns"),
        &agent.rollout.returns[..len],
        &fs(&e["returns"]),
        ROLLOUT_TOL,
        0.1,
    );
    (len, adv_err)
}

/// Runs one update case on agent type `Ppo<A, C, OBS, N>`; `action` reads
/// the fixture's action, `rewards` (multi-reward cases) replaces the
/// fixture's rewards.
fn run_case<A, C, const OBS: usize>(
    case: &Value,
    action: impl Fn(&Value) -> A::Action,
    critic: C,
    rewards: Option<Vec<f32>>,
) -> [f32; 4]
where
    A: crate::algo::Actor<OBS>,
    C: Critic<OBS>,
{
    let name = case["name"].as_str().unwrap();
    let mut agent = Box::new(Ppo::<A, C, OBS, N>::new(config(case)));
    agent.train.params.critic = critic;
    // The bound loss's action range (`low`, `high`: the two tensors of a
    // `Continuous` space), where the case sets one.
    let c = &case["config"];
    if !c["action_low"].is_null() {
        agent.space.tensor_mut(0).fill(f(&c["action_low"]));
        agent.space.tensor_mut(1).fill(f(&c["action_high"]));
    }
    let c = agent.config;
    let (len, adv_err) = load_rollout(&mut *agent, case, action, rewards, (c.gamma, c.gae_lambda));
    let e = &case["expected"];

    // The shuffle order the reference used is microrl's.
    let seed = case["shuffle_seed"].as_u64().unwrap();
    let perms = e["permutations"].as_array().unwrap();
    let mut rng = Xoshiro128pp::seed_from_u64(seed);
    let mut order: Vec<u16> = (0..len as u16).collect();
    for (epoch, p) in perms.iter().enumerate() {
        shuffle(&mut rng, &mut order);
        let want: Vec<u16> = p
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_u64().unwrap() as u16)
            .collect();
        assert_eq!(order, want, "{name}: permutation of epoch {epoch}");
    }

    let mut rng = Xoshiro128pp::seed_from_u64(seed);
    let stats = agent.update(&mut rng).unwrap();

    // The order of the last epoch run is left in the rollout's index array.
    assert_eq!(
        &agent.rollout.indices[..len],
        &order[..],
        "{name}: last permutation"
    );

    let s = &e["stats"];
    assert_eq!(
        u64::from(stats.epochs),
        s["epochs"].as_u64().unwrap(),
        "{name}: epochs run"
    );
    // Every field is checked: the seven diagnostics by `check_stats` below.
    let UpdateStats {
        policy_loss: _,
        value_loss: _,
        entropy: _,
        approx_kl: _,
        clip_fraction: _,
        explained_variance: _,
        grad_norm: _,
        epochs: _,
        learning_rate,
        clip_range,
        kl_coef,
        kl_reference,
        trust_step,
    } = stats;
    // Not an anchored agent: no reference; not TRPO: no line search.
    assert_eq!((kl_reference, trust_step), (0.0, 0.0), "{name}");
    let stats_err = check_stats(
        name,
        &stats,
        s,
        &[
            "policy_loss",
            "value_loss",
            "entropy",
            "approx_kl",
            "clip_fraction",
            "explained_variance",
            "grad_norm",
        ],
    );
    assert_eq!(learning_rate, f(&case["config"]["learning_rate"]), "{name}");
    assert_eq!(kl_coef, f(&s["kl_coef"]), "{name}: β used");
    assert_eq!(
        agent.kl_coef,
        f(&s["kl_coef_after"]),
        "{name}: β after adaptation"
    );
    assert_eq!(
        clip_range,
        opt(&case["config"]["clip_range"]).unwrap_or(f32::INFINITY),
        "{name}"
    );

    // The gradient the optimiser received in the last minibatch (left in
    // the gradient buffers) against central differences of the reference loss.
    let g = &e["last_minibatch_gradient"];
    let grad_err = worst_relative(&agent.train.grads.actor, &g["actor"], 1e-2).max(worst_relative(
        &agent.train.grads.critic,
        &g["critic"],
        1e-2,
    ));
    assert!(
        grad_err <= GRADIENT_TOL,
        "{name}: applied gradient vs finite differences: relative error {grad_err:.2e}"
    );

    let weight_err = worst_relative(&agent.train.params.actor, &e["actor"], 0.1).max(
        worst_relative(&agent.train.params.critic, &e["critic"], 0.1),
    );
    assert!(
        weight_err <= WEIGHT_TOL,
        "{name}: weights after the update: relative error {weight_err:.2e}"
    );
    // The update moved the weights far beyond the tolerance.
    assert_moved(
        &format!("{name}: the update barely moved the actor"),
        &agent.train.params.actor,
        &case["actor"],
    );

    println!(
        "{name:>24}: epochs {}, advantages {adv_err:.1e}, stats {stats_err:.1e}, gradient {grad_err:.1e}, weights {weight_err:.1e}",
        stats.epochs
    );
    [adv_err, stats_err, grad_err, weight_err]
}

/// A multi-reward, multi-critic case: two critics fused with the case's
/// value weights (their fused value on the rollout's observations checked
/// against the reference), and the rollout's rewards fused from the case's
/// two reward channels by microrl's [`fuse`].
fn multi_critic<const OBS: usize>(case: &Value) -> (Critics<Mlp<OBS, 8, 1>, 2>, Vec<f32>) {
    let name = case["name"].as_str().unwrap();
    let value_weights: [f32; 2] = fs(&case["value_weights"]).try_into().unwrap();
    let reward_weights: [f32; 2] = fs(&case["reward_weights"]).try_into().unwrap();
    let mut critics = Critics {
        nets: [Mlp::ZERO; 2],
        weights: value_weights,
    };
    critics.validate().unwrap();
    load(&mut critics, &case["critic"]);
    let obs = case["rollout"]["obs"].as_array().unwrap();
    let fused: Vec<f32> = obs.iter().map(|o| critics.value(&vector(o))).collect();
    assert_close(
        &format!("{name}: fused values"),
        &fused,
        &fs(&case["fused_values"]),
        ROLLOUT_TOL,
        0.1,
    );
    let rewards: Vec<f32> = case["reward_channels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| fuse(&reward_weights, &fs(c).try_into().unwrap()))
        .collect();
    assert_close(
        &format!("{name}: fused rewards"),
        &rewards,
        &fs(&case["rollout"]["rewards"]),
        ROLLOUT_TOL,
        0.1,
    );
    (critics, rewards)
}

#[test]
fn every_update_case_matches_the_pytorch_reference() {
    let fixture = fixture();
    let cases = fixture["cases"].as_array().unwrap();
    let mut names = Vec::new();
    let mut worst = [0.0f32; 4];
    for case in cases {
        let categorical = |a: &Value| a.as_u64().unwrap() as usize;
        let gaussian = |a: &Value| vector::<1>(a);
        let multi = !case["value_weights"].is_null();
        let errs = match (case["kind"].as_str().unwrap(), multi) {
            ("categorical", false) => run_case::<CategoricalActor<Mlp<4, 8, 2>>, _, 4>(
                case,
                categorical,
                Mlp::<4, 8, 1>::ZERO,
                None,
            ),
            ("gaussian", false) => run_case::<GaussianActor<Mlp<3, 8, 1>, 1>, _, 3>(
                case,
                gaussian,
                Mlp::<3, 8, 1>::ZERO,
                None,
            ),
            ("categorical", true) => {
                let (critics, rewards) = multi_critic::<4>(case);
                run_case::<CategoricalActor<Mlp<4, 8, 2>>, _, 4>(
                    case,
                    categorical,
                    critics,
                    Some(rewards),
                )
            }
            ("gaussian", true) => {
                let (critics, rewards) = multi_critic::<3>(case);
                run_case::<GaussianActor<Mlp<3, 8, 1>, 1>, _, 3>(
                    case,
                    gaussian,
                    critics,
                    Some(rewards),
                )
            }
            (kind, _) => panic!("unknown kind {kind}"),
        };
        for (w, e) in worst.iter_mut().zip(errs) {
            *w = w.max(e);
        }
        names.push(case["name"].as_str().unwrap().to_string());
    }
    println!(
        "worst relative errors: advantages {:.1e}, stats {:.1e}, gradient {:.1e}, weights {:.1e}",
        worst[0], worst[1], worst[2], worst[3]
    );
    // Every case the reference covers is present.
    for required in [
        "categorical",
        "gaussian",
        "entropy_bonus",
        "gaussian_entropy_bonus",
        "value_clipping",
        "raw_advantages",
        "target_kl",
        "large_adam_eps",
        "a2c",
        "reinforce",
        "ppo_penalty",
        "ppo_penalty_gaussian",
        "ppo_penalty_in_band",
        "clip_and_fixed_penalty",
        "multi_critic",
        "multi_critic_value_clipping",
        "bound_loss",
    ] {
        assert!(
            names.iter().any(|n| n == required),
            "missing case {required}"
        );
    }
}

/// A plant that replays the fixture: `step` returns the recorded next
/// observation (or the recorded final observation at an episode end), reward
/// and flags, whatever the action; `reset` returns the next recorded start.
struct Scripted {
    raw_obs: Vec<SVector<f32, 4>>,
    final_obs: Vec<SVector<f32, 4>>,
    rewards: Vec<f32>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
    t: usize,
}

impl Env for Scripted {
    type Obs = SVector<f32, 4>;
    type Space = Discrete<2>;
    const SOLVED_RETURN: f32 = f32::INFINITY;

    fn reset<R: Rng + ?Sized>(&mut self, _rng: &mut R) -> Self::Obs {
        self.raw_obs[self.t]
    }

    fn step(&mut self, _action: usize) -> Result<Step<Self::Obs>, Error> {
        let t = self.t;
        self.t += 1;
        let done = self.terminated[t] || self.truncated[t];
        Ok(Step {
            obs: if done {
                self.final_obs[t]
            } else {
                self.raw_obs[t + 1]
            },
            reward: self.rewards[t],
            terminated: self.terminated[t],
            truncated: self.truncated[t],
        })
    }
}

#[test]
fn collect_normalises_scales_and_bootstraps_like_the_reference() {
    let fixture = fixture();
    let c = &fixture["collect"];
    let rows =
        |v: &Value| -> Vec<SVector<f32, 4>> { v.as_array().unwrap().iter().map(vector).collect() };
    let mut env = Scripted {
        raw_obs: rows(&c["raw_obs"]),
        final_obs: rows(&c["final_obs"]),
        rewards: fs(&c["rewards"]),
        terminated: flags(&c["terminated"]),
        truncated: flags(&c["truncated"]),
        t: 0,
    };
    assert!(env.truncated.iter().any(|&t| t) && env.terminated.iter().any(|&t| t));
    let mut agent = Box::new(CatAgent::new(PpoConfig {
        gamma: f(&c["gamma"]),
        gae_lambda: f(&c["gae_lambda"]),
        normalize_obs: true,
        normalize_reward: true,
        ..PpoConfig::DEFAULT
    }));
    let mut rng = Xoshiro128pp::seed_from_u64(3);
    agent.init(&env, &mut rng).unwrap();
    load(&mut agent.train.params.actor, &c["actor"]);
    load(&mut agent.train.params.critic, &c["critic"]);
    let mut cursor = Cursor::start(&mut env, &mut rng);
    let mut episodes = Vec::new();
    agent
        .collect(&mut env, &mut cursor, &mut rng, |ep| episodes.push(ep))
        .unwrap();
    assert_eq!(env.t, N);

    let e = &c["expected"];
    let roll = &agent.rollout;
    let obs: Vec<f32> = roll.obs.iter().flat_map(|o| o.iter().copied()).collect();
    let expected_obs: Vec<f32> = e["obs"].as_array().unwrap().iter().flat_map(fs).collect();
    // Absolute for observations: the first normalised observation is
    // `(x − μ)/σ` with `μ = x/(1 + 10⁻⁴)`, a cancellation f32 resolves to
    // ~10⁻⁶ of `x`.
    let mut worst = assert_close(
        "normalised observations",
        &obs,
        &expected_obs,
        ROLLOUT_TOL,
        1.0,
    );
    for (what, got, key) in [
        ("scaled rewards", &roll.rewards[..], "rewards"),
        ("values", &roll.values[..], "values"),
        ("final values", &roll.final_values[..], "final_values"),
        ("advantages", &roll.advantages[..], "advantages"),
        ("returns", &roll.returns[..], "returns"),
    ] {
        worst = worst.max(assert_close(what, got, &fs(&e[key]), ROLLOUT_TOL, 0.1));
    }
    // The first reward meets a return variance of ~10⁻⁴(1 + r²) (the prior's
    // pseudo-count): scaled by ~100, it is clipped to 10.
    assert_eq!(roll.rewards[0], 10.0);
    worst = worst.max(assert_close(
        "observation mean",
        agent.obs_norm.mean.as_slice(),
        &fs(&e["obs_mean"]),
        ROLLOUT_TOL,
        0.1,
    ));
    worst = worst.max(assert_close(
        "observation variance",
        agent.obs_norm.var.as_slice(),
        &fs(&e["obs_var"]),
        ROLLOUT_TOL,
        0.1,
    ));
    assert_close(
        "observation count",
        &[agent.obs_norm.count[0]],
        &[f(&e["obs_count"])],
        1e-6,
        1.0,
    );
    worst = worst.max(assert_close(
        "return variance",
        &[agent.return_norm.var[0]],
        &[f(&e["return_var"])],
        ROLLOUT_TOL,
        0.1,
    ));
    // Every finished episode is reported with its raw (unscaled) return and length.
    let expected_episodes = e["episodes"].as_array().unwrap();
    assert_eq!(episodes.len(), expected_episodes.len(), "episodes reported");
    for (k, (got, want)) in episodes.iter().zip(expected_episodes).enumerate() {
        assert_eq!(
            u64::from(got.len),
            want[1].as_u64().unwrap(),
            "episode {k} length"
        );
        assert_close(
            &format!("episode {k} return"),
            &[got.ret],
            &[f(&want[0])],
            1e-6,
            1.0,
        );
    }
    println!("collect: worst relative error {worst:.1e}");
}

/// Makes microrl's categorical sampler pick the given actions: a uniform
/// draw of 0 falls in action 0's bucket, the largest draw in action 1's.
struct Pick {
    actions: Vec<usize>,
    next: usize,
}

impl rand_core::TryRng for Pick {
    type Error = core::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        let action = self.actions[self.next];
        self.next += 1;
        Ok(if action == 0 { 0 } else { u32::MAX })
    }

    /// GRPO's group seed (the replayed plant ignores it).
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        Ok(0)
    }

    fn try_fill_bytes(&mut self, _dst: &mut [u8]) -> Result<(), Self::Error> {
        unreachable!("the sampler draws u32s")
    }
}

/// Six online one-step actor-critic updates (`ActorCritic::step`) against
/// the reference: δ, V(s) and the entropy of every step, and the weights of
/// both networks after the last (each clipped and stepped by its own Adam).
#[test]
fn online_actor_critic_steps_match_the_reference() {
    use crate::algo::{AcConfig, ActorCritic};
    let fixture = fixture();
    let c = &fixture["actor_critic"];
    let cfg = &c["config"];
    let rows =
        |v: &Value| -> Vec<SVector<f32, 4>> { v.as_array().unwrap().iter().map(vector).collect() };
    let mut env = Scripted {
        raw_obs: rows(&c["raw_obs"]),
        final_obs: rows(&c["final_obs"]),
        rewards: fs(&c["rewards"]),
        terminated: flags(&c["terminated"]),
        truncated: flags(&c["truncated"]),
        t: 0,
    };
    let actions: Vec<usize> = c["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_u64().unwrap() as usize)
        .collect();
    let mut agent = Box::new(
        ActorCritic::<CategoricalActor<Mlp<4, 8, 2>>, Mlp<4, 8, 1>, 4>::new(AcConfig {
            total_steps: 1_000,
            actor_lr: Schedule::Constant(f(&cfg["actor_lr"])),
            critic_lr: Schedule::Constant(f(&cfg["critic_lr"])),
            gamma: f(&cfg["gamma"]),
            ent_coef: f(&cfg["ent_coef"]),
            max_grad_norm: Some(f(&cfg["max_grad_norm"])),
            normalize_obs: false,
            normalize_reward: false,
            scale_free_returns: false,
            critic_warmup: 0,
            rest_init: false,
            adam: AdamConfig {
                eps: f(&cfg["adam_eps"]),
                ..AdamConfig::DEFAULT
            },
        }),
    );
    let mut rng = Pick { actions, next: 0 };
    agent
        .init(&env, &mut Xoshiro128pp::seed_from_u64(0))
        .unwrap();
    load(&mut agent.actor.params, &c["actor"]);
    load(&mut agent.critic.params, &c["critic"]);
    let mut cursor = Cursor::start(&mut env, &mut rng);
    let expected = c["expected"]["stats"].as_array().unwrap();
    let mut worst = 0.0f32;
    for (t, want) in expected.iter().enumerate() {
        let stats = agent.step(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
        for (what, got) in [
            ("delta", stats.delta),
            ("value", stats.value),
            ("entropy", stats.entropy),
        ] {
            worst = worst.max(assert_close(
                &format!("step {t}: {what}"),
                &[got],
                &[f(&want[what])],
                STATS_TOL,
                0.1,
            ));
        }
    }
    assert_eq!(agent.steps, expected.len() as u64);
    let e = &c["expected"];
    let weights = worst_relative(&agent.actor.params, &e["actor"], 0.1).max(worst_relative(
        &agent.critic.params,
        &e["critic"],
        0.1,
    ));
    assert!(
        weights <= WEIGHT_TOL,
        "weights after the steps: relative error {weights:.2e}"
    );
    assert_moved(
        "the steps barely moved the critic",
        &agent.critic.params,
        &c["critic"],
    );
    println!("actor-critic: worst relative error: stats {worst:.1e}, weights {weights:.1e}");
}

/// TRPO's configuration from a case.
fn trpo_config(case: &Value) -> TrpoConfig {
    let c = &case["config"];
    let int = |k: &str| c[k].as_u64().unwrap() as u16;
    TrpoConfig {
        total_steps: 100_000,
        max_kl: f(&c["max_kl"]),
        cg_iters: int("cg_iters"),
        cg_damping: f(&c["cg_damping"]),
        line_search_steps: int("line_search_steps"),
        line_search_shrink: f(&c["line_search_shrink"]),
        gamma: f(&c["gamma"]),
        gae_lambda: f(&c["gae_lambda"]),
        normalize_advantages: c["normalize_advantages"].as_bool().unwrap(),
        critic_learning_rate: Schedule::Constant(f(&c["critic_learning_rate"])),
        critic_epochs: int("critic_epochs"),
        critic_minibatches: int("critic_minibatches"),
        max_grad_norm: None,
        normalize_obs: false,
        normalize_reward: false,
        adam: AdamConfig {
            eps: f(&c["adam_eps"]),
            ..AdamConfig::DEFAULT
        },
    }
}

/// One TRPO update against the reference, whose Fisher-vector products are
/// double-autograd Hessian-vector products of the mean KL: the natural
/// step, the line search's accepted fraction, the critic's regression.
fn run_trpo<A, const OBS: usize>(case: &Value, action: impl Fn(&Value) -> A::Action) -> f32
where
    A: crate::algo::Actor<OBS>,
{
    let name = case["name"].as_str().unwrap();
    let config = trpo_config(case);
    let mut agent = Box::new(Trpo::<A, Mlp<OBS, 8, 1>, OBS, N>::new(config));
    agent.inner.config = config.to_ppo();
    let (gamma, lambda) = (config.gamma, config.gae_lambda);
    load_rollout(&mut agent.inner, case, action, None, (gamma, lambda));
    let seed = case["shuffle_seed"].as_u64().unwrap();
    let stats = agent
        .update(&mut Xoshiro128pp::seed_from_u64(seed))
        .unwrap();

    let s = &case["expected"]["stats"];
    assert_eq!(
        u64::from(stats.epochs),
        s["epochs"].as_u64().unwrap(),
        "{name}"
    );
    // The accepted fraction of the full step is `shrinkᵏ` in f32 on both sides.
    assert_eq!(stats.trust_step, f(&s["trust_step"]), "{name}: trust_step");
    let worst = check_stats(
        name,
        &stats,
        s,
        &[
            "policy_loss",
            "value_loss",
            "entropy",
            "approx_kl",
            "explained_variance",
            "grad_norm",
        ],
    );
    assert_eq!(stats.learning_rate, config.critic_learning_rate.at(0, 1));
    let e = &case["expected"];
    let actor_err = worst_relative(agent.actor(), &e["actor"], 0.1);
    let critic_err = worst_relative(agent.critic(), &e["critic"], 0.1);
    let weights = actor_err.max(critic_err);
    assert!(
        weights <= TRPO_WEIGHT_TOL,
        "{name}: weights after the update: relative error {weights:.2e}"
    );
    assert_moved(
        &format!("{name}: the update barely moved the actor"),
        agent.actor(),
        &case["actor"],
    );
    println!(
        "{name:>28}: trust step {}, stats {worst:.1e}, weights {weights:.1e}",
        stats.trust_step
    );
    worst.max(weights)
}

#[test]
fn trpo_updates_match_the_pytorch_reference() {
    let fixture = fixture();
    let cases = fixture["trpo"].as_array().unwrap();
    let mut backtracked = 0;
    for case in cases {
        match case["kind"].as_str().unwrap() {
            "categorical" => run_trpo::<CategoricalActor<Mlp<4, 8, 2>>, 4>(case, |a| {
                a.as_u64().unwrap() as usize
            }),
            "gaussian" => run_trpo::<GaussianActor<Mlp<3, 8, 1>, 1>, 3>(case, vector::<1>),
            kind => panic!("unknown kind {kind}"),
        };
        backtracked += usize::from(f(&case["expected"]["stats"]["trust_step"]) < 1.0);
    }
    assert_eq!(cases.len(), 5, "TRPO cases");
    assert_eq!(backtracked, 2, "cases whose line search backtracks");
}

/// A plant that replays recorded episodes: `reset` returns the current
/// episode's first observation (GRPO resets before every member, and the
/// cursor again after every episode end), `step` walks through it.
struct Episodes {
    obs: Vec<Vec<SVector<f32, 4>>>,
    rewards: Vec<Vec<f32>>,
    terminated: Vec<bool>,
    episode: usize,
    t: usize,
}

impl Env for Episodes {
    type Obs = SVector<f32, 4>;
    type Space = Discrete<2>;
    const SOLVED_RETURN: f32 = f32::INFINITY;

    fn reset<R: Rng + ?Sized>(&mut self, _rng: &mut R) -> Self::Obs {
        self.t = 0;
        self.obs
            .get(self.episode)
            .map_or(SVector::zeros(), |obs| obs[0])
    }

    fn step(&mut self, _action: usize) -> Result<Step<Self::Obs>, Error> {
        let (e, t) = (self.episode, self.t);
        self.t += 1;
        let done = self.t == self.rewards[e].len();
        if done {
            self.episode += 1;
        }
        Ok(Step {
            obs: self.obs[e][t + 1],
            reward: self.rewards[e][t],
            terminated: done && self.terminated[e],
            truncated: done && !self.terminated[e],
        })
    }
}

/// GRPO and GSPO against the reference: two groups of four recorded
/// episodes collected by microrl's `Grpo::collect` (actions replayed by
/// [`Pick`]), so the episode returns, the group-relative advantages and the
/// stored log-probabilities are checked too; then one update.
#[test]
fn grpo_updates_match_the_pytorch_reference() {
    let fixture = fixture();
    let cases = fixture["grpo"].as_array().unwrap();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let c = &case["config"];
        let int = |k: &str| c[k].as_u64().unwrap() as u16;
        let config = GrpoConfig {
            total_steps: 100_000,
            group_size: int("group_size"),
            groups: int("groups"),
            learning_rate: Schedule::Constant(f(&c["learning_rate"])),
            clip_range: Schedule::Constant(f(&c["clip_range"])),
            epochs: int("epochs"),
            minibatches: int("minibatches"),
            ent_coef: f(&c["ent_coef"]),
            max_grad_norm: opt(&c["max_grad_norm"]),
            normalize_obs: false,
            sequence_ratio: c["sequence_ratio"].as_bool().unwrap(),
            adam: AdamConfig {
                eps: f(&c["adam_eps"]),
                ..AdamConfig::DEFAULT
            },
        };
        let episodes = case["episodes"].as_array().unwrap();
        let mut env = Episodes {
            obs: episodes
                .iter()
                .map(|e| e["obs"].as_array().unwrap().iter().map(vector).collect())
                .collect(),
            rewards: episodes.iter().map(|e| fs(&e["rewards"])).collect(),
            terminated: episodes
                .iter()
                .map(|e| e["terminated"].as_bool().unwrap())
                .collect(),
            episode: 0,
            t: 0,
        };
        assert!(env.terminated.iter().any(|t| !t), "{name}: a truncation");
        let actions: Vec<usize> = case["actions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_u64().unwrap() as usize)
            .collect();
        let n = actions.len();
        let mut agent = Box::new(Grpo::<CategoricalActor<Mlp<4, 8, 2>>, 4, N>::new(config));
        agent
            .init(&env, &mut Xoshiro128pp::seed_from_u64(0))
            .unwrap();
        load(&mut agent.train.params, &case["actor"]);
        let mut rng = Pick { actions, next: 0 };
        let mut cursor = Cursor::start(&mut env, &mut rng);
        agent
            .collect(&mut env, &mut cursor, &mut rng, |_| {})
            .unwrap();
        assert_eq!(
            (agent.rollout.samples.len(), agent.rollout.episodes()),
            (n, episodes.len()),
            "{name}"
        );
        assert_eq!(env.episode, episodes.len(), "{name}: every episode played");
        let e = &case["expected"];
        let mut worst = assert_close(
            &format!("{name}: log-probabilities"),
            &agent.rollout.samples.log_probs[..n],
            &fs(&e["log_probs"]),
            ROLLOUT_TOL,
            0.1,
        );
        worst = worst.max(assert_close(
            &format!("{name}: group-relative advantages"),
            &agent.rollout.samples.advantages[..n],
            &fs(&e["advantages"]),
            ROLLOUT_TOL,
            0.1,
        ));

        let seed = case["shuffle_seed"].as_u64().unwrap();
        let stats = agent
            .update(&mut Xoshiro128pp::seed_from_u64(seed))
            .unwrap();
        let s = &e["stats"];
        assert_eq!(
            u64::from(stats.epochs),
            s["epochs"].as_u64().unwrap(),
            "{name}"
        );
        worst = worst.max(check_stats(
            name,
            &stats,
            s,
            &[
                "policy_loss",
                "entropy",
                "approx_kl",
                "clip_fraction",
                "grad_norm",
            ],
        ));
        let weights = worst_relative(&agent.train.params, &e["actor"], 0.1);
        assert!(
            weights <= WEIGHT_TOL,
            "{name}: weights after the update: relative error {weights:.2e}"
        );
        assert_moved(
            &format!("{name}: the update barely moved the actor"),
            &agent.train.params,
            &case["actor"],
        );
        println!("{name:>8}: {n} steps, stats {worst:.1e}, weights {weights:.1e}");
    }
    let names: Vec<&str> = cases.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["grpo", "gspo"]);
}
