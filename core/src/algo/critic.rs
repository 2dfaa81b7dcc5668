//! Critics: one value network, or `K` of them fused with weights
//! (multi-critic PPO, notes 000).
//!
//! The rollout agents ([`Ppo`](super::Ppo) and the agents built on it) use
//! their critic through [`Critic`] only: the value `V(s)` that GAE
//! bootstraps from, and one training step of the value loss. Every
//! `Network<OBS, 1>` is a critic (`½(V − R)²`, optionally clipped around
//! `V_old`); [`Critics<C, K>`] is `K` networks whose values are fused,
//!
//! `V(s) = Σₖ w_k V_k(s)`,
//!
//! for GAE, each trained toward the same target `R = Â + V_old` (the fused
//! return) with the weighted loss `Σₖ w_k ½(V_k − R)²`. With `K = 1` and
//! `w = [1]` every operation reduces to the single network's, bit for bit
//! (`1·x` and a sum that starts from its first term are exact).
//!
//! The weights are configuration, not parameters: they live in the struct
//! beside the networks but are not tensors, so the optimiser, the
//! checkpoints and the gradient buffers never touch them. Set them before
//! `init` (which checks them: finite, non-negative, summing to 1).

use nalgebra::SVector;
use rand_core::Rng;

use crate::error::Error;
use crate::loss::value_loss;
use crate::nn::{Layer, Network, Zeroed, gain};
use crate::params::{Params, TensorData, TensorShape};

/// What a rollout agent needs from its critic.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a critic for {OBS}-dimensional observations",
    label = "a critic is a `Network<{OBS}, 1>` or `Critics<Network<{OBS}, 1>, K>`"
)]
pub trait Critic<const OBS: usize>: Params {
    /// Per-sample training cache.
    type Cache;
    /// A zeroed cache, for `const` initialisers.
    const ZERO_CACHE: Self::Cache;

    /// The (fused) value `V(s)`.
    fn value(&self, obs: &SVector<f32, OBS>) -> f32;

    /// Orthogonal initialisation (hidden gain √2, output gain 1).
    fn init<R: Rng + ?Sized>(&mut self, rng: &mut R);

    /// Checks the critic's configuration (the fusion weights).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the field.
    fn validate(&self) -> Result<(), Error> {
        Ok(())
    }

    /// One sample of the value loss: forward pass on `obs`, loss against
    /// `target` (clipped around `old_value` by `clip`), and its gradient
    /// scaled by `coef · inv_batch` added into `grads`. Returns the loss.
    #[allow(clippy::too_many_arguments)]
    fn fit(
        &self,
        obs: &SVector<f32, OBS>,
        old_value: f32,
        target: f32,
        clip: Option<f32>,
        coef: f32,
        inv_batch: f32,
        cache: &mut Self::Cache,
        grads: &mut Self,
    ) -> f32;

    /// Activations of up to `BATCH` samples for [`fit_batch`](Critic::fit_batch).
    type Batch<const BATCH: usize>: Zeroed;

    /// [`value`](Critic::value) of the first `n` observations (at most
    /// `BATCH`, `obs.len()` and `out.len()`) into `out`, bit for bit; a
    /// network runs one layer at a time over all of them.
    fn values_batch<const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        obs: &[SVector<f32, OBS>],
        out: &mut [f32],
    ) {
        let _ = batch;
        for (v, o) in out.iter_mut().zip(obs).take(BATCH) {
            *v = self.value(o);
        }
    }

    /// [`fit`](Critic::fit) for the first `n = obs.len()` samples (at most
    /// `BATCH`; `old_values[k]`, `targets[k]` and `losses[k]` belong to
    /// `obs[k]`), the networks run one layer at a time over all of them:
    /// writes each sample's loss into `losses` and adds the gradients into
    /// `grads` in sample order — the same bits as one `fit` per sample.
    #[allow(clippy::too_many_arguments)]
    fn fit_batch<const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        obs: &[SVector<f32, OBS>],
        old_values: &[f32],
        targets: &[f32],
        clip: Option<f32>,
        coef: f32,
        inv_batch: f32,
        losses: &mut [f32],
        grads: &mut Self,
    );
}

impl<N: Network<OBS, 1>, const OBS: usize> Critic<OBS> for N {
    type Cache = <N as Layer>::Cache;
    const ZERO_CACHE: Self::Cache = <N as Layer>::ZERO_CACHE;

    fn value(&self, obs: &SVector<f32, OBS>) -> f32 {
        self.forward(obs)[0]
    }

