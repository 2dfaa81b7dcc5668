//! Fully connected layer `y = f(W x + b)` with a fused activation.
//!
//! The weight matrix `W` is `O × I` and column-major (nalgebra's layout), so
//! column `j` — the weights leaving input `j` — is contiguous. Both the forward
//! pass (`z += W[:, j] · x_j`) and the weight gradient (`∂W[:, j] += δ · x_j`)
//! are then `axpy`s over contiguous memory, which the compiler vectorises
//! without reordering any floating-point sum: results stay bit-identical across
//! targets. The input gradient `∂x_j = W[:, j] · δ` is a dot product per column.
//! The forward pass keeps a block of rows' running sums `z_i` in registers
//! while it walks all the columns (`forward_into`): its operations and their
//! order are those of the column-by-column `axpy`, without a load and store
//! of `z` per column.
//!
//! The cache keeps the input `x` and the activated output `y`; the activation's
//! derivative is recovered from `y` (see [`Activation`]).

use core::marker::PhantomData;

use nalgebra::{SMatrix, SVector};
use rand_core::Rng;

#[cfg(not(target_arch = "arm"))]
use super::batch;
use super::batch::DenseBatch;
use super::{Activation, Identity, Layer};
use crate::params::{Params, TensorShape, tag};

/// A dense layer from `I` inputs to `O` outputs with activation `A`.
#[derive(Clone, Debug, PartialEq)]
pub struct Dense<const I: usize, const O: usize, A = Identity> {
    /// `W`, `O × I`: `weight[(i, j)]` connects input `j` to output `i`.
    pub weight: SMatrix<f32, O, I>,
    /// `b`, length `O`.
    pub bias: SVector<f32, O>,
    activation: PhantomData<A>,
}

/// What [`Dense::forward_train`] records for the backward pass.
#[derive(Clone, Debug, PartialEq)]
pub struct DenseCache<const I: usize, const O: usize> {
    /// The layer's input `x`.
    pub input: SVector<f32, I>,
    /// The activated output `y = f(W x + b)`.
    pub output: SVector<f32, O>,
}

impl<const I: usize, const O: usize> DenseCache<I, O> {
    /// An all-zero cache.
    pub const ZERO: Self = Self {
        input: <SVector<f32, I> as Params>::ZERO,
        output: <SVector<f32, O> as Params>::ZERO,
    };
}

impl<const I: usize, const O: usize, A: Activation> Dense<I, O, A> {
    /// A layer with the given weight and bias.
    pub const fn from_parts(weight: SMatrix<f32, O, I>, bias: SVector<f32, O>) -> Self {
        Self {
            weight,
            bias,
            activation: PhantomData,
        }
    }

    /// `y = f(W x + b)` for one sample.
    ///
    /// The one forward kernel, shared by inference and training so both
    /// perform the same operations in the same order.
    ///
    /// Every output is `yᵢ = bᵢ`, then `yᵢ = yᵢ + wᵢⱼ·xⱼ` for `j = 0, 1, 2, …`
    /// in order, each product rounded before its addition (Rust never fuses
    /// `a * b + c`). The rows go in blocks of [`FORWARD_ROWS`] whose running
    /// sums stay in registers while the kernel walks *all* the columns: per
    /// weight one load, one multiply and one add, and no partial sum goes
    /// through memory. Which rows share a block never changes a result. The
    /// last `O mod FORWARD_ROWS` rows go in blocks of 4, 2 and 1.
    ///
    /// Never inlined (nor is [`Layer::backward`]): every call site of a layer
    /// — acting, collecting, training, evaluating — would otherwise carry its
    /// own unrolled copy, several KB of flash each on an MCU, for no fewer
    /// instructions (the `bench` counts drop slightly without the copies).
    #[inline(never)]
    fn forward_into(&self, x: &[f32; I], y: &mut [f32; O]) {
        let weight = &self.weight.data.0;
        let bias = &self.bias.data.0[0];
        let mut r = 0;
        while r + FORWARD_ROWS <= O {
            forward_rows::<I, O, FORWARD_ROWS>(weight, bias, x, y, r);
            r += FORWARD_ROWS;
        }
        while r + 4 <= O {
            forward_rows::<I, O, 4>(weight, bias, x, y, r);
            r += 4;
        }
        while r + 2 <= O {
            forward_rows::<I, O, 2>(weight, bias, x, y, r);
            r += 2;
        }
        for r in r..O {
            forward_rows::<I, O, 1>(weight, bias, x, y, r);
        }
        for yi in y.iter_mut() {
            *yi = A::apply(*yi);
        }
    }

