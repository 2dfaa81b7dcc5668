//! Pendulum: Gymnasium's `Pendulum-v1`, swing a frictionless pendulum upright.
//!
//! A port of Gymnasium's `PendulumEnv`
//! (`gymnasium/envs/classic_control/pendulum.py`,
//! <https://github.com/Farama-Foundation/Gymnasium/blob/main/gymnasium/envs/classic_control/pendulum.py>,
//! checked against Gymnasium 1.4.0) with the 200-step `TimeLimit` that
//! `gym.make("Pendulum-v1")` adds.
//!
//! Design:
//! - **Gymnasium's arithmetic, in NumPy's types.** Gymnasium's state is an
//!   `np.float64` array and its torque a `np.float32`, and NumPy 2 (NEP 50)
//!   keeps a `float32` a `float32` when combined with a Python float. So,
//!   exactly as Gymnasium evaluates it:
//!   - `u = clip(a, −2, 2)` in `f32`;
//!   - `newthdot = thdot + (15·sin θ + f64(3·u in f32))·0.05` in `f64`, then
//!     clipped to `[−8, 8]`, and `newth = θ + newthdot·0.05` in `f64`;
//!   - `cost = (angle_normalize(θ)² + 0.1·θ̇²) + f64(0.001·u² in f32)` on the
//!     pre-step state (NumPy squares a scalar with `pow`; `x·x` is the correctly
//!     rounded square, which C's `pow` misses by an ulp in ~0.1 % of cases —
//!     invisible once the reward is cast to `f32`), `reward = −cost` cast to
//!     `f32`;
//!   - the observation `[cos θ, sin θ, θ̇]` is computed in `f64` and cast to
//!     `f32`, as Gymnasium's `np.array([...], dtype=np.float32)`.
//!
//!   `sin`/`cos`/`fmod` are the pure-Rust [`libm`]'s `f64` functions (the same
//!   bits on x86-64 and a Cortex-M4F). With an `f32` state, the state's
//!   rounding (~2.4e-7 per step) accumulated along the nonlinear oscillation
//!   to ~1e-4 in the observation over a 200-step episode. In `f64` the state
//!   follows Gymnasium's bit for bit except where libm's `sin` and glibc's
//!   differ in the last bit (about 4 % of the calls at these angles; libm's is
//!   then usually the misrounded one) and the difference survives the
//!   update: 16 of the fixture's 1200 steps. The pendulum does not amplify
//!   them the way the upright cart-pole does: the `f64` states stay within
//!   1.3e-13 of Gymnasium's over whole episodes, and the `f32` observations
//!   are identical at every step (`tests/tests/gym_parity.rs`). The cost on
//!   the MCU (software `f64`: three trigonometric calls and an `fmod` per
//!   step) is small next to the networks (see the [`env`](super) module).
//! - **The cost is the pre-step state's.** `cost = angle_normalize(θ)² +
//!   0.1·θ̇² + 0.001·u²` with the clipped torque `u`, evaluated *before* the
//!   update, and `reward = −cost`, as Gymnasium does.
//! - **Semi-implicit Euler with a speed clip**, as Gymnasium:
//!   `θ̇' = clip(θ̇ + (3g/(2l)·sin θ + 3/(ml²)·u)·dt, −8, 8)`, `θ' = θ + θ̇'·dt`.
//!   `θ` is not wrapped (Gymnasium's is not either); only the cost normalises
//!   it, with Python's floored `%` (see [`angle_normalize`]).
//! - **Never terminates**; `truncated` from the 200th step after a reset on.
//! - **Static-friendly.** `const fn new`, no allocation.

use nalgebra::SVector;
use rand_core::Rng;

use super::{Continuous, Env, Step, uniform_f64};
use crate::error::{Error, check_finite};

use core::f64::consts::{PI, TAU};

