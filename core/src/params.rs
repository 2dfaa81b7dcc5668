//! Parameter containers: the one abstraction optimisers, gradient clipping and
//! serialisation need.
//!
//! A network, its gradient, and Adam's two moment estimates are four values of
//! the *same type*: a gradient is stored in a struct shaped exactly like the
//! parameters it belongs to (RLtools' "data separate from operations"). The
//! [`Params`] trait exposes such a struct as an ordered list of `f32` tensors,
//! each a contiguous slice, so that generic code can walk several same-shaped
//! structs in lock-step by tensor index — no allocation, no `unsafe`, no
//! reflection. Composite types (layers, chains, tuples, user structs) delegate
//! to their fields with [`impl_params!`](crate::impl_params).
//!
//! Every type has a `const ZERO`, so parameters, gradients and optimiser state
//! can be placed in `static`s on a microcontroller.

use nalgebra::{ArrayStorage, SMatrix};

/// Shape and meaning of one tensor, as recorded in the serialised header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TensorShape {
    /// Number of rows (output size for a weight matrix).
    pub rows: u32,
    /// Number of columns (input size for a weight matrix).
    pub cols: u32,
    /// What the tensor is: one of the [`tag`] constants, possibly combined
    /// with an activation id. Loading checks it, so a ReLU network cannot be
    /// loaded from a tanh network's weights of the same size.
    pub tag: u32,
}

/// Tensor kinds recorded in [`TensorShape::tag`].
pub mod tag {
    /// A plain matrix or vector with no further meaning.
    pub const PLAIN: u32 = 0;
    /// A dense layer's weight matrix; the low byte holds the activation id.
    pub const WEIGHT: u32 = 0x100;
    /// A dense layer's bias vector.
    pub const BIAS: u32 = 0x200;
    /// A Gaussian policy's state-independent `log_std`.
    pub const LOG_STD: u32 = 0x300;
    /// Running statistics (e.g. an observation normaliser's mean and variance).
    pub const STATISTICS: u32 = 0x400;
    /// Actuator bounds of a continuous action space (`low`, then `high`).
    pub const BOUNDS: u32 = 0x500;
}

/// A fixed-size collection of `f32` tensors.
///
/// Implementors list their tensors in a fixed order; [`tensor`](Params::tensor)
/// and [`tensor_mut`](Params::tensor_mut) return an empty slice for an index
/// `>= TENSORS`, so generic loops never panic.
pub trait Params: Sized {
    /// Number of tensors.
    const TENSORS: usize;
    /// Total number of scalars over all tensors.
    const LEN: usize;
    /// The all-zero value, usable in `const` and `static` initialisers.
    const ZERO: Self;

    /// Tensor `i` as a contiguous slice (column-major for matrices).
    fn tensor(&self, i: usize) -> &[f32];
    /// Tensor `i` as a mutable contiguous slice.
    fn tensor_mut(&mut self, i: usize) -> &mut [f32];
    /// Shape and kind of tensor `i` (a zero shape for `i >= TENSORS`).
    fn shape(i: usize) -> TensorShape;

    /// Sets every scalar to zero.
    fn set_zero(&mut self) {
        for i in 0..Self::TENSORS {
            self.tensor_mut(i).fill(0.0);
        }
    }

    /// Copies every scalar from `other`.
    fn copy_from(&mut self, other: &Self) {
        for i in 0..Self::TENSORS {
            self.tensor_mut(i).copy_from_slice(other.tensor(i));
        }
    }

    /// `self ← a · self`.
    fn scale(&mut self, a: f32) {
        for i in 0..Self::TENSORS {
            self.tensor_mut(i).iter_mut().for_each(|x| *x *= a);
        }
    }

    /// `self ← self + a · other` (BLAS `axpy`).
    fn add_scaled(&mut self, a: f32, other: &Self) {
        for i in 0..Self::TENSORS {
            for (x, &y) in self.tensor_mut(i).iter_mut().zip(other.tensor(i)) {
                *x += a * y;
            }
        }
    }

    /// Sum of squares of all scalars (the squared global L2 norm).
    fn norm_squared(&self) -> f32 {
        let mut sum = 0.0;
        for i in 0..Self::TENSORS {
            sum += self.tensor(i).iter().map(|x| x * x).sum::<f32>();
        }
        sum
    }

    /// `true` when no scalar is NaN or infinite.
    fn is_finite(&self) -> bool {
        (0..Self::TENSORS).all(|i| self.tensor(i).iter().all(|x| x.is_finite()))
    }

    /// Scalar `k` in the flat order used by serialisation (`None` past the end).
    fn get_flat(&self, mut k: usize) -> Option<f32> {
        for i in 0..Self::TENSORS {
            let t = self.tensor(i);
            if k < t.len() {
                return Some(t[k]);
            }
            k -= t.len();
        }
        None
    }

    /// Mutable scalar `k` in the flat order used by serialisation.
    fn get_flat_mut(&mut self, mut k: usize) -> Option<&mut f32> {
        for i in 0..Self::TENSORS {
            let len = self.tensor(i).len();
            if k < len {
                return self.tensor_mut(i).get_mut(k);
            }
            k -= len;
        }
        None
    }
}

impl<const R: usize, const C: usize> Params for SMatrix<f32, R, C> {
    const TENSORS: usize = 1;
    const LEN: usize = R * C;
    const ZERO: Self = SMatrix::from_array_storage(ArrayStorage([[0.0; R]; C]));

