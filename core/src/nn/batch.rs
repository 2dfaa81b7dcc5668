//! Batched training passes: one layer at a time over a chunk of samples.
//!
//! The per-sample passes ([`Layer::forward_train`](super::Layer::forward_train), [`Layer::backward`](super::Layer::backward)) walk
//! the whole network for one sample, so every weight and every gradient entry
//! is loaded (and each gradient entry stored) once per sample. The batched
//! passes walk one layer over up to `BATCH` samples before moving on:
//! - the forward pass keeps the running sums of a block of rows of 4 samples
//!   (8 with AVX-512) in registers (8 SIMD registers) while it walks all the
//!   columns, so each load of a piece of `W` serves 4 (8) samples and no
//!   partial sum goes through memory; with AVX-512 the rows after the last
//!   whole block (all of a 1- or 2-output layer's) run on 16 samples'
//!   transposed inputs instead (`forward_tail`);
//! - the backward pass keeps a block of 4 columns of `∂L/∂W` in registers
//!   while it adds every sample's `δᵢ·xⱼ` to them; the last `O mod GRAD_ROWS`
//!   rows (all of a 1- or 2-output layer's) one whole row at a time
//!   (`∂L/∂W[i, :] += δᵢ·x`, a vector operation along the row); `∂L/∂b`
//!   also in registers;
//! - the input gradients `∂L/∂xⱼ = W[:, j]·δ` run on `Wᵀ` (kept in the
//!   batch, transposed again only after the weights change): the dot
//!   product's 8 partial sums (lane `l` sums the rows `i ≡ l mod 8`) become
//!   one vector per lane over 8 or 16 *columns*, so combining the lanes is a
//!   few vector additions instead of a horizontal sum per column, and each
//!   row piece of `Wᵀ` serves 2–4 samples (`dot_transposed`: 5 % off a
//!   whole AVX2 RL Zoo CartPole run, 7 % with AVX-512, 3 % in the baseline
//!   build, over the layout it replaced, which kept each column's 8 lanes
//!   in one vector and summed them horizontally).
//!
//! The block sizes depend on the SIMD width the build targets (`ROWS`,
//! `SAMPLES`, `GRAD_ROWS`, `TRANSPOSED_COLUMNS`, `TRANSPOSED_SAMPLES`); the
//! arithmetic on each number does not, so a baseline x86-64 build, an AVX2
//! build, an AVX-512 build and the firmware train the same bits
//! (`tests/tests/simd_identity.rs` compares the desktop builds end to end,
//! `tests/tests/firmware.rs` the firmware). The kernels are plain Rust the
//! compiler vectorises.
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
//! floats for a [`Dense<I, O>`](super::Dense), plus on desktops `2·I·O` for
//! `Wᵀ` and the `W` it was made from (`Transposed`; not on a Cortex-M).
//! A [`Chain`](super::Chain) stores the pair of its members' batches; its second member reads
//! the first's outputs in place ([`Layer::forward_batch_from`](super::Layer::forward_batch_from)) and writes its input gradients
//! straight into the first's output gradients, so nothing is copied between layers (a copy of
//! every hidden activation per chunk was 1 % of the RL Zoo CartPole run); the inputs stored by
//! the members after the first go unused. The caller owns it (it is
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
    /// Desktop only: `Wᵀ` for the input-gradient kernel (see
    /// [`Transposed`]).
    #[cfg(not(target_arch = "arm"))]
    transposed: Transposed<I, O>,
}

impl<const I: usize, const O: usize, const BATCH: usize> Zeroed for DenseBatch<I, O, BATCH> {
    const ZERO: Self = Self {
        input: [<SVector<f32, I> as Params>::ZERO; BATCH],
        output: [<SVector<f32, O> as Params>::ZERO; BATCH],
        d_output: [<SVector<f32, O> as Params>::ZERO; BATCH],
        #[cfg(not(target_arch = "arm"))]
        transposed: Transposed {
            weight: [[0.0; O]; I],
            rows: [[0.0; I]; O],
        },
    };
}

#[cfg(not(target_arch = "arm"))]
/// `Wᵀ` (row `i` of `W` contiguous) and the `W` it was made from.
///
/// The input-gradient kernel ([`dot_transposed`]) reads 8 or 16 columns of
/// one row of `W` as vectors. Weights change once per optimiser step, and
/// an update runs several chunks of samples through the same weights, so
/// the backward pass transposes `W` only when it differs (bitwise) from the
/// copy kept here: the comparison runs on whole vectors, where a transpose
/// moves every weight on its own. All-zero storage is a consistent pair
/// (the transpose of a zero `W`), so a [`Zeroed`] batch needs no flag.
#[derive(Clone, Debug, PartialEq)]
struct Transposed<const I: usize, const O: usize> {
    /// The `W` that `rows` is the transpose of.
    weight: [[f32; O]; I],
    /// `rows[i][j] = W[i, j]`.
    rows: [[f32; I]; O],
}

