//! Running observation normalisation, saved with the policy.
//!
//! [`RunningNorm`] keeps a per-dimension running mean and variance and maps an
//! observation to `clip((x − μ) / √(σ² + ε), −c, c)`, the transformation of
//! Gymnasium's `NormalizeObservation` wrapper that SB3 and CleanRL use for
//! PPO. Design:
//! - **Update and use are separate.** [`RunningNorm::update`] folds one
//!   observation into the statistics; [`RunningNorm::normalize`] only reads
//!   them. Training calls both, evaluation and deployment only `normalize`:
//!   freezing the statistics is simply not updating them, so a deployed copy
//!   needs no flag and no mutable access.
//! - **It is part of the policy.** The statistics implement [`Params`] with the
//!   [`STATISTICS`](crate::params::tag::STATISTICS) tag, so they serialise next
//!   to the weights ([`Policy`](crate::policy::Policy)) and a policy can
//!   never be deployed with someone else's normaliser.
//! - **Same update as Gymnasium.** Chan et al.'s parallel variance update with a
//!   batch of one, starting from `count = 1e-4, μ = 0, σ² = 1` (Gymnasium's
//!   `RunningMeanStd`), computed in `f32` so it runs on an FPU-only MCU.
//! - **Empty is the identity.** [`RunningNorm::ZERO`] (count 0, every byte
//!   zero, so it can sit in `.bss`) holds no statistics and
//!   [`normalize`](RunningNorm::normalize) passes observations through
//!   unchanged and unclipped; the first [`update`](RunningNorm::update) starts
//!   from Gymnasium's prior. An agent trained with `normalize_obs = false`
//!   never updates its normaliser, so the exported policy feeds the network
//!   the raw observation — exactly what training fed it.

use nalgebra::SVector;

use crate::error::{Error, check_all_finite, check_finite};
use crate::math;
use crate::params::{Params, TensorData, TensorShape, out_of_domain, tag};

/// `ε` added to the variance before the square root.
pub const EPSILON: f32 = 1e-8;
/// Normalised observations are clipped to `[−CLIP, CLIP]`.
pub const CLIP: f32 = 10.0;
/// The least return standard deviation the scale-free [`scale_reward`]
/// divides by: keeps `0 / 0` out (a run whose rewards have all been 0)
/// without stating a scale.
pub const RETURN_STD_FLOOR: f32 = 1e-30;
/// Initial pseudo-count (Gymnasium's `RunningMeanStd(epsilon=1e-4)`).
const INITIAL_COUNT: f32 = 1e-4;

/// Reward scaling (SB3's `VecNormalize`): `clip(r / √(Var[G] + ε), ±CLIP)`
/// with `G ← γG + r` the running discounted return, `return_norm` updated with
/// every `G`, and `G` reset to 0 after an episode end (`done`: terminated or
/// truncated). Gymnasium's `NormalizeReward` differs: it resets `G` only on
/// termination and does not clip. Shared by PPO and the online actor-critic.
///
/// `scale_free` removes the two places where SB3's statistics assume the
/// reward is of order one: the prior (`σ² = 1` at a pseudo-count of 1e-4,
/// which adds `1e-4/n` to the return variance after `n` steps) becomes the
/// first return's own square ([`RunningNorm::update_scale_free`]), and the
/// divisor `√(Var[G] + ε)` becomes `max(√Var[G], RETURN_STD_FLOOR)`. A plant
/// whose per-step cost is 1e-9 has `Var[G]` near 1e-14, far below both, and
/// its "scaled" rewards stayed ~1e-5; with `scale_free` the scaled rewards
/// do not depend on the reward's units at all — bit for bit when the
/// rewards are multiplied by a power of two (tested), and the held-out cost
/// of a family plant at reward × 1e-4 moved by 36 % without it
/// (docs/plants.md, "Invariance").
///
/// # Errors
/// [`Error::NonFinite`] for a non-finite `G` (from a non-finite reward).
pub fn scale_reward(
    gamma: f32,
    return_norm: &mut RunningNorm<1>,
    discounted_return: &mut f32,
    reward: f32,
    done: bool,
    scale_free: bool,
) -> Result<f32, Error> {
    let g = SVector::<f32, 1>::new(*discounted_return * gamma + reward);
    // One update call for both priors (`update` / `update_scale_free`): the
    // firmware's flash holds its code once.
    let prior_var = if scale_free {
        g.component_mul(&g)
    } else {
        SVector::repeat(1.0)
    };
    return_norm.update_from_prior(&g, prior_var)?;
    let var = return_norm.var[0];
    let return_std = if scale_free {
        math::sqrt(var).max(RETURN_STD_FLOOR)
    } else {
        math::sqrt(var + EPSILON)
    };
    *discounted_return = if done { 0.0 } else { g[0] };
    Ok((reward / return_std).clamp(-CLIP, CLIP))
}

