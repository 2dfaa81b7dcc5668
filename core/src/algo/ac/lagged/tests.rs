//! The lagged actor-critic's tests: on-policy it is the online step, the
//! ratio weights and truncates, who acts each block, a device's split run
//! equals the one-thread reference, refusals change nothing, it learns.

use super::*;
use crate::algo::AcConfig;
use crate::algo::lagged::TickLearner;
use crate::algo::{Cursor, behave};
use crate::env::{CartPole, Env, Pendulum};
use crate::nn::Mlp;
use crate::policy::{CategoricalActor, GaussianActor};
use crate::rng::Xoshiro128pp;
use crate::train::{Learner, RunConfig, Trainer, report_seed, select_seed};
use rand_core::SeedableRng;
use std::boxed::Box;
use std::collections::VecDeque;
use std::vec::Vec;

type Gauss = GaussianActor<Mlp<3, 8, 1>, 1>;
type Ac3 = ActorCritic<Gauss, Mlp<3, 8, 1>, 3>;
type Actor4 = CategoricalActor<Mlp<4, 16, 2>>;
type Agent = LaggedAc<Actor4, Mlp<4, 16, 1>, 4, 32>;

/// Pendulum, an agent initialised from seed 3 and the plant's first start.
fn pendulum(config: AcConfig) -> (Box<Ac3>, Pendulum, Cursor<SVector<f32, 3>>, Xoshiro128pp) {
    let mut agent = Box::new(Ac3::new(config));
    let mut env = Pendulum::new();
    let mut rng = Xoshiro128pp::seed_from_u64(3);
    agent.init(&env, &mut rng).unwrap();
    let cursor = Cursor::start(&mut env, &mut rng);
    (agent, env, cursor, rng)
}

/// Everything an online step may change.
fn state(a: &Ac3) -> (Gauss, Mlp<3, 8, 1>, RunningNormState, u64) {
    (
        a.actor.params.clone(),
        a.critic.params.clone(),
        (
            a.obs_norm.clone(),
            a.return_norm.clone(),
            a.discounted_return,
        ),
        a.steps,
    )
}
type RunningNormState = (
    crate::normalize::RunningNorm<3>,
    crate::normalize::RunningNorm<1>,
    f32,
);

/// A tick acted by the learner's own current policy has ρ = 1: ingesting
/// it is [`ActorCritic::step`] bit for bit (without observation
/// normalisation, where acting and learning see the same input; the
/// safeguards on, warm-up shortened so the actor moves).
#[test]
fn ingest_of_the_current_policys_tick_is_the_online_step() {
    let config = AcConfig {
        normalize_obs: false,
        critic_warmup: 5,
        ..AcConfig::PLANT
    };
    let (mut online, mut env_a, mut cursor_a, mut rng_a) = pendulum(config);
    let (mut lagged, mut env_b, mut cursor_b, mut rng_b) = pendulum(config);
    let mut behaviour = Policy::ZERO;
    for _ in 0..300 {
        let a = online
            .step(&mut env_a, &mut cursor_a, &mut rng_a, |_| {})
            .unwrap();
        lagged.export(&mut behaviour);
        let tick = behave(
            &behaviour,
            &mut env_b,
            &mut cursor_b,
            &mut rng_b,
            &mut |_| {},
        )
        .unwrap();
        let b = lagged.ingest(&tick).unwrap();
        assert_eq!(a, b);
    }
    assert!(state(&online) == state(&lagged));
    assert_ne!(online.actor.params, Ac3::new(config).actor.params);
}

/// `ρ = min(1, π/μ)`: a tick the behaviour policy drew with a far higher
/// probability than the learner's (`log μ` = 200: `ρ` underflows to 0)
/// carries no TD term, so the
/// first step moves neither network; one drawn with a far lower probability
/// (`log μ` tiny) is truncated to `ρ = 1`, the on-policy step.
#[test]
fn the_ratio_weights_the_step_and_truncates_at_one() {
    let config = AcConfig {
        normalize_obs: false,
        ..AcConfig::DEFAULT
    };
    let (agent, mut env, mut cursor, mut rng) = pendulum(config);
    let mut policy = Policy::ZERO;
    agent.export(&mut policy);
    let tick = behave(&policy, &mut env, &mut cursor, &mut rng, &mut |_| {}).unwrap();

    let fresh = || pendulum(config).0;
    let mut ignored = fresh();
    ignored
        .ingest(&Tick {
            log_prob: 200.0,
            ..tick
        })
        .unwrap();
    assert_eq!(ignored.actor.params, agent.actor.params);
    assert_eq!(ignored.critic.params, agent.critic.params);
    assert_eq!(ignored.steps, 1);

    let (mut truncated, mut on_policy) = (fresh(), fresh());
    truncated
        .ingest(&Tick {
            log_prob: -200.0,
            ..tick
        })
        .unwrap();
    on_policy.ingest(&tick).unwrap();
    assert_ne!(on_policy.actor.params, agent.actor.params);
    assert!(state(&truncated) == state(&on_policy));
}

