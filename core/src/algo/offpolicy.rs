//! What the off-policy learners ([`sac`](super::sac), [`td3`](super::td3))
//! share: twin critics `Q(s, a)` on `concat(s, a)`, Polyak-averaged target
//! networks, the map from the actor's `[−1, 1]` to the actuator bounds, the
//! deployed [`TanhPolicy`], PyTorch's default layer initialisation, the
//! random draws of one minibatch ([`Draws`]), the loop settings named as
//! SB3's ([`Schedule`]) and the learning loop's environment step
//! ([`OffPolicy::step`]: act, store, train).
//!
//! **Action scale.** Both actors end in `tanh`, so their actions lie in
//! `[−1, 1]` per dimension; that is what the replay buffer stores and the
//! critics see. Only the command sent to the plant is scaled, with SB3's
//! `unscale_action`: `low + ½(a + 1)(high − low)` ([`to_bounds`]).
//!
//! **Learning while controlling** ([`Lagged`](super::Lagged),
//! [`LaggedSac`](crate::agent::LaggedSac), [`LaggedTd3`](crate::agent::LaggedTd3)).
//! An off-policy gradient step does not fit in a control period of a fast
//! plant on a microcontroller (SAC's on Pendulum with 24-unit networks and
//! minibatches of 64 is 3.3 M instructions, `firmware-example`), but it
//! need not: the replay buffer already decouples acting from learning. The
//! control loop acts every tick with the last *published* [`Explorer`]
//! (the actor's weights, the bounds, the warm-up) and queues every tick;
//! the learner takes a whole block of ticks and for each, in order, makes
//! exactly what [`OffPolicy::step`] makes after acting
//! ([`OffPolicy::ingest`]: store, then `gradient_steps` every `train_freq`
//! ticks past `learning_starts`), then publishes — block `j` is acted by
//! the actor published after block `j − 2` ([`super::lagged`]). No
//! importance correction: SAC's and TD3's critic targets bootstrap with the
//! *current* policy's next action whatever policy drew the stored one
//! (Haarnoja et al. 2018, eq. 5–6; Fujimoto et al. 2018, eq. 10) and their
//! actor losses are taken over replayed states, so transitions drawn by an
//! actor one block old are replay data like any other. What the lag
//! changes is which actions are stored — the published actor's — and when
//! a tick reaches a minibatch: while the next block is acted.

use nalgebra::SVector;
use rand_core::Rng;

use super::lagged::Behave;
use super::lagged::Tick;
use super::replay::{ReplayBuffer, ReplayMark, Transition};
use super::{Controller, Cursor, Episode};
use crate::checkpoint::{Field, Reader, Writer};
use crate::config::{check, unit};
use crate::env::{ActionSpace, Continuous, Env};
use crate::error::{Error, check_all_finite, check_finite};
use crate::impl_params;
use crate::math;
use crate::nn::Layer;
use crate::optim::{AdamConfig, Optimizer, TrainState, check_lr};
use crate::params::{Params, tag};
use crate::rng;

/// `buffer_size` lowered to a ring of `capacity` transitions where it is
/// larger (`SacConfig::fitted`, `Td3Config::fitted`).
pub(crate) const fn fit_buffer(buffer_size: u32, capacity: usize) -> u32 {
    if capacity < buffer_size as usize {
        capacity as u32
    } else {
        buffer_size
    }
}

/// Two critics of the same type, trained side by side (one Adam over both,
/// as SB3's single critic optimiser), the target is built from the smaller
/// of the two (clipped double-Q, Fujimoto et al. 2018).
#[derive(Clone, Debug, PartialEq)]
pub struct Twin<Q> {
    /// `Q₁`.
    pub q1: Q,
    /// `Q₂`.
    pub q2: Q,
}

impl_params!(impl[Q: Params] Twin<Q> { q1: Q, q2: Q });

