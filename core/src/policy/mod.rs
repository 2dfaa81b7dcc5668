//! Actors, action distributions and deployable policies.
//!
//! Three layers, one name each:
//! - A *distribution head* turns a network output into actions and supplies
//!   the log-probabilities, entropies and gradients that policy-gradient
//!   losses need: [`Categorical`] for discrete actions (the network outputs
//!   logits) and [`Gaussian`] for continuous ones (the network outputs the
//!   mean; the head owns a learnable `log_std`).
//! - An **actor** ([`Actor`]) is a network with a head: [`CategoricalActor`]
//!   and [`GaussianActor`]. It works on the *network's* input (a normalised
//!   observation) and is what the algorithms train: [`Actor::mode`],
//!   [`Actor::sample`], [`Actor::evaluate`], [`Actor::backward`].
//! - A **policy** ([`Policy`]) is what gets deployed: the actor, the frozen
//!   observation normaliser and the action space (the actuator bounds), all
//!   serialised together. [`Controller::act`] maps a *raw* observation to the
//!   command the actuator receives. Learning agents implement [`Controller`]
//!   with the very same function ([`act`]), so an agent's own deterministic
//!   evaluation and its exported policy pick bit-identical actions.
//!
//! The deployment copies hold the parameters and nothing else — no gradients,
//! caches or optimiser moments — with a forward pass that needs no scratch
//! memory. They validate the observation and the network output, so a NaN
//! from a broken sensor becomes [`Error::NonFinite`] instead of a NaN
//! actuator command.
//!
//! **No non-finite `Ok`.** Every [`Actor`] method that returns numbers checks
//! its inputs (observation, action) *and* its results (logits or mean, sample,
//! log-probability, entropy): an infinite observation is refused even though
//! `tanh` would saturate it into a finite output, and a result that
//! overflows (a Gaussian `log σ` of 100, an action of 10³⁰) is refused rather
//! than returned as ±∞ or NaN — all with [`Error::NonFinite`].

mod categorical;
mod gaussian;

pub use categorical::{Categorical, NEAR_TIE};
use categorical::{d_logits_at, entropy_of, heads_of};
pub use gaussian::{Gaussian, GaussianGrad, LOG_STD_MAX, LOG_STD_MIN};

use nalgebra::SVector;
use rand_core::Rng;

use crate::env::{ActionSpace, Continuous, Discrete};
use crate::error::{Error, check_all_finite, check_finite};
use crate::impl_params;
use crate::math;
use crate::nn::{Layer, Zeroed, gain};
use crate::normalize::RunningNorm;
use crate::params::Params;

/// What policy-gradient algorithms need from an actor with `OBS` inputs.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an actor for {OBS}-dimensional observations",
    label = "the actor's network input size must equal the observation size",
    note = "derive matching sizes from the environment with `microrl::agent::{{Ppo, ActorCritic, …}}<YourEnv, HIDDEN, …>`"
)]
pub trait Actor<const OBS: usize>: Params {
    /// The action space: [`Discrete<N>`] or [`Continuous<A>`].
    type Space: ActionSpace<Action = Self::Action>;
    /// The action type: `usize` or `SVector<f32, A>`.
    type Action: Copy + core::fmt::Debug + PartialEq;
    /// Per-sample training cache (network activations and head output).
    type Cache;
    /// An all-zero action, for `const` rollout buffers.
    const ZERO_ACTION: Self::Action;
    /// A zeroed cache, for `const` initialisers.
    const ZERO_CACHE: Self::Cache;

    /// Orthogonal initialisation (hidden gain √2, output gain 0.01, CleanRL)
    /// and, for Gaussian heads, `log σ = 0`.
    fn init<R: Rng + ?Sized>(&mut self, rng: &mut R);

    /// The deterministic action (the distribution's mode) for the network
    /// input `input`, before the action space's [`command`](ActionSpace::command).
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite input or network output.
    fn mode(&self, input: &SVector<f32, OBS>) -> Result<Self::Action, Error>;

    /// A sampled action and its log-probability (of the raw sample), both
    /// finite.
    ///
    /// # Errors
    /// As [`mode`](Actor::mode), and [`Error::NonFinite`] when the sample or
    /// its log-probability is not finite (e.g. a Gaussian `log σ` so large
    /// that `σ·ε` overflows).
    fn sample<R: Rng + ?Sized>(
        &self,
        input: &SVector<f32, OBS>,
        rng: &mut R,
    ) -> Result<(Self::Action, f32), Error>;

    /// Training forward pass: `(log π(action|input), H[π(·|input)])`, both
    /// finite, recording what [`backward`](Actor::backward) needs in `cache`.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite input, action, network output,
    /// log-probability or entropy; [`Error::InvalidAction`] for an
    /// out-of-range discrete action. The input and action are checked before
    /// `cache` is touched; after a later refusal `cache` holds scratch values
    /// that [`backward`](Actor::backward) must not be called with.
    fn evaluate(
        &self,
        input: &SVector<f32, OBS>,
        action: &Self::Action,
        cache: &mut Self::Cache,
    ) -> Result<(f32, f32), Error>;

