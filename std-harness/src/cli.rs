//! The command line of the `microrl` binary: the `clap` definitions of its
//! options and subcommands ([`Cli`], [`Command`]) and the conversion of the
//! training options into [`TrainOptions`]. A module of the binary
//! (`src/main.rs`), not of the library; apart from `main.rs` so that it
//! holds what is parsed and `main.rs` what is run.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use microrl_harness::Arch;
use microrl_harness::interop::Layout;
use microrl_harness::train::{
    Algo, AnchorOptions, EnvName, FusionWeights, Overrides, RunOptions, TrainOptions, default_steps,
};

#[derive(Parser, Debug)]
#[command(
    name = "microrl",
    version,
    about = "Reinforcement learning that trains on microcontrollers: desktop harness"
)]
pub(crate) struct Cli {
    /// Print exactly one JSON object as the last line of standard output.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

/// What to train and how long.
#[derive(Args, Debug, Clone)]
pub(crate) struct TrainArgs {
    /// Task (default: cartpole, or the --config summary.json's).
    #[arg(long, value_enum)]
    env: Option<EnvName>,
    /// Algorithm (default: ppo, or the --config summary.json's).
    #[arg(long, value_enum)]
    algo: Option<Algo>,
    /// Environment-step budget (default: the `--config` file's
    /// `total_steps` where it sets one, else the registry's for the task and
    /// algorithm: 100000 for PPO on CartPole, 200000 for PPO on
    /// cartpole-continuous, 300000 for PPO on Pendulum, 1000000 for PPO on
    /// the suite's plants, 50000 for SAC and TD3 (20000 on Pendulum), 500000
    /// otherwise; see docs/cli.md); at most 1000000000.
    #[arg(long)]
    steps: Option<u64>,
    /// Hyper-parameters: a TOML file whose keys are the fields of the
    /// algorithm's config (PpoConfig / A2cConfig / ReinforceConfig / AcConfig /
    /// TrpoConfig / GrpoConfig / SacConfig / Td3Config, e.g. `gamma = 0.98`, `learning_rate = 3e-4` or `{ start = 1e-3, end = 0.0 }`,
    /// `max_grad_norm = false`, PPO's `n_envs = 8` environment copies of
    /// `n_steps = 32` steps a rollout, `[adam] eps = 1e-5`), merged over the
    /// tuned defaults; or a run's summary.json to reproduce that run.
    #[arg(long)]
    pub(crate) config: Option<PathBuf>,
    /// Episodes of the deterministic evaluations that decide "solved"
    /// (selection start states) and that are reported (held-out start
    /// states): 1 to 10000 (default 100, or the --config summary.json's).
    #[arg(long)]
    eval_episodes: Option<u32>,
    /// Standard errors by which the deciding evaluation's mean must clear
    /// the threshold before the run counts as solved and stops (a lower
    /// confidence bound against stopping on lucky start states; 0: the mean
    /// alone; default 3, or the --config summary.json's).
    #[arg(long, value_name = "Z")]
    select_margin: Option<f32>,
    /// Keep training for the whole budget after the task is solved.
    #[arg(long)]
    no_early_stop: bool,
    /// Evaluate only after the whole budget (the reported evaluation):
    /// none during training, so no early stop, no solved step, and a
    /// learning curve of training returns. For timing at equal work with a
    /// library that does not evaluate while it trains (the peer benchmark's
    /// SB3 run).
    #[arg(long)]
    final_eval_only: bool,
    /// The run's result is the policy that scored best on N fixed start
    /// states of their own (a stream that neither training, the deciding
    /// evaluation nor the report uses), played after every evaluation and
    /// at step 0; the held-out report and policy.mrlp are that policy's. A
    /// run stopped early by its deciding evaluation keeps the policy that
    /// passed it. At most 10000 (default 20, or the --config
    /// summary.json's).
    #[arg(long, value_name = "N")]
    keep_best: Option<u32>,
    /// The run's result is its last policy (same as --keep-best 0).
    #[arg(long, conflicts_with = "keep_best")]
    last: bool,
    /// CartPole: train the MCU-sized 4-32-32 actor and critic (the firmware's
    /// `infer` size) instead of 64-64.
    #[arg(long)]
    small: bool,
    /// PPO, the online actor-critic, SAC and TD3: policy lag, 0 or 1.
    /// `--lag 1` trains on the schedule of a device that learns while it
    /// controls — PPO's rollout j (the actor-critic's block j of 250 ticks,
    /// SAC's and TD3's of 5) is acted by the policy published after update
    /// (block) j−2 — the desktop reference of the firmware's learned
    /// weights, bit for bit. Default 0, or the --config summary.json's.
    #[arg(long, value_name = "N")]
    lag: Option<u8>,
    /// Write a checkpoint to <out>.checkpoint/ every N iterations (rollouts
    /// and updates; online steps for `ac`, environment steps for SAC and
    /// TD3; blocks with `--lag 1`), so that `--resume` can continue
    /// a killed run bit for bit.
    #[arg(long, value_name = "N")]
    checkpoint_every: Option<u64>,
    #[command(flatten)]
    plant: PlantArgs,
    /// Fine-tune from this policy (PPO only): the actor and its observation
    /// statistics start as the reference's (statistics frozen unless the
    /// config sets normalize_obs = true), and every step's reward is
    /// penalised by β·(log π(a|s) − log π_ref(a|s)), the KL to the reference.
    #[arg(long, value_name = "POLICY")]
    kl_ref: Option<PathBuf>,
    /// β of --kl-ref (0: plain PPO started from the reference; default 0.1).
    #[arg(long, requires = "kl_ref")]
    kl_beta: Option<f32>,
    /// With --kl-ref: adapt β after every rollout towards this mean per-step
    /// KL (halved below target/1.5, doubled above 1.5·target).
    #[arg(long, requires = "kl_ref")]
    kl_target: Option<f32>,
    /// Multi-reward: train on cartpole-continuous's two reward channels
    /// (upright, effort = −a²) fused as U·upright + E·effort (finite,
    /// non-negative, summing to 1); evaluations score the plant's own reward.
    #[arg(long, value_name = "U,E", value_delimiter = ',', num_args = 1)]
    reward_weights: Option<Vec<f32>>,
    /// Multi-critic PPO: two critics whose values are fused with these
    /// weights for GAE, each trained toward the fused return with the
    /// weighted value loss (finite, non-negative, summing to 1).
    #[arg(long, value_name = "V1,V2", value_delimiter = ',', num_args = 1)]
    value_weights: Option<Vec<f32>>,
    /// Train on a learned reward (CartPole): the Bradley–Terry model FILE
    /// written by `microrl reward-model`; each step earns r_θ(s') − b (0 for
    /// the step that drops the pole); evaluations score the plant's own reward.
    #[arg(long, value_name = "FILE")]
    reward_model: Option<PathBuf>,
}

/// Two comma-separated weights.
fn pair(option: &str, values: &Option<Vec<f32>>) -> anyhow::Result<Option<[f32; 2]>> {
    values
        .as_ref()
        .map(|v| {
            <[f32; 2]>::try_from(v.as_slice())
                .map_err(|_| anyhow::anyhow!("{option} takes two weights, got {}", v.len()))
        })
        .transpose()
}

/// `--plant KEY=VALUE,...`: a changed plant.
#[derive(Args, Clone, Debug)]
pub(crate) struct PlantArgs {
    /// The plant's physical parameters that differ from Gymnasium's, as
    /// KEY=VALUE: the fields of the task's parameter struct (CartPole:
    /// gravity, masscart, masspole, length — half the pole —, force_mag, tau;
    /// Pendulum: g, m, l, max_speed, max_torque, dt; Acrobot: link_length_1,
    /// link_mass_1, link_mass_2, link_com_pos_1, link_com_pos_2, link_moi,
    /// gravity, torque, dt, max_vel_1, max_vel_2; mountaincar-continuous:
    /// power, gravity, max_speed; cartpole-swingup, servo, quadrotor-2d:
    /// see docs/plants.md), e.g. `--plant masspole=0.3,length=1.0`;
    /// each KEY at most once. An unknown KEY is refused listing the task's.
    #[arg(long, value_name = "KEY=VALUE", value_delimiter = ',')]
    plant: Vec<String>,
}

impl PlantArgs {
    pub(crate) fn table(&self) -> anyhow::Result<toml::Table> {
        let mut table = toml::Table::new();
        for pair in &self.plant {
            let (key, value) = pair
                .split_once('=')
                .with_context(|| format!("--plant {pair}: expected KEY=VALUE"))?;
            // An integer stays one (a family plant's `seed`); a physical
            // parameter reads it as the number it is.
            let value = match value.trim().parse::<i64>() {
                Ok(n) => toml::Value::Integer(n),
                Err(_) => toml::Value::Float(value.trim().parse().with_context(|| {
                    format!("--plant {pair}: `{}` is not a number", value.trim())
                })?),
            };
            let key = key.trim();
            anyhow::ensure!(
                table.insert(key.to_string(), value).is_none(),
                "--plant {pair}: `{key}` given twice (each parameter once, as in a TOML config)"
            );
        }
        Ok(table)
    }
}

/// Which command's options [`TrainArgs::options`] makes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TrainCommand {
    /// `train --seed` (`None`: not given).
    Train { seed: Option<u64> },
    /// `validate --threshold`: its seeds are 0..N, never a summary's.
    Validate { threshold: Option<f32> },
}