#[cfg(not(target_arch = "arm"))]
impl<const I: usize, const O: usize> Transposed<I, O> {
    /// `Wᵀ` of `weight`, transposing only when `weight` is not the copy.
    #[inline(never)]
    fn of(&mut self, weight: &[[f32; O]; I]) -> &[[f32; I]; O] {
        // One running OR over the flat arrays: the compiler keeps it in
        // vector registers and reduces once (per column, it reduced every
        // column: 0.31 against 0.22 cycles a weight).
        let mut differ = 0u32;
        for (w, c) in weight.as_flattened().iter().zip(self.weight.as_flattened()) {
            differ |= w.to_bits() ^ c.to_bits();
        }
        if differ != 0 {
            self.weight = *weight;
            // 16 rows of `Wᵀ` at a time from a 16-float piece of each column
            // (element by element over whole columns, the compiler scatters:
            // 1.5 against 1.1 cycles a weight).
            for (b, rows) in self.rows.chunks_mut(TRANSPOSE_PIECE).enumerate() {
                for (j, column) in weight.iter().enumerate() {
                    let piece = column.iter().skip(b * TRANSPOSE_PIECE);
                    for (row, &w) in rows.iter_mut().zip(piece) {
                        row[j] = w;
                    }
                }
            }
        }
        &self.rows
    }
}

/// Rows of `Wᵀ` [`Transposed::of`] fills from one piece of each column.
#[cfg(not(target_arch = "arm"))]
const TRANSPOSE_PIECE: usize = 16;

/// Rows of `W` (and of `∂L/∂W`) the batched kernels hold in registers per
/// column: two SIMD registers (of 8 floats where the build has AVX, of 4
/// otherwise). Which rows go together never changes a result (see the
/// module docs), so the two widths train the same bits.
#[cfg(all(not(target_arch = "arm"), target_feature = "avx"))]
const ROWS: usize = 16;
#[cfg(all(not(target_arch = "arm"), not(target_feature = "avx")))]
const ROWS: usize = 8;

/// Rows of `∂L/∂W` per column the weight-gradient kernel keeps in
/// registers (4 columns of them): two SIMD registers per column, so each
/// sample's 4 broadcast inputs serve 8 vector multiply-adds.
#[cfg(all(not(target_arch = "arm"), target_feature = "avx"))]
const GRAD_ROWS: usize = 16;
#[cfg(all(not(target_arch = "arm"), not(target_feature = "avx")))]
const GRAD_ROWS: usize = 8;

/// Columns of `∂L/∂W` the weight-gradient kernel keeps in registers.
#[cfg(not(target_arch = "arm"))]
const GRAD_COLUMNS: usize = 4;

/// Samples whose pre-activations the forward kernel keeps in registers at
/// once (`ROWS` of each): 4 (8 SIMD registers of running sums), or 8 with
/// AVX-512 (8 of its 32 registers; each load of `W` then serves 8 samples:
/// 3 % off the update of an RL Zoo CartPole run, the same bits).
#[cfg(all(not(target_arch = "arm"), not(target_feature = "avx512f")))]
const SAMPLES: usize = 4;
#[cfg(all(not(target_arch = "arm"), target_feature = "avx512f"))]
const SAMPLES: usize = 8;

/// Samples whose input gradients one sweep over `W` computes (see
/// [`dot_lanes`]): 4 × 2 columns of 8-lane partial sums are 8 AVX registers
/// (16 SSE registers). With AVX, 8 samples were 2 % slower (spills); with
/// SSE, 2 samples 50 % slower (the compiler stops vectorising the lanes).
#[cfg(not(target_arch = "arm"))]
const DOT_SAMPLES: usize = 4;

