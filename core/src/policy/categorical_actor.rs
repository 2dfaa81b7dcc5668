//! [`CategoricalActor`]: a network producing logits, with the
//! [`Categorical`] head — the actor of discrete-action plants — and its
//! batch storage, which keeps the head's `log p` and `p` from the batched
//! evaluation for the batched backward pass.

use nalgebra::SVector;
use rand_core::Rng;

use super::categorical::{d_logits_at, entropy_of, heads_of};
use super::{Actor, Categorical, HeadCache, zero_vector};
use crate::env::Discrete;
use crate::error::{Error, check_all_finite, check_finite};
use crate::impl_params;
use crate::math;
use crate::nn::{Layer, Zeroed, gain};
use crate::params::Params;

/// A [`CategoricalActor`]'s batch storage ([`Actor::Batch`]): the network's
/// ([`Layer::Batch`]) and, per sample, the head's `log p` and `p` from
/// [`Actor::evaluate_batch`], which [`Actor::backward_batch`] reuses: the
/// same logits give the same values, so the gradient has the same bits as
/// when it recomputed them, without the log-softmax and its exponentials
/// a second time.
#[derive(Clone, Debug, PartialEq)]
pub struct CategoricalBatch<B, const ACT: usize, const BATCH: usize> {
    net: B,
    log_probs: [SVector<f32, ACT>; BATCH],
    probs: [SVector<f32, ACT>; BATCH],
}

impl<B: Zeroed, const ACT: usize, const BATCH: usize> Zeroed for CategoricalBatch<B, ACT, BATCH> {
    const ZERO: Self = Self {
        net: B::ZERO,
        log_probs: [zero_vector(); BATCH],
        probs: [zero_vector(); BATCH],
    };
}

/// A discrete-action actor: a network producing logits.
#[derive(Clone, Debug, PartialEq)]
pub struct CategoricalActor<N> {
    /// Maps an input to action logits.
    pub net: N,
}

impl_params!(impl[N: Params] CategoricalActor<N> { net: N });

impl<N, const OBS: usize, const ACT: usize> CategoricalActor<N>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
{
    /// The action distribution at `input`.
    ///
    /// # Errors
    /// [`Error::NonFinite`] if the input or the resulting logits are not finite.
    pub fn distribution(&self, input: &SVector<f32, OBS>) -> Result<Categorical<ACT>, Error> {
        check_all_finite(input.as_slice())?;
        Categorical::from_logits(&self.net.forward(input))
    }
}

impl<N, const OBS: usize, const ACT: usize> Actor<OBS> for CategoricalActor<N>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
{
    type Space = Discrete<ACT>;
    type Action = usize;
    type Cache = HeadCache<N::Cache, ACT>;
    const ZERO_ACTION: usize = 0;
    const ZERO_CACHE: Self::Cache = HeadCache {
        net: N::ZERO_CACHE,
        output: zero_vector(),
    };