impl TrainArgs {
    /// The run these options ask for: each option the command line's
    /// where given, else the `--config` summary.json's
    /// ([`RunOptions::replay`]), else its default; and the `note:` saying
    /// what came from the summary.
    pub(crate) fn options(
        &self,
        command: TrainCommand,
        out: Option<PathBuf>,
        progress: bool,
    ) -> anyhow::Result<(TrainOptions, Option<String>)> {
        let mut overrides = match &self.config {
            Some(path) => Overrides::from_file(path)?,
            None => Overrides::default(),
        };
        // A summary.json records every option of its run too.
        let mut saved = match &self.config {
            Some(path) => RunOptions::from_summary(path)?,
            None => None,
        };
        let (seed, threshold) = match command {
            TrainCommand::Train { seed } => (seed, None),
            TrainCommand::Validate { threshold } => {
                if let Some(saved) = &mut saved {
                    saved.seed = None;
                }
                (Some(0), threshold)
            }
        };
        let given = RunOptions {
            env: self.env,
            algo: self.algo,
            plant: Some(self.plant.table()?),
            seed,
            steps: self.steps,
            small: self.small.then_some(true),
            lag: self.lag,
            eval_episodes: self.eval_episodes,
            select_margin: self.select_margin,
            early_stop: self.no_early_stop.then_some(false),
            final_eval_only: self.final_eval_only.then_some(true),
            keep_best: if self.last { Some(0) } else { self.keep_best },
            threshold,
            anchor: self.kl_ref.as_ref().map(|reference| {
                Some(AnchorOptions {
                    reference: reference.clone(),
                    kl_coef: self.kl_beta.unwrap_or(0.1),
                    kl_target: self.kl_target,
                })
            }),
            reward_weights: pair("--reward-weights", &self.reward_weights)?.map(Some),
            value_weights: pair("--value-weights", &self.value_weights)?.map(Some),
            reward_model: self.reward_model.clone().map(Some),
        };
        let file = self.config.as_deref().unwrap_or(Path::new(""));
        let run = given.replay(saved.as_ref(), file);
        let (env, algo) = (run.env, run.algo);
        // (Only PPO has it; another algorithm is refused naming --kl-ref.)
        if run.anchor.is_some() && algo == Algo::Ppo && !overrides.0.contains_key("normalize_obs") {
            // A fine-tune keeps the reference's observation statistics.
            overrides
                .0
                .insert("normalize_obs".into(), toml::Value::Boolean(false));
        }
        // The budget: `--steps`, else a summary's `steps`, else the
        // configuration's `total_steps` (so that the schedules anneal over
        // the steps the loop runs), else the registry's. A summary's note
        // already says where its budget came from.
        let (steps, budget_note) =
            overrides.budget(run.steps, || default_steps(env, algo), file)?;
        let note = match (run.note, budget_note.filter(|_| saved.is_none())) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        let opts = TrainOptions {
            overrides,
            threshold: run.threshold.unwrap_or(env.threshold()),
            eval_episodes: run.eval_episodes,
            select_margin: run.select_margin,
            early_stop: run.early_stop,
            train_eval: !run.final_eval_only,
            keep_best: run.keep_best,
            out,
            progress,
            small: run.small,
            lag: run.lag,
            checkpoint_every: self.checkpoint_every,
            plant: run.plant,
            anchor: run.anchor,
            weights: FusionWeights {
                reward: run.reward_weights,
                value: run.value_weights,
            },
            reward_model: run.reward_model,
            ..TrainOptions::new(env, algo, run.seed, steps)
        };
        Ok((opts, note))
    }
}

