//! Optimisers, gradient clipping, schedules and the training-state bundle.
//!
//! Optimiser state is stored in values of the parameter type itself (Adam's
//! `m` and `v` are two more copies of the network), walked tensor by tensor
//! through [`Params`]; nothing is allocated and nothing is sized at run time.
//!
//! Every update first checks its inputs (finite gradients, a valid learning
//! rate) and only then writes, so a NaN gradient from a bad sample returns
//! [`Error::NonFinite`] and leaves the parameters and moments as they were.

mod adam;
mod clip;
mod schedule;
mod sgd;

pub use adam::{Adam, AdamConfig};
pub use clip::clip_grad_norm;
pub use schedule::Schedule;
pub use sgd::Sgd;

use crate::error::Error;
use crate::params::Params;

/// A first-order optimiser over parameters of type `P`.
pub trait Optimizer<P: Params> {
    /// Applies one update to `params` from `grads` with learning rate `lr`.
    ///
    /// # Errors
    /// [`Error::NonFinite`] if a gradient is NaN or infinite, and
    /// [`Error::InvalidConfig`] if `lr` is negative or not finite; `params`
    /// and the optimiser state are unchanged in both cases.
    fn step(&mut self, params: &mut P, grads: &P, lr: f32) -> Result<(), Error>;

    /// Forgets accumulated state (moments, step count).
    fn reset(&mut self);
}

/// Everything needed to train one set of parameters: the parameters, a
/// gradient accumulator of the same shape and the optimiser's state.
///
/// The inference-only copy is `params` alone; the rest is training memory.
/// `TrainState<P>` with Adam holds four copies of `P`.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainState<P, O = Adam<P>> {
    /// The parameters being trained.
    pub params: P,
    /// Gradient accumulator (summed by `backward`, cleared by [`zero_grad`](Self::zero_grad)).
    pub grads: P,
    /// The optimiser and its state.
    pub optimizer: O,
}

impl<P: Params> TrainState<P, Adam<P>> {
    /// Zeroed parameters, gradients and Adam moments, usable in `static`s.
    /// Initialise `params` afterwards (e.g. with `init_orthogonal`).
    pub const fn new(config: AdamConfig) -> Self {
        Self {
            params: P::ZERO,
            grads: P::ZERO,
            optimizer: Adam::new(config),
        }
    }

    /// After a checkpoint's load: Adam's settings are the configuration's
    /// (configuration, not saved state: the moments are), the gradient
    /// accumulator is cleared.
    pub fn resume_with(&mut self, adam: AdamConfig) {
        self.optimizer.config = adam;
        self.zero_grad();
    }

    /// The parameters [`apply`](Self::apply)`(lr, None)` would leave, written
    /// into `out` ([`Adam::staged`]); nothing of the state changes. An
    /// `apply(lr, None)` from the same state writes these bits into
    /// `params`, and cannot refuse once this succeeded.
    ///
    /// # Errors
    /// As [`apply`](Self::apply); `out` is then not written.
    pub fn staged(&self, lr: f32, out: &mut P) -> Result<(), Error> {
        self.optimizer.staged(&self.params, &self.grads, lr, out)
    }

    /// `Ok(())` exactly when [`apply`](Self::apply)`(lr, None)` would
    /// succeed: a valid `lr` and Adam configuration and a usable gradient.
    /// Lets an update check all its optimiser steps before it takes any.
    ///
    /// # Errors
    /// The error `apply(lr, None)` would return; nothing changes.
    pub fn check_step(&self, lr: f32) -> Result<(), Error> {
        check_lr(lr)?;
        check_gradient(&self.grads)?;
        self.optimizer.config.validate()
    }
}

impl<P: Params, O: Optimizer<P>> TrainState<P, O> {
    /// Clears the gradient accumulator.
    pub fn zero_grad(&mut self) {
        self.grads.set_zero();
    }

