"""SB3 SAC or TD3 on Pendulum-v1 with RL Zoo's tuned hyper-parameters, for
microrl's peer benchmark (run.sh beside this file), with a held-out
evaluation curve.

RL Zoo (rl-baselines3-zoo at 22e3ff2, 2026-04-23; hyperparams/sac.yml and
hyperparams/td3.yml, entry Pendulum-v1):
    sac: n_timesteps 20000, policy MlpPolicy, learning_rate 1e-3
    td3: n_timesteps 20000, policy MlpPolicy, gamma 0.98, buffer_size 200000,
         learning_starts 10000, noise_type normal, noise_std 0.1,
         gradient_steps 1, train_freq 1, learning_rate 1e-3,
         policy_kwargs dict(net_arch=[400, 300])
Everything else is SB3's default:
    SAC: buffer_size 1e6, learning_starts 100, batch_size 256, tau 0.005,
         gamma 0.99, train_freq 1, gradient_steps 1, ent_coef 'auto' (initial
         1.0), target_entropy -dim(A), target_update_interval 1, MlpPolicy
         256-256 ReLU actor and twin critics, Adam (eps 1e-8).
    TD3: batch_size 256, tau 0.005, policy_delay 2, target_policy_noise 0.2,
         target_noise_clip 0.5, Adam (eps 1e-8); net_arch 400-300 ReLU (RL Zoo's).
RL Zoo's `noise_type normal, noise_std 0.1` is NormalActionNoise(0, 0.1) on
the (one-dimensional) action, as rl_zoo3's exp_manager builds it.

The held-out evaluation curve: every --eval-interval environment steps
(and after the last one), the deterministic policy plays --eval-episodes
Pendulum-v1 episodes, episode i starting from reset(seed=1_000_000 + i) --
seeds no training run uses, the same start states at every point and for
every training seed --, all episodes in step (one batched predict per
step). Each point prints
    PEERS_EVAL step=S cpu_s=C return=R std=D
C being the process's CPU time so far (time.process_time: user + sys of
every thread) minus that of the curve's evaluations so far: the training's
own cost. The evaluation after the last step is the final one (not
subtracted), followed by
    PEERS_RESULT steps=S final_return=R episodes=N eval_cpu_s=E
E being the CPU time of the curve's evaluations, which run.py subtracts from
the run's getrusage CPU time.

usage: python sb3_pendulum_offpolicy.py --algo sac|td3 [--steps 20000]
       [--seed 0] [--eval-episodes 100] [--eval-interval 1000]
       [--learning-starts N]   (smoke tests only: overrides RL Zoo's value)
"""

import argparse
import time

import numpy as np
import torch

# One thread: the benchmark pins every process to one core and measures CPU
# seconds; intra-op threads would only add spinning.
torch.set_num_threads(1)

import gymnasium as gym  # noqa: E402
from stable_baselines3 import SAC, TD3  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402
from stable_baselines3.common.noise import NormalActionNoise  # noqa: E402

HELD_OUT_SEED = 1_000_000


def held_out_return(model, n_episodes):
    """Mean and std of the deterministic policy's return over the held-out starts."""
    envs = [gym.make("Pendulum-v1") for _ in range(n_episodes)]
    obs = np.stack([e.reset(seed=HELD_OUT_SEED + i)[0] for i, e in enumerate(envs)])
    returns = np.zeros(n_episodes)
    done = np.zeros(n_episodes, dtype=bool)
    while not done.all():
        actions, _ = model.predict(obs, deterministic=True)
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


class HeldOutCurve(BaseCallback):
    """EvalCallback-like: a held-out evaluation every `interval` steps, its
    CPU time accounted separately."""

    def __init__(self, interval, episodes, total):
        super().__init__()
        self.interval, self.episodes, self.total = interval, episodes, total
        self.eval_cpu = 0.0

    def _on_step(self):
        n = self.num_timesteps
        if n % self.interval == 0 and n < self.total:
            t0 = time.process_time()
            mean, std = held_out_return(self.model, self.episodes)
            t1 = time.process_time()
            print(f"PEERS_EVAL step={n} cpu_s={t0 - self.eval_cpu:.4f} return={mean:.3f} std={std:.3f}",
                  flush=True)
            self.eval_cpu += t1 - t0
        return True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--algo", choices=["sac", "td3"], required=True)
    p.add_argument("--steps", type=int, default=20_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-episodes", type=int, default=100)
    p.add_argument("--eval-interval", type=int, default=1000)
    p.add_argument("--learning-starts", type=int, default=None)
    a = p.parse_args()

    env = gym.make("Pendulum-v1")
    if a.algo == "sac":
        kwargs = dict(learning_rate=1e-3)
        cls = SAC
    else:
        n_actions = env.action_space.shape[-1]
        kwargs = dict(
            gamma=0.98,
            buffer_size=200_000,
            learning_starts=10_000,
            action_noise=NormalActionNoise(np.zeros(n_actions), 0.1 * np.ones(n_actions)),
            gradient_steps=1,
            train_freq=1,
            learning_rate=1e-3,
            policy_kwargs=dict(net_arch=[400, 300]),
        )
        cls = TD3
    if a.learning_starts is not None:
        kwargs["learning_starts"] = a.learning_starts
    model = cls("MlpPolicy", env, seed=a.seed, device="cpu", verbose=0, **kwargs)
    curve = HeldOutCurve(a.eval_interval, a.eval_episodes, a.steps)
    model.learn(total_timesteps=a.steps, callback=curve)

    t0 = time.process_time()
    mean, std = held_out_return(model, a.eval_episodes)
    print(f"PEERS_EVAL step={model.num_timesteps} cpu_s={t0 - curve.eval_cpu:.4f} return={mean:.3f} "
          f"std={std:.3f} final", flush=True)
    print(f"PEERS_RESULT steps={model.num_timesteps} final_return={mean:.3f} "
          f"episodes={a.eval_episodes} eval_cpu_s={curve.eval_cpu:.4f}")


if __name__ == "__main__":
    main()
