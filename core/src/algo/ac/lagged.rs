//! The online actor-critic with one block of policy lag: the schedule a
//! device runs when its control loop (a fast timer interrupt, e.g. a motor
//! at 1 kHz) keeps acting while the learner updates in the background.
//!
//! The one-step actor-critic learns from every transition, but on a
//! microcontroller its update does not fit inside the control tick that
//! produced the transition. So the control loop acts with the last
//! *published* policy and queues every [`Tick`] (with the behaviour
//! log-probability it was drawn with); the learner takes the ticks of a
//! whole block of `BLOCK` control periods at once, makes one online step on
//! each, in order, and publishes at the next block boundary. The schedule,
//! fixed and independent of timing, is the shared one of
//! [`crate::algo::lagged`]:
//!
//! | block | acted by | learned from while |
//! |---|---|---|
//! | 0 | `θ₀` (the initial policy) | nothing runs |
//! | 1 | `θ₀` | the learner steps through block 0 → `θ₁` |
//! | j ≥ 1 | `θ_{j−1}`, published after block j−2 | the learner steps through block j−1 → `θ_j` |
//!
//! **Importance correction.** A tick of block `j−1` was drawn by the
//! behaviour policy `μ = θ_{j−2}`, while the learner that uses it holds
//! `θ_{j−1}` advanced by the ticks before it. Each step weights both the
//! critic's and the actor's TD term by the truncated importance ratio
//! `ρ = min(1, π(a|s) / μ(a|s))` (off-policy actor-critic, Degris, White &
//! Sutton 2012, eq. 5; truncated at 1 as V-trace's `ρ̄`, Espeholt et al.
//! 2018, eq. 1), computed from the stored `log μ(a|s)`:
//! - critic: one step on `½ρ(V(s) − y)²`, `y = r + γV(s′)(1 − terminated)`
//!   held fixed;
//! - actor: one step on `−ρδ log π(a|s) − c_e H[π(·|s)]`.
//!
//! When the policy that acted is the learner's own (same weights, same
//! normaliser) the ratio is exactly 1 and the step is
//! [`ActorCritic::step`]'s bit for bit (`tests.rs` checks it).
//!
//! The pieces split along the two rhythms: the control side is
//! [`behave`](crate::algo::behave); the learner side is
//! [`ActorCritic::ingest`] per tick and [`ActorCritic::export`] at the
//! end of a block. [`LaggedAc`] runs the schedule on one thread and is the
//! desktop reference a firmware's learned weights equal bit for bit.

use nalgebra::SVector;
use rand_core::Rng;

use super::{AcStats, ActorCritic};
use crate::algo::lagged::{Lagged, LaggedLearner, TickLearner, learn_ticks};
use crate::algo::{Actor, Tick, value};
use crate::env::Step;
use crate::error::{Error, check_finite};
use crate::nn::Network;
use crate::optim::{check_gradient, check_lr};
use crate::policy::Policy;

impl<A: Actor<OBS>, C: Network<OBS, 1>, const OBS: usize> ActorCritic<A, C, OBS> {
    /// The learner side of one control tick: one online step on `tick`,
    /// acted by a behaviour policy whose `log μ(a|s)` the tick carries,
    /// with both TD terms weighted by `ρ = min(1, π(a|s)/μ(a|s))` (module
    /// docs). The observation statistics are updated with the tick's
    /// observation, as [`step`](Self::step) updates them with the one it acts
    /// on.
    ///
    /// Transactional like [`step`](Self::step): on any error the agent is
    /// unchanged.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for an invalid configuration,
    /// [`Error::NonFinite`] for a non-finite observation, log-probability,
    /// reward, TD error, ratio, network output or gradient,
    /// [`Error::GradientOverflow`] for an unusable gradient, and the
    /// actor's refusal of the action ([`Error::InvalidAction`]).
    pub fn ingest(&mut self, tick: &Tick<OBS, A::Action>) -> Result<AcStats, Error> {
        self.transaction(|s| s.try_ingest(tick))
    }

    fn try_ingest(&mut self, tick: &Tick<OBS, A::Action>) -> Result<AcStats, Error> {
        check_finite(tick.log_prob)?;
        let obs = if self.config.normalize_obs {
            self.obs_norm.update_normalize(&tick.obs)?
        } else {
            self.observe(&tick.obs)?
        };
        let step = Step {
            obs: tick.next_obs,
            reward: tick.reward,
            terminated: tick.terminated,
            truncated: tick.truncated,
        };
        self.learn(&obs, &tick.action, &step, Some(tick.log_prob))
    }

