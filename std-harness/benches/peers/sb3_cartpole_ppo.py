"""SB3 PPO on CartPole-v1 with RL Zoo's tuned hyper-parameters, for microrl's
peer benchmark (run.sh beside this file).

RL Zoo (rl-baselines3-zoo, hyperparams/ppo.yml, CartPole-v1):
    n_envs 8, n_timesteps 1e5, policy MlpPolicy, n_steps 32, batch_size 256,
    gae_lambda 0.8, gamma 0.98, n_epochs 20, ent_coef 0.0,
    learning_rate lin_1e-3, clip_range lin_0.2          (no VecNormalize)
Everything else is SB3's PPO default: vf_coef 0.5, max_grad_norm 0.5,
normalize_advantage True, clip_range_vf None, Adam eps 1e-5, MlpPolicy
64-64 tanh with separate actor and critic, orthogonal initialisation.

Trains for the whole budget (no callback, no early stop), then evaluates the
deterministic policy over 100 episodes of a fresh CartPole-v1 and prints one
line `PEERS_RESULT steps=... final_return=... episodes=...`.

usage: python sb3_cartpole_ppo.py [--steps 100000] [--seed 0] [--eval-episodes 100]
"""

import argparse

import torch

# One thread: the benchmark pins every process to one core and measures CPU
# seconds; intra-op threads would only add spinning.
torch.set_num_threads(1)

import gymnasium as gym  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.env_util import make_vec_env  # noqa: E402
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402


def linear(initial):
    """RL Zoo's `lin_<x>`: x times the remaining progress (1 -> 0)."""
    return lambda progress_remaining: progress_remaining * initial


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-episodes", type=int, default=100)
    a = p.parse_args()

    env = make_vec_env("CartPole-v1", n_envs=8, seed=a.seed)
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=32,
        batch_size=256,
        n_epochs=20,
        gamma=0.98,
        gae_lambda=0.8,
        learning_rate=linear(1e-3),
        clip_range=linear(0.2),
        ent_coef=0.0,
        seed=a.seed,
        device="cpu",
        verbose=0,
    )
    model.learn(total_timesteps=a.steps)

    eval_env = gym.make("CartPole-v1")
    eval_env.reset(seed=a.seed + 1_000_000)
    mean, std = evaluate_policy(
        model, eval_env, n_eval_episodes=a.eval_episodes, deterministic=True
    )
    print(
        f"PEERS_RESULT steps={model.num_timesteps} final_return={mean:.3f} "
        f"episodes={a.eval_episodes} std={std:.3f}"
    )


if __name__ == "__main__":
    main()
