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

pub use categorical::Categorical;
pub use gaussian::{Gaussian, GaussianGrad, LOG_STD_MAX, LOG_STD_MIN};

use nalgebra::SVector;
use rand_core::Rng;

use crate::env::{ActionSpace, Continuous, Discrete};
use crate::error::{Error, check_all_finite, check_finite};
use crate::impl_params;
use crate::nn::{Layer, gain};
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
        Ok(self.distribution(input)?.mode())
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
        let Ok(d_lp) = dist.grad_log_prob(*action) else {
            return;
        };
        let d_logits = d_lp * d_log_prob + dist.grad_entropy() * d_entropy;
        self.net.backward(&cache.net, &d_logits, &mut grad.net);
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
        let raw = self.head.sample(&mean, rng);
        check_all_finite(raw.as_slice())?;
        let log_prob = self.head.log_prob(&mean, &raw);
        check_finite(log_prob)?;
        Ok((raw, log_prob))
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