/// The plant's physical parameters (Gymnasium's `PendulumEnv` attributes;
/// Gymnasium's constructor takes `g`), settable so a changed plant — a heavier
/// or longer pendulum, a weaker motor — can be simulated.
///
/// [`DEFAULT`](Self::DEFAULT) is Gymnasium's `Pendulum-v1`, bit for bit: the
/// gains are computed per step by Gymnasium's expressions
/// (`3g/(2l)` in `f64`; `3/(ml²)` rounded to `f32` to multiply the `f32`
/// torque, as NumPy does).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default, deny_unknown_fields))]
pub struct PendulumParams {
    /// Gravitational acceleration, m/s², in [0, 100]. Default 10.
    pub g: f64,
    /// Mass, kg, in [0.001, 1000]. Default 1.
    pub m: f64,
    /// Length, m, in [0.001, 100]. Default 1.
    pub l: f64,
    /// Maximum angular speed, rad/s, in [0.001, 1000]. Default 8.
    pub max_speed: f64,
    /// Maximum torque, N·m, in [0.001, 10000] (the action space's bound;
    /// actions are clipped to it in `f32`, like Gymnasium's `float32`
    /// action). Default 2.
    pub max_torque: f32,
    /// Time step, s, in [0.0001, 0.1]. Default 0.05.
    pub dt: f64,
}

impl PendulumParams {
    /// Gymnasium's `Pendulum-v1`.
    pub const DEFAULT: Self = Self {
        g: 10.0,
        m: 1.0,
        l: 1.0,
        max_speed: 8.0,
        max_torque: 2.0,
        dt: 0.05,
    };

    /// Checks every field lies in its documented physical range (NaN and
    /// ±∞ never do); the defaults do.
    ///
    /// # Errors
    /// [`PlantRangeError`](super::PlantRangeError) naming the first field
    /// outside its range, its value and the range.
    pub fn check(&self) -> Result<(), super::PlantRangeError> {
        super::check_ranges(&[
            ("g", self.g, 0.0, 100.0, "m/s²"),
            ("m", self.m, 1e-3, 1e3, "kg"),
            ("l", self.l, 1e-3, 1e2, "m"),
            ("max_speed", self.max_speed, 1e-3, 1e3, "rad/s"),
            ("max_torque", f64::from(self.max_torque), 1e-3, 1e4, "N·m"),
            ("dt", self.dt, 1e-4, 0.1, "s"),
        ])
    }
}

/// Weight of `u²` in the cost, converted to `float32` by NumPy (as the
/// torque gain `3/(ml²)`).
const TORQUE_COST: f32 = 0.001;
/// Half-width of the reset distribution of `θ̇`.
const RESET_SPEED: f64 = 1.0;

/// `((x + π) mod 2π) − π` with Python's floored `%` (the result of the `mod`
/// has the sign of the divisor), as Gymnasium's `angle_normalize`: maps any
/// angle into `[−π, π]`.
///
/// `fmod` truncates (its result has the sign of the dividend), so a negative
/// remainder is shifted up by 2π, which is exactly what Python and NumPy do
/// (`fmod` itself is exact).
#[inline]
pub fn angle_normalize(x: f64) -> f64 {
    let r = libm::fmod(x + PI, TAU);
    let r = if r < 0.0 { r + TAU } else { r };
    r - PI
}

/// Gymnasium's `Pendulum-v1`: swing up and hold an inverted pendulum with a
/// weak motor.
///
/// - Observation: `[cos θ, sin θ, θ̇]` (θ = 0 is upright).
/// - Action: torque `u`, clipped to `[−2, 2]` N·m; a non-finite action is
///   [`Error::NonFinite`].
/// - Reward: `−(angle_normalize(θ)² + 0.1·θ̇² + 0.001·u²)` on the pre-step
///   state, in `[−16.27, 0]`.
/// - Never terminates; truncated at [`MAX_EPISODE_STEPS`](Self::MAX_EPISODE_STEPS).
/// - Reset: `θ` uniform in `[−π, π)`, then `θ̇` uniform in `[−1, 1)`.
///
/// See the [module documentation](self) for the numerical design.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pendulum {
    /// `[θ, θ̇]`, Gymnasium's `f64` state.
    state: [f64; 2],
    /// The plant.
    params: PendulumParams,
    /// Steps since the last reset (saturating).
    elapsed_steps: u32,
}

impl Pendulum {
    /// Time limit: `truncated` from this many steps after a reset on.
    pub const MAX_EPISODE_STEPS: u32 = 200;

    /// A pendulum pointing straight up, at rest, no steps taken. Call
    /// [`reset`](Env::reset) (or [`set_state`](Self::set_state)) before stepping.
    pub const fn new() -> Self {
        Self {
            state: [0.0; 2],
            params: PendulumParams::DEFAULT,
            elapsed_steps: 0,
        }
    }

