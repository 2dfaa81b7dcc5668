//! Batched training passes: one layer at a time over a chunk of samples.
//!
//! The per-sample passes ([`Layer::forward_train`](super::Layer::forward_train), [`Layer::backward`](super::Layer::backward)) walk
//! the whole network for one sample, so every weight and every gradient entry
//! is loaded (and each gradient entry stored) once per sample. The batched
//! passes walk one layer over up to `BATCH` samples before moving on:
//! - the forward pass keeps a block of 4 columns × 8 rows of `W` in registers
//!   while it updates those rows of every sample's pre-activation;
//! - the backward pass keeps 8 entries of a column of `∂L/∂W` in registers
//!   while it adds every sample's `δᵢ·xⱼ` to them, and computes the input
//!   gradients of 4 samples per sweep over a column of `W`.
//!
//! **Same bits as the per-sample passes.** Batching changes which loop is
//! outermost, never the operations on any one number nor their order: each
//! `zᵢ` of sample `k` is `bᵢ`, then `+ wᵢⱼ·xⱼ` for `j = 0, 1, …` grouped as
//! in [`Layer::forward`](super::Layer::forward); each gradient entry receives its samples' terms in
//! sample order, `((g + δ₀x₀) + δ₁x₁) + …`, exactly as a loop of
//! [`Layer::backward`](super::Layer::backward) calls adds them; each input gradient is the same
//! 8-lane dot product. So a batched update equals the per-sample one bit for
//! bit, whatever `BATCH` is — the batch size is a speed/RAM trade-off only
//! (a microcontroller may pick 4, a desktop 64), and the firmware's
//! bit-identity with the desktop holds (the tests at the bottom compare both
//! paths bitwise for several batch sizes).
//!
//! **On a Cortex-M** (32-bit ARM) the batched passes run the per-sample
//! kernels one sample at a time: its FPU has 32 single-precision registers
//! and no SIMD, so the register blocks above would spill, and one copy of
//! the kernels keeps the firmware small. (A chunk of 1 is its default.)
//!
//! **Storage.** A layer's [`Layer::Batch`](super::Layer::Batch) holds, for each of `BATCH`
//! samples, its input, its activated output and the gradient with respect to
//! that output (overwritten in place by `δ = ∂L/∂y ⊙ f′`): `(I + 2·O)·BATCH`
//! floats for a [`Dense<I, O>`](super::Dense). A [`Chain`](super::Chain)
//! stores the pair of its members' batches. The caller owns it (it is
//! [`Zeroed`], so it can live in a `static`).

use nalgebra::SVector;

#[cfg(not(target_arch = "arm"))]
use super::Activation;
use crate::params::Params;

/// A value with an all-zero constant, for `static` initialisers of batch
/// storage.
pub trait Zeroed {
    /// The all-zero value.
    const ZERO: Self;
}

impl<X: Zeroed, Y: Zeroed> Zeroed for (X, Y) {
    const ZERO: Self = (X::ZERO, Y::ZERO);
}

impl<T: Zeroed, const K: usize> Zeroed for [T; K] {
    const ZERO: Self = [T::ZERO; K];
}

/// What the batched passes of a [`Dense<I, O>`](super::Dense) layer keep for
/// up to `BATCH` samples.
#[derive(Clone, Debug, PartialEq)]
pub struct DenseBatch<const I: usize, const O: usize, const BATCH: usize> {
    /// Each sample's input `x`.
    pub input: [SVector<f32, I>; BATCH],
    /// Each sample's activated output `y = f(W x + b)`.
    pub output: [SVector<f32, O>; BATCH],
    /// Each sample's `∂L/∂y`, set before the backward pass, which turns it
    /// into `δ = ∂L/∂y ⊙ f′(z)` in place.
    pub d_output: [SVector<f32, O>; BATCH],
}

impl<const I: usize, const O: usize, const BATCH: usize> Zeroed for DenseBatch<I, O, BATCH> {
    const ZERO: Self = Self {
        input: [<SVector<f32, I> as Params>::ZERO; BATCH],
        output: [<SVector<f32, O> as Params>::ZERO; BATCH],
        d_output: [<SVector<f32, O> as Params>::ZERO; BATCH],
    };
}

/// Rows of `W` (and of `∂L/∂W`) the batched kernels hold in registers per
/// column (two 4-float SIMD registers). Which rows go together never changes
/// a result (see the module docs).
#[cfg(not(target_arch = "arm"))]
const ROWS: usize = 8;