#[cfg(not(target_arch = "arm"))]
/// Batched forward pass of a dense layer over the first `n` samples of
/// `inputs` (of `batch.input` when `None`): `output[k] = f(W·input[k] + b)`, the operations of
/// `Dense::forward_into` on every number (see the module docs).
///
/// Register blocking: `ROWS` pre-activations of each of `SAMPLES` samples
/// stay in registers while the kernel walks *all* `I` columns,
/// `zₖᵢ ← zₖᵢ + wᵢⱼ·xₖⱼ` for `j = 0, 1, …`; each load of `W[r.., j]` serves
/// `SAMPLES` samples and no partial sum goes through memory.
#[inline(never)]
pub(super) fn dense_forward<A: Activation, const I: usize, const O: usize, const BATCH: usize>(
    weight: &[[f32; O]; I],
    bias: &[f32; O],
    inputs: Option<&[SVector<f32, I>; BATCH]>,
    batch: &mut DenseBatch<I, O, BATCH>,
    n: usize,
) {
    let n = n.min(BATCH);
    let inputs = inputs.unwrap_or(&batch.input);
    let mut xs = inputs[..n].chunks_exact(SAMPLES);
    let mut ys = batch.output[..n].chunks_exact_mut(SAMPLES);
    for (x, y) in (&mut xs).zip(&mut ys) {
        forward_samples::<I, O, SAMPLES>(weight, bias, x, y);
    }
    let (mut xs, mut ys) = (xs.remainder(), ys.into_remainder());
    // With 8-sample blocks, 4 of the last 7 as one block.
    if SAMPLES > 4 && xs.len() >= 4 {
        let ((x, rest_x), (y, rest_y)) = (xs.split_at(4), ys.split_at_mut(4));
        forward_samples::<I, O, 4>(weight, bias, x, y);
        (xs, ys) = (rest_x, rest_y);
    }
    for (x, y) in xs.iter().zip(ys) {
        forward_samples::<I, O, 1>(
            weight,
            bias,
            core::slice::from_ref(x),
            core::slice::from_mut(y),
        );
    }
    #[cfg(target_feature = "avx512f")]
    if !O.is_multiple_of(ROWS) {
        let (x, y) = (&inputs[..n], &mut batch.output[..n]);
        forward_tail::<I, O>(weight, bias, O - O % ROWS, x, y);
    }
    for y in batch.output[..n].iter_mut() {
        for yi in y.as_mut_slice() {
            *yi = A::apply(*yi);
        }
    }
}

#[cfg(not(target_arch = "arm"))]
/// `z = W x + b` for `S` samples (`x.len() == y.len() == S`): blocks of
/// `ROWS` rows, then the last `O mod ROWS` rows one at a time.
#[inline(always)]
fn forward_samples<const I: usize, const O: usize, const S: usize>(
    weight: &[[f32; O]; I],
    bias: &[f32; O],
    x: &[SVector<f32, I>],
    y: &mut [SVector<f32, O>],
) {
    let x: [&[f32; I]; S] = core::array::from_fn(|s| &x[s].data.0[0]);
    let mut r = 0;
    while r + ROWS <= O {
        forward_block::<I, O, ROWS, S>(weight, bias, r, &x, y);
        r += ROWS;
    }
    // The last `O mod ROWS` rows: with AVX-512 `forward_tail`, over the
    // whole chunk (slower than this without: 3 % in the baseline build's
    // RL Zoo CartPole run, 6 % with AVX2; 2 % faster with AVX-512).
    #[cfg(not(target_feature = "avx512f"))]
    for r in r..O {
        forward_block::<I, O, 1, S>(weight, bias, r, &x, y);
    }
    #[cfg(target_feature = "avx512f")]
    let _ = (r, x);
}

/// Samples per block of [`forward_tail`]: its running sums of a row are
/// one vector over the block's samples.
#[cfg(all(not(target_arch = "arm"), target_feature = "avx512f"))]
const TAIL_SAMPLES: usize = 16;

#[cfg(all(not(target_arch = "arm"), target_feature = "avx512f"))]
/// Rows `r0..O` of `z = W x + b` (fewer than `ROWS`: the last rows of a
/// layer, all of a small output layer's) for the samples `x`, vectorised
/// across samples: each block of [`TAIL_SAMPLES`] inputs is transposed
/// first (`xt[j][t] = x_t[j]`), so a row's running sums for the block are
/// one vector and each step `z ← z + wᵢⱼ·xt[j]` one vector multiply and
/// add, in `forward_block`'s order (`bᵢ`, then `j = 0, 1, …`). Only with
/// AVX-512: there a row's sums of 4 samples, as `forward_block` keeps
/// them, are a vector the compiler fills with a gather per step (slow on
/// the cores that have it); without, they stay four scalar sums, faster
/// than the transposition.
#[inline(never)]
fn forward_tail<const I: usize, const O: usize>(
    weight: &[[f32; O]; I],
    bias: &[f32; O],
    r0: usize,
    x: &[SVector<f32, I>],
    y: &mut [SVector<f32, O>],
) {
    const T: usize = TAIL_SAMPLES;
    let zero = [0.0f32; I];
    let mut xt = [[0.0f32; T]; I];
    for (xs, ys) in x.chunks(T).zip(y.chunks_mut(T)) {
        let rows: [&[f32; I]; T] =
            core::array::from_fn(|t| xs.get(t).map_or(&zero, |x| &x.data.0[0]));
        let (tiles, _) = xt.as_chunks_mut::<4>();
        for (jb, tile) in tiles.iter_mut().enumerate() {
            *tile = transpose_tile::<I>(&rows, jb);
        }
        for j in I - I % 4..I {
            for (xtjt, row) in xt[j].iter_mut().zip(&rows) {
                *xtjt = row[j];
            }
        }
        for r in r0..O {
            let z = tail_row::<I, O>(weight, bias[r], r, &xt);
            for (yt, &zt) in ys.iter_mut().zip(&z) {
                yt[r] = zt;
            }
        }
    }
}

