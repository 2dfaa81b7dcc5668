//! Replaying a run from its `summary.json`: the options of `microrl train`
//! that shape a run ([`RunOptions`]), read back from the summary
//! ([`RunOptions::from_summary`]), and how the command line's options
//! combine with them ([`RunOptions::replay`]): the command line's where
//! given, else the summary's, and one `note:` saying which were taken and
//! which replaced.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::{Algo, AnchorOptions, EnvName, default_steps, json_config};

/// The options of `microrl train` that shape a run — every one but where
/// it writes (`--out`), its progress bar and its checkpoints
/// (`--checkpoint-every`, which changes no bit of the run) — each `None`
/// where not given: on the command line, or in a `summary.json` written
/// before microrl recorded it. The hyper-parameters (`--config`) are the
/// summary's `config`, read by [`Overrides::from_file`](super::Overrides::from_file).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOptions {
    /// `--env`.
    pub env: Option<EnvName>,
    /// `--algo`.
    pub algo: Option<Algo>,
    /// `--plant` (empty: Gymnasium's).
    pub plant: Option<toml::Table>,
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--steps`.
    pub steps: Option<u64>,
    /// `--small`.
    pub small: Option<bool>,
    /// `--lag`.
    pub lag: Option<u8>,
    /// `--eval-episodes`.
    pub eval_episodes: Option<u32>,
    /// `--select-margin`.
    pub select_margin: Option<f32>,
    /// Not `--no-early-stop`.
    pub early_stop: Option<bool>,
    /// `--final-eval-only`.
    pub final_eval_only: Option<bool>,
    /// `--keep-best` (0: `--last`).
    pub keep_best: Option<u32>,
    /// `validate --threshold` (`f32::MAX`: a plant without one).
    pub threshold: Option<f32>,
    /// `--kl-ref`, `--kl-beta`, `--kl-target` (`Some(None)`: no fine-tune).
    pub anchor: Option<Option<AnchorOptions>>,
    /// `--reward-weights`.
    pub reward_weights: Option<Option<[f32; 2]>>,
    /// `--value-weights`.
    pub value_weights: Option<Option<[f32; 2]>>,
    /// `--reward-model`.
    pub reward_model: Option<Option<PathBuf>>,
}

/// [`RunOptions`] resolved: every option has its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Replayed {
    /// Task.
    pub env: EnvName,
    /// Algorithm.
    pub algo: Algo,
    /// Plant parameters that differ from Gymnasium's.
    pub plant: toml::Table,
    /// Seed.
    pub seed: u64,
    /// The budget (`None`: the configuration's `total_steps`, else the
    /// registry's; see [`Overrides::budget`](super::Overrides::budget)).
    pub steps: Option<u64>,
    /// `--small`.
    pub small: bool,
    /// `--lag`.
    pub lag: u8,
    /// `--eval-episodes`.
    pub eval_episodes: u32,
    /// `--select-margin`.
    pub select_margin: f32,
    /// Not `--no-early-stop`.
    pub early_stop: bool,
    /// `--final-eval-only`.
    pub final_eval_only: bool,
    /// `--keep-best`.
    pub keep_best: u32,
    /// The solved threshold (`None`: the task's).
    pub threshold: Option<f32>,
    /// The fine-tune.
    pub anchor: Option<AnchorOptions>,
    /// `--reward-weights`.
    pub reward_weights: Option<[f32; 2]>,
    /// `--value-weights`.
    pub value_weights: Option<[f32; 2]>,
    /// `--reward-model`.
    pub reward_model: Option<PathBuf>,
    /// One line, without its `note: ` prefix, saying what came from the
    /// summary and what the command line replaced (`None`: nothing).
    pub note: Option<String>,
}

/// The `note:` of a replay: what was taken from the summary, what the
/// command line replaced.
#[derive(Default)]
struct Notes {
    taken: Vec<String>,
    replaced: Vec<String>,
}

impl Notes {
    /// The command line's value where given, else the summary's, else
    /// `default`; a value taken from the summary is listed when it is not
    /// the default (or `always`), one the command line replaced always.
    fn pick<T: PartialEq + Clone>(
        &mut self,
        option: &str,
        cli: Option<T>,
        saved: Option<T>,
        default: T,
        always: bool,
        show: impl Fn(&T) -> String,
    ) -> T {
        match (cli, saved) {
            (Some(c), Some(s)) => {
                if c != s {
                    self.replaced.push(format!(
                        "--{option} {} replaces the summary's {}",
                        show(&c),
                        show(&s)
                    ));
                }
                c
            }
            (Some(c), None) => c,
            (None, Some(s)) => {
                if always || s != default {
                    self.taken.push(format!("{option} {}", show(&s)));
                }
                s
            }
            (None, None) => default,
        }
    }

    fn line(self, file: &Path) -> Option<String> {
        let mut parts = Vec::new();
        if !self.taken.is_empty() {
            parts.push(format!(
                "{} taken from {}",
                self.taken.join(", "),
                file.display()
            ));
        }
        if !self.replaced.is_empty() {
            parts.push(format!("{} ({})", self.replaced.join(", "), file.display()));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// `KEY=VALUE,…` of a plant table (`default` when empty).
pub fn show_plant(plant: &toml::Table) -> String {
    if plant.is_empty() {
        return "default".into();
    }
    let pairs: Vec<String> = plant.iter().map(|(k, v)| format!("{k}={v}")).collect();
    pairs.join(",")
}

fn show_pair(pair: &Option<[f32; 2]>) -> String {
    pair.map_or("none".into(), |[a, b]| format!("{a},{b}"))
}

fn show<T: std::fmt::Display>(x: &T) -> String {
    x.to_string()
}

fn show_flag(on: &bool) -> String {
    if *on { "on" } else { "off" }.into()
}

impl RunOptions {
    /// The options `path` records, if it is a `summary.json` (`None` for a
    /// TOML configuration). A summary without `select_margin`,
    /// `early_stop` or `final_eval_only` (written before they were
    /// recorded) has them in its `run` (the loop's configuration).
    ///
    /// # Errors
    /// Unreadable or malformed, or a value microrl does not know, named.
    pub fn from_summary(path: &Path) -> anyhow::Result<Option<Self>> {
        if path.extension().is_none_or(|e| e != "json") {
            return Ok(None);
        }
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let summary: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let field = |key: &str| summary.get(key);
        let run = |key: &str| summary.get("run").and_then(|run| run.get(key));
        fn read<T: serde::de::DeserializeOwned>(
            path: &Path,
            key: &str,
            value: Option<&serde_json::Value>,
        ) -> anyhow::Result<Option<T>> {
            value
                .map(|v| {
                    serde_json::from_value(v.clone()).with_context(|| {
                        format!("{}: `{key}` = {v} is not one microrl knows", path.display())
                    })
                })
                .transpose()
        }
        let plant = match field("plant") {
            None | Some(serde_json::Value::Null) => None,
            Some(plant) => Some(
                json_config(plant)
                    .with_context(|| format!("{}: `plant` is not a table", path.display()))?,
            ),
        };
        let weights = field("weights");
        let weight = |key: &str| -> anyhow::Result<Option<Option<[f32; 2]>>> {
            read(
                path,
                key,
                weights.map(|w| w.get(key).unwrap_or(&serde_json::Value::Null)),
            )
        };
        let final_eval_only = match field("final_eval_only") {
            Some(v) => read(path, "final_eval_only", Some(v))?,
            None => read::<u32>(path, "run.quick_episodes", run("quick_episodes"))?.map(|n| n == 0),
        };
        Ok(Some(Self {
            env: read(path, "env", field("env"))?,
            algo: read(path, "algo", field("algo"))?,
            plant,
            seed: read(path, "seed", field("seed"))?,
            steps: read(path, "steps", field("steps"))?,
            small: read(path, "small", field("small"))?,
            lag: read(path, "lag", field("lag"))?,
            eval_episodes: read(path, "eval_episodes", field("eval_episodes"))?,
            select_margin: read(
                path,
                "select_margin",
                field("select_margin").or(run("select_margin")),
            )?,
            early_stop: read(
                path,
                "early_stop",
                field("early_stop").or(run("early_stop")),
            )?,
            final_eval_only,
            keep_best: read(path, "keep_best", field("keep_best"))?,
            // `null`: a plant without a solved threshold.
            threshold: match field("threshold") {
                Some(serde_json::Value::Null) => Some(f32::MAX),
                v => read(path, "threshold", v)?,
            },
            anchor: read(path, "anchor", field("anchor"))?,
            reward_weights: weight("reward")?,
            value_weights: weight("value")?,
            reward_model: read(path, "reward_model", field("reward_model"))?,
        }))
    }

    /// The run these options (the command line's) replay from `saved` (a
    /// summary's, read from `file`; `None`: no summary): each option the
    /// command line's where given, else the summary's, else its default;
    /// the note lists what was taken from the summary (its `algo` and
    /// `env` always, another option when it is not the default) and every
    /// option of the command line that replaced the summary's value.
    pub fn replay(&self, saved: Option<&RunOptions>, file: &Path) -> Replayed {
        let none = RunOptions::default();
        let (given, s) = (self, saved.unwrap_or(&none));
        let mut n = Notes::default();
        // The command line's `field`, else the summary's, else `default`.
        macro_rules! pick {
            ($field:ident, $option:literal, $default:expr, $show:expr) => {
                n.pick(
                    $option,
                    given.$field.clone(),
                    s.$field.clone(),
                    $default,
                    false,
                    $show,
                )
            };
        }
        let algo = n.pick("algo", self.algo, s.algo, Algo::Ppo, true, |a| {
            a.name().into()
        });
        let env = n.pick("env", self.env, s.env, EnvName::Cartpole, true, |e| {
            e.name().into()
        });
        // An empty `--plant` is not given.
        let cli_plant = self.plant.clone().filter(|p| !p.is_empty());
        let plant = n.pick(
            "plant",
            cli_plant,
            s.plant.clone(),
            toml::Table::new(),
            false,
            show_plant,
        );
        let seed = pick!(seed, "seed", 0, show);
        let steps = n.pick(
            "steps",
            self.steps.map(Some),
            s.steps.map(Some),
            None,
            false,
            |x| x.map_or(default_steps(env, algo), |x| x).to_string(),
        );
        let small = pick!(small, "small", false, show_flag);
        let lag = pick!(lag, "lag", 0, show);
        let eval_episodes = pick!(eval_episodes, "eval-episodes", 100, show);
        let select_margin = pick!(
            select_margin,
            "select-margin",
            microrl::train::DEFAULT_SELECT_MARGIN,
            show
        );
        let early_stop = pick!(early_stop, "early-stop", true, show_flag);
        let final_eval_only = pick!(final_eval_only, "final-eval-only", false, show_flag);
        let keep_best = pick!(
            keep_best,
            "keep-best",
            microrl::train::KEEP_BEST_EPISODES,
            show
        );
        // A summary's threshold is listed only when it is not the task's.
        let threshold = n.pick(
            "threshold",
            self.threshold.map(Some),
            s.threshold.filter(|&t| t != env.threshold()).map(Some),
            None,
            false,
            |t| t.map_or("default".into(), |t| t.to_string()),
        );
        let anchor = pick!(anchor, "kl-ref", None, |a| {
            a.as_ref().map_or("none".into(), |a| {
                let target = a
                    .kl_target
                    .map_or(String::new(), |t| format!(", target {t}"));
                format!("{} (β {}{target})", a.reference.display(), a.kl_coef)
            })
        });
        let reward_weights = pick!(reward_weights, "reward-weights", None, show_pair);
        let value_weights = pick!(value_weights, "value-weights", None, show_pair);
        let reward_model = pick!(reward_model, "reward-model", None, |m| {
            m.as_ref()
                .map_or("none".into(), |m| m.display().to_string())
        });
        Replayed {
            env,
            algo,
            plant,
            seed,
            steps,
            small,
            lag,
            eval_episodes,
            select_margin,
            early_stop,
            final_eval_only,
            keep_best,
            threshold,
            anchor,
            reward_weights,
            value_weights,
            reward_model,
            note: n.line(file),
        }
    }
}
