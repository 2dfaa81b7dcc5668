//! Finite-difference gradient checking against an `f64` reference (tests only).
//!
//! The analytic gradient is computed in `f32` by the code under test; the
//! numerical one by central differences of an independent `f64` forward pass
//! ([`Layer::reference_forward`]), so neither rounding nor a shared bug in the
//! forward pass can make them agree by accident.

extern crate std;
use std::vec::Vec;

use nalgebra::SVector;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

use super::Layer;
use crate::params::Params;
use crate::rng;

/// Relative error threshold required by the test-suite.
pub const TOLERANCE: f64 = 1e-3;

/// A seeded test generator.
pub fn rng(seed: u64) -> Xoshiro128PlusPlus {
    Xoshiro128PlusPlus::seed_from_u64(seed)
}

/// Fills every parameter with `scale · N(0, 1)`.
pub fn randomise<P: Params>(p: &mut P, rng: &mut Xoshiro128PlusPlus, scale: f32) {
    for i in 0..P::TENSORS {
        rng::fill_normal(rng, p.tensor_mut(i));
        p.tensor_mut(i).iter_mut().for_each(|x| *x *= scale);
    }
}

/// Gives every bias (and vector tensor) small random values, so that bias
/// gradients are exercised away from the zero initialisation.
pub fn randomise_biases<P: Params>(p: &mut P, rng: &mut Xoshiro128PlusPlus) {
    for i in 0..P::TENSORS {
        if P::shape(i).cols == 1 {
            for x in p.tensor_mut(i) {
                *x = 0.2 * rng::normal_pair(rng).0;
            }
        }
    }
}

/// Asserts that `a` and `b` hold the same bits in every tensor (`what`
/// names the comparison in the failure message).
pub fn assert_same_bits<P: Params>(a: &P, b: &P, what: &str) {
    for t in 0..P::TENSORS {
        let same = a
            .tensor(t)
            .iter()
            .zip(b.tensor(t))
            .all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(same, "{what}: tensor {t} differs");
    }
}

/// Flat `f64` copy of the parameters.
pub fn flatten<P: Params>(p: &P) -> Vec<f64> {
    (0..P::LEN).map(|k| p.get_flat(k).unwrap() as f64).collect()
}

/// Central difference `∂f/∂θ_k` for every `k`, in `f64`.
pub fn numerical_gradient(theta: &[f64], f: impl Fn(&[f64]) -> f64) -> Vec<f64> {
    let mut work = theta.to_vec();
    (0..theta.len())
        .map(|k| {
            let h = 1e-6 * theta[k].abs().max(1.0);
            work[k] = theta[k] + h;
            let plus = f(&work);
            work[k] = theta[k] - h;
            let minus = f(&work);
            work[k] = theta[k];
            (plus - minus) / (2.0 * h)
        })
        .collect()
}

/// Asserts `‖analytic − numeric‖ / ‖numeric‖ < TOLERANCE` and, per component,
/// `|aₖ − nₖ| < TOLERANCE · max(|nₖ|, 1e-2·max|n|)`.
pub fn assert_close(what: &str, analytic: &[f64], numeric: &[f64]) {
    assert_eq!(analytic.len(), numeric.len());
    let norm = numeric.iter().map(|x| x * x).sum::<f64>().sqrt();
    let diff = analytic
        .iter()
        .zip(numeric)
        .map(|(a, n)| (a - n) * (a - n))
        .sum::<f64>()
        .sqrt();
    assert!(norm > 0.0, "{what}: numerical gradient is identically zero");
    assert!(
        diff / norm < TOLERANCE,
        "{what}: relative error {:e}",
        diff / norm
    );
    let floor = 1e-2 * numeric.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    for (k, (a, n)) in analytic.iter().zip(numeric).enumerate() {
        let err = (a - n).abs() / n.abs().max(floor);
        assert!(
            err < TOLERANCE,
            "{what}[{k}]: analytic {a:e} vs numerical {n:e}"
        );
    }
}

/// Checks [`Layer::backward`] for the loss `L = c · y(θ, x)` with a random `c`:
/// both `∂L/∂θ` and `∂L/∂x`.
pub fn check_layer<L, const I: usize, const O: usize>(
    layer: &L,
    x: &SVector<f32, I>,
    rng: &mut Xoshiro128PlusPlus,
) where
    L: Layer<Input = SVector<f32, I>, Output = SVector<f32, O>>,
{
    let mut c = SVector::<f32, O>::zeros();
    rng::fill_normal(rng, c.as_mut_slice());

    let mut cache = L::ZERO_CACHE;
    let mut grad = L::ZERO;
    layer.forward_train(x, &mut cache);
    let d_input = layer.backward(&cache, &c, &mut grad);

    let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let c64: Vec<f64> = c.iter().map(|&v| v as f64).collect();
    let loss = |theta: &[f64], input: &[f64]| -> f64 {
        L::reference_forward(theta, input)
            .iter()
            .zip(&c64)
            .map(|(y, c)| y * c)
            .sum()
    };
    let theta = flatten(layer);
    assert_eq!(theta.len(), L::LEN);

    let numeric = numerical_gradient(&theta, |t| loss(t, &x64));
    assert_close("dL/dθ", &flatten(&grad), &numeric);

    let numeric_x = numerical_gradient(&x64, |input| loss(&theta, input));
    let analytic_x: Vec<f64> = d_input.iter().map(|&v| v as f64).collect();
    assert_close("dL/dx", &analytic_x, &numeric_x);

    // Forward mode: `jvp` along a random parameter and input direction
    // equals the central difference of the f64 forward pass along it.
    let mut d_params = L::ZERO;
    randomise(&mut d_params, rng, 1.0);
    let mut dx = SVector::<f32, I>::zeros();
    rng::fill_normal(rng, dx.as_mut_slice());
    let analytic_jvp: Vec<f64> = layer
        .jvp(&cache, &d_params, &dx)
        .iter()
        .map(|&v| v as f64)
        .collect();
    let v64 = flatten(&d_params);
    let dx64: Vec<f64> = dx.iter().map(|&v| v as f64).collect();
    let along = |t: f64| {
        let th: Vec<f64> = theta.iter().zip(&v64).map(|(a, b)| a + t * b).collect();
        let xi: Vec<f64> = x64.iter().zip(&dx64).map(|(a, b)| a + t * b).collect();
        L::reference_forward(&th, &xi)
    };
    let h = 1e-6;
    let numeric_jvp: Vec<f64> = along(h)
        .iter()
        .zip(along(-h))
        .map(|(p, m)| (p - m) / (2.0 * h))
        .collect();
    assert_close("J·v", &analytic_jvp, &numeric_jvp);

    // The f64 reference and the f32 forward pass agree.
    let y32 = layer.forward(x);
    for (a, b) in y32.iter().zip(L::reference_forward(&theta, &x64)) {
        assert!((*a as f64 - b).abs() < 1e-4 * b.abs().max(1.0));
    }
}