#[cfg(all(not(target_arch = "arm"), target_feature = "avx512f"))]
/// Columns `4·jb .. 4·jb + 4` of [`TAIL_SAMPLES`] inputs as 4 vectors over
/// the samples: 16 loads of 4 floats and shuffles. (Element by element,
/// the compiler gathers or scatters; inlined, it vectorises the caller's
/// loop over the tiles with scatters.)
#[inline(never)]
fn transpose_tile<const I: usize>(
    rows: &[&[f32; I]; TAIL_SAMPLES],
    jb: usize,
) -> [[f32; TAIL_SAMPLES]; 4] {
    let a: [[f32; 4]; TAIL_SAMPLES] = core::array::from_fn(|t| {
        rows[t]
            .as_chunks::<4>()
            .0
            .get(jb)
            .copied()
            .unwrap_or([0.0; 4])
    });
    core::array::from_fn(|v| core::array::from_fn(|t| a[t][v]))
}

#[cfg(all(not(target_arch = "arm"), target_feature = "avx512f"))]
/// Row `r` of [`forward_tail`] for one block of samples: `z = bᵣ`, then
/// `z ← z + wᵣⱼ·xt[j]` for `j = 0, 1, …`.
#[inline(always)]
fn tail_row<const I: usize, const O: usize>(
    weight: &[[f32; O]; I],
    bias: f32,
    r: usize,
    xt: &[[f32; TAIL_SAMPLES]; I],
) -> [f32; TAIL_SAMPLES] {
    let mut z = [bias; TAIL_SAMPLES];
    for (column, xtj) in weight.iter().zip(xt) {
        let w = column[r];
        for (zt, &xtjt) in z.iter_mut().zip(xtj) {
            *zt += w * xtjt;
        }
    }
    z
}

#[cfg(not(target_arch = "arm"))]
/// Rows `r..r + R` of `z = W x + b` for `S` samples, the `R × S` running
/// sums in registers: `zₖᵢ = bᵢ`, then `zₖᵢ + wᵢⱼ·xₖⱼ` for `j = 0, 1, …`.
#[inline(always)]
fn forward_block<const I: usize, const O: usize, const R: usize, const S: usize>(
    weight: &[[f32; O]; I],
    bias: &[f32; O],
    r: usize,
    x: &[&[f32; I]; S],
    y: &mut [SVector<f32, O>],
) {
    let Some(bias) = bias.get(r..r + R) else {
        return;
    };
    let mut z = [[0.0f32; R]; S];
    for zk in z.iter_mut() {
        zk.copy_from_slice(bias);
    }
    // Eight or four samples spelled out, not a loop over them: with a
    // loop, a crate built without LTO (Cargo's default release profile) had
    // the compiler unroll the rows and vectorise across the four samples
    // instead, the sums kept in memory through gathers and scatters
    // (a 4-64-64-2 forward and backward pass 11 times slower; with eight
    // samples in a loop, the workspace's own RL Zoo CartPole run 9 times).
    if let ([x0, x1, x2, x3, x4, x5, x6, x7], [z0, z1, z2, z3, z4, z5, z6, z7]) =
        (&x[..], &mut z[..])
    {
        for (j, column) in weight.iter().enumerate() {
            let Some(w) = column.get(r..r + R) else {
                return;
            };
            let (a, b, c, d) = (x0[j], x1[j], x2[j], x3[j]);
            let (e, f, g, h) = (x4[j], x5[j], x6[j], x7[j]);
            for i in 0..R {
                z0[i] += w[i] * a;
                z1[i] += w[i] * b;
                z2[i] += w[i] * c;
                z3[i] += w[i] * d;
                z4[i] += w[i] * e;
                z5[i] += w[i] * f;
                z6[i] += w[i] * g;
                z7[i] += w[i] * h;
            }
        }
    } else if let ([x0, x1, x2, x3], [z0, z1, z2, z3]) = (&x[..], &mut z[..]) {
        for (j, column) in weight.iter().enumerate() {
            let Some(w) = column.get(r..r + R) else {
                return;
            };
            let (a, b, c, d) = (x0[j], x1[j], x2[j], x3[j]);
            for i in 0..R {
                z0[i] += w[i] * a;
                z1[i] += w[i] * b;
                z2[i] += w[i] * c;
                z3[i] += w[i] * d;
            }
        }
    } else {
        for (j, column) in weight.iter().enumerate() {
            let Some(w) = column.get(r..r + R) else {
                return;
            };
            for (zk, xk) in z.iter_mut().zip(x) {
                let xkj = xk[j];
                for (zki, &wij) in zk.iter_mut().zip(w) {
                    *zki += wij * xkj;
                }
            }
        }
    }
    for (zk, yk) in z.iter().zip(y.iter_mut()) {
        yk.as_mut_slice()[r..r + R].copy_from_slice(zk);
    }
}

