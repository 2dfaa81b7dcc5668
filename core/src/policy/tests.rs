//! Unit tests of `policy`.

use super::*;
use crate::env::Continuous;
use crate::nn::{Layer, Mlp, fd, gain};
use std::vec::Vec;

/// `f64` KL[π_θ0 ‖ π_θ] of a categorical head from its logits.
fn reference_categorical_kl(l0: &[f64], l: &[f64]) -> f64 {
    let log_softmax = |l: &[f64]| {
        let m = l.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
        let z = l.iter().map(|x| (x - m).exp()).sum::<f64>().ln();
        l.iter().map(|x| x - m - z).collect::<Vec<_>>()
    };
    let (lp, lq) = (log_softmax(l0), log_softmax(l));
    lp.iter().zip(&lq).map(|(p, q)| p.exp() * (p - q)).sum()
}

/// `f64` KL between diagonal Gaussians `(μ, log σ)`.
fn reference_gaussian_kl(m0: &[f64], ls0: &[f64], m: &[f64], ls: &[f64]) -> f64 {
    (0..m0.len())
        .map(|i| {
            let (v0, v) = ((2.0 * ls0[i]).exp(), (2.0 * ls[i]).exp());
            ls[i] - ls0[i] + (v0 + (m0[i] - m[i]).powi(2)) / (2.0 * v) - 0.5
        })
        .sum()
}

/// Checks `fisher_vector_product` (summed over `inputs` with weight
/// `1/len`) against the Hessian of `θ ↦ mean KL[π_θ0 ‖ π_θ]` at `θ0`
/// along `v`, by mixed central differences of the `f64` reference
/// `kl(θ0, θ)`: `(F v)ₖ = ∂²/∂sₖ∂t KL(θ0 + sₖeₖ + t v)`.
fn check_fisher<A: Actor<OBS>, const OBS: usize>(
    actor: &A,
    inputs: &[SVector<f32, OBS>],
    kl: impl Fn(&[f64], &[f64]) -> f64,
) {
    let mut rng = fd::rng(31);
    let mut v = A::ZERO;
    fd::randomise(&mut v, &mut rng, 1.0);
    let mut product = A::ZERO;
    let mut cache = A::ZERO_CACHE;
    let scale = 1.0 / inputs.len() as f32;
    for x in inputs {
        actor.evaluate(x, &A::ZERO_ACTION, &mut cache).unwrap();
        actor.fisher_vector_product(&cache, &v, scale, &mut product);
    }
    let theta0 = fd::flatten(actor);
    let v64 = fd::flatten(&v);
    let h = 1e-4;
    let at = |k: usize, s: f64, t: f64| {
        let theta: Vec<f64> = (0..theta0.len())
            .map(|j| theta0[j] + t * v64[j] + if j == k { s } else { 0.0 })
            .collect();
        kl(&theta0, &theta)
    };
    let numeric: Vec<f64> = (0..theta0.len())
        .map(|k| (at(k, h, h) - at(k, h, -h) - at(k, -h, h) + at(k, -h, -h)) / (4.0 * h * h))
        .collect();
    fd::assert_close("F·v", &fd::flatten(&product), &numeric);
}

fn fisher_inputs() -> [SVector<f32, 4>; 3] {
    [
        SVector::<f32, 4>::new(0.5, -1.0, 0.3, 0.8),
        SVector::<f32, 4>::new(-0.2, 0.1, 1.3, -0.6),
        SVector::<f32, 4>::new(1.1, 0.4, -0.9, 0.05),
    ]
}

