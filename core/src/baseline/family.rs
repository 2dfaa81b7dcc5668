//! The classical baseline of a [family](crate::env::family) plant, computed
//! from its description and tuned on the tuning start states, as an
//! engineer with the model would.
//!
//! Two candidate laws, each searched, the better on the *tuning* starts
//! ([`TUNING_SEED`]) kept ([`fit`]); the bench scores
//! it on the held-out starts:
//! - [`FamilyPid`]: one PID per output (Åström & Hägglund 2006: derivative
//!   on the measurement through a first-order filter with `N = 10`,
//!   conditional-integration anti-windup, output clamped to the actuator),
//!   gains found by a grid over proportional band, integral and derivative
//!   time, then [`tune`]'s pattern search from the grid's best.
//! - [`FamilyLqr`]: discrete LQR with integral action (LQI) on the exact
//!   one-period model ([`DiscreteModel`]), the Riccati equation iterated in
//!   `f64` to convergence, reference feed-forward from the model's steady
//!   state, and — where the plant has dead time — the state predicted over
//!   the delay from the commands still in flight (the state-space form of
//!   the Smith predictor; Åström & Wittenmark, *Computer-Controlled
//!   Systems*, §7.5). Its output and integral weights are searched as the
//!   PID's gains are.
//!
//! The laws read the plant's observation (the measured states, errors and
//! set-points, divided by `obs_unit`) and nothing else at run time; their
//! memory (integrators, filters, commands in flight) sits in `Cell`s
//! cleared per episode ([`EpisodeReset`]). A discrete plant gets the level
//! nearest to the law's command.

// Matrix code over the first `states`/`inputs` entries reads as the
// equations do with indices.
#![allow(clippy::needless_range_loop)]

use core::cell::Cell;
use core::marker::PhantomData;

use nalgebra::SVector;
use rand_core::SeedableRng;

use super::{EpisodeReset, TUNING_SEED, evaluate, tune};
use crate::env::ActionOf;
use crate::env::family::{
    DiscreteModel, FamilyEnv, MAX_DELAY, MAX_INPUTS, MAX_STATES, PlantParams,
};
use crate::error::{Error, check_all_finite};
use crate::policy::Controller;
use crate::rng::Xoshiro128pp;

/// Augmented LQI state: the plant's states and one integral per output.
const AUG: usize = MAX_STATES + MAX_INPUTS;

/// Episodes per candidate on the grids.
pub const GRID_EPISODES: u32 = 16;
/// Episodes per candidate in the pattern searches and the final choice.
pub const TUNING_EPISODES: u32 = 32;

/// What a family law reads from an observation, in plant units.
struct Reading {
    /// Tracking errors `r − y` (measured).
    error: [f64; MAX_INPUTS],
    /// Set-points.
    setpoint: [f64; MAX_INPUTS],
    /// Measured states.
    x: [f64; MAX_STATES],
}

fn read(p: &PlantParams, obs: &[f32]) -> Reading {
    let a = p.inputs as usize;
    let mut r = Reading {
        error: [0.0; MAX_INPUTS],
        setpoint: [0.0; MAX_INPUTS],
        x: [0.0; MAX_STATES],
    };
    for k in 0..a {
        r.error[k] = f64::from(obs[k]) / p.obs_unit;
        r.setpoint[k] = f64::from(obs[a + MAX_STATES + k]) / p.obs_unit;
    }
    for i in 0..MAX_STATES {
        r.x[i] = f64::from(obs[a + i]) / p.obs_unit;
    }
    r
}

/// Conditional integration (clamping): keep the new integral unless the
/// output saturates and the error drives it further out.
fn integrates(u: f64, e: f64, p: &PlantParams) -> bool {
    (p.u_low..=p.u_high).contains(&u) || (u > p.u_high) != (e > 0.0)
}

/// One PID per output on a family plant `P`.
#[derive(Debug)]
pub struct FamilyPid<P> {
    /// `[kp, ki, kd]`: command units per output unit, per output unit·s,
    /// per output unit/s.
    pub gains: [f32; 3],
    params: PlantParams,
    integral: Cell<[f64; MAX_INPUTS]>,
    last_y: Cell<Option<[f64; MAX_INPUTS]>>,
    derivative: Cell<[f64; MAX_INPUTS]>,
    plant: PhantomData<fn() -> P>,
}

/// A copy with its memory cleared.
impl<P> Clone for FamilyPid<P> {
    fn clone(&self) -> Self {
        Self::new(&self.params, self.gains)
    }
}