#[cfg(not(target_arch = "arm"))]
/// Batched backward pass of a dense layer over the first `n` samples
/// (their inputs `inputs`, or `batch.input` when `None`, as in the forward
/// pass): turns `batch.d_output` into `δ`, **adds** `Σₖ ∂L/∂θ` into the gradient
/// (`grad_weight`, `grad_bias`), sample by sample in order, and writes each
/// sample's `∂L/∂x` into `d_input` when asked for.
#[inline(never)]
pub(super) fn dense_backward<A: Activation, const I: usize, const O: usize, const BATCH: usize>(
    weight: &[[f32; O]; I],
    grad_weight: &mut [f32],
    grad_bias: &mut [f32],
    inputs: Option<&[SVector<f32, I>; BATCH]>,
    batch: &mut DenseBatch<I, O, BATCH>,
    n: usize,
    d_input: Option<&mut [SVector<f32, I>; BATCH]>,
) {
    let n = n.min(BATCH);
    let DenseBatch {
        input,
        output,
        d_output,
        transposed,
    } = batch;
    let inputs = &inputs.unwrap_or(input)[..n];
    // δ = ∂L/∂y ⊙ f′(z), f′ through y, and ∂L/∂b += δₖ, k = 0, 1, …, in
    // one pass (`delta_and_bias`).
    delta_and_bias::<A, O>(&mut d_output[..n], &output[..n], grad_bias);
    let deltas = &d_output[..n];
    // ∂L/∂W[:, j] += δₖ·xₖⱼ, k = 0, 1, …: a block of four columns × `ROWS`
    // rows of the gradient in registers while every sample adds its terms
    // (8 SIMD registers of independent sums: the additions pipeline instead
    // of waiting on each other).
    let mut blocks = grad_weight.chunks_exact_mut(GRAD_COLUMNS * O);
    let mut j = 0;
    for block in &mut blocks {
        let (columns, _) = block.as_chunks_mut::<O>();
        let mut r = 0;
        while r + GRAD_ROWS <= O {
            let mut g: [[f32; GRAD_ROWS]; GRAD_COLUMNS] =
                core::array::from_fn(|c| core::array::from_fn(|l| columns[c][r + l]));
            for (x, delta) in inputs.iter().zip(deltas) {
                let xs: [f32; GRAD_COLUMNS] = core::array::from_fn(|c| x[j + c]);
                let d = &delta.as_slice()[r..r + GRAD_ROWS];
                for l in 0..GRAD_ROWS {
                    for c in 0..GRAD_COLUMNS {
                        g[c][l] += d[l] * xs[c];
                    }
                }
            }
            for (column, gc) in columns.iter_mut().zip(&g) {
                column[r..r + GRAD_ROWS].copy_from_slice(gc);
            }
            r += GRAD_ROWS;
        }
        j += GRAD_COLUMNS;
    }
    // The last `I mod GRAD_COLUMNS` columns one at a time (the rows of whole blocks).
    for grad_column in blocks.into_remainder().chunks_exact_mut(O) {
        for (x, delta) in inputs.iter().zip(deltas) {
            let xj = x[j];
            let rows = grad_column.iter_mut().zip(delta.as_slice());
            for (g, &d) in rows.take(O - O % GRAD_ROWS) {
                *g += d * xj;
            }
        }
        j += 1;
    }
    // The last `O mod GRAD_ROWS` rows (all of a small output layer's), one
    // row of `∂L/∂W` at a time in registers: `∂L/∂W[i, :] += δₖᵢ·xₖ`, a
    // vector operation along the row. (Four columns of such a row as the
    // blocks above hold them would be scalar sums, or gathers.)
    for i in O - O % GRAD_ROWS..O {
        let mut row = [0.0f32; I];
        for (g, column) in row.iter_mut().zip(grad_weight.chunks_exact(O)) {
            *g = column[i];
        }
        for (x, delta) in inputs.iter().zip(deltas) {
            let d = delta[i];
            for (g, &xj) in row.iter_mut().zip(x.as_slice()) {
                *g += d * xj;
            }
        }
        for (&g, column) in row.iter().zip(grad_weight.chunks_exact_mut(O)) {
            column[i] = g;
        }
    }
    // ∂L/∂xₖⱼ = W[:, j] · δₖ, the per-sample pass's dot product: blocks of
    // `TRANSPOSED_COLUMNS` columns through `dot_transposed`, the last
    // `I mod TRANSPOSED_COLUMNS` through `dot_lanes`.
    if let Some(d_input) = d_input {
        let d_input = &mut d_input[..n];
        let (blocks, rest) = weight.as_chunks::<TRANSPOSED_COLUMNS>();
        let wt = transposed.of(weight);
        for b in 0..blocks.len() {
            let j = b * TRANSPOSED_COLUMNS;
            dot_transposed::<I, O>(wt, deltas, d_input, j);
        }
        if !rest.is_empty() {
            let j = I - rest.len();
            let mut dxs = d_input.chunks_exact_mut(DOT_SAMPLES);
            let mut ds = deltas.chunks_exact(DOT_SAMPLES);
            for (dx, d) in (&mut dxs).zip(&mut ds) {
                dot_lanes::<I, O, DOT_SAMPLES>(rest, j, d, dx);
            }
            for (dx, delta) in dxs.into_remainder().iter_mut().zip(ds.remainder()) {
                for (dxj, column) in dx.as_mut_slice()[j..].iter_mut().zip(rest) {
                    *dxj = super::dense::dot(column, delta.as_slice());
                }
            }
        }
    }
}

