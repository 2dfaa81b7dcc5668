//! Diagonal Gaussian over `A` continuous actions with a state-independent,
//! learnable `log_std` (the SB3/CleanRL parametrisation for PPO).
//!
//! The network produces the mean `μ(s)`; [`Gaussian`] holds `log σ` as a
//! parameter tensor of its own. Semantics follow SB3:
//! - the **raw sample** `u = μ + σ ⊙ ε` is what [`Gaussian::log_prob`] refers to
//!   and what a rollout stores;
//! - clipping to the actuator range (the action space's
//!   [`command`](crate::env::ActionSpace::command)) is applied only to the
//!   copy sent to the plant, never to the stored sample;
//! - optional **tanh squashing** maps `u` to `a = tanh(u) ∈ (−1, 1)`, with the
//!   change-of-variables correction
//!   `log π(a) = log 𝒩(u; μ, σ) − Σᵢ ln(1 − tanh² uᵢ)` (Haarnoja et al. 2018,
//!   eq. 21), evaluated as `ln(1 − tanh² u) = 2(ln 2 − u − softplus(−2u))`
//!   so it stays finite for large `|u|`.
//!
//! Gradients (per dimension, `z = (u − μ)/σ`):
//! - `∂ log 𝒩 / ∂μ = z / σ`, `∂ log 𝒩 / ∂log σ = z² − 1`;
//! - `H = Σ (½ + ½ ln 2π + log σ)`, so `∂H/∂log σ = 1`, `∂H/∂μ = 0`.
//!
//! With a fixed raw sample the squashing correction does not depend on `μ` or
//! `σ`, so the squashed log-probability has the same parameter gradient as
//! the unsquashed one. The entropy of a squashed Gaussian has no closed form;
//! [`Gaussian::squashed_entropy_estimate`] gives the single-sample
//! reparameterised estimate with its pathwise gradient.
//!
//! **Domain of `log_std`**: see [`Gaussian`] (actors refuse non-finite
//! results; stored values must lie in [`LOG_STD_MIN`]`..=`[`LOG_STD_MAX`]).

use core::f32::consts::LN_2;

use nalgebra::SVector;
use rand_core::Rng;

use crate::env::Continuous;
use crate::error::Error;
use crate::params::{Params, TensorData, TensorShape, out_of_domain, tag};
use crate::{math, rng};

/// Smallest `log σ` a stored [`Gaussian`] may hold (`σ ≈ 2.1·10⁻⁹`; SB3's
/// lower clamp for SAC).
pub const LOG_STD_MIN: f32 = -20.0;
/// Largest `log σ` a stored [`Gaussian`] may hold (`σ ≈ 4.9·10⁸`; see
/// [`Gaussian`] for why this is wider than SB3's 2).
pub const LOG_STD_MAX: f32 = 20.0;

/// State-independent standard deviation parameters of a diagonal Gaussian.
///
/// **Domain of `log_std`.** The head's functions are plain `f32` maths: for a
/// `log σ` far outside any useful range (e.g. 100, `σ = e¹⁰⁰` overflows) they
/// return infinities or NaN. Two guards keep such values away from callers:
/// - the actor ([`GaussianActor`](crate::policy::GaussianActor)) checks every
///   sample, log-probability and entropy it returns and refuses a non-finite
///   one with [`Error::NonFinite`] — whatever the
///   cause (huge `log σ`, an action of 10³⁰ whose `z²` overflows);
/// - a *stored* `log σ` must lie in [`LOG_STD_MIN`]`..=`[`LOG_STD_MAX`]
///   (`σ ∈ [e⁻²⁰, e²⁰] ≈ [2·10⁻⁹, 5·10⁸]`), checked by
///   [`serialize::load`](crate::serialize::load) and
///   [`serialize::save`](crate::serialize::save) through
///   [`Params::check_values`]. The range is wider than SB3's SAC clamp
///   `[−20, 2]` on purpose: PPO leaves `log σ` unconstrained (as SB3's PPO
///   does) and an actuator in physical units (±12 V) can legitimately need
///   `σ > e²`; within `±20`, `σ`, `1/σ` and `σ²` are all comfortably finite in
///   `f32`, and anything outside is a corrupted file or a diverged run.
#[derive(Clone, Debug, PartialEq)]
pub struct Gaussian<const A: usize> {
    /// `log σ` per action dimension.
    pub log_std: SVector<f32, A>,
}

