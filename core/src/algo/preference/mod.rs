//! A Bradley–Terry reward model: a reward learned from pairwise preferences
//! between trajectory segments (notes 001 and 002 §10; Christiano et al.,
//! "Deep reinforcement learning from human preferences", 2017).
//!
//! A robotics user often cannot write the reward down but can say which of
//! two short clips of the robot is better. The model turns such judgements
//! into a per-step reward that any agent trains on.
//!
//! **Model.** A network `r_θ(s)` (`Network<OBS, 1>`) scores the state a step
//! leads to, and one learned scalar `b` ([`RewardModel::fallen`]) scores the
//! absorbing state an episode enters when it terminates. A [`Segment`] is `L`
//! consecutive steps of one episode: the first `live` lead to live states,
//! the remaining `L − live` (if the episode terminated inside the segment)
//! to the absorbing state. Its return is
//!
//! `R(σ) = Σ_{t<live} r_θ(s_t) + (L − live)·b`,
//!
//! and the Bradley–Terry model says the user prefers `σ_w` to `σ_l` with
//! probability `σ(R_w − R_l)`. Training minimises the negative
//! log-likelihood of the given [`Preference`]s,
//!
//! `ℓ = −log σ(Δ) = softplus(−Δ)`, `Δ = R_w − R_l`,
//!
//! whose derivatives are `∂ℓ/∂R_w = −σ(−Δ)` and `∂ℓ/∂R_l = σ(−Δ)`;
//! backpropagating them through every live state of both segments gives the
//! gradient (checked against f64 finite differences in the tests).
//!
//! **The reward handed to RL.** Preferences only see differences of
//! returns, so `r_θ` and `b` are known up to a common constant. The
//! reward of a step is therefore measured from the absorbing state:
//!
//! `r̂ = r_θ(s') − b` for a step into a live state `s'`, `r̂ = 0` for the
//! step that terminates the episode.
//!
//! This is exact, not a heuristic: in the infinite-horizon problem where a
//! terminated episode keeps earning `b` forever, subtracting `b` from every
//! reward lowers every value by `b/(1 − γ)` and changes no preference
//! between policies; after the shift the absorbing state earns 0, which is
//! what bootstrapping from 0 at termination assumes. [`LearnedReward`]
//! wraps an environment so that it reports `r̂` (its termination and
//! truncation are the plant's own).
//!
//! **Atomic steps.** [`RewardLearner::step`] checks every segment and index
//! of its minibatch before it computes anything, and the optimiser refuses a
//! non-finite gradient, so a refused step changes nothing. The caller owns
//! the segments and the preference list (and shuffles it), which keeps the
//! learner's memory at four copies of the model.

#[cfg(test)]
mod tests;

use nalgebra::SVector;
use rand_core::Rng;

use crate::config::check;
use crate::env::{ActionOf, Env, EnvState, Step};
use crate::error::{Error, check_finite};
use crate::impl_params;
use crate::math;
use crate::nn::{Layer, Network, gain};
use crate::optim::{AdamConfig, Optimizer, TrainState, clip_grad_norm};
use crate::params::Params;

/// The learned reward: `r_θ(s)` for live states and `b` for the absorbing
/// (terminated) state. An inference-only value: no gradient or optimiser state.
#[derive(Clone, Debug, PartialEq)]
pub struct RewardModel<N> {
    /// `r_θ`, the reward of reaching a live state.
    pub net: N,
    /// `b`, the reward of each step spent in the absorbing state.
    pub fallen: SVector<f32, 1>,
}

impl_params!(impl[N: Params] RewardModel<N> { net: N, fallen: SVector<f32, 1> });

impl<N: Params> RewardModel<N> {
    /// All-zero weights, for `static`s; initialise with [`init`](Self::init).
    pub const ZERO: Self = <Self as Params>::ZERO;
}