    /// Adds into `grad` the gradient of `d_log_prob · log π + d_entropy · H`
    /// for the sample recorded in `cache` by [`evaluate`](Actor::evaluate).
    fn backward(
        &self,
        cache: &Self::Cache,
        action: &Self::Action,
        d_log_prob: f32,
        d_entropy: f32,
        grad: &mut Self,
    );

    /// Activations of up to `BATCH` samples for the batched training passes
    /// (the network's [`Layer::Batch`]).
    type Batch<const BATCH: usize>: Zeroed;

    /// Where the caller writes sample `k`'s network input before
    /// [`evaluate_batch`](Actor::evaluate_batch).
    fn batch_inputs<const BATCH: usize>(
        batch: &mut Self::Batch<BATCH>,
    ) -> &mut [SVector<f32, OBS>; BATCH];

    /// [`evaluate`](Actor::evaluate) for the first `n = actions.len()`
    /// samples of `batch` (at most `BATCH` and `out.len()`), the network run
    /// one layer at a time over all of them ([`Layer::forward_batch`]):
    /// `out[k] = (log π(actions[k]|input k), H)`, the same bits as
    /// `evaluate`.
    ///
    /// # Errors
    /// The error `evaluate` would return first, taking the samples in order;
    /// `out` and `batch` then hold scratch values.
    fn evaluate_batch<const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        actions: &[Self::Action],
        out: &mut [(f32, f32)],
    ) -> Result<(), Error>;

    /// [`sample`](Actor::sample)'s network pass for the first `n` inputs
    /// written through [`batch_inputs`](Actor::batch_inputs) (`n` is capped
    /// at `BATCH`), one layer at a time over all of them
    /// ([`Layer::forward_batch`]). [`sample_at`](Actor::sample_at) then
    /// draws each one's action: a vectorised collection runs its copies'
    /// network passes together, and their draws in the copies' order.
    fn sample_batch<const BATCH: usize>(&self, batch: &mut Self::Batch<BATCH>, n: usize);

    /// [`sample`](Actor::sample) for input `k` of the last
    /// [`sample_batch`](Actor::sample_batch): the same action,
    /// log-probability, draws from `rng` and error, bit for bit.
    ///
    /// # Errors
    /// As [`sample`](Actor::sample); [`Error::InvalidInput`] for
    /// `k >= BATCH`.
    fn sample_at<R: Rng + ?Sized, const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        k: usize,
        rng: &mut R,
    ) -> Result<(Self::Action, f32), Error>;

    /// [`backward`](Actor::backward) for every sample of a successful
    /// [`evaluate_batch`](Actor::evaluate_batch), with `d_log_probs[k]` for
    /// sample `k`: adds into `grad` in sample order, the same bits as one
    /// `backward` call per sample.
    fn backward_batch<const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        actions: &[Self::Action],
        d_log_probs: &[f32],
        d_entropy: f32,
        grad: &mut Self,
    );

    /// `KL[self(·|input) ‖ other(·|input)]` in closed form (≥ 0 up to
    /// rounding): TRPO's trust-region constraint, with `self` the policy
    /// that collected the data.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite input, network output or result.
    fn kl(&self, other: &Self, input: &SVector<f32, OBS>) -> Result<f32, Error>;

    /// Adds `scale · F v` into `out`, where `F = Jᵀ M J` is the Fisher
    /// information of `π(·|input)` with respect to the actor's parameters at
    /// the sample recorded in `cache` by [`evaluate`](Actor::evaluate): the
    /// Hessian of `θ ↦ KL[π_cached ‖ π_θ]` at the cached parameters (Schulman
    /// et al. 2015, App. C). `J v` is the network's forward-mode derivative
    /// ([`Layer::jvp`]), `M` the Fisher of the head in its outputs, and
    /// `Jᵀ(·)` one backward pass — exact, no finite differences.
    fn fisher_vector_product(&self, cache: &Self::Cache, v: &Self, scale: f32, out: &mut Self);
}

/// Cache of an [`Actor`] built on a network `N`: its activations and its output.
#[derive(Clone, Debug)]
pub struct HeadCache<C, const A: usize> {
    /// The network's activation cache.
    pub net: C,
    /// The network's output (logits or mean).
    pub output: SVector<f32, A>,
}