    /// Optionally clips the accumulated gradient to a global L2 norm of
    /// `max_grad_norm`, then takes one optimiser step. Returns the gradient
    /// norm before clipping.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for a NaN/infinite gradient,
    /// [`Error::GradientOverflow`] for a component beyond [`MAX_GRADIENT`],
    /// [`Error::InvalidConfig`] for a bad `lr` or `max_grad_norm`; the
    /// parameters and the optimiser state are unchanged.
    pub fn apply(&mut self, lr: f32, max_grad_norm: Option<f32>) -> Result<f32, Error> {
        check_lr(lr)?;
        check_gradient(&self.grads)?;
        let norm = match max_grad_norm {
            Some(max_norm) => clip_grad_norm(&mut self.grads, max_norm)?,
            None => crate::math::sqrt(self.grads.norm_squared()),
        };
        self.optimizer.step(&mut self.params, &self.grads, lr)?;
        Ok(norm)
    }
}

/// The largest gradient component an optimiser accepts. Beyond it `g²` (and
/// with it Adam's second moment or a global gradient norm over up to 10⁸
/// parameters) could overflow `f32` and silently freeze the weights it
/// touches; real gradients are many orders of magnitude smaller.
pub const MAX_GRADIENT: f32 = 1e15;

/// Checks a gradient before anything is applied: every component finite and
/// within [`MAX_GRADIENT`], so no moment, norm or parameter can overflow.
///
/// # Errors
/// [`Error::NonFinite`] for a NaN or infinite component,
/// [`Error::GradientOverflow`] for one beyond [`MAX_GRADIENT`].
pub fn check_gradient<P: Params>(grads: &P) -> Result<(), Error> {
    // Fast path, one branch-free pass the compiler vectorises: the largest
    // |g| as bits (for non-negative floats the bit patterns order like the
    // values, and NaN and ∞ lie above every finite one).
    let mut max_abs_bits = 0u32;
    for i in 0..P::TENSORS {
        for &g in grads.tensor(i) {
            max_abs_bits = max_abs_bits.max(g.abs().to_bits());
        }
    }
    if max_abs_bits <= MAX_GRADIENT.to_bits() {
        return Ok(());
    }
    // Something is wrong: the first offending component names the error.
    for i in 0..P::TENSORS {
        for &g in grads.tensor(i) {
            if !g.is_finite() {
                return Err(Error::NonFinite);
            }
            if g.abs() > MAX_GRADIENT {
                return Err(Error::GradientOverflow);
            }
        }
    }
    Ok(())
}

/// The largest learning rate an optimiser accepts. With gradients bounded
/// by [`MAX_GRADIENT`], an SGD step then moves a parameter by at most 1e18
/// and an Adam step by a small multiple of the learning rate, so no finite
/// parameter can be pushed to infinity by one step.
pub const MAX_LEARNING_RATE: f32 = 1e3;

