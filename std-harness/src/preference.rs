//! `microrl reward-model`: a Bradley–Terry reward model for CartPole learned
//! from synthetic preferences, for `microrl train --reward-model FILE`.
//!
//! The data stand in for a user comparing clips of their robot:
//! - **Segments** are [`SEGMENT_LEN`] steps of CartPole played with uniformly
//!   random actions, each starting 0–7 random steps into an episode. A
//!   segment in which the pole falls is `live` steps long and then absorbing
//!   (`microrl::algo::preference`).
//! - **The oracle** prefers the segment that stayed upright longer (larger
//!   `live`); pairs with equal `live` are not asked. With probability
//!   `noise` (10 % by default) the answer is flipped, like a tired labeller.
//! - **Held out**: the reported accuracy is on pairs of segments collected
//!   with another seed than the training segments, against the oracle's
//!   true (unflipped) answers; the accuracy against flipped labels is shown
//!   beside it (its ceiling is `1 − noise`).
//!
//! The model (`r_θ`: 4-32-32-1 tanh MLP, plus the absorbing reward `b`) is
//! written as an ordinary parameter blob (`.mrlp`).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use microrl::Params;
use microrl::algo::preference::{self, Preference, RewardLearner, RewardModel, Segment};
use microrl::env::{CartPole, Env};
use microrl::rng::Xoshiro128pp;
use rand_core::{Rng, SeedableRng};
use serde_json::json;

use crate::commands::Report;

/// The reward network: 4 observations → 32 → 32 → 1.
pub type RewardNet = microrl::nn::Mlp<4, 32, 1>;
/// CartPole's reward model as `--reward-model` loads it.
pub type CartPoleRewardModel = RewardModel<RewardNet>;
/// Steps per segment.
pub const SEGMENT_LEN: usize = 50;
/// Preferences per Adam step.
pub const MINIBATCH: usize = 64;

type Seg = Segment<4, SEGMENT_LEN>;

/// `--segments` at most 100 000: the training segments take 804 bytes each
/// and the held-out set half as many again, so 100 000 is about 120 MB —
/// a hundred times the default (1 000), and far more distinct clips than the
/// 4-32-32-1 model needs (300 already give ≥ 0.9 held-out accuracy).
pub const MAX_SEGMENTS: usize = 100_000;
/// `--pairs` at most 10 000 000: 8 bytes per pair, with the true and given
/// labels of the training and held-out pairs about 240 MB; 2 500 times the
/// default (4 000).
pub const MAX_PAIRS: usize = 10_000_000;
/// `--epochs` at most 100 000 passes over the pairs: 3 000 times the default
/// (30); the model converges within tens of epochs, and the bound keeps a
/// typo (4294967295) from running for ever.
pub const MAX_EPOCHS: u32 = 100_000;

/// Options of `microrl reward-model`.
#[derive(Clone, Debug, PartialEq)]
pub struct PreferenceOptions {
    /// Seed of the segments, the labels, the shuffles and the initial weights.
    pub seed: u64,
    /// Training segments.
    pub segments: usize,
    /// Labelled training pairs.
    pub pairs: usize,
    /// Probability that the oracle's answer is flipped.
    pub noise: f64,
    /// Passes over the training pairs.
    pub epochs: u32,
    /// Where to write the model.
    pub out: PathBuf,
}

impl PreferenceOptions {
    /// The defaults: 1 000 segments, 4 000 pairs, 10 % noise, 30 epochs.
    pub fn new(seed: u64, out: PathBuf) -> Self {
        Self {
            seed,
            segments: 1000,
            pairs: 4000,
            noise: 0.1,
            epochs: 30,
            out,
        }
    }
}

/// `n` segments of random play.
fn collect(rng: &mut Xoshiro128pp, n: usize) -> Vec<Seg> {
    let mut env = CartPole::default();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        env.reset(rng);
        let skip = rng.next_u32() % 8;
        let mut fell = false;
        for _ in 0..skip {
            fell |= env
                .step((rng.next_u32() & 1) as usize)
                .expect("valid action")
                .terminated;
        }
        if fell {
            continue;
        }
        let mut s = Seg::ZERO;
        s.live = SEGMENT_LEN as u32;
        for t in 0..SEGMENT_LEN {
            let step = env
                .step((rng.next_u32() & 1) as usize)
                .expect("valid action");
            if step.terminated {
                s.live = t as u32;
                break;
            }
            s.obs[t] = step.obs;
        }
        out.push(s);
    }
    out
}

/// `n` pairs of distinct segments with different `live`, as the oracle
/// answers them (`(true, given)`: the given answer is flipped with
/// probability `noise`).
fn label(
    rng: &mut Xoshiro128pp,
    segs: &[Seg],
    n: usize,
    noise: f64,
) -> (Vec<Preference>, Vec<Preference>) {
    let (mut truth, mut given) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let len = segs.len() as u64;
    while truth.len() < n {
        let i = (rng.next_u64() % len) as u32;
        let j = (rng.next_u64() % len) as u32;
        let (li, lj) = (segs[i as usize].live, segs[j as usize].live);
        if li == lj {
            continue;
        }
        let p = if li > lj {
            Preference {
                preferred: i,
                other: j,
            }
        } else {
            Preference {
                preferred: j,
                other: i,
            }
        };
        truth.push(p);
        let uniform = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let flip = uniform < noise;
        given.push(if flip {
            Preference {
                preferred: p.other,
                other: p.preferred,
            }
        } else {
            p
        });
    }
    (truth, given)
}

