//! Trust-region policy optimisation (Schulman et al. 2015; notes 001, and
//! 002 §8.6): the natural-gradient step of the largest size whose mean KL
//! to the collecting policy stays within a radius `δ`.
//!
//! One update, top to bottom:
//! 1. **Policy gradient** of the surrogate `L(θ) = 1/n Σ r_t(θ) Â_t` at
//!    `θ_old` (where every ratio is 1): `g = 1/n Σ Â_t ∇log π(a_t|s_t)`.
//! 2. **Natural direction** `x ≈ F⁻¹ g` by `cg_iters` steps of conjugate
//!    gradient on `(F + c·I) x = g`, `F` the Fisher information averaged
//!    over the rollout and `c` the damping. `F` is never formed: each CG
//!    step needs one Fisher-vector product `F p = 1/n Σ Jᵀ M J p`
//!    ([`Actor::fisher_vector_product`]: a forward-mode pass through the
//!    network for `J p`, the head's Fisher `M`, a backward pass for `Jᵀ`).
//! 3. **Step size** from the quadratic model of the KL,
//!    `½ β² xᵀF x = δ` ⇒ `β = √(2δ / xᵀF x)`.
//! 4. **Backtracking line search**: `θ = θ_old + β·shrinkᵏ·x` for
//!    `k = 0, 1, …`; the first candidate whose exact mean
//!    `KL[π_old ‖ π_θ]` ([`Actor::kl`]) is at most `δ` *and* whose surrogate
//!    improves on `L(θ_old)` is kept. If none is, the actor stays at
//!    `θ_old` (a candidate whose outputs are not finite counts as refused).
//! 5. **Critic by regression**: `critic_epochs` passes of
//!    `critic_minibatches` Adam steps on `½(V − R)²`, `R` the GAE returns.
//!
//! Design: [`Trpo`] wraps the [`Ppo`] machinery (collection, GAE,
//! normalisers, checkpoints, the critic's Adam), configured by
//! [`TrpoConfig::to_ppo`]; the actor takes no optimiser step, so the
//! actor's half of the Adam moments stays zero. CG needs four more
//! actor-sized vectors — the solution `x`, the search direction `p`, the
//! product `F p` (the residual lives in the actor's gradient buffer) and the
//! `θ_old` copy the line search measures the KL from and restores — all
//! fields of the agent, so an update allocates nothing.

#[cfg(test)]
mod tests;

use nalgebra::SVector;
use rand_core::Rng;

use super::Critic;
use super::ppo::{Ppo, PpoConfig, UpdateStats};
use super::{Actor, Cursor, Episode};
use crate::config::{check, non_negative, positive_or_off, unit};
use crate::env::Env;
use crate::error::Error;
use crate::math;
use crate::optim::{AdamConfig, Schedule, check_gradient};
use crate::rng;

/// TRPO hyper-parameters. Defaults are SB3-contrib's `TRPO`, except where
/// a field says otherwise.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct TrpoConfig {
    /// Environment steps the critic's learning-rate schedule runs over. Default 200 000.
    pub total_steps: u64,
    /// Trust-region radius `δ`: the largest mean `KL[π_old ‖ π_new]` a step
    /// may reach. Default 0.01.
    pub max_kl: f32,
    /// Conjugate-gradient iterations per update, 1 to 1 000
    /// ([`MAX_ITERATIONS`](crate::config::MAX_ITERATIONS)). Default 15.
    pub cg_iters: u16,
    /// Damping `c` added to the Fisher matrix (`F + c·I`), for a
    /// well-conditioned solve. Default 0.1.
    pub cg_damping: f32,
    /// Candidates the backtracking line search tries, 1 to 1 000. Default 10.
    pub line_search_steps: u16,
    /// Factor by which each refused candidate's step shrinks. Default 0.8.
    pub line_search_shrink: f32,
    /// Discount `γ`. Default 0.99.
    pub gamma: f32,
    /// GAE `λ`. Default 0.95.
    pub gae_lambda: f32,
    /// Normalise advantages over the rollout. Default true.
    pub normalize_advantages: bool,
    /// The critic's Adam learning rate. Default constant `1e-3`.
    pub critic_learning_rate: Schedule,
    /// Passes of critic regression over each rollout, 1 to 1 000. Default 10.
    pub critic_epochs: u16,
    /// Critic minibatches per pass (must divide the rollout length).
    /// Default 16 (SB3-contrib's batch of 128 for its 2048-step rollout).
    pub critic_minibatches: u16,
    /// Global gradient-norm clip of the critic's steps. Default `None`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub max_grad_norm: Option<f32>,
    /// Running observation normalisation. Default true.
    pub normalize_obs: bool,
    /// Reward scaling by the discounted-return std. Default false.
    pub normalize_reward: bool,
    /// The critic's Adam `β₁, β₂, ε`. Default `0.9, 0.999, 1e-5`.
    pub adam: AdamConfig,
}

