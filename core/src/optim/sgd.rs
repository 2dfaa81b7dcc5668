//! Plain stochastic gradient descent, `θ ← θ − lr · g`.
//!
//! Stateless: the optimiser for the smallest MCUs, where Adam's two extra
//! copies of the network do not fit (e.g. online actor-critic on a few KiB).

use super::{Optimizer, check_gradient, check_lr};
use crate::error::Error;
use crate::params::Params;

/// Stochastic gradient descent without momentum. Holds no state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sgd;

impl<P: Params> Optimizer<P> for Sgd {
    fn step(&mut self, params: &mut P, grads: &P, lr: f32) -> Result<(), Error> {
        check_lr(lr)?;
        check_gradient(grads)?;
        params.add_scaled(-lr, grads);
        Ok(())
    }

    fn reset(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::SVector;

    #[test]
    fn steps_against_the_gradient() {
        let mut theta = SVector::<f32, 2>::new(1.0, 2.0);
        Sgd.step(&mut theta, &SVector::<f32, 2>::new(0.5, -1.0), 0.1)
            .unwrap();
        assert_eq!(theta, SVector::<f32, 2>::new(0.95, 2.1));
        assert_eq!(
            Sgd.step(&mut theta, &SVector::<f32, 2>::new(f32::INFINITY, 0.0), 0.1),
            Err(Error::NonFinite)
        );
        assert_eq!(theta, SVector::<f32, 2>::new(0.95, 2.1));
    }
}
