//! Unit tests of `batch`.

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
        let ok = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(a, b)| a.to_bits() == b.to_bits());
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
    // Input gradients through blocks of 16 columns and the rest: 20
    // and 37 columns; rows per lane uneven (20 = 2·8 + 4, 37 = 4·8 + 5,
    // 3); odd sample counts.
    check::<Mlp<5, 20, 3>, 5, 3, 9>(10, 9);
    check::<Mlp<3, 37, 2>, 3, 2, 7>(11, 5);
    check::<Mlp1<2, 33, 19, Tanh>, 2, 19, 4>(12, 4);
}

/// The transposed weights kept in a batch follow the weights: a batch
/// that went through one network, then through another that differs in
/// one weight, gives that network's input gradients.
#[test]
fn kept_transposed_weights_follow_a_weight_change() {
    type N = Mlp<3, 24, 2>;
    let mut rng = fd::rng(13);
    let mut net = N::ZERO;
    fd::randomise(&mut net, &mut rng, 0.5);
    let mut xs = [SVector::<f32, 3>::zeros(); 5];
    for x in xs.iter_mut() {
        rng::fill_normal(&mut rng, x.as_mut_slice());
    }
    let d_ys = [SVector::<f32, 2>::new(0.7, -0.4); 5];
    let input_gradients = |net: &N, batch: &mut <N as Layer>::Batch<5>| {
        N::batch_inputs(batch).copy_from_slice(&xs);
        net.forward_batch(batch, 5);
        *N::batch_d_outputs(batch) = d_ys;
        let (mut grad, mut d_xs) = (N::ZERO, [SVector::<f32, 3>::zeros(); 5]);
        net.backward_batch(batch, 5, &mut grad, Some(&mut d_xs));
        d_xs
    };
    let mut kept = Box::new(<<N as Layer>::Batch<5> as Zeroed>::ZERO);
    let before = input_gradients(&net, &mut kept);
    // One weight of the 24 × 24 hidden layer (the one whose input
    // gradient goes through `dot_transposed`).
    let w = &mut net.tensor_mut(2)[5 * 24 + 17];
    *w = -*w + 0.25;
    let after = input_gradients(&net, &mut kept);
    let fresh = input_gradients(&net, &mut Box::new(Zeroed::ZERO));
    assert_ne!(before, after);
    assert_eq!(after, fresh);
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