/// The policy file a command reads: `POLICY`, positional in every command
/// (`--policy POLICY` is still accepted, hidden, for older scripts; the
/// commands' usage lines say `<POLICY>`, which clap would print `[POLICY]`).
#[derive(Args, Debug, Clone)]
pub(crate) struct PolicyFile {
    /// A policy file written by `train`, `init` or `export`.
    #[arg(value_name = "POLICY", required_unless_present = "policy_option")]
    policy: Option<PathBuf>,
    /// The same, as an option (older spelling).
    #[arg(
        long = "policy",
        value_name = "POLICY",
        hide = true,
        conflicts_with = "policy"
    )]
    policy_option: Option<PathBuf>,
}

impl PolicyFile {
    pub(crate) fn path(self) -> PathBuf {
        // clap requires exactly one of the two.
        self.policy.or(self.policy_option).unwrap_or_default()
    }
}

/// One observation component of `act --obs` (surrounding spaces allowed).
fn observation(text: &str) -> Result<f32, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("not a number: {text:?}"))
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Train a policy; writes policy.mrlp, curve.csv, curve.png and summary.json into --out.
    Train {
        #[command(flatten)]
        args: TrainArgs,
        /// RNG seed (default 0, or the --config summary.json's).
        #[arg(long)]
        seed: Option<u64>,
        /// Output directory (default: runs/<env>-<algo>-seed<N>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Continue the run of output directory DIR from its checkpoint
        /// (DIR.checkpoint/, written with --checkpoint-every), with the options
        /// it was started with; ends bit-identical to the uninterrupted run.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "seed", "steps", "env", "algo", "config", "small", "lag", "checkpoint_every", "no_early_stop", "final_eval_only", "eval_episodes", "select_margin", "keep_best", "last"])]
        resume: Option<PathBuf>,
    },
    /// Learn a CartPole reward model from synthetic pairwise preferences
    /// (Bradley–Terry; the oracle prefers the segment that stays upright
    /// longer, answers flipped with probability --noise); reports held-out
    /// accuracy and writes the model for `train --reward-model`.
    RewardModel {
        /// RNG seed (segments, labels, shuffles, initial weights).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Training segments of 50 steps (the held-out set has half as many).
        #[arg(long, default_value_t = 1000)]
        segments: usize,
        /// Labelled training pairs (the held-out set has half as many).
        #[arg(long, default_value_t = 4000)]
        pairs: usize,
        /// Probability that a training label is flipped.
        #[arg(long, default_value_t = 0.1)]
        noise: f64,
        /// Passes over the training pairs.
        #[arg(long, default_value_t = 30)]
        epochs: u32,
        /// Output file.
        #[arg(long, default_value = "reward-model.mrlp")]
        out: PathBuf,
    },
    /// Evaluate a policy file with deterministic actions.
    #[command(override_usage = "microrl eval <POLICY> [OPTIONS]")]
    Eval {
        #[command(flatten)]
        policy: PolicyFile,
        /// Task (default: the one the policy file records, else the one its
        /// architecture acts in); a policy recorded for another task is
        /// refused unless --any-env.
        #[arg(long, value_enum)]
        env: Option<EnvName>,
        /// Episodes (1 to 10000).
        #[arg(long, default_value_t = 100)]
        episodes: u32,
        /// Seed of the episodes' initial states.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[command(flatten)]
        plant: PlantArgs,
        /// Run a policy whose file records another task than --env all the
        /// same (its observation and action sizes must still fit).
        #[arg(long)]
        any_env: bool,
    },
    /// Train several seeds in parallel and fail unless enough reach the threshold.
    Validate {
        #[command(flatten)]
        args: TrainArgs,
        /// Number of seeds (0..N; at most 1024).
        #[arg(long, default_value_t = 10,
              value_parser = clap::value_parser!(u64).range(..=microrl_harness::limits::MAX_SEEDS))]
        seeds: u64,
        /// Evaluation return a seed must reach (default: the task's solved threshold).
        #[arg(long, allow_hyphen_values = true)]
        threshold: Option<f32>,
        /// Seeds that must pass (default: all).
        #[arg(long)]
        min_pass: Option<u64>,
        /// Parallel jobs (default: all cores; at most one per seed).
        #[arg(long)]
        jobs: Option<usize>,
        /// Also write each seed's outputs under this directory.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check a trained policy file and write it for the firmware (.mrlp/.bin raw, .rs as a
    /// static array), or its actor as a PyTorch state_dict (--format safetensors).
    #[command(override_usage = "microrl export <POLICY> --out <OUT> [OPTIONS]")]
    Export {
        #[command(flatten)]
        policy: PolicyFile,
        /// Task (default: the one the policy file records, else the one its
        /// architecture acts in); a policy recorded for another task is
        /// refused unless --any-env.
        #[arg(long, value_enum)]
        env: Option<EnvName>,
        /// Output file.
        #[arg(long)]
        out: PathBuf,
        /// `mrlp`: microrl's binary format for the firmware; `safetensors`: the
        /// actor under Stable-Baselines3's (or CleanRL's, `--to`) tensor names.
        #[arg(long, value_enum, default_value = "mrlp")]
        format: ExportFormat,
        /// Tensor names of the safetensors file (default: sb3).
        #[arg(long, value_enum)]
        to: Option<Layout>,
        /// With `--format safetensors`, for a SAC/TD3 policy (`*-squashed`):
        /// write the tensor names of this algorithm's actor (SB3's
        /// `actor.latent_pi`/`actor.mu` or `actor.mu.N`; CleanRL's
        /// `fc_mean` or `fc_mu`). Required for those policies: the file does
        /// not say which algorithm trained it.
        #[arg(long, value_enum)]
        algo: Option<microrl_harness::interop::OffPolicyAlgo>,
        /// With `--format safetensors`: write the observation statistics here
        /// (VecNormalize's fields as JSON); required if the policy has any.
        #[arg(long, value_name = "STATS.json")]
        vecnormalize: Option<PathBuf>,
        /// Export a policy whose file records another task than --env all
        /// the same.
        #[arg(long)]
        any_env: bool,
    },
    /// Import the actor of a Stable-Baselines3 or CleanRL PPO policy (a safetensors
    /// state_dict, tanh or ReLU MLP) and its VecNormalize statistics, or of a SAC/TD3 agent
    /// (ReLU; 64-64, 256-256 or 400-300), as a microrl policy file.
    Import {
        /// The policy's `state_dict`, saved with `safetensors.torch.save_file`.
        file: PathBuf,
        /// The library that trained it (its tensor names).
        #[arg(long, value_enum)]
        from: Layout,
        /// VecNormalize's observation statistics as JSON:
        /// {"obs_rms": {"mean": [...], "var": [...], "count": n}, "clip_obs": 10.0, "epsilon": 1e-8}.
        #[arg(long, value_name = "STATS.json")]
        vecnormalize: Option<PathBuf>,
        /// Task the policy acts in.
        #[arg(long, value_enum)]
        env: EnvName,
        /// The hidden layers' activation (SB3's `activation_fn`). Default:
        /// the file's `activation_fn` metadata, else for PPO tanh (said on
        /// standard error); an SB3 SAC/TD3 file without metadata needs
        /// `--activation relu` (CleanRL's are ReLU); a file that states
        /// another activation is refused.
        #[arg(long, value_enum)]
        activation: Option<microrl_harness::arch::Activation>,
        /// Output policy file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Overlay the learning curves of several runs in one PNG.
    ///
    /// Each RUN_DIR is a directory written by `train --out` (its curve.csv
    /// and summary.json are read); the curves are labelled by algorithm,
    /// environment and seed, with the threshold. The runs must share one
    /// environment and threshold.
    Plot {
        /// Run directories.
        #[arg(required = true, value_name = "RUN_DIR")]
        runs: Vec<PathBuf>,
        /// Output file.
        #[arg(long, default_value = "plot.png")]
        out: PathBuf,
    },
    /// Search hyper-parameters for a plant: successive halving over a documented space
    /// (ppo, ac; sac and td3 on continuous plants), several seeds per candidate on every
    /// core, ranked on tuning start states, reported on held-out ones beside the defaults.
    ///
    /// With --out DIR: tuned.toml (for `microrl train --config`), tune.json, tune.png.
    Tune {
        /// Task.
        #[arg(long, value_enum, default_value = "cartpole")]
        env: EnvName,
        /// Algorithm.
        #[arg(long, value_enum, default_value = "ppo")]
        algo: Algo,
        #[command(flatten)]
        plant: PlantArgs,
        /// Candidates drawn for the first rung (1 to 1024).
        #[arg(long, default_value_t = 27)]
        candidates: usize,
        /// Keep the best 1/ETA at each rung and multiply the budget by ETA
        /// (2 to 1024).
        #[arg(long, default_value_t = 3)]
        eta: usize,
        /// Environment steps of the first rung (1 to --max-steps).
        #[arg(long, default_value_t = 10_000)]
        min_steps: u64,
        /// Largest budget of a rung (at most 1000000000).
        #[arg(long, default_value_t = 90_000)]
        max_steps: u64,
        /// Training seeds per candidate.
        #[arg(long, default_value_t = 3,
              value_parser = clap::value_parser!(u64).range(1..=microrl_harness::limits::MAX_SEEDS))]
        seeds: u64,
        /// Worker threads (default: every core).
        #[arg(long)]
        jobs: Option<usize>,
        /// Seed of the candidates' draw.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Write tuned.toml, tune.json and tune.png here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Train every plant of the suite with the defaults and score it against its
    /// classical baseline (PID, LQR, energy swing-up…) on the same held-out start
    /// states; exits non-zero unless every row beats its baseline.
    ///
    /// A row is --seeds runs of `microrl train --env E --algo A --seed S`; its
    /// `learned` is the worst seed's held-out mean return over 200 episodes.
    Suite {
        /// Plants (repeatable; default: acrobot, mountaincar-continuous,
        /// cartpole-swingup, servo, quadrotor-2d).
        #[arg(long, value_enum)]
        env: Vec<EnvName>,
        /// Algorithms (repeatable; default: ppo, the best measured on every
        /// plant; ac everywhere, sac and td3 on the continuous plants).
        #[arg(long, value_enum)]
        algo: Vec<Algo>,
        /// Training seeds per row.
        #[arg(long, default_value_t = 3,
              value_parser = clap::value_parser!(u64).range(1..=microrl_harness::limits::MAX_SEEDS))]
        seeds: u64,
        /// Environment steps per run (default: each row's `microrl train`
        /// budget; 1 to 1000000000).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=microrl_harness::limits::MAX_STEPS))]
        steps: Option<u64>,
        /// Hyper-parameters (TOML, as `train --config`) merged over every row's
        /// defaults; a key the row's algorithm does not have is an error.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Score each run's last policy, not the one that did best on the
        /// keep-best evaluations during the run.
        #[arg(long, conflicts_with = "keep_best")]
        last: bool,
        /// Start states of each keep-best evaluation (from the run's tuning
        /// stream, after every evaluation the trainer runs; 1 to 10000).
        #[arg(long, default_value_t = microrl_harness::suite::KEEP_BEST_EPISODES,
              value_parser = clap::value_parser!(u32).range(1..=i64::from(microrl_harness::limits::MAX_EPISODES)))]
        keep_best: u32,
        /// Worker threads (default: every core).
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// Train every plant of a family split with each algorithm's preset and with
    /// SB3's defaults reproduced in microrl, against each plant's classical
    /// baseline (a tuned PID or LQI) on the same held-out start states.
    ///
    /// A row is --seeds runs of `microrl train --env family --plant seed=S
    /// --algo A --steps N --no-early-stop` and as many of the reference; both
    /// report the worst seed.
    Bench {
        /// The split: dev (tune on it), validation (confirm), test (report only).
        #[arg(long, value_enum, default_value = "dev")]
        split: SplitName,
        /// Algorithms (repeatable; default ppo; ac everywhere, sac and td3 on
        /// the continuous plants).
        #[arg(long, value_enum)]
        algo: Vec<Algo>,
        /// Training seeds per configuration.
        #[arg(long, default_value_t = 3,
              value_parser = clap::value_parser!(u64).range(1..=microrl_harness::limits::MAX_SEEDS))]
        seeds: u64,
        /// Environment steps per run (default: 300000; 50000 for sac and td3;
        /// at most 1000000000).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=microrl_harness::limits::MAX_STEPS))]
        steps: Option<u64>,
        /// Only the split's first N plants (a quick run).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        plants: Option<u64>,
        /// Hyper-parameters (TOML, as `train --config`) merged over every preset
        /// (a candidate put to the split); the reference keeps SB3's defaults.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Take the reference rows from an earlier bench.json of this build (the
        /// same plants, budget and seeds) instead of running them again.
        #[arg(long, value_name = "BENCH_JSON")]
        reference_from: Option<PathBuf>,
        /// Multiply every plant's per-step cost by this (a preset's ratios
        /// should not move with it).
        #[arg(long, default_value_t = 1.0, value_parser = scale_factor)]
        reward_scale: f64,
        /// Multiply every plant's observation units by this.
        #[arg(long, default_value_t = 1.0, value_parser = scale_factor)]
        obs_scale: f64,
        /// Score each run's best evaluated policy on N keep-best start
        /// states (the step-0 policy included), as `microrl train` keeps
        /// it; the reference rows too. At most 10000.
        #[arg(long, value_name = "N", default_value_t = microrl::train::KEEP_BEST_EPISODES,
              value_parser = clap::value_parser!(u32).range(0..=10_000))]
        keep_best: u32,
        /// Score each run's last policy (same as --keep-best 0).
        #[arg(long, conflicts_with = "keep_best")]
        last: bool,
        /// Worker threads (default: every core).
        #[arg(long)]
        jobs: Option<usize>,
        /// Write bench.json and bench.png here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Parameter counts and memory (inference, training state, blob) of each policy architecture.
    Info,
    /// Write a freshly initialised policy (orthogonal, SB3 gains, empty normaliser) in the binary format.
    Init {
        /// Policy architecture.
        #[arg(long, value_enum, default_value = "cartpole")]
        arch: Arch,
        /// RNG seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Output file (default: <arch>.mrlp).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Verify a policy file (magic, version, CRC-32), list its tensors and name its architecture.
    #[command(override_usage = "microrl inspect <POLICY> [OPTIONS]")]
    Inspect {
        #[command(flatten)]
        policy: PolicyFile,
    },
    /// The deployed policy's command at one observation, or at every
    /// observation of a file (--obs-file).
    #[command(
        override_usage = "microrl act <POLICY> --obs <OBS> [OPTIONS]\n       microrl act <POLICY> --obs-file <FILE> [--out <OUT>] [OPTIONS]"
    )]
    Act {
        /// Policy architecture (default: recognised from the file).
        #[arg(long, value_enum)]
        arch: Option<Arch>,
        #[command(flatten)]
        policy: PolicyFile,
        /// Comma-separated observation, e.g. 0.01,0.0,-0.02,0.03.
        #[arg(long, required_unless_present = "obs_file", value_delimiter = ',', allow_hyphen_values = true, value_parser = observation)]
        obs: Vec<f32>,
        /// Observations, one a row: a CSV of numbers (a header row is
        /// skipped) or a NumPy .npy float32/float64 array [N, OBS].
        #[arg(long, value_name = "FILE", conflicts_with = "obs")]
        obs_file: Option<PathBuf>,
        /// With --obs-file: write the actions here (CSV, or .npy: int64 [N]
        /// or float32 [N, ACT]) instead of to standard output.
        #[arg(long, requires = "obs_file")]
        out: Option<PathBuf>,
    },
}

/// The file format of `microrl export`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ExportFormat {
    /// microrl's binary policy format (`.rs`: as a Rust `static` byte array).
    Mrlp,
    /// The actor as a PyTorch `state_dict` in safetensors.
    Safetensors,
}

/// A family split's name (`microrl bench --split`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SplitName {
    /// Tune on it freely.
    Dev,
    /// Confirm a choice made on dev.
    Validation,
    /// Report a choice already made; never tune on it.
    Test,
}

impl SplitName {
    pub(crate) fn split(self) -> microrl::env::family::Split {
        use microrl::env::family::Split;
        match self {
            SplitName::Dev => Split::Dev,
            SplitName::Validation => Split::Validation,
            SplitName::Test => Split::Test,
        }
    }
}

/// A factor in [1e-6, 1e6] (`bench --reward-scale`, `--obs-scale`).
fn scale_factor(text: &str) -> Result<f64, String> {
    let x: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number"))?;
    if (1e-6..=1e6).contains(&x) {
        Ok(x)
    } else {
        Err(format!("{x} is outside [1e-6, 1e6]"))
    }
}
