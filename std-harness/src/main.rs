//! `microrl`: the desktop command-line tool.

mod cli;

use std::path::PathBuf;

use clap::Parser;
use cli::{Cli, Command, ExportFormat, TrainCommand};
use microrl_harness::commands;
use microrl_harness::interop::{self, Layout};
use microrl_harness::paths::{self, Role};
use microrl_harness::train::{CURVE_CSV_FILE, SUMMARY_FILE, TrainOptions};

/// Every failure is one line on standard error and a non-zero exit status:
/// usage errors (exit 2), command errors (exit 1) and — a bug — panics (101).
fn main() {
    std::panic::set_hook(Box::new(|info| {
        eprintln!(
            "error: internal error (a bug in microrl, please report it): {}",
            one_line(&info.to_string())
        );
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => {
            eprintln!("{}", clap_one_line(&e.render().to_string()));
            std::process::exit(2);
        }
    };
    match run(cli) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("error: {}", one_line(&format!("{e:#}")));
            std::process::exit(1);
        }
    }
}

/// `text` with its lines joined by spaces (a TOML or OS message can span lines).
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// clap's usage error on one line: the message and its tips, without the
/// usage block and the "try --help" footer.
fn clap_one_line(rendered: &str) -> String {
    let mut out = String::new();
    for line in rendered.lines().map(str::trim) {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        if line.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str(if out.ends_with(':') { " " } else { "; " });
        }
        out.push_str(line);
    }
    out.push_str(" (see --help)");
    out
}

/// Prints a `note:` line on standard error, once the command's options are checked.
fn say(note: Option<String>) {
    if let Some(note) = note {
        eprintln!("note: {note}");
    }
}

/// Prints a line a command returned for standard error (its own
/// `warning:` or `note:` prefix included).
fn tell(line: Option<String>) {
    if let Some(line) = line {
        eprintln!("{line}");
    }
}