    /// The per-sample backward pass: turns `d_output` (`∂L/∂y`) into `δ` in
    /// place, adds `∂L/∂θ` into `grad` and, if asked, writes `∂L/∂x`.
    ///
    /// Shared by [`Layer::backward`] and, on 32-bit ARM, by
    /// [`Layer::backward_batch`] (one sample at a time there: see
    /// `nn::batch`), so a firmware links one copy.
    #[inline(never)]
    fn backward_into(
        &self,
        x: &[f32],
        y: &[f32],
        delta: &mut [f32],
        grad: &mut Self,
        d_input: Option<&mut [f32]>,
    ) {
        // (Slices, not nalgebra's strided iterators: the loops must vectorise.)
        for (d, &yi) in delta.iter_mut().zip(y) {
            *d *= A::derivative_from_output(yi);
        }
        let delta = &*delta;
        // ∂L/∂b += δ
        for (gb, &d) in grad.bias.as_mut_slice().iter_mut().zip(delta) {
            *gb += d;
        }
        // ∂L/∂W[:, j] += δ · xⱼ
        for (grad_column, &xj) in grad.weight.as_mut_slice().chunks_exact_mut(O).zip(x) {
            for (gij, &di) in grad_column.iter_mut().zip(delta) {
                *gij += di * xj;
            }
        }
        // ∂L/∂xⱼ = W[:, j] · δ
        if let Some(d_input) = d_input {
            for (column, dxj) in self.weight.as_slice().chunks_exact(O).zip(d_input) {
                *dxj = dot(column, delta);
            }
        }
    }
}

impl<const I: usize, const O: usize, A: Activation> Params for Dense<I, O, A> {
    const TENSORS: usize = 2;
    const LEN: usize = O * I + O;
    const ZERO: Self = Self::from_parts(
        <SMatrix<f32, O, I> as Params>::ZERO,
        <SVector<f32, O> as Params>::ZERO,
    );

    #[inline]
    fn tensor(&self, i: usize) -> &[f32] {
        match i {
            0 => self.weight.as_slice(),
            1 => self.bias.as_slice(),
            _ => &[],
        }
    }

    #[inline]
    fn tensor_mut(&mut self, i: usize) -> &mut [f32] {
        match i {
            0 => self.weight.as_mut_slice(),
            1 => self.bias.as_mut_slice(),
            _ => &mut [],
        }
    }

    fn shape(i: usize) -> TensorShape {
        let (rows, cols, tag) = match i {
            0 => (O, I, tag::WEIGHT | A::ID),
            1 => (O, 1, tag::BIAS),
            _ => (0, 0, tag::PLAIN),
        };
        TensorShape {
            rows: rows as u32,
            cols: cols as u32,
            tag,
        }
    }
}

impl<const I: usize, const O: usize, A: Activation> Layer for Dense<I, O, A> {
    type Input = SVector<f32, I>;
    type Output = SVector<f32, O>;
    type Cache = DenseCache<I, O>;
    const ZERO_CACHE: Self::Cache = DenseCache::ZERO;

    #[inline]
    fn forward(&self, x: &Self::Input) -> Self::Output {
        let mut y = SVector::<f32, O>::zeros();
        self.forward_into(&x.data.0[0], &mut y.data.0[0]);
        y
    }

    #[inline]
    fn forward_train(&self, x: &Self::Input, cache: &mut Self::Cache) -> Self::Output {
        cache.input = *x;
        self.forward_into(&x.data.0[0], &mut cache.output.data.0[0]);
        cache.output
    }

    #[inline(never)]
    fn backward(
        &self,
        cache: &Self::Cache,
        d_output: &Self::Output,
        grad: &mut Self,
    ) -> Self::Input {
        let mut delta = *d_output;
        let mut d_input = SVector::<f32, I>::zeros();
        self.backward_into(
            cache.input.as_slice(),
            cache.output.as_slice(),
            delta.as_mut_slice(),
            grad,
            Some(d_input.as_mut_slice()),
        );
        d_input
    }

