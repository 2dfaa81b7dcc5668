//! KL-anchored fine-tuning: PPO kept close to a frozen reference policy
//! (notes 002 §10.7 and 003: the per-step KL penalty of RLHF).
//!
//! A policy validated on the desktop is fine-tuned on the device for a plant
//! that has changed (a heavier load, a longer arm, a weaker motor). Plain PPO
//! may wander far from the validated behaviour while it adapts; here every
//! step's reward is penalised by how much more likely the current policy made
//! its action than the reference would have:
//!
//! `r'_t = r_t − β·(log π(a_t|s_t) − log π_ref(a_t|s_t))`.
//!
//! Under `π`'s own actions the penalty's expectation is `β·KL[π ‖ π_ref]`
//! (the `k₁` estimator), so maximising the return of `r'` maximises
//! `E[Σ r] − β·E[Σ KL]`: return traded against divergence at the price `β`.
//! The log-probability of the sampled action is the one the rollout stores
//! anyway; the reference needs one forward pass per step, through its own
//! frozen observation normaliser (the reference is a deployable
//! [`Policy`]). The reference is not trained and carries no gradient or
//! optimiser state: it costs its inference footprint in RAM.
//!
//! `β` is fixed, or adapted after every rollout towards a target mean KL
//! with PPO's rule (halve below `target/1.5`, double above `1.5·target`,
//! within [`KL_COEF_MIN`]`..=`[`KL_COEF_MAX`]). The mean per-step KL of the
//! last rollout is reported in [`UpdateStats::kl_reference`].
//!
//! Design: [`Anchored`] wraps a [`Ppo`] agent (whose every option still
//! applies) and the reference; the penalty enters through
//! [`Ppo::collect_shaped`], so the PPO update and its checks are the ones
//! every other PPO agent runs.

mod learner;
mod persist;
#[cfg(test)]
mod tests;

use nalgebra::SVector;
use rand_core::Rng;

use super::Critic;
use super::ppo::{KL_COEF_MAX, KL_COEF_MIN, Ppo, UpdateStats, adapted_kl_coef};
use super::{Actor, Cursor, Episode, Policy};
use crate::config::{check, positive_or_off};
use crate::env::Env;
use crate::error::{Error, check_finite};
use crate::params::Params;

/// The anchor's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct AnchorConfig {
    /// Initial (or fixed) `β` of the per-step penalty
    /// `β·(log π − log π_ref)`. Default 0.1.
    pub kl_coef: f32,
    /// Target mean per-step KL for adapting `β` after each rollout; `None`
    /// keeps `β` fixed. Default `None`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub kl_target: Option<f32>,
}

impl AnchorConfig {
    /// The defaults listed on each field.
    pub const DEFAULT: Self = Self {
        kl_coef: 0.1,
        kl_target: None,
    };

    /// Checks both fields.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the field: `kl_coef` outside
    /// `[0, KL_COEF_MAX]` (or below [`KL_COEF_MIN`] when adapted), a
    /// non-positive or non-finite `kl_target`.
    pub fn validate(&self) -> Result<(), Error> {
        let floor = if self.kl_target.is_some() {
            KL_COEF_MIN
        } else {
            0.0
        };
        check(
            "anchor.kl_coef",
            (floor..=KL_COEF_MAX).contains(&self.kl_coef),
            "must be in [0, 1e5], and >= 1e-5 when kl_target adapts it",
        )?;
        positive_or_off("anchor.kl_target", self.kl_target)
    }
}

