//! Categorical distribution over `A` discrete actions, parametrised by logits.
//!
//! [`Categorical::from_logits`] computes the log-softmax once with the max
//! subtracted (`log pᵢ = (lᵢ − m) − ln Σⱼ e^{lⱼ − m}`), so logits of ±10⁴ give
//! exact zeros and ones, never NaN; everything else (sampling, `log_prob`,
//! entropy and their gradients with respect to the logits) reads those
//! log-probabilities.
//!
//! **Every log-probability is finite**, for every finite logit vector: the
//! difference `lᵢ − m` of two finite logits can overflow (`f32::MIN −
//! f32::MAX = −∞`), so it saturates at `−f32::MAX`, the most negative finite
//! `f32` — a probability that underflows to exactly 0 either way. A
//! zero-probability term of the entropy is then `0 · (−f32::MAX) = 0`, its
//! limit, instead of `0 · (−∞) = NaN`, so the entropy and its gradient are
//! finite too.
//!
//! Gradients with respect to the logits `l`:
//! - `∂ log p_a / ∂l = onehot(a) − p`
//! - `∂H / ∂lⱼ = −pⱼ (log pⱼ + H)` where `H = −Σ pᵢ log pᵢ`.

use nalgebra::SVector;
use rand_core::Rng;

use crate::error::{Error, check_all_finite};
use crate::{math, rng};

/// How far below the largest logit an earlier one must be for
/// [`Categorical::mode_of_logits`] to skip the log-softmax: five times the
/// widest gap at which rounding can tie two log-probabilities (half an ulp of
/// `ln A < 64`, below `2e-6`).
pub const NEAR_TIE: f32 = 1e-5;

/// A categorical distribution, stored as its log-probabilities.
#[derive(Clone, Debug, PartialEq)]
pub struct Categorical<const A: usize> {
    log_probs: SVector<f32, A>,
}

impl<const A: usize> Categorical<A> {
    /// The distribution `softmax(logits)`.
    ///
    /// # Errors
    /// [`Error::NonFinite`] if a logit is NaN or infinite.
    pub fn from_logits(logits: &SVector<f32, A>) -> Result<Self, Error> {
        check_all_finite(logits.as_slice())?;
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let sum: f32 = logits.iter().map(|&l| math::exp(l - max)).sum();
        // Subtract the max first: `(l − m)` is exact for nearby logits, whereas
        // `l − (m + ln Σ)` would lose the small `ln Σ` to rounding when |m| is large.
        let log_sum = math::ln(sum);
        // `l − m` overflows to −∞ only for logits more than f32::MAX apart;
        // saturating keeps log p finite (the probability is 0 either way).
        // `max(−f32::MAX)` is exact for every finite difference, and
        // `−f32::MAX − ln Σ` rounds back to −f32::MAX (ln Σ ≤ ln A is tiny).
        Ok(Self {
            log_probs: logits.map(|l| (l - max).max(-f32::MAX) - log_sum),
        })
    }

    /// `log pᵢ` for every action.
    pub fn log_probs(&self) -> &SVector<f32, A> {
        &self.log_probs
    }

    /// `pᵢ` for every action (they sum to 1 up to rounding).
    pub fn probs(&self) -> SVector<f32, A> {
        self.log_probs.map(math::exp)
    }

    /// `log p_a`.
    ///
    /// # Errors
    /// [`Error::InvalidAction`] if `action >= A`.
    pub fn log_prob(&self, action: usize) -> Result<f32, Error> {
        self.log_probs
            .get(action)
            .copied()
            .ok_or(Error::InvalidAction)
    }

    /// Entropy `H = −Σ pᵢ log pᵢ` in nats. Finite: every `log pᵢ` is, so a
    /// term with `pᵢ = 0` is `0 · log pᵢ = 0` (its limit), never `0 · (−∞)`.
    pub fn entropy(&self) -> f32 {
        entropy_of(&self.probs(), &self.log_probs)
    }

    /// The most probable action (the lowest index among ties): the
    /// deterministic action used for evaluation and deployment.
    pub fn mode(&self) -> usize {
        self.log_probs.argmax().0
    }

