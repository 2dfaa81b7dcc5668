"""SB3 PPO on the two suite plants Gymnasium has, Acrobot-v1 and
MountainCarContinuous-v0, for the `--tasks suite` rows of microrl's peer
benchmark (run.sh beside this file): the peers of `microrl suite`'s PPO rows;
and on the servo (`--env servo`, defaults only), through its Python port
servo_env.py beside this file (Gymnasium id MicrorlServo-v0; its parity with
microrl's Rust `Servo` is checked by tests/tests/servo_port_parity.rs).

Two configurations:

  defaults  SB3's own: `PPO("MlpPolicy", env)` on one environment, 500 000
            steps (microrl's peer rows: `microrl suite --steps 500000`;
            microrl suite's own budget is 1 000 000 since 2026-11-28):
            n_steps 2048, batch_size 64,
            n_epochs 10, gamma 0.99, gae_lambda 0.95, lr 3e-4, clip 0.2,
            ent_coef 0, vf_coef 0.5, max_grad_norm 0.5, 64-64 tanh actor
            and critic, orthogonal initialisation, no VecNormalize.

            The servo runs this configuration only (RL Zoo has no entry
            for it).

  rlzoo     RL Zoo's tuned entries, rl-baselines3-zoo 22e3ff2 (2026-04-23),
            hyperparams/ppo.yml, with their own n_timesteps, quoted:

              MountainCarContinuous-v0:
                normalize: true
                n_envs: 1
                n_timesteps: !!float 20000
                policy: 'MlpPolicy'
                batch_size: 256
                n_steps: 8
                gamma: 0.9999
                learning_rate: !!float 7.77e-05
                ent_coef: 0.00429
                clip_range: 0.1
                n_epochs: 10
                gae_lambda: 0.9
                max_grad_norm: 5
                vf_coef: 0.19
                use_sde: True
                policy_kwargs: "dict(log_std_init=-3.29, ortho_init=False)"

              Acrobot-v1:
                normalize: true
                n_envs: 16
                n_timesteps: !!float 1e6
                policy: 'MlpPolicy'
                n_steps: 256
                gae_lambda: 0.94
                gamma: 0.99
                n_epochs: 4
                ent_coef: 0.0

            Everything else SB3's default. `normalize: true` is what RL Zoo's
            exp_manager makes of it: VecNormalize(env, gamma=<the entry's
            gamma>) -- observations and rewards, clip 10, epsilon 1e-8 --
            around make_vec_env(env_id, n_envs, seed) (DummyVecEnv).
            MountainCarContinuous's batch_size 256 exceeds its 8-step rollout:
            SB3 then trains on the whole rollout as one minibatch, as RL Zoo
            does. RL Zoo's EvalCallback (5 episodes every 25 000 steps) is not
            run: no evaluation while training, as in the other SB3 rows.

After training, the deterministic policy is written for `microrl import`:
OUT/policy.safetensors (`model.policy.state_dict()`, metadata
activation_fn Tanh) and, with VecNormalize, OUT/vecnormalize.json (the frozen
observation statistics; VecNormalize's reward statistics only scale the
training's rewards). gSDE (RL Zoo's MountainCarContinuous): SB3's gSDE
`log_std` is a [64, 1] matrix (the state-dependent exploration's weights),
which microrl's Gaussian actor does not have; the file carries instead
`log_std` = [log_std_init] (-3.29). The deterministic action -- action_net's
mean, clipped to [-1, 1] by `predict` -- reads neither. run.py then runs
`microrl import` and `microrl eval --episodes 200 --seed 2000`: the 200
held-out start states `microrl suite` scores its policies and baselines on.

This script also scores the policy in Gymnasium itself, as a cross-check of
the import: --eval-episodes deterministic episodes, episode i from
reset(seed=1_000_000 + i) (seeds no training uses: training seeds its
environments with seed .. seed + n_envs - 1), observations normalised with the
frozen statistics, all episodes in step (one batched `predict` a step). Those
start states come from the same distribution as microrl's but are not
microrl's.

Prints one line
    PEERS_RESULT steps=S final_return=R episodes=N std=D train_cpu_s=T eval_cpu_s=E
R being the Gymnasium evaluation's mean return, T the CPU time
(time.process_time: user + sys of every thread) of model.learn() alone, E that
of the Gymnasium evaluation (run.py reports both apart from the process's
getrusage CPU time).

For the servo, "Gymnasium" is the port: the same check on the Python plant.

usage: python sb3_suite_ppo.py --env acrobot|mountaincar-continuous|servo
       --config defaults|rlzoo --out DIR [--steps N] [--seed 0]
       [--eval-episodes 200]
"""

import argparse
import json
import os
import platform
import time

import numpy as np
import torch

# One thread: the benchmark pins every process to one core and measures CPU
# seconds; intra-op threads would only add spinning.
torch.set_num_threads(1)

import gymnasium as gym  # noqa: E402
import stable_baselines3  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402
from stable_baselines3.common.vec_env import VecNormalize  # noqa: E402

import servo_env  # noqa: E402  (beside this file; registers MicrorlServo-v0)

GYM_ID = {"acrobot": "Acrobot-v1", "mountaincar-continuous": "MountainCarContinuous-v0",
          "servo": servo_env.ENV_ID}
HELD_OUT_SEED = 1_000_000
DEFAULT_STEPS = 500_000  # microrl's peer rows: `microrl suite --steps 500000`

