//! PPO's and A2C's hyper-parameters, validated naming the field.

use crate::error::Error;
use crate::optim::{AdamConfig, Schedule};

/// PPO hyper-parameters. Defaults are CleanRL's `ppo.py` (for one
/// environment), except where a field says otherwise.
///
/// With the `serde` feature it (de)serialises with the field names as keys:
/// a schedule is a number (constant) or `{ start, end }` (linear), an
/// optional value is a number or `false` (off).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct PpoConfig {
    /// Environment steps the linear schedules run over. Default 100 000.
    pub total_steps: u64,
    /// Adam learning rate over training progress. Default `3e-4 → 0` (linear).
    pub learning_rate: Schedule,
    /// Clip range `ε` over training progress (a constant `+∞` switches
    /// clipping off, as A2C and REINFORCE use it). Default constant 0.2.
    pub clip_range: Schedule,
    /// Discount `γ`. Default 0.99.
    pub gamma: f32,
    /// GAE `λ`. Default 0.95.
    pub gae_lambda: f32,
    /// Passes over each rollout, 1 to 1 000
    /// ([`MAX_ITERATIONS`](crate::config::MAX_ITERATIONS)). Default 10.
    pub epochs: u16,
    /// Minibatches per pass (the rollout length must be a multiple). Default 4.
    pub minibatches: u16,
    /// Normalise advantages to zero mean and unit variance per minibatch. Default true.
    pub normalize_advantages: bool,
    /// Clip the value loss around `V_old` by this range (`None`: unclipped). Default `None`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub value_clip: Option<f32>,
    /// Entropy bonus coefficient `c_e`. Default 0.
    pub ent_coef: f32,
    /// Coefficient `c_b` of the bound loss on a Gaussian mean (rl_games'
    /// `bounds_loss_coef`): `c_b · Σᵢ eᵢ²` per sample, `eᵢ` how far the mean,
    /// in units of the actuator's half-range about its centre, lies beyond
    /// [`SOFT_BOUND`](crate::policy::SOFT_BOUND) (see
    /// [`mean_bound_loss`](crate::policy::mean_bound_loss)). Without it a mean
    /// past the bound gets no signal back: every sample beyond the bound is
    /// clipped to the same command, so their advantages are noise and the
    /// mean random-walks away, until the policy can no longer leave the bound
    /// when the plant needs it to. No effect on a categorical actor. Default 0.
    pub bound_coef: f32,
    /// Exponent `β` of the exploration noise's power spectrum `1/f^β`: 0
    /// draws the Gaussian actor's `ε` independently every step (white
    /// noise); above 0 the draws are correlated in time
    /// ([`ColouredNoise`](crate::policy::ColouredNoise), a new key per
    /// rollout, octaves up to the rollout's length per copy) with the same
    /// `𝒩(0, 1)` marginals, so log-probabilities and the update are
    /// unchanged. White noise makes consecutive commands cancel, so on a plant
    /// that integrates the command the policy may never see a reward that
    /// needs seconds of pushing one way; 0.5 is Hollenstein et al.'s (2024)
    /// setting for PPO, 1 is pink noise. A schedule over training progress
    /// (evaluated at each rollout's start), e.g. `{ start = 0.5, end = 0.0 }`
    /// to explore early and fine-tune with nearly white noise (the last
    /// rollouts' `β` is small, not 0: training stops before progress 1). No effect on a
    /// categorical actor (the same bits as 0). In `[0, 2]` throughout.
    /// Default 0.
    pub noise_beta: Schedule,
    /// Value loss coefficient `c_v` of `c_v · ½(V − R)²` (CleanRL's
    /// convention). SB3 weighs `mean((R − V)²)` without the ½: SB3's
    /// `vf_coef = c` is `2c` here (its default 0.5 is 1.0). Default 0.5.
    pub vf_coef: f32,
    /// Global L2 gradient-norm clip. Default `Some(0.5)`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub max_grad_norm: Option<f32>,
    /// Stop an update after an epoch whose mean `approx_kl` exceeds this. Default `None`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub target_kl: Option<f32>,
    /// Initial coefficient `β` of the KL penalty `β·KL[π_old ‖ π]` added to
    /// the policy loss (PPO-penalty, Schulman et al. 2017 eq. 8); 0 switches
    /// it off. PPO-penalty proper also switches clipping off
    /// (`clip_range = +∞`). Default 0.
    pub kl_coef: f32,
    /// `d_targ` of the adaptive penalty: after each update, with
    /// `d = mean KL[π_old ‖ π_new]` over the rollout, `β ← β/2` when
    /// `d < d_targ/1.5` and `β ← 2β` when `d > 1.5·d_targ` (kept within
    /// [`KL_COEF_MIN`]`..=`[`KL_COEF_MAX`]). `None`: `β` stays fixed. Default `None`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub kl_target: Option<f32>,
    /// Running observation normalisation (saved with the policy). Default true.
    pub normalize_obs: bool,
    /// Scale rewards by the running std of the discounted return
    /// (SB3's `VecNormalize(norm_reward=True)`: the return resets at every
    /// episode end, the scaled reward is clipped to ±10). With `n_envs > 1`
    /// it follows `VecNormalize` over a `VecEnv`
    /// (`stable_baselines3/common/vec_env/vec_normalize.py`,
    /// `returns = returns * gamma + reward`, `returns[dones] = 0`): one
    /// discounted return per environment copy, each reset at its own copy's
    /// episode ends ([`Cursor::discounted_return`](crate::algo::Cursor::discounted_return)), and one return
    /// normaliser that every copy's return updates, in stepping order. One
    /// difference from SB3: SB3 updates its statistics once per step with
    /// all copies' returns and then scales every copy's reward by that one
    /// std; here each copy's reward is scaled right after its own return
    /// is added (the statistics after a whole step are the same; the scale
    /// of all but the last copy's rewards of the step can differ slightly).
    /// Default false.
    pub normalize_reward: bool,
    /// With `normalize_reward`: statistics of the return without SB3's
    /// assumption that rewards are of order one (no `σ² = 1` prior, no
    /// absolute `ε`; [`scale_reward`](crate::normalize::scale_reward)), so
    /// the scaled rewards do not depend on the reward's units. SB3's
    /// `VecNormalize` when false. Default false ([`PLANT`](Self::PLANT):
    /// true since 2026-11-29, chosen for invariance on `dev` — median cost
    /// ratio 1.102 → 1.113, within its seeds' noise — and confirmed on
    /// `validation`, 1.218 → 1.208, every count better; docs/plants.md,
    /// "Invariance").
    pub scale_free_returns: bool,
    /// Adam's `β₁, β₂, ε`. Default `0.9, 0.999, 1e-5`.
    pub adam: AdamConfig,
    /// Environment copies stepped side by side per rollout (SB3's
    /// `n_envs`); each needs its own copy and cursor
    /// ([`VecEnv`](crate::vec_env::VecEnv)). Default 1.
    pub n_envs: u16,
    /// Steps collected from each copy per rollout (SB3's `n_steps`): a
    /// rollout is `n_envs × n_steps` samples, at most the capacity `N`.
    /// 0 (the default) fills the capacity: `⌊N / n_envs⌋` steps each.
    pub n_steps: u16,
}

