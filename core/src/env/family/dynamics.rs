//! One period of a family plant: the actuator chain, the integration, the
//! sensor and the cost, on the state every plant type shares ([`Core`]).

use super::{MAX_DELAY, MAX_INPUTS, MAX_STATES, PlantParams};
use crate::env::{counter_from_f64, finite_words, uniform_f64};
use crate::error::Error;
use rand_core::Rng;

/// Slots of the delay line: the command of this period and the
/// [`MAX_DELAY`] before it.
pub(super) const RING: usize = MAX_DELAY + 1;

/// Words of a saved [`Core`]: `x` (4), the step counter, the noise seed,
/// the two set-points (2 × 2), the change step, the disturbance and its
/// step, the applied command after the rate limit (2), the backlash's
/// output (2), the last command (2), the delay line (11 × 2) and its head.
pub(super) const WORDS: usize = MAX_STATES + 2 + 2 * MAX_INPUTS + 3 + 3 * MAX_INPUTS + 2 * RING + 1;

/// The state of a family plant and its episode.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Core {
    pub params: PlantParams,
    /// The physical state.
    pub x: [f64; MAX_STATES],
    pub elapsed_steps: u32,
    /// Seeds the sensor noise of the episode (a counter-based stream:
    /// the noise of step `t`, state `i` is a hash of the seed, `t` and `i`).
    pub noise_seed: u32,
    /// The set-points before and after the change.
    pub setpoint: [[f64; MAX_INPUTS]; 2],
    /// The step from which the second set-point holds.
    pub change_step: u32,
    /// The load disturbance (command units, on input 0) and its first step.
    pub load: f64,
    pub load_step: u32,
    /// The command after the rate limit.
    pub slewed: [f64; MAX_INPUTS],
    /// The backlash's output: what reaches the plant before the load.
    pub gear: [f64; MAX_INPUTS],
    /// The last command sent (clipped).
    pub last: [f64; MAX_INPUTS],
    /// Commands sent, newest at `head − 1`.
    pub ring: [[f64; MAX_INPUTS]; RING],
    pub head: u32,
}

impl Core {
    /// A plant at rest at the origin; [`reset`](Self::reset) before stepping.
    pub fn new(params: PlantParams) -> Self {
        let rest = [params.u_rest(); MAX_INPUTS];
        Self {
            params,
            x: [0.0; MAX_STATES],
            elapsed_steps: 0,
            noise_seed: 0,
            setpoint: [[0.0; MAX_INPUTS]; 2],
            change_step: u32::MAX,
            load: 0.0,
            load_step: u32::MAX,
            slewed: rest,
            gear: rest,
            last: rest,
            ring: [rest; RING],
            head: 0,
        }
    }