    /// `Categorical::from_logits(logits)?.mode()`, the same action, without
    /// the log-softmax when no earlier logit is near the largest.
    ///
    /// Why it is the same action: `log pᵢ = fl(fl(lᵢ − m) − L)` with
    /// `L = ln Σ e^{lⱼ − m} ∈ [0, ln A]`. The first largest logit `i*` has
    /// `log p_{i*} = −L`, the largest log-probability, since rounding is
    /// monotone; an earlier `i` (with `lᵢ < m`, so `fl(lᵢ − m) < 0`) ties with
    /// it only if `fl(lᵢ − m) − L` rounds to `−L`, i.e. if `m − lᵢ` is at most
    /// half an ulp of `L` (below `2e-6` for any `L < 64`). When every earlier
    /// logit is more than [`NEAR_TIE`] below the largest the answer is `i*`;
    /// otherwise the log-softmax decides, as `mode` does. Later logits cannot
    /// take the lowest index.
    ///
    /// # Errors
    /// [`Error::NonFinite`] if a logit is NaN or infinite.
    pub fn mode_of_logits(logits: &SVector<f32, A>) -> Result<usize, Error> {
        check_all_finite(logits.as_slice())?;
        let (first, max) = logits.argmax();
        if logits.iter().take(first).all(|&l| max - l > NEAR_TIE) {
            Ok(first)
        } else {
            Ok(Self::from_logits(logits)?.mode())
        }
    }

    /// Draws an action by inverting the cumulative distribution with one
    /// uniform variate. Never returns an action of probability zero.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> usize {
        let u = rng::uniform(rng);
        let mut cumulative = 0.0;
        let mut last_possible = self.mode();
        for (i, &lp) in self.log_probs.iter().enumerate() {
            let p = math::exp(lp);
            if p > 0.0 {
                cumulative += p;
                last_possible = i;
                if u < cumulative {
                    return i;
                }
            }
        }
        // Rounding left the cumulative sum just below u.
        last_possible
    }

    /// `∂ log p_a / ∂logits = onehot(a) − p`.
    ///
    /// # Errors
    /// [`Error::InvalidAction`] if `action >= A`.
    pub fn grad_log_prob(&self, action: usize) -> Result<SVector<f32, A>, Error> {
        if action >= A {
            return Err(Error::InvalidAction);
        }
        let mut grad = -self.probs();
        grad[action] += 1.0;
        Ok(grad)
    }

    /// `∂H / ∂logits`, with `∂H/∂lⱼ = −pⱼ (log pⱼ + H)` (finite: every
    /// `log pⱼ` is).
    pub fn grad_entropy(&self) -> SVector<f32, A> {
        let entropy = self.entropy();
        self.log_probs.map(|lp| -math::exp(lp) * (lp + entropy))
    }

    /// `∂L/∂logits = d_log_prob · ∂ log p_a/∂logits + d_entropy · ∂H/∂logits`,
    /// the chain rule through a loss `L(log p_a, H)`: the same bits as
    /// `grad_log_prob(action)? * d_log_prob + grad_entropy() * d_entropy`,
    /// with `pᵢ = e^{log pᵢ}` computed once instead of three times (the
    /// exponentials are most of a policy head's cost in an update).
    ///
    /// # Errors
    /// [`Error::InvalidAction`] if `action >= A`.
    pub fn d_logits(
        &self,
        action: usize,
        d_log_prob: f32,
        d_entropy: f32,
    ) -> Result<SVector<f32, A>, Error> {
        if action >= A {
            return Err(Error::InvalidAction);
        }
        let p = self.probs();
        let entropy = entropy_of(&p, &self.log_probs);
        Ok(d_logits_at(
            &self.log_probs,
            &p,
            entropy,
            action,
            d_log_prob,
            d_entropy,
        ))
    }
}

/// `H = −Σ pᵢ log pᵢ` from `p` and `log p` ([`Categorical::entropy`] with
/// `p` = [`Categorical::probs`]; the batched head passes the `p` it keeps).
pub(crate) fn entropy_of<const A: usize>(p: &SVector<f32, A>, log_probs: &SVector<f32, A>) -> f32 {
    -p.iter()
        .zip(log_probs.iter())
        .map(|(&pi, &lp)| pi * lp)
        .sum::<f32>()
}

/// Samples per block of [`heads_of`]: each per-sample quantity of a block
/// is one vector (16 floats: one AVX-512 register, two AVX ones). On a
/// Cortex-M, which has no SIMD and trains in chunks of one sample, 1: the
/// per-sample loop, in less flash.
const HEAD_BLOCK: usize = if cfg!(target_arch = "arm") { 1 } else { 16 };

