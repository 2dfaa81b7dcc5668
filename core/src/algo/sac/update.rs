//! One SAC gradient step from explicit draws (the equations are in the
//! [module docs](super)).

use nalgebra::SVector;

use super::Sac;
use crate::algo::offpolicy::{
    Draws, action_part, bellman_target, critic_input, polyak, regress_twin,
};
use crate::error::{Error, check_finite};
use crate::nn::Layer;

/// What one SAC gradient step computed (SB3's logged `train/…` values).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SacStats {
    /// `½ Σᵢ mean((Qᵢ(s, a) − q_target)²)` before the critic step.
    pub critic_loss: f32,
    /// `mean(α log π(ã|s) − minᵢ Qᵢ(s, ã))` with the updated critics,
    /// before the actor step.
    pub actor_loss: f32,
    /// The `α` both losses used.
    pub ent_coef: f32,
    /// `−log α · (mean log π(ã|s) + H̄)` before the `log α` step (0 for a
    /// fixed `α`).
    pub ent_coef_loss: f32,
    /// `mean log π(ã|s)`.
    pub log_prob: f32,
    /// `mean Q₁(s, a)` on the minibatch, before the critic step.
    pub q1: f32,
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
    /// One gradient step on the minibatch `draws` names (its replay indices
    /// and noises), in the order of the [module docs](super): critics,
    /// actor, `log α`, then the targets when the interval is due. The
    /// learning rate, `γ`, `τ`, the `α` mode and the target entropy come
    /// from [`config`](Self::config).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an empty minibatch, one larger than
    /// `BATCH` or an index past the stored transitions (nothing changes
    /// then); [`Error::NonFinite`] for a non-finite network output, loss or
    /// gradient, [`Error::GradientOverflow`] for an unusable gradient, and
    /// [`Error::InvalidConfig`] for an invalid learning rate or Adam
    /// configuration. Transactional: the critics' step is staged
    /// ([`TrainState::staged`](crate::optim::TrainState::staged)), the
    /// actor's loss and gradient are computed through the staged critics and
    /// every step's gradient and learning rate is checked before any is
    /// taken, so a refused update changes nothing in the agent (the
    /// gradient buffers and activation caches are scratch).
    pub fn update_with(&mut self, draws: &Draws<ACT, BATCH>) -> Result<SacStats, Error> {
        draws.check(&self.replay)?;
        let n = draws.len;
        let c = self.config;
        let lr = c.learning_rate;
        let inv_n = 1.0 / n as f32;
        let alpha = self.alpha();
        let mut stats = SacStats {
            ent_coef: alpha,
            ..SacStats::default()
        };

        // Critics: J_Q = ½ Σᵢ mean((Qᵢ(s, a) − q_target)²), ∂J_Q/∂Qᵢ = (Qᵢ − q_target)/B.
        self.critic.zero_grad();
        for k in 0..n {
            let t = draws.sample(&self.replay, k)?;
            let (next_action, next_logp) = self
                .actor
                .params
                .sample_with(&t.next_obs, &draws.next_noise[k])?;
            let x_next = critic_input::<OBS, ACT, OA>(&t.next_obs, &next_action);
            // min(Q′₁, Q′₂) − α log π(a′|s′)
            let next_q = self.critic_target.min_q(&x_next) - alpha * next_logp;
            let q_target = bellman_target(t.reward, t.terminated, c.gamma, next_q)?;

            let x = critic_input::<OBS, ACT, OA>(&t.obs, &t.action);
            let (q1, sq_errors) = regress_twin(
                &mut self.critic,
                &mut self.critic_cache,
                &x,
                q_target,
                1.0,
                inv_n,
            );
            stats.critic_loss += 0.5 * sq_errors;
            stats.q1 += q1;
        }
        stats.critic_loss *= inv_n;
        stats.q1 *= inv_n;
        check_finite(stats.critic_loss)?;
        // The critics' step is staged, not taken: `critic_next` holds the
        // parameters it will write (bit for bit), and nothing of the agent
        // changes until every step of this update has been checked.
        self.critic.staged(lr, &mut self.critic_next)?;

        // Actor: J_π = mean(α log π(ã|s) − min Qᵢ(s, ã)) with the updated
        // critics (`critic_next`): ∂J_π/∂log π = α/B, ∂J_π/∂ã = −∂Q_min/∂ã / B
        // through the critic's input (`backward_input`: the critics'
        // parameters are not trained by this loss, so no gradient of theirs
        // is computed).
        self.actor.zero_grad();
        for k in 0..n {
            let t = draws.sample(&self.replay, k)?;
            let (action, log_prob) = self.actor.params.sample_train(
                &t.obs,
                &draws.pi_noise[k],
                &mut self.actor_cache,
            )?;
            let x = critic_input::<OBS, ACT, OA>(&t.obs, &action);
            let (cache1, cache2) = &mut self.critic_cache;
            let critic = &self.critic_next;
            let q1 = critic.q1.forward_train(&x, cache1)[0];
            let q2 = critic.q2.forward_train(&x, cache2)[0];
            let d_q = SVector::<f32, 1>::new(-inv_n);
            // The smaller critic carries the gradient (the first on a tie,
            // as `torch.min`).
            let (min_q, d_x) = if q1 <= q2 {
                (q1, critic.q1.backward_input(cache1, &d_q))
            } else {
                (q2, critic.q2.backward_input(cache2, &d_q))
            };
            stats.actor_loss += alpha * log_prob - min_q;
            stats.log_prob += log_prob;
            let d_action = action_part::<OBS, ACT, OA>(&d_x);
            self.actor.params.backward(
                &self.actor_cache,
                &d_action,
                alpha * inv_n,
                &mut self.actor.grads,
            );
        }
        stats.actor_loss *= inv_n;
        stats.log_prob *= inv_n;
        check_finite(stats.actor_loss)?;
        self.actor.check_step(lr)?;

        // α: J_α = −log α · mean(log π(ã|s) + H̄), ∂J_α/∂log α = −mean(log π + H̄).
        let auto_alpha = c.ent_coef.is_auto();
        if auto_alpha {
            let target_entropy = c.target_entropy_for(ACT);
            let d_log_alpha = -(stats.log_prob + target_entropy);
            stats.ent_coef_loss = self.log_alpha.params[0] * d_log_alpha;
            self.log_alpha.grads[0] = d_log_alpha;
            self.log_alpha.check_step(lr)?;
        }

        // Every step checked: take them. Each `apply` makes the checks just
        // passed again on unchanged inputs, so none refuses, and the critics'
        // step writes the bits `critic_next` holds.
        self.critic.apply(lr, None)?;
        self.actor.apply(lr, None)?;
        if auto_alpha {
            self.log_alpha.apply(lr, None)?;
        }

        // Targets: θ′ ← (1 − τ)θ′ + τθ every target_update_interval steps.
        if self
            .n_updates
            .is_multiple_of(u64::from(c.target_update_interval))
        {
            polyak(&mut self.critic_target, &self.critic.params, c.tau);
        }
        self.n_updates = self.n_updates.saturating_add(1);
        Ok(stats)
    }
}
