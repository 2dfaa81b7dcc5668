//! A family plant's description: a linear model in continuous time, the
//! actuator's and the sensor's imperfections, the task and the cost.
//!
//! Everything a generated plant is lives in [`PlantParams`], a plain `Copy`
//! struct: [`generate`](super::generate()) fills it from a seed, a user may
//! fill it by hand, and [`PlantParams::check`] refuses any field outside its
//! range by name before a plant is built.

use super::{MAX_DELAY, MAX_INPUTS, MAX_STATES};
use crate::env::{PlantRangeError, Range, check_ranges};

/// What a generated plant is, the class its generator drew it from. The
/// class decides the structure of the model and which classical
/// baselines apply; the dynamics are the fields of [`PlantParams`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum Class {
    /// First-order lag with transport delay, `T·ẏ = −y + K·u(t − L)`
    /// (the process-control FOPDT model).
    LagDeadTime,
    /// Position with inertia and viscous friction, `ÿ = K·u − ẏ/T_v`,
    /// often with Coulomb friction.
    DoubleIntegrator,
    /// A lightly damped oscillator, `ÿ = −ω²·y − 2ζω·ẏ + Kω²·u`, ζ ≤ 0.2.
    Oscillator,
    /// A flexible two-mass drive: the motor is pushed, the load behind a
    /// lightly damped spring is measured (non-collocated).
    TwoMass,
    /// Open-loop unstable second order (levitation or an inverted
    /// pendulum linearised), `ÿ = p²·y + K·u`.
    Unstable,
    /// Two lags with a right-half-plane zero, `K(1 − T_z·s)/((τ₁s + 1)(τ₂s + 1))`:
    /// the output first moves the wrong way.
    NonMinimumPhase,
    /// Heater and body with a one-sided actuator (heat only, `u ∈ [0, 1]`)
    /// and a transport delay.
    Thermal,
    /// Two coupled axes (an x–y stage): two inputs, two outputs, a coupling
    /// spring and cross-talk between the drives.
    TwoAxis,
}

impl Class {
    /// Every class, in the order the generator cycles through them.
    pub const ALL: [Class; 8] = [
        Class::LagDeadTime,
        Class::DoubleIntegrator,
        Class::Oscillator,
        Class::TwoMass,
        Class::Unstable,
        Class::NonMinimumPhase,
        Class::Thermal,
        Class::TwoAxis,
    ];

    /// The class's short name (`lag-dead-time`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Class::LagDeadTime => "lag-dead-time",
            Class::DoubleIntegrator => "double-integrator",
            Class::Oscillator => "oscillator",
            Class::TwoMass => "two-mass",
            Class::Unstable => "unstable",
            Class::NonMinimumPhase => "non-minimum-phase",
            Class::Thermal => "thermal",
            Class::TwoAxis => "two-axis",
        }
    }
}