/// [`Categorical::from_logits`], [`Categorical::probs`] and [`entropy_of`]
/// for a batch of samples: `log_probs[k]`, `probs[k]` and `entropies[k]` of
/// `logits[k]`, for `k < logits.len()` (the other slices at least as long).
///
/// The same operations on every number as the per-sample functions, in
/// the same order — the max as `fold(−∞, f32::max)`, `Σ e^{lᵢ − m}` from
/// `i = 0`, the entropy's sum from `−0.0` as `Iterator::sum` — so the same
/// bits; only the loops are turned around: each block of [`HEAD_BLOCK`]
/// samples is transposed to one row per action, so every step (`max`,
/// `exp`, the subtractions, the products) is one vector operation over the
/// block's samples instead of a scalar one per sample. `ln Σ` stays scalar
/// (libm's `logf`). Logits that are not all finite give unspecified values
/// for their sample (the caller refuses those: `from_logits`' check).
pub(crate) fn heads_of<const A: usize>(
    logits: &[SVector<f32, A>],
    log_probs: &mut [SVector<f32, A>],
    probs: &mut [SVector<f32, A>],
    entropies: &mut [f32],
) {
    const T: usize = HEAD_BLOCK;
    let blocks = logits
        .chunks(T)
        .zip(log_probs.chunks_mut(T))
        .zip(probs.chunks_mut(T))
        .zip(entropies.chunks_mut(T));
    for (((logits, log_probs), probs), entropies) in blocks {
        // l[i][t]: logit i of sample t (zero past the block's samples).
        let mut l = [[0.0f32; T]; A];
        for (t, lt) in logits.iter().enumerate() {
            for (li, &x) in l.iter_mut().zip(lt.iter()) {
                li[t] = x;
            }
        }
        let mut m = [f32::NEG_INFINITY; T];
        for li in &l {
            for (mt, &x) in m.iter_mut().zip(li) {
                *mt = mt.max(x);
            }
        }
        let mut sum = [-0.0f32; T];
        for li in &l {
            for ((st, &x), &mt) in sum.iter_mut().zip(li).zip(&m) {
                *st += math::exp(x - mt);
            }
        }
        let log_sum: [f32; T] = core::array::from_fn(|t| math::ln(sum[t]));
        let mut lp = [[0.0f32; T]; A];
        let mut p = [[0.0f32; T]; A];
        let mut minus_h = [-0.0f32; T];
        for ((lpi, pi), li) in lp.iter_mut().zip(p.iter_mut()).zip(&l) {
            for t in 0..T {
                lpi[t] = (li[t] - m[t]).max(-f32::MAX) - log_sum[t];
                pi[t] = math::exp(lpi[t]);
                minus_h[t] += pi[t] * lpi[t];
            }
        }
        let samples = log_probs
            .iter_mut()
            .zip(probs.iter_mut())
            .zip(entropies.iter_mut());
        for (t, ((lpt, pt), ht)) in samples.enumerate() {
            for (i, (lpti, pti)) in lpt.iter_mut().zip(pt.iter_mut()).enumerate() {
                *lpti = lp[i][t];
                *pti = p[i][t];
            }
            *ht = -minus_h[t];
        }
    }
}

