//! The lagged off-policy schedule's tests: with the learner's own actor it
//! is the blocking step, who acts each block, a device's split run equals
//! the one-thread reference, a refused tick changes nothing.

use nalgebra::SVector;
use rand_core::SeedableRng;

use crate::agent;
use crate::algo::Cursor;
use crate::algo::lagged::{Behave, LaggedLearner, TickLearner, init_lagged};
use crate::algo::offpolicy::{Explorer, OffPolicy};
use crate::algo::{SacConfig, Td3Config, Tick};
use crate::checkpoint::AgentState;
use crate::checkpoint::{field_bytes, state_bytes};
use crate::env::Pendulum;
use crate::nn::Layer;
use crate::rng::Xoshiro128pp;
use crate::train::{Agent, Learner};
use crate::train::{RunConfig, Trainer, report_seed, select_seed};
use std::boxed::Box;
use std::collections::VecDeque;
use std::format;
use std::vec::Vec;

type Sac = agent::Sac<Pendulum, 16, 2048, 32, 4>;
type Td3 = agent::Td3<Pendulum, 16, 2048, 32, 4>;
type LaggedSac = agent::LaggedSac<Pendulum, 16, 2048, 32, 4, 32>;
type LaggedTd3 = agent::LaggedTd3<Pendulum, 16, 2048, 32, 4, 32>;

const SAC: SacConfig = SacConfig {
    buffer_size: 1_000,
    learning_starts: 100,
    batch_size: 32,
    ..SacConfig::PENDULUM
};

const TD3: Td3Config = Td3Config {
    buffer_size: 1_000,
    learning_starts: 100,
    batch_size: 32,
    ..Td3Config::PENDULUM
};

/// `learner` initialised from `seed` on Pendulum, with the plant's first
/// start drawn from the same stream.
fn started<L: Learner<Pendulum>>(
    mut learner: Box<L>,
    seed: u64,
) -> (Box<L>, Pendulum, Cursor<SVector<f32, 3>>, Xoshiro128pp) {
    let mut env = Pendulum::new();
    let mut rng = Xoshiro128pp::seed_from_u64(seed);
    learner.init(&env, &mut rng).unwrap();
    let cursor = Cursor::start(&mut env, &mut rng);
    (learner, env, cursor, rng)
}

