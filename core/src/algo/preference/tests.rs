//! Unit tests of `algo::preference`.

extern crate std;
use std::vec::Vec;

use super::*;
use crate::env::CartPole;
use crate::nn::{Mlp, fd};
use crate::rng::{Xoshiro128pp, fill_normal};
use rand_core::SeedableRng;

type Net = Mlp<3, 6, 1>;
const L: usize = 4;

fn model(seed: u64) -> RewardModel<Net> {
    let mut m = RewardModel::<Net>::ZERO;
    m.init(&mut fd::rng(seed));
    fd::randomise_biases(&mut m.net, &mut fd::rng(seed + 1));
    m.fallen[0] = -0.7;
    m
}

/// Segments with every live count from 0 to L, random states.
fn segments() -> Vec<Segment<3, L>> {
    let mut rng = fd::rng(7);
    (0..=L as u32)
        .chain([2, 4])
        .map(|live| {
            let mut s = Segment::<3, L>::ZERO;
            for o in &mut s.obs {
                fill_normal(&mut rng, o.as_mut_slice());
            }
            s.live = live;
            s
        })
        .collect()
}

fn pairs() -> Vec<Preference> {
    [(4, 0), (1, 3), (5, 6), (2, 4), (6, 1), (3, 5)]
        .iter()
        .map(|&(preferred, other)| Preference { preferred, other })
        .collect()
}

/// The f64 reference: `Σ softplus(R_l − R_w)` with `R` from the
/// network's independent f64 forward pass, `θ = (net, b)`.
fn reference_loss(theta: &[f64], segs: &[Segment<3, L>], batch: &[Preference]) -> f64 {
    let (net, b) = theta.split_at(Net::LEN);
    let ret = |s: &Segment<3, L>| -> f64 {
        let live = s.live as usize;
        let r: f64 = s.obs[..live]
            .iter()
            .map(|o| {
                let x: Vec<f64> = o.iter().map(|&v| f64::from(v)).collect();
                Net::reference_forward(net, &x)[0]
            })
            .sum();
        r + (L - live) as f64 * b[0]
    };
    batch
        .iter()
        .map(|p| {
            let d = ret(&segs[p.preferred as usize]) - ret(&segs[p.other as usize]);
            (1.0 + (-d).exp()).ln()
        })
        .sum()
}

#[test]
fn preference_loss_gradient_matches_finite_differences() {
    let m = model(1);
    let (segs, batch) = (segments(), pairs());
    let mut grads = RewardModel::<Net>::ZERO;
    let mut cache = Net::ZERO_CACHE;
    let (loss, _) = m
        .loss(&segs, &batch, Some((&mut grads, &mut cache, 0.5)))
        .unwrap();
    let theta = fd::flatten(&m);
    let reference = reference_loss(&theta, &segs, &batch);
    assert!(
        (f64::from(loss) - reference).abs() < 1e-5 * reference,
        "{loss} vs {reference}"
    );
    let numeric: Vec<f64> = fd::numerical_gradient(&theta, |t| reference_loss(t, &segs, &batch))
        .iter()
        .map(|g| 0.5 * g)
        .collect();
    fd::assert_close("dℓ/dθ", &fd::flatten(&grads), &numeric);
}

#[test]
fn returns_reward_and_accuracy_follow_the_definitions() {
    let m = model(3);
    let segs = segments();
    // R = Σ_{t<live} r_θ(s_t) + (L − live)·b, summed from the first step.
    for s in &segs {
        let mut expect = 0.0f32;
        for o in &s.obs[..s.live as usize] {
            expect += m.net.forward(o)[0];
        }
        expect += (L - s.live as usize) as f32 * m.fallen[0];
        assert_eq!(m.segment_return(s), expect);
    }
    assert_eq!(
        m.reward(&segs[1].obs[0]),
        m.net.forward(&segs[1].obs[0])[0] + 0.7
    );
    // Accuracy counts the pairs ranked the given way round; the loss is
    // the mean softplus(−Δ).
    let batch = pairs();
    let stats = evaluate(&m, &segs, &batch).unwrap();
    let deltas: Vec<f32> = batch
        .iter()
        .map(|p| {
            m.segment_return(&segs[p.preferred as usize])
                - m.segment_return(&segs[p.other as usize])
        })
        .collect();
    let ranked = deltas.iter().filter(|d| **d > 0.0).count();
    assert!(
        ranked > 0 && ranked < batch.len(),
        "the fixture must rank some pairs each way"
    );
    assert_eq!(stats.accuracy, ranked as f32 / batch.len() as f32);
    // A tie (Δ = 0, e.g. an all-zero model) is not ranked the given way.
    let zero = RewardModel::<Net>::ZERO;
    assert_eq!(evaluate(&zero, &segs, &batch).unwrap().accuracy, 0.0);
    let mean: f32 = deltas.iter().map(|d| math::softplus(-d)).sum::<f32>() / batch.len() as f32;
    assert!((stats.loss - mean).abs() <= 1e-6 * mean);
    assert!((sigmoid(2.0) - 1.0 / (1.0 + (-2.0f32).exp())).abs() < 1e-7);
    assert!((sigmoid(-2.0) - 1.0 / (1.0 + 2.0f32.exp())).abs() < 1e-7);
    assert_eq!(sigmoid(-200.0), 0.0);
    assert_eq!(sigmoid(200.0), 1.0);
}