#[cfg(not(target_arch = "arm"))]
/// Batched forward pass of a dense layer over the first `n` samples of
/// `batch`: `output[k] = f(W·input[k] + b)`, the operations of
/// `Dense::forward_into` on every number (see the module docs).
#[inline(never)]
pub(super) fn dense_forward<A: Activation, const I: usize, const O: usize, const BATCH: usize>(
    weight: &[f32],
    bias: &[f32],
    batch: &mut DenseBatch<I, O, BATCH>,
    n: usize,
) {
    let inputs = &batch.input[..n.min(BATCH)];
    let outputs = &mut batch.output[..n.min(BATCH)];
    for y in outputs.iter_mut() {
        y.as_mut_slice().copy_from_slice(bias);
    }
    // Four columns per sweep, as `forward_into`: zᵢ = (((zᵢ + wᵢ₀x₀) + wᵢ₁x₁) + wᵢ₂x₂) + wᵢ₃x₃.
    let mut blocks = weight.chunks_exact(4 * O);
    let mut j = 0;
    for block in &mut blocks {
        let (c0, rest) = block.split_at(O);
        let (c1, rest) = rest.split_at(O);
        let (c2, c3) = rest.split_at(O);
        let mut r = 0;
        while r + ROWS <= O {
            let w0: [f32; ROWS] = core::array::from_fn(|l| c0[r + l]);
            let w1: [f32; ROWS] = core::array::from_fn(|l| c1[r + l]);
            let w2: [f32; ROWS] = core::array::from_fn(|l| c2[r + l]);
            let w3: [f32; ROWS] = core::array::from_fn(|l| c3[r + l]);
            for (x, y) in inputs.iter().zip(outputs.iter_mut()) {
                let (x0, x1, x2, x3) = (x[j], x[j + 1], x[j + 2], x[j + 3]);
                let y = &mut y.as_mut_slice()[r..r + ROWS];
                for l in 0..ROWS {
                    y[l] = (((y[l] + w0[l] * x0) + w1[l] * x1) + w2[l] * x2) + w3[l] * x3;
                }
            }
            r += ROWS;
        }
        for (x, y) in inputs.iter().zip(outputs.iter_mut()) {
            let (x0, x1, x2, x3) = (x[j], x[j + 1], x[j + 2], x[j + 3]);
            for i in r..O {
                y[i] = (((y[i] + c0[i] * x0) + c1[i] * x1) + c2[i] * x2) + c3[i] * x3;
            }
        }
        j += 4;
    }
    // The last `I mod 4` columns one at a time.
    for column in blocks.remainder().chunks_exact(O) {
        for (x, y) in inputs.iter().zip(outputs.iter_mut()) {
            let xj = x[j];
            for (yi, &wij) in y.as_mut_slice().iter_mut().zip(column) {
                *yi += wij * xj;
            }
        }
        j += 1;
    }
    for y in outputs.iter_mut() {
        for yi in y.as_mut_slice() {
            *yi = A::apply(*yi);
        }
    }
}