/// A family plant: `ẋ = A·x + B·(u + d)`, `y = C·x` with `states ≤ 4`
/// states and `inputs ≤ 2` commands, between an imperfect actuator and an
/// imperfect sensor (see the [module documentation](super) for the order
/// of the elements and the step).
///
/// Entries of `a`, `b`, `c` beyond `states`/`inputs` are ignored. Units are
/// the plant's own: the set-points are in output units, time in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct PlantParams {
    /// The class the plant was drawn from (documentation; the dynamics are
    /// the fields below).
    pub class: Class,
    /// Number of states `n`, in 1..=4.
    pub states: u32,
    /// Number of commands and of tracked outputs, 1 or 2.
    pub inputs: u32,
    /// The command is one of three levels (`low`, the middle, `high`):
    /// the plant is a [`PlantDiscrete`](super::PlantDiscrete). One input only.
    pub discrete: bool,
    /// `A`, row `i` = `dxᵢ/dt`'s coefficients, 1/s; every entry finite,
    /// `|aᵢⱼ| ≤ 1e9`.
    pub a: [[f64; MAX_STATES]; MAX_STATES],
    /// `B`, state units per command unit per second; finite, `|bᵢⱼ| ≤ 1e12`.
    pub b: [[f64; MAX_INPUTS]; MAX_STATES],
    /// `C`, output `i` = `Σⱼ cᵢⱼ·xⱼ`; finite, `|cᵢⱼ| ≤ 1e6`.
    pub c: [[f64; MAX_STATES]; MAX_INPUTS],
    /// The state with Coulomb friction (a velocity), or 4 for none.
    pub friction_state: u32,
    /// Coulomb friction: the largest change of `x[friction_state]` per
    /// second it removes, ≥ 0 (stick–slip: it stops the motion, never
    /// reverses it).
    pub coulomb: f64,
    /// Control period, s, in [1e-6, 1e4].
    pub dt: f64,
    /// Integration sub-steps per period (RK4 each), in 1..=1000, and
    /// enough for the model: doubling them changes the one-period map by
    /// at most 1e-5 relative ([`integration_error`](Self::integration_error)).
    pub substeps: u32,
    /// Episode length in periods (truncation), in 1..=100 000.
    pub episode_steps: u32,
    /// Transport delay of the command, whole periods, in 0..=10.
    pub delay_steps: u32,
    /// The actuator's lowest command, in [−1, 0] (0: one-sided, e.g. heat
    /// only).
    pub u_low: f64,
    /// The actuator's highest command, in (0, 1].
    pub u_high: f64,
    /// Dead-zone about the actuator's rest (0, or `u_low` when one-sided),
    /// in command units, in [0, 0.5].
    pub dead_zone: f64,
    /// Backlash (play) between the drive and the plant, command units, in
    /// [0, 0.5].
    pub backlash: f64,
    /// Slew-rate limit of the applied command, command units per second; 0
    /// for none; finite, ≥ 0.
    pub rate_limit: f64,
    /// Standard deviation of the sensor noise on each state, state units; ≥ 0.
    pub noise: [f64; MAX_STATES],
    /// Quantisation step of each measured state, state units; 0 for none.
    pub quantum: [f64; MAX_STATES],
    /// Lowest set-point, output units.
    pub ref_low: f64,
    /// Highest set-point, output units (`> ref_low`).
    pub ref_high: f64,
    /// The start state is uniform in `±start_spread` per state (≥ 0).
    pub start_spread: [f64; MAX_STATES],
    /// The set-point jumps once, at a random step in the middle third.
    pub setpoint_change: bool,
    /// A load disturbance: a step of this size (command units, in
    /// [−1, 1], its sign drawn per episode unless the actuator is
    /// one-sided, where it is a loss) at a random step; 0 for none.
    pub disturbance: f64,
    /// End stops: each state saturates at `±envelope[i]` (> 0), so an
    /// unstable plant that is lost stays lost at a finite, costly state.
    pub envelope: [f64; MAX_STATES],
    /// The per-step cost's scale: reward `= −cost_scale·(e² + ρ·u²)`, in
    /// [1e-12, 1e12].
    pub cost_scale: f64,
    /// `ρ`, the effort's weight against the squared normalised error, in
    /// [0, 100].
    pub effort_weight: f64,
    /// Observation units: every observed error, state and set-point is
    /// multiplied by this, in [1e-12, 1e12].
    pub obs_unit: f64,
}

impl PlantParams {
    /// The span of the set-points, `ref_high − ref_low`: the unit of the
    /// normalised error in the cost.
    pub fn ref_span(&self) -> f64 {
        self.ref_high - self.ref_low
    }

    /// The actuator's rest command: 0, or `u_low` for a one-sided actuator.
    pub fn u_rest(&self) -> f64 {
        if self.u_low < 0.0 { 0.0 } else { self.u_low }
    }