/// TRPO's Fisher-vector product equals the finite-difference Hessian of
/// the mean KL, for a categorical actor through its whole MLP.
#[test]
fn categorical_fisher_vector_product_is_the_kl_hessian() {
    type Net = Mlp<4, 6, 3>;
    let mut actor = CategoricalActor { net: Net::ZERO };
    actor
        .net
        .init_orthogonal(&mut fd::rng(6), gain::HIDDEN, 1.0);
    fd::randomise_biases(&mut actor.net, &mut fd::rng(7));
    let inputs = fisher_inputs();
    let x64: Vec<Vec<f64>> = inputs
        .iter()
        .map(|x| x.iter().map(|&v| f64::from(v)).collect())
        .collect();
    check_fisher(&actor, &inputs, |theta0, theta| {
        x64.iter()
            .map(|x| {
                let l0 = Net::reference_forward(theta0, x);
                reference_categorical_kl(&l0, &Net::reference_forward(theta, x))
            })
            .sum::<f64>()
            / x64.len() as f64
    });
}

/// The same for a Gaussian actor: the mean through the MLP and `log σ`.
#[test]
fn gaussian_fisher_vector_product_is_the_kl_hessian() {
    type Net = Mlp<4, 6, 2>;
    let mut actor = GaussianActor {
        net: Net::ZERO,
        head: Gaussian::with_log_std(0.0),
    };
    actor
        .net
        .init_orthogonal(&mut fd::rng(8), gain::HIDDEN, 1.0);
    fd::randomise_biases(&mut actor.net, &mut fd::rng(9));
    actor.head.log_std = SVector::<f32, 2>::new(-0.4, 0.3);
    let inputs = fisher_inputs();
    let x64: Vec<Vec<f64>> = inputs
        .iter()
        .map(|x| x.iter().map(|&v| f64::from(v)).collect())
        .collect();
    let n = Net::LEN;
    check_fisher(&actor, &inputs, |theta0, theta| {
        x64.iter()
            .map(|x| {
                let m0 = Net::reference_forward(&theta0[..n], x);
                let m = Net::reference_forward(&theta[..n], x);
                reference_gaussian_kl(&m0, &theta0[n..], &m, &theta[n..])
            })
            .sum::<f64>()
            / x64.len() as f64
    });
}

/// `kl` equals the `f64` closed form for two different actors of each
/// kind, and is 0 between an actor and itself.
#[test]
fn kl_matches_the_closed_form() {
    type Net = Mlp<4, 6, 2>;
    let x = fisher_inputs()[1];
    let x64: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    let mut p = CategoricalActor { net: Net::ZERO };
    let mut q = CategoricalActor { net: Net::ZERO };
    p.net.init_orthogonal(&mut fd::rng(10), gain::HIDDEN, 1.0);
    q.net.init_orthogonal(&mut fd::rng(11), gain::HIDDEN, 1.0);
    let expected = reference_categorical_kl(
        &Net::reference_forward(&fd::flatten(&p.net), &x64),
        &Net::reference_forward(&fd::flatten(&q.net), &x64),
    );
    let got = f64::from(p.kl(&q, &x).unwrap());
    assert!(expected > 1e-3 && (got - expected).abs() < 1e-5 * expected.max(1.0));
    assert_eq!(p.kl(&p, &x).unwrap(), 0.0);

    let g = |net: Net, ls: [f32; 2]| GaussianActor {
        net,
        head: Gaussian {
            log_std: SVector::<f32, 2>::from(ls),
        },
    };
    let (gp, gq) = (g(p.net.clone(), [-0.3, 0.2]), g(q.net.clone(), [0.1, -0.5]));
    let expected = reference_gaussian_kl(
        &Net::reference_forward(&fd::flatten(&p.net), &x64),
        &[-0.3, 0.2],
        &Net::reference_forward(&fd::flatten(&q.net), &x64),
        &[f64::from(0.1f32), f64::from(-0.5f32)],
    );
    let got = f64::from(gp.kl(&gq, &x).unwrap());
    assert!(
        expected > 1e-2 && (got - expected).abs() < 1e-5 * expected.max(1.0),
        "{got} vs {expected}"
    );
    assert_eq!(gp.kl(&gp, &x).unwrap(), 0.0);
    assert_eq!(p.kl(&q, &(x * f32::NAN)), Err(Error::NonFinite));
}

