//! TD3's hyper-parameters, named as SB3's `TD3` arguments.

use crate::algo::offpolicy::{MAX_INTERVAL, Schedule};
use crate::algo::sac::ADAM_TORCH;
use crate::config::{check, non_negative, positive_or_off};
use crate::error::Error;
use crate::optim::AdamConfig;

/// TD3 hyper-parameters. Defaults are SB3's `TD3` (except `buffer_size`,
/// which must fit the agent's replay capacity `CAP`; Adam's `ε` is
/// PyTorch's default `1e-8`, as in SB3).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct Td3Config {
    /// Transitions the replay ring keeps (`≤ CAP`). Default 1 000 000 (SB3).
    pub buffer_size: u32,
    /// Environment steps of uniformly random actions before learning starts,
    /// at most 10⁹ ([`MAX_INTERVAL`]).
    /// Default 100.
    pub learning_starts: u32,
    /// Minibatch size (`≤ BATCH`). Default 256.
    pub batch_size: u32,
    /// Polyak coefficient `τ` of the target networks. Default 0.005.
    pub tau: f32,
    /// Discount `γ`. Default 0.99.
    pub gamma: f32,
    /// Environment steps between training rounds, 1 to 10⁹
    /// ([`MAX_INTERVAL`]). Default 1.
    pub train_freq: u32,
    /// Gradient steps per training round, 1 to 1 000
    /// ([`MAX_GRADIENT_STEPS`](crate::algo::offpolicy::MAX_GRADIENT_STEPS)).
    /// Default 1.
    pub gradient_steps: u32,
    /// Adam learning rate of actor and critics. Default `1e-3`.
    pub learning_rate: f32,
    /// Standard deviation of the Gaussian exploration noise added to the
    /// actor's action in `[−1, 1]` (then clipped to it), SB3's
    /// `NormalActionNoise(0, σ)`; `None` explores with the bare actor (SB3's
    /// default `action_noise = None`). Default `None`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub action_noise: Option<f32>,
    /// Critic updates per actor and target update, 1 to 10⁹
    /// ([`MAX_INTERVAL`]). Default 2.
    pub policy_delay: u32,
    /// Standard deviation `σ̃` of the target policy smoothing noise. Default 0.2.
    pub target_policy_noise: f32,
    /// The smoothing noise is clipped to `[−c, c]`. Default 0.5.
    pub target_noise_clip: f32,
    /// Adam's `β₁, β₂, ε` (both optimisers). Default `0.9, 0.999, 1e-8`.
    pub adam: AdamConfig,
}

impl Td3Config {
    /// This configuration with its `buffer_size` lowered to `capacity` (the
    /// agent's replay ring `CAP`) where it is larger: SB3's 10⁶ default on a
    /// sized agent ([`agent::SacSized`](crate::agent::SacSized) and
    /// [`agent::Td3Sized`](crate::agent::Td3Sized) state their `CAP`). A
    /// run whose budget fits the ring never wraps it, as SB3's never does.
    pub const fn fitted(self, capacity: usize) -> Self {
        Self {
            buffer_size: crate::algo::offpolicy::fit_buffer(self.buffer_size, capacity),
            ..self
        }
    }

    /// The defaults listed on each field (SB3's).
    pub const DEFAULT: Self = Self {
        buffer_size: 1_000_000,
        learning_starts: 100,
        batch_size: 256,
        tau: 0.005,
        gamma: 0.99,
        train_freq: 1,
        gradient_steps: 1,
        learning_rate: 1e-3,
        action_noise: None,
        policy_delay: 2,
        target_policy_noise: 0.2,
        target_noise_clip: 0.5,
        adam: ADAM_TORCH,
    };

    /// RL Zoo's `Pendulum-v1` settings (`gamma = 0.98`,
    /// `learning_starts = 10 000`, normal action noise 0.1,
    /// `learning_rate = 1e-3`) with a 20 000-transition buffer (RL Zoo's
    /// run is 20 000 steps).
    pub const PENDULUM: Self = Self {
        buffer_size: 20_000,
        learning_starts: 10_000,
        gamma: 0.98,
        action_noise: Some(0.1),
        ..Self::DEFAULT
    };

    /// Every field zero (invalid), the placeholder in [`Td3::ZERO`](super::Td3::ZERO).
    pub(crate) const ZERO: Self = Self {
        buffer_size: 0,
        learning_starts: 0,
        batch_size: 0,
        tau: 0.0,
        gamma: 0.0,
        train_freq: 0,
        gradient_steps: 0,
        learning_rate: 0.0,
        action_noise: None,
        policy_delay: 0,
        target_policy_noise: 0.0,
        target_noise_clip: 0.0,
        adam: AdamConfig {
            beta1: 0.0,
            beta2: 0.0,
            eps: 0.0,
        },
    };

    /// The settings shared with the other off-policy learner.
    pub const fn schedule(&self) -> Schedule {
        Schedule {
            buffer_size: self.buffer_size,
            learning_starts: self.learning_starts,
            batch_size: self.batch_size,
            tau: self.tau,
            gamma: self.gamma,
            train_freq: self.train_freq,
            gradient_steps: self.gradient_steps,
            learning_rate: self.learning_rate,
        }
    }

    /// Checks every field for an agent with replay capacity `capacity` and
    /// minibatch capacity `batch`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first offending field.
    pub fn validate(&self, capacity: usize, batch: usize) -> Result<(), Error> {
        self.schedule().validate(capacity, batch)?;
        positive_or_off("action_noise", self.action_noise)?;
        check(
            "policy_delay",
            (1..=MAX_INTERVAL).contains(&self.policy_delay),
            "must be in 1..=1000000000 (MAX_INTERVAL)",
        )?;
        non_negative("target_policy_noise", self.target_policy_noise)?;
        non_negative("target_noise_clip", self.target_noise_clip)?;
        self.adam.validate()
    }
}

impl Default for Td3Config {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Refusal, assert_refused_by_name};

    /// TD3's own fields, each refused by name; the shared ones are
    /// `Schedule::validate`'s (tested in `offpolicy`), reached through it.
    #[test]
    fn validate_names_the_field() {
        let ok = Td3Config {
            buffer_size: 100,
            batch_size: 32,
            ..Td3Config::PENDULUM
        };
        let cases: [Refusal<Td3Config>; 7] = [
            ("batch_size", |c| c.batch_size = 64),
            ("action_noise", |c| c.action_noise = Some(-0.1)),
            ("policy_delay", |c| c.policy_delay = 0),
            ("policy_delay", |c| c.policy_delay = MAX_INTERVAL + 1),
            // A run of 4294967295 gradient steps a round hangs: refused.
            ("gradient_steps", |c| c.gradient_steps = u32::MAX),
            ("target_policy_noise", |c| c.target_policy_noise = f32::NAN),
            ("target_noise_clip", |c| c.target_noise_clip = -1.0),
        ];
        assert_refused_by_name(ok, &cases, |c| c.validate(100, 32));
        // Each shared setting reaches `Schedule` as itself.
        let s = crate::algo::offpolicy::Schedule::DISTINCT;
        let distinct = Td3Config {
            buffer_size: s.buffer_size,
            learning_starts: s.learning_starts,
            batch_size: s.batch_size,
            tau: s.tau,
            gamma: s.gamma,
            train_freq: s.train_freq,
            gradient_steps: s.gradient_steps,
            learning_rate: s.learning_rate,
            ..Td3Config::PENDULUM
        };
        assert_eq!(distinct.schedule(), s);
        assert!(Td3Config::ZERO.validate(100, 32).is_err());
    }
}
