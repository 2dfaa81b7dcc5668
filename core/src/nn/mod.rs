//! Fixed-size neural networks with hand-written backpropagation.
//!
//! Design:
//! - **Sizes are types.** [`Dense<I, O, A>`](Dense) has its dimensions as const
//!   generics and [`Chain`] composes layers only when the inner dimensions
//!   agree, so a mismatched network is a compile error, not a run-time panic.
//! - **Three separate memories, all owned by the caller.** The parameters (a
//!   [`Layer`]), the per-sample activation cache ([`Layer::Cache`]) and the
//!   gradient (another value of the same type as the parameters). Inference
//!   with [`Layer::forward`] touches only the parameters, so a deployed policy
//!   carries no gradient, cache or optimiser memory.
//! - **Gradients accumulate.** [`Layer::backward`] *adds* into the gradient, so
//!   a minibatch is a loop of forward/backward calls over samples
//!   ([`accumulate_gradients`]) with one cache the size of a single sample.
//! - **Batched passes.** [`Layer::forward_batch`] and
//!   [`Layer::backward_batch`] run one layer over a chunk of samples
//!   (caller-owned [`Layer::Batch`] storage), reusing each weight across the
//!   chunk, with the same bits as the per-sample passes ([`batch`]).
//! - **Shallow types.** [`Mlp`], [`Mlp1`] and [`Mlp3`] are aliases for chains
//!   of dense layers; a custom architecture is another alias.
//!
//! Every backward pass is checked against central finite differences of an
//! independent `f64` forward pass (the tests at the bottom of each file).

mod activation;
pub mod batch;
mod chain;
mod dense;
pub mod init;

#[cfg(test)]
pub(crate) mod fd;

pub use activation::{Activation, Identity, Relu, Tanh};
pub use batch::{DenseBatch, Zeroed};
pub use chain::Chain;
pub use dense::{Dense, DenseCache};
pub use init::gain;

use nalgebra::SVector;
use rand_core::Rng;

use crate::params::Params;

/// A differentiable layer (or network) with its parameters as `Self`.
pub trait Layer: Params {
    /// Input vector type, `SVector<f32, IN>`.
    type Input: Copy;
    /// Output vector type, `SVector<f32, OUT>`.
    type Output: Copy;
    /// Activations recorded by [`forward_train`](Layer::forward_train) for one sample.
    type Cache;
    /// A zeroed cache, usable in `static` initialisers.
    const ZERO_CACHE: Self::Cache;

    /// Inference: no cache, no gradient memory.
    fn forward(&self, x: &Self::Input) -> Self::Output;

    /// Training forward pass: the same output as [`forward`](Layer::forward),
    /// recording what [`backward`](Layer::backward) needs into `cache`.
    fn forward_train(&self, x: &Self::Input, cache: &mut Self::Cache) -> Self::Output;

    /// Backpropagates `d_output = ∂L/∂y` for the sample recorded in `cache`:
    /// **adds** `∂L/∂θ` into `grad` and returns `∂L/∂x`.
    fn backward(
        &self,
        cache: &Self::Cache,
        d_output: &Self::Output,
        grad: &mut Self,
    ) -> Self::Input;

    /// [`backward`](Layer::backward)'s `∂L/∂x` alone, bit for bit, without
    /// the parameter gradient: for a loss that flows through a network it
    /// does not train (SAC's and TD3's actor loss through the critics). The
    /// default runs `backward` into a zeroed gradient on the stack;
    /// [`Dense`] and [`Chain`] compute no parameter gradient at all.
    fn backward_input(&self, cache: &Self::Cache, d_output: &Self::Output) -> Self::Input {
        let mut grad = Self::ZERO;
        self.backward(cache, d_output, &mut grad)
    }

    /// Activations of up to `BATCH` samples for the batched passes
    /// ([`forward_batch`](Layer::forward_batch),
    /// [`backward_batch`](Layer::backward_batch); see [`batch`]).
    type Batch<const BATCH: usize>: Zeroed;

    /// Where the caller writes sample `k`'s input before
    /// [`forward_batch`](Layer::forward_batch).
    fn batch_inputs<const BATCH: usize>(
        batch: &mut Self::Batch<BATCH>,
    ) -> &mut [Self::Input; BATCH];

    /// Each sample's output after [`forward_batch`](Layer::forward_batch).
    fn batch_outputs<const BATCH: usize>(batch: &Self::Batch<BATCH>) -> &[Self::Output; BATCH];

    /// Where the caller writes sample `k`'s `∂L/∂output` before
    /// [`backward_batch`](Layer::backward_batch).
    fn batch_d_outputs<const BATCH: usize>(
        batch: &mut Self::Batch<BATCH>,
    ) -> &mut [Self::Output; BATCH];

    /// Each sample's output and, for
    /// [`backward_batch`](Layer::backward_batch), its `∂L/∂output`, borrowed
    /// together (a [`Chain`] hands its first member's outputs to the second
    /// as inputs while the second writes its `∂L/∂input` into them).
    fn batch_outputs_and_d_outputs<const BATCH: usize>(
        batch: &mut Self::Batch<BATCH>,
    ) -> (&[Self::Output; BATCH], &mut [Self::Output; BATCH]);

