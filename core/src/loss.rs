//! Policy-gradient loss terms and their gradients, one sample at a time.
//!
//! Each function returns the sample's loss and its derivative with respect to
//! the quantity the network produced (`log π(a|s)` or `V(s)`); a training loop
//! averages them over a minibatch and backpropagates through the
//! distribution head and the network.
//!
//! **Clipped surrogate** (Schulman et al. 2017, eq. 7; notes 002 §9): with
//! `r = exp(log π − log π_old)`,
//! `L = −min(r·Â, clip(r, 1 − ε, 1 + ε)·Â)`. Case analysis of the `min`:
//!
//! | advantage | ratio | active term | `∂L/∂ log π` |
//! |---|---|---|---|
//! | `Â > 0` | `r > 1 + ε` | clipped (constant) | `0` |
//! | `Â > 0` | `r ≤ 1 + ε` | `r·Â` | `−Â·r` |
//! | `Â < 0` | `r < 1 − ε` | clipped (constant) | `0` |
//! | `Â < 0` | `r ≥ 1 − ε` | `r·Â` | `−Â·r` |
//!
//! (`∂r/∂ log π = r`.) The gradient vanishes only where improving further
//! would move the ratio outside the trust region.
//!
//! **Value loss** `½(V − R)²`, optionally clipped around the rollout's value
//! `V_old` (PPO2 / CleanRL `clip_vloss`): `½·max((V − R)², (V_clip − R)²)` with
//! `V_clip = V_old + clip(V − V_old, −ε_v, ε_v)`.

use crate::math;

/// One sample's clipped-surrogate loss and what PPO logs about it.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Surrogate {
    /// `−min(r·Â, clip(r)·Â)`.
    pub loss: f32,
    /// `∂loss / ∂ log π(a|s)`.
    pub d_log_prob: f32,
    /// The probability ratio `r = π / π_old`.
    pub ratio: f32,
    /// `|r − 1| > ε` (the sample counts toward `clip_fraction`).
    pub clipped: bool,
}

/// PPO's clipped surrogate for one sample (see the module docs for the cases).
pub fn clipped_surrogate(
    log_prob: f32,
    old_log_prob: f32,
    advantage: f32,
    clip_range: f32,
) -> Surrogate {
    let ratio = math::exp(log_prob - old_log_prob);
    let unclipped = ratio * advantage;
    let clipped_objective = math::clamp(ratio, 1.0 - clip_range, 1.0 + clip_range) * advantage;
    let loss = -unclipped.min(clipped_objective);
    let gradient_is_zero = (advantage > 0.0 && ratio > 1.0 + clip_range)
        || (advantage < 0.0 && ratio < 1.0 - clip_range);
    Surrogate {
        loss,
        d_log_prob: if gradient_is_zero {
            0.0
        } else {
            -advantage * ratio
        },
        ratio,
        clipped: (ratio - 1.0).abs() > clip_range,
    }
}

/// The low-variance KL estimator `(r − 1) − log r` (Schulman, "Approximating
/// KL divergence", 2020), for `log_ratio = log π − log π_old`. Always `≥ 0`:
/// `r − 1` is [`math::exp_m1`], which stays `≥ log r` in `f32`, where
/// `(e^{log r} − 1) − log r` goes negative for `|log r|` below `f32`'s
/// resolution near 1 (`e^{10⁻⁸}` rounds to 1).
pub fn approx_kl(log_ratio: f32) -> f32 {
    approx_kl_at(log_ratio, math::exp(log_ratio))
}

/// [`approx_kl`] with `ratio = e^{log_ratio}` computed already (the
/// surrogate's [`Surrogate::ratio`]).
#[inline]
pub fn approx_kl_at(log_ratio: f32, ratio: f32) -> f32 {
    math::exp_m1(log_ratio, ratio) - log_ratio
}

/// One sample's KL penalty `β·k₃` and its derivative.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KlPenalty {
    /// `β·((r − 1) − log r)`.
    pub loss: f32,
    /// `∂loss / ∂log π = β·(r − 1)`.
    pub d_log_prob: f32,
}