/// Per-dimension running mean and variance of `N`-dimensional observations.
#[derive(Clone, Debug, PartialEq)]
pub struct RunningNorm<const N: usize> {
    /// Running mean `μ`.
    pub mean: SVector<f32, N>,
    /// Running (population) variance `σ²`.
    pub var: SVector<f32, N>,
    /// Number of observations folded in (plus the initial pseudo-count).
    pub count: SVector<f32, 1>,
}

impl<const N: usize> Default for RunningNorm<N> {
    fn default() -> Self {
        Self::ZERO
    }
}

impl<const N: usize> RunningNorm<N> {
    /// `true` once at least one observation has been folded in; before that
    /// [`normalize`](Self::normalize) is the identity.
    pub fn has_statistics(&self) -> bool {
        self.count[0] > 0.0
    }

    /// Folds one observation into the statistics.
    ///
    /// # Errors
    /// [`Error::NonFinite`] if `x` has a NaN or infinite component, or if the
    /// updated statistics would not be finite (an observation so large that
    /// `(x − μ)²` overflows `f32`); the statistics are unchanged.
    pub fn update(&mut self, x: &SVector<f32, N>) -> Result<(), Error> {
        // Gymnasium's prior: a pseudo-count of 1e-4 at μ = 0, σ² = 1.
        self.update_from_prior(x, SVector::repeat(1.0))
    }

    /// [`update`](Self::update) whose prior has no units: the first
    /// observation's own square `x²` as the prior variance instead of 1, so
    /// that statistics of `k·x` are `k` (mean) and `k²` (variance) times
    /// those of `x` — exactly when `k` is a power of two. After the first
    /// observation the two are the same update.
    ///
    /// # Errors
    /// As [`update`](Self::update).
    pub fn update_scale_free(&mut self, x: &SVector<f32, N>) -> Result<(), Error> {
        self.update_from_prior(x, x.component_mul(x))
    }

    /// Chan et al.'s update, from the prior `(μ = 0, σ² = prior_var)` at a
    /// pseudo-count of 1e-4 while the statistics are empty.
    fn update_from_prior(
        &mut self,
        x: &SVector<f32, N>,
        prior_var: SVector<f32, N>,
    ) -> Result<(), Error> {
        check_all_finite(x.as_slice())?;
        // Compute into temporaries and commit only finite results, so a
        // refused update changes nothing.
        let (mut mean, mut var, count) = if self.has_statistics() {
            (self.mean, self.var, self.count[0])
        } else {
            (SVector::zeros(), prior_var, INITIAL_COUNT)
        };
        let total = count + 1.0;
        for i in 0..N {
            let delta = x[i] - mean[i];
            mean[i] += delta / total;
            // M2 = σ²·n + δ²·n·1/(n+1); σ² = M2/(n+1)   (Chan et al. 1979)
            let m2 = var[i] * count + delta * delta * count / total;
            var[i] = m2 / total;
        }
        check_all_finite(mean.as_slice())?;
        check_all_finite(var.as_slice())?;
        check_finite(total)?;
        self.mean = mean;
        self.var = var;
        self.count[0] = total;
        Ok(())
    }

    /// `clip((x − μ) / √(σ² + ε), −CLIP, CLIP)`; `x` itself, unclipped, while
    /// no observation has been folded in (see [`has_statistics`](Self::has_statistics)).
    ///
    /// # Errors
    /// [`Error::NonFinite`] if `x` has a NaN or infinite component, or if the
    /// statistics are outside their domain and give a NaN (a negative
    /// variance or a non-finite statistic written into the public fields;
    /// [`serialize::load`](crate::serialize::load) never produces those).
    pub fn normalize(&self, x: &SVector<f32, N>) -> Result<SVector<f32, N>, Error> {
        check_all_finite(x.as_slice())?;
        if !self.has_statistics() {
            return Ok(*x);
        }
        let mut out = SVector::<f32, N>::zeros();
        for i in 0..N {
            let z = (x[i] - self.mean[i]) / math::sqrt(self.var[i] + EPSILON);
            // `math::clamp` keeps a NaN (never panics); it is refused below.
            out[i] = math::clamp(z, -CLIP, CLIP);
        }
        check_all_finite(out.as_slice())?;
        Ok(out)
    }