/// Trains and writes the model; reports train and held-out accuracy.
///
/// # Errors
/// Invalid options, a refused training step, or a failed write.
pub fn reward_model(opts: &PreferenceOptions) -> anyhow::Result<Report> {
    if !(0.0..0.5).contains(&opts.noise) {
        bail!("--noise must be in [0, 0.5), got {}", opts.noise);
    }
    if opts.segments < 2 || opts.pairs == 0 || opts.epochs == 0 {
        bail!("--segments must be >= 2, --pairs and --epochs >= 1");
    }
    for (option, value, max) in [
        ("--segments", opts.segments, MAX_SEGMENTS),
        ("--pairs", opts.pairs, MAX_PAIRS),
        ("--epochs", opts.epochs as usize, MAX_EPOCHS as usize),
    ] {
        if value > max {
            bail!("{option} {value} is above its maximum of {max}");
        }
    }
    let mut rng = Xoshiro128pp::seed_from_u64(opts.seed);
    let mut held_rng = Xoshiro128pp::seed_from_u64(opts.seed ^ 0x9e37_79b9_7f4a_7c15);
    let train = collect(&mut rng, opts.segments);
    let held = collect(&mut held_rng, opts.segments / 2 + 1);
    // The oracle only answers pairs of different `live`: with none, the
    // labelling below would look for one for ever.
    for (set, segs) in [("training", &train), ("held-out", &held)] {
        if segs.iter().all(|s| s.live == segs[0].live) {
            bail!(
                "--segments {}: all {} {set} segments (seed {}) stayed upright for {} steps, \
                 so no pair can be labelled; use more --segments",
                opts.segments,
                segs.len(),
                opts.seed,
                segs[0].live
            );
        }
    }
    let (_, mut pairs) = label(&mut rng, &train, opts.pairs, opts.noise);
    let (held_truth, held_given) = label(&mut held_rng, &held, opts.pairs / 2 + 1, opts.noise);

    let mut learner: Box<RewardLearner<RewardNet>> = Box::new(RewardLearner::ZERO);
    learner.train.params.init(&mut rng);
    let mut last = preference::PreferenceStats::default();
    for _ in 0..opts.epochs {
        // Fisher–Yates shuffle of the pair order.
        for k in (1..pairs.len()).rev() {
            let j = (rng.next_u64() % (k as u64 + 1)) as usize;
            pairs.swap(k, j);
        }
        for batch in pairs.chunks(MINIBATCH) {
            last = learner.step(&train, batch).context("reward-model step")?;
        }
    }
    let model = learner.model();
    let on_train = preference::evaluate(model, &train, &pairs)?;
    let held_out = preference::evaluate(model, &held, &held_truth)?;
    let held_noisy = preference::evaluate(model, &held, &held_given)?;
    save(model, &opts.out)?;
    let lines = vec![
        format!(
            "reward model 4-32-32-1 from {} preferences ({:.0} % flipped) over {} segments of {SEGMENT_LEN} steps, {} epochs",
            pairs.len(),
            100.0 * opts.noise,
            train.len(),
            opts.epochs
        ),
        format!(
            "train accuracy {:.3} (given labels), last minibatch loss {:.4}",
            on_train.accuracy, last.loss
        ),
        format!(
            "held-out accuracy {:.3} against the oracle ({} pairs of {} unseen segments); {:.3} against flipped labels",
            held_out.accuracy,
            held_truth.len(),
            held.len(),
            held_noisy.accuracy
        ),
        format!("wrote {}", opts.out.display()),
    ];
    Ok(Report {
        lines,
        json: json!({
            "command": "reward-model",
            "seed": opts.seed,
            "segments": train.len(),
            "pairs": pairs.len(),
            "noise": opts.noise,
            "epochs": opts.epochs,
            "train_accuracy": on_train.accuracy,
            "held_out_accuracy": held_out.accuracy,
            "held_out_noisy_accuracy": held_noisy.accuracy,
            "held_out_loss": held_out.loss,
            "out": opts.out,
        }),
    })
}

fn save(model: &CartPoleRewardModel, out: &Path) -> anyhow::Result<()> {
    let blob = microrl::serialize::to_vec(model)?;
    crate::atomic::write_file(out, &blob)
}

/// Reads a model written by `microrl reward-model`.
///
/// # Errors
/// An unreadable file or a blob of another shape.
pub fn load(path: &Path) -> anyhow::Result<CartPoleRewardModel> {
    let blob = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut model = CartPoleRewardModel::ZERO;
    microrl::serialize::load(&mut model, &blob).map_err(|e| {
        anyhow::anyhow!(
            "--reward-model {}: not a CartPole reward model ({e}; expected {} parameters)",
            path.display(),
            CartPoleRewardModel::LEN
        )
    })?;
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_from_noisy_preferences_and_round_trips() {
        let dir = std::env::temp_dir().join(format!("microrl-rm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("rm.mrlp");
        let opts = PreferenceOptions {
            segments: 300,
            pairs: 1200,
            epochs: 10,
            ..PreferenceOptions::new(1, out.clone())
        };
        let report = reward_model(&opts).unwrap();
        let acc = report.json["held_out_accuracy"].as_f64().unwrap();
        assert!(acc >= 0.9, "held-out accuracy {acc}");
        let noisy = report.json["held_out_noisy_accuracy"].as_f64().unwrap();
        assert!(
            noisy < acc,
            "flipped labels cannot be matched as well: {noisy} vs {acc}"
        );
        let model = load(&out).unwrap();
        assert!(model.fallen[0].is_finite());
        let bad = PreferenceOptions { noise: 0.5, ..opts };
        assert!(reward_model(&bad).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