impl<Q, const OA: usize> Twin<Q>
where
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    /// `min(Q₁(x), Q₂(x))`, the clipped double-Q estimate (of the target
    /// pair, at the next state and action).
    pub fn min_q(&self, x: &SVector<f32, OA>) -> f32 {
        let q1 = self.q1.forward(x)[0];
        let q2 = self.q2.forward(x)[0];
        q1.min(q2)
    }
}

/// The Bellman target `q_target = r + (1 − terminated)·γ·next_q`: a
/// terminal step does not bootstrap, a truncated one does (SB3's
/// `handle_timeout_termination`).
///
/// # Errors
/// [`Error::NonFinite`] for a non-finite target.
#[inline]
pub fn bellman_target(
    reward: f32,
    terminated: bool,
    gamma: f32,
    next_q: f32,
) -> Result<f32, Error> {
    let not_terminated = if terminated { 0.0 } else { 1.0 };
    let q_target = reward + not_terminated * gamma * next_q;
    check_finite(q_target)?;
    Ok(q_target)
}

/// One sample of the twin critics' regression towards `q_target`: both
/// forward passes at `x = [s; a]`, then `∂J/∂Qᵢ = (factor·eᵢ)/B` with
/// `eᵢ = Qᵢ(x) − q_target` back through each critic into its gradient
/// (`factor` 1 for SAC's `½ Σᵢ mse`, 2 for TD3's `Σᵢ mse`; `inv_n = 1/B`).
/// Returns `(Q₁(x), e₁² + e₂²)`.
pub(crate) fn regress_twin<Q, const OA: usize>(
    critic: &mut TrainState<Twin<Q>>,
    caches: &mut (Q::Cache, Q::Cache),
    x: &SVector<f32, OA>,
    q_target: f32,
    factor: f32,
    inv_n: f32,
) -> (f32, f32)
where
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    let (cache1, cache2) = caches;
    let (params, grads) = (&critic.params, &mut critic.grads);
    let q1 = params.q1.forward_train(x, cache1)[0];
    let q2 = params.q2.forward_train(x, cache2)[0];
    let (e1, e2) = (q1 - q_target, q2 - q_target);
    let d1 = SVector::<f32, 1>::new(factor * e1 * inv_n);
    let d2 = SVector::<f32, 1>::new(factor * e2 * inv_n);
    params.q1.backward(cache1, &d1, &mut grads.q1);
    params.q2.backward(cache2, &d2, &mut grads.q2);
    (q1, e1 * e1 + e2 * e2)
}

/// `concat(obs, action)`, the critic's input. `OA` must be `OBS + ACT`
/// (stable Rust cannot write the sum as a const generic argument, so the
/// agents take `OA` and check it at compile time).
#[inline]
pub fn critic_input<const OBS: usize, const ACT: usize, const OA: usize>(
    obs: &SVector<f32, OBS>,
    action: &SVector<f32, ACT>,
) -> SVector<f32, OA> {
    const {
        assert!(
            OA == OBS + ACT,
            "the critic input size OA must be OBS + ACT"
        )
    };
    let mut x = SVector::<f32, OA>::zeros();
    for (xi, &v) in x.iter_mut().zip(obs.iter().chain(action.iter())) {
        *xi = v;
    }
    x
}

/// The action part `∂/∂a` of a critic's input gradient `∂/∂[s; a]`.
#[inline]
pub fn action_part<const OBS: usize, const ACT: usize, const OA: usize>(
    d_input: &SVector<f32, OA>,
) -> SVector<f32, ACT> {
    const {
        assert!(
            OA == OBS + ACT,
            "the critic input size OA must be OBS + ACT"
        )
    };
    SVector::<f32, ACT>::from_fn(|i, _| d_input.get(OBS + i).copied().unwrap_or(0.0))
}