/// A refused tick (a non-finite reward, log-probability or observation)
/// changes nothing in the agent.
#[test]
fn a_refused_ingest_changes_nothing() {
    let (mut agent, mut env, mut cursor, mut rng) = pendulum(AcConfig::PLANT);
    let mut policy = Policy::ZERO;
    for _ in 0..20 {
        agent.export(&mut policy);
        let tick = behave(&policy, &mut env, &mut cursor, &mut rng, &mut |_| {}).unwrap();
        agent.ingest(&tick).unwrap();
    }
    agent.export(&mut policy);
    let tick = behave(&policy, &mut env, &mut cursor, &mut rng, &mut |_| {}).unwrap();
    let before = state(&agent);
    let mut bad_obs = tick;
    bad_obs.obs[1] = f32::NAN;
    for bad in [
        Tick {
            reward: f32::NAN,
            ..tick
        },
        Tick {
            log_prob: f32::INFINITY,
            ..tick
        },
        bad_obs,
    ] {
        assert!(matches!(agent.ingest(&bad), Err(Error::NonFinite)));
        assert!(state(&agent) == before);
    }
    agent.ingest(&tick).unwrap();
    assert_eq!(agent.steps, 21);
}

fn started(seed: u64) -> (Box<Agent>, CartPole, Cursor<SVector<f32, 4>>, Xoshiro128pp) {
    let mut agent = Box::new(Agent::new(ActorCritic::new(AcConfig::DEFAULT)));
    let mut env = CartPole::new();
    let mut rng = Xoshiro128pp::seed_from_u64(seed);
    Learner::<CartPole>::init(&mut *agent, &env, &mut rng).unwrap();
    let cursor = Cursor::start(&mut env, &mut rng);
    (agent, env, cursor, rng)
}

/// `log π(a|s)` of `policy` for a tick, as the control loop drew it.
fn log_prob_under(policy: &Policy<Actor4, 4>, tick: &Tick<4, usize>) -> f32 {
    let input = policy.obs_norm.normalize(&tick.obs).unwrap();
    let mut cache = Actor4::ZERO_CACHE;
    policy
        .actor
        .evaluate(&input, &tick.action, &mut cache)
        .unwrap()
        .0
}

/// Block `j` is acted by the policy published after block `j − 2` (`θ₀`
/// for blocks 0 and 1): after iteration `i`, the pending block `i + 1`
/// carries the log-probabilities of the policy published by iteration
/// `i − 1`, not those of iteration `i`'s.
#[test]
fn block_j_is_acted_by_the_policy_published_after_block_j_minus_2() {
    let (mut agent, mut env, mut cursor, mut rng) = started(1);
    let mut published = std::vec![agent.published.clone()];
    for i in 0..4 {
        agent
            .iterate(&mut env, &mut cursor, &mut rng, &mut |_| {})
            .unwrap();
        published.push(agent.published.clone());
        assert_eq!(agent.pending.len, 32);
        assert_eq!(agent.published_count, i + 1);
        let acted_by = &published[i as usize];
        let newest = &published[i as usize + 1];
        assert_ne!(acted_by, newest, "each block publishes a new policy");
        let mut differs = false;
        for tick in agent.pending.ticks() {
            assert_eq!(tick.log_prob, log_prob_under(acted_by, tick));
            differs |= tick.log_prob != log_prob_under(newest, tick);
        }
        assert!(
            differs,
            "iteration {i}: the block was acted by the newest policy"
        );
    }
    assert_eq!(crate::train::Agent::steps(&*agent), 5 * 32);
    assert_eq!(agent.learner.steps, 4 * 32);
}

/// An iteration returns the mean of its block's per-tick statistics: the
/// same block ingested by hand on a twin agent gives the sums.
#[test]
fn iterate_returns_the_blocks_mean_statistics() {
    let (mut agent, mut env, mut cursor, mut rng) = started(2);
    let (mut twin, mut twin_env, mut twin_cursor, mut twin_rng) = started(2);
    agent
        .iterate(&mut env, &mut cursor, &mut rng, &mut |_| {})
        .unwrap();
    let stats = agent
        .iterate(&mut env, &mut cursor, &mut rng, &mut |_| {})
        .unwrap();
    twin.iterate(&mut twin_env, &mut twin_cursor, &mut twin_rng, &mut |_| {})
        .unwrap();
    let (mut delta, mut value, mut entropy) = (0.0f32, 0.0f32, 0.0f32);
    for tick in twin.pending.ticks {
        let s = twin.learner.ingest(&tick).unwrap();
        (delta, value, entropy) = (delta + s.delta, value + s.value, entropy + s.entropy);
    }
    assert_eq!(stats.delta, delta / 32.0);
    assert_eq!(stats.value, value / 32.0);
    assert_eq!(stats.entropy, entropy / 32.0);
    assert!(stats.entropy > 0.0 && stats.value != 0.0, "{stats:?}");
}

