//! A PPO-style policy update assembled from the public API: categorical head,
//! clipped surrogate, entropy bonus, gradient accumulation over a minibatch,
//! global-norm clipping and Adam through `TrainState`.

use microrl::loss::{approx_kl, clipped_surrogate};
use microrl::nn::{Layer, Mlp, accumulate_gradients, gain};
use microrl::optim::{AdamConfig, Schedule, TrainState};
use microrl::policy::Categorical;
use microrl::{Error, Params, SVector, rng};
use microrl_tests::rng as seeded;

type Net = Mlp<4, 32, 2>;
const BATCH: usize = 64;

struct Batch {
    obs: [SVector<f32, 4>; BATCH],
    actions: [usize; BATCH],
    advantages: [f32; BATCH],
    old_log_probs: [f32; BATCH],
}

/// A synthetic batch where action `[obs₀ > 0]` is the good one.
fn batch(net: &Net, seed: u64) -> Batch {
    let mut r = seeded(seed);
    let obs: [SVector<f32, 4>; BATCH] = core::array::from_fn(|_| {
        let mut o = SVector::<f32, 4>::zeros();
        rng::fill_normal(&mut r, o.as_mut_slice());
        o
    });
    let mut actions = [0; BATCH];
    let mut advantages = [0.0; BATCH];
    let mut old_log_probs = [0.0; BATCH];
    for k in 0..BATCH {
        let dist = Categorical::from_logits(&net.forward(&obs[k])).unwrap();
        actions[k] = dist.sample(&mut r);
        let good = usize::from(obs[k][0] > 0.0);
        advantages[k] = if actions[k] == good { 1.0 } else { -1.0 };
        old_log_probs[k] = dist.log_prob(actions[k]).unwrap();
    }
    Batch {
        obs,
        actions,
        advantages,
        old_log_probs,
    }
}

/// Runs `epochs` clipped-surrogate updates; returns (first loss, last loss, last approx_kl, params).
fn train(seed: u64, epochs: usize) -> (f32, f32, f32, Box<TrainState<Net>>) {
    let mut state = Box::new(TrainState::<Net>::new(AdamConfig::default()));
    state
        .params
        .init_orthogonal(&mut seeded(seed), gain::HIDDEN, gain::POLICY);
    let data = batch(&state.params, seed + 1);
    let lr = Schedule::linear_to_zero(3e-3);
    let mut cache = Net::ZERO_CACHE;
    let (mut first, mut last, mut kl) = (f32::NAN, f32::NAN, 0.0);
    for epoch in 0..epochs {
        state.zero_grad();
        let (mut loss, mut kl_sum) = (0.0, 0.0);
        let params = &state.params;
        accumulate_gradients(
            params,
            &mut state.grads,
            &mut cache,
            &data.obs,
            |k, logits| {
                let dist = Categorical::from_logits(logits).unwrap();
                let log_prob = dist.log_prob(data.actions[k]).unwrap();
                let s = clipped_surrogate(log_prob, data.old_log_probs[k], data.advantages[k], 0.2);
                loss += s.loss / BATCH as f32;
                kl_sum += approx_kl(log_prob - data.old_log_probs[k]) / BATCH as f32;
                (dist.grad_log_prob(data.actions[k]).unwrap() * s.d_log_prob
                    - dist.grad_entropy() * 0.01)
                    / BATCH as f32
            },
        );
        if epoch == 0 {
            first = loss;
        }
        last = loss;
        kl = kl_sum;
        state
            .apply(lr.at(epoch as u64, epochs as u64), Some(0.5))
            .unwrap();
    }
    (first, last, kl, state)
}

#[test]
fn clipped_updates_improve_the_surrogate() {
    let (first, last, kl, _) = train(1, 30);
    assert!(last < first - 0.05, "surrogate loss {first} -> {last}");
    assert!(kl > 0.0 && kl < 0.5, "approx_kl {kl}");
}

#[test]
fn training_is_bit_reproducible() {
    let (_, _, _, a) = train(7, 10);
    let (_, _, _, b) = train(7, 10);
    for k in 0..Net::LEN {
        assert_eq!(
            a.params.get_flat(k).unwrap().to_bits(),
            b.params.get_flat(k).unwrap().to_bits()
        );
    }
    assert_eq!(a.optimizer.t, 10);
}

#[test]
fn a_nan_sample_is_refused_and_weights_survive() {
    let (_, _, _, mut state) = train(3, 2);
    let before = state.params.clone();
    state.zero_grad();
    let mut cache = Net::ZERO_CACHE;
    let bad = [SVector::<f32, 4>::new(f32::NAN, 0.0, 0.0, 0.0)];
    let params = &state.params;
    accumulate_gradients(params, &mut state.grads, &mut cache, &bad, |_, logits| {
        // A NaN observation gives NaN logits; the head refuses them.
        assert_eq!(Categorical::from_logits(logits), Err(Error::NonFinite));
        *logits // propagate the NaN as a worst-case caller would
    });
    assert_eq!(state.apply(1e-3, Some(0.5)), Err(Error::NonFinite));
    assert!(state.params == before);
}