/// Polyak averaging `θ′ ← (1 − τ)·θ′ + τ·θ` (SB3's `polyak_update`:
/// `θ′.mul_(1 − τ).add_(θ, alpha = τ)`, the same two roundings).
pub fn polyak<P: Params>(target: &mut P, source: &P, tau: f32) {
    let keep = 1.0 - tau;
    for i in 0..P::TENSORS {
        for (t, &s) in target.tensor_mut(i).iter_mut().zip(source.tensor(i)) {
            *t = *t * keep + tau * s;
        }
    }
}

/// `low + ½(a + 1)(high − low)` per dimension (SB3's `unscale_action`),
/// then clipped to the bounds (rounding can step an ulp outside): the
/// actuator command for an action `a ∈ [−1, 1]`.
#[inline]
pub fn to_bounds<const ACT: usize>(
    space: &Continuous<ACT>,
    action: &SVector<f32, ACT>,
) -> SVector<f32, ACT> {
    let mut out = *action;
    for i in 0..ACT {
        out[i] = space.low[i] + 0.5 * (action[i] + 1.0) * (space.high[i] - space.low[i]);
    }
    space.command(&out)
}

/// A network started afresh as SB3 starts SAC's and TD3's: Adam with
/// `adam` and zero moments, [`torch_default_init`] from `rng`, zero
/// gradients.
pub(crate) fn torch_fresh<P: Params, R: Rng + ?Sized>(
    net: &mut TrainState<P>,
    adam: AdamConfig,
    rng: &mut R,
) {
    net.optimizer.config = adam;
    net.optimizer.reset();
    torch_default_init(&mut net.params, rng);
    net.zero_grad();
}

/// PyTorch's default initialisation of `nn.Linear` (what SB3's SAC and TD3
/// networks start from): every weight and bias uniform in
/// `[−1/√fan_in, 1/√fan_in)`, `fan_in` the layer's input size. Walks the
/// tensors of any network of [`Dense`](crate::nn::Dense) layers in order
/// (a bias takes the bound of the weight before it).
pub fn torch_default_init<P: Params, R: Rng + ?Sized>(net: &mut P, rng: &mut R) {
    let mut bound = 1.0;
    for i in 0..P::TENSORS {
        let shape = P::shape(i);
        if shape.tag & 0xFF00 == tag::WEIGHT {
            bound = 1.0 / math::sqrt(shape.cols.max(1) as f32);
        }
        for x in net.tensor_mut(i) {
            *x = rng::uniform_range(rng, -bound, bound);
        }
    }
}

/// The random draws of one minibatch of at most `BATCH` samples, made by
/// the agents' `update` and passed explicitly to their inner update, so a
/// test can replay recorded draws: the replay indices, a standard normal
/// `ε′` per sample for the next action (SAC's `a′ ~ π(s′)`, TD3's target
/// smoothing) and a standard normal `ε` per sample for SAC's `ã ~ π(s)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Draws<const ACT: usize, const BATCH: usize> {
    /// Replay indices.
    pub indices: [u32; BATCH],
    /// `ε′ ~ 𝒩(0, I)` for the next action.
    pub next_noise: [SVector<f32, ACT>; BATCH],
    /// `ε ~ 𝒩(0, I)` for the current policy's action (SAC only).
    pub pi_noise: [SVector<f32, ACT>; BATCH],
    /// Samples in use (`≤ BATCH`).
    pub len: usize,
}

impl<const ACT: usize, const BATCH: usize> Draws<ACT, BATCH> {
    /// No samples.
    pub const ZERO: Self = Self {
        indices: [0; BATCH],
        next_noise: [<SVector<f32, ACT> as Params>::ZERO; BATCH],
        pi_noise: [<SVector<f32, ACT> as Params>::ZERO; BATCH],
        len: 0,
    };