/// Acting with a freshly published copy of the learner's own actor (its
/// warm-up, its exploration, its bounds) and ingesting the tick is
/// [`OffPolicy::step`] bit for bit when one stream serves both sides:
/// through the warm-up, the first updates and on.
fn publish_act_ingest_is_the_step<L>(new: impl Fn() -> Box<L>)
where
    L: OffPolicy<3, 1> + TickLearner<3> + Learner<Pendulum> + AgentState,
    L::Behaviour: Behave<3, Space = crate::env::Continuous<1>>,
{
    let (mut blocking, mut env_a, mut cursor_a, mut rng_a) = started(new(), 4);
    let (mut split, mut env_b, mut cursor_b, mut rng_b) = started(new(), 4);
    let mut explorer = L::ZERO_BEHAVIOUR;
    for _ in 0..300 {
        let a = blocking
            .step(&mut env_a, &mut cursor_a, &mut rng_a, |_| {})
            .unwrap();
        LaggedLearner::publish(&*split, &mut explorer);
        let tick = explorer
            .behave(
                split.ticks_learned(),
                &mut env_b,
                &mut cursor_b,
                &mut rng_b,
                &mut |_| {},
            )
            .unwrap();
        let b = OffPolicy::ingest(&mut *split, &tick, &mut rng_b).unwrap();
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
    assert!(state_bytes(&*blocking) == state_bytes(&*split));
    assert_eq!(blocking.env_steps(), 300);
}

#[test]
fn sac_publish_act_ingest_is_the_step() {
    publish_act_ingest_is_the_step(|| Box::new(Sac::new(SAC)));
}

#[test]
fn td3_publish_act_ingest_is_the_step() {
    publish_act_ingest_is_the_step(|| Box::new(Td3::new(TD3)));
}

/// Block `j` is acted by the actor published after block `j − 2` (`θ₀` for
/// blocks 0 and 1): with TD3's noise off the action is the actor's output,
/// so after iteration `i` every pending action past the warm-up is the
/// output of the actor published by iteration `i − 1`, and some differ from
/// iteration `i`'s; the warm-up's 40 ticks (blocks 0 and the start of 1)
/// are uniformly random, with no log-probability.
#[test]
fn block_j_is_acted_by_the_actor_published_after_block_j_minus_2() {
    let config = Td3Config {
        learning_starts: 40,
        action_noise: None,
        ..TD3
    };
    let (mut agent, mut env, mut cursor, mut rng) = started(LaggedTd3::boxed(config), 1);
    let mut published = std::vec![agent.published.clone()];
    let mut random = 0;
    for i in 0..5u64 {
        let stats = agent
            .iterate(&mut env, &mut cursor, &mut rng, &mut |_| {})
            .unwrap();
        // Block 0 is all warm-up: no gradient step, no statistics.
        assert_eq!(stats.is_some(), i > 0, "iteration {i}: {stats:?}");
        published.push(agent.published.clone());
        assert_eq!(agent.pending.len, 32);
        assert_eq!(agent.published_count, i + 1);
        // One gradient step per tick learned from past the warm-up.
        let learned = 32 * (i + 1);
        assert_eq!(agent.learner.n_updates, learned.saturating_sub(40));
        assert_eq!(agent.updates, [0, 24, 32, 32, 32][i as usize]);
        let acted_by = &published[i as usize].actor.net;
        let newest = &published[i as usize + 1].actor.net;
        let mut differs = false;
        for (k, tick) in (learned..).zip(agent.pending.ticks()) {
            let mean = acted_by.forward(&tick.obs);
            if k < 40 {
                assert_ne!(tick.action, mean, "tick {k} is the warm-up's");
                assert_eq!(tick.log_prob, 0.0);
                random += 1;
            } else {
                assert_eq!(tick.action, mean, "iteration {i}, tick {k}");
                differs |= tick.action != newest.forward(&tick.obs);
            }
        }
        // Iteration 0 learned nothing (the warm-up): its actor is `θ₀`.
        assert_eq!(
            differs,
            i > 0,
            "iteration {i}: the block was acted by the newest actor"
        );
    }
    assert_eq!(random, 8, "ticks 32–39 of block 1");
    assert_eq!(Agent::steps(&*agent), 6 * 32);
}

/// A block the learner refuses (a poisoned tick in the middle) fails the
/// iteration: the ticks before it stay learned, the rest of the block is
/// discarded, nothing is published; the next iteration acts a new block.
#[test]
fn a_refused_block_publishes_nothing() {
    let (mut agent, mut env, mut cursor, mut rng) = started(LaggedSac::boxed(SAC), 3);
    for _ in 0..4 {
        agent
            .iterate(&mut env, &mut cursor, &mut rng, &mut |_| {})
            .unwrap();
    }
    let published = field_bytes(&agent.published);
    let (count, learned) = (agent.published_count, agent.learner.ticks_learned());
    agent.pending.ticks[10].reward = f32::NAN;
    assert!(
        agent
            .iterate(&mut env, &mut cursor, &mut rng, &mut |_| {})
            .is_err()
    );
    assert_eq!(agent.learner.ticks_learned(), learned + 10);
    assert_eq!(agent.pending.len, 0);
    assert_eq!(agent.published_count, count);
    assert!(field_bytes(&agent.published) == published);
    agent
        .iterate(&mut env, &mut cursor, &mut rng, &mut |_| {})
        .unwrap();
    assert_eq!(agent.learner.ticks_learned(), learned + 10 + 32);
    assert_eq!(agent.published_count, count + 1);
}

/// An error while acting the next block (a non-finite observation) fails
/// the iteration after the learner learned: its behaviour is still
/// published, the partial block discarded, and the next iteration acts a
/// new block with it.
#[test]
fn an_acting_error_after_learning_still_publishes() {
    let (mut agent, mut env, mut cursor, mut rng) = started(LaggedSac::boxed(SAC), 4);
    for _ in 0..4 {
        agent
            .iterate(&mut env, &mut cursor, &mut rng, &mut |_| {})
            .unwrap();
    }
    let (count, learned) = (agent.published_count, agent.learner.ticks_learned());
    let obs = cursor.obs;
    cursor.obs[0] = f32::NAN;
    assert_eq!(
        agent
            .iterate(&mut env, &mut cursor, &mut rng, &mut |_| {})
            .unwrap_err(),
        crate::Error::NonFinite
    );
    assert_eq!(agent.learner.ticks_learned(), learned + 32);
    assert_eq!(agent.published_count, count + 1);
    assert_eq!(agent.pending.len, 0);
    let mut fresh = Explorer::zero();
    agent.learner.publish(&mut fresh);
    assert!(field_bytes(&agent.published) == field_bytes(&fresh));
    cursor.obs = obs;
    agent
        .iterate(&mut env, &mut cursor, &mut rng, &mut |_| {})
        .unwrap();
    assert_eq!(agent.learner.ticks_learned(), learned + 64);
    assert_eq!(agent.published_count, count + 2);
}

/// A device's whole run: the control loop queues ticks; the learner, a few
/// ticks late, drains a block, ingests it tick by tick with its own copy of
/// the training stream, publishes at the next block boundary and runs the
/// trainer's gate and, at the end, its report. The outcome and the weights
/// equal the one-thread [`Lagged`](crate::algo::Lagged) run through [`Trainer::run`]
/// bit for bit.
#[test]
fn a_split_control_loop_and_learner_equal_the_one_thread_schedule() {
    let (seed, block) = (6, 32usize);
    let run = RunConfig {
        eval_interval: 320,
        quick_episodes: 2,
        ..RunConfig::new(1_600, -1_000.0)
    };
    let mut reference = LaggedSac::boxed(SAC);
    let (mut env, mut eval_env) = (Pendulum::new(), Pendulum::new());
    let mut trainer =
        Trainer::<_, Xoshiro128pp>::start(&mut *reference, &mut env, run, seed).unwrap();
    let expected = trainer
        .run(&mut *reference, &mut env, &mut eval_env, &mut ())
        .unwrap();
    assert!(expected.updates > 1_000, "{expected:?}");

    let mut learner = Sac::boxed(SAC);
    let (mut env, mut eval_env) = (Pendulum::new(), Pendulum::new());
    let mut rng = Xoshiro128pp::seed_from_u64(seed);
    let mut acting_rng = init_lagged(&mut *learner, &env, &mut rng).unwrap();
    let mut front = Explorer::zero();
    learner.publish(&mut front);
    let select = Xoshiro128pp::seed_from_u64(select_seed(seed));
    let report = Xoshiro128pp::seed_from_u64(report_seed(seed));
    let mut trainer = Trainer::new(run, &mut env, rng, select, report).unwrap();
    let mut learning_rng = trainer.rng.clone();
    let mut cursor = trainer.cursor.clone();
    let mut back = None;
    let mut queue: VecDeque<Tick<3, SVector<f32, 1>>> = VecDeque::new();
    let (mut acted, mut next_eval, mut updates, mut stopping) = (0u64, run.eval_interval, 0, false);
    let schedule = learner.schedule().unwrap();
    let steps = loop {
        if (acted as usize).is_multiple_of(block)
            && let Some(explorer) = back.take()
        {
            front = explorer;
        }
        let t = front
            .behave(acted, &mut env, &mut cursor, &mut acting_rng, &mut |_| {})
            .unwrap();
        queue.push_back(t);
        acted += 1;
        // The learner's turn: a few ticks into the next block.
        if queue.len() < block + 3 && !(stopping && queue.len() >= block) {
            continue;
        }
        let ticks: Vec<_> = queue.drain(..block).collect();
        trainer.episodes += ticks.iter().filter(|t| t.terminated || t.truncated).count() as u64;
        if stopping {
            break learner.env_steps() + block as u64;
        }
        let mut stats = None;
        for t in &ticks {
            stats = learner.ingest(t, &mut learning_rng).unwrap().or(stats);
            updates += u64::from(schedule.updates_after(learner.env_steps()));
        }
        let mut explorer = Explorer::zero();
        learner.publish(&mut explorer);
        back = Some(explorer);
        let steps = learner.env_steps() + block as u64;
        // The trainer judges after an iteration once the interval is due
        // (the learner's rule on a device: only those snapshots are sent).
        if steps < next_eval && steps < run.total_steps {
            continue;
        }
        while next_eval <= steps {
            next_eval += run.eval_interval;
        }
        let progress = trainer
            .after_update(&*learner, steps, updates, &stats, &mut eval_env, &mut ())
            .unwrap();
        updates = 0;
        stopping = trainer.ends_run::<Option<crate::algo::sac::SacStats>, ()>(&progress, &mut ())
            || steps >= run.total_steps;
    };
    let outcome = trainer
        .finish_with::<_, _, _, Option<crate::algo::sac::SacStats>>(
            &*learner,
            steps,
            &mut eval_env,
            &mut (),
        )
        .unwrap();
    assert_eq!(outcome, expected);
    assert!(state_bytes(&*learner) == state_bytes(&reference.learner));
}

/// A tick the replay buffer refuses (a non-finite reward or observation,
/// an action outside `[−1, 1]`) changes nothing in the learner.
#[test]
fn a_refused_tick_changes_nothing() {
    let (mut agent, mut env, mut cursor, mut rng) = started(LaggedSac::boxed(SAC), 2);
    for _ in 0..5 {
        agent
            .iterate(&mut env, &mut cursor, &mut rng, &mut |_| {})
            .unwrap();
    }
    let tick = agent.pending.ticks[0];
    let before = state_bytes(&agent.learner);
    let mut bad_obs = tick;
    bad_obs.next_obs[2] = f32::NAN;
    let mut bad_action = tick;
    bad_action.action[0] = 1.5;
    for bad in [
        Tick {
            reward: f32::INFINITY,
            ..tick
        },
        bad_obs,
        bad_action,
    ] {
        assert!(agent.learner.ingest(&bad, &mut rng).is_err());
        assert!(state_bytes(&agent.learner) == before);
    }
    let steps = agent.learner.env_steps();
    agent.learner.ingest(&tick, &mut rng).unwrap();
    assert_eq!(agent.learner.env_steps(), steps + 1);
    assert!(state_bytes(&agent.learner) != before);
}

/// `LaggedSac::boxed(config)` / `LaggedTd3::boxed(config)` are
/// `Lagged::new(…::new(config))` (the heap constructors of the lagged
/// schedule, built in place): every field of the schedule and the
/// learner's state equal, and a short run from each ends with the same
/// learner state, published actor and block.
#[test]
fn boxed_is_new() {
    // The schedule's fields and the learner's saved state, equal.
    macro_rules! same {
        ($boxed:expr, $new:expr) => {{
            let (boxed, new) = (&$boxed, &$new);
            assert_eq!(boxed.learner.config, new.learner.config);
            assert_eq!(boxed.learner.actor, new.learner.actor);
            assert_eq!(boxed.learner.critic, new.learner.critic);
            assert!(state_bytes(&boxed.learner) == state_bytes(&new.learner));
            assert_eq!(boxed.published, new.published);
            assert_eq!(boxed.pending, new.pending);
            assert_eq!(boxed.acting_rng, new.acting_rng);
            assert_eq!(
                (boxed.published_count, boxed.updates),
                (new.published_count, new.updates)
            );
        }};
    }
    let sac = LaggedSac::boxed(SAC);
    same!(sac, Box::new(LaggedSac::new(Sac::new(SAC))));
    assert_eq!(sac.learner.log_alpha, Sac::new(SAC).log_alpha);
    same!(
        LaggedTd3::boxed(TD3),
        Box::new(LaggedTd3::new(Td3::new(TD3)))
    );

    // Trained alike: the same learner state, published actor and block.
    fn trained<L: Learner<Pendulum>>(agent: Box<L>) -> Box<L> {
        let (mut agent, mut env, mut cursor, mut rng) = started(agent, 5);
        for _ in 0..8 {
            agent
                .iterate(&mut env, &mut cursor, &mut rng, &mut |_| {})
                .unwrap();
        }
        agent
    }
    let sac = trained(LaggedSac::boxed(SAC));
    assert!(sac.learner.n_updates > 100);
    same!(sac, trained(Box::new(LaggedSac::new(Sac::new(SAC)))));
    same!(
        trained(LaggedTd3::boxed(TD3)),
        trained(Box::new(LaggedTd3::new(Td3::new(TD3))))
    );
}