/// `sample` draws each action with its probability and returns the
/// log-probability `evaluate` gives that action.
#[test]
fn categorical_samples_follow_the_distribution_with_their_log_probability() {
    let mut actor = CategoricalActor {
        net: Mlp::<4, 8, 3>::ZERO,
    };
    actor
        .net
        .init_orthogonal(&mut fd::rng(4), gain::HIDDEN, 1.0);
    let obs = SVector::<f32, 4>::new(0.5, -1.0, 0.3, 0.8);
    let probs = actor.distribution(&obs).unwrap().probs();
    let mut cache = <CategoricalActor<Mlp<4, 8, 3>> as Actor<4>>::ZERO_CACHE;
    let mut counts = [0u32; 3];
    let mut rng = fd::rng(5);
    let n = 20_000;
    for _ in 0..n {
        let (a, log_prob) = actor.sample(&obs, &mut rng).unwrap();
        counts[a] += 1;
        let (expected, _) = actor.evaluate(&obs, &a, &mut cache).unwrap();
        assert_eq!(log_prob, expected);
    }
    for (a, &c) in counts.iter().enumerate() {
        let freq = c as f32 / n as f32;
        assert!(
            (freq - probs[a]).abs() < 0.015,
            "action {a}: {freq} vs {}",
            probs[a]
        );
    }
}

/// `init` draws orthogonal weights with SB3's gains (√2 hidden, 0.01
/// policy head), zero biases and, for the Gaussian head, `log σ = 0`.
#[test]
fn init_sets_orthogonal_weights_and_the_heads_parameters() {
    let mut actor = GaussianActor {
        net: Mlp::<3, 8, 2>::ZERO,
        head: Gaussian::with_log_std(-1.5),
    };
    actor.init(&mut fd::rng(6));
    assert_eq!(actor.head.log_std, SVector::<f32, 2>::zeros());
    let first = &actor.net.first.weight;
    // Orthonormal columns scaled by √2: WᵀW = 2·I (3 inputs, 8 outputs).
    let gram = first.transpose() * first;
    for i in 0..3 {
        for j in 0..3 {
            let want = if i == j { 2.0 } else { 0.0 };
            assert!(
                (gram[(i, j)] - want).abs() < 1e-5,
                "{i},{j}: {}",
                gram[(i, j)]
            );
        }
    }
    let out = &actor.net.second.second.weight;
    let norm = out.norm();
    assert!(norm > 0.0 && norm < 0.05, "policy head gain 0.01: {norm}");
    let mut categorical = CategoricalActor {
        net: Mlp::<3, 8, 2>::ZERO,
    };
    categorical.init(&mut fd::rng(6));
    assert_eq!(categorical.net, actor.net);
}

#[test]
fn categorical_policy_acts_and_rejects_nan() {
    let mut policy = CategoricalActor {
        net: Mlp::<4, 16, 2>::ZERO,
    };
    policy
        .net
        .init_orthogonal(&mut fd::rng(1), gain::HIDDEN, gain::POLICY);
    let obs = SVector::<f32, 4>::new(0.01, -0.02, 0.03, 0.04);
    let action = policy.mode(&obs).unwrap();
    assert!(action < 2);
    let (sampled, log_prob) = policy.sample(&obs, &mut fd::rng(2)).unwrap();
    assert!(sampled < 2 && log_prob <= 0.0);
    // The policy head's 0.01 gain makes the initial policy near-uniform.
    let probs = policy.distribution(&obs).unwrap().probs();
    assert!((probs[0] - 0.5).abs() < 0.05);
    let bad = SVector::<f32, 4>::new(0.0, f32::NAN, 0.0, 0.0);
    assert_eq!(policy.mode(&bad), Err(Error::NonFinite));
    assert_eq!(CategoricalActor::<Mlp<4, 16, 2>>::LEN, Mlp::<4, 16, 2>::LEN);
}