    /// Draws `len` samples from `rng`, in this order: the `len` replay
    /// indices (uniform in `0..stored`), then `ε′` sample by sample, then
    /// (when `with_pi_noise`) `ε` sample by sample; each noise vector is
    /// [`rng::fill_normal`] of `ACT` values.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for `len = 0`, `len > BATCH` or `stored = 0`;
    /// `rng` is not touched then.
    pub fn draw<R: Rng + ?Sized>(
        &mut self,
        rng: &mut R,
        len: usize,
        stored: usize,
        with_pi_noise: bool,
    ) -> Result<(), Error> {
        if len == 0 || len > BATCH || stored == 0 {
            return Err(Error::InvalidInput {
                what: "minibatch must hold 1..=BATCH samples of a non-empty buffer",
            });
        }
        let n = u32::try_from(stored).unwrap_or(u32::MAX);
        for index in &mut self.indices[..len] {
            *index = rng::below(rng, n);
        }
        for eps in &mut self.next_noise[..len] {
            rng::fill_normal(rng, eps.as_mut_slice());
        }
        if with_pi_noise {
            for eps in &mut self.pi_noise[..len] {
                rng::fill_normal(rng, eps.as_mut_slice());
            }
        }
        self.len = len;
        Ok(())
    }
}

impl<const ACT: usize, const BATCH: usize> Draws<ACT, BATCH> {
    /// Transition `k` of the minibatch: `replay`'s entry at `indices[k]`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for `k` past the indices or an index past
    /// the stored transitions.
    pub fn sample<const OBS: usize, const CAP: usize>(
        &self,
        replay: &ReplayBuffer<OBS, ACT, CAP>,
        k: usize,
    ) -> Result<Transition<OBS, ACT>, Error> {
        self.indices
            .get(k)
            .and_then(|&i| replay.get(i as usize))
            .ok_or(Error::InvalidInput {
                what: "minibatch index past the stored transitions",
            })
    }

    /// Checks that the minibatch holds `1..=BATCH` samples, each naming a
    /// stored transition.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] otherwise.
    pub fn check<const OBS: usize, const CAP: usize>(
        &self,
        replay: &ReplayBuffer<OBS, ACT, CAP>,
    ) -> Result<(), Error> {
        if self.len == 0 || self.len > BATCH {
            return Err(Error::InvalidInput {
                what: "minibatch must hold 1..=BATCH samples",
            });
        }
        for k in 0..self.len {
            self.sample(replay, k)?;
        }
        Ok(())
    }
}

/// The most gradient steps of one training round (`gradient_steps`):
/// 1 000. SB3's default is 1; a round of 1 000 is already a thousand
/// minibatch updates per environment step at `train_freq = 1`, and the
/// bound keeps a typo such as 4294967295 from a run that never ends.
pub const MAX_GRADIENT_STEPS: u32 = 1_000;

/// The most environment steps (or, for TD3's `policy_delay`, critic
/// updates) of a count or interval of the off-policy schedule
/// (`learning_starts`, `train_freq`, SAC's `target_update_interval`, TD3's
/// `policy_delay`): 10⁹, the longest budget `microrl train` accepts. A
/// larger value would only mean the event never happens in any run.
pub const MAX_INTERVAL: u32 = 1_000_000_000;

/// The settings SAC and TD3 share, named as SB3's: the replay ring's size,
/// the minibatch, the targets' Polyak rate, the discount, the learning
/// rate, and when the learning loop trains.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    /// Transitions the replay ring keeps (`≤ CAP`).
    pub buffer_size: u32,
    /// Environment steps of uniformly random actions before learning
    /// starts (`≤` [`MAX_INTERVAL`]).
    pub learning_starts: u32,
    /// Minibatch size (`≤ BATCH`).
    pub batch_size: u32,
    /// Polyak coefficient `τ` of the target networks.
    pub tau: f32,
    /// Discount `γ`.
    pub gamma: f32,
    /// Environment steps between training rounds (`1..=`[`MAX_INTERVAL`]).
    pub train_freq: u32,
    /// Gradient steps per training round (`1..=`[`MAX_GRADIENT_STEPS`]).
    pub gradient_steps: u32,
    /// Adam learning rate of every network.
    pub learning_rate: f32,
}

