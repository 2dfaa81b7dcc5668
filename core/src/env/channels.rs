//! Rewards in channels, fused with weights (multi-reward PPO, notes 000).
//!
//! A robot's objective is rarely one number: stay balanced *and* spend
//! little energy, track a setpoint *and* spare the gearbox. An environment
//! implementing [`RewardChannels<K>`] reports its reward as `K` separate
//! channels; [`Weighted`] turns it into an ordinary [`Env`] whose reward is
//! the weighted sum
//!
//! `r = Σₖ w_k r_k`,
//!
//! so every agent trains on it unchanged, and the weights are a dial the
//! user turns (validated: finite, non-negative, summing to 1). The fusion
//! adds the terms in channel order starting from the first, so a single
//! channel with weight 1 is the channel itself, bit for bit.
//!
//! [`CartPoleContinuous`](super::CartPoleContinuous) has two channels:
//! `upright` (Gymnasium's reward, 1 per step while the pole is up) and
//! `effort` (`−a²`, the squared force command in `[−1, 1]`).

use rand_core::Rng;

use super::{ActionOf, Env, EnvState, Step};
use crate::error::Error;

/// An environment whose reward comes in `K` channels.
pub trait RewardChannels<const K: usize>: Env {
    /// The channels' names, in order.
    const CHANNELS: [&'static str; K];

    /// [`Env::step`], returning the `K` reward channels beside the step
    /// (whose own `reward` is the environment's usual one).
    ///
    /// # Errors
    /// As [`Env::step`].
    fn step_channels(
        &mut self,
        action: ActionOf<Self>,
    ) -> Result<(Step<Self::Obs>, [f32; K]), Error>;
}

/// `Σₖ w_k r_k`, summed from the first term.
pub fn fuse<const K: usize>(weights: &[f32; K], channels: &[f32; K]) -> f32 {
    let mut terms = weights.iter().zip(channels);
    let Some((&w, &r)) = terms.next() else {
        return 0.0;
    };
    terms.fold(w * r, |sum, (&w, &r)| sum + w * r)
}

/// Checks fusion weights: finite, non-negative, summing to 1 within `1e-5`.
///
/// # Errors
/// [`Error::InvalidConfig`] naming `field`.
pub fn check_weights<const K: usize>(field: &'static str, weights: &[f32; K]) -> Result<(), Error> {
    let ok = K > 0
        && weights.iter().all(|w| w.is_finite() && *w >= 0.0)
        && (weights.iter().sum::<f32>() - 1.0).abs() <= 1e-5;
    crate::config::check(field, ok, "must be finite, non-negative and sum to 1")
}

/// `E` with its reward channels fused by `weights` (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weighted<E, const K: usize> {
    /// The environment.
    pub env: E,
    weights: [f32; K],
}

impl<E: RewardChannels<K>, const K: usize> Weighted<E, K> {
    /// `env` with its channels fused by `weights`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] (`reward_weights`) unless the weights are
    /// finite, non-negative and sum to 1.
    pub fn new(env: E, weights: [f32; K]) -> Result<Self, Error> {
        check_weights("reward_weights", &weights)?;
        Ok(Self { env, weights })
    }

    /// The fusion weights.
    pub fn weights(&self) -> &[f32; K] {
        &self.weights
    }
}

impl<E: RewardChannels<K>, const K: usize> Env for Weighted<E, K> {
    type Obs = E::Obs;
    type Space = E::Space;
    const SOLVED_RETURN: f32 = E::SOLVED_RETURN;

    fn action_space(&self) -> Self::Space {
        self.env.action_space()
    }

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Self::Obs {
        self.env.reset(rng)
    }

    fn step(&mut self, action: ActionOf<Self>) -> Result<Step<Self::Obs>, Error> {
        let (mut step, channels) = self.env.step_channels(action)?;
        step.reward = fuse(&self.weights, &channels);
        Ok(step)
    }
}

/// The environment's state (the weights are configuration).
impl<E: EnvState, const K: usize> EnvState for Weighted<E, K> {
    const TAG: u32 = E::TAG;
    const WORDS: usize = E::WORDS;

    fn save_state(&self, out: &mut [f64]) {
        self.env.save_state(out);
    }

    fn restore_state(&mut self, words: &[f64]) -> Result<(), Error> {
        self.env.restore_state(words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::CartPoleContinuous;
    use crate::rng::Xoshiro128pp;
    use nalgebra::SVector;
    use rand_core::SeedableRng;

    #[test]
    fn fuses_the_channels_and_validates_the_weights() {
        assert_eq!(fuse(&[0.25, 0.75], &[4.0, -8.0]), 1.0 - 6.0);
        assert_eq!(fuse(&[1.0], &[-0.0]).to_bits(), (-0.0f32).to_bits());
        for bad in [[0.5, 0.6], [1.5, -0.5], [f32::NAN, 1.0], [0.0, 0.0]] {
            assert_eq!(
                Weighted::new(CartPoleContinuous::new(), bad).map(|_| ()),
                Err(Error::config(
                    "reward_weights",
                    "must be finite, non-negative and sum to 1"
                )),
                "{bad:?}"
            );
        }
    }

    /// Upright is the plant's reward, effort `−a²` of the clipped command;
    /// weights (1, 0) give back the plant exactly.
    #[test]
    fn cartpole_channels_are_upright_and_effort() {
        let mut rng = Xoshiro128pp::seed_from_u64(1);
        let mut plain = CartPoleContinuous::new();
        let mut fused = Weighted::new(CartPoleContinuous::new(), [0.8, 0.2]).unwrap();
        let mut same = Weighted::new(CartPoleContinuous::new(), [1.0, 0.0]).unwrap();
        let o = plain.reset(&mut rng.clone());
        assert_eq!(fused.reset(&mut rng.clone()), o);
        assert_eq!(same.reset(&mut rng), o);
        for a in [0.5f32, -2.0, 0.1] {
            let action = SVector::<f32, 1>::new(a);
            let s = plain.step(action).unwrap();
            let (s2, ch) = fused.env.step_channels(action).unwrap();
            assert_eq!((s2.obs, s2.reward), (s.obs, s.reward));
            let c = a.clamp(-1.0, 1.0);
            assert_eq!(ch, [s.reward, -(c * c)]);
            assert_eq!(same.step(action).unwrap(), s);
        }
    }
}