impl PpoConfig {
    /// The defaults listed on each field.
    pub const DEFAULT: Self = Self {
        total_steps: 100_000,
        learning_rate: Schedule::linear_to_zero(3e-4),
        clip_range: Schedule::Constant(0.2),
        gamma: 0.99,
        gae_lambda: 0.95,
        epochs: 10,
        minibatches: 4,
        normalize_advantages: true,
        value_clip: None,
        ent_coef: 0.0,
        bound_coef: 0.0,
        noise_beta: Schedule::Constant(0.0),
        vf_coef: 0.5,
        max_grad_norm: Some(0.5),
        target_kl: None,
        kl_coef: 0.0,
        kl_target: None,
        normalize_obs: true,
        normalize_reward: false,
        scale_free_returns: false,
        adam: AdamConfig::DEFAULT,
        n_envs: 1,
        n_steps: 0,
    };

    /// Every field zero or `false` (invalid: zero epochs), the placeholder in
    /// [`Ppo::ZERO`](crate::algo::Ppo::ZERO).
    pub(super) const ZERO: Self = Self {
        total_steps: 0,
        learning_rate: Schedule::Constant(0.0),
        clip_range: Schedule::Constant(0.0),
        gamma: 0.0,
        gae_lambda: 0.0,
        epochs: 0,
        minibatches: 0,
        normalize_advantages: false,
        value_clip: None,
        ent_coef: 0.0,
        bound_coef: 0.0,
        noise_beta: Schedule::Constant(0.0),
        vf_coef: 0.0,
        max_grad_norm: None,
        target_kl: None,
        kl_coef: 0.0,
        kl_target: None,
        normalize_obs: false,
        normalize_reward: false,
        scale_free_returns: false,
        adam: AdamConfig::ZERO,
        n_envs: 0,
        n_steps: 0,
    };