/// Gradient of a scalar with respect to a Gaussian's `μ` and `log σ`.
#[derive(Clone, Debug, PartialEq)]
pub struct GaussianGrad<const A: usize> {
    /// `∂/∂μ`, to backpropagate through the network that produced the mean.
    pub mean: SVector<f32, A>,
    /// `∂/∂log σ`, to accumulate into the [`Gaussian`]'s gradient.
    pub log_std: SVector<f32, A>,
}

/// `−½ ln 2π`, the per-dimension constant of the Gaussian log-density.
const HALF_LN_2PI: f32 = 0.5 * math::LN_2PI;

/// `ln(1 − tanh² u)` without cancellation: `2(ln 2 − u − softplus(−2u))`.
#[inline]
fn log1m_tanh_sq(u: f32) -> f32 {
    2.0 * (LN_2 - u - math::softplus(-2.0 * u))
}

impl<const A: usize> Gaussian<A> {
    /// A Gaussian with every `log σ` equal to `log_std` (SB3's `log_std_init`, default 0).
    pub fn with_log_std(log_std: f32) -> Self {
        Self {
            log_std: SVector::repeat(log_std),
        }
    }

    /// `σ = exp(log σ)`.
    pub fn std(&self) -> SVector<f32, A> {
        self.log_std.map(math::exp)
    }

    /// Standard normal noise `ε`, one variate per dimension.
    pub fn sample_noise<R: Rng + ?Sized>(rng: &mut R) -> SVector<f32, A> {
        let mut eps = SVector::<f32, A>::zeros();
        rng::fill_normal(rng, eps.as_mut_slice());
        eps
    }

    /// The raw sample `u = μ + σ ⊙ ε` for given noise.
    pub fn raw_from_noise(&self, mean: &SVector<f32, A>, eps: &SVector<f32, A>) -> SVector<f32, A> {
        mean + self.std().component_mul(eps)
    }

    /// Draws a raw sample `u ~ 𝒩(μ, σ²)`.
    pub fn sample<R: Rng + ?Sized>(&self, mean: &SVector<f32, A>, rng: &mut R) -> SVector<f32, A> {
        self.raw_from_noise(mean, &Self::sample_noise(rng))
    }

    /// `log 𝒩(u; μ, σ)` summed over dimensions.
    pub fn log_prob(&self, mean: &SVector<f32, A>, raw: &SVector<f32, A>) -> f32 {
        let mut sum = 0.0;
        for i in 0..A {
            let z = (raw[i] - mean[i]) * math::exp(-self.log_std[i]);
            sum += -0.5 * z * z - self.log_std[i] - HALF_LN_2PI;
        }
        sum
    }

    /// Gradient of [`log_prob`](Self::log_prob) with respect to `μ` and `log σ`.
    pub fn grad_log_prob(&self, mean: &SVector<f32, A>, raw: &SVector<f32, A>) -> GaussianGrad<A> {
        let mut grad = GaussianGrad {
            mean: SVector::zeros(),
            log_std: SVector::zeros(),
        };
        for i in 0..A {
            let inv_std = math::exp(-self.log_std[i]);
            let z = (raw[i] - mean[i]) * inv_std;
            grad.mean[i] = z * inv_std;
            grad.log_std[i] = z * z - 1.0;
        }
        grad
    }

    /// Differential entropy `Σ (½ + ½ ln 2π + log σᵢ)` in nats.
    pub fn entropy(&self) -> f32 {
        self.log_std.iter().map(|&ls| 0.5 + HALF_LN_2PI + ls).sum()
    }

    /// `∂H/∂log σ` (all ones; the entropy does not depend on `μ`).
    pub fn grad_entropy(&self) -> SVector<f32, A> {
        SVector::repeat(1.0)
    }