/// `Ok(())` for a learning rate in `[0, MAX_LEARNING_RATE]`.
///
/// # Errors
/// `InvalidConfig { field: "learning_rate", .. }` otherwise.
pub fn check_lr(lr: f32) -> Result<(), Error> {
    if lr.is_finite() && (0.0..=MAX_LEARNING_RATE).contains(&lr) {
        Ok(())
    } else {
        Err(Error::config(
            "learning_rate",
            "must be finite and in [0, 1e3]",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::{Layer, Mlp, fd, gain};
    use nalgebra::SVector;

    type Net = Mlp<4, 64, 2>;

    /// Training state can be a `static` (`const fn new`, `const ZERO`).
    static STATIC_STATE: TrainState<Mlp<4, 8, 2>> = TrainState::new(AdamConfig::DEFAULT);

    #[test]
    fn training_state_can_be_static() {
        assert_eq!(STATIC_STATE.optimizer.t, 0);
        assert_eq!(STATIC_STATE.params.norm_squared(), 0.0);
    }

    #[test]
    fn resuming_takes_the_configured_adam_and_clears_the_gradient() {
        let mut state = TrainState::<Mlp<4, 8, 2>>::new(AdamConfig::DEFAULT);
        state.grads.tensor_mut(0)[3] = 1.5;
        state.optimizer.t = 7;
        let adam = AdamConfig {
            eps: 1e-7,
            ..AdamConfig::DEFAULT
        };
        state.resume_with(adam);
        assert_eq!(state.optimizer.config, adam);
        assert_eq!(state.grads.norm_squared(), 0.0);
        // The moments and the step count are saved state: kept.
        assert_eq!(state.optimizer.t, 7);
    }

    #[test]
    fn training_state_is_four_copies() {
        let params = core::mem::size_of::<Net>();
        assert_eq!(params, Net::LEN * 4);
        assert_eq!(
            core::mem::size_of::<TrainState<Net>>(),
            4 * params + core::mem::size_of::<(u32, AdamConfig)>()
        );
    }

    /// The gradient bound is `|g| ≤ MAX_GRADIENT`, inclusive, both signs.
    #[test]
    fn gradients_beyond_the_bound_are_refused_untouched() {
        let mut state = TrainState::<SVector<f32, 2>>::new(AdamConfig::default());
        state.params = SVector::<f32, 2>::new(1.0, -1.0);
        for (g, ok) in [
            (MAX_GRADIENT, true),
            (-MAX_GRADIENT, true),
            (2.0 * MAX_GRADIENT, false),
            (-2.0 * MAX_GRADIENT, false),
            (f32::MAX, false),
        ] {
            state.grads = SVector::<f32, 2>::new(0.5, g);
            assert_eq!(check_gradient(&state.grads).is_ok(), ok, "{g}");
            let before = (state.params, state.optimizer.clone());
            let result = state.apply(1e-3, None);
            if ok {
                assert!(result.is_ok() && state.optimizer.v.is_finite());
            } else {
                assert_eq!(result, Err(Error::GradientOverflow));
                assert_eq!((state.params, state.optimizer.clone()), before);
            }
        }
    }

    /// The first offending component names the error, whichever kind comes
    /// later; the smallest step beyond the bound is caught.
    #[test]
    fn the_first_offending_gradient_component_names_the_error() {
        let beyond = f32::from_bits(MAX_GRADIENT.to_bits() + 1);
        let cases = [
            ([0.5, beyond, f32::NAN], Err(Error::GradientOverflow)),
            ([0.5, f32::NAN, beyond], Err(Error::NonFinite)),
            ([-f32::INFINITY, 0.5, -beyond], Err(Error::NonFinite)),
            ([-beyond, 0.5, 0.25], Err(Error::GradientOverflow)),
            ([-0.0, MAX_GRADIENT, -MAX_GRADIENT], Ok(())),
        ];
        for (g, expected) in cases {
            let g = SVector::<f32, 3>::from_column_slice(&g);
            assert_eq!(check_gradient(&g), expected, "{g:?}");
        }
    }

    #[test]
    fn nan_gradient_leaves_parameters_untouched() {
        let mut state = TrainState::<Net>::new(AdamConfig::default());
        state
            .params
            .init_orthogonal(&mut fd::rng(1), gain::HIDDEN, gain::POLICY);
        let before = state.params.clone();
        state.grads.first.bias[3] = f32::NAN;
        assert_eq!(state.apply(1e-3, Some(0.5)), Err(Error::NonFinite));
        assert_eq!(state.params, before);
        assert_eq!(
            state.apply(f32::NAN, None),
            Err(Error::config(
                "learning_rate",
                "must be finite and in [0, 1e3]"
            ))
        );
        assert_eq!(state.params, before);
    }

    #[test]
    fn descends_a_quadratic() {
        // Fit y = 0.5 with a 4-64-64-1 network from one input: loss ½(y − 0.5)².
        let mut state = TrainState::<Mlp<4, 64, 1>>::new(AdamConfig::default());
        state
            .params
            .init_orthogonal(&mut fd::rng(2), gain::HIDDEN, gain::VALUE);
        let x = SVector::<f32, 4>::new(0.1, 0.2, 0.3, 0.4);
        let mut cache = Mlp::<4, 64, 1>::ZERO_CACHE;
        let mut loss = 0.0;
        for _ in 0..200 {
            state.zero_grad();
            let y = state.params.forward_train(&x, &mut cache)[0];
            loss = 0.5 * (y - 0.5) * (y - 0.5);
            state
                .params
                .backward(&cache, &SVector::<f32, 1>::new(y - 0.5), &mut state.grads);
            state.apply(1e-3, Some(0.5)).unwrap();
        }
        assert!(loss < 1e-6, "loss {loss}");
    }
}
