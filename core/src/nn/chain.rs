//! Sequential composition of two layers.
//!
//! `Chain<A, B>` feeds `A`'s output into `B`; it only type-checks when
//! `B::Input == A::Output`:
//!
//! ```
//! use microrl::nn::{Chain, Dense, Layer, Tanh};
//! use microrl::{Params, SVector};
//! let net = Chain::<Dense<4, 8, Tanh>, Dense<8, 2>>::ZERO;
//! assert_eq!(net.forward(&SVector::<f32, 4>::zeros()), SVector::<f32, 2>::zeros());
//! ```
//!
//! so a dimension mismatch is a compile error:
//!
//! ```compile_fail
//! use microrl::nn::{Chain, Dense, Layer, Tanh};
//! use microrl::{Params, SVector};
//! // 4 → 8 followed by 16 → 2: the inner dimensions disagree.
//! let net = Chain::<Dense<4, 8, Tanh>, Dense<16, 2>>::ZERO;
//! let _ = net.forward(&SVector::<f32, 4>::zeros());
//! ```
//!
//! Deeper networks nest chains (see the [`Mlp`](super::Mlp) aliases). The
//! training cache is the pair of the members' caches and the gradient is
//! another `Chain`, so backpropagation is the chain rule written once.

use rand_core::Rng;

use super::Layer;
use crate::impl_params;
use crate::params::Params;

/// `second ∘ first`.
#[derive(Clone, Debug, PartialEq)]
pub struct Chain<A, B> {
    /// The layer applied first.
    pub first: A,
    /// The layer applied to `first`'s output.
    pub second: B,
}

impl_params!(impl[A: Params, B: Params] Chain<A, B> { first: A, second: B });

impl<A, B> Layer for Chain<A, B>
where
    A: Layer,
    B: Layer<Input = A::Output>,
{
    type Input = A::Input;
    type Output = B::Output;
    type Cache = (A::Cache, B::Cache);
    const ZERO_CACHE: Self::Cache = (A::ZERO_CACHE, B::ZERO_CACHE);

    #[inline]
    fn forward(&self, x: &Self::Input) -> Self::Output {
        self.second.forward(&self.first.forward(x))
    }

    #[inline]
    fn forward_train(&self, x: &Self::Input, cache: &mut Self::Cache) -> Self::Output {
        let hidden = self.first.forward_train(x, &mut cache.0);
        self.second.forward_train(&hidden, &mut cache.1)
    }

    fn backward(
        &self,
        cache: &Self::Cache,
        d_output: &Self::Output,
        grad: &mut Self,
    ) -> Self::Input {
        let d_hidden = self.second.backward(&cache.1, d_output, &mut grad.second);
        self.first.backward(&cache.0, &d_hidden, &mut grad.first)
    }

    fn backward_input(&self, cache: &Self::Cache, d_output: &Self::Output) -> Self::Input {
        let d_hidden = self.second.backward_input(&cache.1, d_output);
        self.first.backward_input(&cache.0, &d_hidden)
    }

    type Batch<const BATCH: usize> = (A::Batch<BATCH>, B::Batch<BATCH>);

    #[inline]
    fn batch_inputs<const BATCH: usize>(
        batch: &mut Self::Batch<BATCH>,
    ) -> &mut [Self::Input; BATCH] {
        A::batch_inputs(&mut batch.0)
    }

    #[inline]
    fn batch_outputs<const BATCH: usize>(batch: &Self::Batch<BATCH>) -> &[Self::Output; BATCH] {
        B::batch_outputs(&batch.1)
    }

    #[inline]
    fn batch_d_outputs<const BATCH: usize>(
        batch: &mut Self::Batch<BATCH>,
    ) -> &mut [Self::Output; BATCH] {
        B::batch_d_outputs(&mut batch.1)
    }

    #[inline]
    fn batch_outputs_and_d_outputs<const BATCH: usize>(
        batch: &mut Self::Batch<BATCH>,
    ) -> (&[Self::Output; BATCH], &mut [Self::Output; BATCH]) {
        B::batch_outputs_and_d_outputs(&mut batch.1)
    }

    fn forward_batch<const BATCH: usize>(&self, batch: &mut Self::Batch<BATCH>, n: usize) {
        self.forward_batch_with(None, batch, n);
    }

    fn forward_batch_from<const BATCH: usize>(
        &self,
        inputs: &[Self::Input; BATCH],
        batch: &mut Self::Batch<BATCH>,
        n: usize,
    ) {
        self.forward_batch_with(Some(inputs), batch, n);
    }

    fn backward_batch<const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        n: usize,
        grad: &mut Self,
        d_inputs: Option<&mut [Self::Input; BATCH]>,
    ) {
        self.backward_batch_with(None, batch, n, grad, d_inputs);
    }

    fn backward_batch_from<const BATCH: usize>(
        &self,
        inputs: &[Self::Input; BATCH],
        batch: &mut Self::Batch<BATCH>,
        n: usize,
        grad: &mut Self,
        d_inputs: Option<&mut [Self::Input; BATCH]>,
    ) {
        self.backward_batch_with(Some(inputs), batch, n, grad, d_inputs);
    }

    fn jvp(&self, cache: &Self::Cache, d_params: &Self, d_input: &Self::Input) -> Self::Output {
        let d_hidden = self.first.jvp(&cache.0, &d_params.first, d_input);
        self.second.jvp(&cache.1, &d_params.second, &d_hidden)
    }

    fn init_orthogonal<R: Rng + ?Sized>(
        &mut self,
        rng: &mut R,
        hidden_gain: f32,
        output_gain: f32,
    ) {
        self.first.init_orthogonal(rng, hidden_gain, hidden_gain);
        self.second.init_orthogonal(rng, hidden_gain, output_gain);
    }

    #[cfg(test)]
    fn reference_forward(theta: &[f64], x: &[f64]) -> std::vec::Vec<f64> {
        let (theta_a, theta_b) = theta.split_at(A::LEN);
        B::reference_forward(theta_b, &A::reference_forward(theta_a, x))
    }
}

