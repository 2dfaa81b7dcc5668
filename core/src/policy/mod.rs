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
mod categorical_actor;
mod coloured;
mod gaussian;
mod gaussian_actor;

pub use categorical::{Categorical, NEAR_TIE};
pub use categorical_actor::{CategoricalActor, CategoricalBatch};
pub use coloured::{ColouredNoise, MAX_OCTAVES};
pub use gaussian::{Gaussian, GaussianGrad, LOG_STD_MAX, LOG_STD_MIN, SOFT_BOUND, mean_bound_loss};
pub use gaussian_actor::GaussianActor;

use nalgebra::SVector;
use rand_core::Rng;

use crate::env::ActionSpace;
use crate::error::Error;
use crate::impl_params;
use crate::nn::Zeroed;
use crate::normalize::RunningNorm;
use crate::params::Params;

/// What policy-gradient algorithms need from an actor with `OBS` inputs.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an actor for {OBS}-dimensional observations",
    label = "the actor's network input size must equal the observation size",
    note = "derive matching sizes from the environment with `microrl::agent::{{Ppo, ActorCritic, …}}<YourEnv, HIDDEN, …>`"
)]
pub trait Actor<const OBS: usize>: Params {
    /// The action space: [`Discrete<N>`](crate::env::Discrete) or [`Continuous<A>`](crate::env::Continuous).
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

    /// Zeroes the output layer of a Gaussian actor's mean (its last
    /// weight matrix and bias), after [`init`](Actor::init): `μ(s) = 0` for
    /// every `s`, so the untrained policy commands exactly 0 — the
    /// actuator's rest, or its lower bound for a one-sided one once clipped
    /// — and "the policy it started from" is "doing nothing" (see
    /// [`AcConfig::rest_init`](crate::algo::AcConfig::rest_init)). The
    /// hidden layers learn from the first actor step on, once that layer is
    /// no longer zero. A categorical actor (whose zero logits are not
    /// "nothing") keeps its initialisation: the default does nothing.
    fn rest_init(&mut self) {}

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
    /// (the network's [`Layer::Batch`](crate::nn::Layer::Batch)).
    type Batch<const BATCH: usize>: Zeroed;

    /// Where the caller writes sample `k`'s network input before
    /// [`evaluate_batch`](Actor::evaluate_batch).
    fn batch_inputs<const BATCH: usize>(
        batch: &mut Self::Batch<BATCH>,
    ) -> &mut [SVector<f32, OBS>; BATCH];

    /// [`evaluate`](Actor::evaluate) for the first `n = actions.len()`
    /// samples of `batch` (at most `BATCH` and `out.len()`), the network run
    /// one layer at a time over all of them ([`Layer::forward_batch`](crate::nn::Layer::forward_batch)):
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
    /// ([`Layer::forward_batch`](crate::nn::Layer::forward_batch)). [`sample_at`](Actor::sample_at) then
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
    /// ([`Layer::jvp`](crate::nn::Layer::jvp)), `M` the Fisher of the head in its outputs, and
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

pub(crate) const fn zero_vector<const A: usize>() -> SVector<f32, A> {
    SVector::from_array_storage(nalgebra::ArrayStorage([[0.0; A]; 1]))
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
