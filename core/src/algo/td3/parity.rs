//! TD3 update parity with an independent PyTorch reference
//! (`core/tests/fixtures/gen_offpolicy_reference.py`; see
//! [`sac::parity`](crate::algo::sac::parity) for how to regenerate the
//! fixture and for the tolerances).
//!
//! The case fixes the actor, target actor, critics and target critics,
//! six replay transitions (two terminated) and, per update, the replay
//! indices and the recorded standard normal `ε′` of the target policy
//! smoothing (`σ̃ = 0.4`, clipped at 0.5, so some of it is clipped). Three
//! updates with `policy_delay = 2`: the first moves only the critics, the
//! second also the actor (its first, delayed step) and all three targets,
//! the third only the critics again. Checked: every weight after every
//! update, the losses, and the gradients of the first critic step and of
//! the first actor step (`m/(1 − β₁)`) against the reference's central
//! finite differences of its float64 losses.

use std::format;
use std::println;

use super::*;
use crate::algo::sac::ADAM_TORCH;
use crate::algo::sac::parity::{
    WEIGHT_TOL, check_first_gradient, check_stat, check_weights, draws, f32_of, fixture, set,
    transitions,
};

type Agent = Td3Mlp<3, 2, 5, 8, 8, 8>;

#[test]
fn td3_updates_match_pytorch() {
    let fixture = fixture();
    let (mut worst_weight, mut worst_grad, mut worst_stat) = (0.0f64, 0.0f64, 0.0f64);
    for case in fixture["td3"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        assert_eq!(
            (
                case["obs_dim"].as_u64(),
                case["act_dim"].as_u64(),
                case["hidden"].as_u64()
            ),
            (Some(3), Some(2), Some(8))
        );
        let c = &case["config"];
        let config = Td3Config {
            buffer_size: 8,
            batch_size: 8,
            tau: f32_of(&c["tau"]),
            gamma: f32_of(&c["gamma"]),
            learning_rate: f32_of(&c["learning_rate"]),
            policy_delay: u32::try_from(c["policy_delay"].as_u64().unwrap()).unwrap(),
            target_policy_noise: f32_of(&c["target_policy_noise"]),
            target_noise_clip: f32_of(&c["target_noise_clip"]),
            adam: crate::optim::AdamConfig {
                eps: f32_of(&c["adam_eps"]),
                ..ADAM_TORCH
            },
            ..Td3Config::DEFAULT
        };
        let mut agent = Agent::boxed(config);
        agent.config.validate(8, 8).unwrap();
        let init = &case["init"];
        set(&mut agent.actor.params, &init["actor"]);
        set(&mut agent.actor_target, &init["actor_target"]);
        set(&mut agent.critic.params, &init["critic"]);
        set(&mut agent.critic_target, &init["critic_target"]);
        for t in transitions::<3, 2>(case) {
            agent.replay.push(&t).unwrap();
        }
        for (u, update) in case["updates"].as_array().unwrap().iter().enumerate() {
            let stats = agent.update_with(&draws::<2, 8>(update)).unwrap();
            let what = |x: &str| format!("{name} update {u}: {x}");
            let e = &update["stats"];
            worst_stat = worst_stat.max(check_stat(
                &what("critic_loss"),
                stats.critic_loss,
                &e["critic_loss"],
            ));
            assert_eq!(
                stats.actor_loss.is_some(),
                !e["actor_loss"].is_null(),
                "{}",
                what("delay")
            );
            if let Some(loss) = stats.actor_loss {
                worst_stat =
                    worst_stat.max(check_stat(&what("actor_loss"), loss, &e["actor_loss"]));
            }
            let g = &update["grads"];
            if let Some(expected) = g.get("critic") {
                let err = check_first_gradient(
                    &what("critic"),
                    &agent.critic.optimizer.m,
                    ADAM_TORCH.beta1,
                    expected,
                );
                worst_grad = worst_grad.max(err);
            }
            if let Some(expected) = g.get("actor") {
                assert_eq!(agent.actor.optimizer.t, 1);
                let err = check_first_gradient(
                    &what("actor"),
                    &agent.actor.optimizer.m,
                    ADAM_TORCH.beta1,
                    expected,
                );
                worst_grad = worst_grad.max(err);
            }
            let after = &update["after"];
            for err in [
                check_weights(
                    &what("actor"),
                    &agent.actor.params,
                    &after["actor"],
                    WEIGHT_TOL,
                ),
                check_weights(
                    &what("actor_target"),
                    &agent.actor_target,
                    &after["actor_target"],
                    WEIGHT_TOL,
                ),
                check_weights(
                    &what("critic"),
                    &agent.critic.params,
                    &after["critic"],
                    WEIGHT_TOL,
                ),
                check_weights(
                    &what("critic_target"),
                    &agent.critic_target,
                    &after["critic_target"],
                    WEIGHT_TOL,
                ),
            ] {
                worst_weight = worst_weight.max(err);
            }
        }
        assert_eq!(agent.n_updates, 3);
    }
    println!(
        "TD3 parity: weights {worst_weight:.2e}, gradients vs finite differences {worst_grad:.2e}, stats {worst_stat:.2e} (max relative errors)"
    );
}