/// The derivative filter's `N`: the filter's time constant is `T_d/N`.
const DERIVATIVE_N: f64 = 10.0;

impl<P> FamilyPid<P> {
    /// A PID with `gains` on the plant `params`, memory empty.
    pub fn new(params: &PlantParams, gains: [f32; 3]) -> Self {
        Self {
            gains,
            params: *params,
            integral: Cell::new([0.0; MAX_INPUTS]),
            last_y: Cell::new(None),
            derivative: Cell::new([0.0; MAX_INPUTS]),
            plant: PhantomData,
        }
    }

    /// The untuned PID a user starts from: proportional only, full
    /// command for an error of one set-point span.
    pub fn untuned(params: &PlantParams) -> Self {
        let kp = (params.u_high - params.u_low) / params.ref_span();
        Self::new(params, [kp as f32, 0.0, 0.0])
    }

    /// The commands for `obs`, updating the memory.
    fn law(&self, obs: &[f32]) -> [f64; MAX_INPUTS] {
        let p = &self.params;
        let r = read(p, obs);
        let [kp, ki, kd] = self.gains.map(f64::from);
        let dt = p.dt;
        // Derivative filter: first order with time constant T_d/N = kd/(kp·N).
        let tf = if kp > 0.0 && kd > 0.0 {
            kd / (kp * DERIVATIVE_N)
        } else {
            0.0
        };
        let alpha = dt / (dt + tf);
        let (mut integral, mut derivative) = (self.integral.get(), self.derivative.get());
        let mut y = [0.0; MAX_INPUTS];
        let mut u = [p.u_rest(); MAX_INPUTS];
        for k in 0..p.inputs as usize {
            let e = r.error[k];
            y[k] = r.setpoint[k] - e;
            let rate = self.last_y.get().map_or(0.0, |last| (y[k] - last[k]) / dt);
            derivative[k] += alpha * (rate - derivative[k]);
            let candidate = integral[k] + e * dt;
            let trial = kp * e + ki * candidate - kd * derivative[k];
            if integrates(trial, e, p) {
                integral[k] = candidate;
            }
            let out = kp * e + ki * integral[k] - kd * derivative[k];
            u[k] = out.clamp(p.u_low, p.u_high);
        }
        self.integral.set(integral);
        self.derivative.set(derivative);
        self.last_y.set(Some(y));
        u
    }
}

impl<P> EpisodeReset for FamilyPid<P> {
    fn reset(&self) {
        self.integral.set([0.0; MAX_INPUTS]);
        self.derivative.set([0.0; MAX_INPUTS]);
        self.last_y.set(None);
    }
}

/// A family law as a [`Controller`]: its commands for the observation
/// (refusing a non-finite one), as the plant's action.
macro_rules! family_controller {
    ($law:ident) => {
        impl<P: FamilyEnv<Obs = SVector<f32, OBS>>, const OBS: usize> Controller<OBS> for $law<P> {
            type Action = ActionOf<P>;

            fn act(&self, obs: &SVector<f32, OBS>) -> Result<ActionOf<P>, Error> {
                check_all_finite(obs.as_slice())?;
                let u = self.law(obs.as_slice());
                check_all_finite(&[u[0] as f32, u[1] as f32])?;
                Ok(P::command(&self.params, u))
            }
        }
    };
}

family_controller!(FamilyPid);

/// Discrete LQI with reference feed-forward and a predictor over the dead
/// time, on a family plant `P`.
#[derive(Debug)]
pub struct FamilyLqr<P> {
    /// The weights it was designed with: `[q_y, q_z]` (output and integral,
    /// relative to the command's).
    pub weights: [f32; 2],
    params: PlantParams,
    model: DiscreteModel,
    /// State and integral gains, `u = u_ss − K_x·(x̂ − x_ss) − K_z·z`.
    k_x: [[f64; MAX_STATES]; MAX_INPUTS],
    k_z: [[f64; MAX_INPUTS]; MAX_INPUTS],
    /// Steady state per unit set-point: `x_ss = N_x·r`, `u_ss = N_u·r`.
    n_x: [[f64; MAX_INPUTS]; MAX_STATES],
    n_u: [[f64; MAX_INPUTS]; MAX_INPUTS],
    integral: Cell<[f64; MAX_INPUTS]>,
    /// The last `delay_steps` commands, oldest first.
    in_flight: Cell<[[f64; MAX_INPUTS]; MAX_DELAY]>,
    plant: PhantomData<fn() -> P>,
}

