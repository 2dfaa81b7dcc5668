//! Twin delayed deep deterministic policy gradient (Fujimoto, van Hoof &
//! Meger 2018, "Addressing Function Approximation Error in Actor-Critic
//! Methods", arXiv:1802.09477) — SB3's `TD3`, in fixed memory.
//!
//! **Networks.** A deterministic actor `μ: OBS → ACT` ending in `tanh`
//! (its output is the action in `[−1, 1]`; the plant receives
//! `low + ½(a + 1)(high − low)`, [`to_bounds`]), twin critics `Q₁, Q₂` on
//! `concat(s, a)` (`OA = OBS + ACT`, checked at compile time), and target
//! copies `μ′, Q′₁, Q′₂`. PyTorch's default `nn.Linear` initialisation, as
//! SB3's. [`Td3Mlp`] is SB3's architecture with two ReLU hidden layers of
//! `H` units (SB3's default widths are 400 and 300; both layers are `H`
//! here).
//!
//! **One gradient step** ([`Td3::update`], [`Td3::update_with`]) on a
//! minibatch `(s, a, r, s′, d)` (`d` = terminated), the update counter `n`
//! counted from 1 as SB3's `_n_updates`:
//!
//! ```text
//! ã′ = clip(μ′(s′) + clip(σ̃ ε′, −c, c), −1, 1)     target policy smoothing (§5.3, eq. 15)
//! q_target = r + γ(1 − d) minᵢ Q′ᵢ(s′, ã′)          clipped double-Q (§4.2, eq. 10)
//! critic loss Σᵢ mean((Qᵢ(s, a) − q_target)²)      (SB3: a sum of MSEs, no ½)
//!   → one Adam step on Q₁, Q₂
//! if n mod policy_delay = 0:                        delayed updates (§5.2)
//!   actor loss −mean(Q₁(s, μ(s))) → one Adam step on μ (through Q₁'s input)
//!   θ′ ← (1 − τ)θ′ + τθ for Q₁, Q₂ and μ
//! ```
//!
//! **Acting.** [`Controller::act`] is the actor scaled to the bounds — the
//! deployed [`TanhPolicy`] ([`Td3::policy`]) computes it bit for bit.
//! [`Td3::explore`] adds Gaussian noise of `action_noise` standard deviation
//! in `[−1, 1]` units and clips (SB3's `NormalActionNoise`).
//! [`Td3::step`](crate::algo::offpolicy::OffPolicy::step) is the learning loop's step, as SAC's: uniformly random
//! actions for `learning_starts` steps, then explored ones, store, and
//! every `train_freq` steps `gradient_steps` updates.
//!
//! **Memory and errors** as [`sac`](super::sac): everything in the struct
//! (the scratch of a transactional update included: the critics' staged
//! parameters, one critic pair), a minibatch's draws on
//! the stack during [`Td3::update`]; a non-finite observation or reward
//! refuses the step with the agent unchanged; an update checks the
//! critics' and the actor's steps before taking either, so a refused one
//! changes nothing.
//!
//! **Training loop and checkpoints.** [`Td3`] is a
//! [`Learner`](crate::train::Learner) whose iteration is one
//! [`Td3::step`](crate::algo::offpolicy::OffPolicy::step) (so the [`Trainer`](crate::train::Trainer)'s evaluation
//! interval, hooks and early stop fall on environment steps), and an
//! [`AgentState`](crate::checkpoint::AgentState) whose checkpoint holds
//! the networks, their Adam states, the replay ring and the counters: a
//! run resumes bit for bit.
//!
//! [`Controller::act`]: super::Controller::act

mod config;
mod learner;
mod persist;
mod update;

#[cfg(test)]
mod parity;
#[cfg(test)]
mod tests;

pub use config::Td3Config;
pub use update::Td3Stats;

use nalgebra::SVector;
use rand_core::Rng;

use super::offpolicy::{Draws, Explore, TanhPolicy, Twin, checked_space, to_bounds, torch_fresh};
use super::replay::ReplayBuffer;
use crate::checkpoint::{Field, Reader, Writer, fold_shapes};
use crate::env::{Continuous, Env};
use crate::error::{Error, check_all_finite};
use crate::math;
use crate::nn::{Chain, Dense, Layer, Mlp, Relu, Tanh};
use crate::optim::TrainState;
use crate::params::Params;
use crate::rng;

/// SB3's TD3 architecture with `H` units in both hidden layers: the actor
/// `OBS → H → H → ACT` (ReLU, ReLU, tanh) and critics `OA → H → H → 1`
/// (ReLU), a replay ring of `CAP` transitions, minibatches of up to
/// `BATCH` samples.
pub type Td3Mlp<
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const H: usize,
    const CAP: usize,
    const BATCH: usize,