/// Columns of `W` per block of [`dot_transposed`], and samples per sweep
/// over a block: one 16-float vector per sample with AVX-512 (32 vector
/// registers); with AVX2 (16 registers) two 8-float vectors for each of 2
/// samples; two 4-float vectors for each of 2 samples with SSE. Measured
/// (`kernel_work update`, AVX-512 / AVX2 / SSE builds) against the other
/// shapes of up to 32 columns and 4 samples. With AVX2 on a Zen 3 core,
/// 16 columns × 2 samples (per row of `Wᵀ`: 2 loads, 2 broadcasts, 4
/// multiplies, 4 additions) took the RL Zoo CartPole run 2.74 → 2.49 s
/// (medians of 5 alternating rounds; 3.29 → 3.10 s in a later, slower set
/// of 8) against 8 columns × 4 samples (1 load, 4 broadcasts and 4 of each
/// for the same multiply-adds); 16 × 3 and 32 × 1 were no faster.
#[cfg(all(not(target_arch = "arm"), target_feature = "avx"))]
const TRANSPOSED_COLUMNS: usize = 16;
#[cfg(all(not(target_arch = "arm"), not(target_feature = "avx")))]
const TRANSPOSED_COLUMNS: usize = 8;

#[cfg(all(not(target_arch = "arm"), target_feature = "avx512f"))]
const TRANSPOSED_SAMPLES: usize = 4;
#[cfg(all(not(target_arch = "arm"), not(target_feature = "avx512f")))]
const TRANSPOSED_SAMPLES: usize = 2;

/// Lane pairs `(q, q + 4)` [`dot_transposed`] runs in one sweep over the
/// rows: two with AVX-512 (`4·S` vectors of sums, and the first sweep's
/// two pair sums per sample kept for the combination: 28 of its 32
/// registers), one otherwise (16 registers).
#[cfg(all(not(target_arch = "arm"), target_feature = "avx512f"))]
const TRANSPOSED_PAIRS: usize = 2;
#[cfg(all(not(target_arch = "arm"), not(target_feature = "avx512f")))]
const TRANSPOSED_PAIRS: usize = 1;

