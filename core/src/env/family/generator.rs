//! The generator: a seed to a [`PlantParams`], and the three fixed splits.

use rand_core::SeedableRng;

use super::params::INTEGRATION_TOLERANCE;
use super::{Class, MAX_DELAY, MAX_STATES, PlantParams};
use crate::rng::{self, Xoshiro128pp};

/// One of the three fixed sets of family plants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum Split {
    /// Choose and tune on it freely: 32 plants, seeds 10 000–10 031.
    Dev,
    /// Confirm a choice made on `dev`: 24 plants, seeds 20 000–20 023.
    Validation,
    /// Report a choice already made; never tune on it: 48 plants, seeds
    /// 30 000–30 047.
    Test,
}

impl Split {
    /// Every split.
    pub const ALL: [Split; 3] = [Split::Dev, Split::Validation, Split::Test];

    /// Its name (`dev`, `validation`, `test`).
    pub const fn name(self) -> &'static str {
        match self {
            Split::Dev => "dev",
            Split::Validation => "validation",
            Split::Test => "test",
        }
    }

    /// The first seed and the number of plants.
    const fn range(self) -> (u64, u64) {
        match self {
            Split::Dev => (10_000, 32),
            Split::Validation => (20_000, 24),
            Split::Test => (30_000, 48),
        }
    }

    /// The number of plants.
    pub const fn len(self) -> usize {
        self.range().1 as usize
    }

    /// Never empty.
    pub const fn is_empty(self) -> bool {
        false
    }

    /// The generator seed of plant `i` (`i < len()`), `None` past the end.
    pub const fn seed(self, i: usize) -> Option<u64> {
        let (first, n) = self.range();
        if (i as u64) < n {
            Some(first + i as u64)
        } else {
            None
        }
    }

    /// The split a seed belongs to, if any.
    pub fn of_seed(seed: u64) -> Option<Split> {
        Split::ALL.into_iter().find(|s| {
            let (first, n) = s.range();
            (first..first + n).contains(&seed)
        })
    }
}

/// Draws from the generator's stream.
struct Draw(Xoshiro128pp);

impl Draw {
    /// Uniform in `[lo, hi)`, in `f64`.
    fn u(&mut self, lo: f64, hi: f64) -> f64 {
        crate::env::uniform_f64(&mut self.0, lo, hi)
    }

    /// Log-uniform in `[lo, hi)`.
    fn lu(&mut self, lo: f64, hi: f64) -> f64 {
        libm::exp(self.u(libm::log(lo), libm::log(hi)))
    }

    /// `true` with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        f64::from(rng::uniform(&mut self.0)) < p
    }
}

