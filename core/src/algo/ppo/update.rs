//! The PPO update (clipped surrogate, value loss, entropy bonus, Adam) and
//! PPO-penalty's adaptive `β`.

use rand_core::Rng;

use super::{Ppo, adapted_kl_coef};
use crate::algo::Actor;
use crate::algo::Critic;
use crate::error::{Error, check_finite};
use crate::loss::{approx_kl, approx_kl_at, clipped_surrogate, kl_penalty};
use crate::math;
use crate::rng;

/// Diagnostics of one [`Ppo::update`], averaged over every sample (losses)
/// or every minibatch (gradient norm) it processed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct UpdateStats {
    /// Policy loss: the clipped surrogate, plus the KL penalty `β·k₃` when
    /// [`PpoConfig::kl_coef`](crate::algo::PpoConfig::kl_coef) is on and the
    /// bound loss when [`PpoConfig::bound_coef`](crate::algo::PpoConfig::bound_coef) is.
    pub policy_loss: f32,
    /// Value loss `½(V − R)²`.
    pub value_loss: f32,
    /// Policy entropy.
    pub entropy: f32,
    /// `mean((r − 1) − log r)`, the KL estimate between old and new policy.
    pub approx_kl: f32,
    /// Fraction of samples with `|r − 1| > ε`.
    pub clip_fraction: f32,
    /// `1 − Var(R − V_old)/Var(R)` over the rollout.
    pub explained_variance: f32,
    /// Mean gradient norm before clipping.
    pub grad_norm: f32,
    /// Epochs run (fewer than configured after a target-KL stop).
    pub epochs: u16,
    /// Learning rate used.
    pub learning_rate: f32,
    /// Clip range used.
    pub clip_range: f32,
    /// KL penalty coefficient `β` used (0: no penalty).
    pub kl_coef: f32,
    /// Mean per-step `log π(a|s) − log π_ref(a|s)` over the rollout, the
    /// KL to the reference policy of an [`Anchored`](crate::algo::Anchored) agent
    /// (0 for other agents).
    pub kl_reference: f32,
    /// TRPO: the accepted step as a fraction `shrinkᵏ` of the full
    /// natural-gradient step (0: every line-search candidate was refused;
    /// 0 for other agents).
    pub trust_step: f32,
}