impl Schedule {
    /// A schedule whose every field has a value of its own, for checking
    /// that an algorithm's configuration hands each one over as itself.
    #[cfg(test)]
    pub(crate) const DISTINCT: Self = Self {
        buffer_size: 1,
        learning_starts: 2,
        batch_size: 3,
        tau: 0.25,
        gamma: 0.5,
        train_freq: 4,
        gradient_steps: 5,
        learning_rate: 0.125,
    };

    /// Checks every field for an agent with replay capacity `capacity` and
    /// minibatch capacity `batch`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first offending field.
    pub fn validate(&self, capacity: usize, batch: usize) -> Result<(), Error> {
        check(
            "buffer_size",
            self.buffer_size > 0 && self.buffer_size as usize <= capacity,
            "must be in 1..=CAP (the replay buffer's capacity)",
        )?;
        check(
            "batch_size",
            self.batch_size > 0 && self.batch_size as usize <= batch,
            "must be in 1..=BATCH (the agent's minibatch capacity)",
        )?;
        check(
            "tau",
            self.tau > 0.0 && self.tau <= 1.0,
            "must be in (0, 1]",
        )?;
        unit("gamma", self.gamma)?;
        check(
            "learning_starts",
            self.learning_starts <= MAX_INTERVAL,
            "must be <= 1000000000 (MAX_INTERVAL)",
        )?;
        check(
            "train_freq",
            (1..=MAX_INTERVAL).contains(&self.train_freq),
            "must be in 1..=1000000000 (MAX_INTERVAL)",
        )?;
        check(
            "gradient_steps",
            (1..=MAX_GRADIENT_STEPS).contains(&self.gradient_steps),
            "must be in 1..=1000 (MAX_GRADIENT_STEPS)",
        )?;
        check_lr(self.learning_rate)
    }

    /// The gradient steps made right after environment step number `steps`
    /// (counted from 1): `gradient_steps` when `steps` is past
    /// `learning_starts` and a multiple of `train_freq`, else 0.
    pub fn updates_after(&self, steps: u64) -> u32 {
        if steps > u64::from(self.learning_starts)
            && steps.is_multiple_of(u64::from(self.train_freq))
        {
            self.gradient_steps
        } else {
            0
        }
    }
}

/// A warm-up action: `ACT` draws uniform in `[−1, 1]` (SB3's random actions
/// for the first `learning_starts` steps).
fn warm_up_action<R: Rng + ?Sized, const ACT: usize>(rng: &mut R) -> SVector<f32, ACT> {
    SVector::<f32, ACT>::from_fn(|_, _| rng::uniform_range(rng, -1.0, 1.0))
}

/// An off-policy actor as its control loop acts with it: the actor's
/// weights alone, sampling an exploring action in `[−1, 1]` with its
/// log-probability (`0` when the actor has none, TD3's). Implemented by
/// SAC's [`SquashedGaussianActor`](super::sac::SquashedGaussianActor) and
/// TD3's [`NoisyActor`](super::td3::NoisyActor); a [`Field`] so a lagged
/// schedule's checkpoint holds the published copy.
pub trait Explore<const OBS: usize, const ACT: usize>: Field {
    /// Every weight zero (a `static` initialiser).
    const ZERO_ACTOR: Self;

    /// An exploring action for `obs` and its `log π(a|s)`, drawing from
    /// `rng` exactly as the learner's own exploration does (so a control
    /// loop acting with a copy of the learner's actor acts as the learner
    /// would, bit for bit).
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite observation or network output.
    fn explore<R: Rng + ?Sized>(
        &self,
        obs: &SVector<f32, OBS>,
        rng: &mut R,
    ) -> Result<(SVector<f32, ACT>, f32), Error>;
}