    fn init<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        self.net.init_orthogonal(rng, gain::HIDDEN, gain::POLICY);
    }

    /// The most probable action.
    fn mode(&self, input: &SVector<f32, OBS>) -> Result<usize, Error> {
        check_all_finite(input.as_slice())?;
        Categorical::mode_of_logits(&self.net.forward(input))
    }

    fn sample<R: Rng + ?Sized>(
        &self,
        input: &SVector<f32, OBS>,
        rng: &mut R,
    ) -> Result<(usize, f32), Error> {
        let dist = self.distribution(input)?;
        let action = dist.sample(rng);
        Ok((action, dist.log_probs()[action]))
    }

    fn sample_batch<const BATCH: usize>(&self, batch: &mut Self::Batch<BATCH>, n: usize) {
        self.net.forward_batch(&mut batch.net, n);
    }

    fn sample_at<R: Rng + ?Sized, const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        k: usize,
        rng: &mut R,
    ) -> Result<(usize, f32), Error> {
        let input = N::batch_inputs(&mut batch.net).get(k).copied();
        let (Some(input), Some(logits)) = (input, N::batch_outputs(&batch.net).get(k)) else {
            return Err(Error::InvalidInput {
                what: "sample index past the batch",
            });
        };
        // `distribution`'s checks and head on the batch's logits.
        check_all_finite(input.as_slice())?;
        let dist = Categorical::from_logits(logits)?;
        let action = dist.sample(rng);
        Ok((action, dist.log_probs()[action]))
    }

    fn evaluate(
        &self,
        input: &SVector<f32, OBS>,
        action: &usize,
        cache: &mut Self::Cache,
    ) -> Result<(f32, f32), Error> {
        check_all_finite(input.as_slice())?;
        if *action >= ACT {
            return Err(Error::InvalidAction);
        }
        cache.output = self.net.forward_train(input, &mut cache.net);
        // Finite logits give finite log-probabilities and entropy (see
        // `Categorical`); checked anyway, as the contract promises.
        let dist = Categorical::from_logits(&cache.output)?;
        let (log_prob, entropy) = (dist.log_prob(*action)?, dist.entropy());
        check_finite(log_prob)?;
        check_finite(entropy)?;
        Ok((log_prob, entropy))
    }

    fn backward(
        &self,
        cache: &Self::Cache,
        action: &usize,
        d_log_prob: f32,
        d_entropy: f32,
        grad: &mut Self,
    ) {
        // `evaluate` succeeded on these logits and this action, so neither
        // call below can fail; a zero gradient is the safe fallback anyway.
        let Ok(dist) = Categorical::from_logits(&cache.output) else {
            return;
        };
        let Ok(d_logits) = dist.d_logits(*action, d_log_prob, d_entropy) else {
            return;
        };
        self.net.backward(&cache.net, &d_logits, &mut grad.net);
    }

    type Batch<const BATCH: usize> = CategoricalBatch<N::Batch<BATCH>, ACT, BATCH>;

    fn batch_inputs<const BATCH: usize>(
        batch: &mut Self::Batch<BATCH>,
    ) -> &mut [SVector<f32, OBS>; BATCH] {
        N::batch_inputs(&mut batch.net)
    }

    fn evaluate_batch<const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        actions: &[usize],
        out: &mut [(f32, f32)],
    ) -> Result<(), Error> {
        let n = actions.len().min(out.len()).min(BATCH);
        let CategoricalBatch {
            net,
            log_probs,
            probs,
        } = batch;
        // Every sample through the network first (a non-finite input only
        // gives non-finite scratch values), then `evaluate`'s checks sample
        // by sample, in its order: the first refusal is `evaluate`'s.
        self.net.forward_batch(net, n);
        let inputs = *N::batch_inputs(net);
        let logits = &N::batch_outputs(net)[..n];
        let mut entropies = [0.0f32; BATCH];
        heads_of(
            logits,
            &mut log_probs[..n],
            &mut probs[..n],
            &mut entropies[..n],
        );
        let samples = inputs.iter().zip(logits);
        for ((((input, logits), action), out), (log_p, &entropy)) in samples
            .zip(actions)
            .zip(out.iter_mut())
            .zip(log_probs.iter().zip(&entropies))
            .take(n)
        {
            check_all_finite(input.as_slice())?;
            if *action >= ACT {
                return Err(Error::InvalidAction);
            }
            // `Categorical::from_logits`' check; `heads_of` gave its
            // `log p`, `p = e^{log p}` (kept for `backward_batch`) and
            // `entropy_of(p, log p)` (its `entropy()`).
            check_all_finite(logits.as_slice())?;
            let log_prob = log_p[*action];
            check_finite(log_prob)?;
            check_finite(entropy)?;
            *out = (log_prob, entropy);
        }
        Ok(())
    }

    fn backward_batch<const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        actions: &[usize],
        d_log_probs: &[f32],
        d_entropy: f32,
        _bound: Option<(&Discrete<ACT>, f32)>,
        grad: &mut Self,
    ) -> f32 {
        let n = actions.len().min(d_log_probs.len()).min(BATCH);
        let CategoricalBatch {
            net,
            log_probs,
            probs,
        } = batch;
        // `Categorical::d_logits` on `evaluate_batch`'s distributions (the
        // same logits, so the same `log p` and `p`), kept per sample.
        let heads = log_probs.iter().zip(probs.iter());
        let d_logits = N::batch_d_outputs(net);
        for ((d, (log_p, p)), (&action, &d_log_prob)) in d_logits
            .iter_mut()
            .zip(heads)
            .zip(actions.iter().zip(d_log_probs))
            .take(n)
        {
            // `action < ACT`: `evaluate_batch` refused any other.
            let entropy = entropy_of(p, log_p);
            *d = d_logits_at(log_p, p, entropy, action, d_log_prob, d_entropy);
        }
        self.net.backward_batch(net, n, &mut grad.net, None);
        0.0
    }

    /// `Σᵢ pᵢ (log pᵢ − log qᵢ)`.
    fn kl(&self, other: &Self, input: &SVector<f32, OBS>) -> Result<f32, Error> {
        let (p, q) = (self.distribution(input)?, other.distribution(input)?);
        let kl = p
            .log_probs()
            .iter()
            .zip(q.log_probs().iter())
            .map(|(&lp, &lq)| math::exp(lp) * (lp - lq))
            .sum::<f32>();
        check_finite(kl)?;
        Ok(kl)
    }

    /// In the logits `l`, `M = diag(p) − p pᵀ`, so `M (J v) = p ⊙ Jv − p (pᵀ Jv)`.
    fn fisher_vector_product(&self, cache: &Self::Cache, v: &Self, scale: f32, out: &mut Self) {
        let Ok(dist) = Categorical::from_logits(&cache.output) else {
            return;
        };
        let p = dist.probs();
        let jv = self.net.jvp(&cache.net, &v.net, &SVector::zeros());
        let mean_jv = p.dot(&jv);
        let m_jv = p.zip_map(&jv, |pi, ji| scale * (pi * (ji - mean_jv)));
        self.net.backward(&cache.net, &m_jv, &mut out.net);
    }
}