impl UpdateStats {
    /// Turns the sums of the per-sample terms (losses, entropy, KL, clip
    /// count) over `samples` samples and of the gradient norms over `steps`
    /// optimiser steps into means.
    pub(crate) fn average(&mut self, samples: u32, steps: u32) {
        let per_sample = 1.0 / samples.max(1) as f32;
        self.policy_loss *= per_sample;
        self.value_loss *= per_sample;
        self.entropy *= per_sample;
        self.approx_kl *= per_sample;
        self.clip_fraction *= per_sample;
        self.grad_norm /= steps.max(1) as f32;
    }
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize>
    Ppo<A, C, OBS, N, CHUNK>
{
    /// One PPO update on the collected rollout (see the module docs).
    ///
    /// # Errors
    /// [`Error::RolloutIncomplete`] without a complete rollout that has not
    /// been trained on yet, [`Error::InvalidConfig`] for an invalid
    /// configuration — both before anything changes; [`Error::NonFinite`] or
    /// [`Error::GradientOverflow`] for a non-finite network output or an
    /// unusable gradient mid-update: the failing minibatch step is not
    /// applied, the finite steps before it stay applied, and the rollout is
    /// consumed either way.
    pub fn update<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Result<UpdateStats, Error> {
        let c = self.config;
        let n = self.rollout.len();
        if !self.rollout.is_ready() {
            return Err(Error::RolloutIncomplete);
        }
        c.validate(n)?;
        self.train.params.critic.validate()?;
        // Trained on once: a second update needs a new rollout.
        self.rollout.consume();
        // Schedules are evaluated at the progress *before* this rollout (CleanRL).
        let progress_steps = self.steps.saturating_sub(n as u64);
        let lr = c.learning_rate.at(progress_steps, c.total_steps);
        let clip = c.clip_range.at(progress_steps, c.total_steps);
        let batch = n / usize::from(c.minibatches);
        let inv_batch = 1.0 / batch as f32;

        for (i, slot) in self.rollout.indices[..n].iter_mut().enumerate() {
            *slot = i as u16;
        }
        let beta = self.kl_coef;
        let mut stats = UpdateStats {
            explained_variance: self.rollout.explained_variance(),
            learning_rate: lr,
            clip_range: clip,
            kl_coef: beta,
            ..UpdateStats::default()
        };
        let (mut samples, mut steps) = (0u32, 0u32);
        for epoch in 0..c.epochs {
            rng::shuffle(rng, &mut self.rollout.indices[..n]);
            let mut epoch_kl = 0.0f32;
            for start in (0..n).step_by(batch) {
                // Advantage normalisation over the minibatch (unbiased std, as torch).
                let (mean, inv_std) = if c.normalize_advantages && batch > 1 {
                    let idx = &self.rollout.indices[start..start + batch];
                    let adv = |k: &u16| self.rollout.advantages[usize::from(*k)];
                    let mean = idx.iter().map(adv).sum::<f32>() * inv_batch;
                    let ss: f32 = idx.iter().map(|k| (adv(k) - mean) * (adv(k) - mean)).sum();
                    (mean, 1.0 / (math::sqrt(ss / (batch - 1) as f32) + 1e-8))
                } else {
                    (0.0, 1.0)
                };

                self.train.zero_grad();
                // The minibatch in chunks of `CHUNK` samples, each network
                // run one layer at a time over a chunk (the same bits as
                // sample by sample: `nn::batch`).
                for chunk in self.rollout.indices[start..start + batch].chunks(CHUNK) {
                    let n = chunk.len();
                    let actions =
                        (self.rollout.samples).load_chunk::<A, CHUNK>(&mut self.actor_batch, chunk);
                    let obs = *A::batch_inputs(&mut self.actor_batch);
                    let (mut old_values, mut returns) = ([0.0f32; CHUNK], [0.0f32; CHUNK]);
                    for ((old_value, target), &i) in
                        old_values.iter_mut().zip(&mut returns).zip(chunk)
                    {
                        let i = usize::from(i);
                        *old_value = self.rollout.values[i];
                        *target = self.rollout.returns[i];
                    }
                    let actor = &self.train.params.actor;
                    let mut evaluated = [(0.0f32, 0.0f32); CHUNK];
                    actor.evaluate_batch(&mut self.actor_batch, &actions[..n], &mut evaluated)?;
                    let mut d_log_probs = [0.0f32; CHUNK];
                    for ((&i, &(log_prob, entropy)), d) in
                        chunk.iter().zip(&evaluated).zip(&mut d_log_probs)
                    {
                        let i = usize::from(i);
                        let advantage = (self.rollout.advantages[i] - mean) * inv_std;
                        let log_ratio = log_prob - self.rollout.log_probs[i];
                        let s =
                            clipped_surrogate(log_prob, self.rollout.log_probs[i], advantage, clip);
                        // PPO-penalty's β·KL term (off, and not evaluated, at β = 0).
                        let (penalty_loss, d_log_prob) = if beta > 0.0 {
                            let p = kl_penalty(log_ratio, s.ratio, beta);
                            (p.loss, s.d_log_prob + p.d_log_prob)
                        } else {
                            (0.0, s.d_log_prob)
                        };
                        *d = d_log_prob * inv_batch;
                        let kl = approx_kl_at(log_ratio, s.ratio);
                        epoch_kl += kl;
                        stats.policy_loss += s.loss + penalty_loss;
                        stats.entropy += entropy;
                        stats.approx_kl += kl;
                        stats.clip_fraction += f32::from(u8::from(s.clipped));
                        samples += 1;
                    }
                    // The bound loss `c_b · Σᵢ eᵢ²` on a Gaussian mean
                    // (`PpoConfig::bound_coef`), averaged over the minibatch.
                    let bound =
                        (c.bound_coef > 0.0).then_some((&self.space, c.bound_coef * inv_batch));
                    let bound_loss = actor.backward_batch(
                        &mut self.actor_batch,
                        &actions[..n],
                        &d_log_probs[..n],
                        -c.ent_coef * inv_batch,
                        bound,
                        &mut self.train.grads.actor,
                    );
                    stats.policy_loss += c.bound_coef * bound_loss;

                    let mut value_losses = [0.0f32; CHUNK];
                    self.train.params.critic.fit_batch(
                        &mut self.critic_batch,
                        &obs[..n],
                        &old_values[..n],
                        &returns[..n],
                        c.value_clip,
                        c.vf_coef,
                        inv_batch,
                        &mut value_losses,
                        &mut self.train.grads.critic,
                    );
                    for &value_loss in &value_losses[..n] {
                        stats.value_loss += value_loss;
                    }
                }
                stats.grad_norm += self.train.apply(lr, c.max_grad_norm)?;
                steps += 1;
            }
            stats.epochs = epoch + 1;
            if c.target_kl
                .is_some_and(|target| epoch_kl / n as f32 > target)
            {
                break;
            }
        }
        if let Some(target) = c.kl_target {
            self.adapt_kl_coef(target)?;
        }
        stats.average(samples, steps);
        Ok(stats)
    }

    /// PPO-penalty's adaptive rule (Schulman et al. 2017, §4): with
    /// `d = mean_t k₃` of the updated policy against the rollout's
    /// log-probabilities, halve `β` when `d < d_targ/1.5`, double it when
    /// `d > 1.5·d_targ`, within [`KL_COEF_MIN`](crate::algo::ppo::KL_COEF_MIN)`..=`[`KL_COEF_MAX`](crate::algo::ppo::KL_COEF_MAX).
    ///
    /// # Errors
    /// [`Error::NonFinite`] if the updated actor gives a non-finite
    /// log-probability; `β` is then unchanged.
    fn adapt_kl_coef(&mut self, target: f32) -> Result<(), Error> {
        let n = self.rollout.len();
        let mut sum = 0.0f32;
        for i in 0..n {
            let (log_prob, _) = self.train.params.actor.evaluate(
                &self.rollout.obs[i],
                &self.rollout.actions[i],
                &mut self.actor_cache,
            )?;
            sum += approx_kl(log_prob - self.rollout.log_probs[i]);
        }
        let d = sum / n.max(1) as f32;
        check_finite(d)?;
        self.kl_coef = adapted_kl_coef(self.kl_coef, d, target);
        Ok(())
    }
}
