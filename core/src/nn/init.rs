//! Orthogonal initialisation (Saxe et al., 2014), as used by SB3 and CleanRL.
//!
//! A matrix is filled with standard normal variates and its columns (if it is
//! tall) or rows (if it is wide) are orthonormalised in place by modified
//! Gram–Schmidt, run twice ("twice is enough", Giraud et al. 2005) for
//! orthogonality to f32 precision. This is the `Q` factor of a QR decomposition
//! with a positive diagonal `R`, i.e. a Haar-distributed orthogonal matrix, the
//! same distribution as `torch.nn.init.orthogonal_`. It then is scaled by the
//! gain. In place, with no scratch matrix: initialising a 64 × 64 layer on an
//! MCU needs no extra 16 KiB of stack.

use nalgebra::SMatrix;
use rand_core::Rng;

use crate::{math, rng};

/// SB3/CleanRL gains for [`Layer::init_orthogonal`](super::Layer::init_orthogonal).
pub mod gain {
    /// Hidden layers of tanh/ReLU networks: `√2`.
    pub const HIDDEN: f32 = core::f32::consts::SQRT_2;
    /// The policy head: small, so the initial policy is near-uniform.
    pub const POLICY: f32 = 0.01;
    /// The value head.
    pub const VALUE: f32 = 1.0;
}

/// Overwrites `m` with a random (semi-)orthogonal matrix scaled by `gain`.
///
/// For `R ≥ C` the columns are orthonormal (`mᵀm = gain²·I`), otherwise the
/// rows are (`m mᵀ = gain²·I`).
pub fn orthogonal<const R: usize, const C: usize, G: Rng + ?Sized>(
    m: &mut SMatrix<f32, R, C>,
    gain: f32,
    rng: &mut G,
) {
    rng::fill_normal(rng, m.as_mut_slice());
    orthonormalize(m.as_mut_slice(), R, C, gain);
}

/// Gram–Schmidt on a column-major `rows × cols` matrix in `data`, then the
/// gain. Deliberately not generic over the shape: initialisation is cold code,
/// and one copy for every layer size keeps it small in flash (a
/// const-generic version is unrolled per shape, several KB each on an MCU).
#[inline(never)]
fn orthonormalize(data: &mut [f32], rows: usize, cols: usize, gain: f32) {
    // Column-major storage: element (r, c) lives at c·rows + r.
    // Orthonormalise `count` vectors of length `len`, vector k element t at index(k, t).
    let (count, len, tall) = if rows >= cols {
        (cols, rows, true)
    } else {
        (rows, cols, false)
    };
    let index = |k: usize, t: usize| if tall { k * rows + t } else { t * rows + k };
    for k in 0..count {
        for _pass in 0..2 {
            for j in 0..k {
                let mut dot = 0.0;
                for t in 0..len {
                    dot += data[index(k, t)] * data[index(j, t)];
                }
                for t in 0..len {
                    data[index(k, t)] -= dot * data[index(j, t)];
                }
            }
        }
        let mut norm_sq = 0.0;
        for t in 0..len {
            norm_sq += data[index(k, t)] * data[index(k, t)];
        }
        // A Gaussian draw is linearly dependent on the previous vectors with
        // probability zero; the guard only keeps a degenerate RNG from dividing by 0.
        let scale = if norm_sq > 0.0 {
            1.0 / math::sqrt(norm_sq)
        } else {
            0.0
        };
        for t in 0..len {
            data[index(k, t)] *= scale;
        }
    }
    data.iter_mut().for_each(|x| *x *= gain);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::fd;

    fn max_deviation_from_scaled_identity<const N: usize>(
        g: &SMatrix<f32, N, N>,
        gain: f32,
    ) -> f32 {
        let mut worst = 0.0f32;
        for i in 0..N {
            for j in 0..N {
                let target = if i == j { gain * gain } else { 0.0 };
                worst = worst.max((g[(i, j)] - target).abs());
            }
        }
        worst
    }

    #[test]
    fn tall_matrix_has_orthonormal_columns() {
        let mut m = SMatrix::<f32, 64, 4>::zeros();
        orthogonal(&mut m, 2.0, &mut fd::rng(1));
        let gram = m.transpose() * m;
        let dev = max_deviation_from_scaled_identity(&gram, 2.0);
        assert!(dev < 1e-5, "deviation {dev:e}");
    }

    #[test]
    fn wide_matrix_has_orthonormal_rows() {
        let mut m = SMatrix::<f32, 2, 64>::zeros();
        orthogonal(&mut m, 0.01, &mut fd::rng(2));
        let gram = m * m.transpose();
        let dev = max_deviation_from_scaled_identity(&gram, 0.01);
        assert!(dev < 1e-8, "deviation {dev:e}");
    }

    #[test]
    fn square_matrix_is_orthogonal() {
        let mut m = SMatrix::<f32, 64, 64>::zeros();
        orthogonal(&mut m, gain::HIDDEN, &mut fd::rng(3));
        let gram = m.transpose() * m;
        let dev = max_deviation_from_scaled_identity(&gram, gain::HIDDEN);
        assert!(dev < 1e-5, "deviation {dev:e}");
        let gram = m * m.transpose();
        let dev = max_deviation_from_scaled_identity(&gram, gain::HIDDEN);
        assert!(dev < 1e-5, "deviation {dev:e}");
    }

    #[test]
    fn seeded_and_not_constant() {
        let mut a = SMatrix::<f32, 8, 8>::zeros();
        let mut b = SMatrix::<f32, 8, 8>::zeros();
        orthogonal(&mut a, 1.0, &mut fd::rng(4));
        orthogonal(&mut b, 1.0, &mut fd::rng(4));
        assert_eq!(a, b);
        orthogonal(&mut b, 1.0, &mut fd::rng(5));
        assert_ne!(a, b);
    }
}
