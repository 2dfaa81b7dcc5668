//! The shared off-policy pieces' tests: the settings SAC and TD3 share
//! ([`Schedule`]'s refusals), the action scale, Polyak
//! averaging, the critic input and its gradient, PyTorch's initialisation
//! and the deployed tanh policy.

use super::*;
use crate::config::{Refusal, assert_refused_by_name};
use crate::nn::{Dense, Mlp, Relu, Tanh, fd};

/// Every shared setting refused by name on each side of its range (its
/// only side for the counts), for a replay capacity of 100 and minibatches
/// of up to 32.
#[test]
fn schedule_validate_names_the_field() {
    let ok = Schedule {
        buffer_size: 100,
        learning_starts: 0,
        batch_size: 32,
        tau: 1.0,
        gamma: 0.99,
        train_freq: 1,
        gradient_steps: 1,
        learning_rate: 3e-4,
    };
    let cases: [Refusal<Schedule>; 17] = [
        ("buffer_size", |s| s.buffer_size = 0),
        ("buffer_size", |s| s.buffer_size = 101),
        ("batch_size", |s| s.batch_size = 0),
        ("batch_size", |s| s.batch_size = 33),
        ("tau", |s| s.tau = 0.0),
        ("tau", |s| s.tau = 1.5),
        ("gamma", |s| s.gamma = f32::NAN),
        ("gamma", |s| s.gamma = 2.0),
        ("gamma", |s| s.gamma = -0.1),
        ("train_freq", |s| s.train_freq = 0),
        ("gradient_steps", |s| s.gradient_steps = 0),
        // A count is bounded: 4294967295 gradient steps a round never ends.
        ("gradient_steps", |s| s.gradient_steps = u32::MAX),
        ("gradient_steps", |s| {
            s.gradient_steps = MAX_GRADIENT_STEPS + 1
        }),
        ("train_freq", |s| s.train_freq = MAX_INTERVAL + 1),
        ("learning_starts", |s| s.learning_starts = u32::MAX),
        ("learning_rate", |s| s.learning_rate = -1.0),
        ("learning_rate", |s| s.learning_rate = f32::INFINITY),
    ];
    assert_refused_by_name(ok, &cases, |c| c.validate(100, 32));
}

#[test]
fn to_bounds_is_sb3_unscale_action() {
    let space = Continuous::<2> {
        low: [-2.0, 0.0],
        high: [2.0, 10.0],
    };
    let a = SVector::<f32, 2>::new(-1.0, 0.5);
    assert_eq!(to_bounds(&space, &a), SVector::<f32, 2>::new(-2.0, 7.5));
    let a = SVector::<f32, 2>::new(1.0, -1.0);
    assert_eq!(to_bounds(&space, &a), SVector::<f32, 2>::new(2.0, 0.0));
}

#[test]
fn polyak_moves_by_tau() {
    let mut target = SVector::<f32, 2>::new(1.0, -1.0);
    polyak(&mut target, &SVector::<f32, 2>::new(3.0, 1.0), 0.25);
    assert_eq!(target, SVector::<f32, 2>::new(1.5, -0.5));
    polyak(&mut target, &SVector::<f32, 2>::new(7.0, 7.0), 1.0);
    assert_eq!(target, SVector::<f32, 2>::new(7.0, 7.0));
}

#[test]
fn critic_input_concatenates() {
    let x = critic_input::<2, 1, 3>(
        &SVector::<f32, 2>::new(1.0, 2.0),
        &SVector::<f32, 1>::new(3.0),
    );
    assert_eq!(x, SVector::<f32, 3>::new(1.0, 2.0, 3.0));
    assert_eq!(action_part::<2, 1, 3>(&x), SVector::<f32, 1>::new(3.0));
}

/// The critic's input gradient (what the actor losses backpropagate
/// through) against central differences of the `f64` forward pass.
#[test]
fn critic_input_gradient_matches_finite_differences() {
    type Q = Mlp<5, 16, 1, Relu>;
    let mut rng = fd::rng(41);
    let mut q = Q::ZERO;
    torch_default_init(&mut q, &mut rng);
    let x = SVector::<f32, 5>::new(0.3, -0.8, 1.1, 0.45, -0.6);
    fd::check_layer(&q, &x, &mut rng);
}

#[test]
fn default_init_bounds_follow_fan_in() {
    let mut net = Mlp::<4, 16, 2, Relu>::ZERO;
    torch_default_init(&mut net, &mut fd::rng(5));
    let max = |s: &[f32]| s.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    assert!(max(net.first.weight.as_slice()) <= 0.5);
    assert!(max(net.first.bias.as_slice()) <= 0.5);
    assert!(max(net.first.weight.as_slice()) > 0.4);
    assert!(max(net.second.first.weight.as_slice()) <= 0.25);
    assert!(max(net.second.second.bias.as_slice()) <= 0.25);
    assert!(max(net.second.first.weight.as_slice()) > 0.2);
}

#[test]
fn tanh_policy_acts_in_bounds_and_refuses_nan() {
    let mut policy = TanhPolicy {
        net: Dense::<2, 1, Tanh>::ZERO,
        space: Continuous::symmetric(2.0),
    };
    policy.net.weight[(0, 0)] = 100.0;
    let a = policy.act(&SVector::<f32, 2>::new(1.0, 0.0)).unwrap();
    assert_eq!(a[0], 2.0);
    let a = policy.act(&SVector::<f32, 2>::new(0.0, 0.0)).unwrap();
    assert_eq!(a[0], 0.0);
    assert_eq!(
        policy.act(&SVector::<f32, 2>::new(f32::NAN, 0.0)),
        Err(Error::NonFinite)
    );
}
