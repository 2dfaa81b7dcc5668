//! Fault injection: a learning controller never corrupts itself.
//!
//! [`Faulty`] wraps an environment and, at chosen steps, replaces the reward
//! or an observation with NaN, ±∞ or a huge finite value (a broken sensor, a
//! reward bug, a cosmic ray), or fails the step (a plant error). For every
//! algorithm the training loop runs through those faults; after every
//! refused iteration the *entire* agent state — weights, Adam moments and
//! step count, observation and reward normalisers, step counters, the
//! rollout (whether it can be trained on and, if so, its transitions); for
//! SAC and TD3 the target networks, `log α` and the replay ring (its
//! transitions, write position and count) — must hash identically to
//! before, and training must continue and still solve CartPole (SAC and
//! TD3: Pendulum) on held-out start states. Gradient buffers, activation
//! caches and the off-policy update's staged critics are scratch
//! (overwritten before every use) and are not part of the state.

use microrl::algo::replay::ReplayBuffer;
use microrl::algo::sac::SacMlp;
use microrl::algo::td3::Td3Mlp;
use microrl::algo::{
    A2cConfig, AcConfig, ActorCritic, Grpo, GrpoConfig, Ppo, PpoConfig, Reinforce, ReinforceConfig,
    SacConfig, Td3Config, Trpo, TrpoConfig,
};
use microrl::env::{ActionOf, CartPole, Env, Pendulum, Step};
use microrl::nn::Network;
use microrl::optim::TrainState;
use microrl::policy::Actor;
use microrl::train::{Learner, RunConfig, Trainer};
use microrl::{Error, Params, SVector, agent};
use rand_xoshiro::Xoshiro128PlusPlus;

/// What to inject.
#[derive(Clone, Copy, Debug)]
enum Fault {
    Reward(f32),
    Obs(f32),
    /// The plant reports a fault instead of stepping.
    Plant,
}

/// An environment that injects `faults[k]` at global step `at[k]`.
#[derive(Clone)]
struct Faulty<E> {
    inner: E,
    step: u64,
    schedule: Vec<(u64, Fault)>,
}

impl<E: Env<Obs = SVector<f32, N>>, const N: usize> Env for Faulty<E> {
    type Obs = E::Obs;
    type Space = E::Space;
    const SOLVED_RETURN: f32 = E::SOLVED_RETURN;
    fn action_space(&self) -> E::Space {
        self.inner.action_space()
    }
    fn reset<R: rand_core::Rng + ?Sized>(&mut self, rng: &mut R) -> E::Obs {
        self.inner.reset(rng)
    }
    fn step(&mut self, action: ActionOf<E>) -> Result<Step<E::Obs>, Error> {
        let mut step = self.inner.step(action)?;
        self.step += 1;
        for &(at, fault) in &self.schedule {
            if at == self.step {
                match fault {
                    Fault::Reward(r) => step.reward = r,
                    Fault::Obs(x) => step.obs[1] = x,
                    Fault::Plant => {
                        return Err(Error::Plant {
                            what: "injected fault",
                        });
                    }
                }
            }
        }
        Ok(step)
    }
}

/// FNV-1a over `f32` bits and integers.
#[derive(Default)]
struct Hash(u64);

