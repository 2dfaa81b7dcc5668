//! Soft actor-critic (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms
//! and Applications", arXiv:1812.05905): off-policy maximum-entropy RL with
//! twin critics, Polyak-averaged targets, a tanh-squashed Gaussian actor and
//! an automatically tuned entropy coefficient — SB3's `SAC`, in fixed memory.
//!
//! **Networks.** The actor ([`SquashedGaussianActor`]) is a trunk `OBS → H`
//! with a mean head and a state-dependent `log_std` head (`H → ACT` each;
//! `log_std` clamped to `[−20, 2]`); `a = tanh(μ + σε)` lies in `[−1, 1]`
//! and the plant receives `low + ½(a + 1)(high − low)`
//! ([`to_bounds`]). Two critics `Q₁, Q₂`
//! read `concat(s, a)` (`OA = OBS + ACT` inputs, checked at compile time)
//! with target copies `Q′₁, Q′₂`. Networks start from PyTorch's default
//! `nn.Linear` initialisation, as SB3's. [`SacMlp`] is SB3's architecture
//! (two ReLU hidden layers of `H` units for actor and critics).
//!
//! **One gradient step** ([`Sac::update`], [`Sac::update_with`]) on a
//! minibatch of `B` transitions `(s, a, r, s′, d)` drawn uniformly from the
//! replay buffer (`d` = terminated; a truncated step bootstraps):
//!
//! ```text
//! α = exp(log α)                      (or the fixed ent_coef), held constant below
//! a′, log π(a′|s′) ~ π(·|s′)           with noise ε′
//! q_target = r + γ(1 − d)(minᵢ Q′ᵢ(s′, a′) − α log π(a′|s′))       (eq. 2–3)
//! critic loss  J_Q = ½ Σᵢ mean((Qᵢ(s, a) − q_target)²)               (SB3's ½·ΣMSE)
//!   → one Adam step on Q₁, Q₂
//! ã, log π(ã|s) ~ π(·|s)               with noise ε, reparameterised
//! actor loss   J_π = mean(α log π(ã|s) − minᵢ Qᵢ(s, ã))              (eq. 7, 12)
//!   with the *updated* critics; the gradient flows through ã into the
//!   critics' input, the critics' weights are not changed by it
//!   → one Adam step on the actor
//! α loss       J_α = −mean(log α · (log π(ã|s) + H̄))                 (eq. 18, SB3's form)
//!   H̄ = target_entropy (default −dim A) → one Adam step on log α
//! every target_update_interval gradient steps:  θ′ ← (1 − τ)θ′ + τθ
//! ```
//!
//! This is SB3's `SAC.train` step for the same minibatch and noise: SB3
//! samples `ã` before the critic step and steps `log α` first, but `ã` and
//! `log π(ã|s)` come from the actor, which the critic step does not change,
//! and SB3 also holds the pre-update `α` for both losses. The order of
//! statements here is CleanRL's `sac_continuous_action.py` (critic, actor,
//! α, targets). One difference: the target interval counts gradient steps
//! over the whole run (SB3 counts them within one `train` call).
//!
//! **Acting.** [`Controller::act`] is the deterministic `tanh(μ(s))` scaled
//! to the bounds — what the deployed [`TanhPolicy`] computes bit for bit
//! ([`Sac::policy`]). [`Sac::explore`] samples `ã` for training.
//! [`Sac::step`](crate::algo::offpolicy::OffPolicy::step) is the learning loop's step: uniformly random actions for
//! the first `learning_starts` steps, then sampled ones; store the
//! transition; every `train_freq` steps (once past `learning_starts`)
//! `gradient_steps` updates.
//!
//! **Memory.** Everything is in the struct, sized by const generics: actor
//! and critics with Adam ([`TrainState`]), the target critics, `log α` with
//! Adam, the replay ring of `CAP` transitions, one activation cache per
//! network, and the scratch of a transactional update: the critics'
//! parameters after the step being checked (one critic pair; the actor's
//! loss flows through them by [`Layer::backward_input`], which computes
//! no parameter gradient). A minibatch's draws (`BATCH`
//! indices and `2·BATCH` noise vectors) live on the stack during
//! [`Sac::update`]. Nothing allocates.
//!
//! **Errors.** A non-finite observation or reward refuses the step before
//! anything is stored or trained: buffer, weights and counters are
//! unchanged (the environment has stepped and the generator has advanced).
//! An update is transactional: the critics' Adam step is computed into
//! scratch without being taken, the actor's loss and gradient are computed
//! through those next critics, and the critics', the actor's and `log α`'s
//! gradients and learning rates are all checked before the first step is
//! taken — a refused update changes nothing in the agent, and a successful
//! one computes the same bits as taking each step in turn.
//!
//! **Training loop and checkpoints.** [`Sac`] is a
//! [`Learner`](crate::train::Learner) whose iteration is one
//! [`Sac::step`](crate::algo::offpolicy::OffPolicy::step) (so the [`Trainer`](crate::train::Trainer)'s evaluation
//! interval, hooks and early stop fall on environment steps), and an
//! [`AgentState`](crate::checkpoint::AgentState) whose checkpoint holds
//! the networks, their Adam states, the replay ring and the counters: a
//! run resumes bit for bit.
//!
//! [`Controller::act`]: super::Controller::act