    /// One TD step on the transition `obs` (normalised) → `step`, taking
    /// `action`; `behaviour` is `log μ(a|s)` of the policy that acted when
    /// it is not this learner's current one (`None`: ρ = 1, on-policy).
    /// Shared by [`step`](Self::step) and [`ingest`](Self::ingest); the
    /// caller restores the statistics and the step count on an error.
    pub(super) fn learn(
        &mut self,
        obs: &SVector<f32, OBS>,
        action: &A::Action,
        step: &Step<SVector<f32, OBS>>,
        behaviour: Option<f32>,
    ) -> Result<AcStats, Error> {
        let c = self.config;
        let progress = self.steps;
        self.steps += 1;

        // δ = r + γ V(s′)(1 − terminated) − V(s), from the critic before updating.
        let v = self
            .critic
            .params
            .forward_train(obs, &mut self.critic_cache)[0];
        let v_next = if step.terminated {
            0.0
        } else {
            value(&self.critic.params, &self.observe(&step.obs)?)
        };
        check_finite(step.reward)?;
        let reward = if c.normalize_reward {
            crate::normalize::scale_reward(
                c.gamma,
                &mut self.return_norm,
                &mut self.discounted_return,
                step.reward,
                step.done(),
                c.scale_free_returns,
            )?
        } else {
            step.reward
        };
        let delta = reward + c.gamma * v_next - v;
        check_finite(delta)?;

        // Actor forward: log π(a|s) for the ratio, H for the bonus.
        let (log_prob, entropy) = self
            .actor
            .params
            .evaluate(obs, action, &mut self.actor_cache)?;
        // ρ = min(1, exp(log π − log μ)) (Degris et al. 2012; V-trace's ρ̄ = 1).
        let rho = match behaviour {
            None => 1.0,
            Some(log_mu) => {
                let rho = crate::math::exp(log_prob - log_mu).min(1.0);
                check_finite(rho)?;
                rho
            }
        };
        let weighted = rho * delta;

        // Critic: ∂/∂V ½ρ(V − y)² = ρ(V − y) = −ρδ.
        self.critic.zero_grad();
        let d_value = SVector::<f32, 1>::new(-weighted);
        self.critic
            .params
            .backward(&self.critic_cache, &d_value, &mut self.critic.grads);

        // Actor: ∂/∂log π (−ρδ log π) = −ρδ; ∂/∂H (−c_e H) = −c_e.
        self.actor.zero_grad();
        self.actor.params.backward(
            &self.actor_cache,
            action,
            -weighted,
            -c.ent_coef,
            &mut self.actor.grads,
        );

        // Check both gradients and both learning rates before applying
        // either: with them valid (and the configuration validated) neither
        // `apply` can fail, so a step is never half-applied.
        check_gradient(&self.critic.grads)?;
        check_gradient(&self.actor.grads)?;
        let critic_lr = c.critic_lr.at(progress, c.total_steps);
        let actor_lr = c.actor_lr.at(progress, c.total_steps);
        check_lr(critic_lr)?;
        check_lr(actor_lr)?;
        self.critic.apply(critic_lr, c.max_grad_norm)?;
        // Critic warm-up: the actor (and its Adam moments) stay untouched.
        if progress >= c.critic_warmup {
            self.actor.apply(actor_lr, c.max_grad_norm)?;
        }
        Ok(AcStats {
            delta,
            value: v,
            entropy,
        })
    }
}

/// [`ActorCritic`] run on the lagged schedule (see the [module](self) docs)
/// on one thread: each iteration acts a block of `BLOCK` ticks with the
/// *published* policy while — in the schedule's time — the learner steps
/// through the previous block, then publishes. The desktop reference of a
/// firmware whose control loop learns while it acts.
pub type LaggedAc<A, C, const OBS: usize, const BLOCK: usize> =
    Lagged<ActorCritic<A, C, OBS>, OBS, BLOCK>;

/// The learner side: a block learned tick by tick ([`learn_ticks`]).
impl<A: Actor<OBS>, C: Network<OBS, 1>, const OBS: usize> LaggedLearner<OBS>
    for ActorCritic<A, C, OBS>
{
    type Behaviour = Policy<A, OBS>;
    type Stats = AcStats;

    const ZERO: Self = Self::ZERO;
    const ZERO_BEHAVIOUR: Policy<A, OBS> = Policy::ZERO;
    const ZERO_ACTION: A::Action = A::ZERO_ACTION;

    fn publish(&self, out: &mut Policy<A, OBS>) {
        self.export(out);
    }

    fn ticks_learned(&self) -> u64 {
        self.steps
    }

    fn learn_block<R: Rng + ?Sized>(
        &mut self,
        ticks: &[Tick<OBS, A::Action>],
        rng: &mut R,
    ) -> Result<(AcStats, u64), Error> {
        learn_ticks(self, ticks, rng)
    }
}

/// The learner side per tick: [`ActorCritic::ingest`], one online step; a
/// block's statistics are the mean of its ticks'.
impl<A: Actor<OBS>, C: Network<OBS, 1>, const OBS: usize> TickLearner<OBS>
    for ActorCritic<A, C, OBS>
{
    const NO_STATS: AcStats = AcStats {
        delta: 0.0,
        value: 0.0,
        entropy: 0.0,
    };

    /// One [`ingest`](ActorCritic::ingest) (`rng` is not drawn from: the
    /// online step needs no randomness of the learner's); its statistics
    /// are summed into `stats`.
    fn ingest_tick<R: Rng + ?Sized>(
        &mut self,
        tick: &Tick<OBS, A::Action>,
        _rng: &mut R,
        stats: &mut AcStats,
    ) -> Result<u64, Error> {
        let s = self.ingest(tick)?;
        stats.delta += s.delta;
        stats.value += s.value;
        stats.entropy += s.entropy;
        Ok(1)
    }

    /// The mean of each statistic over the block.
    fn block_stats(sum: AcStats, ticks: usize) -> AcStats {
        let n = ticks.max(1) as f32;
        AcStats {
            delta: sum.delta / n,
            value: sum.value / n,
            entropy: sum.entropy / n,
        }
    }
}

#[cfg(test)]
mod tests;