/// A copy with its memory cleared.
impl<P> Clone for FamilyLqr<P> {
    fn clone(&self) -> Self {
        Self {
            weights: self.weights,
            params: self.params,
            model: self.model,
            k_x: self.k_x,
            k_z: self.k_z,
            n_x: self.n_x,
            n_u: self.n_u,
            integral: Cell::new([0.0; MAX_INPUTS]),
            in_flight: Cell::new([[self.params.u_rest(); MAX_INPUTS]; MAX_DELAY]),
            plant: PhantomData,
        }
    }
}

impl<P> FamilyLqr<P> {
    /// The LQI for output weight `q_y` and integral weight `q_z` (each
    /// relative to the command's, in units of the set-point span, the
    /// command span and the period), or `None` when the Riccati iteration
    /// does not converge (an unstabilisable model or weights out of reach).
    pub fn design(params: &PlantParams, weights: [f32; 2]) -> Option<Self> {
        let p = params;
        let (n, a) = (p.states as usize, p.inputs as usize);
        let m = p.discrete_model();
        let span = p.ref_span();
        let u_span = p.u_high - p.u_low;
        let [q_y, q_z] = weights.map(f64::from);
        if !(q_y > 0.0 && q_z >= 0.0) {
            return None;
        }
        // Augmented model: x⁺ = A·x + B·u, z⁺ = z − dt·C·x (deviations).
        let dim = n + a;
        let mut big_a = [[0.0; AUG]; AUG];
        let mut big_b = [[0.0; MAX_INPUTS]; AUG];
        for i in 0..n {
            big_a[i][..n].copy_from_slice(&m.a[i][..n]);
            big_b[i][..a].copy_from_slice(&m.b[i][..a]);
        }
        for k in 0..a {
            for j in 0..n {
                big_a[n + k][j] = -p.dt * p.c[k][j];
            }
            big_a[n + k][n + k] = 1.0;
        }
        // Cost: q_y·(y/span)² + q_z·(z/(span·τ))² + (u/u_span)² per step, τ
        // a tenth of the episode.
        let tau = 0.1 * p.dt * f64::from(p.episode_steps);
        let mut q = [[0.0; AUG]; AUG];
        for k in 0..a {
            for i in 0..n {
                for j in 0..n {
                    q[i][j] += q_y * p.c[k][i] * p.c[k][j] / (span * span);
                }
            }
            q[n + k][n + k] = q_z / (span * span * tau * tau);
        }
        let r = 1.0 / (u_span * u_span);
        let gain = riccati_gain(&big_a, &big_b, &q, r, dim, a)?;
        let mut lqr = Self {
            weights,
            params: *p,
            model: m,
            k_x: [[0.0; MAX_STATES]; MAX_INPUTS],
            k_z: [[0.0; MAX_INPUTS]; MAX_INPUTS],
            n_x: [[0.0; MAX_INPUTS]; MAX_STATES],
            n_u: [[0.0; MAX_INPUTS]; MAX_INPUTS],
            integral: Cell::new([0.0; MAX_INPUTS]),
            in_flight: Cell::new([[p.u_rest(); MAX_INPUTS]; MAX_DELAY]),
            plant: PhantomData,
        };
        for k in 0..a {
            lqr.k_x[k][..n].copy_from_slice(&gain[k][..n]);
            lqr.k_z[k][..a].copy_from_slice(&gain[k][n..dim]);
        }
        if let Some((n_x, n_u)) = steady_state(p, &m) {
            (lqr.n_x, lqr.n_u) = (n_x, n_u);
        }
        Some(lqr)
    }