const fn zero_vector<const A: usize>() -> SVector<f32, A> {
    SVector::from_array_storage(nalgebra::ArrayStorage([[0.0; A]; 1]))
}

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
        grad: &mut Self,
    ) {
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
        let raw = self.head.sample(mean, rng);
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

    fn init<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        self.net.init_orthogonal(rng, gain::HIDDEN, gain::POLICY);
        self.head = Gaussian::with_log_std(0.0);
    }

    /// The mean `μ(input)` (unclipped; [`Policy`] clips it to the bounds).
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
        let input = N::batch_inputs(batch).get(k).copied();
        let (Some(input), Some(mean)) = (input, N::batch_outputs(batch).get(k)) else {
            return Err(Error::InvalidInput {
                what: "sample index past the batch",
            });
        };
        // `mean`'s checks on the batch's mean.
        check_all_finite(input.as_slice())?;
        check_all_finite(mean.as_slice())?;
        self.sample_around(mean, rng)
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
        grad: &mut Self,
    ) {
        let n = actions.len().min(d_log_probs.len()).min(BATCH);
        let mut d_means = [zero_vector::<ACT>(); BATCH];
        for ((d_mean, mean), (action, &d_log_prob)) in d_means
            .iter_mut()
            .zip(N::batch_outputs(batch))
            .zip(actions.iter().zip(d_log_probs))
        {
            let g = self.head.grad_log_prob(mean, action);
            grad.head.log_std += g.log_std * d_log_prob + self.head.grad_entropy() * d_entropy;
            *d_mean = g.mean * d_log_prob;
        }
        N::batch_d_outputs(batch)[..n].copy_from_slice(&d_means[..n]);
        self.net.backward_batch(batch, n, &mut grad.net, None);
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

/// The one deterministic decision rule: normalise the raw observation with
/// the (frozen) statistics, take the actor's mode, and map it to the
/// actuator command. [`Policy`] and every learning agent's [`Controller`]
/// implementation call exactly this, so deployment acts bit for bit as the
/// agent acted in its own evaluation.
///
/// # Errors
/// [`Error::NonFinite`] for a non-finite observation or network output.
#[inline]
pub fn act<A: Actor<OBS>, const OBS: usize>(
    actor: &A,
    obs_norm: &RunningNorm<OBS>,
    space: &A::Space,
    obs: &SVector<f32, OBS>,
) -> Result<A::Action, Error> {
    let input = obs_norm.normalize(obs)?;
    Ok(space.command(&actor.mode(&input)?))
}

/// A deployable policy: the actor, the frozen observation normaliser and the
/// action space it was trained in, serialised together (in that order).
///
/// Its size is the actor's parameters plus `2·OBS + 1` statistics (and the
/// bounds of a continuous space): no gradients, caches or optimiser state.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy<A: Actor<OBS>, const OBS: usize> {
    /// The trained actor.
    pub actor: A,
    /// Observation statistics, frozen (only read) at deployment.
    pub obs_norm: RunningNorm<OBS>,
    /// The action space, with the actuator bounds of a continuous one.
    pub space: A::Space,
}

impl_params!(impl[A: Actor<OBS>, const OBS: usize] Policy<A, OBS> { actor: A, obs_norm: RunningNorm<OBS>, space: A::Space });

/// Anything that maps a raw observation to an actuator command
/// deterministically: a deployed [`Policy`], or a learning agent acting with
/// its current weights (without copying them; on an MCU, evaluating while
/// training then needs no second actor in RAM).
pub trait Controller<const OBS: usize> {
    /// The action type.
    type Action: Copy;

    /// The command for the raw (unnormalised) observation `obs`.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite observation or network output.
    fn act(&self, obs: &SVector<f32, OBS>) -> Result<Self::Action, Error>;
}

/// A closure is a controller too — a hand-written baseline (a P or PID law)
/// is evaluated with the same [`evaluate`](crate::algo::evaluate) as a
/// learned policy:
///
/// ```
/// use microrl::algo::evaluate;
/// use microrl::env::CartPole;
/// use microrl::{Error, SVector};
/// use rand_core::SeedableRng;
///
/// // Push towards the side the pole leans to.
/// let lean = |o: &SVector<f32, 4>| Ok::<_, Error>(usize::from(o[2] + 0.5 * o[3] > 0.0));
/// let mut rng = rand_xoshiro::Xoshiro128PlusPlus::seed_from_u64(0);
/// let (mean, _) = evaluate(&lean, &mut CartPole::new(), 10, &mut rng)?;
/// assert!(mean > 100.0);
/// # Ok::<(), Error>(())
/// ```
impl<F, A: Copy, const OBS: usize> Controller<OBS> for F
where
    F: Fn(&SVector<f32, OBS>) -> Result<A, Error>,
{
    type Action = A;

    fn act(&self, obs: &SVector<f32, OBS>) -> Result<A, Error> {
        self(obs)
    }
}

impl<A: Actor<OBS>, const OBS: usize> Controller<OBS> for Policy<A, OBS> {
    type Action = A::Action;

    fn act(&self, obs: &SVector<f32, OBS>) -> Result<A::Action, Error> {
        act(&self.actor, &self.obs_norm, &self.space, obs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::{Mlp, fd, gain};
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
}