    /// `backward_into`'s `δ` and `∂L/∂x`, the same operations in the same
    /// order, without `∂L/∂θ`.
    #[inline(never)]
    fn backward_input(&self, cache: &Self::Cache, d_output: &Self::Output) -> Self::Input {
        let mut delta = *d_output;
        for (d, &yi) in delta.as_mut_slice().iter_mut().zip(cache.output.as_slice()) {
            *d *= A::derivative_from_output(yi);
        }
        let mut d_input = SVector::<f32, I>::zeros();
        let columns = self.weight.as_slice().chunks_exact(O);
        for (column, dxj) in columns.zip(d_input.as_mut_slice()) {
            *dxj = dot(column, delta.as_slice());
        }
        d_input
    }

    type Batch<const BATCH: usize> = DenseBatch<I, O, BATCH>;

    #[inline]
    fn batch_inputs<const BATCH: usize>(
        batch: &mut Self::Batch<BATCH>,
    ) -> &mut [Self::Input; BATCH] {
        &mut batch.input
    }

    #[inline]
    fn batch_outputs<const BATCH: usize>(batch: &Self::Batch<BATCH>) -> &[Self::Output; BATCH] {
        &batch.output
    }

    #[inline]
    fn batch_d_outputs<const BATCH: usize>(
        batch: &mut Self::Batch<BATCH>,
    ) -> &mut [Self::Output; BATCH] {
        &mut batch.d_output
    }

    #[inline]
    fn batch_outputs_and_d_outputs<const BATCH: usize>(
        batch: &mut Self::Batch<BATCH>,
    ) -> (&[Self::Output; BATCH], &mut [Self::Output; BATCH]) {
        (&batch.output, &mut batch.d_output)
    }

    #[inline]
    fn forward_batch<const BATCH: usize>(&self, batch: &mut Self::Batch<BATCH>, n: usize) {
        self.forward_batch_with(None, batch, n);
    }

    #[inline]
    fn forward_batch_from<const BATCH: usize>(
        &self,
        inputs: &[Self::Input; BATCH],
        batch: &mut Self::Batch<BATCH>,
        n: usize,
    ) {
        self.forward_batch_with(Some(inputs), batch, n);
    }

    #[inline]
    fn backward_batch<const BATCH: usize>(
        &self,
        batch: &mut Self::Batch<BATCH>,
        n: usize,
        grad: &mut Self,
        d_inputs: Option<&mut [Self::Input; BATCH]>,
    ) {
        self.backward_batch_with(None, batch, n, grad, d_inputs);
    }

    #[inline]
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

    /// `dy = f′(z) ⊙ (db + dW·x + W·dx)`, the columns walked in order like
    /// the forward pass (`dzᵢ += dwᵢⱼ·xⱼ`, then `dzᵢ += wᵢⱼ·dxⱼ`, for
    /// `j = 0, 1, …`).
    #[inline(never)]
    fn jvp(&self, cache: &Self::Cache, d_params: &Self, d_input: &Self::Input) -> Self::Output {
        let mut dz = d_params.bias;
        let columns = self.weight.as_slice().chunks_exact(O);
        let d_columns = d_params.weight.as_slice().chunks_exact(O);
        for (((column, d_column), &xj), &dxj) in columns
            .zip(d_columns)
            .zip(cache.input.as_slice())
            .zip(d_input.as_slice())
        {
            for ((dzi, &dwij), &wij) in dz.as_mut_slice().iter_mut().zip(d_column).zip(column) {
                *dzi += dwij * xj;
                *dzi += wij * dxj;
            }
        }
        for (dzi, &yi) in dz.as_mut_slice().iter_mut().zip(cache.output.as_slice()) {
            *dzi *= A::derivative_from_output(yi);
        }
        dz
    }

    fn init_orthogonal<R: Rng + ?Sized>(
        &mut self,
        rng: &mut R,
        _hidden_gain: f32,
        output_gain: f32,
    ) {
        super::init::orthogonal(&mut self.weight, output_gain, rng);
        self.bias.fill(0.0);
    }