    /// `a = tanh(u)`, the squashed action in `(−1, 1)`.
    pub fn squash(raw: &SVector<f32, A>) -> SVector<f32, A> {
        raw.map(math::tanh)
    }

    /// `log π(tanh u) = log 𝒩(u; μ, σ) − Σ ln(1 − tanh² uᵢ)`, for a raw sample `u`.
    /// Its gradient with respect to `μ` and `log σ` is
    /// [`grad_log_prob`](Self::grad_log_prob) (the correction depends on `u` only).
    pub fn log_prob_squashed(&self, mean: &SVector<f32, A>, raw: &SVector<f32, A>) -> f32 {
        self.log_prob(mean, raw) - raw.iter().map(|&u| log1m_tanh_sq(u)).sum::<f32>()
    }

    /// Single-sample reparameterised estimate of the squashed policy's entropy,
    /// `Ĥ = H(𝒩) + Σ ln(1 − tanh² uᵢ)` with `u = μ + σ ⊙ ε`.
    pub fn squashed_entropy_estimate(&self, mean: &SVector<f32, A>, eps: &SVector<f32, A>) -> f32 {
        let raw = self.raw_from_noise(mean, eps);
        self.entropy() + raw.iter().map(|&u| log1m_tanh_sq(u)).sum::<f32>()
    }

    /// Pathwise gradient of [`squashed_entropy_estimate`](Self::squashed_entropy_estimate)
    /// for fixed `ε`: `∂Ĥ/∂μᵢ = −2 tanh uᵢ`, `∂Ĥ/∂log σᵢ = 1 − 2 tanh(uᵢ) σᵢ εᵢ`.
    pub fn grad_squashed_entropy_estimate(
        &self,
        mean: &SVector<f32, A>,
        eps: &SVector<f32, A>,
    ) -> GaussianGrad<A> {
        let std = self.std();
        let mut grad = GaussianGrad {
            mean: SVector::zeros(),
            log_std: SVector::zeros(),
        };
        for i in 0..A {
            let d_u = -2.0 * math::tanh(mean[i] + std[i] * eps[i]);
            grad.mean[i] = d_u;
            grad.log_std[i] = 1.0 + d_u * std[i] * eps[i];
        }
        grad
    }
}

impl<const A: usize> Params for Gaussian<A> {
    const TENSORS: usize = 1;
    const LEN: usize = A;
    const ZERO: Self = Self {
        log_std: <SVector<f32, A> as Params>::ZERO,
    };

    #[inline]
    fn tensor(&self, i: usize) -> &[f32] {
        self.log_std.tensor(i)
    }

    #[inline]
    fn tensor_mut(&mut self, i: usize) -> &mut [f32] {
        self.log_std.tensor_mut(i)
    }

    fn shape(i: usize) -> TensorShape {
        let mut shape = <SVector<f32, A> as Params>::shape(i);
        if i == 0 {
            shape.tag = tag::LOG_STD;
        }
        shape
    }

    /// Every `log σ` must lie in [`LOG_STD_MIN`]`..=`[`LOG_STD_MAX`].
    fn check_values<'a>(
        first: usize,
        tensor: &dyn Fn(usize) -> TensorData<'a>,
    ) -> Result<(), Error> {
        if tensor(first)
            .iter()
            .all(|ls| (LOG_STD_MIN..=LOG_STD_MAX).contains(&ls))
        {
            Ok(())
        } else {
            out_of_domain(first, "log_std must lie in [-20, 20]")
        }
    }
}

/// Where [`mean_bound_loss`] starts: 1.1 half-ranges from the actuator
/// range's centre, 10 % of the half-range beyond each bound (rl_games'
/// `soft_bound`).
pub const SOFT_BOUND: f32 = 1.1;