    /// The commands for `obs`, updating the memory.
    fn law(&self, obs: &[f32]) -> [f64; MAX_INPUTS] {
        let p = &self.params;
        let (n, a) = (p.states as usize, p.inputs as usize);
        let reading = read(p, obs);
        let m = &self.model;
        // Predict the state the next command will meet: the commands in
        // flight applied to the measured state, oldest first.
        let mut in_flight = self.in_flight.get();
        let delay = p.delay_steps as usize;
        let mut x = reading.x;
        for u in &in_flight[MAX_DELAY - delay..] {
            let mut next = [0.0; MAX_STATES];
            for i in 0..n {
                let mut s = 0.0;
                for j in 0..n {
                    s += m.a[i][j] * x[j];
                }
                for k in 0..a {
                    s += m.b[i][k] * u[k];
                }
                next[i] = s;
            }
            x = next;
        }
        let r = reading.setpoint;
        let mut integral = self.integral.get();
        let mut u = [p.u_rest(); MAX_INPUTS];
        let mut e = [0.0; MAX_INPUTS];
        for k in 0..a {
            let y: f64 = (0..n).map(|j| p.c[k][j] * x[j]).sum();
            e[k] = r[k] - y;
        }
        let mut candidate = integral;
        for k in 0..a {
            candidate[k] += e[k] * p.dt;
        }
        let command = |z: &[f64; MAX_INPUTS], k: usize| {
            let mut out = 0.0;
            for l in 0..a {
                out += self.n_u[k][l] * r[l] - self.k_z[k][l] * z[l];
            }
            for j in 0..n {
                let x_ss: f64 = (0..a).map(|l| self.n_x[j][l] * r[l]).sum();
                out -= self.k_x[k][j] * (x[j] - x_ss);
            }
            out
        };
        for k in 0..a {
            let trial = command(&candidate, k);
            if integrates(trial, e[k], p) {
                integral[k] = candidate[k];
            }
        }
        for k in 0..a {
            u[k] = command(&integral, k).clamp(p.u_low, p.u_high);
        }
        // The predictor must remember what the plant gets: a level.
        let u = quantised(p, u);
        self.integral.set(integral);
        in_flight.copy_within(1.., 0);
        in_flight[MAX_DELAY - 1] = u;
        self.in_flight.set(in_flight);
        u
    }
}

impl<P> EpisodeReset for FamilyLqr<P> {
    fn reset(&self) {
        self.integral.set([0.0; MAX_INPUTS]);
        self.in_flight
            .set([[self.params.u_rest(); MAX_INPUTS]; MAX_DELAY]);
    }
}

family_controller!(FamilyLqr);

/// `u` as the plant applies it: a discrete plant's nearest level,
/// otherwise `u` itself.
fn quantised(p: &PlantParams, u: [f64; MAX_INPUTS]) -> [f64; MAX_INPUTS] {
    if !p.discrete {
        return u;
    }
    let levels = [p.u_low, 0.5 * (p.u_low + p.u_high), p.u_high];
    let mut best = levels[0];
    for l in levels {
        if (l - u[0]).abs() < (best - u[0]).abs() {
            best = l;
        }
    }
    [best, u[1]]
}

/// The stabilising gain `K = (R + BᵀPB)⁻¹BᵀPA` of the discrete Riccati
/// equation `P = Q + AᵀPA − AᵀPB(R + BᵀPB)⁻¹BᵀPA` (R = `r`·I), by
/// iterating it from `P = Q` until the largest change is below 1e-11 of
/// the largest entry, at most 50 000 times; `None` if it does not converge
/// or leaves the finite numbers.
fn riccati_gain(
    a: &[[f64; AUG]; AUG],
    b: &[[f64; MAX_INPUTS]; AUG],
    q: &[[f64; AUG]; AUG],
    r: f64,
    n: usize,
    m: usize,
) -> Option<[[f64; AUG]; MAX_INPUTS]> {
    let mut p = *q;
    let gain_of = |p: &[[f64; AUG]; AUG]| -> Option<[[f64; AUG]; MAX_INPUTS]> {
        // PB (n×m), PA (n×n).
        let mut pb = [[0.0; MAX_INPUTS]; AUG];
        let mut pa = [[0.0; AUG]; AUG];
        for i in 0..n {
            for k in 0..m {
                pb[i][k] = (0..n).map(|l| p[i][l] * b[l][k]).sum();
            }
            for j in 0..n {
                pa[i][j] = (0..n).map(|l| p[i][l] * a[l][j]).sum();
            }
        }
        // S = R + BᵀPB (m×m), BᵀPA (m×n).
        let mut s = [[0.0; MAX_INPUTS]; MAX_INPUTS];
        let mut bpa = [[0.0; AUG]; MAX_INPUTS];
        for k in 0..m {
            for l in 0..m {
                s[k][l] = (0..n).map(|i| b[i][k] * pb[i][l]).sum::<f64>();
            }
            s[k][k] += r;
            for j in 0..n {
                bpa[k][j] = (0..n).map(|i| b[i][k] * pa[i][j]).sum();
            }
        }
        let inv = invert2(&s, m)?;
        let mut k_gain = [[0.0; AUG]; MAX_INPUTS];
        for k in 0..m {
            for j in 0..n {
                k_gain[k][j] = (0..m).map(|l| inv[k][l] * bpa[l][j]).sum();
            }
        }
        Some(k_gain)
    };
    for _ in 0..50_000 {
        let k = gain_of(&p)?;
        // P⁺ = Q + Aᵀ P (A − B K)   (the Riccati update with K substituted).
        let mut closed = [[0.0; AUG]; AUG];
        for i in 0..n {
            for j in 0..n {
                closed[i][j] = a[i][j] - (0..m).map(|l| b[i][l] * k[l][j]).sum::<f64>();
            }
        }
        let mut p_closed = [[0.0; AUG]; AUG];
        for i in 0..n {
            for j in 0..n {
                p_closed[i][j] = (0..n).map(|l| p[i][l] * closed[l][j]).sum();
            }
        }
        let mut next = *q;
        let (mut change, mut size) = (0.0f64, 0.0f64);
        for i in 0..n {
            for j in 0..n {
                next[i][j] += (0..n).map(|l| a[l][i] * p_closed[l][j]).sum::<f64>();
            }
        }
        // Keep P symmetric against rounding.
        for i in 0..n {
            for j in 0..i {
                let mean = 0.5 * (next[i][j] + next[j][i]);
                (next[i][j], next[j][i]) = (mean, mean);
            }
        }
        for i in 0..n {
            for j in 0..n {
                if !next[i][j].is_finite() {
                    return None;
                }
                change = change.max((next[i][j] - p[i][j]).abs());
                size = size.max(next[i][j].abs());
            }
        }
        p = next;
        if change <= 1e-11 * size {
            return gain_of(&p);
        }
    }
    None
}