#[cfg(not(target_arch = "arm"))]
/// Batched backward pass of a dense layer over the first `n` samples:
/// turns `batch.d_output` into `δ`, **adds** `Σₖ ∂L/∂θ` into the gradient
/// (`grad_weight`, `grad_bias`), sample by sample in order, and writes each
/// sample's `∂L/∂x` into `d_input` when asked for.
#[inline(never)]
pub(super) fn dense_backward<A: Activation, const I: usize, const O: usize, const BATCH: usize>(
    weight: &[f32],
    grad_weight: &mut [f32],
    grad_bias: &mut [f32],
    batch: &mut DenseBatch<I, O, BATCH>,
    n: usize,
    d_input: Option<&mut [SVector<f32, I>; BATCH]>,
) {
    let n = n.min(BATCH);
    let inputs = &batch.input[..n];
    let deltas = &mut batch.d_output[..n];
    // δ = ∂L/∂y ⊙ f′(z), f′ through y.
    for (delta, y) in deltas.iter_mut().zip(&batch.output[..n]) {
        for (d, &yi) in delta.as_mut_slice().iter_mut().zip(y.as_slice()) {
            *d *= A::derivative_from_output(yi);
        }
    }
    let deltas = &batch.d_output[..n];
    // ∂L/∂b += δₖ, k = 0, 1, …
    for delta in deltas {
        for (gb, &d) in grad_bias.iter_mut().zip(delta.as_slice()) {
            *gb += d;
        }
    }
    // ∂L/∂W[:, j] += δₖ·xₖⱼ, k = 0, 1, …: a block of four columns × `ROWS`
    // rows of the gradient in registers while every sample adds its terms
    // (32 independent sums: the additions pipeline instead of waiting on
    // each other).
    let mut blocks = grad_weight.chunks_exact_mut(4 * O);
    let mut j = 0;
    for block in &mut blocks {
        let (g0c, rest) = block.split_at_mut(O);
        let (g1c, rest) = rest.split_at_mut(O);
        let (g2c, g3c) = rest.split_at_mut(O);
        let mut r = 0;
        while r + ROWS <= O {
            let mut g0: [f32; ROWS] = core::array::from_fn(|l| g0c[r + l]);
            let mut g1: [f32; ROWS] = core::array::from_fn(|l| g1c[r + l]);
            let mut g2: [f32; ROWS] = core::array::from_fn(|l| g2c[r + l]);
            let mut g3: [f32; ROWS] = core::array::from_fn(|l| g3c[r + l]);
            for (x, delta) in inputs.iter().zip(deltas) {
                let (x0, x1, x2, x3) = (x[j], x[j + 1], x[j + 2], x[j + 3]);
                let d = &delta.as_slice()[r..r + ROWS];
                for l in 0..ROWS {
                    g0[l] += d[l] * x0;
                    g1[l] += d[l] * x1;
                    g2[l] += d[l] * x2;
                    g3[l] += d[l] * x3;
                }
            }
            g0c[r..r + ROWS].copy_from_slice(&g0);
            g1c[r..r + ROWS].copy_from_slice(&g1);
            g2c[r..r + ROWS].copy_from_slice(&g2);
            g3c[r..r + ROWS].copy_from_slice(&g3);
            r += ROWS;
        }
        for (x, delta) in inputs.iter().zip(deltas) {
            let (x0, x1, x2, x3) = (x[j], x[j + 1], x[j + 2], x[j + 3]);
            for i in r..O {
                g0c[i] += delta[i] * x0;
                g1c[i] += delta[i] * x1;
                g2c[i] += delta[i] * x2;
                g3c[i] += delta[i] * x3;
            }
        }
        j += 4;
    }
    // The last `I mod 4` columns one at a time.
    for grad_column in blocks.into_remainder().chunks_exact_mut(O) {
        for (x, delta) in inputs.iter().zip(deltas) {
            let xj = x[j];
            for (g, &d) in grad_column.iter_mut().zip(delta.as_slice()) {
                *g += d * xj;
            }
        }
        j += 1;
    }
    // ∂L/∂xₖⱼ = W[:, j] · δₖ, the per-sample pass's dot product, for four
    // samples at once: see `dot4`.
    if let Some(d_input) = d_input {
        let mut dxs = d_input[..n].chunks_exact_mut(4);
        let mut ds = deltas.chunks_exact(4);
        for (dx, d) in (&mut dxs).zip(&mut ds) {
            dot4::<I, O>(weight, [&d[0], &d[1], &d[2], &d[3]], dx);
        }
        for (dx, delta) in dxs.into_remainder().iter_mut().zip(ds.remainder()) {
            for (j, column) in weight.chunks_exact(O).enumerate() {
                dx[j] = super::dense::dot(column, delta.as_slice());
            }
        }
    }
}

