//! `microrl`: the desktop command-line tool.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use microrl_harness::train::{Algo, EnvName, Overrides, TrainOptions};
use microrl_harness::{Arch, commands};

#[derive(Parser, Debug)]
#[command(
    name = "microrl",
    version,
    about = "Reinforcement learning that trains on microcontrollers: desktop harness"
)]
struct Cli {
    /// Print exactly one JSON object as the last line of standard output.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

/// What to train and how long.
#[derive(Args, Debug, Clone)]
struct TrainArgs {
    /// Task.
    #[arg(long, value_enum, default_value = "cartpole")]
    env: EnvName,
    /// Algorithm.
    #[arg(long, value_enum, default_value = "ppo")]
    algo: Algo,
    /// Environment-step budget (default: 100000 for PPO on CartPole, 200000
    /// for PPO on cartpole-continuous, 300000 for PPO on Pendulum, 500000 otherwise).
    #[arg(long)]
    steps: Option<u64>,
    /// TOML file overriding hyper-parameters (keys: learning_rate, anneal_lr,
    /// clip_range, anneal_clip, gamma, gae_lambda, epochs, minibatches,
    /// normalize_advantages, value_clip, ent_coef, vf_coef, max_grad_norm,
    /// target_kl, normalize_obs, normalize_reward, actor_lr, critic_lr).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Episodes of the deterministic evaluation that decides "solved".
    #[arg(long, default_value_t = 100)]
    eval_episodes: u32,
    /// Keep training for the whole budget after the task is solved.
    #[arg(long)]
    no_early_stop: bool,
    /// CartPole: train the MCU-sized 4-32-32 actor and critic (the firmware's
    /// `infer` size) instead of 64-64.
    #[arg(long)]
    small: bool,
}

impl TrainArgs {
    fn options(
        &self,
        seed: u64,
        out: Option<PathBuf>,
        progress: bool,
    ) -> anyhow::Result<TrainOptions> {
        let overrides = match &self.config {
            Some(path) => Overrides::from_file(path)?,
            None => Overrides::default(),
        };
        Ok(TrainOptions {
            env: self.env,
            algo: self.algo,
            seed,
            steps: self.steps.unwrap_or(match (self.algo, self.env) {
                (Algo::Ppo, EnvName::Cartpole) => 100_000,
                (Algo::Ppo, EnvName::CartpoleContinuous) => 200_000,
                (Algo::Ppo, EnvName::Pendulum) => 300_000,
                _ => 500_000,
            }),
            overrides,
            threshold: self.env.threshold(),
            eval_episodes: self.eval_episodes,
            early_stop: !self.no_early_stop,
            out,
            progress,
            small: self.small,
        })
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Train a policy; writes policy.mrlp, curve.csv, curve.png and summary.json into --out.
    Train {
        #[command(flatten)]
        args: TrainArgs,
        /// RNG seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Output directory (default: runs/<env>-<algo>-seed<N>).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Evaluate a trained policy file with deterministic actions.
    Eval {
        /// The policy file written by `train`.
        #[arg(long)]
        policy: PathBuf,
        /// Task the policy was trained on.
        #[arg(long, value_enum, default_value = "cartpole")]
        env: EnvName,
        /// Episodes.
        #[arg(long, default_value_t = 100)]
        episodes: u32,
        /// Seed of the episodes' initial states.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
    /// Train several seeds in parallel and fail unless enough reach the threshold.
    Validate {
        #[command(flatten)]
        args: TrainArgs,
        /// Number of seeds (0..N).
        #[arg(long, default_value_t = 10)]
        seeds: u64,
        /// Evaluation return a seed must reach (default: the task's solved threshold).
        #[arg(long, allow_hyphen_values = true)]
        threshold: Option<f32>,
        /// Seeds that must pass (default: all).
        #[arg(long)]
        min_pass: Option<u64>,
        /// Parallel jobs (default: all cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Also write each seed's outputs under this directory.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check a trained policy file and write it for the firmware (.mrlp/.bin raw, .rs as a static array).
    Export {
        /// The policy file written by `train`.
        #[arg(long)]
        policy: PathBuf,
        /// Task the policy was trained on.
        #[arg(long, value_enum, default_value = "cartpole")]
        env: EnvName,
        /// Output file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Parameter counts and memory (inference, training state, blob) of each policy architecture.
    Info,
    /// Write a freshly initialised policy (orthogonal, SB3 gains) in the binary format.
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
    /// Verify a policy blob (magic, version, CRC-32) and list its tensors.
    Inspect {
        /// The blob.
        policy: PathBuf,
    },
    /// Evaluate a policy blob's deterministic action at one observation.
    Act {
        /// Policy architecture.
        #[arg(long, value_enum, default_value = "cartpole")]
        arch: Arch,
        /// The blob.
        #[arg(long)]
        policy: PathBuf,
        /// Comma-separated observation, e.g. 0.01,0.0,-0.02,0.03.
        #[arg(long, allow_hyphen_values = true)]
        obs: String,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let mut ok = true;
    let report = match cli.command.unwrap_or(Command::Info) {
        Command::Info => commands::info(),
        Command::Train { args, seed, out } => {
            let out = out.unwrap_or_else(|| {
                PathBuf::from(format!(
                    "runs/{}-{}-seed{seed}",
                    args.env.name(),
                    args.algo.name()
                ))
            });
            commands::train(&args.options(seed, Some(out), true)?)?
        }
        Command::Eval {
            policy,
            env,
            episodes,
            seed,
        } => commands::eval(env, &policy, episodes, seed)?,
        Command::Validate {
            args,
            seeds,
            threshold,
            min_pass,
            jobs,
            out,
        } => {
            let jobs = jobs.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
            });
            let threshold = threshold.unwrap_or(args.env.threshold());
            let opts = TrainOptions {
                threshold,
                ..args.options(0, out, false)?
            };
            let (report, pass) = commands::validate(&opts, seeds, min_pass.unwrap_or(seeds), jobs)?;
            ok = pass;
            report
        }
        Command::Export { policy, env, out } => commands::export(env, &policy, &out)?,
        Command::Init { arch, seed, out } => {
            let out = out.unwrap_or_else(|| commands::default_policy_path(arch));
            commands::init(arch, seed, &out)?
        }
        Command::Inspect { policy } => commands::inspect(&policy)?,
        Command::Act { arch, policy, obs } => {
            commands::act(arch, &policy, &commands::parse_obs(&obs)?)?
        }
    };
    for line in &report.lines {
        println!("{line}");
    }
    if cli.json {
        println!("{}", serde_json::to_string(&report.json)?);
    }
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