    #[cfg(test)]
    fn reference_forward(theta: &[f64], x: &[f64]) -> std::vec::Vec<f64> {
        let (weight, bias) = theta.split_at(O * I);
        (0..O)
            .map(|i| {
                let z = bias[i] + (0..I).map(|j| weight[j * O + i] * x[j]).sum::<f64>();
                A::reference(z)
            })
            .collect()
    }
}

impl<const I: usize, const O: usize, A: Activation> Dense<I, O, A> {
    /// The batched forward pass on `inputs`, or on the batch's own inputs
    /// when `None`.
    #[inline]
    fn forward_batch_with<const BATCH: usize>(
        &self,
        inputs: Option<&[SVector<f32, I>; BATCH]>,
        batch: &mut DenseBatch<I, O, BATCH>,
        n: usize,
    ) {
        // On a Cortex-M one sample at a time through the inference kernel
        // (see `nn::batch`): the same bits, no second copy of the code.
        #[cfg(target_arch = "arm")]
        {
            let inputs = inputs.unwrap_or(&batch.input);
            for (x, y) in inputs.iter().zip(batch.output.iter_mut()).take(n) {
                self.forward_into(&x.data.0[0], &mut y.data.0[0]);
            }
        }
        #[cfg(not(target_arch = "arm"))]
        batch::dense_forward::<A, I, O, BATCH>(
            &self.weight.data.0,
            &self.bias.data.0[0],
            inputs,
            batch,
            n,
        );
    }

    /// The batched backward pass on `inputs` (those of the forward pass),
    /// or on the batch's own inputs when `None`.
    #[inline]
    fn backward_batch_with<const BATCH: usize>(
        &self,
        inputs: Option<&[SVector<f32, I>; BATCH]>,
        batch: &mut DenseBatch<I, O, BATCH>,
        n: usize,
        grad: &mut Self,
        d_inputs: Option<&mut [SVector<f32, I>; BATCH]>,
    ) {
        #[cfg(target_arch = "arm")]
        {
            let inputs = inputs.unwrap_or(&batch.input);
            let samples = inputs.iter().zip(&batch.output);
            let deltas = batch.d_output.iter_mut();
            match d_inputs {
                Some(d_inputs) => {
                    for (((x, y), delta), dx) in
                        samples.zip(deltas).zip(d_inputs.iter_mut()).take(n)
                    {
                        let dx = Some(dx.as_mut_slice());
                        self.backward_into(
                            x.as_slice(),
                            y.as_slice(),
                            delta.as_mut_slice(),
                            grad,
                            dx,
                        );
                    }
                }
                None => {
                    for ((x, y), delta) in samples.zip(deltas).take(n) {
                        self.backward_into(
                            x.as_slice(),
                            y.as_slice(),
                            delta.as_mut_slice(),
                            grad,
                            None,
                        );
                    }
                }
            }
        }
        #[cfg(not(target_arch = "arm"))]
        batch::dense_backward::<A, I, O, BATCH>(
            &self.weight.data.0,
            grad.weight.as_mut_slice(),
            grad.bias.as_mut_slice(),
            inputs,
            batch,
            n,
            d_inputs,
        );
    }
}

/// Rows of `W` whose running sums [`Dense`]'s per-sample forward pass keeps
/// in registers: 8 of the Cortex-M4F's 32 single-precision registers; on a
/// desktop eight SIMD registers' worth (of 8 floats with AVX, of 4
/// otherwise), enough independent additions to hide their latency.
#[cfg(target_arch = "arm")]
pub(super) const FORWARD_ROWS: usize = 8;
#[cfg(all(not(target_arch = "arm"), target_feature = "avx"))]
pub(super) const FORWARD_ROWS: usize = 64;
#[cfg(all(not(target_arch = "arm"), not(target_feature = "avx")))]
pub(super) const FORWARD_ROWS: usize = 32;