    super::plant_accessors!(
        PendulumParams,
        [f64; 2],
        "The physical state `[θ, θ̇]` in `f64` (θ not wrapped, as in Gymnasium)."
    );

    /// Overwrites the physical state `[θ, θ̇]`; the step counter is unchanged
    /// (like assigning `env.unwrapped.state` in Gymnasium).
    #[inline]
    pub fn set_state(&mut self, state: [f64; 2]) {
        self.state = state;
    }

    /// The current observation `[cos θ, sin θ, θ̇]`, computed in `f64` and
    /// cast to `f32`.
    #[inline]
    pub fn observation(&self) -> SVector<f32, 3> {
        let [th, thdot] = self.state;
        SVector::from([libm::cos(th) as f32, libm::sin(th) as f32, thdot as f32])
    }
}

super::plant_defaults!(Pendulum, PendulumParams);

impl Env for Pendulum {
    type Obs = SVector<f32, 3>;
    type Space = Continuous<1>;
    const SOLVED_RETURN: f32 = -200.0;

    /// `[−max_torque, max_torque]` N·m (`[−2, 2]` by default).
    fn action_space(&self) -> Continuous<1> {
        Continuous::symmetric(self.params.max_torque)
    }

    fn reset<R: Rng + ?Sized>(&mut self, rng: &mut R) -> SVector<f32, 3> {
        let th = uniform_f64(rng, -PI, PI);
        let thdot = uniform_f64(rng, -RESET_SPEED, RESET_SPEED);
        self.state = [th, thdot];
        self.elapsed_steps = 0;
        self.observation()
    }

    /// Applies the torque `clip(u, −max_torque, max_torque)` for `dt` seconds
    /// (`[−2, 2]`, 0.05 s by default).
    fn step(&mut self, action: SVector<f32, 1>) -> Result<Step<SVector<f32, 3>>, Error> {
        let u = action[0];
        check_finite(u)?;
        let PendulumParams {
            g,
            m,
            l,
            max_speed,
            max_torque,
            dt,
        } = self.params;
        let u = u.clamp(-max_torque, max_torque);
        let [th, thdot] = self.state;
        // Gymnasium: `3 * g / (2 * l)` (Python floats) and `3.0 / (m * l**2)`
        // (a Python float NumPy converts to float32 to multiply the float32 u).
        let gravity_gain = 3.0 * g / (2.0 * l);
        let torque_gain = (3.0 / (m * (l * l))) as f32;

        let th_norm = angle_normalize(th);
        let cost = th_norm * th_norm + 0.1 * (thdot * thdot) + f64::from(TORQUE_COST * (u * u));

        let newthdot = thdot + (gravity_gain * libm::sin(th) + f64::from(torque_gain * u)) * dt;
        let newthdot = newthdot.clamp(-max_speed, max_speed);
        let newth = th + newthdot * dt;
        self.state = [newth, newthdot];

        self.elapsed_steps = self.elapsed_steps.saturating_add(1);
        Ok(Step {
            obs: self.observation(),
            reward: (-cost) as f32,
            terminated: false,
            truncated: self.elapsed_steps >= Self::MAX_EPISODE_STEPS,
        })
    }
}