impl Default for AnchorConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// A PPO agent anchored to a frozen reference policy (see the module docs).
pub struct Anchored<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> {
    /// The PPO agent being fine-tuned.
    pub ppo: Ppo<A, C, OBS, N>,
    /// The frozen reference (actor, normaliser, action space).
    pub reference: Policy<A, OBS>,
    /// The anchor's settings.
    pub anchor: AnchorConfig,
    /// The current `β` (set from [`AnchorConfig::kl_coef`] by `init`).
    pub kl_coef: f32,
    reference_cache: A::Cache,
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> core::fmt::Debug
    for Anchored<A, C, OBS, N>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Anchored")
            .field("ppo", &self.ppo)
            .field("anchor", &self.anchor)
            .field("kl_coef", &self.kl_coef)
            .finish_non_exhaustive()
    }
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> Anchored<A, C, OBS, N> {
    /// An agent with zeroed weights and a zeroed reference; `const`, so it
    /// can be a `static`. Set [`ppo`](Self::ppo)`.config`,
    /// [`anchor`](Self::anchor) and the reference, then call
    /// [`init`](Self::init).
    pub const ZERO: Self = Self {
        ppo: Ppo::ZERO,
        reference: <Policy<A, OBS> as Params>::ZERO,
        anchor: AnchorConfig {
            kl_coef: 0.0,
            kl_target: None,
        },
        kl_coef: 0.0,
        reference_cache: A::ZERO_CACHE,
    };

    /// Initialises the PPO agent for `env` and then **starts it from the
    /// reference**: the actor's weights and the observation statistics are
    /// copied from [`reference`](Self::reference) (the critic starts fresh,
    /// since a deployed policy carries none), and `β` is set.
    ///
    /// With `normalize_obs = false` in the PPO configuration the copied
    /// statistics stay frozen, so the fine-tuned policy starts as exactly
    /// the reference's function of the raw observation (recommended); with
    /// `true` they keep adapting to the new plant's observations, which moves
    /// the policy's inputs as well as its weights.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for an invalid PPO or anchor configuration;
    /// nothing is changed then.
    pub fn init<E, R>(&mut self, env: &E, rng: &mut R) -> Result<(), Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        self.anchor.validate()?;
        self.ppo.init(env, rng)?;
        self.ppo.train.params.actor.copy_from(&self.reference.actor);
        self.ppo.obs_norm.copy_from(&self.reference.obs_norm);
        self.kl_coef = self.anchor.kl_coef;
        Ok(())
    }

    /// One rollout with the anchored reward, one PPO update, then `β`'s
    /// adaptation. The returned statistics carry the rollout's mean
    /// per-step KL to the reference in
    /// [`kl_reference`](UpdateStats::kl_reference).
    ///
    /// # Errors
    /// As [`Ppo::collect`] and [`Ppo::update`]; [`Error::NonFinite`] if the
    /// reference gives a non-finite log-probability (the collect is then
    /// refused as a whole, see [`Ppo::collect_shaped`]).
    pub fn iterate<E, R>(
        &mut self,
        env: &mut E,
        cursor: &mut Cursor<SVector<f32, OBS>>,
        rng: &mut R,
        on_episode: impl FnMut(Episode),
    ) -> Result<UpdateStats, Error>
    where
        E: Env<Obs = SVector<f32, OBS>, Space = A::Space>,
        R: Rng + ?Sized,
    {
        let beta = self.kl_coef;
        let (reference, cache) = (&self.reference, &mut self.reference_cache);
        let mut kl_sum = 0.0f32;
        let mut count = 0u32;
        self.ppo
            .collect_shaped(env, cursor, rng, on_episode, |raw_obs, action, log_prob| {
                let obs = reference.obs_norm.normalize(raw_obs)?;
                let (log_ref, _) = reference.actor.evaluate(&obs, action, cache)?;
                let kl = log_prob - log_ref;
                check_finite(kl)?;
                kl_sum += kl;
                count += 1;
                Ok(beta * kl)
            })?;
        let mut stats = self.ppo.update(rng)?;
        let kl = kl_sum / count.max(1) as f32;
        stats.kl_reference = kl;
        if let Some(target) = self.anchor.kl_target {
            self.kl_coef = adapted_kl_coef(self.kl_coef, kl, target);
        }
        Ok(stats)
    }

    /// Environment steps collected so far.
    pub fn steps(&self) -> u64 {
        self.ppo.steps
    }

    /// Copies the deployable policy into `out` (see [`Ppo::export`]).
    pub fn export(&self, out: &mut Policy<A, OBS>) {
        self.ppo.export(out);
    }
}