impl TrpoConfig {
    /// The defaults listed on each field.
    pub const DEFAULT: Self = Self {
        total_steps: 200_000,
        max_kl: 0.01,
        cg_iters: 15,
        cg_damping: 0.1,
        line_search_steps: 10,
        line_search_shrink: 0.8,
        gamma: 0.99,
        gae_lambda: 0.95,
        normalize_advantages: true,
        critic_learning_rate: Schedule::Constant(1e-3),
        critic_epochs: 10,
        critic_minibatches: 16,
        max_grad_norm: None,
        normalize_obs: true,
        normalize_reward: false,
        adam: AdamConfig::DEFAULT,
    };

    /// Every field zero (invalid), the placeholder in [`Trpo::ZERO`].
    const ZERO: Self = Self {
        total_steps: 0,
        max_kl: 0.0,
        cg_iters: 0,
        cg_damping: 0.0,
        line_search_steps: 0,
        line_search_shrink: 0.0,
        gamma: 0.0,
        gae_lambda: 0.0,
        normalize_advantages: false,
        critic_learning_rate: Schedule::Constant(0.0),
        critic_epochs: 0,
        critic_minibatches: 0,
        max_grad_norm: None,
        normalize_obs: false,
        normalize_reward: false,
        adam: AdamConfig::ZERO,
    };

    /// The configuration of the wrapped [`Ppo`] agent: its collection
    /// (`γ`, `λ`, normalisers) and its critic training (learning rate,
    /// epochs, minibatches, Adam); its policy-loss fields are unused.
    pub const fn to_ppo(self) -> PpoConfig {
        let c = self;
        PpoConfig {
            total_steps: c.total_steps,
            learning_rate: c.critic_learning_rate,
            clip_range: Schedule::Constant(f32::INFINITY),
            gamma: c.gamma,
            gae_lambda: c.gae_lambda,
            epochs: c.critic_epochs,
            minibatches: c.critic_minibatches,
            normalize_advantages: c.normalize_advantages,
            value_clip: None,
            ent_coef: 0.0,
            bound_coef: 0.0,
            noise_beta: Schedule::Constant(0.0),
            vf_coef: 1.0,
            max_grad_norm: c.max_grad_norm,
            target_kl: None,
            kl_coef: 0.0,
            kl_target: None,
            normalize_obs: c.normalize_obs,
            normalize_reward: c.normalize_reward,
            scale_free_returns: false,
            adam: c.adam,
            n_envs: 1,
            n_steps: 0,
        }
    }

    /// Checks every field for a rollout of `rollout_len` steps.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first offending field: a
    /// non-positive or non-finite `max_kl`, zero `cg_iters` or
    /// `line_search_steps`, a negative `cg_damping`, `line_search_shrink`
    /// outside `(0, 1)`, zero `critic_epochs`, `critic_minibatches` that do
    /// not divide the rollout, and the checks of [`PpoConfig::validate`]
    /// for the shared fields.
    pub fn validate(&self, rollout_len: usize) -> Result<(), Error> {
        positive_or_off("max_kl", Some(self.max_kl))?;
        crate::config::iterations("cg_iters", self.cg_iters)?;
        non_negative("cg_damping", self.cg_damping)?;
        crate::config::iterations("line_search_steps", self.line_search_steps)?;
        check(
            "line_search_shrink",
            self.line_search_shrink > 0.0 && self.line_search_shrink < 1.0,
            "must be in (0, 1)",
        )?;
        unit("gamma", self.gamma)?;
        unit("gae_lambda", self.gae_lambda)?;
        self.critic_learning_rate
            .validate("critic_learning_rate", 1.0)?;
        crate::config::iterations("critic_epochs", self.critic_epochs)?;
        check(
            "critic_minibatches",
            self.critic_minibatches > 0
                && rollout_len > 0
                && rollout_len.is_multiple_of(usize::from(self.critic_minibatches)),
            "must be > 0 and divide the rollout length",
        )?;
        self.to_ppo().validate(rollout_len)
    }
}