/// The inverse of the leading `m × m` block (`m` ≤ 2), `None` if singular.
fn invert2(
    s: &[[f64; MAX_INPUTS]; MAX_INPUTS],
    m: usize,
) -> Option<[[f64; MAX_INPUTS]; MAX_INPUTS]> {
    if m == 1 {
        return (s[0][0] != 0.0 && s[0][0].is_finite()).then(|| [[1.0 / s[0][0], 0.0], [0.0, 0.0]]);
    }
    let det = s[0][0] * s[1][1] - s[0][1] * s[1][0];
    (det != 0.0 && det.is_finite()).then(|| {
        [
            [s[1][1] / det, -s[0][1] / det],
            [-s[1][0] / det, s[0][0] / det],
        ]
    })
}

/// The steady state per unit set-point: `x = A_d·x + B_d·u`, `C·x = r`,
/// solved for each unit `r` by Gaussian elimination with partial pivoting;
/// `None` when the system is singular (no unique steady state).
#[allow(clippy::type_complexity)]
fn steady_state(
    p: &PlantParams,
    m: &DiscreteModel,
) -> Option<(
    [[f64; MAX_INPUTS]; MAX_STATES],
    [[f64; MAX_INPUTS]; MAX_INPUTS],
)> {
    let (n, a) = (p.states as usize, p.inputs as usize);
    let dim = n + a;
    let mut n_x = [[0.0; MAX_INPUTS]; MAX_STATES];
    let mut n_u = [[0.0; MAX_INPUTS]; MAX_INPUTS];
    for col in 0..a {
        let mut mat = [[0.0; AUG + 1]; AUG];
        for i in 0..n {
            for j in 0..n {
                mat[i][j] = m.a[i][j] - if i == j { 1.0 } else { 0.0 };
            }
            for k in 0..a {
                mat[i][n + k] = m.b[i][k];
            }
        }
        for k in 0..a {
            mat[n + k][..n].copy_from_slice(&p.c[k][..n]);
            mat[n + k][dim] = if k == col { 1.0 } else { 0.0 };
        }
        let scale = mat
            .iter()
            .take(dim)
            .flat_map(|row| row[..dim].iter())
            .fold(0.0f64, |s, v| s.max(v.abs()));
        for c in 0..dim {
            let pivot = (c..dim).max_by(|&i, &j| mat[i][c].abs().total_cmp(&mat[j][c].abs()))?;
            if mat[pivot][c].abs() <= 1e-12 * scale {
                return None;
            }
            mat.swap(c, pivot);
            for i in 0..dim {
                if i != c {
                    let f = mat[i][c] / mat[c][c];
                    for j in c..=dim {
                        mat[i][j] -= f * mat[c][j];
                    }
                }
            }
        }
        for i in 0..n {
            n_x[i][col] = mat[i][dim] / mat[i][i];
        }
        for k in 0..a {
            n_u[k][col] = mat[n + k][dim] / mat[n + k][n + k];
        }
    }
    Some((n_x, n_u))
}

