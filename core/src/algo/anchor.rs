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

use nalgebra::SVector;
use rand_core::Rng;

use super::Critic;
use super::ppo::{KL_COEF_MAX, KL_COEF_MIN, Ppo, UpdateStats, adapted_kl_coef};
use super::{Actor, Controller, Cursor, Episode, Policy};
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

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> Controller<OBS>
    for Anchored<A, C, OBS, N>
{
    type Action = A::Action;

    fn act(&self, obs: &SVector<f32, OBS>) -> Result<A::Action, Error> {
        self.ppo.act(obs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent;
    use crate::algo::PpoConfig;
    use crate::env::CartPole;
    use crate::rng::Xoshiro128pp;
    use rand_core::SeedableRng;
    use std::boxed::Box;

    type Plain = agent::Ppo<CartPole, 8, 64>;
    type Anchor = agent::Anchored<CartPole, 8, 64>;

    const CONFIG: PpoConfig = PpoConfig {
        total_steps: 4_096,
        ..PpoConfig::CARTPOLE
    };

    /// Fine-tuning keeps the reference's observation statistics frozen.
    const FINE_TUNE: PpoConfig = PpoConfig {
        normalize_obs: false,
        ..CONFIG
    };

    /// A reference policy: PPO trained for a few rollouts.
    fn reference() -> Box<crate::Deployed<Plain>> {
        let mut ppo = Box::new(Plain::new(CONFIG));
        let mut env = CartPole::new();
        let mut rng = Xoshiro128pp::seed_from_u64(1);
        ppo.init(&env, &mut rng).unwrap();
        let mut cursor = Cursor::start(&mut env, &mut rng);
        for _ in 0..4 {
            ppo.collect(&mut env, &mut cursor, &mut rng, |_| {})
                .unwrap();
            ppo.update(&mut rng).unwrap();
        }
        let mut out = Box::new(<crate::Deployed<Plain> as Params>::ZERO);
        ppo.export(&mut out);
        out
    }

    fn anchored(reference: &crate::Deployed<Plain>, anchor: AnchorConfig) -> Box<Anchor> {
        let mut a = Box::new(Anchor::ZERO);
        a.ppo.config = FINE_TUNE;
        a.anchor = anchor;
        a.reference.copy_from(reference);
        a
    }

    fn fixed(kl_coef: f32) -> AnchorConfig {
        AnchorConfig {
            kl_coef,
            kl_target: None,
        }
    }

    /// The mean per-step KL to the reference over `iterations` anchored
    /// iterations (their mean).
    fn fine_tune(a: &mut Anchor, iterations: usize) -> f32 {
        let mut env = CartPole::new();
        let mut rng = Xoshiro128pp::seed_from_u64(2);
        a.init(&env, &mut rng).unwrap();
        let mut cursor = Cursor::start(&mut env, &mut rng);
        let mut kl = 0.0;
        for _ in 0..iterations {
            kl += a
                .iterate(&mut env, &mut cursor, &mut rng, |_| {})
                .unwrap()
                .kl_reference;
        }
        kl / iterations as f32
    }

    #[test]
    fn debug_names_the_agent_and_its_coefficient() {
        let mut a = Box::new(Anchor::ZERO);
        a.kl_coef = 0.25;
        let text = std::format!("{a:?}");
        assert!(
            text.contains("Anchored") && text.contains("kl_coef: 0.25"),
            "{text}"
        );
    }

    /// Steps and the exported policy are the PPO agent's.
    #[test]
    fn steps_and_export_are_the_fine_tuned_agents() {
        let r = reference();
        let mut a = anchored(&r, fixed(0.5));
        fine_tune(&mut a, 2);
        assert_eq!(a.steps(), 128);
        let mut out = Box::new(<crate::Deployed<Plain> as Params>::ZERO);
        a.export(&mut out);
        assert_eq!(&out.actor, a.ppo.actor());
        assert_ne!(out.actor, r.actor);
        assert_eq!(out.obs_norm, r.obs_norm);
    }

    /// The reported KL is the rollout's mean per-step `log π − log π_ref`,
    /// recomputed here from the stored observations, actions and
    /// log-probabilities.
    #[test]
    fn the_reported_kl_is_the_rollouts_mean_log_ratio() {
        let r = reference();
        let mut a = anchored(&r, fixed(0.5));
        fine_tune(&mut a, 2);
        let mut env = CartPole::new();
        let mut rng = Xoshiro128pp::seed_from_u64(9);
        let mut cursor = Cursor::start(&mut env, &mut rng);
        let stats = a.iterate(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
        let roll = &a.ppo.rollout;
        let mut cache =
            <crate::policy::CategoricalActor<crate::nn::Mlp<4, 8, 2>> as Actor<4>>::ZERO_CACHE;
        let mut sum = 0.0f64;
        for i in 0..roll.len() {
            let (log_ref, _) = r
                .actor
                .evaluate(&roll.obs[i], &roll.actions[i], &mut cache)
                .unwrap();
            sum += f64::from(roll.log_probs[i] - log_ref);
            // CartPole's reward of 1, charged β·(log π − log π_ref).
            assert_eq!(roll.rewards[i], 1.0 - 0.5 * (roll.log_probs[i] - log_ref));
        }
        let mean = (sum / roll.len() as f64) as f32;
        assert!(mean.abs() > 1e-3, "the policy has moved: {mean}");
        assert!(
            (stats.kl_reference - mean).abs() <= 1e-5 * mean.abs().max(1.0),
            "{} vs {mean}",
            stats.kl_reference
        );
    }

    #[test]
    fn init_starts_from_the_reference() {
        let r = reference();
        let mut a = anchored(&r, AnchorConfig::DEFAULT);
        let mut rng = Xoshiro128pp::seed_from_u64(2);
        a.init(&CartPole::new(), &mut rng).unwrap();
        assert_eq!(a.ppo.actor(), &r.actor);
        assert_eq!(a.ppo.obs_norm, r.obs_norm);
        assert_eq!(a.kl_coef, 0.1);
        // The first rollout's policy is the reference: no divergence.
        let kl = fine_tune(&mut anchored(&r, AnchorConfig::DEFAULT), 1);
        assert!(kl.abs() < 1e-6, "{kl}");
        // An invalid anchor is refused before anything changes.
        let mut bad = anchored(&r, fixed(-1.0));
        assert!(matches!(
            bad.init(&CartPole::new(), &mut rng),
            Err(Error::InvalidConfig {
                field: "anchor.kl_coef",
                ..
            })
        ));
        assert_eq!(bad.ppo.steps, 0);
    }

    /// β = 0 is plain PPO started from the reference, bit for bit.
    #[test]
    fn a_zero_coefficient_is_plain_ppo() {
        let r = reference();
        let mut a = anchored(&r, fixed(0.0));
        fine_tune(&mut a, 3);

        let mut plain = Box::new(Plain::new(FINE_TUNE));
        let mut env = CartPole::new();
        let mut rng = Xoshiro128pp::seed_from_u64(2);
        plain.init(&env, &mut rng).unwrap();
        plain.train.params.actor.copy_from(&r.actor);
        plain.obs_norm.copy_from(&r.obs_norm);
        let mut cursor = Cursor::start(&mut env, &mut rng);
        for _ in 0..3 {
            plain
                .collect(&mut env, &mut cursor, &mut rng, |_| {})
                .unwrap();
            plain.update(&mut rng).unwrap();
        }
        assert_eq!(plain.train.params, a.ppo.train.params);
    }

    /// Every stored reward is the plant's minus `β·(log π − log π_ref)`, and
    /// the penalty holds the policy nearer the reference.
    #[test]
    fn the_penalty_keeps_the_policy_near_the_reference() {
        let r = reference();
        let beta = 20.0;
        let mut a = anchored(&r, fixed(beta));
        fine_tune(&mut a, 2);
        let mut env = CartPole::new();
        let mut rng = Xoshiro128pp::seed_from_u64(3);
        let mut cursor = Cursor::start(&mut env, &mut rng);
        let stats = a.iterate(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
        let roll = &a.ppo.rollout;
        let mut kl_sum = 0.0f32;
        let mut cache = <<Anchor as crate::train::Agent>::Policy as PolicyCache>::cache();
        for t in 0..roll.len() {
            // With frozen statistics the stored observation is what the
            // reference saw.
            let (log_ref, _) = r
                .actor
                .evaluate(&roll.obs[t], &roll.actions[t], &mut cache)
                .unwrap();
            assert_eq!(
                roll.rewards[t],
                1.0 - beta * (roll.log_probs[t] - log_ref),
                "step {t}"
            );
            kl_sum += roll.log_probs[t] - log_ref;
        }
        // The reported KL is the rollout's mean per-step log-ratio.
        assert_eq!(stats.kl_reference, kl_sum / roll.len() as f32);

        let free = fine_tune(&mut anchored(&r, fixed(0.0)), 8);
        let held = fine_tune(&mut anchored(&r, fixed(beta)), 8);
        assert!(free > 0.0 && held < 0.5 * free, "free {free}, held {held}");
    }

    /// The adaptive rule, step by step against the reported KL: halved while
    /// the policy is still the reference (KL ≈ 0 < target/1.5), doubled once
    /// it has moved past 1.5 × target.
    #[test]
    fn the_coefficient_adapts_towards_the_target() {
        let target = 1e-4;
        let mut a = anchored(
            &reference(),
            AnchorConfig {
                kl_coef: 0.01,
                kl_target: Some(target),
            },
        );
        let mut env = CartPole::new();
        let mut rng = Xoshiro128pp::seed_from_u64(2);
        a.init(&env, &mut rng).unwrap();
        let mut cursor = Cursor::start(&mut env, &mut rng);
        let (mut halved, mut doubled) = (false, false);
        for _ in 0..8 {
            let before = a.kl_coef;
            let kl = a
                .iterate(&mut env, &mut cursor, &mut rng, |_| {})
                .unwrap()
                .kl_reference;
            let expected = if kl < target / 1.5 {
                halved = true;
                (before * 0.5).max(KL_COEF_MIN)
            } else if kl > target * 1.5 {
                doubled = true;
                (before * 2.0).min(KL_COEF_MAX)
            } else {
                before
            };
            assert_eq!(a.kl_coef, expected, "KL {kl}");
        }
        assert!(halved && doubled);
    }

    /// The actor's cache type, for evaluating a reference in tests.
    trait PolicyCache {
        type Cache;
        fn cache() -> Self::Cache;
    }

    impl<A: Actor<OBS>, const OBS: usize> PolicyCache for Policy<A, OBS> {
        type Cache = A::Cache;
        fn cache() -> A::Cache {
            A::ZERO_CACHE
        }
    }
}