impl Default for TrpoConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Conjugate gradient stops early once `‖r‖²` falls below this.
pub const CG_RESIDUAL_TOLERANCE: f32 = 1e-10;

/// A TRPO agent: actor `A`, critic `C`, `OBS`-dimensional observations and
/// a rollout of `N` steps (see the module docs).
pub struct Trpo<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> {
    /// Hyper-parameters.
    pub config: TrpoConfig,
    /// The collection and critic machinery (configured by [`TrpoConfig::to_ppo`]).
    pub inner: Ppo<A, C, OBS, N>,
    /// CG solution `x ≈ (F + c·I)⁻¹ g`, the natural-gradient direction.
    step: A,
    /// CG search direction `p`.
    direction: A,
    /// The Fisher-vector product `(F + c·I) p`.
    product: A,
    /// `θ_old`, the actor that collected the rollout.
    backup: A,
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> core::fmt::Debug
    for Trpo<A, C, OBS, N>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Trpo")
            .field("config", &self.config)
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> Trpo<A, C, OBS, N> {
    /// An agent with zeroed weights; call [`init`](Self::init) first.
    pub const fn new(config: TrpoConfig) -> Self {
        Self {
            config,
            inner: Ppo::new(config.to_ppo()),
            step: A::ZERO,
            direction: A::ZERO,
            product: A::ZERO,
            backup: A::ZERO,
        }
    }

    /// All-zero storage for a `static`; see [`Ppo::ZERO`].
    pub const ZERO: Self = Self::new(TrpoConfig::ZERO);

    /// Initialises the agent for `env` (see [`Ppo::init`]).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for an invalid configuration; nothing is
    /// changed then.
    pub fn init<E, R>(&mut self, env: &E, rng: &mut R) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.config.validate(N)?;
        self.inner.config = self.config.to_ppo();
        self.inner.init(env, rng)
    }