    /// Checks every field lies in its documented range (NaN never does).
    ///
    /// # Errors
    /// [`PlantRangeError`] naming the first field outside its range.
    pub fn check(&self) -> Result<(), PlantRangeError> {
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        check_ranges(&[
            ("states", f64::from(self.states), 1.0, 4.0, "states"),
            ("inputs", f64::from(self.inputs), 1.0, 2.0, "inputs"),
            (
                "discrete",
                flag(self.discrete) * f64::from(self.inputs),
                0.0,
                1.0,
                "(discrete commands need inputs = 1)",
            ),
            (
                "friction_state",
                f64::from(self.friction_state),
                0.0,
                4.0,
                "state index (4: none)",
            ),
            ("coulomb", self.coulomb, 0.0, 1e12, "state units/s"),
            ("dt", self.dt, 1e-6, 1e4, "s"),
            (
                "substeps",
                f64::from(self.substeps),
                1.0,
                1000.0,
                "sub-steps",
            ),
            (
                "episode_steps",
                f64::from(self.episode_steps),
                1.0,
                100_000.0,
                "steps",
            ),
            (
                "delay_steps",
                f64::from(self.delay_steps),
                0.0,
                MAX_DELAY as f64,
                "steps",
            ),
            ("u_low", self.u_low, -1.0, 0.0, "command units"),
            (
                "u_high",
                self.u_high,
                f64::MIN_POSITIVE,
                1.0,
                "command units",
            ),
            ("dead_zone", self.dead_zone, 0.0, 0.5, "command units"),
            ("backlash", self.backlash, 0.0, 0.5, "command units"),
            ("rate_limit", self.rate_limit, 0.0, 1e12, "command units/s"),
            ("disturbance", self.disturbance, -1.0, 1.0, "command units"),
            ("ref_low", self.ref_low, -1e12, 1e12, "output units"),
            (
                "ref_high",
                self.ref_high,
                self.ref_low + self.ref_low.abs() * 1e-9 + f64::MIN_POSITIVE,
                1e12,
                "output units (> ref_low)",
            ),
            ("cost_scale", self.cost_scale, 1e-12, 1e12, "per step"),
            ("effort_weight", self.effort_weight, 0.0, 100.0, ""),
            ("obs_unit", self.obs_unit, 1e-12, 1e12, ""),
        ])?;
        let n = self.states as usize;
        if self.friction_state != MAX_STATES as u32 {
            check_ranges(&[(
                "friction_state",
                f64::from(self.friction_state),
                0.0,
                (n - 1) as f64,
                "state index below `states` (4: none)",
            )])?;
        }
        for i in 0..MAX_STATES {
            let rows: [Range; 7] = [
                ("noise", self.noise[i], 0.0, 1e12, "state units"),
                ("quantum", self.quantum[i], 0.0, 1e12, "state units"),
                (
                    "start_spread",
                    self.start_spread[i],
                    0.0,
                    1e12,
                    "state units",
                ),
                ("envelope", self.envelope[i], 1e-12, 1e15, "state units"),
                (
                    "a",
                    self.a[i].iter().fold(0.0, |m, v| max_abs(m, *v)),
                    0.0,
                    1e9,
                    "1/s",
                ),
                (
                    "b",
                    self.b[i].iter().fold(0.0, |m, v| max_abs(m, *v)),
                    0.0,
                    1e12,
                    "",
                ),
                (
                    "c",
                    self.c[i % MAX_INPUTS]
                        .iter()
                        .fold(0.0, |m, v| max_abs(m, *v)),
                    0.0,
                    1e6,
                    "",
                ),
            ];
            check_ranges(&rows)?;
        }
        // The integration must resolve the model's fastest mode.
        check_ranges(&[(
            "substeps",
            self.integration_error(),
            0.0,
            INTEGRATION_TOLERANCE,
            "(the one-period map's relative change when the sub-steps are doubled): too few sub-steps for the model",
        )])
    }

    /// How much the linear part's one-period map changes when the
    /// sub-steps are doubled: `max_j ‖Φ_s·e_j − Φ_2s·e_j‖_∞ / ‖Φ_2s·e_j‖_∞`
    /// over the unit states `e_j` (NaN or ∞ for an integration that blows
    /// up). [`check`](Self::check) wants it at most 1e-5.
    pub fn integration_error(&self) -> f64 {
        let n = (self.states as usize).min(MAX_STATES);
        let mut fine = *self;
        fine.substeps = self.substeps.saturating_mul(2);
        let mut worst = 0.0f64;
        for j in 0..n {
            let mut e = [0.0; MAX_STATES];
            e[j] = 1.0;
            let coarse = super::dynamics::integrate(self, e, [0.0; MAX_INPUTS], false);
            let exact = super::dynamics::integrate(&fine, e, [0.0; MAX_INPUTS], false);
            let (mut diff, mut size) = (0.0f64, 0.0f64);
            for i in 0..n {
                diff = max_abs(diff, coarse[i] - exact[i]);
                size = max_abs(size, exact[i]);
            }
            // NaN (an integration that blew up) wins.
            worst = max_abs(worst, diff / size);
        }
        worst
    }
}

/// The largest [`PlantParams::integration_error`] accepted.
pub const INTEGRATION_TOLERANCE: f64 = 1e-5;

/// `max(m, |v|)`, NaN-propagating (so a NaN entry fails its range).
fn max_abs(m: f64, v: f64) -> f64 {
    if v.is_nan() || m.is_nan() {
        f64::NAN
    } else if v.abs() > m {
        v.abs()
    } else {
        m
    }
}