    fn init<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        self.init_orthogonal(rng, gain::HIDDEN, gain::VALUE);
    }

    fn fit(
        &self,
        obs: &SVector<f32, OBS>,
        old_value: f32,
        target: f32,
        clip: Option<f32>,
        coef: f32,
        inv_batch: f32,
        cache: &mut Self::Cache,
        grads: &mut Self,
    ) -> f32 {
        let v = self.forward_train(obs, cache)[0];
        let vl = value_loss(v, old_value, target, clip);
        let d_value = SVector::<f32, 1>::new(coef * vl.d_value * inv_batch);
        self.backward(cache, &d_value, grads);
        vl.loss
    }

    type Batch<const BATCH: usize> = <N as Layer>::Batch<BATCH>;

    fn values_batch<const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        obs: &[SVector<f32, OBS>],
        out: &mut [f32],
    ) {
        let n = obs.len().min(out.len()).min(BATCH);
        N::batch_inputs(batch)[..n].copy_from_slice(&obs[..n]);
        self.forward_batch(batch, n);
        for (v, y) in out.iter_mut().zip(N::batch_outputs(batch)).take(n) {
            *v = y[0];
        }
    }

    fn fit_batch<const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        obs: &[SVector<f32, OBS>],
        old_values: &[f32],
        targets: &[f32],
        clip: Option<f32>,
        coef: f32,
        inv_batch: f32,
        losses: &mut [f32],
        grads: &mut Self,
    ) {
        let n = obs.len().min(BATCH);
        N::batch_inputs(batch)[..n].copy_from_slice(&obs[..n]);
        self.forward_batch(batch, n);
        let mut d_values = [SVector::<f32, 1>::zeros(); BATCH];
        for (((d_value, v), (&old_value, &target)), loss) in d_values
            .iter_mut()
            .zip(N::batch_outputs(batch).iter().take(n))
            .zip(old_values.iter().zip(targets))
            .zip(losses.iter_mut())
        {
            let vl = value_loss(v[0], old_value, target, clip);
            d_value[0] = coef * vl.d_value * inv_batch;
            *loss = vl.loss;
        }
        N::batch_d_outputs(batch)[..n].copy_from_slice(&d_values[..n]);
        self.backward_batch(batch, n, grads, None);
    }
}

/// `K` critics fused with `weights` (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Critics<C, const K: usize> {
    /// The networks, trained together by the agent's optimiser.
    pub nets: [C; K],
    /// Fusion weights `w_k` (configuration, not parameters).
    pub weights: [f32; K],
}

impl<C: Params, const K: usize> Critics<C, K> {
    /// The networks for the first `i` tensors of the flat order.
    fn locate(i: usize) -> (usize, usize) {
        (i / C::TENSORS, i % C::TENSORS)
    }
}

impl<C: Params, const K: usize> Params for Critics<C, K> {
    const TENSORS: usize = K * C::TENSORS;
    const LEN: usize = K * C::LEN;
    const ZERO: Self = Self {
        nets: [C::ZERO; K],
        weights: [0.0; K],
    };

    fn tensor(&self, i: usize) -> &[f32] {
        let (k, j) = Self::locate(i);
        self.nets.get(k).map_or(&[], |c| c.tensor(j))
    }

    fn tensor_mut(&mut self, i: usize) -> &mut [f32] {
        let (k, j) = Self::locate(i);
        match self.nets.get_mut(k) {
            Some(c) => c.tensor_mut(j),
            None => &mut [],
        }
    }

    fn shape(i: usize) -> TensorShape {
        let (k, j) = Self::locate(i);
        if k < K {
            C::shape(j)
        } else {
            TensorShape {
                rows: 0,
                cols: 0,
                tag: crate::params::tag::PLAIN,
            }
        }
    }

    fn check_values<'a>(
        first: usize,
        tensor: &dyn Fn(usize) -> TensorData<'a>,
    ) -> Result<(), Error> {
        for k in 0..K {
            C::check_values(first + k * C::TENSORS, tensor)?;
        }
        Ok(())
    }
}

impl<C: Network<OBS, 1>, const OBS: usize, const K: usize> Critic<OBS> for Critics<C, K> {
    type Cache = [<C as Layer>::Cache; K];
    const ZERO_CACHE: Self::Cache = [<C as Layer>::ZERO_CACHE; K];

    /// `Σₖ w_k V_k(s)`, summed from the first term.
    fn value(&self, obs: &SVector<f32, OBS>) -> f32 {
        let mut terms = self.nets.iter().zip(&self.weights);
        let Some((first, &w)) = terms.next() else {
            return 0.0;
        };
        let mut v = w * first.forward(obs)[0];
        for (net, &w) in terms {
            v += w * net.forward(obs)[0];
        }
        v
    }

