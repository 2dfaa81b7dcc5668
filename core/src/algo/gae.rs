//! Generalised advantage estimation (Schulman et al. 2016; notes 002 §6).
//!
//! With the TD error `δ_t = r_t + γ V(s_{t+1}) − V(s_t)`, the GAE advantage
//! has three equivalent forms:
//! - **A** (weighted TD sum): `Â_t = Σ_l (γλ)^l δ_{t+l}`;
//! - **B** (λ-return minus baseline): `Â_t = G_t^λ − V(s_t)`;
//! - **C** (backward recursion): `Â_t = δ_t + γλ Â_{t+1}`.
//!
//! [`gae`] implements form C — one pass from the end of the rollout, O(1)
//! extra memory — and the tests check it against A and B. `λ = 0` gives the
//! one-step TD error, `λ = 1` the Monte-Carlo return minus `V`.
//!
//! **Episode ends inside a rollout.** A rollout concatenates episodes, so the
//! recursion must not leak across their boundaries. Two cases differ:
//! - `terminated`: the MDP ended; `V(s_{t+1}) = 0`;
//! - `truncated`: a time limit cut the episode; the state after it still has
//!   value, so `δ_t` bootstraps from `V(final observation)`, which the
//!   rollout records (`final_values`). Treating truncation as termination
//!   would teach CartPole's critic that step 500 is a cliff.
//!
//! In both cases the trace stops: `Â_t = δ_t` (the next entry belongs to the
//! next episode).

/// Per-step inputs of one rollout of length `n` (all slices of length `n`).
#[derive(Clone, Copy, Debug)]
pub struct Trajectory<'a> {
    /// `r_t`.
    pub rewards: &'a [f32],
    /// `V(s_t)` as recorded during the rollout.
    pub values: &'a [f32],
    /// Step `t` ended the episode in a terminal state.
    pub terminated: &'a [bool],
    /// Step `t` ended the episode by a time limit.
    pub truncated: &'a [bool],
    /// `V(final observation)` for truncated steps (ignored elsewhere).
    pub final_values: &'a [f32],
    /// `V` of the observation after the last step (ignored if it ended an episode).
    pub last_value: f32,
}

/// GAE by the backward recursion (form C), writing `Â_t` into `advantages`.
///
/// Only the common prefix of all slices is processed.
pub fn gae(traj: &Trajectory<'_>, gamma: f32, lambda: f32, advantages: &mut [f32]) {
    gae_strided(traj, 0, 1, gamma, lambda, advantages);
}