mod actor;
mod config;
mod learner;
mod persist;
mod update;

#[cfg(test)]
pub(crate) mod parity;
#[cfg(test)]
pub(crate) mod tests;

pub use actor::{LOG_STD_MAX, LOG_STD_MIN, SQUASH_EPS, SquashedCache, SquashedGaussianActor};
pub use config::{ADAM_TORCH, EntCoef, SacConfig};
pub use update::SacStats;

use nalgebra::SVector;
use rand_core::Rng;

use super::offpolicy::{Draws, Explore, TanhPolicy, Twin, checked_space, to_bounds, torch_fresh};
use super::replay::ReplayBuffer;
use crate::env::{Continuous, Env};
use crate::error::Error;
use crate::math;
use crate::nn::{Chain, Dense, Layer, Mlp, Relu, Tanh};
use crate::optim::{Optimizer, TrainState};
use crate::params::Params;

/// SAC with SB3's architecture: actor trunk and critics with two ReLU hidden
/// layers of `H` units, `OBS` observations, `ACT` actions, `OA = OBS + ACT`
/// critic inputs, a replay ring of `CAP` transitions and minibatches of up
/// to `BATCH` samples.
pub type SacMlp<
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const H: usize,
    const CAP: usize,
    const BATCH: usize,
> = Sac<
    Chain<Dense<OBS, H, Relu>, Dense<H, H, Relu>>,
    Mlp<OA, H, 1, Relu>,
    OBS,
    ACT,
    OA,
    H,
    CAP,
    BATCH,
>;

/// The deployed policy of a SAC agent with trunk `T`: `tanh(μ(s))` scaled
/// to the bounds (see [`TanhPolicy`]).
pub type SacPolicy<T, const H: usize, const ACT: usize> =
    TanhPolicy<Chain<T, Dense<H, ACT, Tanh>>, ACT>;

/// A SAC agent (see the [module docs](self)): trunk `T: OBS → H`, critic
/// network `Q: OA → 1`.
pub struct Sac<
    T,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const H: usize,
    const CAP: usize,
    const BATCH: usize,
> where
    T: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, H>>,
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    /// Hyper-parameters.
    pub config: SacConfig,
    /// The squashed Gaussian actor with its gradient and Adam state.
    pub actor: TrainState<SquashedGaussianActor<T, H, ACT>>,
    /// `Q₁, Q₂` with their gradient and one Adam state.
    pub critic: TrainState<Twin<Q>>,
    /// The Polyak-averaged target critics `Q′₁, Q′₂`.
    pub critic_target: Twin<Q>,
    /// `log α` with its gradient and Adam state (unused for a fixed `α`).
    pub log_alpha: TrainState<SVector<f32, 1>>,
    /// The replay ring.
    pub replay: ReplayBuffer<OBS, ACT, CAP>,
    /// The actuator bounds, copied from the environment by [`Sac::init`].
    pub space: Continuous<ACT>,
    /// Environment steps taken by [`Sac::step`](crate::algo::offpolicy::OffPolicy::step).
    pub steps: u64,
    /// Gradient steps taken.
    pub n_updates: u64,
    actor_cache: SquashedCache<T::Cache, H, ACT>,
    critic_cache: (Q::Cache, Q::Cache),
    /// The critics after this update's step, before it is taken (scratch
    /// of [`update_with`](Self::update_with), which trains the actor
    /// through them).
    critic_next: Twin<Q>,
}

impl<
    T,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const H: usize,
    const CAP: usize,
    const BATCH: usize,