/// What the control loop of an off-policy learner acts with
/// ([`Behave`]): the published actor, the actuator bounds and the warm-up
/// of `learning_starts` uniformly random actions — the acting half of
/// [`OffPolicy::step`], with the control loop's own RNG stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Explorer<X, const ACT: usize> {
    /// The actor's published copy.
    pub actor: X,
    /// The actuator bounds.
    pub space: Continuous<ACT>,
    /// Ticks of uniformly random actions before the actor acts.
    pub learning_starts: u32,
}

impl<X, const ACT: usize> Explorer<X, ACT> {
    /// Every byte zero (a `static` initialiser); [`LaggedLearner::publish`](super::LaggedLearner::publish)
    /// fills it.
    pub const fn zero<const OBS: usize>() -> Self
    where
        X: Explore<OBS, ACT>,
    {
        Self {
            actor: X::ZERO_ACTOR,
            space: <Continuous<ACT> as Params>::ZERO,
            learning_starts: 0,
        }
    }
}

/// One tick of [`OffPolicy::step`]'s acting: a uniformly random action in
/// `[−1, 1]` while `step < learning_starts`, else the actor's exploring
/// action (with its log-probability in the tick), scaled to the bounds.
impl<X: Explore<OBS, ACT>, const OBS: usize, const ACT: usize> Behave<OBS> for Explorer<X, ACT> {
    type Space = Continuous<ACT>;

    fn behave<E, R>(
        &self,
        step: u64,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        on_episode: &mut impl FnMut(Episode),
    ) -> Result<Tick<OBS, SVector<f32, ACT>>, Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = Continuous<ACT>>,
        R: Rng + ?Sized,
    {
        let obs = cursor.obs;
        check_all_finite(obs.as_slice())?;
        let (action, log_prob) = if step < u64::from(self.learning_starts) {
            (warm_up_action(rng), 0.0)
        } else {
            self.actor.explore(&obs, rng)?
        };
        let step = cursor.advance(env, to_bounds(&self.space, &action), rng, on_episode)?;
        Ok(Tick::acted(obs, action, log_prob, &step))
    }
}

/// The published explorer in a lagged schedule's checkpoint: the actor's
/// section, the bounds, then `learning_starts` as a `u32`.
impl<X: Field, const ACT: usize> Field for Explorer<X, ACT> {
    const LEN: usize = X::LEN + <Continuous<ACT> as Field>::LEN + 4;

    fn fold_shapes(h: u32) -> u32 {
        <Continuous<ACT> as Field>::fold_shapes(X::fold_shapes(h))
    }

    fn save(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        self.actor.save(w)?;
        self.space.save(w)?;
        w.u32(self.learning_starts);
        Ok(())
    }

    fn load(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        self.actor.load(r)?;
        self.space.load(r)?;
        let learning_starts = r.u32()?;
        if r.commit() {
            self.learning_starts = learning_starts;
        }
        Ok(())
    }
}

/// What the learning loop's environment step ([`step`](Self::step))
/// needs of an off-policy agent; implemented by [`Sac`](super::sac::Sac)
/// and [`Td3`](super::td3::Td3).
pub trait OffPolicy<const OBS: usize, const ACT: usize>: Sized {
    /// What one gradient step reports.
    type Stats: Copy + core::fmt::Debug;

    /// The agent's validated [`Schedule`].
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first invalid field of the
    /// agent's configuration.
    fn schedule(&self) -> Result<Schedule, Error>;

    /// A training action for `obs` in `[−1, 1]` (what the replay buffer
    /// stores).
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite observation or network output.
    fn explore_action<R: Rng + ?Sized>(
        &self,
        obs: &SVector<f32, OBS>,
        rng: &mut R,
    ) -> Result<SVector<f32, ACT>, Error>;

    /// The actuator bounds.
    fn space(&self) -> &Continuous<ACT>;