    /// A new episode: the start state, the set-points, the change and load
    /// steps and the noise seed, drawn from `rng` in that order.
    pub fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        let p = self.params;
        *self = Self::new(p);
        for i in 0..p.states as usize {
            let s = p.start_spread[i];
            self.x[i] = uniform_f64(rng, -s, s);
        }
        for set in &mut self.setpoint {
            for r in set.iter_mut().take(p.inputs as usize) {
                *r = uniform_f64(rng, p.ref_low, p.ref_high);
            }
        }
        let n = f64::from(p.episode_steps);
        let third = |rng: &mut R| uniform_f64(rng, n / 3.0, 2.0 * n / 3.0) as u32;
        let change = third(rng);
        if p.setpoint_change {
            self.change_step = change;
        } else {
            self.setpoint[1] = self.setpoint[0];
        }
        let load_step = (uniform_f64(rng, 0.2, 0.8) * n) as u32;
        let magnitude = uniform_f64(rng, 0.5, 1.0) * p.disturbance;
        let negative = rng.next_u32() & 1 == 1;
        if p.disturbance != 0.0 {
            self.load_step = load_step;
            // A one-sided actuator's load is a loss (heat leaking away).
            self.load = if p.u_low >= 0.0 || negative {
                -magnitude.abs()
            } else {
                magnitude.abs()
            };
        }
        self.noise_seed = rng.next_u32();
    }

    /// The set-point now.
    pub fn setpoint(&self) -> [f64; MAX_INPUTS] {
        self.setpoint[usize::from(self.elapsed_steps >= self.change_step)]
    }

    /// `y = C·x`.
    pub fn output(&self, x: &[f64; MAX_STATES]) -> [f64; MAX_INPUTS] {
        let n = self.params.states as usize;
        let mut y = [0.0; MAX_INPUTS];
        for (k, yk) in y.iter_mut().enumerate().take(self.params.inputs as usize) {
            for j in 0..n {
                *yk += self.params.c[k][j] * x[j];
            }
        }
        y
    }

    /// What the sensors read: each state plus its noise, quantised.
    pub fn measured(&self) -> [f64; MAX_STATES] {
        let p = &self.params;
        let mut m = [0.0; MAX_STATES];
        for i in 0..p.states as usize {
            let mut v = self.x[i];
            if p.noise[i] > 0.0 {
                v += p.noise[i] * gauss(self.noise_seed, self.elapsed_steps, i as u32);
            }
            if p.quantum[i] > 0.0 {
                v = libm::round(v / p.quantum[i]) * p.quantum[i];
            }
            m[i] = v;
        }
        m
    }

    /// The observation `[e (A), x (4), r (A), u_prev (A)]` (see the module
    /// documentation), into `out` of length `3A + 4`.
    pub fn observe(&self, out: &mut [f32]) {
        let a = self.params.inputs as usize;
        let unit = self.params.obs_unit;
        let m = self.measured();
        let y = self.output(&m);
        let r = self.setpoint();
        for k in 0..a {
            out[k] = ((r[k] - y[k]) * unit) as f32;
            out[a + MAX_STATES + k] = (r[k] * unit) as f32;
            out[2 * a + MAX_STATES + k] = self.last[k] as f32;
        }
        for i in 0..MAX_STATES {
            out[a + i] = (m[i] * unit) as f32;
        }
    }

    /// One period with the (clipped) command `u`; returns the reward.
    pub fn advance(&mut self, u: [f64; MAX_INPUTS]) -> f64 {
        let p = self.params;
        let inputs = p.inputs as usize;
        self.ring[self.head as usize] = u;
        let delayed = (self.head as usize + RING - p.delay_steps as usize) % RING;
        let applied = self.ring[delayed];
        self.head = (self.head + 1) % RING as u32;
        self.last = u;
        let mut drive = [0.0; MAX_INPUTS];
        for k in 0..inputs {
            self.slewed[k] = if p.rate_limit > 0.0 {
                let max = p.rate_limit * p.dt;
                self.slewed[k] + (applied[k] - self.slewed[k]).clamp(-max, max)
            } else {
                applied[k]
            };
            let v = dead_zone(&p, self.slewed[k]);
            // Backlash (play of width `backlash`): the output follows the
            // drive only once the drive has crossed the gap.
            let half = 0.5 * p.backlash;
            if v - self.gear[k] > half {
                self.gear[k] = v - half;
            } else if v - self.gear[k] < -half {
                self.gear[k] = v + half;
            }
            drive[k] = self.gear[k];
        }
        if self.elapsed_steps >= self.load_step {
            drive[0] += self.load;
        }
        self.x = integrate(&p, self.x, drive, true);
        self.elapsed_steps = self.elapsed_steps.saturating_add(1);
        // The cost of the state reached, with the command that led there.
        let y = self.output(&self.x);
        let r = self.setpoint();
        let span = p.ref_span();
        let rest = p.u_rest();
        let mut cost = 0.0;
        for k in 0..inputs {
            let e = (r[k] - y[k]) / span;
            let du = u[k] - rest;
            cost += e * e + p.effort_weight * du * du;
        }
        -p.cost_scale * cost / inputs as f64
    }

    /// The state as words (see [`WORDS`]).
    pub fn save(&self, out: &mut [f64]) {
        let mut w = out.iter_mut();
        let mut put = |v: f64| {
            if let Some(o) = w.next() {
                *o = v;
            }
        };
        self.x.iter().for_each(|&v| put(v));
        put(f64::from(self.elapsed_steps));
        put(f64::from(self.noise_seed));
        self.setpoint.iter().flatten().for_each(|&v| put(v));
        put(f64::from(self.change_step));
        put(self.load);
        put(f64::from(self.load_step));
        for arr in [self.slewed, self.gear, self.last] {
            arr.iter().for_each(|&v| put(v));
        }
        self.ring.iter().flatten().for_each(|&v| put(v));
        put(f64::from(self.head));
    }

    /// Reads what [`save`](Self::save) wrote; nothing changes on error.
    ///
    /// # Errors
    /// [`Error::Truncated`] for a wrong length, [`Error::NonFinite`] for a
    /// non-finite word, [`Error::InvalidState`] for a counter or a head out
    /// of range.
    pub fn restore(&mut self, words: &[f64]) -> Result<(), Error> {
        let words: &[f64; WORDS] = words.try_into().map_err(|_| Error::Truncated)?;
        let all: [f64; WORDS] = finite_words(words)?;
        let mut next = all.iter().copied();
        let mut take = || next.next().unwrap_or(0.0);
        let mut s = *self;
        s.x = core::array::from_fn(|_| take());
        s.elapsed_steps = counter_from_f64(take())?;
        s.noise_seed = counter_from_f64(take())?;
        for set in &mut s.setpoint {
            *set = core::array::from_fn(|_| take());
        }
        s.change_step = counter_from_f64(take())?;
        s.load = take();
        s.load_step = counter_from_f64(take())?;
        s.slewed = core::array::from_fn(|_| take());
        s.gear = core::array::from_fn(|_| take());
        s.last = core::array::from_fn(|_| take());
        for slot in &mut s.ring {
            *slot = core::array::from_fn(|_| take());
        }
        s.head = counter_from_f64(take())?;
        if s.head as usize >= RING {
            return Err(Error::InvalidState {
                what: "delay-line head beyond the line",
            });
        }
        *self = s;
        Ok(())
    }
}