/// The KL penalty of PPO-penalty (Schulman et al. 2017, eq. 8; notes 001),
/// `β·KL[π_old ‖ π]` estimated per sample by `k₃ = (r − 1) − log r` with
/// `r = π/π_old = e^{log_ratio}` (passed in as `ratio`, computed already by
/// the surrogate) at the action `π_old` took ([`approx_kl`]).
///
/// `k₃` is unbiased for `KL[π_old ‖ π]` under `π_old`'s actions, and so is its
/// gradient: `E_old[(r − 1)∇log π] = Σ_a ∇π(a) − E_old[∇log π] = −E_old[∇log π]
/// = ∇KL[π_old ‖ π]`. It needs only the log-probability the rollout stored, so
/// it works for any head (no stored logits or means), and it is `0` with a
/// zero gradient at `π = π_old`.
pub fn kl_penalty(log_ratio: f32, ratio: f32, beta: f32) -> KlPenalty {
    let r_m1 = math::exp_m1(log_ratio, ratio);
    KlPenalty {
        loss: beta * (r_m1 - log_ratio),
        d_log_prob: beta * r_m1,
    }
}

/// One sample's value loss and its derivative.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ValueLoss {
    /// `½(V − R)²`, or the clipped form.
    pub loss: f32,
    /// `∂loss / ∂V`.
    pub d_value: f32,
}