    /// Stores a transition and counts the environment step; returns the
    /// new step count.
    ///
    /// # Errors
    /// The replay buffer's refusal (nothing changes then).
    fn record(&mut self, transition: &Transition<OBS, ACT>) -> Result<u64, Error>;

    /// What [`record`](Self::record) may change — the replay ring's write
    /// position, count and the slot it overwrites, and the step count — for
    /// [`forget`](Self::forget) to take the record back.
    fn record_mark(&self) -> (ReplayMark<OBS, ACT>, u64);

    /// Takes back the one [`record`](Self::record) made since `mark`: the
    /// ring and the step count as they were, byte for byte.
    fn forget(&mut self, mark: &(ReplayMark<OBS, ACT>, u64));

    /// One gradient step on a minibatch drawn from `rng`.
    ///
    /// # Errors
    /// The update's first error.
    fn train_once<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Result<Self::Stats, Error>;

    /// Environment steps taken.
    fn env_steps(&self) -> u64;

    /// One environment step of training: act (uniformly at random for the
    /// first `learning_starts` steps, then
    /// [`explore_action`](Self::explore_action)), step `env` through
    /// `cursor` (which resets it at an episode's end and reports the
    /// episode to `on_episode`), store the transition, and every
    /// `train_freq` steps past `learning_starts` run `gradient_steps`
    /// updates. Returns the last update's statistics, if any ran.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for an invalid configuration,
    /// [`Error::NonFinite`] for a non-finite observation, reward, network
    /// output or gradient, and the environment's own errors. A refused
    /// step changes nothing in the agent (the environment, `cursor` and
    /// the generator have moved on), except as
    /// [`learn_from`](Self::learn_from) says for `gradient_steps > 1`.
    fn step<E, R>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        mut on_episode: impl FnMut(Episode),
    ) -> Result<Option<Self::Stats>, Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = Continuous<ACT>>,
        R: Rng + ?Sized,
    {
        let schedule = self.schedule()?;
        let obs = cursor.obs;
        check_all_finite(obs.as_slice())?;
        let action = if self.env_steps() < u64::from(schedule.learning_starts) {
            warm_up_action(rng)
        } else {
            self.explore_action(&obs, rng)?
        };
        let command = to_bounds(self.space(), &action);
        let step = cursor.advance(env, command, rng, &mut on_episode)?;
        // Every value was checked (the observation above, the reward and
        // the next observation by `advance`, the action is in [−1, 1]).
        self.learn_from(
            &Transition {
                obs,
                action,
                reward: step.reward,
                next_obs: step.obs,
                terminated: step.terminated,
            },
            rng,
        )
    }

    /// The learner's part of one environment step: store `transition`,
    /// count the step, and run the gradient steps the [`Schedule`] makes
    /// after it ([`Schedule::updates_after`]), each on a minibatch drawn
    /// from `rng`. Returns the last update's statistics, if any ran.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for an invalid configuration, the replay
    /// buffer's refusal of the transition and an update's error. Each
    /// update is transactional (a refused one changes nothing), and when
    /// the first update after the transition refuses, the transition and
    /// the step count are taken back too: the call changes nothing in the
    /// agent. With `gradient_steps > 1` a refusal of a later update leaves
    /// the transition and the updates before it in place (each a completed
    /// call of [`update`](Self::train_once) of its own).
    fn learn_from<R: Rng + ?Sized>(
        &mut self,
        transition: &Transition<OBS, ACT>,
        rng: &mut R,
    ) -> Result<Option<Self::Stats>, Error> {
        let schedule = self.schedule()?;
        let mark = self.record_mark();
        let steps = self.record(transition)?;
        let mut stats = None;
        for k in 0..schedule.updates_after(steps) {
            match self.train_once(rng) {
                Ok(s) => stats = Some(s),
                Err(e) => {
                    if k == 0 {
                        self.forget(&mark);
                    }
                    return Err(e);
                }
            }
        }
        Ok(stats)
    }

    /// [`learn_from`](Self::learn_from) for a [`Tick`] a control loop
    /// acted ([`Explorer`]'s [`Behave::behave`]): its `obs`, `action` (in
    /// `[−1, 1]`), `reward`, `next_obs` and `terminated`; the behaviour
    /// log-probability plays no part (the critics' targets are off-policy
    /// already, Haarnoja et al. 2018, eq. 5–6; Fujimoto et al. 2018, eq. 10).
    ///
    /// # Errors
    /// As [`learn_from`](Self::learn_from); a non-finite value or an
    /// action outside `[−1, 1]` is the replay buffer's refusal.
    fn ingest<R: Rng + ?Sized>(
        &mut self,
        tick: &Tick<OBS, SVector<f32, ACT>>,
        rng: &mut R,
    ) -> Result<Option<Self::Stats>, Error> {
        let transition = Transition {
            obs: tick.obs,
            action: tick.action,
            reward: tick.reward,
            next_obs: tick.next_obs,
            terminated: tick.terminated,
        };
        self.learn_from(&transition, rng)
    }
}

