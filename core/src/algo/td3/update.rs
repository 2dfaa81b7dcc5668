//! One TD3 gradient step from explicit draws (the equations are in the
//! [module docs](super)).

use nalgebra::SVector;

use super::Td3;
use crate::algo::offpolicy::{
    Draws, action_part, bellman_target, critic_input, polyak, regress_twin,
};
use crate::error::{Error, check_all_finite, check_finite};
use crate::math;
use crate::nn::Layer;

/// What one TD3 gradient step computed (SB3's logged `train/…` values).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Td3Stats {
    /// `Σᵢ mean((Qᵢ(s, a) − q_target)²)` before the critic step.
    pub critic_loss: f32,
    /// `−mean(Q₁(s, μ(s)))` with the updated critics before the actor step,
    /// when this update was a delayed actor update.
    pub actor_loss: Option<f32>,
    /// `mean Q₁(s, a)` on the minibatch, before the critic step.
    pub q1: f32,
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
    /// One gradient step on the minibatch `draws` names (its replay
    /// indices and the standard normal `ε′` of the target smoothing; its
    /// `pi_noise` is not used): the critic step, and on every
    /// `policy_delay`-th update the actor step and the Polyak updates of
    /// all three targets.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an empty minibatch, one larger than
    /// `BATCH` or an index past the stored transitions (nothing changes
    /// then); [`Error::NonFinite`] for a non-finite network output, loss or
    /// gradient, [`Error::GradientOverflow`], [`Error::InvalidConfig`] for
    /// an invalid learning rate or Adam configuration. Transactional: on a
    /// delayed actor update the critics' step is staged
    /// ([`TrainState::staged`](crate::optim::TrainState::staged)), the
    /// actor's loss and gradient are computed through the staged critics and
    /// both steps are checked before either is taken, so a refused update
    /// changes nothing in the agent (the gradient buffers and activation
    /// caches are scratch).
    pub fn update_with(&mut self, draws: &Draws<ACT, BATCH>) -> Result<Td3Stats, Error> {
        draws.check(&self.replay)?;
        let n = draws.len;
        let c = self.config;
        let inv_n = 1.0 / n as f32;
        let mut stats = Td3Stats::default();
        let update = self.n_updates.saturating_add(1);

        // Critics: J_Q = Σᵢ mean((Qᵢ − q_target)²), ∂J_Q/∂Qᵢ = 2(Qᵢ − q_target)/B.
        self.critic.zero_grad();
        for k in 0..n {
            let t = draws.sample(&self.replay, k)?;
            check_all_finite(draws.next_noise[k].as_slice())?;
            // ã′ = clip(μ′(s′) + clip(σ̃ ε′, −c, c), −1, 1)
            let mut next_action = self.actor_target.forward(&t.next_obs);
            for (a, &e) in next_action.iter_mut().zip(draws.next_noise[k].iter()) {
                let noise = math::clamp(
                    e * c.target_policy_noise,
                    -c.target_noise_clip,
                    c.target_noise_clip,
                );
                *a = math::clamp(*a + noise, -1.0, 1.0);
            }
            check_all_finite(next_action.as_slice())?;
            let x_next = critic_input::<OBS, ACT, OA>(&t.next_obs, &next_action);
            let next_q = self.critic_target.min_q(&x_next);
            let q_target = bellman_target(t.reward, t.terminated, c.gamma, next_q)?;

            let x = critic_input::<OBS, ACT, OA>(&t.obs, &t.action);
            let (q1, sq_errors) = regress_twin(
                &mut self.critic,
                &mut self.critic_cache,
                &x,
                q_target,
                2.0,
                inv_n,
            );
            stats.critic_loss += sq_errors;
            stats.q1 += q1;
        }
        stats.critic_loss *= inv_n;
        stats.q1 *= inv_n;
        check_finite(stats.critic_loss)?;
        let lr = c.learning_rate;

        if update.is_multiple_of(u64::from(c.policy_delay)) {
            // The critics' step is staged, not taken: `critic_next` holds
            // the parameters it will write (bit for bit), and nothing of the
            // agent changes until the actor's step has been checked too.
            self.critic.staged(lr, &mut self.critic_next)?;
            // Actor: J_μ = −mean(Q₁(s, μ(s))) with the updated critics
            // (`critic_next`), ∂J_μ/∂a = −∂Q₁/∂a / B through Q₁'s input
            // (`backward_input`: no gradient of Q₁'s parameters is computed).
            self.actor.zero_grad();
            let mut actor_loss = 0.0f32;
            for k in 0..n {
                let t = draws.sample(&self.replay, k)?;
                let action = self
                    .actor
                    .params
                    .forward_train(&t.obs, &mut self.actor_cache);
                check_all_finite(action.as_slice())?;
                let x = critic_input::<OBS, ACT, OA>(&t.obs, &action);
                let cache1 = &mut self.critic_cache.0;
                let q1 = self.critic_next.q1.forward_train(&x, cache1)[0];
                actor_loss -= q1;
                let d_x = self
                    .critic_next
                    .q1
                    .backward_input(cache1, &SVector::<f32, 1>::new(-inv_n));
                let d_action = action_part::<OBS, ACT, OA>(&d_x);
                self.actor
                    .params
                    .backward(&self.actor_cache, &d_action, &mut self.actor.grads);
            }
            actor_loss *= inv_n;
            check_finite(actor_loss)?;
            self.actor.check_step(lr)?;
            stats.actor_loss = Some(actor_loss);
            // Both steps checked: take them (each `apply` passes the checks
            // just made again, and the critics' writes `critic_next`'s bits).
            self.critic.apply(lr, None)?;
            self.actor.apply(lr, None)?;
            polyak(&mut self.critic_target, &self.critic.params, c.tau);
            polyak(&mut self.actor_target, &self.actor.params, c.tau);
        } else {
            self.critic.apply(lr, None)?;
        }
        self.n_updates = update;
        Ok(stats)
    }
}