/// A device's whole run: the control loop queues ticks; the learner, a few
/// ticks late, drains a block, ingests it tick by tick, publishes at the
/// next block boundary and runs the trainer's gate and, at the end, its
/// report. The outcome and the weights equal the one-thread [`LaggedAc`]
/// run through [`Trainer::run`] bit for bit.
#[test]
fn a_split_control_loop_and_learner_equal_the_one_thread_schedule() {
    let seed = 5;
    let run = RunConfig::new(6_000, CartPole::SOLVED_RETURN);
    let mut reference = Box::new(Agent::new(ActorCritic::new(AcConfig::DEFAULT)));
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let mut trainer =
        Trainer::<_, Xoshiro128pp>::start(&mut *reference, &mut env, run, seed).unwrap();
    let expected = trainer
        .run(&mut *reference, &mut env, &mut eval_env, &mut ())
        .unwrap();
    assert!(expected.updates > 0, "{expected:?}");

    let mut learner = Box::new(ActorCritic::<Actor4, Mlp<4, 16, 1>, 4>::new(
        AcConfig::DEFAULT,
    ));
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let mut rng = Xoshiro128pp::seed_from_u64(seed);
    let mut acting_rng = crate::algo::lagged::init_lagged(&mut *learner, &env, &mut rng).unwrap();
    let mut front = Policy::ZERO;
    learner.export(&mut front);
    let select = Xoshiro128pp::seed_from_u64(select_seed(seed));
    let report = Xoshiro128pp::seed_from_u64(report_seed(seed));
    let mut trainer = Trainer::new(run, &mut env, rng, select, report).unwrap();
    let mut cursor = trainer.cursor.clone();
    let mut back: Option<Policy<Actor4, 4>> = None;
    let mut queue: VecDeque<Tick<4, usize>> = VecDeque::new();
    let (block, mut tick, mut stopping) = (32usize, 0usize, false);
    let steps = loop {
        if tick.is_multiple_of(block)
            && let Some(policy) = back.take()
        {
            front = policy;
        }
        let t = behave(&front, &mut env, &mut cursor, &mut acting_rng, &mut |_| {}).unwrap();
        queue.push_back(t);
        tick += 1;
        // The learner's turn: a few ticks into the next block.
        if queue.len() < block + 3 && !(stopping && queue.len() >= block) {
            continue;
        }
        let ticks: Vec<_> = queue.drain(..block).collect();
        trainer.episodes += ticks.iter().filter(|t| t.terminated || t.truncated).count() as u64;
        if stopping {
            break learner.steps + block as u64;
        }
        let mut sum = AcStats::default();
        for t in &ticks {
            let s = learner.ingest(t).unwrap();
            sum.delta += s.delta;
            sum.value += s.value;
            sum.entropy += s.entropy;
        }
        let stats =
            <ActorCritic<Actor4, Mlp<4, 16, 1>, 4> as TickLearner<4>>::block_stats(sum, block);
        let mut policy = Policy::ZERO;
        learner.export(&mut policy);
        back = Some(policy);
        let steps = learner.steps + block as u64;
        let progress = trainer
            .after_update(
                &*learner,
                steps,
                block as u64,
                &stats,
                &mut eval_env,
                &mut (),
            )
            .unwrap();
        stopping = trainer.ends_run::<AcStats, ()>(&progress, &mut ()) || steps >= run.total_steps;
    };
    let outcome = trainer
        .finish_with::<_, _, _, AcStats>(&*learner, steps, &mut eval_env, &mut ())
        .unwrap();
    assert_eq!(outcome, expected);
    assert_eq!(learner.actor.params, reference.learner.actor.params);
    assert_eq!(learner.critic.params, reference.learner.critic.params);
    assert_eq!(learner.obs_norm, reference.learner.obs_norm);
}

/// The lagged actor-critic learns CartPole through the core's trainer with
/// one block of policy lag, and the exported policy is the published one.
#[test]
fn lagged_ac_solves_cartpole() {
    type Lagged = crate::agent::LaggedAc<CartPole, 32, 100>;
    let mut agent = Box::new(Lagged::new(ActorCritic::new(AcConfig::DEFAULT)));
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let run = RunConfig::new(100_000, CartPole::SOLVED_RETURN);
    let mut trainer = Trainer::<_, Xoshiro128pp>::start(&mut *agent, &mut env, run, 0).unwrap();
    let outcome = trainer
        .run(&mut *agent, &mut env, &mut eval_env, &mut ())
        .unwrap();
    assert!(outcome.solved(CartPole::SOLVED_RETURN), "{outcome:?}");
    let mut policy = Policy::ZERO;
    crate::train::Agent::export(&*agent, &mut policy);
    assert_eq!(policy, agent.published);
}