mod impls;
pub(crate) use impls::offpolicy_impls;

/// `env`'s action space, checked: finite bounds with `low ≤ high`.
///
/// # Errors
/// [`Error::NonFinite`] or [`Error::OutOfDomain`] for bad bounds.
pub fn checked_space<E, const ACT: usize>(env: &E) -> Result<Continuous<ACT>, Error>
where
    E: Env<Space = Continuous<ACT>>,
{
    let space = env.action_space();
    check_all_finite(&space.low)?;
    check_all_finite(&space.high)?;
    space.check_domain()?;
    Ok(space)
}

/// The deployed policy of both off-policy learners: a network whose last
/// layer ends in `tanh` (so its output lies in `[−1, 1]`) and the actuator
/// bounds it is scaled to, serialised together (network, then bounds).
///
/// - From SAC ([`Sac::policy`](super::sac::Sac::policy)): the trunk followed
///   by the mean head with a `tanh` activation — `tanh(μ(s))`, the squashed
///   Gaussian's deterministic action (SB3's `predict(deterministic=True)`).
/// - From TD3 ([`Td3::policy`](super::td3::Td3::policy)): the actor itself.
///
/// [`Controller::act`] is [`to_bounds`] of the network's output, the same
/// function the agents' own `act` runs, so deployment acts bit for bit as the
/// agent did in its evaluation. No observation normaliser: SB3's SAC and TD3
/// train on raw observations, and so do these learners.
#[derive(Clone, Debug, PartialEq)]
pub struct TanhPolicy<N, const ACT: usize> {
    /// The network, ending in `tanh`.
    pub net: N,
    /// The actuator bounds.
    pub space: Continuous<ACT>,
}

impl_params!(impl[N: Params, const ACT: usize] TanhPolicy<N, ACT> { net: N, space: Continuous<ACT> });

/// The deterministic command for `obs` of a network ending in `tanh`:
/// [`to_bounds`] of its output, refusing a non-finite observation or output.
///
/// # Errors
/// [`Error::NonFinite`] for a non-finite observation or network output.
#[inline]
pub fn act_tanh<N, const OBS: usize, const ACT: usize>(
    net: &N,
    space: &Continuous<ACT>,
    obs: &SVector<f32, OBS>,
) -> Result<SVector<f32, ACT>, Error>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
{
    check_all_finite(obs.as_slice())?;
    let a = net.forward(obs);
    check_all_finite(a.as_slice())?;
    Ok(to_bounds(space, &a))
}

impl<N, const OBS: usize, const ACT: usize> Controller<OBS> for TanhPolicy<N, ACT>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
{
    type Action = SVector<f32, ACT>;

    fn act(&self, obs: &SVector<f32, OBS>) -> Result<SVector<f32, ACT>, Error> {
        act_tanh(&self.net, &self.space, obs)
    }
}

#[cfg(test)]
mod tests;