impl<N: Layer> RewardModel<N> {
    /// Orthogonal initialisation of `r_θ` (hidden gain √2, output gain 1,
    /// as a critic) and `b = 0`.
    pub fn init<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        self.net.init_orthogonal(rng, gain::HIDDEN, gain::VALUE);
        self.fallen[0] = 0.0;
    }

    /// The reward handed to RL for a step into the live state `next_obs`:
    /// `r_θ(s') − b` (a terminating step earns 0; see the module docs).
    pub fn reward<const OBS: usize>(&self, next_obs: &SVector<f32, OBS>) -> f32
    where
        N: Network<OBS, 1>,
    {
        self.net.forward(next_obs)[0] - self.fallen[0]
    }

    /// The segment's return `R(σ) = Σ_{t<live} r_θ(s_t) + (L − live)·b`,
    /// summed from the first step.
    ///
    /// The segment must be valid ([`Segment::check`]): `live ≤ L`.
    pub fn segment_return<const OBS: usize, const L: usize>(&self, segment: &Segment<OBS, L>) -> f32
    where
        N: Network<OBS, 1>,
    {
        let live = segment.live();
        let mut ret = 0.0;
        for s in &segment.obs[..live] {
            ret += self.net.forward(s)[0];
        }
        ret + (L - live) as f32 * self.fallen[0]
    }

    /// The negative log-likelihood of one minibatch of preferences (summed,
    /// not averaged) and how many of them the model ranks the given way
    /// round (`Δ > 0`); when `grads` is given, `scale · ∂ℓ/∂θ` summed over
    /// the minibatch is added into it (not cleared first).
    ///
    /// # Errors
    /// As [`check_batch`].
    pub fn loss<const OBS: usize, const L: usize>(
        &self,
        segments: &[Segment<OBS, L>],
        batch: &[Preference],
        mut grads: Option<(&mut Self, &mut N::Cache, f32)>,
    ) -> Result<(f32, usize), Error>
    where
        N: Network<OBS, 1>,
    {
        check_batch(segments, batch)?;
        let mut loss = 0.0;
        let mut ranked = 0;
        for p in batch {
            let (w, l) = (&segments[p.preferred as usize], &segments[p.other as usize]);
            let delta = self.segment_return(w) - self.segment_return(l);
            // ℓ = softplus(−Δ); ∂ℓ/∂Δ = −σ(−Δ).
            loss += math::softplus(-delta);
            ranked += usize::from(delta > 0.0);
            if let Some((grads, cache, scale)) = grads.as_mut() {
                let d_delta = -sigmoid(-delta) * *scale;
                self.backward_segment(w, d_delta, grads, cache);
                self.backward_segment(l, -d_delta, grads, cache);
            }
        }
        Ok((loss, ranked))
    }

    /// Adds `d_ret · ∂R(σ)/∂θ` into `grads`.
    fn backward_segment<const OBS: usize, const L: usize>(
        &self,
        segment: &Segment<OBS, L>,
        d_ret: f32,
        grads: &mut Self,
        cache: &mut N::Cache,
    ) where
        N: Network<OBS, 1>,
    {
        let live = segment.live();
        let d_out = SVector::<f32, 1>::new(d_ret);
        for s in &segment.obs[..live] {
            self.net.forward_train(s, cache);
            self.net.backward(cache, &d_out, &mut grads.net);
        }
        grads.fallen[0] += (L - live) as f32 * d_ret;
    }
}

/// `σ(x) = 1/(1 + e^{−x})`, without overflow for large `|x|`.
fn sigmoid(x: f32) -> f32 {
    if x >= 0.0 {
        1.0 / (1.0 + math::exp(-x))
    } else {
        let e = math::exp(x);
        e / (1.0 + e)
    }
}

/// `L` consecutive steps of one episode: the states the steps led to, of
/// which the first `live` are live; the rest of the segment is spent in the
/// absorbing state after the episode terminated (their `obs` are ignored).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Segment<const OBS: usize, const L: usize> {
    /// The state after each step (`obs[t]` for `t < live` is used).
    pub obs: [SVector<f32, OBS>; L],
    /// Number of steps that led to live states (`L` if the episode did not
    /// terminate inside the segment).
    pub live: u32,
}

impl<const OBS: usize, const L: usize> Segment<OBS, L> {
    /// An empty segment (`live = 0`), for `static`s.
    pub const ZERO: Self = Self {
        obs: [<SVector<f32, OBS> as Params>::ZERO; L],
        live: 0,
    };