#[test]
fn bad_batches_are_refused_and_change_nothing() {
    let mut learner = RewardLearner::<Net>::ZERO;
    learner.train.params = model(5);
    let before = learner.clone();
    let segs = segments();
    let mut bad_live = segs.clone();
    bad_live[2].live = L as u32 + 1;
    let mut nan = segs.clone();
    nan[3].obs[1][0] = f32::NAN;
    let p = |preferred, other| [Preference { preferred, other }];
    let cases: [(&[Segment<3, L>], &[Preference], Error); 5] = [
        (
            &segs,
            &[],
            Error::InvalidInput {
                what: "no preferences in the batch",
            },
        ),
        (
            &segs,
            &p(0, 7),
            Error::InvalidInput {
                what: "preference names a segment past the end",
            },
        ),
        (
            &segs,
            &p(3, 3),
            Error::InvalidInput {
                what: "preference compares a segment with itself",
            },
        ),
        (
            &bad_live,
            &p(2, 0),
            Error::InvalidInput {
                what: "segment live count exceeds its length",
            },
        ),
        (&nan, &p(0, 3), Error::NonFinite),
    ];
    for (segs, batch, err) in cases {
        assert_eq!(learner.step(segs, batch), Err(err));
        assert_eq!(learner, before);
    }
    // A NaN past `live` is ignored (those steps are absorbing).
    let mut tail = segs.clone();
    tail[1].obs[3][0] = f32::NAN;
    assert!(learner.step(&tail, &p(1, 0)).is_ok());
    // Invalid configuration.
    let mut learner = before.clone();
    learner.config.learning_rate = 0.0;
    let refused = learner.clone();
    assert_eq!(
        learner.step(&segs, &pairs()),
        Err(Error::config("learning_rate", "must be finite and > 0"))
    );
    assert_eq!(learner, refused);
    for (field, set) in [
        ("learning_rate", (f32::NAN, 1.0)),
        ("max_grad_norm", (1e-3, 0.0)),
        ("max_grad_norm", (1e-3, f32::INFINITY)),
    ] {
        let c = RewardConfig {
            learning_rate: set.0,
            max_grad_norm: set.1,
            ..RewardConfig::DEFAULT
        };
        assert!(matches!(c.validate(), Err(Error::InvalidConfig { field: f, .. }) if f == field));
    }
    let c = RewardConfig {
        adam: AdamConfig {
            eps: 0.0,
            ..AdamConfig::DEFAULT
        },
        ..RewardConfig::DEFAULT
    };
    assert!(matches!(
        c.validate(),
        Err(Error::InvalidConfig {
            field: "adam.eps",
            ..
        })
    ));
    assert_eq!(RewardConfig::default(), RewardConfig::DEFAULT);
}

#[test]
fn a_step_is_one_adam_step_on_the_clipped_mean_gradient() {
    let (segs, batch) = (segments(), pairs());
    let mut learner = RewardLearner::<Net>::ZERO;
    learner.train.params = model(9);
    learner.config.max_grad_norm = 0.05;
    let start = learner.train.params.clone();
    let stats = learner.step(&segs, &batch).unwrap();
    // The same step by hand: mean gradient, clipped, one Adam step.
    let mut grads = RewardModel::<Net>::ZERO;
    let mut cache = Net::ZERO_CACHE;
    let n = batch.len() as f32;
    let (loss, ranked) = start
        .loss(&segs, &batch, Some((&mut grads, &mut cache, 1.0 / n)))
        .unwrap();
    let norm = clip_grad_norm(&mut grads, 0.05).unwrap();
    assert!(norm > 0.05, "the fixture must clip");
    let mut expect = start.clone();
    let mut adam = crate::optim::Adam::<RewardModel<Net>>::new(AdamConfig::DEFAULT);
    adam.step(&mut expect, &grads, 1e-3).unwrap();
    assert_eq!(learner.train.params, expect);
    assert_eq!(learner.train.optimizer.t, 1);
    assert_eq!(
        stats,
        PreferenceStats {
            loss: loss / n,
            accuracy: ranked as f32 / n,
            grad_norm: norm
        }
    );
}