super::timed_state!(Pendulum, b"PEND", 2, "`[θ, θ̇, elapsed_steps]`.");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::EnvState;
    use crate::env::testing::{NON_FINITE, assert_refused_unchanged};
    use crate::rng;
    use core::f64::consts::FRAC_PI_2;
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro128PlusPlus;

    static STATIC_PENDULUM: Pendulum = Pendulum::new();

    fn act(u: f32) -> SVector<f32, 1> {
        SVector::from([u])
    }

    #[test]
    fn new_is_upright_at_rest_and_static() {
        assert_eq!(STATIC_PENDULUM.state(), [0.0, 0.0]);
        assert_eq!(
            STATIC_PENDULUM.observation(),
            SVector::from([1.0, 0.0, 0.0])
        );
        assert_eq!(Pendulum::default(), Pendulum::new());
        assert_eq!(Pendulum::SOLVED_RETURN, -200.0);
        let p = PendulumParams::DEFAULT;
        assert_eq!(3.0 * p.g / (2.0 * p.l), 15.0);
        assert_eq!((3.0 / (p.m * (p.l * p.l))) as f32, 3.0);
    }

    #[test]
    fn a_changed_plant_follows_its_own_physics() {
        let heavy = PendulumParams {
            g: 9.81,
            m: 2.0,
            l: 0.5,
            max_torque: 1.5,
            dt: 0.02,
            ..PendulumParams::DEFAULT
        };
        let mut env = Pendulum::with_params(heavy).unwrap();
        assert_eq!(env.params(), heavy);
        assert_eq!(env.action_space(), Continuous::symmetric(1.5));
        env.set_state([0.3, 0.5]);
        env.step(act(5.0)).unwrap(); // clipped to 1.5
        let gain = (3.0f64 / (2.0 * (0.5 * 0.5))) as f32 * 1.5;
        let thdot = 0.5 + (3.0 * 9.81 / (2.0 * 0.5) * libm::sin(0.3) + f64::from(gain)) * 0.02;
        assert_eq!(env.state(), [0.3 + thdot * 0.02, thdot]);
        // The parameters survive a state restore.
        let mut words = [0.0; 3];
        env.save_state(&mut words);
        let mut other = Pendulum::with_params(heavy).unwrap();
        other.restore_state(&words).unwrap();
        assert_eq!((other.state(), other.params()), (env.state(), heavy));
        type Set = fn(&mut PendulumParams, f64);
        let fields: [(&str, Set); 6] = [
            ("g", |p, x| p.g = x),
            ("m", |p, x| p.m = x),
            ("l", |p, x| p.l = x),
            ("max_speed", |p, x| p.max_speed = x),
            ("max_torque", |p, x| p.max_torque = x as f32),
            ("dt", |p, x| p.dt = x),
        ];
        for (field, set) in fields {
            for x in [f64::NAN, f64::INFINITY, -1.0, 0.0] {
                let mut p = PendulumParams::DEFAULT;
                set(&mut p, x);
                let result = Pendulum::with_params(p);
                if field == "g" && x == 0.0 {
                    assert!(result.is_ok());
                } else {
                    assert!(
                        matches!(result, Err(Error::InvalidConfig { field: f, .. }) if f == field),
                        "{field} = {x}"
                    );
                }
            }
        }
    }

    #[test]
    fn angle_normalize_matches_python_floored_modulo() {
        // Python: ((x + math.pi) % (2 * math.pi)) - math.pi, `repr` of the result.
        let cases: [(f64, f64); 10] = [
            (0.0, 0.0),
            (1.0, 1.0),
            (-1.0, -1.0),
            (3.0, 3.0),
            (4.0, -2.283_185_307_179_586_2),
            (-4.0, 2.283_185_307_179_586_2),
            (-10.0, 2.566_370_614_359_172_5),
            (10.0, -2.566_370_614_359_172_5),
            (-100.0, 0.530_964_914_873_383_3),
            (73.5, -1.898_223_686_155_031_2),
        ];
        for (x, expected) in cases {
            assert_eq!(angle_normalize(x), expected, "{x}");
        }
        // π maps to −π (Python: (2π) % 2π = 0), −π to −π.
        assert_eq!(angle_normalize(PI), -PI);
        assert_eq!(angle_normalize(-PI), -PI);
        for i in -200..200 {
            let y = angle_normalize(f64::from(i) * 0.37);
            assert!((-PI..=PI).contains(&y), "{y}");
        }
    }

    #[test]
    fn reward_is_the_pre_step_cost_and_torque_is_clipped() {
        let mut env = Pendulum::new();
        env.set_state([PI, 0.0]);
        // Hanging down: cost π² (angle_normalize(π) = −π); u clipped to 2 adds 0.001·4.
        let step = env.step(act(7.0)).unwrap();
        let cost = PI * PI + f64::from(0.001f32 * 4.0);
        assert_eq!(step.reward, (-cost) as f32);
        let mut clipped = Pendulum::new();
        clipped.set_state([PI, 0.0]);
        assert_eq!(clipped.step(act(2.0)).unwrap(), step);
        clipped.set_state([PI, 0.0]);
        let mut neg = clipped;
        assert_eq!(
            neg.step(act(-9.0)).unwrap(),
            clipped.step(act(-2.0)).unwrap()
        );
        // Upright at rest with no torque: zero cost, and it stays put.
        let mut up = Pendulum::new();
        let step = up.step(act(0.0)).unwrap();
        assert_eq!(step.reward, 0.0);
        assert_eq!(up.state(), [0.0, 0.0]);
    }

    #[test]
    fn one_step_matches_hand_computation() {
        // The torque term is float32 (NumPy: Python float × np.float32), the
        // rest float64.
        let mut env = Pendulum::new();
        env.set_state([0.5, -0.25]);
        let u = 1.1f32;
        let step = env.step(act(u)).unwrap();
        let thdot = -0.25 + (15.0 * libm::sin(0.5) + f64::from(3.0f32 * u)) * 0.05;
        let th = 0.5 + thdot * 0.05;
        assert_eq!(env.state(), [th, thdot]);
        assert_ne!(f64::from(3.0f32 * u), 3.0 * f64::from(u));
        assert_eq!(
            step.obs,
            SVector::from([libm::cos(th) as f32, libm::sin(th) as f32, thdot as f32])
        );
        let cost = 0.25 + 0.1 * 0.0625 + f64::from(0.001f32 * (u * u));
        assert_eq!(step.reward, (-cost) as f32);
        assert!(!step.terminated && !step.truncated);
    }

    #[test]
    fn speed_is_clipped() {
        let mut env = Pendulum::new();
        env.set_state([FRAC_PI_2, 7.9]);
        env.step(act(2.0)).unwrap();
        assert_eq!(env.state()[1], 8.0);
        assert_eq!(env.state()[0], FRAC_PI_2 + 8.0 * 0.05);
        env.set_state([-FRAC_PI_2, -7.9]);
        env.step(act(-2.0)).unwrap();
        assert_eq!(env.state()[1], -8.0);
    }

    #[test]
    fn non_finite_action_leaves_everything_unchanged() {
        let mut env = Pendulum::new();
        env.reset(&mut Xoshiro128PlusPlus::seed_from_u64(1));
        env.step(act(0.5)).unwrap();
        assert_refused_unchanged(&mut env, &NON_FINITE, Error::NonFinite);
    }

    #[test]
    fn reset_ranges() {
        let mut env = Pendulum::new();
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(2);
        let (mut th_lo, mut th_hi, mut w_lo, mut w_hi) = (PI, -PI, 1.0f64, -1.0f64);
        for _ in 0..2000 {
            let obs = env.reset(&mut rng);
            let [th, thdot] = env.state();
            assert!((-PI..PI).contains(&th), "{th}");
            assert!((-1.0..1.0).contains(&thdot), "{thdot}");
            assert_eq!(obs, env.observation());
            assert_eq!(env.elapsed_steps(), 0);
            (th_lo, th_hi) = (th_lo.min(th), th_hi.max(th));
            (w_lo, w_hi) = (w_lo.min(thdot), w_hi.max(thdot));
        }
        assert!(th_lo < -3.1 && th_hi > 3.1 && w_lo < -0.99 && w_hi > 0.99);
    }

    #[test]
    fn truncates_at_200_steps_and_never_terminates() {
        let mut env = Pendulum::new();
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(3);
        env.reset(&mut rng);
        for t in 1..=Pendulum::MAX_EPISODE_STEPS {
            let u = rng::uniform_range(&mut rng, -3.0, 3.0);
            let step = env.step(act(u)).unwrap();
            assert!(!step.terminated);
            assert_eq!(step.truncated, t == Pendulum::MAX_EPISODE_STEPS, "step {t}");
            assert!((-16.3..=0.0).contains(&step.reward));
            assert!(step.obs.iter().all(|v| v.is_finite()));
            assert_eq!(env.elapsed_steps(), t);
        }
        let step = env.step(act(0.0)).unwrap();
        assert!(step.truncated && !step.terminated);
        env.reset(&mut rng);
        assert!(!env.step(act(0.0)).unwrap().truncated);
    }

    #[test]
    fn seeded_episodes_are_deterministic() {
        crate::env::testing::assert_seeded_episodes_deterministic(Pendulum::new, 200, |rng, _| {
            act(rng::uniform_range(rng, -2.0, 2.0))
        });
    }
}