/// The batched passes: the second member reads the first's outputs in place
/// ([`Layer::forward_batch_from`]) and writes its input gradients straight
/// into the first's output gradients, so nothing is copied between them.
impl<A, B> Chain<A, B>
where
    A: Layer,
    B: Layer<Input = A::Output>,
{
    /// `forward_batch` on `inputs`, or on the first member's own inputs
    /// when `None`.
    fn forward_batch_with<const BATCH: usize>(
        &self,
        inputs: Option<&[A::Input; BATCH]>,
        batch: &mut (A::Batch<BATCH>, B::Batch<BATCH>),
        n: usize,
    ) {
        let n = n.min(BATCH);
        match inputs {
            Some(inputs) => self.first.forward_batch_from(inputs, &mut batch.0, n),
            None => self.first.forward_batch(&mut batch.0, n),
        }
        let hidden = A::batch_outputs(&batch.0);
        self.second.forward_batch_from(hidden, &mut batch.1, n);
    }

    /// `backward_batch` after [`forward_batch_with`](Self::forward_batch_with)
    /// with the same `inputs`.
    fn backward_batch_with<const BATCH: usize>(
        &self,
        inputs: Option<&[A::Input; BATCH]>,
        batch: &mut (A::Batch<BATCH>, B::Batch<BATCH>),
        n: usize,
        grad: &mut Self,
        d_inputs: Option<&mut [A::Input; BATCH]>,
    ) {
        let (hidden, d_hidden) = A::batch_outputs_and_d_outputs(&mut batch.0);
        self.second
            .backward_batch_from(hidden, &mut batch.1, n, &mut grad.second, Some(d_hidden));
        let (first, grad) = (&self.first, &mut grad.first);
        match inputs {
            Some(inputs) => first.backward_batch_from(inputs, &mut batch.0, n, grad, d_inputs),
            None => first.backward_batch(&mut batch.0, n, grad, d_inputs),
        }
    }
}