/// A family plant's classical baseline: the better of the tuned PID and
/// the tuned LQI on the tuning starts.
// Built once per plant; the LQI's model and gains (about 800 bytes) are
// not worth a heap the core does not have.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum FamilyBaseline<P> {
    /// The PID won.
    Pid(FamilyPid<P>),
    /// The LQI won.
    Lqr(FamilyLqr<P>),
}

impl<P> FamilyBaseline<P> {
    /// `"pid"` or `"lqi"`.
    pub fn name(&self) -> &'static str {
        match self {
            FamilyBaseline::Pid(_) => "pid",
            FamilyBaseline::Lqr(_) => "lqi",
        }
    }

    /// The law's parameters: the PID's `[kp, ki, kd]` or the LQI's
    /// `[q_y, q_z, 0]`.
    pub fn gains(&self) -> [f32; 3] {
        match self {
            FamilyBaseline::Pid(c) => c.gains,
            FamilyBaseline::Lqr(c) => [c.weights[0], c.weights[1], 0.0],
        }
    }
}

impl<P> EpisodeReset for FamilyBaseline<P> {
    fn reset(&self) {
        match self {
            FamilyBaseline::Pid(c) => c.reset(),
            FamilyBaseline::Lqr(c) => c.reset(),
        }
    }
}

impl<P: FamilyEnv<Obs = SVector<f32, OBS>>, const OBS: usize> Controller<OBS>
    for FamilyBaseline<P>
{
    type Action = ActionOf<P>;

    fn act(&self, obs: &SVector<f32, OBS>) -> Result<ActionOf<P>, Error> {
        match self {
            FamilyBaseline::Pid(c) => c.act(obs),
            FamilyBaseline::Lqr(c) => c.act(obs),
        }
    }
}

/// The mean return of `controller` on `episodes` tuning episodes of
/// `plant` (`-∞` for a refused step).
pub fn tuning_score<P, C, const OBS: usize>(controller: &C, plant: &P, episodes: u32) -> f32
where
    P: FamilyEnv<Obs = SVector<f32, OBS>>,
    C: Controller<OBS, Action = ActionOf<P>> + EpisodeReset,
{
    match score_on(controller, plant, episodes, TUNING_SEED) {
        Ok(mean) if !mean.is_nan() => mean,
        _ => f32::NEG_INFINITY,
    }
}

/// The mean return of `controller` on `episodes` episodes of a copy of
/// `plant` whose start states come from the stream seeded with `seed`
/// ([`TUNING_SEED`] to tune, [`HELD_OUT_SEED`](super::HELD_OUT_SEED) to
/// report), its memory cleared before each.
///
/// # Errors
/// As [`evaluate`].
pub fn score_on<P, C, const OBS: usize>(
    controller: &C,
    plant: &P,
    episodes: u32,
    seed: u64,
) -> Result<f32, Error>
where
    P: FamilyEnv<Obs = SVector<f32, OBS>>,
    C: Controller<OBS, Action = ActionOf<P>> + EpisodeReset,
{
    let mut env = plant.clone();
    let mut starts = Xoshiro128pp::seed_from_u64(seed);
    Ok(evaluate(controller, &mut env, episodes, &mut starts)?.0)
}

/// The tuned PID: the best of a grid (proportional band × integral time ×
/// derivative time, [`GRID_EPISODES`] each) refined by pattern search
/// ([`TUNING_EPISODES`] each). Returns it and its tuning score.
pub fn fit_pid<P, const OBS: usize>(plant: &P) -> (FamilyPid<P>, f32)
where
    P: FamilyEnv<Obs = SVector<f32, OBS>>,
    FamilyPid<P>: Controller<OBS, Action = ActionOf<P>>,
{
    let p = params_of(plant);
    let k0 = (p.u_high - p.u_low) / p.ref_span();
    // Time unit: a twentieth of the episode (an episode spans ≥ 5 of the
    // plant's time constants).
    let tau = p.dt * f64::from(p.episode_steps) / 20.0;
    let mut best = ([k0 as f32, 0.0, 0.0], f32::NEG_INFINITY);
    for band in [0.3, 1.0, 3.0, 10.0, 30.0, 100.0] {
        for ti in [0.1, 0.5, 2.0, f64::INFINITY] {
            for td in [0.0, 0.02, 0.1, 0.5] {
                let kp = band * k0;
                let gains = [kp as f32, (kp / (ti * tau)) as f32, (kp * td * tau) as f32];
                let score = tuning_score(&FamilyPid::<P>::new(&p, gains), plant, GRID_EPISODES);
                if score > best.1 {
                    best = (gains, score);
                }
            }
        }
    }
    let (gains, score) = tune(best.0, 2.0, 0.02, 120, |g| {
        tuning_score(&FamilyPid::<P>::new(&p, *g), plant, TUNING_EPISODES)
    });
    (FamilyPid::new(&p, gains), score)
}