/// Segments of CartPole under random actions, labelled by the oracle
/// "the pole stayed up longer"; the model learns to rank held-out pairs.
#[test]
fn learns_to_rank_cartpole_segments() {
    const SL: usize = 20;
    fn collect(seed: u64, n: usize) -> Vec<Segment<4, SL>> {
        let mut rng = Xoshiro128pp::seed_from_u64(seed);
        let mut env = CartPole::default();
        (0..n)
            .map(|_| {
                let mut s = Segment::<4, SL>::ZERO;
                env.reset(&mut rng);
                s.live = SL as u32;
                for t in 0..SL {
                    let a = (rng.next_u32() & 1) as usize;
                    let step = env.step(a).unwrap();
                    if step.terminated {
                        s.live = t as u32;
                        break;
                    }
                    s.obs[t] = step.obs;
                }
                s
            })
            .collect()
    }
    fn label(segs: &[Segment<4, SL>]) -> Vec<Preference> {
        let mut out = Vec::new();
        for i in 0..segs.len() as u32 {
            for j in [i + 1, i + 3] {
                let (a, b) = (segs[i as usize].live, segs.get(j as usize).map(|s| s.live));
                match b {
                    Some(b) if a > b => out.push(Preference {
                        preferred: i,
                        other: j,
                    }),
                    Some(b) if b > a => out.push(Preference {
                        preferred: j,
                        other: i,
                    }),
                    _ => {}
                }
            }
        }
        out
    }
    use rand_core::Rng;
    let (train, held_out) = (collect(1, 200), collect(2, 100));
    let (train_pairs, test_pairs) = (label(&train), label(&held_out));
    let mut learner = RewardLearner::<Mlp<4, 16, 1>>::ZERO;
    learner
        .train
        .params
        .init(&mut Xoshiro128pp::seed_from_u64(3));
    let before = evaluate(learner.model(), &held_out, &test_pairs).unwrap();
    for _ in 0..30 {
        for batch in train_pairs.chunks(32) {
            learner.step(&train, batch).unwrap();
        }
    }
    let after = evaluate(learner.model(), &held_out, &test_pairs).unwrap();
    assert!(
        after.accuracy >= 0.9,
        "held-out accuracy {} (before {})",
        after.accuracy,
        before.accuracy
    );
    assert!(after.loss < before.loss);
    // Live states earn more than the absorbing state.
    let live_reward = learner.model().reward(&held_out[0].obs[0]);
    assert!(live_reward > 0.0, "{live_reward}");
}

#[test]
fn the_learned_reward_is_measured_from_the_absorbing_state() {
    let m = RewardModel::<Mlp<4, 8, 1>> {
        fallen: SVector::from([0.25]),
        ..RewardModel::ZERO
    };
    let mut env = LearnedReward::new(CartPole::default(), m.clone());
    let mut plant = LearnedReward::scored_by_plant(CartPole::default(), m.clone());
    assert_eq!(plant.step(1).unwrap().reward, 1.0);
    let mut rng = Xoshiro128pp::seed_from_u64(0);
    env.reset(&mut rng);
    let mut saw_termination = false;
    for _ in 0..200 {
        let step = env.step(1).unwrap();
        if step.terminated {
            assert_eq!(step.reward, 0.0);
            saw_termination = true;
            break;
        }
        assert_eq!(step.reward, m.reward(&step.obs));
        assert_eq!(step.reward, -0.25, "zero network: r̂ = 0 − b");
    }
    assert!(saw_termination);
    // The state is the plant's: saved, stepped on, restored, replayed.
    let mut env = LearnedReward::new(CartPole::default(), m.clone());
    env.reset(&mut rng);
    env.step(0).unwrap();
    let mut words = [0.0; 8];
    let words = &mut words[..<CartPole as EnvState>::WORDS];
    env.save_state(words);
    let mut plain = CartPole::default();
    plain.restore_state(words).unwrap();
    assert_eq!(plain.step(1).unwrap().obs, env.clone().step(1).unwrap().obs);
    let first = env.step(0).unwrap();
    env.step(1).unwrap();
    env.restore_state(words).unwrap();
    assert_eq!(env.step(0).unwrap(), first);
    assert_eq!(
        <LearnedReward<CartPole, Mlp<4, 8, 1>> as EnvState>::TAG,
        CartPole::TAG
    );
}