/// The dead-zone about the actuator's rest: nothing within `dead_zone` of
/// it, then linear up to full command on each side.
pub(super) fn dead_zone(p: &PlantParams, v: f64) -> f64 {
    let d = p.dead_zone;
    if d == 0.0 {
        return v;
    }
    let rest = p.u_rest();
    let m = v - rest;
    let side = if m > 0.0 {
        p.u_high - rest
    } else {
        rest - p.u_low
    };
    if m.abs() <= d || side <= d {
        rest
    } else {
        rest + m.signum() * (m.abs() - d) * side / (side - d)
    }
}

/// One control period of `ẋ = A·x + B·u` with `u` held: `substeps` RK4
/// steps; with `nonlinear`, after each, Coulomb friction on
/// `x[friction_state]` (a projection that stops the motion and never
/// reverses it: stick–slip, Karnopp 1985) and the end stops.
pub(super) fn integrate(
    p: &PlantParams,
    mut x: [f64; MAX_STATES],
    u: [f64; MAX_INPUTS],
    nonlinear: bool,
) -> [f64; MAX_STATES] {
    let n = p.states as usize;
    let inputs = p.inputs as usize;
    let h = p.dt / f64::from(p.substeps);
    let f = |x: &[f64; MAX_STATES]| {
        let mut d = [0.0; MAX_STATES];
        for i in 0..n {
            let mut s = 0.0;
            for j in 0..n {
                s += p.a[i][j] * x[j];
            }
            for k in 0..inputs {
                s += p.b[i][k] * u[k];
            }
            d[i] = s;
        }
        d
    };
    let add = |x: &[f64; MAX_STATES], k: &[f64; MAX_STATES], c: f64| {
        core::array::from_fn::<f64, MAX_STATES, _>(|i| x[i] + c * k[i])
    };
    for _ in 0..p.substeps {
        let k1 = f(&x);
        let k2 = f(&add(&x, &k1, 0.5 * h));
        let k3 = f(&add(&x, &k2, 0.5 * h));
        let k4 = f(&add(&x, &k3, h));
        for i in 0..n {
            x[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
        }
        if nonlinear {
            let fs = p.friction_state as usize;
            if fs < n && p.coulomb > 0.0 {
                let v = x[fs];
                let slowed = v.abs() - p.coulomb * h;
                x[fs] = if slowed > 0.0 {
                    slowed.copysign(v)
                } else {
                    0.0
                };
            }
            for i in 0..n {
                x[i] = x[i].clamp(-p.envelope[i], p.envelope[i]);
            }
        }
    }
    x
}

/// A standard normal variate for step `step`, state `i` of the episode
/// with noise seed `seed`: SplitMix64 (Steele, Lea & Flood 2014) of the
/// three, two 26-bit uniforms, Box–Muller, in `f64` with libm.
fn gauss(seed: u32, step: u32, i: u32) -> f64 {
    fn mix(mut z: u64) -> u64 {
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    let h = mix(mix((u64::from(seed) << 32) | u64::from(step)) ^ u64::from(i));
    let scale = 1.0 / (1u64 << 26) as f64;
    let u1 = ((h >> 38) + 1) as f64 * scale; // (0, 1]
    let u2 = ((h >> 12) & ((1 << 26) - 1)) as f64 * scale; // [0, 1)
    libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(core::f64::consts::TAU * u2)
}

#[cfg(test)]
pub(super) fn gauss_for_tests(seed: u32, step: u32, i: u32) -> f64 {
    gauss(seed, step, i)
}