    /// [`update`](Self::update) with `x`, then [`normalize`](Self::normalize) it.
    ///
    /// # Errors
    /// As [`update`](Self::update).
    pub fn update_normalize(&mut self, x: &SVector<f32, N>) -> Result<SVector<f32, N>, Error> {
        self.update(x)?;
        self.normalize(x)
    }
}

impl<const N: usize> Params for RunningNorm<N> {
    const TENSORS: usize = 3;
    const LEN: usize = 2 * N + 1;
    const ZERO: Self = Self {
        mean: SVector::from_array_storage(nalgebra::ArrayStorage([[0.0; N]; 1])),
        var: SVector::from_array_storage(nalgebra::ArrayStorage([[0.0; N]; 1])),
        count: SVector::from_array_storage(nalgebra::ArrayStorage([[0.0]; 1])),
    };

    fn tensor(&self, i: usize) -> &[f32] {
        match i {
            0 => self.mean.as_slice(),
            1 => self.var.as_slice(),
            2 => self.count.as_slice(),
            _ => &[],
        }
    }

    fn tensor_mut(&mut self, i: usize) -> &mut [f32] {
        match i {
            0 => self.mean.as_mut_slice(),
            1 => self.var.as_mut_slice(),
            2 => self.count.as_mut_slice(),
            _ => &mut [],
        }
    }

    fn shape(i: usize) -> TensorShape {
        let rows = match i {
            0 | 1 => N as u32,
            2 => 1,
            _ => {
                return TensorShape {
                    rows: 0,
                    cols: 0,
                    tag: tag::PLAIN,
                };
            }
        };
        TensorShape {
            rows,
            cols: 1,
            tag: tag::STATISTICS,
        }
    }