#[test]
fn gaussian_policy_acts_and_rejects_infinity() {
    let mut actor = GaussianActor {
        net: Mlp::<3, 8, 1>::ZERO,
        head: Gaussian::with_log_std(-0.5),
    };
    actor
        .net
        .init_orthogonal(&mut fd::rng(3), gain::HIDDEN, gain::POLICY);
    let obs = SVector::<f32, 3>::new(1.0, 0.0, -0.5);
    let mean = actor.mode(&obs).unwrap();
    let (raw, log_prob) = actor.sample(&obs, &mut fd::rng(4)).unwrap();
    assert_eq!(log_prob, actor.head.log_prob(&mean, &raw));
    let bad = SVector::<f32, 3>::new(f32::INFINITY, 0.0, 0.0);
    assert_eq!(actor.mode(&bad), Err(Error::NonFinite));
    assert_eq!(GaussianActor::<Mlp<3, 8, 1>, 1>::TENSORS, 7);
}

/// `tanh` saturates ±∞ into finite activations, so the network output
/// alone cannot reveal an infinite observation: `evaluate` checks its
/// input (and, for a Gaussian, the action) before anything else.
#[test]
fn evaluate_refuses_non_finite_inputs_and_actions() {
    let mut cat = CategoricalActor {
        net: Mlp::<3, 8, 2>::ZERO,
    };
    cat.init(&mut fd::rng(5));
    let mut gauss = GaussianActor {
        net: Mlp::<3, 8, 1>::ZERO,
        head: Gaussian::with_log_std(0.0),
    };
    gauss.init(&mut fd::rng(6));
    let mut cat_cache = CategoricalActor::<Mlp<3, 8, 2>>::ZERO_CACHE;
    let mut g_cache = GaussianActor::<Mlp<3, 8, 1>, 1>::ZERO_CACHE;
    let action = SVector::<f32, 1>::new(0.3);
    for bad in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
        let input = SVector::<f32, 3>::new(0.1, bad, -0.2);
        assert_eq!(
            cat.evaluate(&input, &0, &mut cat_cache),
            Err(Error::NonFinite),
            "{bad}"
        );
        assert_eq!(
            gauss.evaluate(&input, &action, &mut g_cache),
            Err(Error::NonFinite),
            "{bad}"
        );
        let ok_input = SVector::<f32, 3>::new(0.1, 0.0, -0.2);
        assert_eq!(
            gauss.evaluate(&ok_input, &SVector::<f32, 1>::new(bad), &mut g_cache),
            Err(Error::NonFinite),
            "action {bad}"
        );
    }
    // Refused before the cache is touched.
    assert_eq!(cat_cache.output, SVector::<f32, 2>::zeros());
    assert_eq!(g_cache.output, SVector::<f32, 1>::zeros());
    // An action so far from the mean that z² overflows: log π = −∞, refused.
    let input = SVector::<f32, 3>::new(0.1, 0.0, -0.2);
    assert_eq!(
        gauss.evaluate(&input, &SVector::<f32, 1>::new(1e30), &mut g_cache),
        Err(Error::NonFinite)
    );
    assert_eq!(
        cat.evaluate(&input, &2, &mut cat_cache),
        Err(Error::InvalidAction)
    );
    let (lp, h) = gauss.evaluate(&input, &action, &mut g_cache).unwrap();
    assert!(lp.is_finite() && h.is_finite());
}