/// The tuned LQI: the best of a grid of output and integral weights
/// ([`GRID_EPISODES`] each) refined by pattern search ([`TUNING_EPISODES`]
/// each); `None` if no design converged.
pub fn fit_lqr<P, const OBS: usize>(plant: &P) -> Option<(FamilyLqr<P>, f32)>
where
    P: FamilyEnv<Obs = SVector<f32, OBS>>,
    FamilyLqr<P>: Controller<OBS, Action = ActionOf<P>>,
{
    let p = params_of(plant);
    let score = |w: &[f32; 2], episodes| {
        FamilyLqr::<P>::design(&p, *w)
            .map_or(f32::NEG_INFINITY, |c| tuning_score(&c, plant, episodes))
    };
    let mut best = ([1.0f32, 0.0], f32::NEG_INFINITY);
    for q_y in [1.0, 10.0, 100.0, 1e3, 1e4, 1e5] {
        for q_z in [0.0, 0.01, 0.1, 1.0] {
            let w = [q_y, q_z * q_y];
            let s = score(&w, GRID_EPISODES);
            if s > best.1 {
                best = (w, s);
            }
        }
    }
    if best.1 == f32::NEG_INFINITY {
        return None;
    }
    let (weights, s) = tune(best.0, 2.0, 0.05, 40, |w| score(w, TUNING_EPISODES));
    FamilyLqr::design(&p, weights).map(|c| (c, s))
}

/// The plant's baseline ([`FamilyBaseline`]): the better of [`fit_pid`]
/// and [`fit_lqr`] on the tuning starts, with its tuning score.
pub fn fit<P, const OBS: usize>(plant: &P) -> (FamilyBaseline<P>, f32)
where
    P: FamilyEnv<Obs = SVector<f32, OBS>>,
    FamilyPid<P>: Controller<OBS, Action = ActionOf<P>>,
    FamilyLqr<P>: Controller<OBS, Action = ActionOf<P>>,
{
    let (pid, pid_score) = fit_pid(plant);
    match fit_lqr(plant) {
        Some((lqr, s)) if s > pid_score => (FamilyBaseline::Lqr(lqr), s),
        _ => (FamilyBaseline::Pid(pid), pid_score),
    }
}