    /// Tuned for [`CartPole`](crate::env::CartPole) over 100 000 steps: RL
    /// Zoo's CartPole-v1 hyper-parameters (`γ` 0.98, `λ` 0.8, learning rate
    /// `1e-3 → 0` and clip range `0.2 → 0` annealed linearly) with 10 epochs
    /// of 4 minibatches. With a 256-step rollout it solves CartPole (100-episode
    /// deterministic mean ≥ 475) in 2k–20k steps with 4-64-64 or 4-32-32
    /// networks. Set `total_steps` to the budget: the schedules anneal over it.
    pub const CARTPOLE: Self = Self {
        learning_rate: Schedule::linear_to_zero(1e-3),
        clip_range: Schedule::linear_to_zero(0.2),
        gamma: 0.98,
        gae_lambda: 0.8,
        ..Self::DEFAULT
    };

    /// Tuned for [`CartPoleContinuous`](crate::env::CartPoleContinuous)
    /// with a 2 048-step rollout over 200 000 steps (`microrl train --env
    /// cartpole-continuous`): RL Zoo's CartPole `γ` 0.98 and `λ` 0.8, the
    /// learning rate `1e-3 → 0`, 32 minibatches (64 samples) in the default
    /// 10 epochs.
    /// Set `total_steps` to the budget: the schedule anneals over it.
    pub const CARTPOLE_CONTINUOUS: Self = Self {
        total_steps: 200_000,
        learning_rate: Schedule::linear_to_zero(1e-3),
        gamma: 0.98,
        gae_lambda: 0.8,
        minibatches: 32,
        ..Self::DEFAULT
    };

    /// The defaults for a plant of your own with continuous commands (a
    /// Gaussian actor on a 2 048-step rollout; discrete commands:
    /// [`PLANT_DISCRETE`](Self::PLANT_DISCRETE)): [`DEFAULT`](Self::DEFAULT) with
    /// SB3's minibatch size, 64 (32 minibatches: 320 gradient steps per
    /// update instead of 40), and the bound loss on a Gaussian mean
    /// (`bound_coef` 1e-4, the IsaacGymEnvs setting of rl_games'
    /// `bounds_loss_coef`), and coloured exploration noise annealed to white
    /// (`noise_beta` `0.5 → 0`: Hollenstein et al.'s `β` for PPO early, so
    /// that a plant integrating the command is explored by pushes that last,
    /// then the precision of independent draws), and rewards scaled by the
    /// running spread of the return (`normalize_reward`, SB3's
    /// `VecNormalize` without its unit prior: `scale_free_returns`), so the
    /// critic learns values of order one whatever the reward's units. Chosen on the procedural family's `dev` split and
    /// confirmed on `validation` (`microrl bench`, docs/plants.md, "The
    /// procedural family": the median cost ratio to the plants' baselines
    /// 1.50 → 1.23 on dev, 2.81 → 1.42 on validation; SB3's defaults 1.65
    /// and 3.32); on the suite it costs the swing-up its row (docs/plants.md,
    /// "The suite"). `microrl train` uses it on
    /// every continuous plant but CartPole's continuous variant and
    /// Pendulum, which keep their tuned settings (docs/plants.md, "The suite", for what each
    /// setting changed there). `total_steps` is the suite's budget,
    /// 1 000 000 steps (2 000 episodes of 500 steps); set it to yours: the
    /// schedules anneal over it.
    pub const PLANT: Self = Self {
        total_steps: 1_000_000,
        minibatches: 32,
        bound_coef: 1e-4,
        noise_beta: Schedule::linear_to_zero(0.5),
        normalize_reward: true,
        scale_free_returns: true,
        ..Self::DEFAULT
    };

    /// The defaults for a plant of your own with *discrete* commands (a
    /// categorical actor): [`PLANT`](Self::PLANT) with SB3's constant
    /// learning rate, 3e-4, instead of its annealing to zero — SB3's PPO
    /// defaults, with observation and reward normalisation. The bound loss and the
    /// noise's colour act on a Gaussian mean only: a categorical actor's
    /// update and sampling are the same without them. Measured on Acrobot
    /// (docs/plants.md, "The suite"): the held-out mean of six seeds
    /// −67.6 against −76.3 with the annealing, every seed better. On the
    /// continuous plants a constant rate cost the worst seed of three of the
    /// four (the swing-up, the quadrotor, MountainCarContinuous), so they
    /// keep the annealing.
    pub const PLANT_DISCRETE: Self = Self {
        learning_rate: Schedule::Constant(3e-4),
        ..Self::PLANT
    };