/// `evaluate_batch` + `backward_batch` over the samples against
/// `evaluate` + `backward` sample by sample: the same result or the same
/// first error, and on success the same log-probabilities, entropies
/// and gradient, bit for bit.
fn check_batch<A, const OBS: usize, const B: usize>(
    actor: &A,
    inputs: &[SVector<f32, OBS>],
    actions: &[A::Action],
) -> Result<(), Error>
where
    A: Actor<OBS>,
{
    let n = actions.len();
    let d_log_probs: Vec<f32> = (0..n).map(|k| 0.3 - 0.17 * k as f32).collect();
    let d_entropy = -0.01;
    let mut cache = A::ZERO_CACHE;
    let mut single = Vec::new();
    let mut single_grad = A::ZERO;
    fd::randomise(&mut single_grad, &mut fd::rng(40), 0.1);
    let mut batch_grad = A::ZERO;
    fd::randomise(&mut batch_grad, &mut fd::rng(40), 0.1);
    let mut single_result = Ok(());
    for ((x, action), &d) in inputs.iter().zip(actions).zip(&d_log_probs) {
        match actor.evaluate(x, action, &mut cache) {
            Ok(out) => {
                single.push(out);
                actor.backward(&cache, action, d, d_entropy, &mut single_grad);
            }
            Err(e) => {
                single_result = Err(e);
                break;
            }
        }
    }
    let mut batch = std::boxed::Box::new(<A::Batch<B> as Zeroed>::ZERO);
    A::batch_inputs(&mut batch)[..n].copy_from_slice(inputs);
    let mut out = [(0.0f32, 0.0f32); B];
    let result = actor.evaluate_batch(&mut batch, actions, &mut out);
    assert_eq!(result, single_result);
    result?;
    let bits = |v: &[(f32, f32)]| -> Vec<(u32, u32)> {
        v.iter().map(|(a, b)| (a.to_bits(), b.to_bits())).collect()
    };
    assert_eq!(bits(&out[..n]), bits(&single));
    actor.backward_batch(
        &mut batch,
        actions,
        &d_log_probs,
        d_entropy,
        None,
        &mut batch_grad,
    );
    fd::assert_same_bits(&batch_grad, &single_grad, "gradient");
    Ok(())
}

/// `sample_at` after `sample_batch` against `sample`, input by input
/// from one RNG state each: the same action, log-probability, error and
/// RNG state after.
fn check_sample_batch<A: Actor<3>, const B: usize>(actor: &A, inputs: &[SVector<f32, 3>]) {
    let mut batch = std::boxed::Box::new(<A::Batch<B> as Zeroed>::ZERO);
    A::batch_inputs(&mut batch)[..inputs.len()].copy_from_slice(inputs);
    actor.sample_batch(&mut batch, inputs.len());
    for (k, x) in inputs.iter().enumerate() {
        let (mut single_rng, mut batch_rng) = (fd::rng(60 + k as u64), fd::rng(60 + k as u64));
        let single = actor.sample(x, &mut single_rng);
        let batched = actor.sample_at(&mut batch, k, &mut batch_rng);
        assert_eq!(
            std::format!("{batched:?}"),
            std::format!("{single:?}"),
            "sample {k}"
        );
        if let (Ok((_, a)), Ok((_, b))) = (&single, &batched) {
            assert_eq!(a.to_bits(), b.to_bits(), "log-probability of sample {k}");
        }
        assert_eq!(
            single_rng.next_u32(),
            batch_rng.next_u32(),
            "RNG after sample {k}"
        );
    }
    assert_eq!(
        actor.sample_at(&mut batch, B, &mut fd::rng(1)),
        Err(Error::InvalidInput {
            what: "sample index past the batch"
        })
    );
}

/// A random categorical and a random Gaussian actor (`log σ` drawn too).
fn random_actors(
    rng: &mut rand_xoshiro::Xoshiro128PlusPlus,
) -> (
    CategoricalActor<Mlp<3, 11, 3>>,
    GaussianActor<Mlp<3, 9, 2>, 2>,
) {
    let mut cat = CategoricalActor {
        net: Mlp::<3, 11, 3>::ZERO,
    };
    fd::randomise(&mut cat, rng, 0.7);
    let mut gauss = GaussianActor {
        net: Mlp::<3, 9, 2>::ZERO,
        head: Gaussian::with_log_std(0.0),
    };
    fd::randomise(&mut gauss, rng, 0.7);
    (cat, gauss)
}

