//! [`GaussianActor`]: a network producing the mean of a diagonal Gaussian,
//! with the [`Gaussian`] head and its state-independent `log_std` — the
//! actor of continuous-action plants.

use nalgebra::SVector;
use rand_core::Rng;

use super::{Actor, ColouredNoise, Gaussian, HeadCache, mean_bound_loss, zero_vector};
use crate::env::Continuous;
use crate::error::{Error, check_all_finite, check_finite};
use crate::impl_params;
use crate::math;
use crate::nn::{Layer, gain};
use crate::params::Params;

/// A continuous-action actor: a network producing the mean of a diagonal
/// Gaussian, and the Gaussian's `log_std`.
#[derive(Clone, Debug, PartialEq)]
pub struct GaussianActor<N, const ACT: usize> {
    /// Maps an input to the action mean.
    pub net: N,
    /// The state-independent `log_std`.
    pub head: Gaussian<ACT>,
}

impl_params!(impl[N: Params, const ACT: usize] GaussianActor<N, ACT> { net: N, head: Gaussian<ACT> });

impl<N, const OBS: usize, const ACT: usize> GaussianActor<N, ACT>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
{
    /// The mean action `μ(input)`.
    ///
    /// # Errors
    /// [`Error::NonFinite`] if the input or the mean is not finite.
    pub fn mean(&self, input: &SVector<f32, OBS>) -> Result<SVector<f32, ACT>, Error> {
        check_all_finite(input.as_slice())?;
        let mean = self.net.forward(input);
        check_all_finite(mean.as_slice())?;
        Ok(mean)
    }

    /// A raw sample around a finite `mean` and its log-probability, both
    /// checked finite.
    fn sample_around<R: Rng + ?Sized>(
        &self,
        mean: &SVector<f32, ACT>,
        rng: &mut R,
    ) -> Result<(SVector<f32, ACT>, f32), Error> {
        self.sample_with(mean, &Gaussian::<ACT>::sample_noise(rng))
    }

    /// The mean of sample `k` of the last batched pass, with
    /// [`mean`](Self::mean)'s checks on the batch's input and mean.
    fn batch_mean<const BATCH: usize>(
        batch: &mut N::Batch<BATCH>,
        k: usize,
    ) -> Result<SVector<f32, ACT>, Error> {
        let input = N::batch_inputs(batch).get(k).copied();
        let (Some(input), Some(mean)) = (input, N::batch_outputs(batch).get(k)) else {
            return Err(Error::InvalidInput {
                what: "sample index past the batch",
            });
        };
        check_all_finite(input.as_slice())?;
        check_all_finite(mean.as_slice())?;
        Ok(*mean)
    }

    /// `ε` of environment copy `copy` at rollout step `t` from `noise`.
    fn coloured_eps(noise: &ColouredNoise, (copy, t): (u32, u32)) -> SVector<f32, ACT> {
        let mut eps = SVector::<f32, ACT>::zeros();
        noise.fill(copy, t, eps.as_mut_slice());
        eps
    }

    /// [`sample_around`](Self::sample_around) with the noise `eps` given.
    fn sample_with(
        &self,
        mean: &SVector<f32, ACT>,
        eps: &SVector<f32, ACT>,
    ) -> Result<(SVector<f32, ACT>, f32), Error> {
        let raw = self.head.raw_from_noise(mean, eps);
        check_all_finite(raw.as_slice())?;
        let log_prob = self.head.log_prob(mean, &raw);
        check_finite(log_prob)?;
        Ok((raw, log_prob))
    }
}

impl<N, const OBS: usize, const ACT: usize> Actor<OBS> for GaussianActor<N, ACT>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
{
    type Space = Continuous<ACT>;
    type Action = SVector<f32, ACT>;
    type Cache = HeadCache<N::Cache, ACT>;
    const ZERO_ACTION: SVector<f32, ACT> = zero_vector();
    const ZERO_CACHE: Self::Cache = HeadCache {
        net: N::ZERO_CACHE,
        output: zero_vector(),
    };
    const NOISE_DIM: usize = ACT;

