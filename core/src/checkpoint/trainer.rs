//! [`Trainer::save`] and [`Trainer::resume`]: a whole run (agent, loop,
//! RNG streams, environment copies) to and from a checkpoint.

use nalgebra::SVector;
use rand_core::Rng;

use super::*;
use crate::algo::Cursor;
use crate::env::{Env, EnvState};
use crate::error::Error;
use crate::rng::RngState;
use crate::serialize::crc32;
use crate::train::{Envs, EvalKind, Evaluation, Learner, RunConfig, Trainer};

impl<const OBS: usize, R: Rng + RngState> Trainer<SVector<f32, OBS>, R> {
    /// [`checkpoint_len`] for this trainer's RNG: the buffer
    /// [`save`](Self::save) needs for `agent` and `envs` of types `L`, `V`
    /// (one environment, or a [`VecEnv`](crate::vec_env::VecEnv) of copies).
    pub const fn checkpoint_len<L: AgentState, V: Envs>() -> usize
    where
        V::Env: EnvState,
    {
        checkpoint_len::<L, V, R>()
    }

    /// Writes a checkpoint of the run — this trainer, `agent` and the
    /// training environment `envs` — into the start of `out`; returns the
    /// number of bytes written ([`checkpoint_len`]). Call it between
    /// [`iterate`](Self::iterate) calls (see the [module docs](crate::checkpoint)).
    /// A run over a [`VecEnv`](crate::vec_env::VecEnv) saves all
    /// `MAX_ENVS` copies and their cursors (in use or not) in place of the
    /// trainer's own cursor; with `MAX_ENVS = 1` that is the checkpoint of
    /// the single-environment run byte for byte.
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] if `out` is shorter than
    /// [`checkpoint_len`]; [`Error::MidIteration`] if a PPO rollout awaits
    /// its update; [`Error::NonFinite`]/[`Error::OutOfDomain`] for a value a
    /// resume would refuse. Nothing is written on error.
    pub fn save<L, V, E>(&self, agent: &L, envs: &V, out: &mut [u8]) -> Result<usize, Error>
    where
        L: Learner<E> + AgentState,
        V: Envs<Env = E>,
        E: Env<Obs = SVector<f32, OBS>> + EnvState,
    {
        let (copies, cursors) = envs.copies(&self.cursor);
        self.save_copies(agent, cursors, copies, out)
    }

    /// The checkpoint of the run with environment copies `envs` and their
    /// `cursors` (as many).
    fn save_copies<L, E>(
        &self,
        agent: &L,
        cursors: &[Cursor<SVector<f32, OBS>>],
        envs: &[E],
        out: &mut [u8],
    ) -> Result<usize, Error>
    where
        L: Learner<E> + AgentState,
        E: Env<Obs = SVector<f32, OBS>> + EnvState,
    {
        if cursors.len() != envs.len() {
            return Err(Error::ShapeMismatch);
        }
        let len = copies_len::<L, E, R>(envs.len());
        if out.len() < len {
            return Err(Error::BufferTooSmall);
        }
        let mut dry = Writer {
            buf: &mut [],
            pos: 0,
            commit: false,
        };
        self.write_body(agent, cursors, envs, &mut dry)?;
        if dry.pos != len - 4 {
            // An `AgentState`/`EnvState` impl wrote another length than it declared.
            return Err(Error::ShapeMismatch);
        }
        let mut w = Writer {
            buf: &mut out[..len],
            pos: 0,
            commit: true,
        };
        self.write_body(agent, cursors, envs, &mut w)?;
        let crc = crc32(&out[..len - 4]);
        out[len - 4..len].copy_from_slice(&crc.to_le_bytes());
        Ok(len)
    }

    fn write_body<L, E>(
        &self,
        agent: &L,
        cursors: &[Cursor<SVector<f32, OBS>>],
        envs: &[E],
        w: &mut Writer<'_>,
    ) -> Result<(), Error>
    where
        L: Learner<E> + AgentState,
        E: Env<Obs = SVector<f32, OBS>> + EnvState,
    {
        const { assert!(E::WORDS <= MAX_ENV_WORDS, "EnvState::WORDS > MAX_ENV_WORDS") };
        let header = Header::of::<L, E, R>(envs.len());
        w.bytes(&MAGIC);
        w.bytes(&version(envs.len()).to_le_bytes());
        w.bytes(&crate::math::BACKEND.code().to_le_bytes());
        for f in header.fields() {
            w.u32(f);
        }
        // Trainer section.
        let c = &self.config;
        w.u64(c.total_steps);
        w.f32(c.threshold)?;
        w.u64(c.eval_interval);
        w.u64(c.solved_eval_interval);
        w.u32(c.quick_episodes);
        w.u32(c.select_episodes);
        w.f32(c.select_margin)?;
        w.u32(c.report_episodes);
        w.u32(u32::from(c.early_stop));
        for cursor in cursors {
            for &x in cursor.obs.iter() {
                w.f32(x)?;
            }
            w.f64(cursor.ret)?;
            w.u32(cursor.len);
            w.u64(cursor.steps);
            if cursors.len() > 1 {
                w.f32(cursor.discounted_return)?;
            }
        }
        w.u64(self.episodes);
        w.u64(self.updates);
        w.u32(u32::from(self.solved_at_step.is_some()));
        w.u64(self.solved_at_step.unwrap_or(0));
        let sel = self.selection.unwrap_or(Evaluation {
            kind: EvalKind::Quick,
            step: 0,
            episodes: 0,
            mean: 0.0,
            std: 0.0,
        });
        w.u32(u32::from(self.selection.is_some()));
        w.u32(eval_kind_code(sel.kind));
        w.u64(sel.step);
        w.u32(sel.episodes);
        w.f32(sel.mean)?;
        w.f32(sel.std)?;
        w.u64(self.next_eval);
        write_rng(w, &self.rng);
        write_rng(w, &self.select_rng);
        write_rng(w, &self.report_rng);
        // Agent section.
        let start = w.pos;
        agent.save_state(w)?;
        if w.pos != start + L::LEN {
            return Err(Error::ShapeMismatch);
        }
        // Environment section, copy by copy.
        let mut words = [0.0f64; MAX_ENV_WORDS];
        for env in envs {
            env.save_state(&mut words[..E::WORDS]);
            for &x in &words[..E::WORDS] {
                w.f64(x)?;
            }
        }
        Ok(())
    }

    /// Resumes a run from a checkpoint written by [`save`](Self::save):
    /// restores `agent` (whose `config` must be the run's; its weights and
    /// statistics may be anything, e.g. `ZERO`) and the training
    /// environment `envs` (every copy and cursor of a
    /// [`VecEnv`](crate::vec_env::VecEnv), whose agent's
    /// [`n_envs`](Learner::n_envs) copies are then in use), and returns the
    /// trainer. Continuing with [`iterate`](Self::iterate)/[`run`](Self::run)
    /// then reproduces the uninterrupted run bit for bit.
    ///
    /// # Errors
    /// In the order checked: [`Error::InvalidConfig`] naming `n_envs` when
    /// the agent needs more copies than a `VecEnv` holds,
    /// [`Error::Truncated`], [`Error::BadMagic`],
    /// [`Error::UnsupportedVersion`], [`Error::TrailingBytes`],
    /// [`Error::ChecksumMismatch`], [`Error::ShapeMismatch`] (a checkpoint of
    /// another agent, network, environment, RNG or number of copies),
    /// [`Error::Backend`] (written by a build of another maths backend:
    /// the run could not continue bit for bit), then
    /// [`Error::InvalidConfig`], [`Error::NonFinite`], [`Error::OutOfDomain`]
    /// or [`Error::InvalidState`] for a value out of range. `agent` and
    /// `envs` are unchanged on error.
    pub fn resume<L, V, E>(agent: &mut L, envs: &mut V, bytes: &[u8]) -> Result<Self, Error>
    where
        L: Learner<E> + AgentState,
        V: Envs<Env = E>,
        E: Env<Obs = SVector<f32, OBS>> + EnvState,
    {
        let n_envs = agent.n_envs();
        let (mut trainer, cursor) = envs.restore(n_envs, |copies, cursors| {
            Self::resume_copies(agent, copies, cursors, bytes)
        })?;
        trainer.cursor = cursor;
        Ok(trainer)
    }

    /// Resumes the run with environment copies `envs`, reading as many
    /// cursors into `cursors` (which only this call writes, so the caller
    /// stores them after success); the trainer's own cursor is idle.
    fn resume_copies<L, E>(
        agent: &mut L,
        envs: &mut [E],
        cursors: &mut [Cursor<SVector<f32, OBS>>],
        bytes: &[u8],
    ) -> Result<Self, Error>
    where
        L: Learner<E> + AgentState,
        E: Env<Obs = SVector<f32, OBS>> + EnvState,
    {
        const { assert!(E::WORDS <= MAX_ENV_WORDS, "EnvState::WORDS > MAX_ENV_WORDS") };
        let mut r = verify::<L, E, R>(bytes, envs.len())?;
        let trainer = Self::read_trainer(&mut r, cursors)?;
        let agent_at = r.pos;
        // Dry pass over the agent.
        agent.load_state(&mut r)?;
        let envs_at = r.pos;
        // Every check has passed but the environments' own. Each refuses
        // without changing; so that a refusal by a later copy leaves the
        // earlier ones unchanged too, every copy but the last takes its
        // saved state and then its own back; then the last one takes its
        // state (with one copy: just that), the others theirs again, and
        // the agent is written (the same checks again).
        let mut words = [0.0f64; MAX_ENV_WORDS];
        let mut own = [0.0f64; MAX_ENV_WORDS];
        let Some((last, others)) = envs.split_last_mut() else {
            return Err(Error::ShapeMismatch);
        };
        for env in others.iter_mut() {
            for x in &mut words[..E::WORDS] {
                *x = r.f64()?;
            }
            env.save_state(&mut own[..E::WORDS]);
            env.restore_state(&words[..E::WORDS])?;
            env.restore_state(&own[..E::WORDS])?;
        }
        for x in &mut words[..E::WORDS] {
            *x = r.f64()?;
        }
        last.restore_state(&words[..E::WORDS])?;
        let mut r = Reader {
            buf: bytes,
            pos: envs_at,
            commit: true,
        };
        for env in others.iter_mut() {
            for x in &mut words[..E::WORDS] {
                *x = r.f64()?;
            }
            env.restore_state(&words[..E::WORDS])?;
        }
        let mut r = Reader {
            buf: bytes,
            pos: agent_at,
            commit: true,
        };
        agent.load_state(&mut r)?;
        Ok(trainer)
    }

    /// The trainer section, its cursors into `cursors` (one per copy).
    fn read_trainer(
        r: &mut Reader<'_>,
        cursors: &mut [Cursor<SVector<f32, OBS>>],
    ) -> Result<Self, Error> {
        let config = RunConfig {
            total_steps: r.u64()?,
            threshold: r.f32()?,
            eval_interval: r.u64()?,
            solved_eval_interval: r.u64()?,
            quick_episodes: r.u32()?,
            select_episodes: r.u32()?,
            select_margin: r.f32()?,
            report_episodes: r.u32()?,
            early_stop: r.flag()?,
        };
        config.validate()?;
        let copies = cursors.len();
        for cursor in cursors.iter_mut() {
            let mut obs = SVector::<f32, OBS>::zeros();
            for x in obs.iter_mut() {
                *x = r.f32()?;
            }
            *cursor = Cursor {
                obs,
                ret: r.f64()?,
                len: r.u32()?,
                steps: r.u64()?,
                discounted_return: if copies > 1 { r.f32()? } else { 0.0 },
            };
        }
        let episodes = r.u64()?;
        let updates = r.u64()?;
        let solved = r.flag()?;
        let solved_step = r.u64()?;
        let has_selection = r.flag()?;
        let kind = match r.u32()? {
            0 => EvalKind::Quick,
            1 => EvalKind::Select,
            2 => EvalKind::Report,
            _ => {
                return Err(Error::InvalidState {
                    what: "unknown evaluation kind",
                });
            }
        };
        let selection = Evaluation {
            kind,
            step: r.u64()?,
            episodes: r.u32()?,
            mean: r.f32()?,
            std: r.f32()?,
        };
        let next_eval = r.u64()?;
        Ok(Self {
            config,
            cursor: Cursor::idle(),
            rng: read_rng(r)?,
            select_rng: read_rng(r)?,
            report_rng: read_rng(r)?,
            episodes,
            updates,
            solved_at_step: solved.then_some(solved_step),
            selection: has_selection.then_some(selection),
            next_eval,
        })
    }
}