#[test]
fn batched_samples_are_the_per_sample_ones() {
    let mut rng = fd::rng(42);
    let (cat, gauss) = random_actors(&mut rng);
    let mut inputs = [SVector::<f32, 3>::zeros(); 19];
    for (k, x) in inputs.iter_mut().enumerate() {
        crate::rng::fill_normal(&mut rng, x.as_mut_slice());
        if k % 6 == 0 {
            *x *= 1e3;
        }
    }
    inputs[7][2] = f32::NAN;
    inputs[11][0] = f32::INFINITY;
    check_sample_batch::<CategoricalActor<Mlp<3, 11, 3>>, 19>(&cat, &inputs);
    check_sample_batch::<CategoricalActor<Mlp<3, 11, 3>>, 32>(&cat, &inputs[..5]);
    check_sample_batch::<GaussianActor<Mlp<3, 9, 2>, 2>, 19>(&gauss, &inputs);
    // Non-finite network outputs are refused as `sample` refuses them.
    let mut broken = cat.clone();
    broken.net.second.second.bias[1] = f32::NAN;
    check_sample_batch::<CategoricalActor<Mlp<3, 11, 3>>, 4>(&broken, &inputs[..4]);
    let mut broken = gauss.clone();
    broken.net.second.second.bias[0] = f32::INFINITY;
    check_sample_batch::<GaussianActor<Mlp<3, 9, 2>, 2>, 4>(&broken, &inputs[..4]);
}

#[test]
fn batched_evaluation_and_backward_are_the_per_sample_ones() {
    let mut rng = fd::rng(41);
    let (cat, gauss) = random_actors(&mut rng);
    let mut inputs = [SVector::<f32, 3>::zeros(); 4];
    for x in &mut inputs {
        crate::rng::fill_normal(&mut rng, x.as_mut_slice());
    }
    let means = [
        SVector::<f32, 2>::new(0.5, -1.0),
        SVector::<f32, 2>::new(-0.2, 0.1),
        SVector::<f32, 2>::new(1.5, 0.0),
        SVector::<f32, 2>::new(0.0, 2.0),
    ];
    type Cat = CategoricalActor<Mlp<3, 11, 3>>;
    type Gauss = GaussianActor<Mlp<3, 9, 2>, 2>;
    assert_eq!(
        check_batch::<Cat, 3, 4>(&cat, &inputs, &[2, 0, 1, 2]),
        Ok(())
    );
    assert_eq!(
        check_batch::<Cat, 3, 5>(&cat, &inputs[..3], &[1, 1, 0]),
        Ok(())
    );
    // Past one block of the vectorised head (`heads_of`: 16 samples),
    // with a partial last block and inputs large enough to saturate
    // probabilities to exactly 0 and 1.
    let mut many = [SVector::<f32, 3>::zeros(); 37];
    for (k, x) in many.iter_mut().enumerate() {
        crate::rng::fill_normal(&mut rng, x.as_mut_slice());
        if k % 5 == 0 {
            *x *= 1e4;
        }
    }
    let actions: [usize; 37] = core::array::from_fn(|k| (k * 7) % 3);
    assert_eq!(check_batch::<Cat, 3, 40>(&cat, &many, &actions), Ok(()));
    assert_eq!(check_batch::<Gauss, 3, 4>(&gauss, &inputs, &means), Ok(()));
    assert_eq!(
        check_batch::<Gauss, 3, 2>(&gauss, &inputs[..1], &means[..1]),
        Ok(())
    );

    // Errors: the first sample's, in order, as `evaluate` finds them.
    let mut nan = inputs;
    nan[2][1] = f32::NAN;
    assert_eq!(
        check_batch::<Cat, 3, 4>(&cat, &nan, &[0, 1, 1, 0]),
        Err(Error::NonFinite)
    );
    assert_eq!(
        check_batch::<Cat, 3, 4>(&cat, &nan, &[0, 3, 1, 0]),
        Err(Error::InvalidAction)
    );
    assert_eq!(
        check_batch::<Cat, 3, 4>(&cat, &nan, &[0, 1, 1, 7]),
        Err(Error::NonFinite)
    );
    assert_eq!(
        check_batch::<Cat, 3, 4>(&cat, &inputs, &[0, 1, 1, 3]),
        Err(Error::InvalidAction)
    );
    assert_eq!(
        check_batch::<Gauss, 3, 4>(&gauss, &nan, &means),
        Err(Error::NonFinite)
    );
    let mut bad_actions = means;
    bad_actions[1][0] = f32::INFINITY;
    assert_eq!(
        check_batch::<Gauss, 3, 4>(&gauss, &inputs, &bad_actions),
        Err(Error::NonFinite)
    );
    // A network whose outputs are NaN fails at the first sample, before
    // a later invalid action is looked at.
    let mut broken = cat.clone();
    broken.net.second.second.bias[0] = f32::NAN;
    assert_eq!(
        check_batch::<Cat, 3, 4>(&broken, &inputs, &[0, 1, 9, 0]),
        Err(Error::NonFinite)
    );
    let mut broken = gauss.clone();
    broken.net.second.second.bias[1] = f32::NAN;
    assert_eq!(
        check_batch::<Gauss, 3, 4>(&broken, &inputs, &means),
        Err(Error::NonFinite)
    );
}