    /// Collects `N` steps and computes GAE advantages (see [`Ppo::collect`]).
    ///
    /// # Errors
    /// As [`Ppo::collect`].
    pub fn collect<E, R>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        on_episode: impl FnMut(Episode),
    ) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.inner.collect(env, cursor, rng, on_episode)
    }

    /// One TRPO update on the collected rollout (see the module docs).
    ///
    /// Statistics: `policy_loss` is `−L(θ_new)`, `approx_kl` the exact mean
    /// KL of the accepted step (0 if none was), `trust_step` the accepted
    /// fraction `shrinkᵏ` of the full step, `grad_norm` `‖g‖`,
    /// `value_loss` and `learning_rate` the critic's.
    ///
    /// # Errors
    /// [`Error::RolloutIncomplete`] without a fresh complete rollout,
    /// [`Error::InvalidConfig`] for an invalid configuration — both before
    /// anything changes; [`Error::NonFinite`] or [`Error::GradientOverflow`]
    /// for a non-finite network output or an unusable policy gradient
    /// before the policy step (the actor is then unchanged) or a critic
    /// gradient (the finite critic steps before it stay applied). The
    /// rollout is consumed either way.
    pub fn update<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Result<UpdateStats, Error> {
        let c = self.config;
        let n = self.inner.rollout.len();
        if !self.inner.rollout.is_ready() {
            return Err(Error::RolloutIncomplete);
        }
        c.validate(n)?;
        self.inner.rollout.consume();
        let mut stats = UpdateStats {
            explained_variance: self.inner.rollout.explained_variance(),
            ..UpdateStats::default()
        };
        let (mean, inv_std) = self.advantage_normalisation(n);

        // 1. g = ∇L(θ_old) into the actor's gradient buffer.
        let surrogate_old = self.policy_gradient(n, mean, inv_std, &mut stats)?;

        // 2. x ≈ (F + c·I)⁻¹ g by conjugate gradient (residual r in the
        //    gradient buffer).
        self.conjugate_gradient(n)?;

        // 3. β = √(2δ / xᵀ(F + c·I)x).
        self.fisher_product(n, true)?;
        let curvature = self.step.dot(&self.product);
        let beta = math::sqrt(2.0 * c.max_kl / curvature);

        // 4. Backtracking line search from θ_old.
        self.backup.copy_from(&self.inner.train.params.actor);
        let mut surrogate_new = surrogate_old;
        if beta.is_finite() && beta > 0.0 {
            let mut fraction = 1.0f32;
            for _ in 0..c.line_search_steps {
                let actor = &mut self.inner.train.params.actor;
                actor.copy_from(&self.backup);
                actor.add_scaled(beta * fraction, &self.step);
                if let Some((kl, surrogate)) = self.candidate(n, mean, inv_std)
                    && kl <= c.max_kl
                    && surrogate > surrogate_old
                {
                    stats.approx_kl = kl;
                    stats.trust_step = fraction;
                    surrogate_new = surrogate;
                    break;
                }
                fraction *= c.line_search_shrink;
            }
        }
        if stats.trust_step == 0.0 {
            self.inner.train.params.actor.copy_from(&self.backup);
        }
        stats.policy_loss = -surrogate_new;

        // 5. The critic by regression on the GAE returns.
        self.fit_critic(n, rng, &mut stats)?;
        Ok(stats)
    }

    /// `(mean, 1/(std + 1e-8))` of the rollout's advantages (unbiased std,
    /// as torch), or `(0, 1)` when normalisation is off.
    fn advantage_normalisation(&self, n: usize) -> (f32, f32) {
        if !self.config.normalize_advantages || n < 2 {
            return (0.0, 1.0);
        }
        let adv = &self.inner.rollout.advantages[..n];
        let mean = adv.iter().sum::<f32>() / n as f32;
        let ss: f32 = adv.iter().map(|a| (a - mean) * (a - mean)).sum();
        (mean, 1.0 / (math::sqrt(ss / (n - 1) as f32) + 1e-8))
    }

    /// `g = ∇L(θ_old) = 1/n Σ Â ∇log π(a|s)` into the actor's (zeroed)
    /// gradient buffer; returns `L(θ_old) = 1/n Σ r Â` (every ratio 1 up to
    /// rounding) and sets the entropy and `‖g‖` in `stats`.
    fn policy_gradient(
        &mut self,
        n: usize,
        mean: f32,
        inv_std: f32,
        stats: &mut UpdateStats,
    ) -> Result<f32, Error> {
        let inv_n = 1.0 / n as f32;
        let ppo = &mut self.inner;
        ppo.train.zero_grad();
        let mut surrogate = 0.0f32;
        let mut entropy_sum = 0.0f32;
        for i in 0..n {
            let (obs, action) = (&ppo.rollout.obs[i], &ppo.rollout.actions[i]);
            let actor = &ppo.train.params.actor;
            let (log_prob, entropy) = actor.evaluate(obs, action, &mut ppo.actor_cache)?;
            let advantage = (ppo.rollout.advantages[i] - mean) * inv_std;
            surrogate += math::exp(log_prob - ppo.rollout.log_probs[i]) * advantage;
            entropy_sum += entropy;
            actor.backward(
                &ppo.actor_cache,
                action,
                advantage * inv_n,
                0.0,
                &mut ppo.train.grads.actor,
            );
        }
        check_gradient(&ppo.train.grads.actor)?;
        stats.entropy = entropy_sum * inv_n;
        stats.grad_norm = math::sqrt(ppo.train.grads.actor.norm_squared());
        Ok(surrogate * inv_n)
    }

    /// `self.product = (F + c·I) v` with `F = 1/n Σ F_t` over the rollout,
    /// for `v` = `self.direction` (`of_step = false`) or `self.step`.
    fn fisher_product(&mut self, n: usize, of_step: bool) -> Result<(), Error> {
        let v = if of_step { &self.step } else { &self.direction };
        let ppo = &mut self.inner;
        let actor = &ppo.train.params.actor;
        self.product.set_zero();
        let inv_n = 1.0 / n as f32;
        for i in 0..n {
            let (obs, action) = (&ppo.rollout.obs[i], &ppo.rollout.actions[i]);
            actor.evaluate(obs, action, &mut ppo.actor_cache)?;
            actor.fisher_vector_product(&ppo.actor_cache, v, inv_n, &mut self.product);
        }
        self.product.add_scaled(self.config.cg_damping, v);
        check_gradient(&self.product)
    }

    /// Conjugate gradient on `(F + c·I) x = g` from `x = 0` (Hestenes and
    /// Stiefel; Nocedal and Wright, Alg. 5.2): `r = g − (F + c·I)x` in the
    /// actor's gradient buffer, `p` in `direction`, `x` in `step`.
    fn conjugate_gradient(&mut self, n: usize) -> Result<(), Error> {
        self.step.set_zero();
        self.direction.copy_from(&self.inner.train.grads.actor);
        let mut rr = self.direction.norm_squared();
        for _ in 0..self.config.cg_iters {
            if rr < CG_RESIDUAL_TOLERANCE {
                break;
            }
            self.fisher_product(n, false)?;
            let p_ap = self.direction.dot(&self.product);
            if !(p_ap > 0.0 && p_ap.is_finite()) {
                break;
            }
            let alpha = rr / p_ap;
            self.step.add_scaled(alpha, &self.direction);
            let residual = &mut self.inner.train.grads.actor;
            residual.add_scaled(-alpha, &self.product);
            let rr_new = residual.norm_squared();
            // p ← r + (r·r)_new/(r·r) p
            self.direction.scale(rr_new / rr);
            self.direction.add_scaled(1.0, residual);
            rr = rr_new;
        }
        if self.step.is_finite() {
            Ok(())
        } else {
            Err(Error::NonFinite)
        }
    }

    /// The mean exact `KL[π_old ‖ π_θ]` and the surrogate `L(θ)` of the
    /// current actor over the rollout; `None` when an output is not finite.
    fn candidate(&mut self, n: usize, mean: f32, inv_std: f32) -> Option<(f32, f32)> {
        let ppo = &mut self.inner;
        let actor = &ppo.train.params.actor;
        let (mut kl, mut surrogate) = (0.0f32, 0.0f32);
        for i in 0..n {
            let (obs, action) = (&ppo.rollout.obs[i], &ppo.rollout.actions[i]);
            kl += self.backup.kl(actor, obs).ok()?;
            let (log_prob, _) = actor.evaluate(obs, action, &mut ppo.actor_cache).ok()?;
            let advantage = (ppo.rollout.advantages[i] - mean) * inv_std;
            surrogate += math::exp(log_prob - ppo.rollout.log_probs[i]) * advantage;
        }
        let inv_n = 1.0 / n as f32;
        let (kl, surrogate) = (kl * inv_n, surrogate * inv_n);
        (kl.is_finite() && surrogate.is_finite()).then_some((kl, surrogate))
    }

    /// `critic_epochs` passes of `critic_minibatches` Adam steps on
    /// `½(V − R)²` (the actor's gradient is zero, so Adam leaves it as it is).
    fn fit_critic<R: Rng + ?Sized>(
        &mut self,
        n: usize,
        rng: &mut R,
        stats: &mut UpdateStats,
    ) -> Result<(), Error> {
        let c = self.config;
        let ppo = &mut self.inner;
        let progress_steps = ppo.steps.saturating_sub(n as u64);
        let lr = c.critic_learning_rate.at(progress_steps, c.total_steps);
        stats.learning_rate = lr;
        let batch = n / usize::from(c.critic_minibatches);
        let inv_batch = 1.0 / batch as f32;
        for (i, slot) in ppo.rollout.indices[..n].iter_mut().enumerate() {
            *slot = i as u16;
        }
        let mut samples = 0u32;
        for epoch in 0..c.critic_epochs {
            rng::shuffle(rng, &mut ppo.rollout.indices[..n]);
            for start in (0..n).step_by(batch) {
                ppo.train.zero_grad();
                for k in start..start + batch {
                    let i = usize::from(ppo.rollout.indices[k]);
                    stats.value_loss += ppo.train.params.critic.fit(
                        &ppo.rollout.obs[i],
                        ppo.rollout.values[i],
                        ppo.rollout.returns[i],
                        None,
                        1.0,
                        inv_batch,
                        &mut ppo.critic_cache,
                        &mut ppo.train.grads.critic,
                    );
                    samples += 1;
                }
                ppo.train.apply(lr, c.max_grad_norm)?;
            }
            stats.epochs = epoch + 1;
        }
        stats.value_loss /= samples.max(1) as f32;
        Ok(())
    }
}

// TRPO: a rollout and its trust-region update; the checkpoint section is
// the inner agent's, kind 5 (TRPO's other memory, the CG vectors and the
// line search's `θ_old`, is rebuilt by every update).
super::ppo::wraps_ppo!(
    Trpo,
    kind: 5,
    loading(|trpo, reader| {
        trpo.config.validate(N)?;
        let ppo_config = trpo.config.to_ppo();
        ppo_config.validate(N)?;
        // The inner agent's configuration follows TRPO's only on the
        // committing pass: a load refused later (by an environment's
        // section) leaves it as it was.
        if reader.commit() {
            trpo.inner.config = ppo_config;
        }
    }),
);