/// Runs the command; `Ok(false)`: it ran but its verdict is a failure
/// (`validate` below `--min-pass`).
fn run(cli: Cli) -> anyhow::Result<bool> {
    let mut ok = true;
    // A line for standard error once the report is out (a policy file's
    // task check): a failed command prints only its one `error:` line.
    let mut said = None;
    let report = match cli.command.unwrap_or(Command::Info) {
        Command::Info => commands::info(),
        Command::Bench {
            split,
            algo,
            seeds,
            steps,
            plants,
            config,
            reference_from,
            reward_scale,
            obs_scale,
            keep_best,
            last,
            jobs,
            out,
        } => microrl_harness::bench::run(&microrl_harness::bench::BenchArgs {
            split: split.split(),
            algos: algo,
            seeds,
            steps,
            plants: plants.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            threads: jobs.unwrap_or(0),
            progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            out,
            overrides: match &config {
                Some(path) => microrl_harness::train::Overrides::from_file(path)?,
                None => microrl_harness::train::Overrides::default(),
            },
            reference_from,
            reward_scale,
            obs_scale,
            keep_best: if last { 0 } else { keep_best },
        })?,
        Command::Suite {
            env,
            algo,
            seeds,
            steps,
            config,
            last,
            keep_best,
            jobs,
        } => {
            let overrides = match &config {
                Some(path) => microrl_harness::train::Overrides::from_file(path)?,
                None => microrl_harness::train::Overrides::default(),
            };
            let (report, pass) = microrl_harness::suite::run(&microrl_harness::suite::SuiteArgs {
                envs: if env.is_empty() {
                    microrl_harness::suite::plants_for(&algo)
                } else {
                    env
                },
                algos: algo,
                seeds,
                steps,
                overrides,
                keep_best: if last { 0 } else { keep_best },
                threads: jobs.unwrap_or(0),
                progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            })?;
            ok = pass;
            report
        }
        Command::Tune {
            env,
            algo,
            plant,
            candidates,
            eta,
            min_steps,
            max_steps,
            seeds,
            jobs,
            seed,
            out,
        } => microrl_harness::tune::command::run(&microrl_harness::tune::command::TuneArgs {
            env,
            algo,
            plant: plant.table()?,
            options: microrl_harness::tune::TuneOptions {
                candidates,
                eta,
                min_steps,
                max_steps,
                seeds,
                threads: jobs.unwrap_or(0),
                seed,
                ..microrl_harness::tune::TuneOptions::DEFAULT
            },
            out,
            progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        })?,
        Command::Plot { runs, out } => {
            let read: Vec<PathBuf> = runs
                .iter()
                .flat_map(|run| [run.join(SUMMARY_FILE), run.join(CURVE_CSV_FILE)])
                .collect();
            let inputs: Vec<_> = read
                .iter()
                .map(|p| ("RUN_DIR", Some(p.as_path())))
                .collect();
            paths::check_distinct(&[("--out", &out, Role::File)], &inputs)?;
            commands::plot(&runs, &out)?
        }
        Command::Train {
            resume: Some(dir), ..
        } => commands::resume(&dir)?,
        Command::Train {
            args, seed, out, ..
        } => {
            let (mut opts, note) = args.options(TrainCommand::Train { seed }, None, true)?;
            opts.out = Some(out.unwrap_or_else(|| {
                PathBuf::from(format!(
                    "runs/{}-{}-seed{}",
                    opts.env.name(),
                    opts.algo.name(),
                    opts.seed
                ))
            }));
            opts.check_paths(args.config.as_deref())?;
            opts.check()?;
            say(note);
            commands::train(&opts)?
        }
        Command::Eval {
            policy,
            env,
            episodes,
            seed,
            plant,
            any_env,
        } => {
            let (policy, plant) = (policy.path(), plant.table()?);
            say(commands::backend_note(&policy));
            let report;
            (report, said) = commands::eval(env, &policy, episodes, seed, &plant, any_env)?;
            report
        }
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
            let (opts, note) = args.options(TrainCommand::Validate { threshold }, out, false)?;
            // Each seed's run directory is replaced whole, not --out itself.
            if let Some(dir) = &opts.out {
                for seed in 0..seeds {
                    let out = Some(commands::seed_dir(dir, seed));
                    TrainOptions {
                        out,
                        ..opts.clone()
                    }
                    .check_paths(args.config.as_deref())?;
                }
            }
            say(note);
            let (report, pass) = commands::validate(&opts, seeds, min_pass.unwrap_or(seeds), jobs)?;
            ok = pass;
            report
        }
        Command::Export {
            policy,
            env,
            out,
            format,
            to,
            algo,
            vecnormalize,
            any_env,
        } => {
            let policy = policy.path();
            let mut outputs = vec![("--out", out.as_path(), Role::File)];
            if let Some(stats) = &vecnormalize {
                outputs.push(("--vecnormalize", stats.as_path(), Role::File));
            }
            paths::check_distinct(&outputs, &[("POLICY", Some(&policy))])?;
            match format {
                ExportFormat::Mrlp => {
                    if vecnormalize.is_some() || to.is_some() || algo.is_some() {
                        anyhow::bail!("--to, --algo and --vecnormalize need --format safetensors");
                    }
                    say(commands::backend_note(&policy));
                    let report;
                    (report, said) = commands::export(env, &policy, &out, any_env)?;
                    report
                }
                ExportFormat::Safetensors => {
                    let to = to.unwrap_or(Layout::Sb3);
                    let report;
                    (report, said) = interop::export_command(
                        to,
                        algo,
                        env,
                        &policy,
                        &out,
                        vecnormalize.as_deref(),
                        any_env,
                    )?;
                    report
                }
            }
        }
        Command::Import {
            file,
            from,
            vecnormalize,
            env,
            activation,
            out,
        } => {
            paths::check_distinct(
                &[("--out", &out, Role::File)],
                &[
                    ("FILE", Some(&file)),
                    ("--vecnormalize", vecnormalize.as_deref()),
                ],
            )?;
            interop::import_command(from, &file, vecnormalize.as_deref(), env, activation, &out)?
        }
        Command::Init { arch, seed, out } => {
            let out = out.unwrap_or_else(|| commands::default_policy_path(arch));
            commands::init(arch, seed, &out)?
        }
        Command::RewardModel {
            seed,
            segments,
            pairs,
            noise,
            epochs,
            out,
        } => microrl_harness::preference::reward_model(
            &microrl_harness::preference::PreferenceOptions {
                segments,
                pairs,
                noise,
                epochs,
                ..microrl_harness::preference::PreferenceOptions::new(seed, out)
            },
        )?,
        Command::Inspect { policy } => commands::inspect(&policy.path())?,
        Command::Act {
            arch,
            policy,
            obs_file: Some(file),
            out,
            ..
        } => {
            let policy = policy.path();
            if let Some(out) = &out {
                paths::check_distinct(
                    &[("--out", out, Role::File)],
                    &[("POLICY", Some(&policy)), ("--obs-file", Some(&file))],
                )?;
            }
            say(commands::backend_note(&policy));
            microrl_harness::batch::act_file(arch, &policy, &file, out.as_deref())?
        }
        Command::Act {
            arch, policy, obs, ..
        } => {
            let policy = policy.path();
            say(commands::backend_note(&policy));
            commands::act(arch, &policy, &obs)?
        }
    };
    print(&report, cli.json)?;
    tell(said);
    Ok(ok)
}

/// Writes the report's lines, and with `--json` its JSON object, to
/// standard output. A failed write (a full disk, a closed pipe) is an
/// error of the command — one `error:` line and exit 1 — not a panic.
fn print(report: &commands::Report, json: bool) -> anyhow::Result<()> {
    use std::io::Write;
    let json = json
        .then(|| serde_json::to_string(&report.json))
        .transpose()?;
    let mut out = std::io::stdout().lock();
    report
        .lines
        .iter()
        .chain(&json)
        .try_for_each(|line| writeln!(out, "{line}"))
        .and_then(|()| out.flush())
        .map_err(|e| anyhow::anyhow!("writing standard output: {e}"))
}