    /// The variance (tensor 1) and the count (tensor 2) must be `≥ 0`; the
    /// mean may be any finite value.
    fn check_values<'a>(
        first: usize,
        tensor: &dyn Fn(usize) -> TensorData<'a>,
    ) -> Result<(), Error> {
        if !tensor(first + 1).iter().all(|v| v >= 0.0) {
            return out_of_domain(first + 1, "normaliser variance must be >= 0");
        }
        if !tensor(first + 2).iter().all(|c| c >= 0.0) {
            return out_of_domain(first + 2, "normaliser count must be >= 0");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng;
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro128PlusPlus;

    #[test]
    fn tensor_shapes_are_mean_variance_count() {
        let shapes: std::vec::Vec<_> = (0..4).map(RunningNorm::<3>::shape).collect();
        for (i, rows) in [(0, 3), (1, 3), (2, 1)] {
            assert_eq!(
                (shapes[i].rows, shapes[i].cols, shapes[i].tag),
                (rows, 1, tag::STATISTICS),
                "tensor {i}"
            );
        }
        assert_eq!((shapes[3].rows, shapes[3].cols), (0, 0));
    }

    #[test]
    fn matches_two_pass_statistics() {
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(5);
        let mut norm = RunningNorm::<2>::ZERO;
        let mut xs = std::vec::Vec::new();
        for _ in 0..5000 {
            let x = SVector::<f32, 2>::new(
                rng::uniform_range(&mut rng, -1.0, 3.0),
                100.0 + 5.0 * rng::normal_pair(&mut rng).0,
            );
            norm.update(&x).unwrap();
            xs.push(x);
        }
        for d in 0..2 {
            let n = xs.len() as f64;
            let mean = xs.iter().map(|x| x[d] as f64).sum::<f64>() / n;
            let var = xs.iter().map(|x| (x[d] as f64 - mean).powi(2)).sum::<f64>() / n;
            assert!((norm.mean[d] as f64 - mean).abs() < 1e-3 * (1.0 + mean.abs()));
            assert!(
                (norm.var[d] as f64 - var).abs() < 1e-2 * var,
                "{} vs {var}",
                norm.var[d]
            );
        }
        let z = norm.normalize(&SVector::<f32, 2>::new(1.0, 100.0)).unwrap();
        assert!(z[0].abs() < 0.05 && z[1].abs() < 0.05, "{z:?}");
    }

    /// The scaled rewards of a cost-like reward sequence (with episode
    /// ends) and of the same sequence multiplied by `k`.
    fn scaled_rewards(k: f32, scale_free: bool) -> std::vec::Vec<f32> {
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(9);
        let (mut norm, mut g) = (RunningNorm::<1>::ZERO, 0.0);
        (0..600)
            .map(|t| {
                let cost = 1e-3 * (1.0 + rng::normal_pair(&mut rng).0.abs());
                scale_reward(
                    0.99,
                    &mut norm,
                    &mut g,
                    -k * cost,
                    t % 200 == 199,
                    scale_free,
                )
                .unwrap()
            })
            .collect()
    }

    /// Scale-free reward scaling does not see the reward's units: rewards
    /// multiplied by a power of two scale to the same bits (a cost of 1e-3
    /// per step times 2⁻³⁰ or 2²⁰), and its scaled rewards keep their size
    /// (`r/σ(G)` ≈ 0.05 here: a step's share of a 200-step return). SB3's (`scale_free = false`) are not: its unit prior and `ε`
    /// leave small rewards small.
    #[test]
    fn scale_free_reward_scaling_has_no_units() {
        let unit = scaled_rewards(1.0, true);
        for k in [1.0 / (1u64 << 30) as f32, (1u64 << 20) as f32] {
            assert_eq!(scaled_rewards(k, true), unit, "k = {k}");
        }
        let mean_abs = |r: &[f32]| r[10..].iter().map(|x| x.abs()).sum::<f32>() / r.len() as f32;
        assert!(
            (0.01..5.0).contains(&mean_abs(&unit)),
            "{}",
            mean_abs(&unit)
        );
        let sb3 = scaled_rewards(1.0 / (1u64 << 30) as f32, false);
        assert!(
            mean_abs(&sb3) < 1e-3 * mean_abs(&unit),
            "{}",
            mean_abs(&sb3)
        );
    }

    /// SB3's `VecNormalize` reward scaling, computed independently in `f64`:
    /// `G ← γ·G + r` (reset after `done`), `RunningMeanStd(1e-4)` of `G`
    /// with Chan et al.'s merge, `r / √(Var[G] + 1e-8)` clipped to ±10. The
    /// rewards are of mixed sign, so `γ·G − r` or a dropped `ε` show.
    #[test]
    fn reward_scaling_is_sb3s_vecnormalize() {
        let (gamma, eps) = (0.9_f64, 1e-8_f64);
        let (mut mean, mut var, mut count) = (0.0_f64, 1.0_f64, 1e-4_f64);
        let mut g_ref = 0.0_f64;
        let mut norm = RunningNorm::<1>::ZERO;
        let mut g = 0.0_f32;
        for t in 0..60_u32 {
            let r = [1.0_f32, -0.25, 3.0, -2.0, 0.5][(t % 5) as usize] * 1e-3;
            let done = t % 17 == 16;
            g_ref = g_ref * gamma + f64::from(r);
            let delta = g_ref - mean;
            let total = count + 1.0;
            mean += delta / total;
            var = (var * count + delta * delta * count / total) / total;
            count = total;
            let expected = (f64::from(r) / (var + eps).sqrt()).clamp(-10.0, 10.0);
            if done {
                g_ref = 0.0;
            }
            let got = scale_reward(gamma as f32, &mut norm, &mut g, r, done, false).unwrap();
            let err = (f64::from(got) - expected).abs();
            assert!(
                err <= 1e-4 * expected.abs().max(1e-3),
                "t {t}: {got} vs {expected}"
            );
        }
    }

    /// The scale-free prior is the first observation's square; after it the
    /// update is Gymnasium's, and a refused first update changes nothing.
    #[test]
    fn the_scale_free_prior_is_the_first_square() {
        let x = SVector::<f32, 2>::new(3.0, -0.5);
        let (mut free, mut gym) = (RunningNorm::<2>::ZERO, RunningNorm::<2>::ZERO);
        free.update_scale_free(&x).unwrap();
        gym.update(&x).unwrap();
        assert_eq!(free.mean, gym.mean);
        assert_eq!(free.count, gym.count);
        let total = INITIAL_COUNT + 1.0;
        for i in 0..2 {
            let m2 = x[i] * x[i] * INITIAL_COUNT + x[i] * x[i] * INITIAL_COUNT / total;
            assert_eq!(free.var[i], m2 / total);
        }
        let y = SVector::<f32, 2>::new(1.0, 2.0);
        let (mut a, mut b) = (free.clone(), free.clone());
        a.update(&y).unwrap();
        b.update_scale_free(&y).unwrap();
        assert_eq!(a, b);
        let mut empty = RunningNorm::<2>::ZERO;
        assert!(
            empty
                .update_scale_free(&SVector::<f32, 2>::new(f32::NAN, 0.0))
                .is_err()
        );
        assert!(
            empty
                .update_scale_free(&SVector::<f32, 2>::new(1e30, 0.0))
                .is_err()
        );
        assert_eq!(empty, RunningNorm::ZERO);
    }

    /// `ε` matters where the variance is zero: a constant input normalises
    /// to `(x − μ)/√ε`, finite and clipped, never `√(−ε)`.
    #[test]
    fn epsilon_keeps_a_zero_variance_finite() {
        let mut norm = RunningNorm::<1>::ZERO;
        norm.mean[0] = 2.0;
        norm.var[0] = 0.0;
        norm.count[0] = 5.0;
        let z = norm.normalize(&SVector::<f32, 1>::new(2.0 + 1e-5)).unwrap();
        // 1e-5 / √1e-8 = 0.1 (up to rounding).
        assert!((z[0] - 0.1).abs() < 1e-3, "{z:?}");
        let z = norm.normalize(&SVector::<f32, 1>::new(3.0)).unwrap();
        assert_eq!(z[0], CLIP);
    }

    #[test]
    fn clips_and_rejects_non_finite_without_change() {
        let mut norm = RunningNorm::<2>::ZERO;
        norm.update(&SVector::<f32, 2>::new(0.0, 0.0)).unwrap();
        let before = norm.clone();
        assert_eq!(
            norm.update(&SVector::<f32, 2>::new(f32::NAN, 0.0)),
            Err(Error::NonFinite)
        );
        assert_eq!(norm, before);
        let z = norm.normalize(&SVector::<f32, 2>::new(1e9, -1e9)).unwrap();
        assert_eq!(z, SVector::<f32, 2>::new(CLIP, -CLIP));
        assert_eq!(
            norm.normalize(&SVector::<f32, 2>::new(f32::INFINITY, 0.0)),
            Err(Error::NonFinite)
        );
    }

    #[test]
    fn domain_is_variance_and_count_non_negative() {
        let mut norm = RunningNorm::<2>::ZERO;
        assert_eq!(norm.check_domain(), Ok(()));
        norm.update(&SVector::<f32, 2>::new(1.0, -3.0)).unwrap();
        assert_eq!(norm.check_domain(), Ok(()));
        norm.mean[0] = -1e30; // any finite mean
        assert_eq!(norm.check_domain(), Ok(()));
        let mut bad = norm.clone();
        bad.var[1] = -1.0;
        assert!(matches!(
            bad.check_domain(),
            Err(Error::OutOfDomain { tensor: 1, .. })
        ));
        // A negative variance in memory gives NaN: `normalize` refuses it.
        assert_eq!(
            bad.normalize(&SVector::<f32, 2>::new(0.0, 0.0)),
            Err(Error::NonFinite)
        );
        let mut bad = norm.clone();
        bad.count[0] = -0.5;
        assert!(matches!(
            bad.check_domain(),
            Err(Error::OutOfDomain { tensor: 2, .. })
        ));
    }

    /// `(x − μ)²` overflows for |x| ≈ 10³⁸: the update used to commit an
    /// infinite variance (and every later `normalize` gave 0 or NaN).
    #[test]
    fn overflowing_update_is_refused_without_change() {
        let mut norm = RunningNorm::<2>::ZERO;
        norm.update(&SVector::<f32, 2>::new(1.0, 2.0)).unwrap();
        let before = norm.clone();
        assert_eq!(
            norm.update(&SVector::<f32, 2>::new(f32::MAX, 0.0)),
            Err(Error::NonFinite)
        );
        assert_eq!(norm, before);
        let mut empty = RunningNorm::<2>::ZERO;
        assert_eq!(
            empty.update(&SVector::<f32, 2>::new(0.0, f32::MIN)),
            Err(Error::NonFinite)
        );
        assert_eq!(empty, RunningNorm::ZERO);
        assert!(!empty.has_statistics());
    }

    #[test]
    fn round_trips_through_the_format() {
        let mut norm = RunningNorm::<3>::ZERO;
        norm.update(&SVector::<f32, 3>::new(1.0, 2.0, 3.0)).unwrap();
        let mut blob = [0u8; crate::serialize::encoded_len::<RunningNorm<3>>()];
        crate::serialize::save(&norm, &mut blob).unwrap();
        let mut loaded = RunningNorm::<3>::ZERO;
        crate::serialize::load(&mut loaded, &blob).unwrap();
        assert_eq!(loaded, norm);
    }
}