    /// [`forward_train`](Layer::forward_train) for the first `n` samples of
    /// `batch` (`n` is capped at `BATCH`), one layer at a time: the same
    /// outputs, bit for bit.
    fn forward_batch<const BATCH: usize>(&self, batch: &mut Self::Batch<BATCH>, n: usize);

    /// [`forward_batch`](Layer::forward_batch) on `inputs` instead of the
    /// inputs written through [`batch_inputs`](Layer::batch_inputs): a
    /// [`Chain`] passes its first member's outputs to the second this way,
    /// without copying them.
    fn forward_batch_from<const BATCH: usize>(
        &self,
        inputs: &[Self::Input; BATCH],
        batch: &mut Self::Batch<BATCH>,
        n: usize,
    );

    /// [`backward`](Layer::backward) for the first `n` samples after
    /// [`forward_batch`](Layer::forward_batch): **adds** their `∂L/∂θ`
    /// into `grad` in sample order — the same bits as `n` calls of
    /// `backward` — and writes each `∂L/∂x` into `d_inputs` if given.
    /// Overwrites the batch's output gradients.
    fn backward_batch<const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        n: usize,
        grad: &mut Self,
        d_inputs: Option<&mut [Self::Input; BATCH]>,
    );

    /// [`backward_batch`](Layer::backward_batch) after
    /// [`forward_batch_from`](Layer::forward_batch_from) with the same
    /// `inputs`.
    fn backward_batch_from<const BATCH: usize>(
        &self,
        inputs: &[Self::Input; BATCH],
        batch: &mut Self::Batch<BATCH>,
        n: usize,
        grad: &mut Self,
        d_inputs: Option<&mut [Self::Input; BATCH]>,
    );

    /// Forward-mode derivative (Jacobian-vector product) at the sample
    /// recorded in `cache`: the change `dy = (∂y/∂θ)·d_params + (∂y/∂x)·d_input`
    /// of the output when the parameters move along `d_params` and the input
    /// along `d_input`. TRPO's Fisher-vector product `Jᵀ M (J v)` takes `J v`
    /// from here and `Jᵀ(·)` from [`backward`](Layer::backward).
    fn jvp(&self, cache: &Self::Cache, d_params: &Self, d_input: &Self::Input) -> Self::Output;

    /// Orthogonal initialisation with zero biases: `hidden_gain` for every
    /// layer but the last, `output_gain` for the last (see [`gain`]).
    fn init_orthogonal<R: Rng + ?Sized>(&mut self, rng: &mut R, hidden_gain: f32, output_gain: f32);

    /// `f64` forward pass reading the parameters from the flat vector `theta`
    /// (serialisation order): the reference that gradient checks differentiate.
    #[cfg(test)]
    fn reference_forward(theta: &[f64], x: &[f64]) -> std::vec::Vec<f64>;
}

/// A [`Layer`] from `SVector<f32, I>` to `SVector<f32, O>`.
///
/// Shorthand for generic code: `N: Network<OBS, ACT>` instead of spelling out
/// the associated types.
pub trait Network<const I: usize, const O: usize>:
    Layer<Input = SVector<f32, I>, Output = SVector<f32, O>>
{
}

impl<L, const I: usize, const O: usize> Network<I, O> for L where
    L: Layer<Input = SVector<f32, I>, Output = SVector<f32, O>>
{
}

/// Multi-layer perceptron with one hidden layer: `I → H → O`.
pub type Mlp1<const I: usize, const H: usize, const O: usize, A = Tanh> =
    Chain<Dense<I, H, A>, Dense<H, O, Identity>>;

/// Multi-layer perceptron with two hidden layers: `I → H → H → O`
/// (the SB3/CleanRL default architecture, e.g. `Mlp<4, 64, 2>` for CartPole).
pub type Mlp<const I: usize, const H: usize, const O: usize, A = Tanh> =
    Chain<Dense<I, H, A>, Chain<Dense<H, H, A>, Dense<H, O, Identity>>>;

/// Multi-layer perceptron with three hidden layers: `I → H → H → H → O`.
pub type Mlp3<const I: usize, const H: usize, const O: usize, A = Tanh> =
    Chain<Dense<I, H, A>, Chain<Dense<H, H, A>, Chain<Dense<H, H, A>, Dense<H, O, Identity>>>>;

// A network is exactly its parameters — no padding, no hidden fields — on
// every target this crate is compiled for (CI builds it for thumbv7em too).
const _: () = assert!(core::mem::size_of::<Mlp<4, 64, 2>>() == 4 * <Mlp<4, 64, 2> as Params>::LEN);
const _: () = assert!(
    core::mem::size_of::<Mlp3<18, 64, 4, Relu>>() == 4 * <Mlp3<18, 64, 4, Relu> as Params>::LEN
);