    fn init<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        self.net.init_orthogonal(rng, gain::HIDDEN, gain::POLICY);
        self.head = Gaussian::with_log_std(0.0);
    }

    fn rest_init(&mut self) {
        // The network's tensors run layer by layer, weight then bias: the
        // last two are the mean's output layer.
        for i in N::TENSORS.saturating_sub(2)..N::TENSORS {
            self.net.tensor_mut(i).fill(0.0);
        }
    }

    /// The mean `μ(input)` (unclipped; [`Policy`](super::Policy) clips it to the bounds).
    fn mode(&self, input: &SVector<f32, OBS>) -> Result<Self::Action, Error> {
        self.mean(input)
    }

    /// A raw sample `u ~ 𝒩(μ(input), σ²)` and its log-probability.
    fn sample<R: Rng + ?Sized>(
        &self,
        input: &SVector<f32, OBS>,
        rng: &mut R,
    ) -> Result<(Self::Action, f32), Error> {
        let mean = self.mean(input)?;
        self.sample_around(&mean, rng)
    }

    fn sample_batch<const BATCH: usize>(&self, batch: &mut Self::Batch<BATCH>, n: usize) {
        self.net.forward_batch(batch, n);
    }

    fn sample_at<R: Rng + ?Sized, const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        k: usize,
        rng: &mut R,
    ) -> Result<(Self::Action, f32), Error> {
        let mean = Self::batch_mean(batch, k)?;
        self.sample_around(&mean, rng)
    }

    fn sample_coloured<R: Rng + ?Sized>(
        &self,
        input: &SVector<f32, OBS>,
        noise: &ColouredNoise,
        at: (u32, u32),
        _rng: &mut R,
    ) -> Result<(Self::Action, f32), Error> {
        let mean = self.mean(input)?;
        self.sample_with(&mean, &Self::coloured_eps(noise, at))
    }

    fn sample_at_coloured<R: Rng + ?Sized, const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        k: usize,
        noise: &ColouredNoise,
        at: (u32, u32),
        _rng: &mut R,
    ) -> Result<(Self::Action, f32), Error> {
        let mean = Self::batch_mean(batch, k)?;
        self.sample_with(&mean, &Self::coloured_eps(noise, at))
    }

    fn evaluate(
        &self,
        input: &SVector<f32, OBS>,
        action: &Self::Action,
        cache: &mut Self::Cache,
    ) -> Result<(f32, f32), Error> {
        check_all_finite(input.as_slice())?;
        check_all_finite(action.as_slice())?;
        cache.output = self.net.forward_train(input, &mut cache.net);
        check_all_finite(cache.output.as_slice())?;
        let log_prob = self.head.log_prob(&cache.output, action);
        let entropy = self.head.entropy();
        check_finite(log_prob)?;
        check_finite(entropy)?;
        Ok((log_prob, entropy))
    }

    fn backward(
        &self,
        cache: &Self::Cache,
        action: &Self::Action,
        d_log_prob: f32,
        d_entropy: f32,
        grad: &mut Self,
    ) {
        let g = self.head.grad_log_prob(&cache.output, action);
        grad.head.log_std += g.log_std * d_log_prob + self.head.grad_entropy() * d_entropy;
        self.net
            .backward(&cache.net, &(g.mean * d_log_prob), &mut grad.net);
    }

    type Batch<const BATCH: usize> = N::Batch<BATCH>;

    fn batch_inputs<const BATCH: usize>(
        batch: &mut Self::Batch<BATCH>,
    ) -> &mut [SVector<f32, OBS>; BATCH] {
        N::batch_inputs(batch)
    }

    fn evaluate_batch<const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        actions: &[Self::Action],
        out: &mut [(f32, f32)],
    ) -> Result<(), Error> {
        let n = actions.len().min(out.len()).min(BATCH);
        // As the categorical head: the network first, then `evaluate`'s
        // checks in its order, sample by sample.
        self.net.forward_batch(batch, n);
        let entropy = self.head.entropy();
        let inputs = *N::batch_inputs(batch);
        let samples = inputs.iter().zip(N::batch_outputs(batch));
        for (((input, mean), action), out) in samples.zip(actions).zip(out.iter_mut()).take(n) {
            check_all_finite(input.as_slice())?;
            check_all_finite(action.as_slice())?;
            check_all_finite(mean.as_slice())?;
            let log_prob = self.head.log_prob(mean, action);
            check_finite(log_prob)?;
            check_finite(entropy)?;
            *out = (log_prob, entropy);
        }
        Ok(())
    }

    fn backward_batch<const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        actions: &[Self::Action],
        d_log_probs: &[f32],
        d_entropy: f32,
        bound: Option<(&Continuous<ACT>, f32)>,
        grad: &mut Self,
    ) -> f32 {
        let n = actions.len().min(d_log_probs.len()).min(BATCH);
        let mut d_means = [zero_vector::<ACT>(); BATCH];
        let mut bound_loss = 0.0f32;
        for ((d_mean, mean), (action, &d_log_prob)) in d_means
            .iter_mut()
            .zip(N::batch_outputs(batch))
            .zip(actions.iter().zip(d_log_probs))
        {
            let g = self.head.grad_log_prob(mean, action);
            grad.head.log_std += g.log_std * d_log_prob + self.head.grad_entropy() * d_entropy;
            *d_mean = g.mean * d_log_prob;
            if let Some((space, weight)) = bound {
                let (loss, d_loss) = mean_bound_loss(space, mean);
                bound_loss += loss;
                *d_mean += d_loss * weight;
            }
        }
        N::batch_d_outputs(batch)[..n].copy_from_slice(&d_means[..n]);
        self.net.backward_batch(batch, n, &mut grad.net, None);
        bound_loss
    }

    /// `Σᵢ [log σ′ᵢ − log σᵢ + (σᵢ² + (μᵢ − μ′ᵢ)²)/(2σ′ᵢ²) − ½]` for
    /// `self = 𝒩(μ, σ²)`, `other = 𝒩(μ′, σ′²)`.
    fn kl(&self, other: &Self, input: &SVector<f32, OBS>) -> Result<f32, Error> {
        let (mean, other_mean) = (self.mean(input)?, other.mean(input)?);
        let mut kl = 0.0f32;
        for i in 0..ACT {
            let (ls, other_ls) = (self.head.log_std[i], other.head.log_std[i]);
            let std_ratio = math::exp(ls - other_ls);
            let z = (mean[i] - other_mean[i]) * math::exp(-other_ls);
            kl += (other_ls - ls) + 0.5 * (std_ratio * std_ratio + z * z) - 0.5;
        }
        check_finite(kl)?;
        Ok(kl)
    }

    /// With a state-independent `log σ` the Fisher is block-diagonal: `1/σ²`
    /// per mean output (through the network) and `2` per `log σ`.
    fn fisher_vector_product(&self, cache: &Self::Cache, v: &Self, scale: f32, out: &mut Self) {
        let jv = self.net.jvp(&cache.net, &v.net, &SVector::zeros());
        let m_jv = SVector::<f32, ACT>::from_fn(|i, _| {
            let inv_var = math::exp(-2.0 * self.head.log_std[i]);
            scale * (jv[i] * inv_var)
        });
        self.net.backward(&cache.net, &m_jv, &mut out.net);
        out.head.log_std += v.head.log_std * (2.0 * scale);
    }
}
