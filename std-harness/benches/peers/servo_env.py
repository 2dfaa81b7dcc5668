"""A Gymnasium port of microrl's servo plant (`microrl::env::Servo`,
core/src/env/servo.rs), with the default `ServoParams`, for the suite's SB3
peer row (sb3_suite_ppo.py --env servo).

The plant: a DC-motor position servo at 1 kHz -- armature circuit with its
inductance, back-EMF, viscous and Coulomb (stick-slip) friction, an actuator
dead-zone and voltage saturation. The task: drive the shaft from a random
angle to a random set-point and hold it for 500 steps (0.5 s).

  observation  [theta* - theta, omega, i] (rad, rad/s, A), float32
  action       the PWM duty cycle u, clipped to [-1, 1]
  reward       -min(|theta* - theta| / 2 pi, 1) - 0.01 u^2, after the step
  episode      never terminates; truncated after 500 steps
  reset        theta, then theta*, each uniform in [-pi, pi); omega = i = 0

This is a transcription of the Rust code, not a re-derivation: the state is
float64 and every expression is evaluated in the Rust code's order (the same
operations on the same IEEE doubles give the same bits; Python, like Rust,
never fuses a multiply-add), the observation is cast to float32 and the reward
rounded to float32 as microrl's `Step` carries them. Parity is checked by the
Rust integration test tests/tests/servo_port_parity.rs (`cargo test -p
microrl-tests --test servo_port_parity`), which replays trajectories recorded
from this module (tests/fixtures/gen_servo_port.py ->
tests/fixtures/servo_port_parity.json) on the Rust `Servo`.

The reset draws from the same distribution as the Rust plant's but not from
its random stream (Gymnasium's `np_random` against microrl's xoshiro).

Importing this module registers it with Gymnasium as `MicrorlServo-v0`.
"""

import math

import gymnasium as gym
import numpy as np
from gymnasium import spaces

# ServoParams::DEFAULT (core/src/env/servo.rs).
INERTIA = 5e-5  # J, kg m^2
VISCOUS_FRICTION = 1e-5  # b, N m s/rad
COULOMB_FRICTION = 0.01  # tau_c, N m
MOTOR_CONSTANT = 0.05  # K, N m/A (torque) = V s/rad (back-EMF)
RESISTANCE = 2.0  # R, ohm
INDUCTANCE = 1e-3  # L, H
SUPPLY_VOLTAGE = 12.0  # V at u = +-1
DEAD_ZONE = 0.04  # fraction of full scale
DT = 1e-3  # control period, s

SUBSTEPS = 10  # integration sub-steps per control period
EFFORT_COST = 0.01  # weight of u^2 in the cost
MAX_EPISODE_STEPS = 500

ENV_ID = "MicrorlServo-v0"


def drive_voltage(u):
    """`ServoParams::drive_voltage`: the voltage the bridge applies for the
    duty cycle u -- zero inside the dead-zone, V sgn(u) (|u| - d)/(1 - d)
    outside it."""
    u = min(max(u, -1.0), 1.0)
    d = DEAD_ZONE
    mag = abs(u)
    if mag <= d:
        return 0.0
    # (V * (|u| - d)) / (1 - d): Rust evaluates the product first.
    v = SUPPLY_VOLTAGE * (mag - d) / (1.0 - d)
    return -v if u < 0.0 else v


def integrate(th, w, i, v):
    """`integrate`: one control period at the drive voltage v, as SUBSTEPS
    sub-steps of dt/SUBSTEPS; returns the new (theta, omega, i)."""
    h = DT / SUBSTEPS
    # One exp per period, e^(-h R / L): ((-h) * R) / L as in Rust. math.exp is
    # the C library's, Rust's is libm's; they agree on this argument (the
    # parity test would see a one-ulp difference in every current).
    decay = math.exp(-h * RESISTANCE / INDUCTANCE)
    k, j, tc = MOTOR_CONSTANT, INERTIA, COULOMB_FRICTION
    for _ in range(SUBSTEPS):
        # The current advanced exactly for the speed held fixed.
        i_inf = (v - k * w) / RESISTANCE
        i = i_inf + (i - i_inf) * decay
        # Then the speed by semi-implicit Euler with the new current.
        drive = k * i - VISCOUS_FRICTION * w
        if w == 0.0:
            # Stuck: breaks away only when the drive overcomes static friction.
            if abs(drive) <= tc:
                w = 0.0
            else:
                net = drive - tc if drive > 0.0 else drive + tc
                w = h * net / j  # (h * net) / J
        else:
            friction = tc if w > 0.0 else -tc
            nxt = w + h * (drive - friction) / j  # w + ((h * (drive - friction)) / J)
            # A speed that would cross (or reach) zero stops there: friction
            # never reverses the motion within a sub-step.
            w = nxt if (nxt > 0.0) == (w > 0.0) and nxt != 0.0 else 0.0
        # Then the angle with the new speed.
        th += h * w
    return th, w, i


class ServoEnv(gym.Env):
    """microrl's `Servo` with the default `ServoParams` (see the module
    docstring)."""

    metadata = {"render_modes": []}

    def __init__(self):
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(3,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        # [theta, omega, i, theta*], float64, as the Rust plant's state.
        self.state = [0.0, 0.0, 0.0, 0.0]
        self.elapsed_steps = 0

    def set_state(self, state):
        """`Servo::set_state`: [theta, omega, i, theta*]; the step counter is
        unchanged."""
        self.state = [float(x) for x in state]

    def observation(self):
        """[theta* - theta, omega, i], computed in float64, cast to float32."""
        th, w, i, target = self.state
        return np.array([target - th, w, i], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        # low + (high - low) * u, theta first, then the set-point.
        th = -math.pi + 2.0 * math.pi * float(self.np_random.random())
        target = -math.pi + 2.0 * math.pi * float(self.np_random.random())
        self.state = [th, 0.0, 0.0, target]
        self.elapsed_steps = 0
        return self.observation(), {}

    def step(self, action):
        # microrl's action is an f32: round to float32 first, then widen.
        u = float(np.float32(np.asarray(action, dtype=np.float32).reshape(-1)[0]))
        if not math.isfinite(u):
            raise ValueError(f"non-finite action {u}")
        u = min(max(u, -1.0), 1.0)
        th, w, i, target = self.state
        v = drive_voltage(u)
        th, w, i = integrate(th, w, i, v)
        self.state = [th, w, i, target]
        error = abs(target - th) / math.tau  # TAU = 2 pi, exact
        # -(min(error, 1)) - (0.01 * u) * u, then rounded to f32 as microrl's Step.
        reward = -(error if error < 1.0 else 1.0) - EFFORT_COST * u * u
        reward = float(np.float32(reward))
        self.elapsed_steps += 1
        truncated = self.elapsed_steps >= MAX_EPISODE_STEPS
        return self.observation(), reward, False, truncated, {}


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point=ServoEnv)