/// Accumulates the gradient of a loss summed over a minibatch.
///
/// For each sample `k`, runs the training forward pass on `inputs[k]`, asks
/// `d_loss(k, &output)` for `∂L/∂output`, and backpropagates it into `grad`
/// (which is *not* cleared first). One `cache` serves every sample. Scale
/// `d_loss` by `1/len` for a mean loss.
pub fn accumulate_gradients<L: Layer>(
    net: &L,
    grad: &mut L,
    cache: &mut L::Cache,
    inputs: &[L::Input],
    mut d_loss: impl FnMut(usize, &L::Output) -> L::Output,
) {
    for (k, x) in inputs.iter().enumerate() {
        let y = net.forward_train(x, cache);
        let d_y = d_loss(k, &y);
        net.backward(cache, &d_y, grad);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mlp_parameter_counts() {
        // 4·64 + 64 + 64·64 + 64 + 64·2 + 2
        assert_eq!(Mlp::<4, 64, 2>::LEN, 4610);
        assert_eq!(Mlp::<4, 64, 2>::TENSORS, 6);
        assert_eq!(Mlp1::<4, 8, 2>::LEN, 4 * 8 + 8 + 8 * 2 + 2);
        assert_eq!(
            Mlp3::<3, 5, 1, Relu>::LEN,
            3 * 5 + 5 + 2 * (5 * 5 + 5) + 5 + 1
        );
    }

    #[test]
    fn gradient_mlp1() {
        let mut rng = fd::rng(21);
        let mut net = Mlp1::<3, 7, 2, Relu>::ZERO;
        net.init_orthogonal(&mut rng, gain::HIDDEN, 1.0);
        fd::randomise_biases(&mut net, &mut rng);
        fd::check_layer(&net, &SVector::<f32, 3>::new(0.3, -0.8, 1.1), &mut rng);
    }

    #[test]
    fn gradient_mlp() {
        let mut rng = fd::rng(22);
        let mut net = Mlp::<4, 16, 3>::ZERO;
        net.init_orthogonal(&mut rng, gain::HIDDEN, 1.0);
        fd::randomise_biases(&mut net, &mut rng);
        fd::check_layer(
            &net,
            &SVector::<f32, 4>::new(0.05, -0.3, 0.02, 0.4),
            &mut rng,
        );
    }

    #[test]
    fn gradient_mlp3() {
        let mut rng = fd::rng(23);
        let mut net = Mlp3::<5, 9, 2, Tanh>::ZERO;
        net.init_orthogonal(&mut rng, gain::HIDDEN, 0.5);
        fd::randomise_biases(&mut net, &mut rng);
        let x = SVector::<f32, 5>::new(1.0, -0.5, 0.25, 0.0, -2.0);
        fd::check_layer(&net, &x, &mut rng);
    }

    #[test]
    fn init_uses_sb3_gains() {
        let mut net = Mlp::<4, 64, 2>::ZERO;
        net.init_orthogonal(&mut fd::rng(7), gain::HIDDEN, gain::POLICY);
        // Wide head: rows orthogonal with norm = gain.
        let head = &net.second.second.weight;
        for r in 0..2 {
            assert!((head.row(r).norm() - gain::POLICY).abs() < 1e-6);
        }
        // Tall first layer: columns with norm √2.
        for c in 0..4 {
            assert!((net.first.weight.column(c).norm() - gain::HIDDEN).abs() < 1e-5);
        }
        assert_eq!(net.first.bias.norm(), 0.0);
    }

    #[test]
    fn batch_accumulation_sums_per_sample_gradients() {
        let mut rng = fd::rng(8);
        let mut net = Mlp1::<2, 4, 1>::ZERO;
        net.init_orthogonal(&mut rng, gain::HIDDEN, 1.0);
        let inputs = [
            SVector::<f32, 2>::new(0.1, 0.2),
            SVector::<f32, 2>::new(-1.0, 0.5),
        ];
        let mut cache = Mlp1::<2, 4, 1>::ZERO_CACHE;
        let mut batch = Mlp1::<2, 4, 1>::ZERO;
        accumulate_gradients(&net, &mut batch, &mut cache, &inputs, |_, _| {
            SVector::<f32, 1>::new(1.0)
        });
        let mut separate = Mlp1::<2, 4, 1>::ZERO;
        for x in &inputs {
            net.forward_train(x, &mut cache);
            net.backward(&cache, &SVector::<f32, 1>::new(1.0), &mut separate);
        }
        assert_eq!(batch, separate);
    }

    #[test]
    fn forward_and_forward_train_agree() {
        let mut rng = fd::rng(9);
        let mut net = Mlp::<4, 8, 2>::ZERO;
        net.init_orthogonal(&mut rng, gain::HIDDEN, 1.0);
        let x = SVector::<f32, 4>::new(0.1, -0.2, 0.3, -0.4);
        let mut cache = Mlp::<4, 8, 2>::ZERO_CACHE;
        assert_eq!(net.forward(&x), net.forward_train(&x, &mut cache));
    }
}
