//! `microrl`: the desktop command-line tool.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
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

#[derive(Subcommand, Debug)]
enum Command {
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
    let report = match cli.command.unwrap_or(Command::Info) {
        Command::Info => commands::info(),
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
    Ok(())
}