/// Rows `r..r + R` of `z = W x + b`, the `R` running sums in registers:
/// `zᵢ = bᵢ`, then `zᵢ + wᵢⱼ·xⱼ` for `j = 0, 1, …` (see `forward_into`).
#[inline(always)]
fn forward_rows<const I: usize, const O: usize, const R: usize>(
    weight: &[[f32; O]; I],
    bias: &[f32; O],
    x: &[f32; I],
    y: &mut [f32; O],
    r: usize,
) {
    let (Some(bias), Some(_)) = (bias.get(r..r + R), y.get(r..r + R)) else {
        return;
    };
    let mut z = [0.0f32; R];
    z.copy_from_slice(bias);
    for (column, &xj) in weight.iter().zip(x) {
        let Some(w) = column.get(r..r + R) else {
            return;
        };
        for (zi, &wij) in z.iter_mut().zip(w) {
            *zi += wij * xj;
        }
    }
    y[r..r + R].copy_from_slice(&z);
}

/// Number of independent partial sums in [`dot`].
pub(super) const LANES: usize = 8;

/// `Σᵢ aᵢ bᵢ` with [`LANES`] partial sums (element `i` goes to sum `i mod LANES`),
/// combined pairwise in a fixed order.
///
/// A single running sum is a chain of dependent additions the compiler may not
/// reorder; independent lanes let it use SIMD and pipelined FPUs while the
/// summation order — hence the result — stays the same on every target.
#[inline]
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let mut chunks_a = a.chunks_exact(LANES);
    let mut chunks_b = b.chunks_exact(LANES);
    for (ca, cb) in (&mut chunks_a).zip(&mut chunks_b) {
        for l in 0..LANES {
            acc[l] += ca[l] * cb[l];
        }
    }
    for (l, (&x, &y)) in chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .enumerate()
    {
        acc[l] += x * y;
    }
    combine(&acc)
}