/// The description of a built family plant.
fn params_of<P: FamilyEnv>(plant: &P) -> PlantParams {
    plant.description()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algo;
    use crate::baseline::HELD_OUT_SEED;
    use crate::env::family::{Class, Plant1, Plant2, PlantDiscrete, Split, generate};

    fn held_out<P, C, const OBS: usize>(c: &C, plant: &P, episodes: u32) -> f32
    where
        P: FamilyEnv<Obs = SVector<f32, OBS>>,
        C: Controller<OBS, Action = ActionOf<P>> + EpisodeReset,
    {
        score_on(c, plant, episodes, HELD_OUT_SEED).unwrap()
    }

    /// The fitted baseline beats doing nothing and the untuned PID on
    /// held-out starts.
    fn beats_idle_and_untuned<P, const OBS: usize>(plant: P)
    where
        P: FamilyEnv<Obs = SVector<f32, OBS>>,
        FamilyPid<P>: Controller<OBS, Action = ActionOf<P>>,
        FamilyLqr<P>: Controller<OBS, Action = ActionOf<P>>,
    {
        let p = plant.description();
        let (baseline, tuning) = fit(&plant);
        let score = held_out(&baseline, &plant, 64);
        let rest = P::command(&p, [p.u_rest(); MAX_INPUTS]);
        let idle = |_: &SVector<f32, OBS>| Ok::<_, Error>(rest);
        let mut env = plant.clone();
        let zero = algo::evaluate(
            &idle,
            &mut env,
            64,
            &mut Xoshiro128pp::seed_from_u64(HELD_OUT_SEED),
        )
        .unwrap()
        .0;
        let untuned = held_out(&FamilyPid::<P>::untuned(&p), &plant, 64);
        let class = p.class.name();
        assert!(score > zero, "{class}: {score} <= idle {zero}");
        assert!(score > untuned, "{class}: {score} <= untuned {untuned}");
        assert!(tuning.is_finite(), "{class}");
    }

    #[test]
    fn each_class_baseline_beats_doing_nothing_and_the_untuned_pid() {
        for class in Class::ALL {
            let p = (0..Split::Dev.len())
                .filter_map(|i| Split::Dev.seed(i))
                .map(generate)
                .find(|p| p.class == class && !p.discrete)
                .unwrap();
            match p.inputs {
                1 => beats_idle_and_untuned(Plant1::with_params(p).unwrap()),
                _ => beats_idle_and_untuned(Plant2::with_params(p).unwrap()),
            }
        }
        let relay = (10_000..).map(generate).find(|p| p.discrete).unwrap();
        beats_idle_and_untuned(PlantDiscrete::with_params(relay).unwrap());
    }

    #[test]
    fn riccati_gain_is_the_scalar_closed_form() {
        // x⁺ = a·x + b·u, cost q·x² + r·u²: P solves
        // b²P² + (r − a²r − q·b²)·P − q·r = 0 and K = a·b·P/(r + b²P).
        let (a, b, q, r) = (1.1, 0.5, 2.0, 0.3);
        let mut big_a = [[0.0; AUG]; AUG];
        let mut big_b = [[0.0; MAX_INPUTS]; AUG];
        let mut big_q = [[0.0; AUG]; AUG];
        (big_a[0][0], big_b[0][0], big_q[0][0]) = (a, b, q);
        let k = riccati_gain(&big_a, &big_b, &big_q, r, 1, 1).unwrap()[0][0];
        let (qa, qb, qc) = (b * b, r - a * a * r - q * b * b, -q * r);
        let p = (-qb + libm::sqrt(qb * qb - 4.0 * qa * qc)) / (2.0 * qa);
        let want = a * b * p / (r + b * b * p);
        assert!((k - want).abs() < 1e-9, "{k} {want}");
        // The closed loop is stable.
        assert!((a - b * k).abs() < 1.0);
    }

    #[test]
    fn steady_state_inverts_the_dc_gain() {
        let mut p = (10_000..)
            .map(generate)
            .find(|p| p.class == Class::LagDeadTime)
            .unwrap();
        p.delay_steps = 0;
        let m = p.discrete_model();
        let (n_x, n_u) = steady_state(&p, &m).unwrap();
        let gain = p.b[0][0] / -p.a[0][0];
        assert!((n_u[0][0] - 1.0 / gain).abs() < 1e-9 / gain);
        assert!((n_x[0][0] - 1.0).abs() < 1e-9);
    }

    #[test]
    fn pid_integrates_only_unsaturated_and_filters_its_derivative() {
        let mut p = (10_000..)
            .map(generate)
            .find(|p| p.class == Class::LagDeadTime && !p.discrete)
            .unwrap();
        p.obs_unit = 1.0;
        let pid = FamilyPid::<Plant1>::new(&p, [2.0, 1.0, 0.5]);
        let obs = |e: f32, r: f32| SVector::<f32, 7>::from([e, 0.0, 0.0, 0.0, 0.0, r, 0.0]);
        // A huge error saturates the output: nothing integrates.
        pid.act(&obs(100.0, 100.0)).unwrap();
        assert_eq!(pid.integral.get()[0], 0.0);
        pid.reset();
        // A small error integrates e·dt.
        pid.act(&obs(0.01, 0.0)).unwrap();
        assert_eq!(pid.integral.get()[0], f64::from(0.01f32) * p.dt);
        // Saturated low by a negative error: the integral stays.
        pid.act(&obs(-100.0, 0.0)).unwrap();
        assert_eq!(pid.integral.get()[0], f64::from(0.01f32) * p.dt);
        // The derivative is filtered: a step in y moves it by α of the raw rate.
        pid.reset();
        pid.act(&obs(0.0, 0.0)).unwrap();
        pid.act(&obs(-0.1, 0.0)).unwrap();
        let tf = 0.5 / (2.0 * DERIVATIVE_N);
        let alpha = p.dt / (p.dt + tf);
        let want = alpha * f64::from(0.1f32) / p.dt;
        assert!((pid.derivative.get()[0] - want).abs() < 1e-9 * want.abs());
        assert_eq!(pid.act(&obs(f32::NAN, 0.0)), Err(Error::NonFinite));
    }
}