    /// `live` as an index, clamped to `L` (a checked segment has `live ≤ L`).
    fn live(&self) -> usize {
        (self.live as usize).min(L)
    }

    /// Checks the segment: `live ≤ L` and every live state finite.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] (`"segment live count exceeds its length"`),
    /// [`Error::NonFinite`] for a non-finite live state.
    pub fn check(&self) -> Result<(), Error> {
        if self.live as usize > L {
            return Err(Error::InvalidInput {
                what: "segment live count exceeds its length",
            });
        }
        for s in &self.obs[..self.live as usize] {
            for &x in s.iter() {
                check_finite(x)?;
            }
        }
        Ok(())
    }
}

/// One judgement: segment `preferred` is better than segment `other`
/// (indices into the caller's segment slice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Preference {
    /// Index of the preferred segment.
    pub preferred: u32,
    /// Index of the other segment.
    pub other: u32,
}

/// Checks a minibatch: not empty, every index inside `segments`, no
/// segment compared with itself, every segment used valid.
///
/// # Errors
/// [`Error::InvalidInput`] naming what is wrong; as [`Segment::check`].
pub fn check_batch<const OBS: usize, const L: usize>(
    segments: &[Segment<OBS, L>],
    batch: &[Preference],
) -> Result<(), Error> {
    if batch.is_empty() {
        return Err(Error::InvalidInput {
            what: "no preferences in the batch",
        });
    }
    for p in batch {
        let (w, l) = (p.preferred as usize, p.other as usize);
        let (Some(sw), Some(sl)) = (segments.get(w), segments.get(l)) else {
            return Err(Error::InvalidInput {
                what: "preference names a segment past the end",
            });
        };
        if w == l {
            return Err(Error::InvalidInput {
                what: "preference compares a segment with itself",
            });
        }
        sw.check()?;
        sl.check()?;
    }
    Ok(())
}

/// Hyper-parameters of reward-model training.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields, default))]
pub struct RewardConfig {
    /// Adam learning rate.
    pub learning_rate: f32,
    /// Global gradient-norm clip.
    pub max_grad_norm: f32,
    /// Adam's `β₁`, `β₂`, `ε`.
    pub adam: AdamConfig,
}

impl RewardConfig {
    /// Defaults: learning rate 1e-3, grad-norm clip 10, Adam (0.9, 0.999, 1e-8).
    pub const DEFAULT: Self = Self {
        learning_rate: 1e-3,
        max_grad_norm: 10.0,
        adam: AdamConfig::DEFAULT,
    };

    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first invalid field.
    pub fn validate(&self) -> Result<(), Error> {
        let lr = self.learning_rate;
        check(
            "learning_rate",
            lr.is_finite() && lr > 0.0,
            "must be finite and > 0",
        )?;
        let g = self.max_grad_norm;
        check(
            "max_grad_norm",
            g.is_finite() && g > 0.0,
            "must be finite and > 0",
        )?;
        self.adam.validate()
    }
}

impl Default for RewardConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What one training step or one evaluation measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PreferenceStats {
    /// Mean `−log σ(Δ)` over the preferences.
    pub loss: f32,
    /// Fraction of preferences the model ranks the given way round (`Δ > 0`).
    pub accuracy: f32,
    /// Gradient norm before clipping (0 for an evaluation).
    pub grad_norm: f32,
}

/// A reward model with its training state: parameters, gradient
/// accumulator, Adam moments and one forward-pass cache.
#[derive(Clone, Debug, PartialEq)]
pub struct RewardLearner<N: Layer> {
    /// Model, gradients and optimiser.
    pub train: TrainState<RewardModel<N>>,
    /// Hyper-parameters.
    pub config: RewardConfig,
    cache: N::Cache,
}

impl<N: Layer> RewardLearner<N> {
    /// Zeroed, with the default configuration; `const` for `static`s.
    /// Initialise the model with [`RewardModel::init`] before training.
    pub const ZERO: Self = Self {
        train: TrainState::new(AdamConfig::DEFAULT),
        config: RewardConfig::DEFAULT,
        cache: N::ZERO_CACHE,
    };

    /// The model being trained.
    pub fn model(&self) -> &RewardModel<N> {
        &self.train.params
    }