#[cfg(not(target_arch = "arm"))]
/// `dx[m][j + c] = W[:, j + c] · δₘ` for every sample `m` and the
/// `TRANSPOSED_COLUMNS` columns from `j` (`wt[i][j + c] = W[i, j + c]`, the
/// transpose), with [`dot`](super::dense::dot)'s arithmetic transposed:
/// `dot`'s lane `l` sums the rows `i ≡ l (mod 8)` in increasing order, so
/// here one vector per lane holds that sum for all the columns at once, and `dot`'s combination of
/// its lanes, `((s₀ + s₄) + (s₂ + s₆)) + ((s₁ + s₅) + (s₃ + s₇))`, becomes
/// seven vector additions instead of a horizontal sum per column. Each
/// sweep over the rows runs [`TRANSPOSED_PAIRS`] lane pairs `(q, q + 4)`
/// (`2·S·TRANSPOSED_PAIRS` vectors of independent sums); each row piece of
/// `wt` is loaded once for `S` samples. One call runs every sample (groups
/// of [`TRANSPOSED_SAMPLES`], then one at a time): with one call per group,
/// the calls and the zeroing of the sums' storage cost more than a tenth
/// of this kernel. Not inlined: inside the caller, the compiler's choice to
/// vectorise it changed with unrelated code there (once it kept the sums
/// as scalars on the stack, 3.3× slower).
#[inline(never)]
fn dot_transposed<const I: usize, const O: usize>(
    wt: &[[f32; I]; O],
    d: &[SVector<f32, O>],
    dx: &mut [SVector<f32, I>],
    j: usize,
) {
    const S: usize = TRANSPOSED_SAMPLES;
    // Storage for the lane-pair sums, overwritten by every group of samples
    // (so zeroed once, not once a group).
    let mut pairs = [[[0.0f32; TRANSPOSED_COLUMNS]; S]; 4];
    let mut dxs = dx.chunks_exact_mut(S);
    let mut ds = d.chunks_exact(S);
    for (dx, d) in (&mut dxs).zip(&mut ds) {
        dot_transposed_samples::<I, O, S>(wt, d, dx, j, &mut pairs);
    }
    let mut pair = [[[0.0f32; TRANSPOSED_COLUMNS]; 1]; 4];
    for (dx, d) in dxs
        .into_remainder()
        .chunks_mut(1)
        .zip(ds.remainder().chunks(1))
    {
        dot_transposed_samples::<I, O, 1>(wt, d, dx, j, &mut pair);
    }
}

#[cfg(not(target_arch = "arm"))]
/// [`dot_transposed`] for `S` samples: `wt`'s row pieces are loaded once
/// for all of them.
#[inline(always)]
fn dot_transposed_samples<const I: usize, const O: usize, const S: usize>(
    wt: &[[f32; I]; O],
    d: &[SVector<f32, O>],
    dx: &mut [SVector<f32, I>],
    j: usize,
    pairs: &mut [[[f32; TRANSPOSED_COLUMNS]; S]; 4],
) {
    use super::dense::LANES;
    const C: usize = TRANSPOSED_COLUMNS;
    const P: usize = TRANSPOSED_PAIRS;
    // Columns `j..j + C` of row `i` (never `None`: `j + C <= I`).
    let piece = |i: usize| -> Option<&[f32; C]> { wt.get(i)?.get(j..j + C)?.try_into().ok() };
    let (Some(d), Some(dx)) = (d.get(..S), dx.get_mut(..S)) else {
        return;
    };
    let d: [&[f32; O]; S] = core::array::from_fn(|m| &d[m].data.0[0]);
    // `pairs[q]` = s_q + s_{q+4} for every sample and column, where lane
    // `l`'s sum s_l runs over the rows `i ≡ l (mod 8)` in increasing order.
    for (g, group) in pairs.as_chunks_mut::<P>().0.iter_mut().enumerate() {
        let q0 = g * P;
        // `sums[p][h]`: lane `q0 + p + 4·h`.
        let mut sums = [[[[0.0f32; C]; S]; 2]; P];
        let mut base = 0;
        while base < O {
            for (p, sums) in sums.iter_mut().enumerate() {
                for (h, sums) in sums.iter_mut().enumerate() {
                    // Past the last row, the lane has no term left.
                    let i = base + q0 + p + 4 * h;
                    if i >= O {
                        continue;
                    }
                    let Some(w) = piece(i) else { return };
                    for (sums, dm) in sums.iter_mut().zip(&d) {
                        let dmi = dm[i];
                        for (s, &wc) in sums.iter_mut().zip(w) {
                            *s += wc * dmi;
                        }
                    }
                }
            }
            base += LANES;
        }
        for (pair, [lo, hi]) in group.iter_mut().zip(&sums) {
            for ((pair, lo), hi) in pair.iter_mut().zip(lo).zip(hi) {
                for ((p, &l), &h) in pair.iter_mut().zip(lo).zip(hi) {
                    *p = l + h;
                }
            }
        }
    }
    let [s04, s15, s26, s37] = &*pairs;
    for (m, dx) in dx.iter_mut().enumerate() {
        let Some(dx) = dx.as_mut_slice().get_mut(j..j + C) else {
            return;
        };
        for (c, dxc) in dx.iter_mut().enumerate() {
            *dxc = (s04[m][c] + s26[m][c]) + (s15[m][c] + s37[m][c]);
        }
    }
}