    #[inline]
    fn tensor(&self, i: usize) -> &[f32] {
        if i == 0 { self.as_slice() } else { &[] }
    }

    #[inline]
    fn tensor_mut(&mut self, i: usize) -> &mut [f32] {
        if i == 0 { self.as_mut_slice() } else { &mut [] }
    }

    fn shape(i: usize) -> TensorShape {
        if i == 0 {
            TensorShape {
                rows: R as u32,
                cols: C as u32,
                tag: tag::PLAIN,
            }
        } else {
            TensorShape {
                rows: 0,
                cols: 0,
                tag: tag::PLAIN,
            }
        }
    }
}

/// Implements [`Params`] for a struct whose fields all implement it, listing
/// the fields' tensors in declaration order.
///
/// ```
/// use microrl::{impl_params, Params, SVector};
/// use microrl::nn::{Dense, Tanh};
///
/// /// A linear critic with a learned scalar offset.
/// pub struct Critic {
///     pub layer: Dense<4, 1, Tanh>,
///     pub offset: SVector<f32, 1>,
/// }
/// impl_params!(impl[] Critic { layer: Dense<4, 1, Tanh>, offset: SVector<f32, 1> });
///
/// assert_eq!(Critic::LEN, 4 + 1 + 1);
/// assert_eq!(Critic::TENSORS, 3);
/// ```
///
/// Generic structs list their generic parameters between the brackets:
/// `impl_params!(impl[const N: usize] MyNet<N> { a: Dense<N, N>, b: Dense<N, 1> });`
#[macro_export]
macro_rules! impl_params {
    (impl[$($generics:tt)*] $ty:ty { $($field:ident : $fty:ty),+ $(,)? }) => {
        impl<$($generics)*> $crate::Params for $ty {
            const TENSORS: usize = 0 $(+ <$fty as $crate::Params>::TENSORS)+;
            const LEN: usize = 0 $(+ <$fty as $crate::Params>::LEN)+;
            const ZERO: Self = Self { $($field: <$fty as $crate::Params>::ZERO),+ };

            #[inline]
            fn tensor(&self, i: usize) -> &[f32] {
                let mut _i = i;
                $(
                    if _i < <$fty as $crate::Params>::TENSORS {
                        return $crate::Params::tensor(&self.$field, _i);
                    }
                    _i -= <$fty as $crate::Params>::TENSORS;
                )+
                &[]
            }

            #[inline]
            fn tensor_mut(&mut self, i: usize) -> &mut [f32] {
                let mut _i = i;
                $(
                    if _i < <$fty as $crate::Params>::TENSORS {
                        return $crate::Params::tensor_mut(&mut self.$field, _i);
                    }
                    _i -= <$fty as $crate::Params>::TENSORS;
                )+
                &mut []
            }

            fn shape(i: usize) -> $crate::TensorShape {
                let mut _i = i;
                $(
                    if _i < <$fty as $crate::Params>::TENSORS {
                        return <$fty as $crate::Params>::shape(_i);
                    }
                    _i -= <$fty as $crate::Params>::TENSORS;
                )+
                $crate::TensorShape { rows: 0, cols: 0, tag: $crate::params::tag::PLAIN }
            }
        }
    };
}

/// A pair of parameter sets serialised and optimised as one (e.g. actor and critic).
#[derive(Clone, Debug, PartialEq)]
pub struct Pair<A, B> {
    /// First member.
    pub a: A,
    /// Second member.
    pub b: B,
}

impl_params!(impl[A: Params, B: Params] Pair<A, B> { a: A, b: B });

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::SVector;

    type Two = Pair<SMatrix<f32, 2, 3>, SVector<f32, 4>>;

    fn counting() -> Two {
        let mut p = Two::ZERO;
        for k in 0..Two::LEN {
            *p.get_flat_mut(k).unwrap() = k as f32;
        }
        p
    }

    #[test]
    fn composite_layout() {
        assert_eq!(Two::TENSORS, 2);
        assert_eq!(Two::LEN, 10);
        assert_eq!(
            Two::shape(0),
            TensorShape {
                rows: 2,
                cols: 3,
                tag: tag::PLAIN
            }
        );
        assert_eq!(
            Two::shape(1),
            TensorShape {
                rows: 4,
                cols: 1,
                tag: tag::PLAIN
            }
        );
        assert_eq!(Two::shape(2).rows, 0);
        let p = counting();
        assert_eq!(p.tensor(1), &[6.0, 7.0, 8.0, 9.0]);
        assert!(p.tensor(2).is_empty());
        assert_eq!(p.get_flat(9), Some(9.0));
        assert_eq!(p.get_flat(10), None);
    }

    #[test]
    fn vector_ops() {
        let mut p = counting();
        let q = counting();
        p.add_scaled(-1.0, &q);
        assert_eq!(p.norm_squared(), 0.0);
        p.copy_from(&q);
        p.scale(2.0);
        assert_eq!(p.get_flat(3), Some(6.0));
        assert_eq!(
            q.norm_squared(),
            (0..10).map(|k| (k * k) as f32).sum::<f32>()
        );
        assert!(p.is_finite());
        *p.get_flat_mut(4).unwrap() = f32::NAN;
        assert!(!p.is_finite());
        p.set_zero();
        assert!(p == Two::ZERO);
    }
}