/// The bound loss on a Gaussian mean `μ` for the actuator range `space`
/// (rl_games' `bound_loss`, in the range's own units):
/// `L = Σᵢ eᵢ²` with `xᵢ = (μᵢ − cᵢ)/wᵢ` (`cᵢ`, `wᵢ` the range's centre and
/// half-width), `eᵢ = max(xᵢ − b, 0) + min(xᵢ + b, 0)` and `b` =
/// [`SOFT_BOUND`]; returns `(L, ∂L/∂μ)` with `∂L/∂μᵢ = 2eᵢ/wᵢ`.
///
/// Zero, with a zero gradient, while the mean lies within `b` half-ranges of
/// the centre. Clipping makes every command past a bound the same, so the
/// policy gradient cannot tell the mean where it is once it has left the
/// range; this term pulls it back, with a gradient that grows with the
/// distance instead of vanishing. A dimension whose range is degenerate
/// (`low ≥ high`), unbounded (an infinite half-width) or NaN contributes
/// nothing.
pub fn mean_bound_loss<const A: usize>(
    space: &Continuous<A>,
    mean: &SVector<f32, A>,
) -> (f32, SVector<f32, A>) {
    let mut loss = 0.0f32;
    let mut d_mean = SVector::<f32, A>::zeros();
    for i in 0..A {
        let half = 0.5 * (space.high[i] - space.low[i]);
        // A NaN or empty range is skipped; an infinite one gives `x` = NaN
        // (or 0), so no excess.
        if half.is_nan() || half <= 0.0 {
            continue;
        }
        let centre = 0.5 * (space.high[i] + space.low[i]);
        let x = (mean[i] - centre) / half;
        let excess = (x - SOFT_BOUND).max(0.0) + (x + SOFT_BOUND).min(0.0);
        loss += excess * excess;
        d_mean[i] = 2.0 * excess / half;
    }
    (loss, d_mean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::fd;
    extern crate std;
    use std::vec::Vec;

    const A: usize = 3;

    fn setup() -> (Gaussian<A>, SVector<f32, A>, SVector<f32, A>) {
        let head = Gaussian {
            log_std: SVector::<f32, A>::new(-0.5, 0.2, 0.0),
        };
        let mean = SVector::<f32, A>::new(0.3, -1.1, 0.8);
        let raw = SVector::<f32, A>::new(0.9, -0.4, 1.7);
        (head, mean, raw)
    }

    /// θ = [μ; log σ] as f64.
    fn theta(head: &Gaussian<A>, mean: &SVector<f32, A>) -> Vec<f64> {
        mean.iter()
            .chain(head.log_std.iter())
            .map(|&x| x as f64)
            .collect()
    }

    fn reference_log_prob(theta: &[f64], raw: &[f64]) -> f64 {
        (0..A)
            .map(|i| {
                let (mu, ls) = (theta[i], theta[A + i]);
                let z = (raw[i] - mu) / ls.exp();
                -0.5 * z * z - ls - 0.5 * (2.0 * core::f64::consts::PI).ln()
            })
            .sum()
    }

    fn reference_log1m_tanh_sq(u: f64) -> f64 {
        (1.0 - libm::tanh(u).powi(2)).ln()
    }

    fn flat(grad: &GaussianGrad<A>) -> Vec<f64> {
        grad.mean
            .iter()
            .chain(grad.log_std.iter())
            .map(|&x| x as f64)
            .collect()
    }

    #[test]
    fn grad_log_prob_matches_finite_differences() {
        let (head, mean, raw) = setup();
        let raw64: Vec<f64> = raw.iter().map(|&x| x as f64).collect();
        let numeric =
            fd::numerical_gradient(&theta(&head, &mean), |t| reference_log_prob(t, &raw64));
        fd::assert_close("dlogp", &flat(&head.grad_log_prob(&mean, &raw)), &numeric);
        let value = reference_log_prob(&theta(&head, &mean), &raw64);
        assert!((head.log_prob(&mean, &raw) as f64 - value).abs() < 1e-5);
    }

    #[test]
    fn squashed_log_prob_matches_reference_and_gradient() {
        let (head, mean, raw) = setup();
        let raw64: Vec<f64> = raw.iter().map(|&x| x as f64).collect();
        let squashed = |t: &[f64]| -> f64 {
            reference_log_prob(t, &raw64)
                - raw64
                    .iter()
                    .map(|&u| reference_log1m_tanh_sq(u))
                    .sum::<f64>()
        };
        let value = squashed(&theta(&head, &mean));
        assert!((head.log_prob_squashed(&mean, &raw) as f64 - value).abs() < 1e-5);
        let numeric = fd::numerical_gradient(&theta(&head, &mean), squashed);
        fd::assert_close(
            "dlogp_squashed",
            &flat(&head.grad_log_prob(&mean, &raw)),
            &numeric,
        );
    }

    #[test]
    fn squash_correction_is_finite_for_large_raw_samples() {
        let head = Gaussian::<1>::ZERO;
        let mean = SVector::<f32, 1>::new(0.0);
        for u in [-60.0f32, -20.0, 20.0, 60.0] {
            let lp = head.log_prob_squashed(&mean, &SVector::<f32, 1>::new(u));
            assert!(lp.is_finite(), "u = {u}: {lp}");
        }
        assert!((log1m_tanh_sq(0.5) as f64 - reference_log1m_tanh_sq(0.5)).abs() < 1e-6);
    }

    #[test]
    fn entropy_closed_form_and_gradient() {
        let (head, _, _) = setup();
        let reference = |t: &[f64]| -> f64 {
            (0..A)
                .map(|i| 0.5 + 0.5 * (2.0 * core::f64::consts::PI).ln() + t[A + i])
                .sum()
        };
        let zero_mean = SVector::<f32, A>::zeros();
        let value = reference(&theta(&head, &zero_mean));
        assert!((head.entropy() as f64 - value).abs() < 1e-6);
        // Closed form ½ ln((2πe)^A |Σ|) for σ = (e^-0.5, e^0.2, 1).
        let det: f64 = head.std().iter().map(|&s| (s as f64).powi(2)).product();
        let closed =
            0.5 * ((2.0 * core::f64::consts::PI * core::f64::consts::E).powi(A as i32) * det).ln();
        assert!((head.entropy() as f64 - closed).abs() < 1e-5);
        let numeric = fd::numerical_gradient(&theta(&head, &zero_mean), reference);
        let analytic: Vec<f64> = [0.0; A]
            .iter()
            .copied()
            .chain(head.grad_entropy().iter().map(|&x| x as f64))
            .collect();
        // ∂H/∂μ is exactly zero: compare the log σ part only.
        fd::assert_close("dH/dlogσ", &analytic[A..], &numeric[A..]);
        assert!(numeric[..A].iter().all(|g| g.abs() < 1e-9));
    }

    #[test]
    fn squashed_entropy_estimate_gradient() {
        let (head, mean, _) = setup();
        let eps = SVector::<f32, A>::new(0.4, -1.3, 0.7);
        let eps64: Vec<f64> = eps.iter().map(|&x| x as f64).collect();
        let reference = |t: &[f64]| -> f64 {
            (0..A)
                .map(|i| {
                    let u = t[i] + t[A + i].exp() * eps64[i];
                    0.5 + 0.5 * (2.0 * core::f64::consts::PI).ln()
                        + t[A + i]
                        + reference_log1m_tanh_sq(u)
                })
                .sum()
        };
        let t = theta(&head, &mean);
        assert!((head.squashed_entropy_estimate(&mean, &eps) as f64 - reference(&t)).abs() < 1e-5);
        let numeric = fd::numerical_gradient(&t, reference);
        fd::assert_close(
            "dĤ",
            &flat(&head.grad_squashed_entropy_estimate(&mean, &eps)),
            &numeric,
        );
    }

    #[test]
    fn sample_moments_within_one_percent() {
        let head = Gaussian::<2> {
            log_std: SVector::<f32, 2>::new(math::ln(0.5), math::ln(2.0)),
        };
        let mean = SVector::<f32, 2>::new(1.5, -3.0);
        let mut rng = fd::rng(99);
        let n = 100_000;
        let (mut sum, mut sum_sq) = ([0.0f64; 2], [0.0f64; 2]);
        for _ in 0..n {
            let u = head.sample(&mean, &mut rng);
            for i in 0..2 {
                sum[i] += u[i] as f64;
                sum_sq[i] += (u[i] as f64).powi(2);
            }
        }
        for i in 0..2 {
            let m = sum[i] / n as f64;
            let var = sum_sq[i] / n as f64 - m * m;
            let target_var = (head.std()[i] as f64).powi(2);
            assert!(
                (m - mean[i] as f64).abs() < 0.01 * (mean[i] as f64).abs(),
                "mean {m}"
            );
            assert!(
                (var - target_var).abs() < 0.01 * target_var,
                "variance {var} vs {target_var}"
            );
        }
    }

    /// The `log_std` tensor is tagged as such (the policy file's header
    /// and the importers rely on it).
    #[test]
    fn log_std_is_tagged() {
        assert_eq!(Gaussian::<2>::shape(0).tag, tag::LOG_STD);
        assert_eq!(Gaussian::<2>::shape(0).rows, 2);
    }

    #[test]
    fn stored_log_std_must_lie_in_its_range() {
        let mut head = Gaussian::<2>::with_log_std(LOG_STD_MIN);
        assert_eq!(head.check_domain(), Ok(()));
        head.log_std[1] = LOG_STD_MAX;
        assert_eq!(head.check_domain(), Ok(()));
        for bad in [LOG_STD_MAX + 0.01, LOG_STD_MIN - 0.01, 100.0, f32::NAN] {
            head.log_std[1] = bad;
            assert!(
                matches!(
                    head.check_domain(),
                    Err(Error::OutOfDomain { tensor: 0, .. })
                ),
                "log_std {bad} accepted"
            );
        }
        // Within the range, every head quantity is finite for O(1) inputs.
        for ls in [LOG_STD_MIN, LOG_STD_MAX] {
            let head = Gaussian::<1>::with_log_std(ls);
            let (mean, raw) = (SVector::<f32, 1>::new(1.0), SVector::<f32, 1>::new(-1.0));
            assert!(head.log_prob(&mean, &raw).is_finite());
            assert!(head.entropy().is_finite());
            assert!(head.std()[0].is_finite() && head.std()[0] > 0.0);
            let g = head.grad_log_prob(&mean, &raw);
            assert!(g.mean[0].is_finite() && g.log_std[0].is_finite());
        }
    }

    #[test]
    fn the_bound_loss_skips_degenerate_and_unbounded_ranges() {
        let space = Continuous {
            low: [0.5, f32::NEG_INFINITY, 0.0, -1.0, f32::NAN],
            high: [0.5, f32::INFINITY, f32::INFINITY, 1.0, 1.0],
        };
        let mean = SVector::<f32, 5>::from_element(2.0);
        let (loss, d_mean) = mean_bound_loss(&space, &mean);
        // Only the [−1, 1] dimension: e = 2 − 1.1, L = e², ∂L/∂μ = 2e/1.
        let e = 2.0 - SOFT_BOUND;
        assert_eq!(loss, e * e);
        assert_eq!(d_mean, SVector::<f32, 5>::new(0.0, 0.0, 0.0, 2.0 * e, 0.0));
        // Inside the soft bound: nothing; below it: the mirror image.
        let inside = mean_bound_loss(&space, &SVector::from_element(-1.05));
        assert_eq!(inside, (0.0, SVector::zeros()));
        let (below, d_below) = mean_bound_loss(&space, &SVector::from_element(-2.0));
        assert_eq!((below, d_below[3]), (e * e, -2.0 * e));
    }

    #[test]
    fn clipping_applies_only_to_the_copy() {
        let raw = SVector::<f32, 3>::new(-3.0, 0.5, 7.0);
        use crate::env::{ActionSpace, Continuous};
        let sent = Continuous::<3>::symmetric(1.0).command(&raw);
        assert_eq!(sent, SVector::<f32, 3>::new(-1.0, 0.5, 1.0));
        assert_eq!(raw[2], 7.0);
    }
}