/// [`Categorical::d_logits`]'s chain rule given the distribution's `log p`,
/// `p` and `H` (`action < A`):
/// `(onehot(a) − p)·d_log_prob + (−p ⊙ (log p + H))·d_entropy`.
pub(crate) fn d_logits_at<const A: usize>(
    log_probs: &SVector<f32, A>,
    p: &SVector<f32, A>,
    entropy: f32,
    action: usize,
    d_log_prob: f32,
    d_entropy: f32,
) -> SVector<f32, A> {
    SVector::from_fn(|i, _| {
        let d_lp = if i == action { -p[i] + 1.0 } else { -p[i] };
        d_lp * d_log_prob + (-p[i] * (log_probs[i] + entropy)) * d_entropy
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::fd;
    extern crate std;
    use std::vec::Vec;

    /// `mode_of_logits` is `from_logits(..).mode()` on random logits, on
    /// huge ones, and on earlier logits a few ulps below the largest, where
    /// the log-softmax's rounding ties them (and then the earlier one wins).
    #[test]
    fn mode_of_logits_is_the_mode_of_the_distribution() {
        fn agree<const A: usize>(logits: SVector<f32, A>) -> bool {
            let full = Categorical::from_logits(&logits).unwrap().mode();
            assert_eq!(Categorical::mode_of_logits(&logits), Ok(full), "{logits:?}");
            full == logits.argmax().0
        }
        let mut rng = fd::rng(4);
        for scale in [1e-3f32, 1.0, 30.0, 1e4, 1e30] {
            for _ in 0..2_000 {
                let mut l = SVector::<f32, 4>::zeros();
                rng::fill_normal(&mut rng, l.as_mut_slice());
                agree(l * scale);
                let mut l = SVector::<f32, 2>::zeros();
                rng::fill_normal(&mut rng, l.as_mut_slice());
                agree(l * scale);
            }
        }
        // Near ties: an earlier logit k ulps below a later largest one.
        let mut earlier_won = 0;
        for m in [1.0f32, 0.3, -2.5, 17.0, 1e-4] {
            let mut l0 = m;
            for _ in 0..64 {
                l0 = f32::from_bits(if l0 > 0.0 {
                    l0.to_bits() - 1
                } else {
                    l0.to_bits() + 1
                });
                earlier_won += usize::from(!agree(SVector::<f32, 2>::new(l0, m)));
                earlier_won += usize::from(!agree(SVector::<f32, 4>::new(-9.0, l0, m, l0)));
                agree(SVector::<f32, 3>::new(m, l0, m));
            }
            for d in [0.5 * NEAR_TIE, NEAR_TIE, 2.0 * NEAR_TIE] {
                agree(SVector::<f32, 2>::new(m - d, m));
            }
        }
        assert!(earlier_won > 0, "no near tie where the log-softmax decides");
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let logits = SVector::<f32, 3>::new(0.0, bad, 1.0);
            assert_eq!(Categorical::mode_of_logits(&logits), Err(Error::NonFinite));
        }
    }

    fn reference_log_softmax(logits: &[f64]) -> Vec<f64> {
        let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lse = max + logits.iter().map(|l| (l - max).exp()).sum::<f64>().ln();
        logits.iter().map(|l| l - lse).collect()
    }

    fn logits() -> SVector<f32, 5> {
        SVector::<f32, 5>::new(0.3, -1.2, 2.0, 0.0, -0.4)
    }

    fn to64(v: &SVector<f32, 5>) -> Vec<f64> {
        v.iter().map(|&x| x as f64).collect()
    }

    #[test]
    fn grad_log_prob_matches_finite_differences() {
        let dist = Categorical::from_logits(&logits()).unwrap();
        for action in 0..5 {
            let numeric =
                fd::numerical_gradient(&to64(&logits()), |l| reference_log_softmax(l)[action]);
            fd::assert_close(
                "dlogp/dl",
                &to64(&dist.grad_log_prob(action).unwrap()),
                &numeric,
            );
        }
    }

    /// `d_logits` is the composed expression it replaces, bit for bit.
    #[test]
    fn d_logits_is_the_chain_rule_through_both_gradients_bit_for_bit() {
        let mut rng = fd::rng(21);
        for scale in [1e-3f32, 1.0, 30.0, 1e4] {
            for _ in 0..500 {
                let mut logits = SVector::<f32, 5>::zeros();
                crate::rng::fill_normal(&mut rng, logits.as_mut_slice());
                let dist = Categorical::from_logits(&(logits * scale)).unwrap();
                let mut d = [0.0f32; 2];
                crate::rng::fill_normal(&mut rng, &mut d);
                for action in 0..5 {
                    let composed =
                        dist.grad_log_prob(action).unwrap() * d[0] + dist.grad_entropy() * d[1];
                    let fused = dist.d_logits(action, d[0], d[1]).unwrap();
                    let bits = |v: &SVector<f32, 5>| v.map(f32::to_bits);
                    assert_eq!(bits(&fused), bits(&composed), "{logits:?} × {scale}");
                }
            }
        }
        assert_eq!(
            dist_of_zeros().d_logits(5, 1.0, 0.0),
            Err(Error::InvalidAction)
        );
    }

    fn dist_of_zeros() -> Categorical<5> {
        Categorical::from_logits(&SVector::zeros()).unwrap()
    }

    #[test]
    fn grad_entropy_matches_finite_differences() {
        let dist = Categorical::from_logits(&logits()).unwrap();
        let entropy = |l: &[f64]| -> f64 {
            -reference_log_softmax(l)
                .iter()
                .map(|lp| lp.exp() * lp)
                .sum::<f64>()
        };
        let numeric = fd::numerical_gradient(&to64(&logits()), entropy);
        fd::assert_close("dH/dl", &to64(&dist.grad_entropy()), &numeric);
        assert!((dist.entropy() as f64 - entropy(&to64(&logits()))).abs() < 1e-6);
    }

    #[test]
    fn extreme_logits_are_stable() {
        for logits in [
            SVector::<f32, 4>::new(1e4, -1e4, 0.0, 1e4),
            SVector::<f32, 4>::new(-1e4, -1e4, -1e4, -1e4),
            SVector::<f32, 4>::new(1e4, 1e4, 1e4, 1e4),
            SVector::<f32, 4>::new(-1e4, 1e4, -1e4, -1e4),
        ] {
            let dist = Categorical::from_logits(&logits).unwrap();
            let probs = dist.probs();
            assert!(probs.iter().all(|p| p.is_finite() && *p >= 0.0));
            assert!((probs.sum() - 1.0).abs() < 1e-6, "{probs:?}");
            assert!(dist.entropy().is_finite());
            assert!(dist.grad_entropy().iter().all(|g| g.is_finite()));
            assert!(dist.grad_log_prob(0).unwrap().iter().all(|g| g.is_finite()));
            let mut rng = fd::rng(1);
            for _ in 0..100 {
                assert!(probs[dist.sample(&mut rng)] > 0.0);
            }
        }
        let dist = Categorical::from_logits(&SVector::<f32, 2>::new(-1e4, 1e4)).unwrap();
        assert_eq!(dist.mode(), 1);
        assert_eq!(dist.log_prob(1).unwrap(), 0.0);
    }

    /// Logits more than `f32::MAX` apart: `l − m` overflows to −∞, and the
    /// entropy used to be `0 · (−∞) = NaN`.
    #[test]
    fn extreme_finite_logits_give_finite_log_probs_and_entropy() {
        for logits in [
            SVector::<f32, 3>::new(f32::MAX, f32::MIN, 0.0),
            SVector::<f32, 3>::new(f32::MIN, f32::MIN, f32::MAX),
            SVector::<f32, 3>::new(f32::MIN, 0.0, f32::MIN),
            SVector::<f32, 3>::new(f32::MAX, f32::MAX, f32::MIN),
        ] {
            let dist = Categorical::from_logits(&logits).unwrap();
            assert!(
                dist.log_probs()
                    .iter()
                    .all(|lp| lp.is_finite() && *lp <= 0.0),
                "{logits:?}: {:?}",
                dist.log_probs()
            );
            let h = dist.entropy();
            assert!(h.is_finite() && h >= 0.0, "{logits:?}: H = {h}");
            assert!(dist.grad_entropy().iter().all(|g| g.is_finite()));
            for a in 0..3 {
                assert!(dist.grad_log_prob(a).unwrap().iter().all(|g| g.is_finite()));
            }
            assert!((dist.probs().sum() - 1.0).abs() < 1e-6);
        }
        let dist = Categorical::from_logits(&SVector::<f32, 2>::new(f32::MAX, f32::MIN)).unwrap();
        assert_eq!(dist.log_prob(0).unwrap(), 0.0);
        assert_eq!(dist.log_prob(1).unwrap(), -f32::MAX);
        assert_eq!(dist.entropy(), 0.0);
        // Two equal extremes share the mass.
        let dist = Categorical::from_logits(&SVector::<f32, 3>::new(f32::MAX, f32::MIN, f32::MAX))
            .unwrap();
        assert!((dist.entropy() - math::ln(2.0)).abs() < 1e-6);
    }

    #[test]
    fn rejects_bad_inputs() {
        assert_eq!(
            Categorical::from_logits(&SVector::<f32, 2>::new(f32::NAN, 0.0)),
            Err(Error::NonFinite)
        );
        let dist = Categorical::from_logits(&SVector::<f32, 2>::zeros()).unwrap();
        assert_eq!(dist.log_prob(2), Err(Error::InvalidAction));
        assert_eq!(dist.grad_log_prob(7), Err(Error::InvalidAction));
    }

    #[test]
    fn sample_frequencies_match_probabilities() {
        let dist = Categorical::from_logits(&SVector::<f32, 3>::new(0.0, 1.0, -1.0)).unwrap();
        let probs = dist.probs();
        let mut rng = fd::rng(2);
        let mut counts = [0u32; 3];
        let n = 100_000;
        for _ in 0..n {
            counts[dist.sample(&mut rng)] += 1;
        }
        for a in 0..3 {
            assert!(
                (counts[a] as f32 / n as f32 - probs[a]).abs() < 0.005,
                "{counts:?} vs {probs:?}"
            );
        }
    }

    #[test]
    fn uniform_entropy_is_ln_a() {
        let dist = Categorical::from_logits(&SVector::<f32, 6>::repeat(3.0)).unwrap();
        assert!((dist.entropy() - math::ln(6.0)).abs() < 1e-6);
    }
}
