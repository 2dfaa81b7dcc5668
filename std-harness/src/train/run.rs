//! The run itself: the agent type for the named task and algorithm, the
//! core's trainer, the outputs.

use std::ops::ControlFlow;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, bail};
use heapless::HistoryBuf;
use microrl::algo::{LearnedReward, SacConfig, Td3Config};
use microrl::checkpoint::AgentState;
use microrl::env::ActionOf;
use microrl::env::EnvState;
use microrl::env::{CartPole, CartPoleContinuous, Env, Weighted};
use microrl::policy::Controller;
use microrl::rng::Xoshiro128pp;
use microrl::train::{KeepBest, Learner, Trainer};
use microrl::vec_env::VecEnv;
use microrl::{Params, SVector, agent, serialize};

use crate::curve::LearningCurve;

use super::*;

pub(crate) fn train_from(
    opts: &TrainOptions,
    resumed: Option<(Vec<u8>, Progress)>,
) -> anyhow::Result<TrainSummary> {
    opts.check()?;
    if let Some(dir) = &opts.out {
        // Refuse an --out that is not a run before training, not after.
        crate::atomic::check_run_dir(dir, &RUN_FILES)?;
    }
    if opts.small && opts.env != EnvName::Cartpole {
        bail!(
            "--small is the 4-32-32 CartPole architecture; it does not apply to {}",
            opts.env.name()
        );
    }
    if opts.lag > 1 {
        bail!("--lag {}: 0 or 1 rollouts of policy lag", opts.lag);
    }
    if opts.lag == 1
        && (!matches!(opts.algo, Algo::Ppo | Algo::Ac | Algo::Sac | Algo::Td3)
            || opts.anchor.is_some()
            || opts.weights.value.is_some()
            || opts.reward_model.is_some())
    {
        bail!(
            "--lag 1 is the learn-while-controlling schedule of PPO, the online actor-critic, SAC and TD3: use --algo ppo, ac, sac or td3, without --kl-ref, --value-weights or --reward-model"
        );
    }
    if opts.anchor.is_some() && opts.algo != Algo::Ppo {
        bail!("--kl-ref fine-tunes with PPO: use --algo ppo");
    }
    if opts.weights.reward.is_some() && opts.env != EnvName::CartpoleContinuous {
        bail!(
            "--reward-weights: {} has one reward channel; cartpole-continuous has two (upright, effort)",
            opts.env.name()
        );
    }
    if opts.reward_model.is_some() && opts.env != EnvName::Cartpole {
        bail!("--reward-model: the learned reward is CartPole's; use --env cartpole");
    }
    if opts.reward_model.is_some() && opts.anchor.is_some() {
        bail!("--reward-model and --kl-ref do not combine");
    }
    if let Some(w) = opts.weights.value {
        if !matches!(opts.algo, Algo::Ppo | Algo::PpoPenalty) || opts.anchor.is_some() {
            bail!(
                "--value-weights fuses PPO's critics: use --algo ppo or ppo-penalty, without --kl-ref"
            );
        }
        microrl::env::channels::check_weights("value_weights", &w)
            .map_err(|e| anyhow::anyhow!("invalid --value-weights: {e}"))?;
    }
    // The options are checked (above, naming each) before the
    // configuration, so that a refused option is named as typed.
    let mut config = AlgoConfig::resolve(
        opts.env,
        opts.algo,
        opts.steps,
        opts.default_run(),
        &opts.overrides,
    )?;
    // The lagged schedule's control loop draws independent noise (the core
    // refuses coloured noise there): a plant's default colour
    // (`PpoConfig::PLANT`) gives way to white noise, and a `noise_beta` the
    // user sets is left for the core to refuse, naming it.
    if let AlgoConfig::Ppo(c) = &mut config
        && opts.lag == 1
        && !opts.overrides.0.contains_key("noise_beta")
    {
        c.noise_beta = microrl::optim::Schedule::Constant(0.0);
    }
    // One agent type per (environment, algorithm, width); the loop is generic.
    macro_rules! go {
        ($agent:ty, $env:expr, $eval:expr) => {{
            let mut agent: Box<$agent> = Box::new(<$agent>::ZERO);
            run(opts, config, &mut *agent, $env, $eval, resumed)
        }};
    }
    // SAC and TD3 (their replay ring is megabytes) are built on the heap in
    // place (`boxed`), never on the stack. The configuration given here is a
    // placeholder: `run` configures the agent, and `init` (or a resumed
    // checkpoint) sets every Adam state from that configuration.
    macro_rules! go_boxed {
        ($agent:ty, $config:expr, $env:expr, $eval:expr) => {{
            let mut agent: Box<$agent> = <$agent>::boxed($config);
            run(opts, config, &mut *agent, $env, $eval, resumed)
        }};
    }
    macro_rules! go_critics {
        ($agent:ty, $env:expr, $eval:expr, $weights:expr) => {{
            let mut agent: Box<$agent> = Box::new(<$agent>::ZERO);
            agent.train.params.critic.weights = $weights;
            run(opts, config, &mut *agent, $env, $eval, resumed)
        }};
    }
    macro_rules! go_anchored {
        ($agent:ty, $env:expr, $anchor:expr) => {{
            let anchor: &AnchorOptions = $anchor;
            let mut agent: Box<$agent> = Box::new(<$agent>::ZERO);
            let file = crate::policy_file::read(&anchor.reference)?;
            // A reference of another task is refused (another plant of the
            // same task is what a fine-tune is for).
            if let Some(task) = file.task.as_ref().filter(|t| t.env != opts.env.name()) {
                anyhow::bail!(
                    "--kl-ref {} was trained on {}, not {}: a policy for one task does not \
                     anchor another",
                    anchor.reference.display(),
                    task.describe(),
                    opts.env.name()
                );
            }
            let blob = file.blob;
            microrl::serialize::load(&mut agent.reference, &blob).map_err(|e| {
                anyhow::anyhow!(
                    "--kl-ref {}: not a policy of this task and width ({e})",
                    anchor.reference.display()
                )
            })?;
            agent.anchor = microrl::algo::AnchorConfig {
                kl_coef: anchor.kl_coef,
                kl_target: anchor.kl_target,
            };
            run(opts, config, &mut *agent, $env, $env, resumed)
        }};
    }
    // SAC and TD3 act in a continuous space: their arm only exists for
    // the continuous plants (`oa`: observations + actions, the critics' input).
    macro_rules! offpolicy {
        ($env_ty:ty, $h:literal, $env:expr, $eval:expr, oa = $oa:literal) => {
            match opts.algo {
                Algo::Sac if opts.lag == 1 => go_boxed!(
                    agent::LaggedSac<$env_ty, $h, OFFPOLICY_CAP, OFFPOLICY_BATCH, $oa, OFFPOLICY_LAG_BLOCK>,
                    SacConfig::DEFAULT,
                    $env,
                    $eval
                ),
                Algo::Td3 if opts.lag == 1 => go_boxed!(
                    agent::LaggedTd3<$env_ty, $h, OFFPOLICY_CAP, OFFPOLICY_BATCH, $oa, OFFPOLICY_LAG_BLOCK>,
                    Td3Config::DEFAULT,
                    $env,
                    $eval
                ),
                Algo::Sac => go_boxed!(
                    agent::Sac<$env_ty, $h, OFFPOLICY_CAP, OFFPOLICY_BATCH, $oa>,
                    SacConfig::DEFAULT,
                    $env,
                    $eval
                ),
                _ => go_boxed!(
                    agent::Td3<$env_ty, $h, OFFPOLICY_CAP, OFFPOLICY_BATCH, $oa>,
                    Td3Config::DEFAULT,
                    $env,
                    $eval
                ),
            }
        };
        ($env_ty:ty, $h:literal, $env:expr, $eval:expr) => {
            bail!(
                "--algo {}: SAC and TD3 need a continuous action space (--env {})",
                opts.algo.name(),
                EnvName::continuous_names()
            )
        };
    }
    macro_rules! by_algo {
        ($env_ty:ty, $h:literal, $ppo_n:expr, $env:expr $(, oa = $oa:literal)?) => {
            by_algo!($env_ty, $h, $ppo_n, $env, $env $(, oa = $oa)?)
        };
        ($env_ty:ty, $h:literal, $ppo_n:expr, $env:expr, $eval:expr $(, oa = $oa:literal)?) => {
            match (opts.algo, opts.weights.value) {
                (Algo::Sac | Algo::Td3, _) => offpolicy!($env_ty, $h, $env, $eval $(, oa = $oa)?),
                (Algo::Ppo, _) if opts.lag == 1 => {
                    go!(agent::LaggedPpo<$env_ty, $h, { $ppo_n }>, $env, $eval)
                }
                (Algo::Ppo, _) if opts.anchor.is_some() => go_anchored!(
                    agent::Anchored<$env_ty, $h, { $ppo_n }>,
                    $env,
                    opts.anchor.as_ref().expect("checked")
                ),
                (Algo::Ppo | Algo::PpoPenalty, Some(w)) => {
                    go_critics!(agent::PpoCritics<$env_ty, $h, { $ppo_n }, 2>, $env, $eval, w)
                }
                (Algo::Ppo | Algo::PpoPenalty, None) => {
                    go!(agent::Ppo<$env_ty, $h, { $ppo_n }>, $env, $eval)
                }
                (Algo::Trpo, _) => go!(agent::Trpo<$env_ty, $h, TRPO_STEPS>, $env, $eval),
                (Algo::Grpo | Algo::Gspo, _) => go!(agent::Grpo<$env_ty, $h, GRPO_STEPS>, $env, $eval),
                (Algo::A2c, _) => go!(agent::A2c<$env_ty, $h, A2C_STEPS>, $env, $eval),
                (Algo::Reinforce, _) => {
                    go!(agent::Reinforce<$env_ty, $h, REINFORCE_STEPS>, $env, $eval)
                }
                (Algo::Ac, _) if opts.lag == 1 => {
                    go!(agent::LaggedAc<$env_ty, $h, AC_LAG_BLOCK>, $env, $eval)
                }
                (Algo::Ac, _) => go!(agent::ActorCritic<$env_ty, $h>, $env, $eval),
            }
        };
    }
    // One agent type per (task, algorithm, width) the options can name.
    macro_rules! by_task {
        ($( $(#[$doc:meta])* $variant:ident = $name:literal, $plant:ty, $params:ty,
            ppo = $n:expr $(, oa = $oa:literal)?; )*) => {
            match opts.env {
                $(EnvName::$variant => {
                    by_algo!($plant, 64, $n, <$plant as Task>::plant(&opts.plant)? $(, oa = $oa)?)
                })*
            }
        };
    }
    if let Some(path) = &opts.reward_model {
        // Trained on the learned reward, judged on the plant's own.
        let model = crate::preference::load(path)?;
        let plant = CartPole::plant(&opts.plant)?;
        let learned = LearnedReward::new(plant, model.clone());
        let scored = LearnedReward::scored_by_plant(plant, model);
        type Learned = LearnedReward<CartPole, crate::preference::RewardNet>;
        return if opts.small {
            by_algo!(
                Learned,
                32,
                PPO_CARTPOLE_STEPS,
                learned.clone(),
                scored.clone()
            )
        } else {
            by_algo!(
                Learned,
                64,
                PPO_CARTPOLE_STEPS,
                learned.clone(),
                scored.clone()
            )
        };
    }
    if opts.small {
        // CartPole's 4-32-32 networks (`--small` was checked to be CartPole's).
        return by_algo!(
            CartPole,
            32,
            PPO_CARTPOLE_STEPS,
            CartPole::plant(&opts.plant)?
        );
    }
    if let Some(w) = opts.weights.reward {
        // Trained on the fused channels, judged on the plant's own reward
        // (the upright channel alone, exactly); checked to be
        // cartpole-continuous.
        let plant = CartPoleContinuous::plant(&opts.plant)?;
        return by_algo!(
            Weighted<CartPoleContinuous, 2>,
            64,
            PPO_CONTINUOUS_STEPS,
            Weighted::new(plant, w).map_err(|e| anyhow::anyhow!("invalid --reward-weights: {e}"))?,
            Weighted::new(plant, [1.0, 0.0]).expect("valid weights"),
            oa = 5
        );
    }
    for_each_task!(by_task)
}

/// The most environment copies a run can step side by side (`n_envs`):
/// RL Zoo's largest setting (LunarLander, Acrobot, MountainCar).
pub const MAX_ENVS: usize = 16;

/// Refuses, before any training, a configuration that `agent` (built with
/// it) refuses at the start of a run: what the core's
/// [`Learner::init`] checks, naming the field, and the environment copies a
/// run can step ([`MAX_ENVS`]). The suite checks every row with it before
/// its first run.
///
/// # Errors
/// `invalid configuration: …` naming the field and its constraint.
pub(crate) fn check_configuration<E: Env, L: Learner<E>>(
    agent: &mut L,
    plant: &E,
) -> anyhow::Result<()> {
    use rand_core::SeedableRng;
    agent
        .init(plant, &mut Xoshiro128pp::seed_from_u64(0))
        .map_err(anyhow::Error::msg)?;
    anyhow::ensure!(
        agent.n_envs() <= MAX_ENVS,
        "invalid configuration: `n_envs` = {} is above the {MAX_ENVS} environment copies `microrl train` steps side by side",
        agent.n_envs()
    );
    Ok(())
}

/// Runs the core loop on one concrete agent and writes the outputs.
///
/// The training environment is always a [`VecEnv`] of [`MAX_ENVS`] copies
/// of `env`, of which the agent's `n_envs` (1 unless a PPO/A2C
/// configuration says otherwise) are stepped: with one copy the run is the
/// single-environment run bit for bit.
pub(crate) fn run<L, E, const OBS: usize>(
    opts: &TrainOptions,
    config: AlgoConfig,
    agent: &mut L,
    env: E,
    mut eval_env: E,
    resumed: Option<(Vec<u8>, Progress)>,
) -> anyhow::Result<TrainSummary>
where
    L: Learner<E> + Configure + AgentState,
    L::Policy: Params + Controller<OBS, Action = ActionOf<E>>,
    L::Stats: AsDiagnostics,
    E: Env<Obs = SVector<f32, OBS>> + EnvState + Clone,
{
    let start = Instant::now();
    agent.configure(config)?;
    anyhow::ensure!(
        agent.n_envs() <= MAX_ENVS,
        "invalid configuration: `n_envs` = {} is above the {MAX_ENVS} environment copies `microrl train` steps side by side",
        agent.n_envs()
    );
    // Said once every option and the configuration are accepted (a refused
    // run says only why it is refused).
    if resumed.is_none()
        && let Some(why) = opts.no_update()?
    {
        eprintln!("warning: {why}");
    }
    let mut envs: Box<VecEnv<E, MAX_ENVS>> =
        Box::new(VecEnv::new(std::array::from_fn(|_| env.clone())));
    let run_config = opts.run_config();
    let mut observer = Observer {
        start,
        bar: progress_bar(opts),
        budget: opts.steps,
        recent: HistoryBuf::new(),
        curve: LearningCurve::new(),
        last_update: None,
        last_eval: f32::NAN,
        next_row: 0,
    };
    type Run<const OBS: usize> = Trainer<SVector<f32, OBS>, Xoshiro128pp>;
    let (mut trainer, mut iterations, wall_before, saved_best) = match resumed {
        None => {
            let trainer = Run::<OBS>::start(agent, &mut *envs, run_config, opts.seed)
                .map_err(anyhow::Error::msg)?;
            (trainer, 0, 0.0, None)
        }
        Some((state, saved)) => {
            let trainer = Run::<OBS>::resume(agent, &mut *envs, &state)
                .map_err(|e| anyhow::anyhow!("resuming from the checkpoint: {e}"))?;
            anyhow::ensure!(
                trainer.config == run_config,
                "the checkpoint's run configuration differs from its options"
            );
            observer.restore(&saved);
            let blob = match saved.best.score {
                Some(_) => Some(
                    std::fs::read(
                        checkpoint_dir(opts.out.as_deref().unwrap_or(Path::new("")))
                            .join(CHECKPOINT_BEST),
                    )
                    .context("the checkpoint's kept policy (best.mrlp)")?,
                ),
                None => None,
            };
            (
                trainer,
                saved.iterations,
                saved.wall_s,
                Some((saved.best, blob)),
            )
        }
    };
    // The kept policy (`--keep-best`): the step-0 policy is the first
    // candidate; a resumed run takes the one its checkpoint kept.
    let mut best = Box::new(
        KeepBest::new(L::Policy::ZERO, opts.keep_best_episodes(), opts.seed)
            .map_err(|e| anyhow::anyhow!("invalid --keep-best: {e}"))?,
    );
    match &saved_best {
        None => {
            trainer
                .keep_best(agent, &mut eval_env, &mut best)
                .map_err(|e| anyhow::anyhow!("evaluating the step-0 policy: {e}"))?;
        }
        Some((mark, blob)) => restore_best(&mut best, *mark, blob.as_deref())?,
    }
    // The core loop, keeping the best, with a checkpoint between iterations.
    let mut checkpoint = |trainer: &Run<OBS>,
                          agent: &L,
                          envs: &VecEnv<E, MAX_ENVS>,
                          observer: &mut Observer,
                          best: &KeepBest<L::Policy>|
     -> anyhow::Result<()> {
        iterations += 1;
        let (Some(every), Some(out)) = (opts.checkpoint_every, &opts.out) else {
            return Ok(());
        };
        if iterations % every != 0 {
            return Ok(());
        }
        let elapsed = wall_before + start.elapsed().as_secs_f64();
        let mut state = vec![0u8; Run::<OBS>::checkpoint_len::<L, VecEnv<E, MAX_ENVS>>()];
        let len = trainer
            .save(agent, envs, &mut state)
            .map_err(|e| anyhow::anyhow!("writing a checkpoint: {e}"))?;
        let kept = match best.score {
            Some(_) => Some(serialize::to_vec(&best.policy).map_err(anyhow::Error::msg)?),
            None => None,
        };
        let mark = BestMark {
            score: best.score.map(f32::to_bits),
            step: best.step,
            crc32: kept.as_deref().and_then(state_crc),
        };
        let progress = observer.save(opts, &config, iterations, elapsed, &state[..len], mark)?;
        let mut files = vec![
            (CHECKPOINT_STATE, &state[..len]),
            (CHECKPOINT_PROGRESS, progress.as_bytes()),
        ];
        if let Some(kept) = &kept {
            files.push((CHECKPOINT_BEST, kept));
        }
        crate::atomic::write_run_dir(&checkpoint_dir(out), &files)
    };
    let mut checkpoint_error = None;
    let outcome = trainer
        .run_keeping_best(
            agent,
            &mut *envs,
            &mut eval_env,
            &mut observer,
            &mut best,
            |trainer, agent, envs, observer, best| match checkpoint(
                trainer, agent, envs, observer, best,
            ) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    checkpoint_error = Some(e);
                    ControlFlow::Break(())
                }
            },
        )
        .map_err(|e| anyhow::anyhow!("training failed at step {}: {e}", agent.steps()))?;
    if let Some(e) = checkpoint_error {
        return Err(e);
    }
    let wall_s = wall_before + start.elapsed().as_secs_f64();
    if let Some(bar) = observer.bar.take() {
        bar.finish_and_clear();
    }

    let mut summary = TrainSummary {
        env: opts.env.name(),
        algo: opts.algo.name(),
        seed: opts.seed,
        steps: opts.steps,
        small: opts.small,
        lag: opts.lag,
        plant: opts.plant.clone(),
        anchor: opts.anchor.clone(),
        weights: opts.weights,
        reward_model: opts.reward_model.clone(),
        steps_run: agent.steps(),
        wall_s,
        eval_mean: outcome.report.mean,
        eval_std: outcome.report.std,
        eval_episodes: outcome.report.episodes,
        select_margin: opts.select_margin,
        early_stop: opts.early_stop,
        final_eval_only: !opts.train_eval,
        threshold: opts.threshold,
        solved_at_step: outcome.solved_at_step,
        select_mean: outcome.selection.map(|e| e.mean),
        keep_best: best.episodes,
        kept_step: best.step,
        kept_score: best.score.filter(|_| best.is_on()),
        solved: outcome.solved(opts.threshold),
        episodes: outcome.episodes,
        updates: outcome.updates,
        last_update: observer.last_update,
        config,
        run: run_config,
        policy: None,
        policy_crc32: None,
        curve_csv: None,
        curve_png: None,
    };
    if let Some(dir) = &opts.out {
        let blob = serialize::to_vec(&best.policy).map_err(anyhow::Error::msg)?;
        // The file records the task it was trained on after the blob; the
        // blob's CRC-32 is the policy's.
        let file = crate::policy_file::with_task(
            &blob,
            &crate::policy_file::TaskRecord::new(opts.env, &opts.plant),
        )?;
        let csv = observer.curve.to_csv();
        let title = format!(
            "{} {} seed {}",
            opts.algo.name(),
            opts.env.name(),
            opts.seed
        );
        let png = observer.curve.render_png(
            &title,
            Some(f64::from(opts.threshold)),
            crate::plot::DEFAULT_WIDTH,
            crate::plot::DEFAULT_HEIGHT,
        )?;
        summary.policy = Some(dir.join(POLICY_FILE));
        summary.policy_crc32 = Some(format!(
            "{:08x}",
            serialize::crc32(&blob[..blob.len().saturating_sub(4)])
        ));
        summary.curve_csv = Some(dir.join(CURVE_CSV_FILE));
        summary.curve_png = Some(dir.join(CURVE_PNG_FILE));
        let json = serde_json::to_string_pretty(&summary)?;
        // All four files appear together, replacing a previous run whole.
        crate::atomic::write_run_dir(
            dir,
            &[
                (POLICY_FILE, &file),
                (CURVE_CSV_FILE, csv.as_bytes()),
                (CURVE_PNG_FILE, &png),
                (SUMMARY_FILE, json.as_bytes()),
            ],
        )?;
        // The run is complete: its checkpoint is no longer needed. Removed
        // whole (renamed aside first): a run killed here leaves a complete
        // checkpoint to resume from, never a part of one.
        crate::atomic::remove_run_dir(&checkpoint_dir(dir))?;
    }
    Ok(summary)
}

