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
mod coloured;
mod gaussian;

pub use categorical::{Categorical, NEAR_TIE};
use categorical::{d_logits_at, entropy_of, heads_of};
pub use coloured::{ColouredNoise, MAX_OCTAVES};
pub use gaussian::{Gaussian, GaussianGrad, LOG_STD_MAX, LOG_STD_MIN, SOFT_BOUND, mean_bound_loss};

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
    /// Standard-normal draws per action that
    /// [`sample_coloured`](Actor::sample_coloured) takes from its noise (a
    /// Gaussian actor's `ε`, one per dimension); 0, the default, for an
    /// actor that explores otherwise (a categorical actor draws its action
    /// from the RNG), which coloured noise leaves alone.
    const NOISE_DIM: usize = 0;

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

    /// [`sample`](Actor::sample) with the exploration noise taken from
    /// `noise` — its [`fill`](ColouredNoise::fill) for environment copy
    /// `copy` at rollout step `t`, `at = (copy, t)` — instead of independent draws from `rng`:
    /// a Gaussian actor's `ε` (PPO's
    /// [`noise_beta`](crate::algo::PpoConfig::noise_beta)). The
    /// log-probability is the same function of the action as `sample`'s.
    /// The default, for an actor without Gaussian noise (a categorical actor
    /// draws its action from `rng`), is `sample`.
    ///
    /// # Errors
    /// As [`sample`](Actor::sample).
    fn sample_coloured<R: Rng + ?Sized>(
        &self,
        input: &SVector<f32, OBS>,
        noise: &ColouredNoise,
        at: (u32, u32),
        rng: &mut R,
    ) -> Result<(Self::Action, f32), Error> {
        let _ = (noise, at);
        self.sample(input, rng)
    }

    /// [`sample_coloured`](Actor::sample_coloured) for input `k` of the last
    /// [`sample_batch`](Actor::sample_batch), as
    /// [`sample_at`](Actor::sample_at) is [`sample`](Actor::sample).
    ///
    /// # Errors
    /// As [`sample_at`](Actor::sample_at).
    fn sample_at_coloured<R: Rng + ?Sized, const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        k: usize,
        noise: &ColouredNoise,
        at: (u32, u32),
        rng: &mut R,
    ) -> Result<(Self::Action, f32), Error> {
        let _ = (noise, at);
        self.sample_at(batch, k, rng)
    }

    /// [`backward`](Actor::backward) for every sample of a successful
    /// [`evaluate_batch`](Actor::evaluate_batch), with `d_log_probs[k]` for
    /// sample `k`: adds into `grad` in sample order, with `bound = None` the
    /// same bits as one `backward` call per sample.
    ///
    /// `bound = Some((space, weight))` also adds, per sample, the gradient
    /// of `weight ·` [`mean_bound_loss`] (a Gaussian mean's excursion past
    /// `space`'s bounds; a categorical actor has none) and returns the sum
    /// of the unweighted bound losses over the samples (0 with `None`).
    fn backward_batch<const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        actions: &[Self::Action],
        d_log_probs: &[f32],
        d_entropy: f32,
        bound: Option<(&Self::Space, f32)>,
        grad: &mut Self,
    ) -> f32;

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

impl<A: Actor<OBS>, const OBS: usize> Policy<A, OBS> {
    /// All-zero weights and statistics (the [`Params::ZERO`] of the type,
    /// reachable without importing the trait): the destination of
    /// [`serialize::load`](crate::serialize::load), e.g. a `static` on an MCU.
    pub const ZERO: Self = <Self as Params>::ZERO;
}

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
mod tests;