# RL Zoo's entries (see the docstring): n_envs, n_timesteps, normalize, PPO kwargs.
RLZOO = {
    "mountaincar-continuous": dict(
        n_envs=1, n_timesteps=20_000, normalize=True,
        ppo=dict(batch_size=256, n_steps=8, gamma=0.9999, learning_rate=7.77e-05,
                 ent_coef=0.00429, clip_range=0.1, n_epochs=10, gae_lambda=0.9,
                 max_grad_norm=5, vf_coef=0.19, use_sde=True,
                 policy_kwargs=dict(log_std_init=-3.29, ortho_init=False))),
    "acrobot": dict(
        n_envs=16, n_timesteps=1_000_000, normalize=True,
        ppo=dict(n_steps=256, gae_lambda=0.94, gamma=0.99, n_epochs=4, ent_coef=0.0)),
}


def gym_held_out(model, gym_id, vecnorm, n_episodes):
    """Mean and std of the deterministic policy's return over Gymnasium
    episodes started from reset(seed=HELD_OUT_SEED + i)."""
    envs = [gym.make(gym_id) for _ in range(n_episodes)]
    obs = np.stack([e.reset(seed=HELD_OUT_SEED + i)[0] for i, e in enumerate(envs)])
    returns = np.zeros(n_episodes)
    done = np.zeros(n_episodes, dtype=bool)
    while not done.all():
        net_in = vecnorm.normalize_obs(obs) if vecnorm is not None else obs
        actions, _ = model.predict(net_in, deterministic=True)
        for i, e in enumerate(envs):
            if done[i]:
                continue
            o, r, terminated, truncated, _ = e.step(actions[i])
            obs[i] = o
            returns[i] += r
            done[i] = terminated or truncated
    for e in envs:
        e.close()
    return float(returns.mean()), float(returns.std())


def save_policy(model, gym_id, config, vecnorm, out, log_std_init):
    os.makedirs(out, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in model.policy.state_dict().items()}
    if model.use_sde:
        # gSDE's exploration matrix [latent, act] -> a state-independent log-std
        # [act] for microrl's Gaussian actor; the deterministic action reads neither.
        n_act = state["log_std"].shape[1]
        state["log_std"] = torch.full((n_act,), float(log_std_init), dtype=state["log_std"].dtype)
    meta = {
        "activation_fn": model.policy.activation_fn.__name__,
        "net_arch": json.dumps([64, 64]),
        "env_id": gym_id,
        "source": "stable-baselines3",
        "config": config,
        "use_sde": str(bool(model.use_sde)),
        "stable_baselines3": stable_baselines3.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
    }
    save_file(state, os.path.join(out, "policy.safetensors"), meta)
    if vecnorm is not None:
        with open(os.path.join(out, "vecnormalize.json"), "w") as f:
            json.dump({"obs_rms": {"mean": vecnorm.obs_rms.mean.tolist(),
                                   "var": vecnorm.obs_rms.var.tolist(),
                                   "count": float(vecnorm.obs_rms.count)},
                       "clip_obs": vecnorm.clip_obs, "epsilon": vecnorm.epsilon}, f)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--env", choices=sorted(GYM_ID), required=True)
    p.add_argument("--config", choices=["defaults", "rlzoo"], required=True)
    p.add_argument("--steps", type=int, default=None,
                   help="default: 500 000 (defaults) or RL Zoo's n_timesteps (rlzoo)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-episodes", type=int, default=200)
    p.add_argument("--out", required=True, help="directory for policy.safetensors (+ vecnormalize.json)")
    a = p.parse_args()
    gym_id = GYM_ID[a.env]
    if a.config == "rlzoo" and a.env not in RLZOO:
        p.error(f"--config rlzoo: RL Zoo has no entry for {a.env}")

    log_std_init = 0.0
    if a.config == "defaults":
        steps = a.steps or DEFAULT_STEPS
        env = make_vec_env(gym_id, n_envs=1, seed=a.seed)
        vecnorm = None
        kwargs = {}
    else:
        z = RLZOO[a.env]
        steps = a.steps or z["n_timesteps"]
        kwargs = dict(z["ppo"])
        log_std_init = kwargs.get("policy_kwargs", {}).get("log_std_init", 0.0)
        env = make_vec_env(gym_id, n_envs=z["n_envs"], seed=a.seed)
        vecnorm = VecNormalize(env, gamma=kwargs["gamma"]) if z["normalize"] else None
        if vecnorm is not None:
            env = vecnorm

    model = PPO("MlpPolicy", env, seed=a.seed, device="cpu", verbose=0, **kwargs)
    t0 = time.process_time()
    model.learn(total_timesteps=steps)
    train_cpu = time.process_time() - t0
    if vecnorm is not None:
        vecnorm.training = False  # frozen statistics from here on

    save_policy(model, gym_id, a.config, vecnorm, a.out, log_std_init)

    t0 = time.process_time()
    mean, std = gym_held_out(model, gym_id, vecnorm, a.eval_episodes)
    eval_cpu = time.process_time() - t0
    print(f"PEERS_RESULT steps={model.num_timesteps} final_return={mean:.3f} "
          f"episodes={a.eval_episodes} std={std:.3f} train_cpu_s={train_cpu:.3f} "
          f"eval_cpu_s={eval_cpu:.3f}")


if __name__ == "__main__":
    main()
