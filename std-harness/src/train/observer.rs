//! The hooks a desktop run observes the core's loop through: progress bar,
//! learning curve, last diagnostics.

use std::ops::ControlFlow;
use std::time::Instant;

use heapless::HistoryBuf;
use microrl::train::{Evaluation, Hooks};

use crate::curve::{CurveRow, LearningCurve};

use super::*;

/// The harness's observers of the core loop: progress bar, learning curve,
/// last diagnostics.
pub(crate) struct Observer {
    pub(crate) start: Instant,
    pub(crate) bar: Option<indicatif::ProgressBar>,
    pub(crate) budget: u64,
    /// The last 100 training returns (the bar's and the curve's mean).
    pub(crate) recent: HistoryBuf<f32, 100>,
    pub(crate) curve: LearningCurve,
    pub(crate) last_update: Option<Diagnostics>,
    pub(crate) last_eval: f32,
    pub(crate) next_row: u64,
}

impl Observer {
    /// The observer's state and the run's options, for a checkpoint beside
    /// `state` (the core's): `progress.json`, sealed ([`seal`]).
    pub(crate) fn save(
        &self,
        opts: &TrainOptions,
        config: &AlgoConfig,
        iterations: u64,
        wall_s: f64,
        state: &[u8],
        best: BestMark,
    ) -> anyhow::Result<String> {
        let bits = |x: Option<f64>| x.map(f64::to_bits);
        let progress = Progress {
            env: opts.env,
            algo: opts.algo,
            seed: opts.seed,
            steps: opts.steps,
            small: opts.small,
            lag: opts.lag,
            threshold: opts.threshold,
            eval_episodes: opts.eval_episodes,
            select_margin: opts.select_margin,
            early_stop: opts.early_stop,
            train_eval: opts.train_eval,
            keep_best: opts.keep_best,
            best,
            checkpoint_every: opts.checkpoint_every,
            plant: opts.plant.clone(),
            anchor: opts.anchor.clone(),
            weights: opts.weights,
            reward_model: opts.reward_model.clone(),
            config: config_json(config)?,
            iterations,
            recent: self.recent.oldest_ordered().map(|r| r.to_bits()).collect(),
            curve: self
                .curve
                .rows()
                .iter()
                .map(|r| {
                    (
                        r.step,
                        r.episodes,
                        r.mean_return.to_bits(),
                        bits(r.eval_mean),
                        bits(r.eval_std),
                        r.wall_s.to_bits(),
                    )
                })
                .collect(),
            last_update: self.last_update.map(|d| {
                [
                    d.policy_loss,
                    d.value_loss,
                    d.entropy,
                    d.approx_kl,
                    d.clip_fraction,
                    d.explained_variance,
                    d.learning_rate,
                    d.kl_coef,
                    d.kl_reference,
                ]
                .map(f32::to_bits)
            }),
            epochs: self.last_update.map(|d| d.epochs),
            last_eval: self.last_eval.to_bits(),
            next_row: self.next_row,
            wall_s,
            state_crc32: state_crc(state),
        };
        seal(&progress)
    }

    /// Back to the state [`save`](Self::save) recorded.
    pub(crate) fn restore(&mut self, p: &Progress) {
        let float = |b: Option<u64>| b.map(f64::from_bits);
        self.recent = HistoryBuf::new();
        self.recent
            .extend(p.recent.iter().map(|&b| f32::from_bits(b)));
        self.curve = LearningCurve::new();
        for &(step, episodes, mean, eval_mean, eval_std, wall) in &p.curve {
            self.curve.push(CurveRow {
                step,
                episodes,
                mean_return: f64::from_bits(mean),
                eval_mean: float(eval_mean),
                eval_std: float(eval_std),
                wall_s: f64::from_bits(wall),
            });
        }
        self.last_update = p.last_update.map(|b| {
            let f = b.map(f32::from_bits);
            Diagnostics {
                policy_loss: f[0],
                value_loss: f[1],
                entropy: f[2],
                approx_kl: f[3],
                clip_fraction: f[4],
                explained_variance: f[5],
                learning_rate: f[6],
                kl_coef: f[7],
                kl_reference: f[8],
                epochs: p.epochs.unwrap_or(0),
            }
        });
        self.last_eval = f32::from_bits(p.last_eval);
        self.next_row = p.next_row;
    }

    fn recent_mean(&self) -> f64 {
        if self.recent.is_empty() {
            return f64::NAN;
        }
        let sum: f64 = self.recent.oldest_ordered().map(|&r| f64::from(r)).sum();
        sum / self.recent.len() as f64
    }
}

impl<S: AsDiagnostics> Hooks<S> for Observer {
    fn on_episode(&mut self, episode: microrl::algo::Episode) {
        self.recent.write(episode.ret);
    }

    fn on_update(&mut self, _steps: u64, stats: &S) {
        if let Some(d) = stats.diagnostics() {
            self.last_update = Some(d);
        }
    }

    fn on_evaluation(&mut self, evaluation: &Evaluation) {
        self.last_eval = evaluation.mean;
    }

    fn on_iteration(&mut self, p: &microrl::train::Progress) -> ControlFlow<()> {
        if p.evaluation.is_some() || p.steps >= self.next_row {
            self.next_row = (p.steps / CURVE_INTERVAL + 1) * CURVE_INTERVAL;
            self.curve.push(CurveRow {
                step: p.steps,
                episodes: p.episodes,
                mean_return: self.recent_mean(),
                eval_mean: p.evaluation.map(|e| f64::from(e.mean)),
                eval_std: p.evaluation.map(|e| f64::from(e.std)),
                wall_s: self.start.elapsed().as_secs_f64(),
            });
        }
        if let Some(bar) = &self.bar {
            bar.set_position(p.steps.min(self.budget));
            bar.set_message(format!(
                "return {:>7.1}  eval {:>7.1}{}",
                self.recent_mean(),
                self.last_eval,
                if p.solved_at_step.is_some() {
                    "  solved"
                } else {
                    ""
                }
            ));
        }
        ControlFlow::Continue(())
    }
}
