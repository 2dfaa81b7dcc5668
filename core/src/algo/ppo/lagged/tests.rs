//! The lagged schedule's tests: who acts each rollout, a device's split
//! run equals the one-thread reference, refusals change nothing, it learns.

use nalgebra::SVector;
use rand_core::SeedableRng;

use super::*;
use crate::algo::lagged::{behave, init_lagged};
use crate::algo::{Cursor, PpoConfig};
use crate::env::{CartPole, Env};
use crate::nn::Mlp;
use crate::policy::CategoricalActor;
use crate::rng::Xoshiro128pp;
use crate::train::{Learner, RunConfig, Trainer};
use std::boxed::Box;
use std::vec::Vec;

type Actor4 = CategoricalActor<Mlp<4, 16, 2>>;
type Agent = LaggedPpo<Actor4, Mlp<4, 16, 1>, 4, 64>;

const CONFIG: PpoConfig = PpoConfig {
    total_steps: 20_000,
    ..PpoConfig::CARTPOLE
};

fn started(seed: u64) -> (Box<Agent>, CartPole, Cursor<SVector<f32, 4>>, Xoshiro128pp) {
    let mut agent = Box::new(Agent::new(Ppo::new(CONFIG)));
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

/// Rollout `j` is acted by the policy published after update `j − 2`
/// (`θ₀` for rollouts 0 and 1): after iteration `i`, the pending rollout
/// `i + 1` carries the log-probabilities of the policy published by
/// iteration `i − 1`, and not those of iteration `i`'s.
#[test]
fn rollout_j_is_acted_by_the_policy_of_update_j_minus_2() {
    let (mut agent, mut env, mut cursor, mut rng) = started(1);
    let mut published = std::vec![agent.published.clone()];
    for i in 0..4 {
        agent
            .iterate(&mut env, &mut cursor, &mut rng, &mut |_| {})
            .unwrap();
        published.push(agent.published.clone());
        assert_eq!(agent.pending.len, 64);
        assert_eq!(agent.published_count, i + 1);
        assert_eq!(Learner::<CartPole>::n_envs(&*agent), 1);
        let acted_by = &published[i as usize];
        let newest = &published[i as usize + 1];
        assert_ne!(acted_by, newest, "each update publishes a new policy");
        let mut differs = false;
        for tick in agent.pending.ticks() {
            assert_eq!(tick.log_prob, log_prob_under(acted_by, tick));
            differs |= tick.log_prob != log_prob_under(newest, tick);
        }
        assert!(
            differs,
            "iteration {i}: the rollout was acted by the newest policy"
        );
    }
    // The step count includes the pending rollout; the learner trained on 4.
    assert_eq!(crate::train::Agent::steps(&*agent), 5 * 64);
    assert_eq!(agent.learner.steps, 4 * 64);
}

/// A device runs the control side in an interrupt and the learner in the
/// background: the ticks queue up, the learner drains a rollout, updates
/// and publishes at the next rollout boundary. However the two interleave
/// (here: the learner's work lands at a different tick of each rollout),
/// the learned weights equal the one-thread [`LaggedPpo`]'s bit for bit.
#[test]
fn a_split_control_loop_and_learner_equal_the_one_thread_schedule() {
    let (mut reference, mut env, mut cursor, mut rng) = started(7);
    for _ in 0..5 {
        reference
            .iterate(&mut env, &mut cursor, &mut rng, &mut |_| {})
            .unwrap();
    }

    // The device: the same initialisation, then two rhythms.
    let (agent, mut env, mut cursor, mut learner_rng) = started(7);
    let (mut learner, mut acting_rng) = (agent.learner, agent.acting_rng);
    let mut front = agent.published.clone(); // the control loop's policy
    let mut back: Option<Policy<Actor4, 4>> = None; // published, not yet switched to
    let mut queue: Vec<Tick<4, usize>> = Vec::new();
    let (len, mut updates) = (64, 0);
    let mut tick = 0usize;
    while updates < 5 {
        if tick.is_multiple_of(len)
            && let Some(policy) = back.take()
        {
            front = policy; // the switch at a rollout boundary
        }
        let t = behave(&front, &mut env, &mut cursor, &mut acting_rng, &mut |_| {}).unwrap();
        queue.push(t);
        tick += 1;
        // The learner catches up somewhere inside the next rollout.
        let rollouts_done = tick / len;
        let learner_due = rollouts_done > updates && tick % len == (7 * updates + 3) % len;
        if learner_due && back.is_none() {
            let rollout: Vec<_> = queue.drain(..len).collect();
            learner.ingest(&rollout).unwrap();
            learner.update(&mut learner_rng).unwrap();
            let mut policy = Policy::ZERO;
            learner.export(&mut policy);
            back = Some(policy);
            updates += 1;
        }
    }
    assert_eq!(learner.train.params, reference.learner.train.params);
    assert_eq!(learner.obs_norm, reference.learner.obs_norm);
}

/// A rollout with a non-finite reward is refused and the agent is as
/// before; so is a rollout of the wrong length.
#[test]
fn a_refused_ingest_changes_nothing() {
    let (mut agent, mut env, mut cursor, mut rng) = started(3);
    agent
        .iterate(&mut env, &mut cursor, &mut rng, &mut |_| {})
        .unwrap();
    let before = (
        agent.learner.obs_norm.clone(),
        agent.learner.return_norm.clone(),
        agent.learner.discounted_return,
        agent.learner.steps,
    );
    let mut ticks = agent.pending.ticks;
    ticks[40].reward = f32::NAN;
    assert_eq!(agent.learner.ingest(&ticks), Err(Error::NonFinite));
    assert_eq!(
        agent.learner.ingest(&agent.pending.ticks[..63]),
        Err(Error::RolloutIncomplete)
    );
    assert_eq!(agent.learner.ingest(&[]), Err(Error::RolloutIncomplete));
    let after = (
        agent.learner.obs_norm.clone(),
        agent.learner.return_norm.clone(),
        agent.learner.discounted_return,
        agent.learner.steps,
    );
    assert_eq!(before, after);
    assert!(!agent.learner.rollout.is_ready());
    assert_eq!(
        agent.learner.update(&mut rng).unwrap_err(),
        Error::RolloutIncomplete
    );
}

/// With no lag (the learner ingesting a rollout its own policy acted, with
/// the observation normaliser off), ingest fills the rollout exactly as
/// `collect` does from the same steps and draws.
#[test]
fn ingest_of_the_current_policys_rollout_is_collect() {
    let config = PpoConfig {
        normalize_obs: false,
        ..CONFIG
    };
    let (mut lagged, mut env, mut cursor, _) = started(5);
    let (mut plain, mut plain_env, mut plain_cursor, _) = started(5);
    lagged.learner.config = config;
    plain.learner.config = config;
    let mut draws = plain.acting_rng.clone();
    lagged
        .act_block(&mut env, &mut cursor, &mut |_| {})
        .unwrap();
    let ticks = lagged.pending.ticks;
    lagged.learner.ingest(&ticks).unwrap();
    plain
        .learner
        .collect(&mut plain_env, &mut plain_cursor, &mut draws, |_| {})
        .unwrap();
    let (a, b) = (&lagged.learner.rollout, &plain.learner.rollout);
    assert_eq!(a.len(), 64);
    assert_eq!(a.len(), b.len());
    assert_eq!(&a.obs[..], &b.obs[..]);
    assert_eq!(&a.actions[..], &b.actions[..]);
    assert_eq!(&a.log_probs[..], &b.log_probs[..]);
    assert_eq!(&a.values[..], &b.values[..]);
    assert_eq!(&a.final_values[..], &b.final_values[..]);
    assert_eq!(&a.advantages[..], &b.advantages[..]);
    assert_eq!(&a.returns[..], &b.returns[..]);
    assert_eq!(lagged.learner.steps, plain.learner.steps);
}

/// The schedule learns: the core's trainer solves CartPole with one rollout
/// of policy lag, and the exported policy acts as the agent evaluated.
#[test]
fn lagged_ppo_solves_cartpole() {
    type Lagged = crate::agent::LaggedPpo<CartPole, 32, 256>;
    let config = PpoConfig {
        total_steps: 150_000,
        ..PpoConfig::CARTPOLE
    };
    let mut agent = Box::new(Lagged::new(Ppo::new(config)));
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let run = RunConfig::new(150_000, CartPole::SOLVED_RETURN);
    let mut trainer = Trainer::<_, Xoshiro128pp>::start(&mut *agent, &mut env, run, 0).unwrap();
    let outcome = trainer
        .run(&mut *agent, &mut env, &mut eval_env, &mut ())
        .unwrap();
    assert!(outcome.solved(CartPole::SOLVED_RETURN), "{outcome:?}");
    assert!(agent.published_count > 0);
    let mut policy = Policy::ZERO;
    crate::train::Agent::export(&*agent, &mut policy);
    assert_eq!(policy, agent.published);
}

/// A device's whole run: the learner drains each rollout, updates,
/// publishes, then runs the trainer's own gate ([`Trainer::after_update`]
/// with the schedule's step count, [`Trainer::ends_run`]) and, at the end,
/// [`Trainer::finish_with`] — while the control loop acts. The outcome
/// (solving step, deciding and reported evaluations, updates, episodes) and
/// the weights equal the one-thread [`LaggedPpo`] run through
/// [`Trainer::run`] bit for bit.
#[test]
fn a_device_run_through_the_trainers_steps_equals_trainer_run() {
    use crate::train::{report_seed, select_seed};
    let seed = 11;
    let run = RunConfig {
        eval_interval: 1,
        ..RunConfig::new(20_000, 150.0)
    };
    let mut reference = Box::new(Agent::new(Ppo::new(CONFIG)));
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let mut trainer =
        Trainer::<_, Xoshiro128pp>::start(&mut *reference, &mut env, run, seed).unwrap();
    let expected = trainer
        .run(&mut *reference, &mut env, &mut eval_env, &mut ())
        .unwrap();
    assert!(expected.solved_at_step.is_some(), "{expected:?}");

    // The device: the learner, the trainer's state and the control loop's.
    let mut learner = Box::new(Ppo::<Actor4, Mlp<4, 16, 1>, 4, 64>::new(CONFIG));
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let mut rng = Xoshiro128pp::seed_from_u64(seed);
    let mut acting_rng = init_lagged(&mut *learner, &env, &mut rng).unwrap();
    let mut front = Policy::ZERO;
    learner.export(&mut front);
    let select = Xoshiro128pp::seed_from_u64(select_seed(seed));
    let report = Xoshiro128pp::seed_from_u64(report_seed(seed));
    let mut trainer = Trainer::new(run, &mut env, rng, select, report).unwrap();
    let mut cursor = trainer.cursor.clone();
    let mut back: Option<Policy<Actor4, 4>> = None;
    let mut queue: std::collections::VecDeque<Tick<4, usize>> = Default::default();
    let (len, mut tick, mut stopping) = (64usize, 0usize, false);
    let steps = loop {
        if tick.is_multiple_of(len)
            && let Some(policy) = back.take()
        {
            front = policy;
        }
        let t = behave(&front, &mut env, &mut cursor, &mut acting_rng, &mut |_| {}).unwrap();
        queue.push_back(t);
        tick += 1;
        // The learner's turn: a few ticks into the next rollout.
        if queue.len() < len + 5 && !(stopping && queue.len() >= len) {
            continue;
        }
        let rollout: Vec<_> = queue.drain(..len).collect();
        trainer.episodes += rollout
            .iter()
            .filter(|t| t.terminated || t.truncated)
            .count() as u64;
        if stopping {
            break learner.steps + len as u64;
        }
        learner.ingest(&rollout).unwrap();
        let stats = learner.update(&mut trainer.rng).unwrap();
        let mut policy = Policy::ZERO;
        learner.export(&mut policy);
        back = Some(policy);
        let steps = learner.steps + len as u64;
        let progress = trainer
            .after_update(&*learner, steps, 1, &stats, &mut eval_env, &mut ())
            .unwrap();
        stopping =
            trainer.ends_run::<UpdateStats, ()>(&progress, &mut ()) || steps >= run.total_steps;
    };
    let outcome = trainer
        .finish_with::<_, _, _, UpdateStats>(&*learner, steps, &mut eval_env, &mut ())
        .unwrap();
    assert_eq!(outcome, expected);
    assert_eq!(learner.train.params, reference.learner.train.params);
    assert_eq!(learner.obs_norm, reference.learner.obs_norm);
}

/// The control loop draws independent noise, so a Gaussian learner with
/// coloured noise (`noise_beta` above 0 anywhere in its schedule) is refused
/// at `init` and by `ingest`, naming the field; a categorical one, which
/// coloured noise leaves alone, is accepted.
#[test]
fn coloured_noise_is_refused_on_the_lagged_schedule() {
    use crate::env::Pendulum;
    use crate::optim::Schedule;
    use crate::policy::GaussianActor;
    type Gaussian = LaggedPpo<GaussianActor<Mlp<3, 16, 1>, 1>, Mlp<3, 16, 1>, 3, 64>;
    let refused = Err(Error::config(
        "noise_beta",
        "must be 0 for the lagged schedule (its control loop draws independent noise)",
    ));
    let coloured = Schedule::Linear {
        start: 0.0,
        end: 0.5,
    };
    let config = PpoConfig {
        noise_beta: coloured,
        total_steps: 1_000,
        ..PpoConfig::DEFAULT
    };
    let mut rng = Xoshiro128pp::seed_from_u64(0);
    let mut agent = Box::new(Gaussian::new(Ppo::new(config)));
    let mut env = Pendulum::new();
    assert_eq!(
        Learner::<Pendulum>::init(&mut *agent, &env, &mut rng),
        refused
    );
    agent.learner.config.noise_beta = Schedule::Constant(0.0);
    Learner::<Pendulum>::init(&mut *agent, &env, &mut rng).unwrap();
    let mut cursor = Cursor::start(&mut env, &mut rng);
    agent
        .iterate(&mut env, &mut cursor, &mut rng, &mut |_| {})
        .unwrap();
    agent.learner.config.noise_beta = coloured;
    let ticks = agent.pending.ticks;
    assert_eq!(agent.learner.ingest(&ticks), refused);

    let mut categorical = Box::new(Agent::new(Ppo::new(PpoConfig {
        noise_beta: Schedule::Constant(0.5),
        ..CONFIG
    })));
    assert!(Learner::<CartPole>::init(&mut *categorical, &CartPole::new(), &mut rng).is_ok());
}