    fn init<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        for net in &mut self.nets {
            net.init_orthogonal(rng, gain::HIDDEN, gain::VALUE);
        }
    }

    /// Finite, non-negative weights that sum to 1 (within `1e-5`).
    fn validate(&self) -> Result<(), Error> {
        crate::env::channels::check_weights("value_weights", &self.weights)
    }

    /// `Σₖ w_k ½(V_k − R)²`, each network's gradient scaled by its weight.
    fn fit(
        &self,
        obs: &SVector<f32, OBS>,
        old_value: f32,
        target: f32,
        clip: Option<f32>,
        coef: f32,
        inv_batch: f32,
        cache: &mut Self::Cache,
        grads: &mut Self,
    ) -> f32 {
        let mut loss = 0.0;
        for (k, ((net, &w), (cache, grads))) in self
            .nets
            .iter()
            .zip(&self.weights)
            .zip(cache.iter_mut().zip(grads.nets.iter_mut()))
            .enumerate()
        {
            let l = net.fit(
                obs,
                old_value,
                target,
                clip,
                coef * w,
                inv_batch,
                cache,
                grads,
            );
            loss = if k == 0 { w * l } else { loss + w * l };
        }
        loss
    }

    type Batch<const BATCH: usize> = [<C as Critic<OBS>>::Batch<BATCH>; K];

    /// Each network over the whole batch in turn; each sample's loss
    /// summed over the networks in order, as [`fit`](Critic::fit).
    fn fit_batch<const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        obs: &[SVector<f32, OBS>],
        old_values: &[f32],
        targets: &[f32],
        clip: Option<f32>,
        coef: f32,
        inv_batch: f32,
        losses: &mut [f32],
        grads: &mut Self,
    ) {
        let mut member_losses = [0.0f32; BATCH];
        for (k, ((net, &w), (batch, grads))) in self
            .nets
            .iter()
            .zip(&self.weights)
            .zip(batch.iter_mut().zip(grads.nets.iter_mut()))
            .enumerate()
        {
            net.fit_batch(
                batch,
                obs,
                old_values,
                targets,
                clip,
                coef * w,
                inv_batch,
                &mut member_losses,
                grads,
            );
            for (loss, &l) in losses.iter_mut().zip(&member_losses).take(obs.len()) {
                *loss = if k == 0 { w * l } else { *loss + w * l };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::{Mlp, fd};
    use std::vec::Vec;

    type Net = Mlp<3, 5, 1>;

    /// `fit_batch` against `fit` sample by sample: losses and gradients
    /// bit for bit, with and without value clipping.
    fn check_fit_batch<C: Critic<OBS> + Clone, const OBS: usize, const B: usize>(
        critic: &C,
        obs: &[SVector<f32, OBS>],
    ) {
        let n = obs.len();
        let old_values: Vec<f32> = (0..n).map(|k| 0.4 * k as f32 - 0.5).collect();
        let targets: Vec<f32> = (0..n).map(|k| 1.3 - 0.7 * k as f32).collect();
        for clip in [None, Some(0.2)] {
            let mut start = C::ZERO;
            fd::randomise(&mut start, &mut fd::rng(50), 0.1);
            let (mut single_grads, mut batch_grads) = (start.clone(), start);
            let mut cache = C::ZERO_CACHE;
            let single: Vec<u32> = (0..n)
                .map(|k| {
                    let loss = critic.fit(
                        &obs[k],
                        old_values[k],
                        targets[k],
                        clip,
                        0.5,
                        0.25,
                        &mut cache,
                        &mut single_grads,
                    );
                    loss.to_bits()
                })
                .collect();
            let mut batch = std::boxed::Box::new(<C::Batch<B> as Zeroed>::ZERO);
            let mut losses = [0.0f32; B];
            critic.fit_batch(
                &mut batch,
                obs,
                &old_values,
                &targets,
                clip,
                0.5,
                0.25,
                &mut losses,
                &mut batch_grads,
            );
            let batched: Vec<u32> = losses[..n].iter().map(|l| l.to_bits()).collect();
            assert_eq!(batched, single, "losses, clip {clip:?}");
            fd::assert_same_bits(
                &batch_grads,
                &single_grads,
                &std::format!("gradient, clip {clip:?}"),
            );
        }
    }

    #[test]
    fn batched_values_are_the_per_sample_values() {
        fn check<C: Critic<3>, const B: usize>(critic: &C, obs: &[SVector<f32, 3>]) {
            let mut batch = std::boxed::Box::new(<C::Batch<B> as Zeroed>::ZERO);
            let mut out = [f32::NAN; B];
            critic.values_batch(&mut batch, obs, &mut out);
            for (k, (x, v)) in obs.iter().zip(&out).enumerate() {
                assert_eq!(v.to_bits(), critic.value(x).to_bits(), "value {k}");
            }
            // Nothing past the observations given.
            assert!(out[obs.len().min(B)..].iter().all(|v| v.is_nan()));
        }
        let mut rng = fd::rng(52);
        let (obs, net, critics) = random_critics::<21>(&mut rng);
        check::<Net, 21>(&net, &obs);
        check::<Net, 32>(&net, &obs[..5]);
        check::<Net, 4>(&net, &obs);
        check::<Critics<Net, 2>, 8>(&critics, &obs[..6]);
    }

    /// `K` random observations, a random network and two fused ones.
    fn random_critics<const K: usize>(
        rng: &mut rand_xoshiro::Xoshiro128PlusPlus,
    ) -> ([SVector<f32, 3>; K], Net, Critics<Net, 2>) {
        let mut obs = [SVector::<f32, 3>::zeros(); K];
        for x in &mut obs {
            crate::rng::fill_normal(rng, x.as_mut_slice());
        }
        let mut net = Net::ZERO;
        fd::randomise(&mut net, rng, 0.6);
        let mut critics = Critics::<Net, 2> {
            nets: [Net::ZERO, Net::ZERO],
            weights: [0.3, 0.7],
        };
        fd::randomise(&mut critics.nets[0], rng, 0.6);
        fd::randomise(&mut critics.nets[1], rng, 0.6);
        (obs, net, critics)
    }

    #[test]
    fn batched_fits_are_the_per_sample_fits() {
        let mut rng = fd::rng(51);
        let (obs, net, critics) = random_critics::<5>(&mut rng);
        check_fit_batch::<Net, 3, 5>(&net, &obs);
        check_fit_batch::<Net, 3, 8>(&net, &obs[..3]);
        check_fit_batch::<Critics<Net, 2>, 3, 5>(&critics, &obs);
        check_fit_batch::<Critics<Net, 2>, 3, 4>(&critics, &obs[..4]);
    }

    /// `check_values` checks every member's tensors at its own place in the
    /// flat order: members with a domain (Gaussian actors: four network
    /// tensors, then `log_std`) report an out-of-range `log_std` of member
    /// `k` as tensor `5k + 4`.
    #[test]
    fn domains_are_checked_per_member_at_their_flat_index() {
        use crate::policy::{Gaussian, GaussianActor};
        type Member = GaussianActor<crate::nn::Mlp1<2, 3, 1>, 1>;
        assert_eq!(<Member as Params>::TENSORS, 5);
        let mut members = Critics::<Member, 3> {
            nets: core::array::from_fn(|_| Member {
                net: crate::nn::Mlp1::ZERO,
                head: Gaussian::with_log_std(0.0),
            }),
            weights: [0.2, 0.3, 0.5],
        };
        assert_eq!(members.check_domain(), Ok(()));
        for (k, tensor) in [(2, 14), (1, 9), (0, 4)] {
            members.nets[k].head.log_std[0] = 100.0;
            assert_eq!(
                members.check_domain().map_err(|e| match e {
                    Error::OutOfDomain { tensor, .. } => tensor,
                    _ => u32::MAX,
                }),
                Err(tensor),
                "member {k}"
            );
        }
    }

    fn critics() -> Critics<Net, 2> {
        let mut c = Critics::<Net, 2>::ZERO;
        c.init(&mut fd::rng(1));
        fd::randomise_biases(&mut c, &mut fd::rng(2));
        c.weights = [0.3, 0.7];
        c
    }

    /// The fused value is `Σ w_k V_k`, and `fit`'s gradient is that of
    /// `Σ w_k ½(V_k − R)²` by central differences of the `f64` networks.
    #[test]
    fn weighted_value_loss_gradient_matches_finite_differences() {
        let c = critics();
        let obs = SVector::<f32, 3>::new(0.4, -0.7, 1.2);
        let x: Vec<f64> = obs.iter().map(|&v| f64::from(v)).collect();
        let target = 0.9;
        let expected = 0.3 * c.nets[0].forward(&obs)[0] + 0.7 * c.nets[1].forward(&obs)[0];
        assert_eq!(c.value(&obs), expected);

        let mut cache = <Critics<Net, 2> as Critic<3>>::ZERO_CACHE;
        let mut grads = Critics::<Net, 2>::ZERO;
        let loss = c.fit(&obs, 0.0, target, None, 1.0, 1.0, &mut cache, &mut grads);
        let reference = |theta: &[f64]| -> f64 {
            let (a, b) = theta.split_at(Net::LEN);
            let v = [
                Net::reference_forward(a, &x)[0],
                Net::reference_forward(b, &x)[0],
            ];
            0.3 * 0.5 * (v[0] - f64::from(target)).powi(2)
                + 0.7 * 0.5 * (v[1] - f64::from(target)).powi(2)
        };
        let theta = fd::flatten(&c);
        assert!((f64::from(loss) - reference(&theta)).abs() < 1e-5);
        let numeric = fd::numerical_gradient(&theta, reference);
        fd::assert_close("d loss / d theta", &fd::flatten(&grads), &numeric);
    }

    #[test]
    fn weights_are_validated() {
        let mut c = critics();
        assert!(Critic::<3>::validate(&c).is_ok());
        for bad in [[0.5, 0.6], [-0.5, 1.5], [f32::INFINITY, 0.0]] {
            c.weights = bad;
            assert_eq!(
                Critic::<3>::validate(&c),
                Err(Error::config(
                    "value_weights",
                    "must be finite, non-negative and sum to 1"
                ))
            );
        }
    }

    /// `K = 1` with weight 1 is plain PPO bit for bit: the same statistics
    /// every update and the same weights and Adam moments at the end.
    #[test]
    fn one_critic_with_weight_one_is_plain_ppo_bit_for_bit() {
        use crate::agent;
        use crate::algo::{Cursor, PpoConfig};
        use crate::env::CartPoleContinuous;
        use crate::rng::Xoshiro128pp;
        use rand_core::SeedableRng;
        use std::boxed::Box;
        type Plain = agent::Ppo<CartPoleContinuous, 8, 64>;
        type One = agent::PpoCritics<CartPoleContinuous, 8, 64, 1>;
        let config = PpoConfig {
            value_clip: Some(0.2),
            normalize_reward: true,
            ..PpoConfig::DEFAULT
        };
        let mut plain = Box::new(Plain::new(config));
        let mut one = Box::new(One::new(config));
        one.train.params.critic.weights = [1.0];
        let (mut env_p, mut env_o) = (CartPoleContinuous::new(), CartPoleContinuous::new());
        let mut rng_p = Xoshiro128pp::seed_from_u64(7);
        let mut rng_o = Xoshiro128pp::seed_from_u64(7);
        plain.init(&env_p, &mut rng_p).unwrap();
        one.init(&env_o, &mut rng_o).unwrap();
        let mut cursor_p = Cursor::start(&mut env_p, &mut rng_p);
        let mut cursor_o = Cursor::start(&mut env_o, &mut rng_o);
        for _ in 0..6 {
            plain
                .collect(&mut env_p, &mut cursor_p, &mut rng_p, |_| {})
                .unwrap();
            one.collect(&mut env_o, &mut cursor_o, &mut rng_o, |_| {})
                .unwrap();
            let (sp, so) = (
                plain.update(&mut rng_p).unwrap(),
                one.update(&mut rng_o).unwrap(),
            );
            assert_eq!(sp, so);
            assert!(sp.value_loss > 0.0);
        }
        assert_eq!(one.actor(), plain.actor());
        assert_eq!(&one.critic().nets[0], plain.critic());
        assert_eq!(
            one.train.optimizer.m.critic.nets[0],
            plain.train.optimizer.m.critic
        );
        assert_eq!(
            one.train.optimizer.v.critic.nets[0],
            plain.train.optimizer.v.critic
        );
        assert_eq!(one.rollout.advantages, plain.rollout.advantages);
    }

    /// Tensors are the networks' in order; the weights are not tensors.
    #[test]
    fn tensors_are_the_networks_in_order() {
        let c = critics();
        assert_eq!(<Critics<Net, 2> as Params>::TENSORS, 2 * Net::TENSORS);
        assert_eq!(c.tensor(Net::TENSORS), c.nets[1].tensor(0));
        assert_eq!(Critics::<Net, 2>::shape(1), Net::shape(1));
        assert!(c.tensor(2 * Net::TENSORS).is_empty());
        assert_eq!(Critics::<Net, 2>::shape(2 * Net::TENSORS).rows, 0);
    }
}