> = Td3<
    Chain<Dense<OBS, H, Relu>, Chain<Dense<H, H, Relu>, Dense<H, ACT, Tanh>>>,
    Mlp<OA, H, 1, Relu>,
    OBS,
    ACT,
    OA,
    CAP,
    BATCH,
>;

/// A TD3 agent (see the [module docs](self)): actor `N: OBS → ACT` ending
/// in `tanh`, critic network `Q: OA → 1`.
pub struct Td3<
    N,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const CAP: usize,
    const BATCH: usize,
> where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    /// Hyper-parameters.
    pub config: Td3Config,
    /// The actor `μ` with its gradient and Adam state.
    pub actor: TrainState<N>,
    /// The Polyak-averaged target actor `μ′`.
    pub actor_target: N,
    /// `Q₁, Q₂` with their gradient and one Adam state.
    pub critic: TrainState<Twin<Q>>,
    /// The Polyak-averaged target critics `Q′₁, Q′₂`.
    pub critic_target: Twin<Q>,
    /// The replay ring.
    pub replay: ReplayBuffer<OBS, ACT, CAP>,
    /// The actuator bounds, copied from the environment by [`Td3::init`].
    pub space: Continuous<ACT>,
    /// Environment steps taken by [`Td3::step`](crate::algo::offpolicy::OffPolicy::step).
    pub steps: u64,
    /// Critic updates taken (SB3's `_n_updates`).
    pub n_updates: u64,
    actor_cache: N::Cache,
    critic_cache: (Q::Cache, Q::Cache),
    /// The critics after this update's step, before it is taken (scratch
    /// of [`update_with`](Self::update_with), which trains the actor
    /// through them on a delayed actor update).
    critic_next: Twin<Q>,
}

impl<
    N,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const CAP: usize,
    const BATCH: usize,
> Td3<N, Q, OBS, ACT, OA, CAP, BATCH>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    pub(crate) const SIZES: () = assert!(
        OA == OBS + ACT,
        "Td3: the critic input size OA must be OBS + ACT"
    );

    /// An all-zero agent (usable in a `static`); [`init`](Self::init)
    /// before use.
    pub const ZERO: Self = Self::new(Td3Config::ZERO);

    /// An agent with `config` and zero weights; [`init`](Self::init)
    /// before use.
    pub const fn new(config: Td3Config) -> Self {
        let () = Self::SIZES;
        Self {
            config,
            actor: TrainState::new(config.adam),
            actor_target: N::ZERO,
            critic: TrainState::new(config.adam),
            critic_target: Twin::ZERO,
            replay: ReplayBuffer::ZERO,
            // Zero bounds until `init` sets the plant's: every byte of
            // `ZERO` is zero, so a `static` agent lands in `.bss`.
            space: <Continuous<ACT> as crate::params::Params>::ZERO,
            steps: 0,
            n_updates: 0,
            actor_cache: N::ZERO_CACHE,
            critic_cache: (Q::ZERO_CACHE, Q::ZERO_CACHE),
            critic_next: Twin::ZERO,
        }
    }

    /// Starts training from scratch on `env`'s action space: PyTorch's
    /// default initialisation of the actor, then of the critics (the
    /// targets copy them), fresh Adam states, an empty replay ring of
    /// `buffer_size`, zero counters.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for an invalid configuration;
    /// [`Error::NonFinite`] or [`Error::OutOfDomain`] for bad bounds.
    /// Nothing changes then.
    pub fn init<E, R>(&mut self, env: &E, rng: &mut R) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = Continuous<ACT>>,
        R: Rng + ?Sized,
    {
        self.config.validate(CAP, BATCH)?;
        self.space = checked_space(env)?;
        torch_fresh(&mut self.actor, self.config.adam, rng);
        torch_fresh(&mut self.critic, self.config.adam, rng);
        self.actor_target.copy_from(&self.actor.params);
        self.critic_target.copy_from(&self.critic.params);
        self.replay.resize(self.config.buffer_size as usize)?;
        self.steps = 0;
        self.n_updates = 0;
        Ok(())
    }

    /// A training action for `obs`: `clip(μ(s) + σε, −1, 1)` with fresh
    /// noise `ε` from `rng` ([`rng::fill_normal`] of `ACT` values) when
    /// `action_noise = Some(σ)`, else `μ(s)`; and its actuator command.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a non-finite observation or network output.
    pub fn explore<R: Rng + ?Sized>(
        &self,
        obs: &SVector<f32, OBS>,
        rng: &mut R,
    ) -> Result<(SVector<f32, ACT>, SVector<f32, ACT>), Error> {
        let action = noisy_action(&self.actor.params, self.config.action_noise, obs, rng)?;
        Ok((action, to_bounds(&self.space, &action)))
    }

    /// One gradient step on a minibatch of `batch_size` transitions drawn
    /// from `rng` ([`Draws::draw`]: the indices, then the smoothing noise
    /// `ε′`), by [`update_with`](Self::update_with).
    ///
    /// # Errors
    /// As [`update_with`](Self::update_with); [`Error::InvalidInput`] for
    /// an empty replay buffer.
    pub fn update<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Result<Td3Stats, Error> {
        self.config.validate(CAP, BATCH)?;
        let mut draws = Draws::<ACT, BATCH>::ZERO;
        draws.draw(
            rng,
            self.config.batch_size as usize,
            self.replay.len(),
            false,
        )?;
        self.update_with(&draws)
    }

    /// The deployable policy: the actor and the bounds, acting bit for bit
    /// as [`Controller::act`] on this agent.
    ///
    /// [`Controller::act`]: super::Controller::act
    pub fn policy(&self) -> TanhPolicy<N, ACT>
    where
        N: Clone,
    {
        TanhPolicy {
            net: self.actor.params.clone(),
            space: self.space,
        }
    }

    /// Copies the deployable policy into `out` (caller-owned memory): the
    /// actor and the bounds — what [`policy`](Self::policy) returns,
    /// without the copy on the stack.
    pub fn export(&self, out: &mut TanhPolicy<N, ACT>) {
        out.net.copy_from(&self.actor.params);
        out.space = self.space;
    }
}