/// The family plant of `seed`: of class `Class::ALL[seed mod 8]`, every
/// number drawn from xoshiro128++ seeded with `seed` in a fixed order
/// whatever the class (the same plant on every platform). Every plant it
/// returns passes [`PlantParams::check`].
///
/// The ranges (`U` uniform, `logU` log-uniform):
///
/// | what | range |
/// |---|---|
/// | time scale `T` (the class's characteristic time) | logU[1e-3, 1e2] s |
/// | episode length `N` | logU[100, 1000] steps |
/// | control period `dt/T` | logU[max(0.005, 5/N), 0.2] (so an episode spans ≥ 5 `T`); the two-mass drive also `dt·ω_r ≤ 0.5`, the unstable plant `dt/T ≤ 0.1` |
/// | per-step cost scale | logU[1e-5, 1e2] |
/// | effort weight ρ | logU[1e-3, 1e-1] |
/// | observation units | logU[1e-2, 1e2] |
/// | DC gain / authority `K` | logU[0.5, 5] (lag, oscillator, non-minimum phase); `κ` ∈ logU[1, 4] times the acceleration that moves one span in `T` (integrators, two-mass, two-axis); `κ` ∈ U[1.5, 4] times what holds the unstable plant at its end stop |
/// | set-points | `±ρ·K`, ρ ∈ U[0.3, 0.8] (unstable: U[0.2, 0.6]; integrators ±U[0.5, 1]); thermal [U[0.15, 0.35], U[0.55, 0.85]]·K |
/// | dead time | lag: `L/T` ∈ logU[0.1, 1.5]; thermal: logU[0.02, 0.3]; in periods, at most 10; others 1–3 periods with p 0.3 (unstable: 1) |
/// | Coulomb friction | p 0.4 on a velocity of the mechanical classes, U[0.02, 0.2] of the full drive |
/// | dead-zone | p 0.3, U[0.02, 0.15] of full command |
/// | backlash | p 0.25 (lag, integrator, oscillator, two-mass, two-axis), U[0.02, 0.1] |
/// | rate limit | p 0.3, full swing in logU[2·dt, T/2] (unstable: at most T/10) |
/// | sensor noise | p 0.5, σ = logU[1e-3, 2e-2] of each state's scale (span, span/T) |
/// | quantisation | p 0.3, logU[1e-3, 1e-2] of each state's scale |
/// | set-point change | p 0.5, once, in the middle third |
/// | load disturbance | p 0.4, U[0.05, 0.3] of full command, at U[0.2, 0.8]·N |
/// | three-level commands (`discrete`) | p 0.2 of the one-input plants |
///
/// Class-specific: oscillator ζ ∈ logU[0.01, 0.2]; two-mass load/motor mass
/// ratio logU[0.3, 3], resonance `ω_r·T` ∈ logU[3, 15], its damping ζ ∈
/// logU[0.01, 0.1]; viscous time constant `T_v/T` ∈ logU[1, 100];
/// non-minimum phase `τ₂/T` ∈ logU[0.3, 1], zero `T_z/T` ∈ logU[0.2, 1.5];
/// thermal heater/body resistance ratio logU[0.1, 1], heater time constant
/// logU[0.02, 0.2]·T; two-axis coupling `k_c·T²` ∈ logU[0.01, 2], drive
/// cross-talk U[−0.3, 0.3].
pub fn generate(seed: u64) -> PlantParams {
    let class = Class::ALL[(seed % Class::ALL.len() as u64) as usize];
    let mut d = Draw(Xoshiro128pp::seed_from_u64(seed));
    // Drawn for every class, in this order.
    let t = d.lu(1e-3, 1e2);
    let steps = libm::round(d.lu(100.0, 1000.0)) as u32;
    let mut dt = t * d.lu(f64::max(0.005, 5.0 / f64::from(steps)), 0.2);
    let cost_scale = d.lu(1e-5, 1e2);
    let effort_weight = d.lu(1e-3, 1e-1);
    let obs_unit = d.lu(1e-2, 1e2);
    let gain = d.lu(0.5, 5.0);
    let kappa = d.lu(1.0, 4.0);
    let rho = d.u(0.3, 0.8);
    let t_v = t * d.lu(1.0, 100.0);
    let (friction, friction_size) = (d.chance(0.4), d.u(0.02, 0.2));
    let (dead, dead_size) = (d.chance(0.3), d.u(0.02, 0.15));
    let (backlash, backlash_size) = (d.chance(0.25), d.u(0.02, 0.1));
    let (rate, slew_fraction) = (d.chance(0.3), d.u(0.0, 1.0));
    let (noisy, noise_level) = (d.chance(0.5), d.lu(1e-3, 2e-2));
    let (quantised, quantum_level) = (d.chance(0.3), d.lu(1e-3, 1e-2));
    let setpoint_change = d.chance(0.5);
    let (loaded, load_size) = (d.chance(0.4), d.u(0.05, 0.3));
    let (delayed, delay_short) = (d.chance(0.3), 1 + rng::below(&mut d.0, 3));
    let discrete = d.chance(0.2);
    let [c1, c2, c3, c4, c5] = [(); 5].map(|()| d.u(0.0, 1.0));

    let mut p = PlantParams {
        class,
        states: 2,
        inputs: 1,
        discrete: false,
        a: [[0.0; MAX_STATES]; MAX_STATES],
        b: [[0.0; 2]; MAX_STATES],
        c: [[0.0; MAX_STATES]; 2],
        friction_state: MAX_STATES as u32,
        coulomb: 0.0,
        dt,
        substeps: 1,
        episode_steps: steps,
        delay_steps: 0,
        u_low: -1.0,
        u_high: 1.0,
        dead_zone: 0.0,
        backlash: 0.0,
        rate_limit: 0.0,
        noise: [0.0; MAX_STATES],
        quantum: [0.0; MAX_STATES],
        ref_low: -rho * gain,
        ref_high: rho * gain,
        start_spread: [0.0; MAX_STATES],
        setpoint_change,
        disturbance: if loaded { load_size } else { 0.0 },
        envelope: [1.0; MAX_STATES],
        cost_scale,
        effort_weight,
        obs_unit,
    };
    // The scale of each state (sensor noise and quantisation are fractions
    // of it) and whether the class is mechanical (friction, backlash).
    let log_between = |u: f64, lo: f64, hi: f64| libm::exp(libm::log(lo) + u * libm::log(hi / lo));
    let mut scale = [1.0; MAX_STATES];
    let mut mechanical = true;
    let mut dead_time = if delayed { delay_short } else { 0 };
    // Acceleration that moves one span (2 output units) in about `T`.
    let accel = kappa * 8.0 / (t * t);
    match class {
        Class::LagDeadTime => {
            p.states = 1;
            p.a[0][0] = -1.0 / t;
            p.b[0][0] = gain / t;
            p.c[0][0] = 1.0;
            p.start_spread[0] = 0.5 * rho * gain;
            p.envelope[0] = 2.0 * gain;
            scale[0] = 2.0 * rho * gain;
            mechanical = false;
            let lag = t * log_between(c1, 0.1, 1.5);
            dead_time = (libm::round(lag / dt) as u32).clamp(1, MAX_DELAY as u32);
            // Valve stiction shows as backlash.
            p.backlash = if backlash { backlash_size } else { 0.0 };
        }
        Class::DoubleIntegrator => {
            p.ref_low = -(0.5 + 0.5 * c1);
            p.ref_high = -p.ref_low;
            p.a[0][1] = 1.0;
            p.a[1][1] = -1.0 / t_v;
            p.b[1][0] = accel;
            p.c[0][0] = 1.0;
            p.start_spread[0] = p.ref_high;
            p.envelope = [3.0, 3.0 * accel * t_v, 1.0, 1.0];
            scale[..2].copy_from_slice(&[2.0, 2.0 / t]);
            p.friction_state = if friction { 1 } else { MAX_STATES as u32 };
            p.coulomb = friction_size * accel;
        }
        Class::Oscillator => {
            let w = 1.0 / t;
            let zeta = log_between(c1, 0.01, 0.2);
            p.a[0][1] = 1.0;
            p.a[1][0] = -w * w;
            p.a[1][1] = -2.0 * zeta * w;
            p.b[1][0] = gain * w * w;
            p.c[0][0] = 1.0;
            p.start_spread[0] = 0.5 * rho * gain;
            p.envelope = [4.0 * gain, 8.0 * gain * w / zeta.max(0.05), 1.0, 1.0];
            scale[..2].copy_from_slice(&[2.0 * rho * gain, 2.0 * rho * gain * w]);
            p.friction_state = if friction { 1 } else { MAX_STATES as u32 };
            p.coulomb = friction_size * gain * w * w;
        }
        Class::TwoMass => {
            let (m1, m2) = (1.0, log_between(c1, 0.3, 3.0));
            let wr = log_between(c2, 3.0, 15.0) / t;
            let mu = m1 * m2 / (m1 + m2);
            let k = wr * wr * mu;
            let c = 2.0 * log_between(c3, 0.01, 0.1) * wr * mu;
            let force = accel * (m1 + m2);
            let b1 = (m1 + m2) / t_v;
            p.states = 4;
            p.ref_low = -(0.5 + 0.5 * c4);
            p.ref_high = -p.ref_low;
            p.a[0][1] = 1.0;
            p.a[1] = [-k / m1, -(c + b1) / m1, k / m1, c / m1];
            p.a[2][3] = 1.0;
            p.a[3] = [k / m2, c / m2, -k / m2, -c / m2];
            p.b[1][0] = force / m1;
            p.c[0][2] = 1.0;
            p.start_spread = [0.0, 0.0, 0.0, 0.0];
            let v_max = 3.0 * accel * t_v;
            p.envelope = [4.0, v_max, 4.0, v_max];
            scale = [2.0, 2.0 / t, 2.0, 2.0 / t];
            dt = dt.min(0.5 / wr);
            p.friction_state = if friction { 1 } else { MAX_STATES as u32 };
            p.coulomb = friction_size * force / m1;
        }
        Class::Unstable => {
            let pole = 1.0 / t;
            let e_pos = 2.0;
            let authority = (1.5 + 2.5 * c1) * pole * pole * e_pos;
            let r = 0.2 + 0.4 * c2;
            p.ref_low = -r;
            p.ref_high = r;
            p.a[0][1] = 1.0;
            p.a[1][0] = pole * pole;
            p.a[1][1] = -0.2 * c3 * pole;
            p.b[1][0] = authority;
            p.c[0][0] = 1.0;
            p.start_spread = [0.3 * r, 0.3 * r * pole, 0.0, 0.0];
            p.envelope = [e_pos, 4.0 * authority * t, 1.0, 1.0];
            scale[..2].copy_from_slice(&[2.0 * r, 2.0 * r * pole]);
            dt = dt.min(0.1 * t);
            dead_time = dead_time.min(1);
            mechanical = false;
        }
        Class::NonMinimumPhase => {
            let (tau1, tau2) = (t, t * log_between(c1, 0.3, 1.0));
            let tz = t * log_between(c2, 0.2, 1.5);
            p.a[0][0] = -1.0 / tau1;
            p.a[1] = [1.0 / tau2, -1.0 / tau2, 0.0, 0.0];
            p.b[0][0] = gain / tau1;
            p.c[0] = [-tz / tau2, 1.0 + tz / tau2, 0.0, 0.0];
            p.start_spread = [0.5 * rho * gain, 0.5 * rho * gain, 0.0, 0.0];
            p.envelope = [2.0 * gain, 2.0 * gain, 1.0, 1.0];
            scale[..2].copy_from_slice(&[2.0 * rho * gain; 2]);
            mechanical = false;
        }
        Class::Thermal => {
            // Temperatures above ambient; full power holds the body at
            // `gain`: R2 = 1, C2 = T.
            let r12 = log_between(c1, 0.1, 1.0);
            let c_heater = t * log_between(c2, 0.02, 0.2) / r12;
            let power = gain;
            p.a[0] = [-1.0 / (r12 * c_heater), 1.0 / (r12 * c_heater), 0.0, 0.0];
            p.a[1] = [1.0 / (r12 * t), -(1.0 / r12 + 1.0) / t, 0.0, 0.0];
            p.b[0][0] = power / c_heater;
            p.c[0][1] = 1.0;
            p.u_low = 0.0;
            p.ref_low = gain * (0.15 + 0.2 * c3);
            p.ref_high = gain * (0.55 + 0.3 * c4);
            p.envelope = [3.0 * gain * (1.0 + r12), 3.0 * gain, 1.0, 1.0];
            scale[..2].copy_from_slice(&[gain; 2]);
            mechanical = false;
            let lag = t * log_between(c5, 0.02, 0.3);
            dead_time = (libm::round(lag / dt) as u32).clamp(1, MAX_DELAY as u32);
        }
        Class::TwoAxis => {
            let kc = log_between(c1, 0.01, 2.0) / (t * t);
            let talk = -0.3 + 0.6 * c2;
            p.states = 4;
            p.inputs = 2;
            p.ref_low = -(0.5 + 0.5 * c3);
            p.ref_high = -p.ref_low;
            p.a[0][1] = 1.0;
            p.a[1] = [-kc, -1.0 / t_v, kc, 0.0];
            p.a[2][3] = 1.0;
            p.a[3] = [kc, 0.0, -kc, -1.0 / t_v];
            p.b[1] = [accel, talk * accel];
            p.b[3] = [talk * accel, accel];
            p.c[0][0] = 1.0;
            p.c[1][2] = 1.0;
            p.start_spread = [p.ref_high, 0.0, p.ref_high, 0.0];
            let v_max = 3.0 * accel * t_v;
            p.envelope = [3.0, v_max, 3.0, v_max];
            scale = [2.0, 2.0 / t, 2.0, 2.0 / t];
            p.friction_state = if friction { 1 } else { MAX_STATES as u32 };
            p.coulomb = friction_size * accel;
        }
    }
    if !mechanical {
        p.friction_state = MAX_STATES as u32;
        p.coulomb = 0.0;
    } else if class != Class::LagDeadTime {
        p.backlash = if backlash { backlash_size } else { 0.0 };
    }
    if p.friction_state == MAX_STATES as u32 {
        p.coulomb = 0.0;
    }
    p.dt = dt;
    p.delay_steps = dead_time;
    p.dead_zone = if dead { dead_size } else { 0.0 };
    if rate {
        let slowest = if class == Class::Unstable {
            0.1 * t
        } else {
            0.5 * t
        };
        let swing_time = log_between(slew_fraction, 2.0 * dt, slowest.max(2.0 * dt));
        p.rate_limit = (p.u_high - p.u_low) / swing_time;
    }
    for i in 0..p.states as usize {
        if noisy {
            p.noise[i] = noise_level * scale[i];
        }
        if quantised {
            p.quantum[i] = quantum_level * scale[i];
        }
    }
    p.discrete = discrete && p.inputs == 1;
    // The fewest sub-steps (1, 2, 4, …) that resolve the model.
    p.substeps = 1;
    while p.substeps < 1000
        && p.integration_error().partial_cmp(&INTEGRATION_TOLERANCE)
            != Some(core::cmp::Ordering::Less)
    {
        p.substeps = (p.substeps * 2).min(1000);
    }
    p
}