/// A finite but absurd `log σ` (100: σ = e¹⁰⁰ overflows) made `sample`
/// return `Ok(([inf], -inf))`.
#[test]
fn sample_never_returns_a_non_finite_ok() {
    let mut actor = GaussianActor {
        net: Mlp::<3, 8, 1>::ZERO,
        head: Gaussian::with_log_std(100.0),
    };
    actor.init(&mut fd::rng(7));
    actor.head = Gaussian::with_log_std(100.0);
    let input = SVector::<f32, 3>::new(0.1, 0.0, -0.2);
    let mut rng = fd::rng(8);
    for _ in 0..100 {
        assert_eq!(actor.sample(&input, &mut rng), Err(Error::NonFinite));
    }
    // Large but representable: σ = e⁵⁰ ≈ 5·10²¹ samples and scores finitely.
    actor.head = Gaussian::with_log_std(50.0);
    for _ in 0..100 {
        let (raw, lp) = actor.sample(&input, &mut rng).unwrap();
        assert!(raw[0].is_finite() && lp.is_finite());
    }
    // Σ log σ overflows (log-density −∞, entropy +∞): `evaluate` refuses.
    let mut wide = GaussianActor {
        net: Mlp::<3, 8, 2>::ZERO,
        head: Gaussian::with_log_std(f32::MAX),
    };
    wide.head.log_std[1] = f32::MAX;
    let mut cache = GaussianActor::<Mlp<3, 8, 2>, 2>::ZERO_CACHE;
    assert_eq!(
        wide.evaluate(&input, &SVector::<f32, 2>::zeros(), &mut cache),
        Err(Error::NonFinite)
    );
}

/// The deployed Gaussian policy returns the command the actuator
/// receives: the mean clipped to the space's bounds.
#[test]
fn deployed_gaussian_policy_clips_to_its_bounds() {
    let mut policy = Policy::<GaussianActor<Mlp<3, 8, 1>, 1>, 3> {
        actor: GaussianActor::ZERO,
        obs_norm: RunningNorm::ZERO,
        space: Continuous::symmetric(0.25),
    };
    policy.actor.net.second.second.bias[0] = 3.0; // mean 3 everywhere
    let obs = SVector::<f32, 3>::new(1.0, 2.0, 3.0);
    assert_eq!(policy.act(&obs).unwrap()[0], 0.25);
    policy.actor.net.second.second.bias[0] = -0.1;
    assert_eq!(policy.act(&obs).unwrap()[0], -0.1);
    assert_eq!(
        Policy::<GaussianActor<Mlp<3, 8, 1>, 1>, 3>::TENSORS,
        7 + 3 + 2
    );
}