/// GAE of one environment of a rollout that interleaves `stride`
/// environments step-major (entry `t·stride + env` is step `t` of
/// environment `env`, the layout of SB3's `RolloutBuffer` flattened): the
/// backward recursion (form C) over the entries `env, env + stride, …`
/// only, with `traj.last_value` the `V` of *that* environment's observation
/// after its last step. Every environment's trace is independent: its
/// episode ends cut only its own recursion, and it bootstraps from its own
/// last observation (Schulman et al. 2016, eq. 16, per environment, as
/// SB3's `compute_returns_and_advantage` does over its `(n_steps, n_envs)`
/// arrays). With `stride = 1` this is [`gae`], bit for bit.
///
/// Only the common prefix of all slices is processed; entries of other
/// environments in `advantages` are left as they are.
pub fn gae_strided(
    traj: &Trajectory<'_>,
    env: usize,
    stride: usize,
    gamma: f32,
    lambda: f32,
    advantages: &mut [f32],
) {
    let n = advantages
        .len()
        .min(traj.rewards.len())
        .min(traj.values.len())
        .min(traj.terminated.len())
        .min(traj.truncated.len())
        .min(traj.final_values.len());
    let stride = stride.max(1);
    let mut last_gae_lam = 0.0f32;
    // The last entry of this environment, then back by `stride`.
    let mut next = None::<usize>;
    let steps = if env < n {
        (n - env).div_ceil(stride)
    } else {
        0
    };
    for k in (0..steps).rev() {
        let t = env + k * stride;
        let episode_ends = traj.terminated[t] || traj.truncated[t];
        let next_value = if traj.terminated[t] {
            0.0
        } else if traj.truncated[t] {
            traj.final_values[t]
        } else if let Some(next) = next {
            traj.values[next]
        } else {
            traj.last_value
        };
        let delta = traj.rewards[t] + gamma * next_value - traj.values[t];
        let next_gae = if episode_ends { 0.0 } else { last_gae_lam };
        last_gae_lam = delta + gamma * lambda * next_gae;
        advantages[t] = last_gae_lam;
        next = Some(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng;
    use rand_core::SeedableRng;
    use rand_xoshiro::Xoshiro128PlusPlus;
    use std::vec;
    use std::vec::Vec;

    struct Data {
        rewards: Vec<f32>,
        values: Vec<f32>,
        last_value: f32,
    }

    fn random(seed: u64, n: usize) -> Data {
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
        let mut draw = |n| {
            (0..n)
                .map(|_| rng::uniform_range(&mut rng, -1.0, 1.0))
                .collect()
        };
        let rewards = draw(n);
        let values: Vec<f32> = draw(n + 1);
        Data {
            rewards,
            values: values[..n].to_vec(),
            last_value: values[n],
        }
    }

    /// `V(s_{t+1})` for an un-cut segment.
    fn next_value(d: &Data, t: usize) -> f64 {
        if t + 1 < d.values.len() {
            d.values[t + 1] as f64
        } else {
            d.last_value as f64
        }
    }

    fn deltas(d: &Data, gamma: f64) -> Vec<f64> {
        (0..d.rewards.len())
            .map(|t| d.rewards[t] as f64 + gamma * next_value(d, t) - d.values[t] as f64)
            .collect()
    }

    fn recursion(d: &Data, gamma: f32, lambda: f32) -> Vec<f32> {
        let n = d.rewards.len();
        let no = vec![false; n];
        let zeros = vec![0.0; n];
        let traj = Trajectory {
            rewards: &d.rewards,
            values: &d.values,
            terminated: &no,
            truncated: &no,
            final_values: &zeros,
            last_value: d.last_value,
        };
        let mut adv = vec![0.0; n];
        gae(&traj, gamma, lambda, &mut adv);
        adv
    }

    /// Form A: `Σ_l (γλ)^l δ_{t+l}`.
    fn form_a(d: &Data, gamma: f64, lambda: f64) -> Vec<f64> {
        let delta = deltas(d, gamma);
        (0..delta.len())
            .map(|t| {
                (t..delta.len())
                    .map(|k| (gamma * lambda).powi((k - t) as i32) * delta[k])
                    .sum()
            })
            .collect()
    }

    /// Form B: `G^λ_t − V(s_t)` with the n-step returns
    /// `G^(k)_t = Σ_{i<k} γ^i r_{t+i} + γ^k V(s_{t+k})` and
    /// `G^λ_t = (1−λ) Σ_{k=1}^{T−t−1} λ^{k−1} G^(k)_t + λ^{T−t−1} G^(T−t)_t`
    /// (the weights of the truncated λ-return sum to one).
    fn form_b(d: &Data, gamma: f64, lambda: f64) -> Vec<f64> {
        let n = d.rewards.len();
        (0..n)
            .map(|t| {
                let horizon = n - t;
                let g = |k: usize| -> f64 {
                    let discounted: f64 = (0..k)
                        .map(|i| gamma.powi(i as i32) * d.rewards[t + i] as f64)
                        .sum();
                    discounted + gamma.powi(k as i32) * next_value(d, t + k - 1)
                };
                let mut lambda_return = lambda.powi(horizon as i32 - 1) * g(horizon);
                for k in 1..horizon {
                    lambda_return += (1.0 - lambda) * lambda.powi(k as i32 - 1) * g(k);
                }
                lambda_return - d.values[t] as f64
            })
            .collect()
    }

    fn assert_close(a: &[f32], b: &[f64]) {
        for (x, y) in a.iter().zip(b) {
            assert!((*x as f64 - y).abs() < 1e-4 * (1.0 + y.abs()), "{x} vs {y}");
        }
    }

    #[test]
    fn forms_a_b_c_agree() {
        for (seed, gamma, lambda) in [
            (1, 0.99, 0.95),
            (2, 0.9, 0.5),
            (3, 0.98, 0.8),
            (4, 1.0, 0.9),
        ] {
            let d = random(seed, 40);
            let c = recursion(&d, gamma, lambda);
            assert_close(&c, &form_a(&d, gamma as f64, lambda as f64));
            assert_close(&c, &form_b(&d, gamma as f64, lambda as f64));
        }
    }

    #[test]
    fn lambda_zero_is_td_error_and_one_is_monte_carlo() {
        let d = random(7, 30);
        let gamma = 0.97f32;
        assert_close(&recursion(&d, gamma, 0.0), &deltas(&d, gamma as f64));
        let n = d.rewards.len();
        let mc: Vec<f64> = (0..n)
            .map(|t| {
                let g: f64 = (t..n)
                    .map(|k| (gamma as f64).powi((k - t) as i32) * d.rewards[k] as f64)
                    .sum();
                g + (gamma as f64).powi((n - t) as i32) * d.last_value as f64 - d.values[t] as f64
            })
            .collect();
        assert_close(&recursion(&d, gamma, 1.0), &mc);
    }

    #[test]
    fn terminated_and_truncated_cut_the_trace_differently() {
        let rewards = [1.0, 1.0, 1.0, 1.0];
        let values = [0.5, 0.6, 0.7, 0.8];
        let final_values = [0.0, 9.0, 0.0, 0.0];
        let (gamma, lambda) = (0.9, 0.95);
        let mut adv = [0.0; 4];
        // Step 1 truncated: δ₁ bootstraps from V(final obs) = 9; the trace stops there.
        let traj = Trajectory {
            rewards: &rewards,
            values: &values,
            terminated: &[false; 4],
            truncated: &[false, true, false, false],
            final_values: &final_values,
            last_value: 2.0,
        };
        gae(&traj, gamma, lambda, &mut adv);
        let delta1 = 1.0 + 0.9 * 9.0 - 0.6;
        assert!((adv[1] - delta1).abs() < 1e-6);
        let delta0 = 1.0 + 0.9 * 0.6 - 0.5;
        assert!((adv[0] - (delta0 + gamma * lambda * delta1)).abs() < 1e-6);
        let delta3 = 1.0 + 0.9 * 2.0 - 0.8;
        assert!((adv[3] - delta3).abs() < 1e-6);
        // The same step terminated: no bootstrap at all.
        let traj = Trajectory {
            terminated: &[false, true, false, false],
            truncated: &[false; 4],
            ..traj
        };
        gae(&traj, gamma, lambda, &mut adv);
        assert!((adv[1] - (1.0 - 0.6)).abs() < 1e-6);
    }

    /// Three environments interleaved step-major (entry `t·3 + e`), five
    /// steps each: environment 0 terminates at its step 1, environment 1 is
    /// truncated at its step 2 (bootstrapping from its final observation's
    /// value), environment 2 runs through and bootstraps from its own last
    /// value. Each environment's advantages equal an `f64` reference that
    /// sees only that environment's steps, and [`gae`] on the
    /// de-interleaved steps bit for bit.
    #[test]
    fn interleaved_environments_are_estimated_separately() {
        const ENVS: usize = 3;
        const STEPS: usize = 5;
        const N: usize = ENVS * STEPS;
        let (gamma, lambda) = (0.97f32, 0.9f32);
        let mut rng = Xoshiro128PlusPlus::seed_from_u64(31);
        let mut draw = || rng::uniform_range(&mut rng, -1.0, 1.0);
        let rewards: Vec<f32> = (0..N).map(|_| draw()).collect();
        let values: Vec<f32> = (0..N).map(|_| draw()).collect();
        let (mut terminated, mut truncated, mut final_values) =
            (vec![false; N], vec![false; N], vec![0.0f32; N]);
        terminated[ENVS] = true; // environment 0, step 1
        truncated[2 * ENVS + 1] = true; // environment 1, step 2
        final_values[2 * ENVS + 1] = 4.5;
        let last_values = [0.25f32, -0.75, 1.5];
        let mut advantages = vec![f32::NAN; N];
        for (e, &last_value) in last_values.iter().enumerate() {
            let traj = Trajectory {
                rewards: &rewards,
                values: &values,
                terminated: &terminated,
                truncated: &truncated,
                final_values: &final_values,
                last_value,
            };
            gae_strided(&traj, e, ENVS, gamma, lambda, &mut advantages);
        }
        for (e, &last_value) in last_values.iter().enumerate() {
            // Environment e's own steps, in order.
            let own: Vec<usize> = (0..STEPS).map(|t| t * ENVS + e).collect();
            let pick = |xs: &[f32]| -> Vec<f32> { own.iter().map(|&i| xs[i]).collect() };
            let pick_flag = |xs: &[bool]| -> Vec<bool> { own.iter().map(|&i| xs[i]).collect() };
            let (r, v, term, trunc, fv) = (
                pick(&rewards),
                pick(&values),
                pick_flag(&terminated),
                pick_flag(&truncated),
                pick(&final_values),
            );
            // The f64 reference: eq. 16 summed forward within each episode,
            // `Â_t = Σ_l (γλ)^l δ_{t+l}` up to and including its last step.
            let (g, l) = (f64::from(gamma), f64::from(lambda));
            let delta: Vec<f64> = (0..STEPS)
                .map(|t| {
                    let next = if term[t] {
                        0.0
                    } else if trunc[t] {
                        f64::from(fv[t])
                    } else if t + 1 < STEPS {
                        f64::from(v[t + 1])
                    } else {
                        f64::from(last_value)
                    };
                    f64::from(r[t]) + g * next - f64::from(v[t])
                })
                .collect();
            let reference: Vec<f64> = (0..STEPS)
                .map(|t| {
                    let mut sum = 0.0;
                    for k in t..STEPS {
                        sum += (g * l).powi((k - t) as i32) * delta[k];
                        if term[k] || trunc[k] {
                            break;
                        }
                    }
                    sum
                })
                .collect();
            assert_close(&pick(&advantages), &reference);
            // The same bits as the plain recursion on this environment alone.
            let traj = Trajectory {
                rewards: &r,
                values: &v,
                terminated: &term,
                truncated: &trunc,
                final_values: &fv,
                last_value,
            };
            let mut alone = vec![0.0; STEPS];
            gae(&traj, gamma, lambda, &mut alone);
            assert_eq!(pick(&advantages), alone, "environment {e}");
        }
        // The cuts: environment 0's step 1 has no bootstrap at all,
        // environment 1's step 2 bootstraps from V(final obs) = 4.5.
        let at = |t: usize, e: usize| advantages[t * ENVS + e];
        assert_eq!(at(1, 0), rewards[ENVS] - values[ENVS]);
        let i = 2 * ENVS + 1;
        assert_eq!(at(2, 1), rewards[i] + gamma * 4.5 - values[i]);
    }
}