    /// One Adam step on the mean loss of `batch`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for an invalid configuration,
    /// [`Error::InvalidInput`] or [`Error::NonFinite`] for an invalid
    /// minibatch ([`check_batch`]), [`Error::NonFinite`] for a non-finite
    /// loss or gradient. Nothing changes on error.
    pub fn step<const OBS: usize, const L: usize>(
        &mut self,
        segments: &[Segment<OBS, L>],
        batch: &[Preference],
    ) -> Result<PreferenceStats, Error>
    where
        N: Network<OBS, 1>,
    {
        self.config.validate()?;
        check_batch(segments, batch)?;
        let inv_batch = 1.0 / batch.len() as f32;
        let TrainState {
            params,
            grads,
            optimizer,
        } = &mut self.train;
        grads.set_zero();
        let (loss, ranked) =
            params.loss(segments, batch, Some((grads, &mut self.cache, inv_batch)))?;
        check_finite(loss)?;
        let grad_norm = clip_grad_norm(grads, self.config.max_grad_norm)?;
        optimizer.config = self.config.adam;
        optimizer.step(params, grads, self.config.learning_rate)?;
        Ok(PreferenceStats {
            loss: loss * inv_batch,
            accuracy: ranked as f32 * inv_batch,
            grad_norm,
        })
    }
}

/// Mean loss and accuracy of `model` on `preferences` (no gradient).
///
/// # Errors
/// As [`check_batch`].
pub fn evaluate<N, const OBS: usize, const L: usize>(
    model: &RewardModel<N>,
    segments: &[Segment<OBS, L>],
    preferences: &[Preference],
) -> Result<PreferenceStats, Error>
where
    N: Network<OBS, 1>,
{
    let (loss, ranked) = model.loss(segments, preferences, None)?;
    let n = preferences.len() as f32;
    Ok(PreferenceStats {
        loss: loss / n,
        accuracy: ranked as f32 / n,
        grad_norm: 0.0,
    })
}

/// An environment whose reward is a learned one: `r̂ = r_θ(s') − b` for a
/// step into a live state, 0 for the terminating step (module docs).
/// Termination and truncation are the wrapped plant's own.
#[derive(Clone, Debug, PartialEq)]
pub struct LearnedReward<E, N> {
    /// The plant.
    pub env: E,
    /// The reward model (fixed while the agent trains).
    pub model: RewardModel<N>,
    /// `false`: report the plant's own reward instead (an evaluation
    /// environment of the same type as the training one).
    pub learned: bool,
}

impl<E, N> LearnedReward<E, N> {
    /// `env` rewarded by `model`.
    pub const fn new(env: E, model: RewardModel<N>) -> Self {
        Self {
            env,
            model,
            learned: true,
        }
    }

    /// `env` with its own reward: for judging an agent trained on
    /// [`new`](Self::new)'s learned reward.
    pub const fn scored_by_plant(env: E, model: RewardModel<N>) -> Self {
        Self {
            env,
            model,
            learned: false,
        }
    }
}

impl<E, N, const OBS: usize> Env for LearnedReward<E, N>
where
    E: Env<Obs = SVector<f32, OBS>>,
    N: Network<OBS, 1>,
{
    type Obs = E::Obs;
    type Space = E::Space;
    const SOLVED_RETURN: f32 = E::SOLVED_RETURN;

    fn action_space(&self) -> Self::Space {
        self.env.action_space()
    }

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Self::Obs {
        self.env.reset(rng)
    }

    fn step(&mut self, action: ActionOf<Self>) -> Result<Step<Self::Obs>, Error> {
        let mut step = self.env.step(action)?;
        if !self.learned {
            return Ok(step);
        }
        step.reward = if step.terminated {
            0.0
        } else {
            self.model.reward(&step.obs)
        };
        Ok(step)
    }
}

/// The plant's state (the reward model is configuration).
impl<E: EnvState, N> EnvState for LearnedReward<E, N> {
    const TAG: u32 = E::TAG;
    const WORDS: usize = E::WORDS;

    fn save_state(&self, out: &mut [f64]) {
        self.env.save_state(out);
    }

    fn restore_state(&mut self, words: &[f64]) -> Result<(), Error> {
        self.env.restore_state(words)
    }
}