#[cfg(not(target_arch = "arm"))]
/// `δₖ = (∂L/∂y)ₖ ⊙ f′(zₖ)` in place for every sample (`f′` through `yₖ`),
/// and `∂L/∂b += δₖ` for `k = 0, 1, …` with the running sums in registers
/// (in place, each sum would wait for its previous store to reach the
/// next load). Not inlined, and the loop over a sample's `O` elements
/// innermost, so that the compiler vectorises along them and not across
/// the samples (gathers and scatters with AVX-512, slow on the cores that
/// have them).
#[inline(never)]
fn delta_and_bias<A: Activation, const O: usize>(
    deltas: &mut [SVector<f32, O>],
    ys: &[SVector<f32, O>],
    grad_bias: &mut [f32],
) {
    let mut gb = [0.0f32; O];
    for (g, &b) in gb.iter_mut().zip(grad_bias.iter()) {
        *g = b;
    }
    for (delta, y) in deltas.iter_mut().zip(ys) {
        let delta: &mut [f32; O] = &mut delta.data.0[0];
        let y: &[f32; O] = &y.data.0[0];
        for ((d, &yi), g) in delta.iter_mut().zip(y).zip(gb.iter_mut()) {
            *d *= A::derivative_from_output(yi);
            *g += *d;
        }
    }
    for (b, &g) in grad_bias.iter_mut().zip(&gb) {
        *b = g;
    }
}

#[cfg(not(target_arch = "arm"))]
/// `dx[m][j + c] = W[:, j + c] · δₘ` for `S` samples and the columns `c`
/// of `weight` (the last `I mod TRANSPOSED_COLUMNS` of the layer, from `j`
/// on), two columns at a time,
/// with `dot`'s 8 partial sums held as one 8-lane vector per sample and
/// column (lane `l` sums rows `i ≡ l mod 8`, as in `dot`): each 8-row piece of
/// `δₘ` is loaded once for both columns and each piece of a column once for
/// all `S` samples.
#[inline(always)]
fn dot_lanes<const I: usize, const O: usize, const S: usize>(
    weight: &[[f32; O]],
    mut j: usize,
    d: &[SVector<f32, O>],
    dx: &mut [SVector<f32, I>],
) {
    use super::dense::{LANES, combine};
    let d: [&[f32; O]; S] = core::array::from_fn(|m| &d[m].data.0[0]);
    let d8: [&[[f32; LANES]]; S] = core::array::from_fn(|m| d[m].as_chunks::<LANES>().0);
    let d_rest: [&[f32]; S] = core::array::from_fn(|m| d[m].as_chunks::<LANES>().1);
    let (pairs, last) = weight.as_chunks::<2>();
    for [c0, c1] in pairs {
        let mut a0 = [[0.0f32; LANES]; S];
        let mut a1 = [[0.0f32; LANES]; S];
        let (w0, w0_rest) = c0.as_chunks::<LANES>();
        let (w1, w1_rest) = c1.as_chunks::<LANES>();
        for (k, (w0, w1)) in w0.iter().zip(w1).enumerate() {
            for m in 0..S {
                // (Never `None`: `δₘ` and the columns both have `O / 8` pieces.)
                let Some(dm) = d8[m].get(k) else { return };
                for l in 0..LANES {
                    a0[m][l] += w0[l] * dm[l];
                    a1[m][l] += w1[l] * dm[l];
                }
            }
        }
        for m in 0..S {
            for (l, ((&x0, &x1), &y)) in w0_rest.iter().zip(w1_rest).zip(d_rest[m]).enumerate() {
                a0[m][l] += x0 * y;
                a1[m][l] += x1 * y;
            }
        }
        for (dx, (a0, a1)) in dx.iter_mut().zip(a0.iter().zip(&a1)) {
            dx[j] = combine(a0);
            dx[j + 1] = combine(a1);
        }
        j += 2;
    }
    // An odd `I` leaves one column.
    if let [column] = last {
        for (dx, dm) in dx.iter_mut().zip(d) {
            dx[j] = super::dense::dot(column, dm);
        }
    }
}

#[cfg(test)]
mod tests;