#[cfg(not(target_arch = "arm"))]
/// `dx[m][j] = W[:, j] · δₘ` for four samples `m`, with the bits of
/// [`dot`](super::dense::dot): the same 8 partial sums per product (row `i`
/// into sum `i mod 8`) and the same pairwise combination.
///
/// The four `δ` are first transposed (`dt[i] = [δ₀ᵢ, δ₁ᵢ, δ₂ᵢ, δ₃ᵢ]`), so
/// each partial sum is a vector over the four samples and each weight is
/// loaded once for all four: `acc[i mod 8] += wᵢⱼ · dt[i]`, 8 independent
/// vector sums.
#[inline]
fn dot4<const I: usize, const O: usize>(
    weight: &[f32],
    d: [&SVector<f32, O>; 4],
    dx: &mut [SVector<f32, I>],
) {
    const LANES: usize = super::dense::LANES;
    let mut dt = [[0.0f32; 4]; O];
    for (i, dt) in dt.iter_mut().enumerate() {
        *dt = [d[0][i], d[1][i], d[2][i], d[3][i]];
    }
    for (j, column) in weight.chunks_exact(O).enumerate() {
        let mut acc = [[0.0f32; 4]; LANES];
        let mut w8 = column.chunks_exact(LANES);
        let mut d8 = dt.chunks_exact(LANES);
        for (w8, d8) in (&mut w8).zip(&mut d8) {
            for ((acc, &w), d) in acc.iter_mut().zip(w8).zip(d8) {
                for m in 0..4 {
                    acc[m] += w * d[m];
                }
            }
        }
        for ((acc, &w), d) in acc.iter_mut().zip(w8.remainder()).zip(d8.remainder()) {
            for m in 0..4 {
                acc[m] += w * d[m];
            }
        }
        for (m, dx) in dx.iter_mut().enumerate().take(4) {
            let s = |l: usize| acc[l][m];
            dx[j] = ((s(0) + s(4)) + (s(2) + s(6))) + ((s(1) + s(5)) + (s(3) + s(7)));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::boxed::Box;

    use super::*;
    use crate::nn::{Layer, Mlp, Mlp1, Network, Relu, Tanh, fd};
    use crate::rng;

    /// The batched passes over `n` samples of a `BATCH` batch against `n`
    /// per-sample passes: outputs, accumulated gradients (onto a non-zero
    /// gradient) and input gradients, bit for bit.
    fn check<N, const I: usize, const O: usize, const BATCH: usize>(seed: u64, n: usize)
    where
        N: Network<I, O> + Clone,
    {
        let mut rng = fd::rng(seed);
        let mut net = N::ZERO;
        fd::randomise(&mut net, &mut rng, 0.5);
        fd::randomise_biases(&mut net, &mut rng);
        let mut start = N::ZERO;
        fd::randomise(&mut start, &mut rng, 0.1);
        let mut batch = Box::new(<N::Batch<BATCH> as Zeroed>::ZERO);
        let mut xs = [SVector::<f32, I>::zeros(); BATCH];
        let mut d_ys = [SVector::<f32, O>::zeros(); BATCH];
        for (x, d_y) in xs.iter_mut().zip(&mut d_ys) {
            rng::fill_normal(&mut rng, x.as_mut_slice());
            rng::fill_normal(&mut rng, d_y.as_mut_slice());
        }

        N::batch_inputs(&mut batch)[..n].copy_from_slice(&xs[..n]);
        net.forward_batch(&mut batch, n);
        N::batch_d_outputs(&mut batch)[..n].copy_from_slice(&d_ys[..n]);
        let mut grad = start.clone();
        let mut d_xs = [SVector::<f32, I>::zeros(); BATCH];
        net.backward_batch(&mut batch, n, &mut grad, Some(&mut d_xs));

        let mut cache = N::ZERO_CACHE;
        let mut expected_grad = start;
        for k in 0..n {
            let y = net.forward_train(&xs[k], &mut cache);
            let ok =
                |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(
                ok(y.as_slice(), N::batch_outputs(&batch)[k].as_slice()),
                "output {k}"
            );
            let d_x = net.backward(&cache, &d_ys[k], &mut expected_grad);
            assert!(ok(d_x.as_slice(), d_xs[k].as_slice()), "input gradient {k}");
        }
        fd::assert_same_bits(
            &grad,
            &expected_grad,
            &std::format!("gradient, n = {n}, batch {BATCH}"),
        );
        // The samples beyond `n` are not touched.
        assert!(d_xs[n..].iter().all(|d| *d == SVector::<f32, I>::zeros()));
    }

    #[test]
    fn batched_passes_are_the_per_sample_passes_bit_for_bit() {
        // Remainders everywhere: 5 inputs (a block of 4 and one column),
        // 11 and 3 rows (a block of 8 and the rest), 2 outputs.
        check::<Mlp<5, 11, 3>, 5, 3, 1>(1, 1);
        check::<Mlp<5, 11, 3>, 5, 3, 7>(2, 7);
        check::<Mlp<5, 11, 3>, 5, 3, 7>(3, 4);
        check::<Mlp<5, 11, 3, Relu>, 5, 3, 6>(4, 6);
        check::<Mlp<4, 64, 2>, 4, 2, 16>(5, 16);
        check::<Mlp<4, 64, 2>, 4, 2, 16>(6, 13);
        check::<Mlp1<3, 8, 1, Tanh>, 3, 1, 5>(7, 5);
        check::<Mlp1<8, 16, 24, Relu>, 8, 24, 3>(8, 3);
    }

    #[test]
    fn backward_without_input_gradients_gives_the_same_parameter_gradient() {
        let mut rng = fd::rng(9);
        let mut net = Mlp::<4, 9, 2>::ZERO;
        fd::randomise(&mut net, &mut rng, 0.5);
        let mut batch = Box::new(<<Mlp<4, 9, 2> as Layer>::Batch<3> as Zeroed>::ZERO);
        for x in Mlp::<4, 9, 2>::batch_inputs(&mut batch) {
            rng::fill_normal(&mut rng, x.as_mut_slice());
        }
        let d_ys = [SVector::<f32, 2>::new(0.3, -1.2); 3];
        let (mut with, mut without) = (Mlp::<4, 9, 2>::ZERO, Mlp::<4, 9, 2>::ZERO);
        net.forward_batch(&mut batch, 3);
        let mut again = batch.clone();
        *Mlp::<4, 9, 2>::batch_d_outputs(&mut batch) = d_ys;
        let mut d_xs = [SVector::<f32, 4>::zeros(); 3];
        net.backward_batch(&mut batch, 3, &mut with, Some(&mut d_xs));
        *Mlp::<4, 9, 2>::batch_d_outputs(&mut again) = d_ys;
        net.backward_batch(&mut again, 3, &mut without, None);
        assert_eq!(with, without);
        assert!(d_xs.iter().all(|d| d.norm() > 0.0));
    }
}