    /// Stable-Baselines3's PPO defaults as a user gets them from
    /// `PPO("MlpPolicy", env)`: a constant learning rate of 3e-4, 2 048-step
    /// rollouts in minibatches of 64 (32 here), 10 epochs, `γ` 0.99, `λ`
    /// 0.95, clip 0.2, no entropy bonus, value coefficient 0.5, gradient
    /// clip 0.5, white exploration noise, no bound loss, and no
    /// observation or reward normalisation (SB3 normalises only through a
    /// `VecNormalize` wrapper the user adds). The reference row of `microrl
    /// bench`: a preset must do at least as well as this.
    pub const SB3: Self = Self {
        learning_rate: Schedule::Constant(3e-4),
        minibatches: 32,
        normalize_obs: false,
        ..Self::DEFAULT
    };

    /// The samples of one rollout into a buffer of `capacity`:
    /// `n_envs × n_steps`, or with `n_steps = 0` the largest multiple of
    /// `n_envs` that fits (`capacity` itself for one environment). May
    /// exceed `capacity` ([`validate`](Self::validate) refuses that).
    pub const fn rollout_len(&self, capacity: usize) -> usize {
        let n_envs = self.n_envs as usize;
        if self.n_steps > 0 {
            n_envs * self.n_steps as usize
        } else {
            match capacity.checked_div(n_envs) {
                Some(steps) => steps * n_envs,
                None => 0,
            }
        }
    }

    /// Checks every field for a rollout buffer of `capacity` samples (the
    /// rollout is [`rollout_len`](Self::rollout_len)`(capacity)` of them),
    /// before any rollout is collected.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] naming the first offending field and its
    /// constraint: `γ, λ ∉ [0, 1]`, a learning-rate or clip-range schedule that
    /// is not finite and positive at the start or negative at the end, zero
    /// epochs or minibatches, zero `n_envs`, `n_envs × n_steps` beyond
    /// `capacity` (named `n_steps`), a rollout that is not a multiple of
    /// `minibatches`, negative or non-finite coefficients, a `noise_beta`
    /// outside `[0, 2]`, `total_steps` 0 with a schedule that anneals over
    /// it, a non-positive grad-norm clip, value clip or target KL, invalid
    /// Adam settings.
    pub fn validate(&self, capacity: usize) -> Result<(), Error> {
        use crate::config::{check, non_negative, positive_or_off, unit};
        unit("gamma", self.gamma)?;
        unit("gae_lambda", self.gae_lambda)?;
        self.learning_rate.validate("learning_rate", 1.0)?;
        if !matches!(self.clip_range, Schedule::Constant(c) if c == f32::INFINITY) {
            self.clip_range.validate("clip_range", f32::MAX)?;
        }
        let anneals = !matches!(
            (self.learning_rate, self.clip_range, self.noise_beta),
            (
                Schedule::Constant(_),
                Schedule::Constant(_),
                Schedule::Constant(_)
            )
        );
        check(
            "total_steps",
            self.total_steps > 0 || !anneals,
            "must be > 0 when a schedule anneals over it",
        )?;
        crate::config::iterations("epochs", self.epochs)?;
        check("minibatches", self.minibatches > 0, "must be > 0")?;
        check("n_envs", self.n_envs > 0, "must be > 0")?;
        let rollout_len = self.rollout_len(capacity);
        check(
            "n_steps",
            rollout_len <= capacity,
            "n_envs × n_steps must not exceed the rollout capacity N",
        )?;
        check(
            "minibatches",
            rollout_len > 0 && rollout_len.is_multiple_of(usize::from(self.minibatches)),
            "must divide the rollout length",
        )?;
        non_negative("ent_coef", self.ent_coef)?;
        non_negative("bound_coef", self.bound_coef)?;
        let (beta_start, beta_end) = match self.noise_beta {
            Schedule::Constant(beta) => (beta, beta),
            Schedule::Linear { start, end } => (start, end),
        };
        check(
            "noise_beta",
            (0.0..=2.0).contains(&beta_start) && (0.0..=2.0).contains(&beta_end),
            "must be in [0, 2] throughout",
        )?;
        non_negative("vf_coef", self.vf_coef)?;
        positive_or_off("max_grad_norm", self.max_grad_norm)?;
        positive_or_off("target_kl", self.target_kl)?;
        positive_or_off("value_clip", self.value_clip)?;
        let kl_floor = if self.kl_target.is_some() {
            KL_COEF_MIN
        } else {
            0.0
        };
        check(
            "kl_coef",
            (kl_floor..=KL_COEF_MAX).contains(&self.kl_coef),
            "must be in [0, 1e5], and >= 1e-5 when kl_target adapts it",
        )?;
        positive_or_off("kl_target", self.kl_target)?;
        self.adam.validate()
    }
}