/// Squared-error value loss against the return `target`, optionally clipped
/// to `clip_range` around `old_value` (the value recorded in the rollout).
pub fn value_loss(value: f32, old_value: f32, target: f32, clip_range: Option<f32>) -> ValueLoss {
    let error = value - target;
    let unclipped = error * error;
    match clip_range {
        None => ValueLoss {
            loss: 0.5 * unclipped,
            d_value: error,
        },
        Some(c) => {
            let delta = value - old_value;
            let v_clipped = old_value + math::clamp(delta, -c, c);
            let clipped_error = v_clipped - target;
            let clipped = clipped_error * clipped_error;
            if unclipped >= clipped {
                ValueLoss {
                    loss: 0.5 * unclipped,
                    d_value: error,
                }
            } else {
                // The clipped branch moves with V only while V_clip = V.
                let inside = delta.abs() <= c;
                ValueLoss {
                    loss: 0.5 * clipped,
                    d_value: if inside { clipped_error } else { 0.0 },
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::{Layer, Mlp, fd, gain};
    use crate::params::Params;
    use crate::policy::Categorical;
    use nalgebra::SVector;
    extern crate std;
    use std::vec::Vec;

    fn reference_clipped(log_prob: f64, old: f64, adv: f64, eps: f64) -> f64 {
        let r = (log_prob - old).exp();
        -(r * adv).min(r.clamp(1.0 - eps, 1.0 + eps) * adv)
    }

    #[test]
    fn gradient_is_zero_exactly_where_the_case_analysis_says() {
        let eps = 0.2;
        for &adv in &[1.5f32, -0.7] {
            for k in 0..=60 {
                let ratio = 0.5 + k as f32 * 0.0172;
                if ((ratio - (1.0 + eps)).abs() < 1e-3) || ((ratio - (1.0 - eps)).abs() < 1e-3) {
                    continue; // the kinks themselves
                }
                let log_ratio = math::ln(ratio);
                let s = clipped_surrogate(log_ratio, 0.0, adv, eps);
                let expect_zero =
                    (adv > 0.0 && ratio > 1.0 + eps) || (adv < 0.0 && ratio < 1.0 - eps);
                assert_eq!(s.d_log_prob == 0.0, expect_zero, "A={adv} r={ratio}");
                let numeric = fd::numerical_gradient(&[log_ratio as f64], |l| {
                    reference_clipped(l[0], 0.0, adv as f64, eps as f64)
                })[0];
                assert!((s.d_log_prob as f64 - numeric).abs() < 1e-3 * numeric.abs().max(1e-3));
                assert!(
                    (s.loss as f64
                        - reference_clipped(log_ratio as f64, 0.0, adv as f64, eps as f64))
                    .abs()
                        < 1e-5
                );
            }
        }
    }

    #[test]
    fn approx_kl_is_non_negative_and_second_order() {
        assert_eq!(approx_kl(0.0), 0.0);
        for l in [-1.0f32, -0.1, 0.05, 0.7] {
            assert!(approx_kl(l) > 0.0);
        }
        assert!((approx_kl(0.01) - 0.5 * 0.01 * 0.01).abs() < 1e-6);
        // Below f32's resolution near 1 (e^x rounds to 1): never negative,
        // and within f32 rounding of x²/2 + x³/6 elsewhere.
        for k in 0..2000 {
            let x = (k as f32 - 1000.0) * 1e-9;
            assert!(approx_kl(x) >= 0.0, "approx_kl({x}) = {}", approx_kl(x));
        }
        for x in [1e-3f32, -1e-3, 3e-2, -3e-2] {
            let x64 = f64::from(x);
            let exact = x64.exp_m1() - x64;
            assert!(
                (f64::from(approx_kl(x)) - exact).abs() <= 1e-3 * exact + 1e-12,
                "{x}"
            );
        }
    }

    /// At the clip boundary itself (`r = 1 ± ε` exactly) both branches of
    /// the minimum agree and CleanRL's convention (`|r − 1| > ε` for the clip
    /// fraction, PyTorch's `clamp` passing the gradient at its bounds) keeps
    /// the unclipped gradient `−Â·r` and does not count the sample as clipped.
    /// Just past the boundary the gradient is zero and the sample clipped.
    #[test]
    fn the_clip_boundary_belongs_to_the_unclipped_side() {
        for log_ratio in [0.2f32, -0.3] {
            let ratio = math::exp(log_ratio);
            // ε with 1 + ε (or 1 − ε) = r exactly: r − 1 is exact (Sterbenz).
            let eps = (ratio - 1.0).abs();
            assert_eq!(
                if log_ratio > 0.0 {
                    1.0 + eps
                } else {
                    1.0 - eps
                },
                ratio
            );
            let advantage = if log_ratio > 0.0 { 1.5 } else { -1.5 };
            let s = clipped_surrogate(log_ratio, 0.0, advantage, eps);
            assert_eq!(s.ratio, ratio);
            assert!(!s.clipped, "{log_ratio}: at the boundary, not clipped");
            assert_eq!(
                s.d_log_prob,
                -advantage * ratio,
                "{log_ratio}: unclipped gradient"
            );
            assert_eq!(s.loss, -advantage * ratio);
            // The bound one ulp of 1 ± ε closer to 1: clipped, zero gradient.
            let tighter = if log_ratio > 0.0 {
                f32::from_bits(ratio.to_bits() - 1) - 1.0
            } else {
                1.0 - f32::from_bits(ratio.to_bits() + 1)
            };
            let s = clipped_surrogate(log_ratio, 0.0, advantage, tighter);
            assert!(
                s.clipped && s.d_log_prob == 0.0,
                "{log_ratio}: past the boundary"
            );
        }
    }

    #[test]
    fn kl_penalty_gradient_matches_finite_differences() {
        let reference = |l: f64, beta: f64| beta * (l.exp_m1() - l);
        for (log_ratio, beta) in [(0.3f32, 0.5f32), (-0.7, 2.0), (1e-3, 3.0), (0.0, 1.0)] {
            let ours = kl_penalty(log_ratio, math::exp(log_ratio), beta);
            let b = f64::from(beta);
            let numeric =
                fd::numerical_gradient(&[f64::from(log_ratio)], |x| reference(x[0], b))[0];
            assert!(
                (f64::from(ours.d_log_prob) - numeric).abs() < 1e-4 * (1.0 + numeric.abs()),
                "{log_ratio} {beta}: {} vs {numeric}",
                ours.d_log_prob
            );
            let exact = reference(f64::from(log_ratio), b);
            assert!((f64::from(ours.loss) - exact).abs() <= 1e-6 * (1.0 + exact));
        }
        assert_eq!(
            kl_penalty(0.0, 1.0, 5.0),
            KlPenalty {
                loss: 0.0,
                d_log_prob: 0.0
            }
        );
    }

    #[test]
    fn value_loss_gradients_match_finite_differences() {
        let reference = |v: f64, old: f64, target: f64, clip: Option<f64>| -> f64 {
            let u = (v - target).powi(2);
            match clip {
                None => 0.5 * u,
                Some(c) => 0.5 * u.max((old + (v - old).clamp(-c, c) - target).powi(2)),
            }
        };
        let cases = [
            (1.0f32, 0.9f32, 0.0f32, None),
            (1.0, 0.9, 0.0, Some(0.2)),  // inside the clip range
            (1.5, 1.0, 1.4, Some(0.2)),  // clipped branch dominates, outside: zero gradient
            (0.2, 1.0, 3.0, Some(0.2)),  // unclipped branch dominates
            (0.9, 1.0, 0.95, Some(0.2)), // inside, both branches equal
            // V − R away from ±1 (where u², |u| and 1/u coincide):
            (3.0, 0.9, 0.5, None),       // V − R = 2.5
            (-0.2, 0.0, 0.1, None),      // V − R = −0.3
            (2.0, 0.0, -1.0, Some(0.5)), // clipped V = 0.5: unclipped 9 > clipped 2.25
            (0.3, 0.0, 2.0, Some(0.1)),  // clipped V = 0.1: clipped 3.61 > unclipped 2.89, outside
        ];
        for (v, old, target, clip) in cases {
            let ours = value_loss(v, old, target, clip);
            let f = |x: &[f64]| reference(x[0], old as f64, target as f64, clip.map(|c| c as f64));
            let numeric = fd::numerical_gradient(&[v as f64], f)[0];
            assert!(
                (ours.d_value as f64 - numeric).abs() < 1e-4,
                "{v} {old} {target} {clip:?}: {} vs {numeric}",
                ours.d_value
            );
            assert!((ours.loss as f64 - f(&[v as f64])).abs() < 1e-6);
        }
    }

    /// PPO's policy loss on a small batch, backpropagated through the categorical
    /// head and an MLP, against finite differences of an f64 reference:
    /// `L(θ) = mean_k surrogate_k − c_ent · mean_k H_k`.
    #[test]
    fn ppo_clipped_loss_gradient_through_network() {
        type Net = Mlp<3, 8, 3>;
        const N: usize = 8;
        let clip = 0.2f32;
        let ent_coef = 0.01f32;
        let mut rng = fd::rng(42);
        let mut net = Net::ZERO;
        net.init_orthogonal(&mut rng, gain::HIDDEN, 1.0);
        fd::randomise_biases(&mut net, &mut rng);

        let obs: [SVector<f32, 3>; N] = core::array::from_fn(|k| {
            SVector::<f32, 3>::new(
                0.3 * k as f32 - 1.0,
                0.5 - 0.1 * k as f32,
                (k % 3) as f32 - 1.0,
            )
        });
        let actions = [0usize, 1, 2, 0, 1, 2, 0, 1];
        let advantages = [1.0f32, -0.8, 0.5, -1.2, 0.9, 1.3, -0.6, 0.4];
        // old log-prob = current + offset, so r = exp(−offset): inside, below and above the clip range.
        let offsets = [0.05f32, -0.05, 0.4, -0.4, 0.1, -0.3, 0.35, -0.1];

        let mut old_log_probs = [0.0f32; N];
        for k in 0..N {
            let dist = Categorical::from_logits(&net.forward(&obs[k])).unwrap();
            old_log_probs[k] = dist.log_prob(actions[k]).unwrap() + offsets[k];
        }

        // Analytic gradient.
        let mut grad = Net::ZERO;
        let mut cache = Net::ZERO_CACHE;
        let mut zero_gradient_samples = 0;
        crate::nn::accumulate_gradients(&net, &mut grad, &mut cache, &obs, |k, logits| {
            let dist = Categorical::from_logits(logits).unwrap();
            let s = clipped_surrogate(
                dist.log_prob(actions[k]).unwrap(),
                old_log_probs[k],
                advantages[k],
                clip,
            );
            if s.d_log_prob == 0.0 {
                zero_gradient_samples += 1;
            }
            let d_logits = dist.grad_log_prob(actions[k]).unwrap() * s.d_log_prob
                - dist.grad_entropy() * ent_coef;
            d_logits / N as f32
        });
        assert!(
            zero_gradient_samples >= 2,
            "batch must exercise both clipped cases"
        );

        // f64 reference.
        let loss = |theta: &[f64]| -> f64 {
            let mut total = 0.0;
            for k in 0..N {
                let x: Vec<f64> = obs[k].iter().map(|&v| v as f64).collect();
                let logits = Net::reference_forward(theta, &x);
                let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let lse = max + logits.iter().map(|l| (l - max).exp()).sum::<f64>().ln();
                let log_p: Vec<f64> = logits.iter().map(|l| l - lse).collect();
                let entropy = -log_p.iter().map(|lp| lp.exp() * lp).sum::<f64>();
                total += reference_clipped(
                    log_p[actions[k]],
                    old_log_probs[k] as f64,
                    advantages[k] as f64,
                    clip as f64,
                ) - ent_coef as f64 * entropy;
            }
            total / N as f64
        };
        let numeric = fd::numerical_gradient(&fd::flatten(&net), loss);
        fd::assert_close("dL_ppo/dθ", &fd::flatten(&grad), &numeric);
    }
}