impl<
    N,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const CAP: usize,
    const BATCH: usize,
> core::fmt::Debug for Td3<N, Q, OBS, ACT, OA, CAP, BATCH>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
    Q: Layer<Input = SVector<f32, OA>, Output = SVector<f32, 1>>,
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Td3")
            .field("config", &self.config)
            .field("steps", &self.steps)
            .field("n_updates", &self.n_updates)
            .field("replay_len", &self.replay.len())
            .finish_non_exhaustive()
    }
}

/// `clip(μ(s) + σε, −1, 1)`, `ε ~ 𝒩(0, I)` ([`rng::fill_normal`] of `ACT`
/// values; no draw without noise) — SB3's `NormalActionNoise` on TD3's
/// deterministic actor (Fujimoto et al. 2018, §6.1).
fn noisy_action<N, R, const OBS: usize, const ACT: usize>(
    net: &N,
    action_noise: Option<f32>,
    obs: &SVector<f32, OBS>,
    rng: &mut R,
) -> Result<SVector<f32, ACT>, Error>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
    R: Rng + ?Sized,
{
    check_all_finite(obs.as_slice())?;
    let mut action = net.forward(obs);
    check_all_finite(action.as_slice())?;
    if let Some(sigma) = action_noise {
        let mut eps = SVector::<f32, ACT>::zeros();
        rng::fill_normal(rng, eps.as_mut_slice());
        for (a, e) in action.iter_mut().zip(eps.iter()) {
            *a = math::clamp(*a + sigma * e, -1.0, 1.0);
        }
    }
    Ok(action)
}

/// TD3's actor as a control loop acts with it ([`Explore`]): the
/// deterministic network and the standard deviation of its exploration
/// noise ([`Td3Config::action_noise`]), no gradient or optimiser state.
#[derive(Clone, Debug, PartialEq)]
pub struct NoisyActor<N> {
    /// The actor `μ`.
    pub net: N,
    /// `σ` of the Gaussian exploration noise in `[−1, 1]` units.
    pub action_noise: Option<f32>,
}

impl<N, const OBS: usize, const ACT: usize> Explore<OBS, ACT> for NoisyActor<N>
where
    N: Layer<Input = SVector<f32, OBS>, Output = SVector<f32, ACT>>,
{
    const ZERO_ACTOR: Self = Self {
        net: N::ZERO,
        action_noise: None,
    };

    /// [`Td3::explore`]'s action; the log-probability is `0` (the actor is
    /// deterministic).
    fn explore<R: Rng + ?Sized>(
        &self,
        obs: &SVector<f32, OBS>,
        rng: &mut R,
    ) -> Result<(SVector<f32, ACT>, f32), Error> {
        Ok((noisy_action(&self.net, self.action_noise, obs, rng)?, 0.0))
    }
}

/// In a lagged schedule's checkpoint: the network's tensors, then the
/// noise as a flag `u32` (0 none, 1 some) and `σ`.
impl<N: Params> Field for NoisyActor<N> {
    const LEN: usize = 4 * N::LEN + 8;

    fn fold_shapes(h: u32) -> u32 {
        fold_shapes::<N>(h)
    }

    fn save(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        Field::save(&self.net, w)?;
        w.u32(u32::from(self.action_noise.is_some()));
        w.f32(self.action_noise.unwrap_or(0.0))
    }

    fn load(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        Field::load(&mut self.net, r)?;
        let some = r.flag()?;
        let sigma = r.f32()?;
        if r.commit() {
            self.action_noise = some.then_some(sigma);
        }
        Ok(())
    }
}