> Sac<T, Q, OBS, ACT, OA, H, CAP, BATCH>
where
    T: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, H>>,
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    pub(crate) const SIZES: () = assert!(
        OA == OBS + ACT,
        "Sac: the critic input size OA must be OBS + ACT"
    );

    /// An all-zero agent (usable in a `static`); [`init`](Self::init)
    /// before use.
    pub const ZERO: Self = Self::new(SacConfig::ZERO);

    /// An agent with `config` and zero weights; [`init`](Self::init)
    /// before use.
    pub const fn new(config: SacConfig) -> Self {
        let () = Self::SIZES;
        Self {
            config,
            actor: TrainState::new(config.adam),
            critic: TrainState::new(config.adam),
            critic_target: Twin::ZERO,
            log_alpha: TrainState::new(config.adam),
            replay: ReplayBuffer::ZERO,
            // Zero bounds until `init` sets the plant's: every byte of
            // `ZERO` is zero, so a `static` agent lands in `.bss`.
            space: <Continuous<ACT> as crate::params::Params>::ZERO,
            steps: 0,
            n_updates: 0,
            actor_cache: SquashedGaussianActor::<T, H, ACT>::ZERO_CACHE,
            critic_cache: (Q::ZERO_CACHE, Q::ZERO_CACHE),
            critic_next: Twin::ZERO,
        }
    }

    /// Starts training from scratch on `env`'s action space: PyTorch's
    /// default initialisation of the actor, then of the critics (the
    /// targets copy them), `log α = ln(initial α)`, fresh Adam states, an
    /// empty replay ring of `buffer_size`, zero counters.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for an invalid configuration;
    /// [`Error::OutOfDomain`] for non-finite bounds or `low > high`.
    /// Nothing changes then.
    pub fn init<E, R>(&mut self, env: &E, rng: &mut R) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = Continuous<ACT>>,
        R: Rng + ?Sized,
    {
        self.config.validate(CAP, BATCH)?;
        self.space = checked_space(env)?;
        let adam = self.config.adam;
        torch_fresh(&mut self.actor, adam, rng);
        torch_fresh(&mut self.critic, adam, rng);
        self.critic_target.copy_from(&self.critic.params);
        self.log_alpha.optimizer.config = adam;
        self.log_alpha.optimizer.reset();
        self.log_alpha.params[0] = math::ln(self.config.ent_coef.initial());
        self.log_alpha.zero_grad();
        self.replay.resize(self.config.buffer_size as usize)?;
        self.steps = 0;
        self.n_updates = 0;
        Ok(())
    }

    /// The entropy coefficient in use: `exp(log α)` when learned, the
    /// configured constant otherwise.
    pub fn alpha(&self) -> f32 {
        if self.config.ent_coef.is_auto() {
            math::exp(self.log_alpha.params[0])
        } else {
            self.config.ent_coef.initial()
        }
    }

    /// A training action for `obs`: `a = tanh(μ + σε)` with fresh noise
    /// `ε` from `rng` (ACT normals, [`rng::fill_normal`](crate::rng::fill_normal)), in `[−1, 1]`
    /// (what the replay buffer stores), and its actuator command.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite observation or network output.
    pub fn explore<R: Rng + ?Sized>(
        &self,
        obs: &SVector<f32, OBS>,
        rng: &mut R,
    ) -> Result<(SVector<f32, ACT>, SVector<f32, ACT>), Error> {
        let (action, _) = Explore::explore(&self.actor.params, obs, rng)?;
        Ok((action, to_bounds(&self.space, &action)))
    }

    /// One gradient step on a minibatch of `batch_size` transitions drawn
    /// from `rng` ([`Draws::draw`]: the indices, then `ε′`, then `ε`), by
    /// [`update_with`](Self::update_with).
    ///
    /// # Errors
    /// As [`update_with`](Self::update_with); [`Error::InvalidInput`] for
    /// an empty replay buffer.
    pub fn update<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Result<SacStats, Error> {
        self.config.validate(CAP, BATCH)?;
        let mut draws = Draws::<ACT, BATCH>::ZERO;
        draws.draw(
            rng,
            self.config.batch_size as usize,
            self.replay.len(),
            true,
        )?;
        self.update_with(&draws)
    }

    /// The deployable policy: `tanh(μ(s))` scaled to the bounds, acting
    /// bit for bit as [`Controller::act`] on this agent.
    ///
    /// [`Controller::act`]: super::Controller::act
    pub fn policy(&self) -> SacPolicy<T, H, ACT>
    where
        T: Clone,
    {
        TanhPolicy {
            net: self.actor.params.deployed(),
            space: self.space,
        }
    }

    /// Copies the deployable policy into `out` (caller-owned memory): the
    /// trunk and the mean head with a `tanh` activation, and the bounds —
    /// what [`policy`](Self::policy) returns, without the copy on the stack.
    pub fn export(&self, out: &mut SacPolicy<T, H, ACT>) {
        let actor = &self.actor.params;
        out.net.first.copy_from(&actor.trunk);
        out.net.second = Dense::from_parts(actor.mu.weight, actor.mu.bias);
        out.space = self.space;
    }
}

impl<
    T,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const H: usize,
    const CAP: usize,
    const BATCH: usize,
> core::fmt::Debug for Sac<T, Q, OBS, ACT, OA, H, CAP, BATCH>
where
    T: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, H>>,
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Sac")
            .field("config", &self.config)
            .field("steps", &self.steps)
            .field("n_updates", &self.n_updates)
            .field("replay_len", &self.replay.len())
            .field("alpha", &self.alpha())
            .finish_non_exhaustive()
    }
}