impl Default for PpoConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The smallest adaptive KL coefficient: halving stops here, so `β` can
/// always double back (a `β` halved to 0 would stay 0).
pub const KL_COEF_MIN: f32 = 1e-5;
/// The largest KL coefficient (doubling stops here).
pub const KL_COEF_MAX: f32 = 1e5;

/// PPO's adaptive KL rule (Schulman et al. 2017, §4): `β/2` when the
/// measured KL `d < d_targ/1.5`, `2β` when `d > 1.5·d_targ`, `β` in between
/// (the boundaries included), kept within [`KL_COEF_MIN`]`..=`[`KL_COEF_MAX`].
/// Used by PPO-penalty and by [`Anchored`](crate::algo::Anchored).
pub fn adapted_kl_coef(kl_coef: f32, d: f32, target: f32) -> f32 {
    if d < target / 1.5 {
        (kl_coef * 0.5).max(KL_COEF_MIN)
    } else if d > target * 1.5 {
        (kl_coef * 2.0).min(KL_COEF_MAX)
    } else {
        kl_coef
    }
}

/// A2C hyper-parameters; defaults are SB3's A2C (with Adam instead of RMSprop).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct A2cConfig {
    /// Environment steps the learning-rate schedule runs over. Default 500 000.
    pub total_steps: u64,
    /// Learning rate over training progress. Default constant `7e-4`.
    pub learning_rate: Schedule,
    /// Discount `γ`. Default 0.99.
    pub gamma: f32,
    /// `λ` of the advantage estimate; 1 gives n-step returns. Default 1.
    pub gae_lambda: f32,
    /// Entropy bonus coefficient. Default 0.
    pub ent_coef: f32,
    /// Value loss coefficient. Default 0.5.
    pub vf_coef: f32,
    /// Global gradient-norm clip. Default `Some(0.5)`.
    #[cfg_attr(feature = "serde", serde(with = "crate::config::optional"))]
    pub max_grad_norm: Option<f32>,
    /// Normalise advantages over the rollout. Default false.
    pub normalize_advantages: bool,
    /// Running observation normalisation. Default true.
    pub normalize_obs: bool,
    /// Reward scaling by the discounted-return std. Default false.
    pub normalize_reward: bool,
    /// Adam's `β₁, β₂, ε`. Default `0.9, 0.999, 1e-5`.
    pub adam: AdamConfig,
}

impl A2cConfig {
    /// The defaults listed on each field.
    pub const DEFAULT: Self = Self {
        total_steps: 500_000,
        learning_rate: Schedule::Constant(7e-4),
        gamma: 0.99,
        gae_lambda: 1.0,
        ent_coef: 0.0,
        vf_coef: 0.5,
        max_grad_norm: Some(0.5),
        normalize_advantages: false,
        normalize_obs: true,
        normalize_reward: false,
        adam: AdamConfig::DEFAULT,
    };
}

impl Default for A2cConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl A2cConfig {
    /// The equivalent [`PpoConfig`]: one epoch, one minibatch, no clipping
    /// (`const`, so an A2C agent can be a `static`).
    pub const fn to_ppo(self) -> PpoConfig {
        let c = self;
        PpoConfig {
            total_steps: c.total_steps,
            learning_rate: c.learning_rate,
            clip_range: Schedule::Constant(f32::INFINITY),
            gamma: c.gamma,
            gae_lambda: c.gae_lambda,
            epochs: 1,
            minibatches: 1,
            normalize_advantages: c.normalize_advantages,
            value_clip: None,
            ent_coef: c.ent_coef,
            bound_coef: 0.0,
            noise_beta: Schedule::Constant(0.0),
            vf_coef: c.vf_coef,
            max_grad_norm: c.max_grad_norm,
            target_kl: None,
            kl_coef: 0.0,
            kl_target: None,
            normalize_obs: c.normalize_obs,
            normalize_reward: c.normalize_reward,
            scale_free_returns: false,
            adam: c.adam,
            n_envs: 1,
            n_steps: 0,
        }
    }
}

impl From<A2cConfig> for PpoConfig {
    fn from(c: A2cConfig) -> Self {
        c.to_ppo()
    }
}