/// [`dot`]'s fixed combination of its [`LANES`] partial sums:
/// `((s₀ + s₄) + (s₂ + s₆)) + ((s₁ + s₅) + (s₃ + s₇))`.
#[inline(always)]
pub(super) fn combine(acc: &[f32; LANES]) -> f32 {
    ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::fd;
    use crate::nn::{Relu, Tanh};

    fn check_layer<A: Activation>() {
        let mut rng = fd::rng(11 + A::ID as u64);
        let mut layer = Dense::<5, 3, A>::ZERO;
        fd::randomise(&mut layer, &mut rng, 0.6);
        let x = SVector::<f32, 5>::from_fn(|i, _| 0.7 * (i as f32) - 1.3);
        fd::check_layer(&layer, &x, &mut rng);
    }

    #[test]
    fn tensor_shapes_are_weight_then_bias() {
        use crate::nn::{Relu, Tanh};
        let w = <Dense<3, 5, Tanh> as Params>::shape(0);
        assert_eq!((w.rows, w.cols), (5, 3));
        assert_eq!(w.tag & 0xff00, tag::WEIGHT);
        assert_ne!(w.tag, <Dense<3, 5, Relu> as Params>::shape(0).tag);
        let b = <Dense<3, 5, Tanh> as Params>::shape(1);
        assert_eq!((b.rows, b.cols, b.tag), (5, 1, tag::BIAS));
        let none = <Dense<3, 5, Tanh> as Params>::shape(2);
        assert_eq!((none.rows, none.cols, none.tag), (0, 0, tag::PLAIN));
    }

    #[test]
    fn gradient_identity() {
        check_layer::<Identity>();
    }

    #[test]
    fn gradient_tanh() {
        check_layer::<Tanh>();
    }

    #[test]
    fn gradient_relu() {
        check_layer::<Relu>();
    }

    #[test]
    fn forward_matches_matrix_product() {
        let mut rng = fd::rng(5);
        let mut layer = Dense::<4, 6, Identity>::ZERO;
        fd::randomise(&mut layer, &mut rng, 1.0);
        let x = SVector::<f32, 4>::new(0.5, -1.0, 2.0, 0.25);
        let expected = layer.weight * x + layer.bias;
        assert!((layer.forward(&x) - expected).amax() < 1e-6);
    }

    /// The four-column kernel performs the one-column `axpy`'s operations in
    /// the same order: bit-identical outputs, for every `I mod 4`.
    fn check_forward_bits<const I: usize, const O: usize>(seed: u64) {
        let mut rng = fd::rng(seed);
        let mut layer = Dense::<I, O, Identity>::ZERO;
        fd::randomise(&mut layer, &mut rng, 1.0);
        let x = SVector::<f32, I>::from_fn(|i, _| 0.37 * (i as f32) - 1.1);
        let mut expected = layer.bias;
        for j in 0..I {
            for i in 0..O {
                expected[i] += layer.weight[(i, j)] * x[j];
            }
        }
        let y = layer.forward(&x);
        for i in 0..O {
            assert_eq!(
                y[i].to_bits(),
                expected[i].to_bits(),
                "I = {I}, O = {O}, i = {i}"
            );
        }
    }

    #[test]
    fn forward_is_bit_identical_to_column_axpy() {
        check_forward_bits::<1, 3>(1);
        check_forward_bits::<2, 5>(2);
        check_forward_bits::<3, 1>(3);
        check_forward_bits::<4, 7>(4);
        check_forward_bits::<5, 2>(5);
        check_forward_bits::<8, 9>(6);
        check_forward_bits::<11, 4>(7);
        check_forward_bits::<18, 64>(8);
        check_forward_bits::<64, 64>(9);
    }

    #[test]
    fn backward_accumulates() {
        let mut rng = fd::rng(6);
        let mut layer = Dense::<3, 2, Tanh>::ZERO;
        fd::randomise(&mut layer, &mut rng, 1.0);
        let x = SVector::<f32, 3>::new(0.1, 0.2, -0.3);
        let mut cache = Dense::<3, 2, Tanh>::ZERO_CACHE;
        layer.forward_train(&x, &mut cache);
        let d_out = SVector::<f32, 2>::new(1.0, -2.0);
        let mut once = Dense::<3, 2, Tanh>::ZERO;
        layer.backward(&cache, &d_out, &mut once);
        let mut twice = Dense::<3, 2, Tanh>::ZERO;
        layer.backward(&cache, &d_out, &mut twice);
        layer.backward(&cache, &d_out, &mut twice);
        once.scale(2.0);
        assert_eq!(once, twice);
    }

    /// `backward_input` is `backward`'s `∂L/∂x` bit for bit (through a
    /// chain of ReLU or tanh layers and the identity output), without
    /// touching a parameter gradient.
    fn check_backward_input<A: crate::nn::Activation>(seed: u64) {
        type Net<A> = crate::nn::Mlp<5, 24, 1, A>;
        let mut rng = fd::rng(seed);
        let mut net = Net::<A>::ZERO;
        fd::randomise(&mut net, &mut rng, 1.0);
        let mut cache = Net::<A>::ZERO_CACHE;
        for k in 0..20 {
            let x = SVector::<f32, 5>::from_fn(|i, _| 0.31 * (i as f32) - 0.7 + 0.13 * k as f32);
            net.forward_train(&x, &mut cache);
            let d_out = SVector::<f32, 1>::new(-1.0 / (k as f32 + 3.0));
            let mut grad = Net::<A>::ZERO;
            let expected = net.backward(&cache, &d_out, &mut grad);
            let d_x = net.backward_input(&cache, &d_out);
            for i in 0..5 {
                assert_eq!(d_x[i].to_bits(), expected[i].to_bits(), "sample {k}, x{i}");
            }
        }
    }

    #[test]
    fn backward_input_is_backwards_input_gradient_bit_for_bit() {
        check_backward_input::<crate::nn::Relu>(11);
        check_backward_input::<Tanh>(12);
    }

    #[test]
    fn lane_dot_product_is_exact_on_integers() {
        for n in [0usize, 1, 7, 8, 9, 64, 67] {
            let a: std::vec::Vec<f32> = (0..n).map(|i| i as f32).collect();
            let b: std::vec::Vec<f32> = (0..n).map(|i| (i % 5) as f32 - 2.0).collect();
            let expected: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert_eq!(dot(&a, &b), expected, "n = {n}");
        }
    }

    #[test]
    fn shapes_carry_activation() {
        assert_eq!(
            Dense::<3, 2, Tanh>::shape(0),
            TensorShape {
                rows: 2,
                cols: 3,
                tag: tag::WEIGHT | 1
            }
        );
        assert_ne!(Dense::<3, 2, Tanh>::shape(0), Dense::<3, 2, Relu>::shape(0));
        assert_eq!(Dense::<3, 2, Tanh>::LEN, 8);
    }
}