impl Hash {
    fn u64(&mut self, x: u64) {
        for b in x.to_le_bytes() {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn floats(&mut self, xs: &[f32]) {
        for x in xs {
            self.u64(u64::from(x.to_bits()));
        }
    }
    fn params<P: Params>(&mut self, p: &P) {
        for i in 0..P::TENSORS {
            self.floats(p.tensor(i));
        }
    }
    /// A training state's parameters and Adam state (`m`, `v`, `t`).
    fn train<P: Params>(&mut self, train: &TrainState<P>) {
        self.params(&train.params);
        self.params(&train.optimizer.m);
        self.params(&train.optimizer.v);
        self.u64(u64::from(train.optimizer.t));
    }
    /// A replay ring: where it wraps, its write position and count, and
    /// every stored transition in storage order.
    fn replay<const OBS: usize, const ACT: usize, const CAP: usize>(
        &mut self,
        replay: &ReplayBuffer<OBS, ACT, CAP>,
    ) {
        self.u64(replay.size() as u64);
        self.u64(replay.pos() as u64);
        self.u64(replay.len() as u64);
        for t in (0..replay.len()).map_while(|i| replay.get(i)) {
            self.floats(t.obs.as_slice());
            self.floats(t.action.as_slice());
            self.floats(&[t.reward]);
            self.floats(t.next_obs.as_slice());
            self.u64(u64::from(t.terminated));
        }
    }
}

/// The whole agent state of an algorithm, hashed.
trait StateHash {
    fn state_hash(&self) -> u64;
}

fn ppo_hash<A: Actor<4>, C: Network<4, 1>, const N: usize>(a: &Ppo<A, C, 4, N>) -> u64 {
    let mut h = Hash(0xcbf2_9ce4_8422_2325);
    h.train(&a.train);
    h.params(&a.obs_norm);
    h.params(&a.return_norm);
    h.floats(&[a.discounted_return]);
    h.u64(a.steps);
    // A rollout is state while it can be trained on; once consumed by an
    // update (or discarded by a refused collect) it holds nothing.
    let r = &a.rollout;
    let n = if r.is_ready() { r.len() } else { 0 };
    h.u64(n as u64);
    h.u64(u64::from(r.is_ready()));
    for t in 0..n {
        h.floats(r.obs[t].as_slice());
        h.floats(&[r.log_probs[t], r.values[t], r.rewards[t]]);
        h.floats(&[r.advantages[t], r.returns[t], r.final_values[t]]);
        h.u64(u64::from(r.terminated[t]) * 2 + u64::from(r.truncated[t]));
    }
    h.0
}

impl<A: Actor<4>, C: Network<4, 1>, const N: usize> StateHash for Ppo<A, C, 4, N> {
    fn state_hash(&self) -> u64 {
        ppo_hash(self)
    }
}

impl<A: Actor<4>, C: Network<4, 1>, const N: usize> StateHash for Reinforce<A, C, 4, N> {
    fn state_hash(&self) -> u64 {
        ppo_hash(&self.inner)
    }
}

impl<A: Actor<4>, C: Network<4, 1>, const N: usize> StateHash for Trpo<A, C, 4, N> {
    fn state_hash(&self) -> u64 {
        ppo_hash(&self.inner)
    }
}

impl<A: Actor<4>, const N: usize, const CHUNK: usize> StateHash for Grpo<A, 4, N, CHUNK> {
    fn state_hash(&self) -> u64 {
        let mut h = Hash(0xcbf2_9ce4_8422_2325);
        h.train(&self.train);
        h.params(&self.obs_norm);
        h.u64(self.steps);
        // A refused collect discards its rollout: nothing is ready.
        h.u64(u64::from(self.rollout.samples.is_ready()));
        h.0
    }
}

impl<A: Actor<4>, C: Network<4, 1>> StateHash for ActorCritic<A, C, 4> {
    fn state_hash(&self) -> u64 {
        let mut h = Hash(0xcbf2_9ce4_8422_2325);
        h.train(&self.actor);
        h.train(&self.critic);
        h.params(&self.obs_norm);
        h.u64(self.steps);
        h.0
    }
}

/// The whole state of an off-policy agent with SB3's architecture: the
/// trained networks (SAC: actor, critics, `log α`; TD3: actor, critics)
/// with their Adam states, the target networks, the replay ring, the
/// counters.
macro_rules! offpolicy_state_hash {
    ($agent:ident, trained: [$($trained:ident),+], targets: [$($target:ident),+]) => {
        impl<const OBS: usize, const ACT: usize, const OA: usize,
             const H: usize, const CAP: usize, const BATCH: usize>
            StateHash for $agent<OBS, ACT, OA, H, CAP, BATCH>
        {
            fn state_hash(&self) -> u64 {
                let mut h = Hash(0xcbf2_9ce4_8422_2325);
                $(h.train(&self.$trained);)+
                $(h.params(&self.$target);)+
                h.replay(&self.replay);
                h.u64(self.steps);
                h.u64(self.n_updates);
                h.0
            }
        }
    };
}

offpolicy_state_hash!(SacMlp, trained: [actor, critic, log_alpha], targets: [critic_target]);
offpolicy_state_hash!(Td3Mlp, trained: [actor, critic], targets: [actor_target, critic_target]);

/// Every kind of fault but the plant's error, in the order [`schedule`]
/// cycles through them.
const KINDS: [Fault; 8] = [
    Fault::Reward(f32::NAN),
    Fault::Obs(f32::INFINITY),
    Fault::Reward(f32::INFINITY),
    Fault::Obs(f32::NAN),
    Fault::Reward(f32::NEG_INFINITY),
    Fault::Reward(3e38),
    Fault::Obs(f32::NEG_INFINITY),
    Fault::Reward(-1e30),
];

/// A fault every `every` steps, cycling through [`KINDS`].
fn schedule(every: u64, until: u64) -> Vec<(u64, Fault)> {
    schedule_of(&KINDS, every, until)
}

/// A fault every `every` steps, cycling through `kinds`.
fn schedule_of(kinds: &[Fault], every: u64, until: u64) -> Vec<(u64, Fault)> {
    (1..)
        .map(|k| k * every)
        .take_while(|&s| s <= until)
        .zip(kinds.iter().cycle())
        .map(|(s, &f)| (s, f))
        .collect()
}

/// Trains `agent` on faulty CartPole for `total_steps` (a fault every
/// `every` steps, an evaluation every `eval_interval`, solved at 475);
/// checks every refusal left the agent unchanged and that training still
/// solves. Returns the number of refusals.
fn survive<L>(name: &str, agent: &mut L, total_steps: u64, eval_interval: u64, every: u64) -> usize
where
    L: Learner<Faulty<CartPole>> + StateHash,
{
    let run = RunConfig {
        eval_interval,
        ..RunConfig::new(total_steps, 475.0)
    };
    survive_on(
        name,
        agent,
        CartPole::new(),
        run,
        schedule(every, total_steps),
    )
    .0
}

/// [`survive`] on any plant: trains `agent` on `plant` with `faults` for
/// `run`'s budget, checks every refusal left the agent unchanged and that
/// training still reaches `run.threshold` on held-out start states.
/// Returns the number of refusals and the errors they were refused with
/// (`update: …` for those away from an injected fault).
fn survive_on<L, E, const OBS: usize>(
    name: &str,
    agent: &mut L,
    plant: E,
    run: RunConfig,
    faults: Vec<(u64, Fault)>,
) -> (usize, std::collections::BTreeSet<String>)
where
    E: Env<Obs = SVector<f32, OBS>> + Clone,
    L: Learner<Faulty<E>> + StateHash,
{
    let mut env = Faulty {
        inner: plant.clone(),
        step: 0,
        schedule: faults,
    };
    let mut eval_env = Faulty {
        inner: plant,
        step: 0,
        schedule: Vec::new(),
    };
    let mut trainer = Trainer::<_, Xoshiro128PlusPlus>::start(agent, &mut env, run, 3).unwrap();
    let mut refused = 0;
    let mut kinds = std::collections::BTreeSet::new();
    while agent.steps() < run.total_steps {
        let before = agent.state_hash();
        match trainer.iterate(agent, &mut env, &mut eval_env, &mut ()) {
            Ok(p) => {
                if p.solved_at_step.is_some() {
                    break;
                }
            }
            Err(e) => {
                refused += 1;
                // A refusal away from an injected fault is an update's: a
                // huge finite reward or observation stored earlier.
                let at_fault = env.schedule.iter().any(|&(at, _)| at == env.step);
                kinds.insert(if at_fault {
                    format!("{e:?}")
                } else {
                    format!("update: {e:?}")
                });
                assert_eq!(
                    agent.state_hash(),
                    before,
                    "{name}: refused iteration ({e}) changed the agent"
                );
                // The cursor follows the plant, whose episode went bad: start a new one.
                trainer.cursor = microrl::algo::Cursor::start(&mut env, &mut trainer.rng);
            }
        }
    }
    let report = trainer.report(agent, &mut eval_env).unwrap();
    println!(
        "{name}: {refused} refused iterations ({kinds:?}), solved at {:?}, held-out {:.1}",
        trainer.solved_at_step, report.mean
    );
    assert!(refused >= 4, "{name}: only {refused} faults hit");
    assert!(
        trainer.solved_at_step.is_some() && report.mean >= run.threshold,
        "{name}: not solved through the faults (held-out {})",
        report.mean
    );
    (refused, kinds)
}

#[test]
fn ppo_survives_faults() {
    let mut agent = Box::new(agent::Ppo::<Faulty<CartPole>, 64, 256>::new(PpoConfig {
        total_steps: 100_000,
        ..PpoConfig::CARTPOLE
    }));
    survive("ppo", &mut *agent, 100_000, 1, 997);
}

#[test]
fn a2c_survives_faults() {
    let config = A2cConfig {
        total_steps: 500_000,
        ..A2cConfig::DEFAULT
    };
    let mut agent = Box::new(agent::A2c::<Faulty<CartPole>, 64, 32>::new(config.to_ppo()));
    survive("a2c", &mut *agent, 500_000, 1_000, 1_999);
}

#[test]
fn reinforce_survives_faults() {
    let mut agent = Box::new(agent::Reinforce::<Faulty<CartPole>, 64, 500>::new(
        ReinforceConfig::DEFAULT,
    ));
    survive("reinforce", &mut *agent, 500_000, 1, 9_973);
}

#[test]
fn trpo_survives_faults() {
    let mut agent = Box::new(agent::Trpo::<Faulty<CartPole>, 64, 1024>::new(TrpoConfig {
        critic_minibatches: 8,
        ..TrpoConfig::DEFAULT
    }));
    survive("trpo", &mut *agent, 200_000, 1, 4_001);
}

#[test]
fn grpo_survives_faults() {
    let mut agent = Box::new(agent::Grpo::<Faulty<CartPole>, 64, 4096>::new(
        GrpoConfig::DEFAULT,
    ));
    survive("grpo", &mut *agent, 300_000, 1, 1_999);
}

#[test]
fn online_actor_critic_survives_faults() {
    let mut agent = Box::new(agent::ActorCritic::<Faulty<CartPole>, 64>::new(AcConfig {
        total_steps: 500_000,
        ..AcConfig::DEFAULT
    }));
    survive("ac", &mut *agent, 500_000, 1_000, 997);
}

/// Trains the off-policy `agent` on faulty Pendulum for `run` (a fault
/// every `every` steps, cycling through every kind and a plant error):
/// [`survive_on`], and every kind of refusal was met — a non-finite
/// observation or reward, a plant error, and updates refused by the huge
/// finite rewards stored in the ring (the minibatches that draw them).
fn survive_pendulum<L>(name: &str, agent: &mut L, run: RunConfig, every: u64)
where
    L: Learner<Faulty<Pendulum>> + StateHash,
{
    let mut kinds = KINDS.to_vec();
    kinds.push(Fault::Plant);
    let faults = schedule_of(&kinds, every, run.total_steps);
    let (_, refusals) = survive_on(name, agent, Pendulum::new(), run, faults);
    for kind in ["NonFinite", "Plant", "update: "] {
        assert!(
            refusals.iter().any(|e| e.starts_with(kind)),
            "{name}: no {kind} refusal in {refusals:?}"
        );
    }
}

/// Pendulum judged every 1 000 steps, solved at −200, within `total_steps`.
fn pendulum_run(total_steps: u64) -> RunConfig {
    RunConfig {
        eval_interval: 1_000,
        ..RunConfig::new(total_steps, Pendulum::SOLVED_RETURN)
    }
}

#[test]
fn sac_survives_faults() {
    let mut agent = agent::Sac::<Faulty<Pendulum>, 24, 1_000, 64, 4>::boxed(SacConfig {
        buffer_size: 1_000,
        batch_size: 64,
        ..SacConfig::PENDULUM
    });
    survive_pendulum("sac", &mut *agent, pendulum_run(20_000), 499);
}

#[test]
fn td3_survives_faults() {
    let mut agent = agent::Td3::<Faulty<Pendulum>, 32, 1_000, 64, 4>::boxed(Td3Config {
        buffer_size: 1_000,
        batch_size: 64,
        learning_starts: 1_000,
        ..Td3Config::PENDULUM
    });
    survive_pendulum("td3", &mut *agent, pendulum_run(20_000), 499);
}

/// An update needs a complete rollout it has not trained on: after a refused
/// collect (partial rollout discarded) and after an update, it refuses.
#[test]
fn update_refuses_without_a_fresh_complete_rollout() {
    let mut agent = Box::new(agent::Ppo::<Faulty<CartPole>, 8, 64>::new(
        PpoConfig::DEFAULT,
    ));
    let mut env = Faulty {
        inner: CartPole::new(),
        step: 0,
        schedule: vec![(100, Fault::Reward(f32::NAN))],
    };
    let mut rng = microrl_tests::rng(1);
    agent.init(&env, &mut rng).unwrap();
    assert_eq!(agent.update(&mut rng), Err(Error::RolloutIncomplete));
    let mut cursor = microrl::algo::Cursor::start(&mut env, &mut rng);
    agent
        .collect(&mut env, &mut cursor, &mut rng, |_| {})
        .unwrap();
    agent.update(&mut rng).unwrap();
    assert_eq!(agent.update(&mut rng), Err(Error::RolloutIncomplete));
    // Steps 65..=128: the NaN at step 100 refuses the collect.
    let before = agent.state_hash();
    assert_eq!(
        agent.collect(&mut env, &mut cursor, &mut rng, |_| {}),
        Err(Error::NonFinite)
    );
    assert_eq!(agent.state_hash(), before);
    assert_eq!(agent.update(&mut rng), Err(Error::RolloutIncomplete));
    assert_eq!(agent.state_hash(), before);
}

/// A finite but enormous reward: Adam's second moment would overflow and
/// freeze the weights; the step is refused instead, and learning goes on.
#[test]
fn huge_finite_rewards_never_freeze_the_weights() {
    let mut ac = Box::new(agent::ActorCritic::<Faulty<CartPole>, 16>::new(AcConfig {
        max_grad_norm: None,
        ..AcConfig::DEFAULT
    }));
    let mut env = Faulty {
        inner: CartPole::new(),
        step: 0,
        schedule: vec![(5, Fault::Reward(1e25))],
    };
    let mut rng = microrl_tests::rng(2);
    ac.init(&env, &mut rng).unwrap();
    let mut cursor = microrl::algo::Cursor::start(&mut env, &mut rng);
    for _ in 0..4 {
        ac.step(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
    }
    let before = ac.state_hash();
    assert_eq!(
        ac.step(&mut env, &mut cursor, &mut rng, |_| {}),
        Err(Error::GradientOverflow)
    );
    assert_eq!(ac.state_hash(), before);
    let critic = ac.critic.params.clone();
    for _ in 0..10 {
        ac.step(&mut env, &mut cursor, &mut rng, |_| {}).unwrap();
    }
    assert!(ac.critic.optimizer.v.is_finite());
    // Every critic weight still moves.
    let moved = (0..<microrl::nn::Mlp<4, 16, 1> as Params>::LEN)
        .filter(|&k| ac.critic.params.get_flat(k) != critic.get_flat(k))
        .count();
    assert!(
        moved > <microrl::nn::Mlp<4, 16, 1> as Params>::LEN / 2,
        "{moved}"
    );
}

// ------------------------------------------------- the safety net's drills
//
// `microrl::safety::drill::cartpole` with the firmware's 4-32-32-1 policy,
// each fault in both scenarios where it is drilled, each arm: every line
// equals the recorded one (`tests/fixtures/fault-drill.txt`, which the MCU's
// `fault-drill` matches too, `tests/firmware.rs`) and the drill's claims
// hold (`microrl_tests::drill::claims`). A failure names the drills.

use microrl::safety::drill::cartpole::Scenario;
use microrl::safety::drill::{Arm, Fault as DrillFault};
use microrl_tests::drill::{self as drills, Figures};

/// Runs `fault`'s drills (every scenario that drills it, every arm) and the
/// nominal ones beside them; compares each line with the record and checks
/// the claims; panics naming every difference (`MISMATCH`, `MISSING`), every
/// failed claim (`CLAIM`) and every drill that stopped (`STOPPED`).
fn drill_checks(fault: DrillFault) {
    let trained = drills::policy();
    let record = drills::record();
    let mut problems = Vec::new();
    for scenario in Scenario::ALL {
        if !scenario.faults().contains(&fault) {
            continue;
        }
        let figures = |fault: DrillFault, arm: Arm| {
            drills::try_drill(&trained, scenario, fault, arm)
                .map(|d| Figures::parse(&drills::line(scenario, fault, arm, &d)))
                .map_err(|e| format!("STOPPED {}: {e}", drills::head(scenario, fault, arm)))
        };
        let mut arms = Vec::new();
        for arm in drills::ARMS {
            let head = drills::head(scenario, fault, arm);
            match figures(fault, arm) {
                Ok(f) => {
                    match record.get(&head) {
                        Some(recorded) if *recorded == f.line => {}
                        Some(recorded) => problems.push(format!(
                            "MISMATCH {head}\n  recorded: {recorded}\n  now:      {}",
                            f.line
                        )),
                        None => {
                            problems.push(format!("MISSING {head} (MICRORL_BLESS=1 records it)"));
                        }
                    }
                    arms.push(f);
                }
                Err(stopped) => problems.push(stopped),
            }
        }
        match (arms.as_slice(), figures(DrillFault::Nominal, Arm::Guarded)) {
            ([g, f, u], Ok(nominal)) => {
                for failed in drills::claims(scenario, fault, g, f, u, &nominal) {
                    problems.push(format!("CLAIM {failed}\n  guarded: {}", g.line));
                }
            }
            (_, Err(stopped)) => problems.push(stopped),
            _ => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The record holds exactly the drills `fault-drill` runs;
/// `MICRORL_BLESS=1` rewrites it from the desktop's drills.
#[test]
fn drill_record_names_every_drill() {
    let all = drills::all();
    if drills::blessing() {
        let trained = drills::policy();
        let lines: Vec<String> = all
            .iter()
            .map(|&(s, f, a)| drills::line(s, f, a, &drills::drill(&trained, s, f, a)))
            .collect();
        drills::bless(&lines);
    }
    let record = drills::record();
    let heads: Vec<String> = all.iter().map(|&(s, f, a)| drills::head(s, f, a)).collect();
    let recorded: Vec<&String> = record.keys().collect();
    let mut expected = heads.clone();
    expected.sort();
    assert_eq!(recorded, expected.iter().collect::<Vec<_>>());
}

#[test]
fn drill_nominal() {
    drill_checks(DrillFault::Nominal);
}

#[test]
fn drill_poisoned_update_is_refused_by_the_watchdog() {
    drill_checks(DrillFault::PoisonedUpdate);
}

#[test]
fn drill_overrun_update_is_refused_by_the_watchdog() {
    drill_checks(DrillFault::OverrunUpdate);
}

#[test]
fn drill_nan_sensors_switch_to_the_fallback() {
    drill_checks(DrillFault::NanSensors);
}

#[test]
fn drill_stuck_sensor_switches_to_the_fallback() {
    drill_checks(DrillFault::StuckSensor);
}

#[test]
fn drill_diverging_update_is_rejected_on_leaving_the_envelope() {
    drill_checks(DrillFault::DivergingUpdate);
}

#[test]
fn drill_corrupt_store_is_never_loaded() {
    drill_checks(DrillFault::DivergingCorruptStore);
}

#[test]
fn drill_regressed_update_is_rolled_back_by_the_trial() {
    drill_checks(DrillFault::RegressedUpdate);
}

#[test]
fn drill_underperforming_update_is_caught_by_the_performance_check() {
    drill_checks(DrillFault::UnderperformingUpdate);
}

/// `true` when `fallback`, behind the drills' shield, keeps CartPoleContinuous
/// from `state` (`[x, ẋ, θ, θ̇]`) alive for 300 ticks.
fn fallback_recovers(
    fallback: &impl microrl::Controller<4, Action = SVector<f32, 1>>,
    state: [f64; 4],
) -> bool {
    use microrl::env::CartPoleContinuous;
    use microrl::safety::Shield;
    use microrl::safety::drill::cartpole;
    let mut env = CartPoleContinuous::new();
    env.reset(&mut microrl_tests::rng(0));
    env.set_state(state);
    let mut obs = SVector::from(state.map(|x| x as f32));
    let mut shield = Shield::new(cartpole::shield_config(), cartpole::end_stops).unwrap();
    for _ in 0..300 {
        let a = fallback.act(&obs).unwrap();
        let step = env.step(shield.apply(&obs, a).action).unwrap();
        if step.terminated {
            return false;
        }
        obs = step.obs;
    }
    true
}

/// The `Relay` scenario's envelope bounds `|ẋ|` at 0.75 m/s because that is
/// about what its fallback recovers from (docs/safety.md): from the
/// envelope's edge (`x = 1.6`, the pole upright and still) the relay and the
/// tuned PD stop a cart moving outwards at 0.5 m/s and lose one at 1 m/s;
/// from the centre they stop 1.25 m/s and lose 1.5 m/s — so the `Tuned`
/// envelope's `|ẋ| ≤ 2` holds states its fallback cannot recover from. Nor
/// is either envelope the fallback's recoverable set: of the 81 points of
/// the 3⁴ grid over each (every dimension at its low bound, 0, its high
/// bound) the fallback loses the pole from 46 (`Tuned`) and 22 (`Relay`).
#[test]
fn drill_fallbacks_recover_below_the_relay_envelope_speed_only() {
    for (scenario, lost_on_grid) in [(Scenario::Tuned, 46), (Scenario::Relay, 22)] {
        let fallback = scenario.fallback();
        for (state, recovers) in [
            ([1.6, 0.5, 0.0, 0.0], true),
            ([1.6, 1.0, 0.0, 0.0], false),
            ([0.0, 1.25, 0.0, 0.0], true),
            ([0.0, 1.5, 0.0, 0.0], false),
        ] {
            assert_eq!(
                fallback_recovers(&fallback, state),
                recovers,
                "{scenario:?} from {state:?}"
            );
        }
        let bounds = scenario.envelope();
        let lost = (0..81)
            .filter(|&k| {
                let mut state = [0.0f64; 4];
                for (i, x) in state.iter_mut().enumerate() {
                    *x = match (k / 3usize.pow(i as u32)) % 3 {
                        0 => f64::from(bounds.low[i]),
                        1 => 0.0,
                        _ => f64::from(bounds.high[i]),
                    };
                }
                !fallback_recovers(&fallback, state)
            })
            .count();
        assert_eq!(lost, lost_on_grid, "{scenario:?}: lost from {lost} of 81");
    }
}
