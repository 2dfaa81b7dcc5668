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
//!
//! Some tensors have a *domain* narrower than "any finite `f32`": a
//! normaliser's variance and count are `≥ 0`, a Gaussian's `log_std` lies in
//! [`LOG_STD_MIN`](crate::policy::LOG_STD_MIN)`..=`[`LOG_STD_MAX`](crate::policy::LOG_STD_MAX),
//! actuator bounds have `low ≤ high`. A type states its domain in
//! [`Params::check_values`] (the default accepts everything), which reads the
//! candidate values through [`TensorData`] views — so
//! [`serialize::load`](crate::serialize::load) checks a blob's payload *in
//! place*, before writing a single scalar and without a temporary copy of the
//! destination.

use nalgebra::{ArrayStorage, SMatrix};

use crate::error::Error;

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

/// Read-only view of one tensor's candidate values: either `f32`s in memory
/// or the little-endian `f32`s of a blob's payload, read without copying.
///
/// [`Params::check_values`] receives one of these per tensor.
#[derive(Clone, Copy, Debug)]
pub struct TensorData<'a>(Repr<'a>);

#[derive(Clone, Copy, Debug)]
enum Repr<'a> {
    Floats(&'a [f32]),
    LeBytes(&'a [u8]),
}

impl<'a> TensorData<'a> {
    /// A view of values in memory.
    pub const fn from_slice(values: &'a [f32]) -> Self {
        Self(Repr::Floats(values))
    }

    /// A view of consecutive little-endian `f32`s (a trailing partial value,
    /// which a checked blob never has, is ignored).
    pub const fn from_le_bytes(bytes: &'a [u8]) -> Self {
        Self(Repr::LeBytes(bytes))
    }

    /// Number of values.
    pub const fn len(&self) -> usize {
        match self.0 {
            Repr::Floats(v) => v.len(),
            Repr::LeBytes(b) => b.len() / 4,
        }
    }

    /// `true` when the view holds no value.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `k` (`None` past the end).
    pub fn get(&self, k: usize) -> Option<f32> {
        match self.0 {
            Repr::Floats(v) => v.get(k).copied(),
            Repr::LeBytes(b) => {
                let at = k.checked_mul(4)?;
                let c = b.get(at..at.checked_add(4)?)?;
                Some(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            }
        }
    }

    /// The values in order.
    pub fn iter(&self) -> impl Iterator<Item = f32> + 'a {
        let this = *self;
        (0..this.len()).filter_map(move |k| this.get(k))
    }
}

/// `Err(`[`Error::OutOfDomain`]`)` naming tensor `tensor` (saturated to
/// `u32::MAX`) and `reason` — for [`Params::check_values`] implementations.
pub fn out_of_domain(tensor: usize, reason: &'static str) -> Result<(), Error> {
    Err(Error::OutOfDomain {
        tensor: u32::try_from(tensor).unwrap_or(u32::MAX),
        reason,
    })
}

/// Tensors whose sums of squares [`Params::norm_squared`] keeps at once on
/// a desktop (more go one at a time, with the same bits).
#[cfg(not(target_arch = "arm"))]
const NORM_TENSORS: usize = 64;

/// [`Params::norm_squared`] for at most [`NORM_TENSORS`] tensors, tensor
/// `i`'s chain interleaved with tensor `i + ⌈TENSORS/2⌉`'s.
#[cfg(not(target_arch = "arm"))]
fn norm_squared_paired<P: Params>(p: &P) -> f32 {
    let tensors = P::TENSORS.min(NORM_TENSORS);
    let mut sums = [0.0f32; NORM_TENSORS];
    let half = tensors.div_ceil(2);
    for i in 0..half {
        let j = i + half;
        let other = if j < tensors { p.tensor(j) } else { &[] };
        let (si, sj) = sum_of_squares(p.tensor(i), other);
        sums[i] = si;
        if let Some(s) = sums.get_mut(j) {
            *s = sj;
        }
    }
    let mut sum = 0.0;
    for &s in &sums[..tensors] {
        sum += s;
    }
    sum
}

/// `(Σ aₖ², Σ bₖ²)`, each summed in order from `-0.0` (as
/// `Iterator::sum`), the two chains interleaved.
#[cfg(not(target_arch = "arm"))]
#[inline]
fn sum_of_squares(a: &[f32], b: &[f32]) -> (f32, f32) {
    let (mut sa, mut sb) = (-0.0f32, -0.0f32);
    let n = a.len().min(b.len());
    let ((a, a_rest), (b, b_rest)) = (a.split_at(n), b.split_at(n));
    for (&x, &y) in a.iter().zip(b) {
        sa += x * x;
        sb += y * y;
    }
    for &x in a_rest {
        sa += x * x;
    }
    for &y in b_rest {
        sb += y * y;
    }
    (sa, sb)
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

    /// `Σₖ selfₖ · otherₖ` over every scalar, summed in flat order.
    fn dot(&self, other: &Self) -> f32 {
        let mut sum = 0.0;
        for i in 0..Self::TENSORS {
            for (&x, &y) in self.tensor(i).iter().zip(other.tensor(i)) {
                sum += x * y;
            }
        }
        sum
    }

    /// Sum of squares of all scalars (the squared global L2 norm): each
    /// tensor's squares summed in order from `-0.0` (as `Iterator::sum`),
    /// then the tensors' sums added in order from `0.0`.
    ///
    /// A tensor's sum is one chain of dependent additions, so on an
    /// out-of-order desktop core its time is the adder's latency per scalar;
    /// the tensors' chains are independent, so there tensor `i` is summed
    /// side by side with tensor `i + ⌈TENSORS/2⌉` (for an actor and a critic
    /// in one state, each layer with its counterpart), which halves the time
    /// with the same bits. A Cortex-M's in-order FPU gains nothing from that,
    /// so on 32-bit ARM the tensors go one at a time (no scratch on the
    /// firmware's stack).
    fn norm_squared(&self) -> f32 {
        #[cfg(not(target_arch = "arm"))]
        if Self::TENSORS <= NORM_TENSORS {
            return norm_squared_paired(self);
        }
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

    /// Checks that candidate values for this type lie in its domain, before
    /// anyone writes them. `tensor(first + i)` is the view of the candidate
    /// for this type's tensor `i` (`first` is where this type's tensors start
    /// in an enclosing value, so that errors name the tensor's index in the
    /// whole blob). [`serialize::load`](crate::serialize::load) and
    /// [`serialize::save`](crate::serialize::save) call it only on finite
    /// values; write the checks so that NaN fails them anyway (`x >= 0.0`,
    /// not `!(x < 0.0)`).
    ///
    /// The default accepts every value (weights, biases, means). Types with
    /// a narrower domain override it: [`RunningNorm`](crate::normalize::RunningNorm)
    /// (variance and count `≥ 0`), [`Gaussian`](crate::policy::Gaussian)
    /// (`log_std` within [`LOG_STD_MIN`](crate::policy::LOG_STD_MIN)`..=`[`LOG_STD_MAX`](crate::policy::LOG_STD_MAX)),
    /// [`Continuous`](crate::env::Continuous) (`low ≤ high`); composites made
    /// with [`impl_params!`](crate::impl_params) ask each field in turn.
    ///
    /// # Errors
    /// [`Error::OutOfDomain`] naming the first offending tensor (see
    /// [`out_of_domain`]).
    fn check_values<'a>(
        first: usize,
        tensor: &dyn Fn(usize) -> TensorData<'a>,
    ) -> Result<(), Error> {
        let _ = (first, tensor);
        Ok(())
    }

    /// [`check_values`](Params::check_values) on this value's own tensors:
    /// `Ok(())` when every tensor lies in its domain.
    ///
    /// # Errors
    /// [`Error::OutOfDomain`] naming the first offending tensor.
    fn check_domain(&self) -> Result<(), Error> {
        Self::check_values(0, &|i| TensorData::from_slice(self.tensor(i)))
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

            fn check_values<'a>(
                first: usize,
                tensor: &dyn Fn(usize) -> $crate::params::TensorData<'a>,
            ) -> ::core::result::Result<(), $crate::Error> {
                let mut _first = first;
                $(
                    <$fty as $crate::Params>::check_values(_first, tensor)?;
                    _first += <$fty as $crate::Params>::TENSORS;
                )+
                ::core::result::Result::Ok(())
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
    use crate::nn::Mlp;
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
    fn tensor_data_reads_floats_and_le_bytes_alike() {
        let values = [1.5f32, -0.0, f32::MAX];
        let mut bytes = [0u8; 13]; // 3 values + 1 stray byte, ignored
        for (c, v) in bytes.chunks_exact_mut(4).zip(values) {
            c.copy_from_slice(&v.to_le_bytes());
        }
        for view in [
            TensorData::from_slice(&values),
            TensorData::from_le_bytes(&bytes),
        ] {
            assert_eq!(view.len(), 3);
            assert!(!view.is_empty());
            assert_eq!(view.get(2), Some(f32::MAX));
            assert_eq!(view.get(3), None);
            assert_eq!(view.get(usize::MAX), None);
            assert!(view.iter().map(f32::to_bits).eq(values.map(f32::to_bits)));
        }
        assert!(TensorData::from_le_bytes(&bytes[..3]).is_empty());
    }

    /// A leaf with a domain, to check that composites ask every field with
    /// the right tensor offset.
    #[derive(Clone, Debug, PartialEq)]
    struct Positive(SVector<f32, 2>);

    impl Params for Positive {
        const TENSORS: usize = 1;
        const LEN: usize = 2;
        const ZERO: Self = Positive(<SVector<f32, 2> as Params>::ZERO);
        fn tensor(&self, i: usize) -> &[f32] {
            self.0.tensor(i)
        }
        fn tensor_mut(&mut self, i: usize) -> &mut [f32] {
            self.0.tensor_mut(i)
        }
        fn shape(i: usize) -> TensorShape {
            <SVector<f32, 2> as Params>::shape(i)
        }
        fn check_values<'a>(
            first: usize,
            tensor: &dyn Fn(usize) -> TensorData<'a>,
        ) -> Result<(), Error> {
            if tensor(first).iter().all(|x| x > 0.0) {
                Ok(())
            } else {
                out_of_domain(first, "must be > 0")
            }
        }
    }

    #[test]
    fn composites_check_every_field_at_its_offset() {
        type Nested = Pair<Two, Pair<Positive, Positive>>;
        let mut p = Nested::ZERO;
        // Plain tensors accept anything, even zero and negative values.
        p.a.a.fill(-1.0);
        p.b.a.0.fill(1.0);
        p.b.b.0.fill(2.0);
        assert_eq!(p.check_domain(), Ok(()));
        p.b.b.0[1] = 0.0;
        assert_eq!(
            p.check_domain(),
            Err(Error::OutOfDomain {
                tensor: 3,
                reason: "must be > 0"
            })
        );
        p.b.a.0[0] = -1.0;
        assert!(matches!(
            p.check_domain(),
            Err(Error::OutOfDomain { tensor: 2, .. })
        ));
        assert_eq!(
            out_of_domain(usize::MAX, "x"),
            Err(Error::OutOfDomain {
                tensor: u32::MAX,
                reason: "x"
            })
        );
    }

    /// `norm_squared` is the plain order — each tensor's `Iterator::sum` of
    /// squares, then the tensors' sums in order — bit for bit, for states
    /// of an even (6, 12), an odd (7) and a large (72) number of tensors of
    /// unequal lengths, with values over many magnitudes and signed zeros.
    #[test]
    fn norm_squared_is_the_plain_sum_bit_for_bit() {
        fn plain<P: Params>(p: &P) -> f32 {
            let mut sum = 0.0;
            for i in 0..P::TENSORS {
                sum += p.tensor(i).iter().map(|x| x * x).sum::<f32>();
            }
            sum
        }
        type Both = Pair<Mlp<4, 16, 2>, Mlp<4, 16, 1>>;
        // 7 tensors: the middle one has no partner.
        type Odd = Pair<Mlp<5, 11, 3>, SVector<f32, 4>>;
        let mut rng = crate::nn::fd::rng(3);
        let mut one = Mlp::<5, 11, 3>::ZERO;
        let mut pair = <Both as Params>::ZERO;
        let mut odd = <Odd as Params>::ZERO;
        assert_eq!(Odd::TENSORS, 7);
        for round in 0..200 {
            crate::nn::fd::randomise(&mut one, &mut rng, 1.0 + round as f32);
            crate::nn::fd::randomise(&mut pair, &mut rng, 1e-3 * round as f32);
            crate::nn::fd::randomise(&mut odd, &mut rng, 1e3 / (1.0 + round as f32));
            assert_eq!(odd.norm_squared().to_bits(), plain(&odd).to_bits());
            if round % 3 == 0
                && let Some(x) = one.get_flat_mut(round % 50)
            {
                *x = -0.0;
            }
            assert_eq!(one.norm_squared().to_bits(), plain(&one).to_bits());
            assert_eq!(pair.norm_squared().to_bits(), plain(&pair).to_bits());
        }
        assert_eq!(
            Mlp::<5, 11, 3>::ZERO.norm_squared().to_bits(),
            0.0f32.to_bits()
        );
        // More tensors than the paired pass keeps: one at a time, every one.
        type Four = Pair<Pair<Mlp<2, 3, 1>, Mlp<2, 3, 1>>, Pair<Mlp<2, 3, 1>, Mlp<2, 3, 1>>>;
        type Many = Pair<Four, Pair<Four, Four>>;
        const { assert!(Many::TENSORS > 64) };
        let mut many = <Many as Params>::ZERO;
        crate::nn::fd::randomise(&mut many, &mut rng, 1.0);
        assert_eq!(many.norm_squared().to_bits(), plain(&many).to_bits());
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