pub(crate) fn progress_bar(opts: &TrainOptions) -> Option<indicatif::ProgressBar> {
    if !opts.progress {
        return None;
    }
    let bar = indicatif::ProgressBar::new(opts.steps);
    let style = indicatif::ProgressStyle::with_template(
        "{prefix} [{elapsed_precise}] {bar:30} {pos:>7}/{len:7} {msg}",
    )
    .map(|s| s.progress_chars("=> "))
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_prefix(format!("{} {}", opts.algo.name(), opts.env.name()));
    Some(bar)
}

/// The kept policy a checkpoint recorded, back into `best`.
///
/// # Errors
/// The `best.mrlp` missing, damaged, not the one `progress.json` was
/// written with, or not a policy of this run.
fn restore_best<P: Params>(
    best: &mut KeepBest<P>,
    mark: BestMark,
    blob: Option<&[u8]>,
) -> anyhow::Result<()> {
    let Some(score) = mark.score else {
        return Ok(());
    };
    let blob = blob.context("the checkpoint kept a policy but holds no best.mrlp")?;
    anyhow::ensure!(
        state_crc(blob).is_some() && state_crc(blob) == mark.crc32,
        "the checkpoint's best.mrlp is damaged or belongs to another run"
    );
    serialize::load(&mut best.policy, blob)
        .map_err(|e| anyhow::anyhow!("the checkpoint's best.mrlp: {e}"))?;
    best.score = Some(f32::from_bits(score));
    best.step = mark.step;
    Ok(())
}
