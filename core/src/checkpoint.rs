//! Checkpoints: the complete state of a training run at an iteration
//! boundary, in a checksummed binary format, so that a run interrupted (a
//! power cut on the MCU, a killed job on the desktop) resumes **bit for bit**
//! as if it had never stopped.
//!
//! Design:
//! - **Everything a future step reads, nothing else.** A checkpoint holds
//!   the agent ([`AgentState`]: weights, Adam's `m`, `v` and step `t` of every
//!   [`TrainState`], the action space, the observation and return
//!   normalisers, the running discounted return of a single environment
//!   and the step counter), the
//!   [`Trainer`] (its [`RunConfig`], the [`Cursor`] into the training episode,
//!   the episode and update counters, `solved_at_step`, the passed deciding
//!   evaluation, `next_eval` and the state of its three RNG streams through
//!   [`RngState`]) and the training environment ([`EnvState`]: physics, step
//!   counter, flags). Not saved: gradients and forward caches (every update
//!   overwrites them before reading them), the PPO rollout (consumed at an
//!   iteration boundary — saving one that awaits its update is refused with
//!   [`Error::MidIteration`]), the evaluation environment (every evaluation
//!   episode starts with a reset) and the agent's hyper-parameters, which the
//!   caller supplies again (the agent's `config` is validated on resume, and
//!   its optimiser configuration set from it as `init` does).
//! - **Caller-owned bytes, no allocation.** [`Trainer::save`] writes into a
//!   `&mut [u8]` of at least [`checkpoint_len`] bytes (a `const fn`, so the
//!   buffer can be a `static` array or a flash sector); [`Trainer::resume`]
//!   reads a `&[u8]`. An environment's words and the RNG words pass through
//!   small fixed stack arrays ([`MAX_ENV_WORDS`], [`MAX_RNG_WORDS`]).
//! - **A refused call changes nothing.** Both directions run twice over the
//!   same code: a dry pass that parses and checks everything (the
//!   [`Writer`]/[`Reader`] with `commit = false`), then the pass that writes.
//!   `save` writes no byte and `resume` touches neither agent nor environment
//!   unless every check passes.
//! - **Bit-exact numbers.** Every `f32`/`f64` is stored as its IEEE-754 bit
//!   pattern, little-endian; counters as little-endian integers.
//!
//! ```
//! use microrl::algo::PpoConfig;
//! use microrl::checkpoint::checkpoint_len;
//! use microrl::env::CartPole;
//! use microrl::rng::Xoshiro128pp;
//! use microrl::train::{RunConfig, Trainer};
//! use microrl::agent;
//!
//! type Agent = agent::Ppo<CartPole, 8, 64>;
//! type Run = Trainer<microrl::SVector<f32, 4>, Xoshiro128pp>;
//! let config = PpoConfig { total_steps: 640, ..PpoConfig::CARTPOLE };
//! let run = RunConfig::new(640, 475.0);
//! let mut agent = Box::new(Agent::new(config));
//! let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
//! let mut trainer = Run::start(&mut *agent, &mut env, run, 0)?;
//! trainer.iterate(&mut *agent, &mut env, &mut eval_env, &mut ())?;
//!
//! // Between iterations: the whole run into a fixed-size buffer (a flash page).
//! let mut blob = [0u8; checkpoint_len::<Agent, CartPole, Xoshiro128pp>()];
//! trainer.save(&*agent, &env, &mut blob)?;
//!
//! // After a reset: a fresh (even all-zero) agent with the run's
//! // configuration, a fresh environment, and the run goes on bit for bit.
//! let mut agent = Box::new(Agent::new(config));
//! let mut env = CartPole::new();
//! let mut trainer = Run::resume(&mut *agent, &mut env, &blob)?;
//! let outcome = trainer.run(&mut *agent, &mut env, &mut eval_env, &mut ())?;
//! assert_eq!(outcome.steps, 640);
//! # Ok::<(), microrl::Error>(())
//! ```
//!
//! The format (all numbers little-endian):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `b"MRLC"` ([`MAGIC`], distinct from the policy format's `MRLP`) |
//! | 4 | 2 | format version ([`VERSION`]; [`VERSION_ENVS`] with more than one environment copy) |
//! | 6 | 2 | reserved, must be 0 |
//! | 8 | 4 | total length in bytes, CRC included |
//! | 12 | 4 | agent kind ([`AgentState::KIND`]) |
//! | 16 | 4 | agent fingerprint ([`AgentState::fingerprint`]: every tensor's shape and kind, the rollout length) |
//! | 20 | 4 | agent section length in bytes ([`AgentState::LEN`]) |
//! | 24 | 4 | observation size |
//! | 28 | 4 | environment tag ([`EnvState::TAG`]) |
//! | 32 | 4 | environment words ([`EnvState::WORDS`], times the copies of a [`VecEnv`]) |
//! | 36 | 4 | RNG words per stream ([`RngState::WORDS`]) |
//! | 40 | 4 | trainer section length in bytes |
//! | 44 | … | trainer section: run configuration, cursor (one per copy; with more than one copy each also holds its copy's discounted return), counters, evaluation record, three RNG states |
//! | … | [`AgentState::LEN`] | agent section |
//! | … | 8·[`EnvState::WORDS`] per copy | environment section (`f64` words), copy by copy |
//! | end − 4 | 4 | CRC-32 ([`crc32`]) of every preceding byte |
//!
//! A run over `MAX_ENVS` environment copies ([`VecEnv`],
//! [`Trainer::save_envs`]) saves every copy and its cursor in place of the
//! single environment and cursor: the same layout with `MAX_ENVS` of each,
//! so a one-copy checkpoint is the single-environment one byte for byte
//! (format [`VERSION`]), and a checkpoint of another number of copies is
//! refused as a [`Error::ShapeMismatch`]. With more than one copy each
//! cursor also carries its copy's running discounted return
//! ([`Cursor::discounted_return`], after the step counter: reward scaling
//! keeps one per copy, as SB3's `VecNormalize`), and the format version is
//! [`VERSION_ENVS`] (the same checkpoint in format [`VERSION`], without
//! those returns, is refused as [`Error::UnsupportedVersion`]).
//!
//! Formats 2 (one copy) and 3 (copies), written before the run
//! configuration held [`RunConfig::select_margin`], are refused as
//! [`Error::UnsupportedVersion`]: resume such a run with the release that
//! wrote it.
//!
//! [`Trainer::resume`] checks, in order: magic, version, that the length is
//! the one the header announces ([`Error::Truncated`],
//! [`Error::TrailingBytes`]), the CRC, that every header field matches the
//! destination types ([`Error::ShapeMismatch`]: another agent, network size,
//! rollout length, environment or RNG), then every value: finite numbers,
//! tensors in their domain, a valid run and agent configuration, counters
//! and flags in range, a non-zero RNG state.

use nalgebra::SVector;
use rand_core::Rng;

use crate::algo::ppo::ActorCriticParams;
use crate::algo::{
    Actor, ActorCritic, Anchored, Critic, Cursor, Grpo, Policy, Ppo, Reinforce, Trpo,
};
use crate::env::{Env, EnvState};
use crate::error::Error;
use crate::nn::Network;
use crate::normalize::RunningNorm;
use crate::optim::TrainState;
use crate::params::{Params, TensorData};
use crate::rng::RngState;
use crate::serialize::crc32;
use crate::train::{EvalKind, Evaluation, Learner, RunConfig, Trainer};
use crate::vec_env::VecEnv;

/// Magic number at the start of every checkpoint.
pub const MAGIC: [u8; 4] = *b"MRLC";
/// Current format version of a checkpoint of one environment (a
/// single-environment run, or a [`VecEnv`] of one copy).
pub const VERSION: u16 = 4;
/// Current format version of a checkpoint of more than one environment
/// copy: format [`VERSION`] with one more field per cursor, its copy's
/// running discounted return ([`Cursor::discounted_return`]).
pub const VERSION_ENVS: u16 = 5;

/// The format version of a checkpoint with `copies` environment copies.
const fn version(copies: usize) -> u16 {
    if copies > 1 { VERSION_ENVS } else { VERSION }
}
/// Size of the header.
pub const HEADER_LEN: usize = 44;
/// Largest [`EnvState::WORDS`] a checkpoint supports (the words pass
/// through a stack array of this many `f64`s).
pub const MAX_ENV_WORDS: usize = 32;
/// Largest [`RngState::WORDS`] a checkpoint supports.
pub const MAX_RNG_WORDS: usize = 16;

/// Bytes of the trainer section for `obs`-dimensional observations and RNG
/// states of `rng_words` words (one environment).
#[cfg(test)]
const fn trainer_len(obs: usize, rng_words: usize) -> usize {
    trainer_len_copies(obs, rng_words, 1)
}

/// Bytes of the trainer section for `obs`-dimensional observations, RNG
/// states of `rng_words` words and `copies` environment copies (one cursor
/// each, with its discounted return when there are more than one).
const fn trainer_len_copies(obs: usize, rng_words: usize, copies: usize) -> usize {
    let config = 8 + 4 + 8 + 8 + 4 + 4 + 4 + 4 + 4;
    let discounted_return = if copies > 1 { 4 } else { 0 };
    let cursor = copies * (4 * obs + 8 + 4 + 8 + discounted_return);
    let counters = 8 + 8;
    let solved = 4 + 8;
    let selection = 4 + 4 + 8 + 4 + 4 + 4;
    let next_eval = 8;
    config + cursor + counters + solved + selection + next_eval + 3 * 4 * rng_words
}

/// Size in bytes of the checkpoint of agent `L` training on `E` with RNG
/// streams `R`. A `const fn`, so a buffer can be declared as
/// `[u8; checkpoint_len::<Agent, CartPole, Xoshiro128pp>()]`.
pub const fn checkpoint_len<L: AgentState, E: EnvState, R: RngState>() -> usize {
    copies_len::<L, E, R>(1)
}

/// Size in bytes of the checkpoint of a run over a
/// [`VecEnv<E, MAX_ENVS>`](crate::vec_env::VecEnv) ([`Trainer::save_envs`]):
/// every copy and its cursor are saved, in use or not. With `MAX_ENVS = 1`
/// it is [`checkpoint_len`], and the checkpoints are the same bytes.
pub const fn checkpoint_len_envs<L: AgentState, E: EnvState, R: RngState, const MAX_ENVS: usize>()
-> usize {
    copies_len::<L, E, R>(MAX_ENVS)
}

/// The checkpoint's size with `copies` environment copies.
const fn copies_len<L: AgentState, E: EnvState, R: RngState>(copies: usize) -> usize {
    HEADER_LEN + trainer_len_copies(L::OBS, R::WORDS, copies) + L::LEN + copies * 8 * E::WORDS + 4
}

/// Writes a checkpoint section: little-endian numbers, `f32`/`f64` as bit
/// patterns. A dry writer (`commit = false`) writes nothing and only checks
/// and counts, so [`Trainer::save`] refuses before writing a byte.
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
    commit: bool,
}

impl Writer<'_> {
    fn bytes(&mut self, b: &[u8]) {
        let end = self.pos.saturating_add(b.len());
        if self.commit
            && let Some(dst) = self.buf.get_mut(self.pos..end)
        {
            dst.copy_from_slice(b);
        }
        self.pos = end;
    }

    /// A `u32`.
    pub fn u32(&mut self, x: u32) {
        self.bytes(&x.to_le_bytes());
    }

    /// A `u64`.
    pub fn u64(&mut self, x: u64) {
        self.bytes(&x.to_le_bytes());
    }

    /// A finite `f32` (its bits).
    ///
    /// # Errors
    /// [`Error::NonFinite`] for NaN or ±∞ (a checkpoint that could not be
    /// resumed is not written).
    pub fn f32(&mut self, x: f32) -> Result<(), Error> {
        crate::error::check_finite(x)?;
        self.u32(x.to_bits());
        Ok(())
    }

    /// A finite `f64` (its bits).
    ///
    /// # Errors
    /// [`Error::NonFinite`] for NaN or ±∞.
    pub fn f64(&mut self, x: f64) -> Result<(), Error> {
        if !x.is_finite() {
            return Err(Error::NonFinite);
        }
        self.u64(x.to_bits());
        Ok(())
    }

    /// Every scalar of `p`, tensor by tensor; with `domain`, `p` must also
    /// lie in its domain ([`Params::check_domain`]) — true for weights,
    /// normalisers and action spaces, false for optimiser moments.
    ///
    /// # Errors
    /// [`Error::NonFinite`], [`Error::OutOfDomain`].
    pub fn params<P: Params>(&mut self, p: &P, domain: bool) -> Result<(), Error> {
        if !p.is_finite() {
            return Err(Error::NonFinite);
        }
        if domain {
            p.check_domain()?;
        }
        for i in 0..P::TENSORS {
            for &x in p.tensor(i) {
                self.u32(x.to_bits());
            }
        }
        Ok(())
    }
}

/// Reads a checkpoint section written by [`Writer`]. A dry reader
/// (`commit = false`) parses and checks without writing into the
/// destination: [`AgentState::load_state`] runs once dry, then for real.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    commit: bool,
}

impl<'a> Reader<'a> {
    /// Whether this pass writes into the destination.
    pub fn commit(&self) -> bool {
        self.commit
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let end = self.pos.checked_add(n).ok_or(Error::Truncated)?;
        let b = self.buf.get(self.pos..end).ok_or(Error::Truncated)?;
        self.pos = end;
        Ok(b)
    }

    /// A `u32`.
    ///
    /// # Errors
    /// [`Error::Truncated`] past the end.
    pub fn u32(&mut self) -> Result<u32, Error> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A `u64`.
    ///
    /// # Errors
    /// [`Error::Truncated`] past the end.
    pub fn u64(&mut self) -> Result<u64, Error> {
        let lo = u64::from(self.u32()?);
        let hi = u64::from(self.u32()?);
        Ok((hi << 32) | lo)
    }

    /// A flag stored as a `u32` 0 or 1.
    ///
    /// # Errors
    /// [`Error::Truncated`]; [`Error::InvalidState`] for another value.
    pub fn flag(&mut self) -> Result<bool, Error> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Error::InvalidState {
                what: "flag is neither 0 nor 1",
            }),
        }
    }

    /// A finite `f32`.
    ///
    /// # Errors
    /// [`Error::Truncated`], [`Error::NonFinite`].
    pub fn f32(&mut self) -> Result<f32, Error> {
        let x = f32::from_bits(self.u32()?);
        crate::error::check_finite(x)?;
        Ok(x)
    }

    /// A finite `f64`.
    ///
    /// # Errors
    /// [`Error::Truncated`], [`Error::NonFinite`].
    pub fn f64(&mut self) -> Result<f64, Error> {
        let x = f64::from_bits(self.u64()?);
        if x.is_finite() {
            Ok(x)
        } else {
            Err(Error::NonFinite)
        }
    }

    /// `P::LEN` finite scalars into `dst` (only when committing); with
    /// `domain`, they must lie in `P`'s domain ([`Params::check_values`]).
    ///
    /// # Errors
    /// [`Error::Truncated`], [`Error::NonFinite`], [`Error::OutOfDomain`];
    /// `dst` is unchanged then.
    pub fn params<P: Params>(&mut self, dst: &mut P, domain: bool) -> Result<(), Error> {
        let bytes = self.take(4 * P::LEN)?;
        let words = bytes.chunks_exact(4);
        if !words
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .all(f32::is_finite)
        {
            return Err(Error::NonFinite);
        }
        let tensor_bytes = |dst: &P, i: usize| {
            let start: usize = (0..i).map(|j| dst.tensor(j).len()).sum();
            let len = dst.tensor(i).len();
            bytes.get(4 * start..4 * (start + len)).unwrap_or(&[])
        };
        if domain {
            let view = |i: usize| TensorData::from_le_bytes(tensor_bytes(dst, i));
            P::check_values(0, &view)?;
        }
        if self.commit {
            let mut k = 0;
            for i in 0..P::TENSORS {
                for x in dst.tensor_mut(i) {
                    if let Some(b) = bytes.get(k..k + 4) {
                        *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    }
                    k += 4;
                }
            }
        }
        Ok(())
    }
}

/// An agent whose complete training state can be checkpointed at an
/// iteration boundary. Implemented for [`Ppo`] (and A2C), [`Reinforce`] and
/// [`ActorCritic`].
pub trait AgentState {
    /// Which algorithm (1 PPO/A2C, 2 REINFORCE, 3 online actor-critic,
    /// 4 KL-anchored PPO, 5 TRPO, 6 GRPO).
    const KIND: u32;
    /// Observation size.
    const OBS: usize;
    /// Bytes of the agent section.
    const LEN: usize;
    /// A CRC-32 over the algorithm, its capacities and the shape and kind of
    /// every saved tensor: checkpoints of agents with other networks are
    /// refused.
    fn fingerprint() -> u32;
    /// Writes the agent section (exactly [`LEN`](Self::LEN) bytes).
    ///
    /// # Errors
    /// [`Error::MidIteration`] for a rollout awaiting its update;
    /// [`Error::NonFinite`]/[`Error::OutOfDomain`] for values a resume would
    /// refuse.
    fn save_state(&self, w: &mut Writer<'_>) -> Result<(), Error>;
    /// Reads the agent section, writing into `self` only when
    /// [`r.commit()`](Reader::commit) (a dry pass must check everything
    /// the committing pass could refuse).
    ///
    /// # Errors
    /// As the [`Reader`] methods; [`Error::InvalidConfig`] when `self`'s
    /// configuration does not validate.
    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error>;
}

/// Folds `x` into the fingerprint `h`.
fn fold(h: u32, x: u32) -> u32 {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&h.to_le_bytes());
    b[4..].copy_from_slice(&x.to_le_bytes());
    crc32(&b)
}

/// Folds the shape and kind of every tensor of `P` into `h`.
pub fn fold_shapes<P: Params>(mut h: u32) -> u32 {
    h = fold(h, P::TENSORS as u32);
    for i in 0..P::TENSORS {
        let s = P::shape(i);
        h = fold(fold(fold(h, s.rows), s.cols), s.tag);
    }
    h
}

/// Bytes of a saved [`TrainState`] (parameters, `m`, `v`, `t`).
const fn train_state_len<P: Params>() -> usize {
    3 * 4 * P::LEN + 4
}

fn save_train<P: Params>(w: &mut Writer<'_>, s: &TrainState<P>) -> Result<(), Error> {
    w.params(&s.params, true)?;
    w.params(&s.optimizer.m, false)?;
    w.params(&s.optimizer.v, false)?;
    w.u32(s.optimizer.t);
    Ok(())
}

fn load_train<P: Params>(r: &mut Reader<'_>, s: &mut TrainState<P>) -> Result<(), Error> {
    r.params(&mut s.params, true)?;
    r.params(&mut s.optimizer.m, false)?;
    r.params(&mut s.optimizer.v, false)?;
    let t = r.u32()?;
    if r.commit() {
        s.optimizer.t = t;
    }
    Ok(())
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize> AgentState
    for Ppo<A, C, OBS, N, CHUNK>
{
    const KIND: u32 = 1;
    const OBS: usize = OBS;
    const LEN: usize = train_state_len::<ActorCriticParams<A, C>>()
        + 4 * <A::Space as Params>::LEN
        + 4 * RunningNorm::<OBS>::LEN
        + 4 * RunningNorm::<1>::LEN
        + 4
        + 4
        + 8;

    fn fingerprint() -> u32 {
        let mut h = fold(fold(0, Self::KIND), N as u32);
        h = fold_shapes::<ActorCriticParams<A, C>>(h);
        h = fold_shapes::<A::Space>(h);
        h = fold_shapes::<RunningNorm<OBS>>(h);
        fold_shapes::<RunningNorm<1>>(h)
    }

    fn save_state(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        if self.rollout.is_ready() {
            return Err(Error::MidIteration);
        }
        save_train(w, &self.train)?;
        w.params(&self.space, true)?;
        w.params(&self.obs_norm, true)?;
        w.params(&self.return_norm, true)?;
        w.f32(self.discounted_return)?;
        w.f32(self.kl_coef)?;
        w.u64(self.steps);
        Ok(())
    }

    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        self.config.validate(N)?;
        self.train.params.critic.validate()?;
        load_train(r, &mut self.train)?;
        r.params(&mut self.space, true)?;
        r.params(&mut self.obs_norm, true)?;
        r.params(&mut self.return_norm, true)?;
        let discounted_return = r.f32()?;
        let kl_coef = r.f32()?;
        if !(0.0..=crate::algo::KL_COEF_MAX).contains(&kl_coef) {
            return Err(Error::InvalidState {
                what: "KL coefficient outside [0, KL_COEF_MAX]",
            });
        }
        let steps = r.u64()?;
        if r.commit() {
            self.discounted_return = discounted_return;
            self.kl_coef = kl_coef;
            self.steps = steps;
            self.train.optimizer.config = self.config.adam;
            self.train.zero_grad();
            self.rollout.clear();
        }
        Ok(())
    }
}

impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> AgentState
    for Reinforce<A, C, OBS, N>
{
    const KIND: u32 = 2;
    const OBS: usize = OBS;
    const LEN: usize = <Ppo<A, C, OBS, N> as AgentState>::LEN;

    fn fingerprint() -> u32 {
        fold(<Ppo<A, C, OBS, N> as AgentState>::fingerprint(), Self::KIND)
    }

    fn save_state(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        self.inner.save_state(w)
    }

    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        self.inner.load_state(r)
    }
}

/// The wrapped PPO agent's state: TRPO's other memory (CG vectors, the
/// line search's `θ_old`) is rebuilt by every update.
impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> AgentState
    for Trpo<A, C, OBS, N>
{
    const KIND: u32 = 5;
    const OBS: usize = OBS;
    const LEN: usize = <Ppo<A, C, OBS, N> as AgentState>::LEN;

    fn fingerprint() -> u32 {
        fold(<Ppo<A, C, OBS, N> as AgentState>::fingerprint(), Self::KIND)
    }

    fn save_state(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        self.inner.save_state(w)
    }

    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        self.config.validate(N)?;
        self.inner.config = self.config.to_ppo();
        self.inner.load_state(r)
    }
}

/// The actor with Adam, the action space, the normaliser and the step
/// count (no critic, no rollout: an iteration collects whole groups).
impl<A: Actor<OBS>, const OBS: usize, const N: usize, const CHUNK: usize> AgentState
    for Grpo<A, OBS, N, CHUNK>
{
    const KIND: u32 = 6;
    const OBS: usize = OBS;
    const LEN: usize =
        train_state_len::<A>() + 4 * <A::Space as Params>::LEN + 4 * RunningNorm::<OBS>::LEN + 8;

    fn fingerprint() -> u32 {
        let mut h = fold(fold(0, Self::KIND), N as u32);
        h = fold_shapes::<A>(h);
        h = fold_shapes::<A::Space>(h);
        fold_shapes::<RunningNorm<OBS>>(h)
    }

    fn save_state(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        if self.rollout.is_ready() {
            return Err(Error::MidIteration);
        }
        save_train(w, &self.train)?;
        w.params(&self.space, true)?;
        w.params(&self.obs_norm, true)?;
        w.u64(self.steps);
        Ok(())
    }

    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        self.config.validate()?;
        load_train(r, &mut self.train)?;
        r.params(&mut self.space, true)?;
        r.params(&mut self.obs_norm, true)?;
        let steps = r.u64()?;
        if r.commit() {
            self.steps = steps;
            self.train.optimizer.config = self.config.adam;
            self.train.zero_grad();
        }
        Ok(())
    }
}

/// The PPO agent's state, the reference policy (so a resume needs no file
/// besides the checkpoint) and the current `β`.
impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> AgentState
    for Anchored<A, C, OBS, N>
{
    const KIND: u32 = 4;
    const OBS: usize = OBS;
    const LEN: usize =
        <Ppo<A, C, OBS, N> as AgentState>::LEN + 4 * <Policy<A, OBS> as Params>::LEN + 4;

    fn fingerprint() -> u32 {
        let h = fold(<Ppo<A, C, OBS, N> as AgentState>::fingerprint(), Self::KIND);
        fold_shapes::<Policy<A, OBS>>(h)
    }

    fn save_state(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        self.ppo.save_state(w)?;
        w.params(&self.reference, true)?;
        w.f32(self.kl_coef)
    }

    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        self.anchor.validate()?;
        self.ppo.load_state(r)?;
        r.params(&mut self.reference, true)?;
        let kl_coef = r.f32()?;
        if !(0.0..=crate::algo::KL_COEF_MAX).contains(&kl_coef) {
            return Err(Error::InvalidState {
                what: "KL coefficient outside [0, KL_COEF_MAX]",
            });
        }
        if r.commit() {
            self.kl_coef = kl_coef;
        }
        Ok(())
    }
}

impl<A: Actor<OBS>, C: Network<OBS, 1>, const OBS: usize> AgentState for ActorCritic<A, C, OBS> {
    const KIND: u32 = 3;
    const OBS: usize = OBS;
    const LEN: usize = train_state_len::<A>()
        + train_state_len::<C>()
        + 4 * <A::Space as Params>::LEN
        + 4 * RunningNorm::<OBS>::LEN
        + 8;

    fn fingerprint() -> u32 {
        let mut h = fold(0, Self::KIND);
        h = fold_shapes::<A>(h);
        h = fold_shapes::<C>(h);
        h = fold_shapes::<A::Space>(h);
        fold_shapes::<RunningNorm<OBS>>(h)
    }

    fn save_state(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        save_train(w, &self.actor)?;
        save_train(w, &self.critic)?;
        w.params(&self.space, true)?;
        w.params(&self.obs_norm, true)?;
        w.u64(self.steps);
        Ok(())
    }

    fn load_state(&mut self, r: &mut Reader<'_>) -> Result<(), Error> {
        self.config.validate()?;
        load_train(r, &mut self.actor)?;
        load_train(r, &mut self.critic)?;
        r.params(&mut self.space, true)?;
        r.params(&mut self.obs_norm, true)?;
        let steps = r.u64()?;
        if r.commit() {
            self.steps = steps;
            self.actor.optimizer.config = self.config.adam;
            self.critic.optimizer.config = self.config.adam;
            self.actor.zero_grad();
            self.critic.zero_grad();
        }
        Ok(())
    }
}

/// The header fields the destination types determine.
struct Header {
    len: u32,
    kind: u32,
    fingerprint: u32,
    agent_len: u32,
    obs: u32,
    env_tag: u32,
    env_words: u32,
    rng_words: u32,
    trainer_len: u32,
}

impl Header {
    /// The header of a checkpoint with `copies` environment copies: the
    /// environment words are all copies' (so a checkpoint of another
    /// number of copies is refused as a [`Error::ShapeMismatch`]).
    fn of<L: AgentState, E: EnvState, R: RngState>(copies: usize) -> Self {
        Self {
            len: copies_len::<L, E, R>(copies) as u32,
            kind: L::KIND,
            fingerprint: L::fingerprint(),
            agent_len: L::LEN as u32,
            obs: L::OBS as u32,
            env_tag: E::TAG,
            env_words: (copies * E::WORDS) as u32,
            rng_words: R::WORDS as u32,
            trainer_len: trainer_len_copies(L::OBS, R::WORDS, copies) as u32,
        }
    }

    fn fields(&self) -> [u32; 9] {
        [
            self.len,
            self.kind,
            self.fingerprint,
            self.agent_len,
            self.obs,
            self.env_tag,
            self.env_words,
            self.rng_words,
            self.trainer_len,
        ]
    }
}

/// Checks magic, version, length, CRC and that the header describes
/// `L`/`E`/`R`; returns a reader positioned at the trainer section.
fn verify<L: AgentState, E: EnvState, R: RngState>(
    bytes: &[u8],
    copies: usize,
) -> Result<Reader<'_>, Error> {
    let expected = Header::of::<L, E, R>(copies);
    if bytes.len() < HEADER_LEN + 4 {
        return Err(Error::Truncated);
    }
    let mut r = Reader {
        buf: bytes,
        pos: 0,
        commit: false,
    };
    if r.take(4)? != MAGIC {
        return Err(Error::BadMagic);
    }
    let version = r.u32()?;
    if version != u32::from(VERSION) && version != u32::from(VERSION_ENVS) {
        return Err(Error::UnsupportedVersion);
    }
    let len = r.u32()? as usize;
    if bytes.len() < len {
        return Err(Error::Truncated);
    }
    if bytes.len() > len {
        return Err(Error::TrailingBytes);
    }
    let (body, crc) = bytes.split_at(len - 4);
    if crc32(body).to_le_bytes() != crc {
        return Err(Error::ChecksumMismatch);
    }
    let mut found = [len as u32, 0, 0, 0, 0, 0, 0, 0, 0];
    for f in &mut found[1..] {
        *f = r.u32()?;
    }
    // Another number of copies shows in the header (the length); only a
    // checkpoint of these copies in the other format is then left.
    if found != expected.fields() {
        return Err(Error::ShapeMismatch);
    }
    if version != u32::from(self::version(copies)) {
        return Err(Error::UnsupportedVersion);
    }
    Ok(r)
}

fn write_rng<R: RngState>(w: &mut Writer<'_>, rng: &R) {
    const { assert!(R::WORDS <= MAX_RNG_WORDS, "RngState::WORDS > MAX_RNG_WORDS") };
    let mut words = [0u32; MAX_RNG_WORDS];
    rng.save_state(&mut words[..R::WORDS]);
    for &x in &words[..R::WORDS] {
        w.u32(x);
    }
}

fn read_rng<R: RngState>(r: &mut Reader<'_>) -> Result<R, Error> {
    const { assert!(R::WORDS <= MAX_RNG_WORDS, "RngState::WORDS > MAX_RNG_WORDS") };
    let mut words = [0u32; MAX_RNG_WORDS];
    for x in &mut words[..R::WORDS] {
        *x = r.u32()?;
    }
    R::from_state(&words[..R::WORDS])
}

const fn eval_kind_code(kind: EvalKind) -> u32 {
    match kind {
        EvalKind::Quick => 0,
        EvalKind::Select => 1,
        EvalKind::Report => 2,
    }
}

impl<const OBS: usize, R: Rng + RngState> Trainer<SVector<f32, OBS>, R> {
    /// [`checkpoint_len`] for this trainer's RNG: the buffer
    /// [`save`](Self::save) needs.
    pub const fn checkpoint_len<L: AgentState, E: EnvState>() -> usize {
        checkpoint_len::<L, E, R>()
    }

    /// [`checkpoint_len_envs`] for this trainer's RNG: the buffer
    /// [`save_envs`](Self::save_envs) needs.
    pub const fn checkpoint_len_envs<L: AgentState, E: EnvState, const MAX_ENVS: usize>() -> usize {
        checkpoint_len_envs::<L, E, R, MAX_ENVS>()
    }

    /// Writes a checkpoint of the run — this trainer, `agent` and the
    /// training environment `env` — into the start of `out`; returns the
    /// number of bytes written ([`checkpoint_len`]). Call it between
    /// [`iterate`](Self::iterate) calls (see the [module docs](self)).
    ///
    /// # Errors
    /// [`Error::BufferTooSmall`] if `out` is shorter than
    /// [`checkpoint_len`]; [`Error::MidIteration`] if a PPO rollout awaits
    /// its update; [`Error::NonFinite`]/[`Error::OutOfDomain`] for a value a
    /// resume would refuse. Nothing is written on error.
    pub fn save<L, E>(&self, agent: &L, env: &E, out: &mut [u8]) -> Result<usize, Error>
    where
        L: Learner<E> + AgentState,
        E: Env<Obs = SVector<f32, OBS>> + EnvState,
    {
        self.save_copies(
            agent,
            core::slice::from_ref(&self.cursor),
            core::slice::from_ref(env),
            out,
        )
    }

    /// [`save`](Self::save) for a run over environment copies
    /// ([`run_envs`](Self::run_envs)): the checkpoint holds all `MAX_ENVS`
    /// copies of `envs` and their cursors (in use or not) in place of the
    /// trainer's own cursor and environment; its size is
    /// [`checkpoint_len_envs`]. With `MAX_ENVS = 1` it is the checkpoint
    /// [`save`](Self::save) writes for that copy and cursor, byte for byte.
    ///
    /// # Errors
    /// As [`save`](Self::save). Nothing is written on error.
    pub fn save_envs<L, E, const MAX_ENVS: usize>(
        &self,
        agent: &L,
        envs: &VecEnv<E, MAX_ENVS>,
        out: &mut [u8],
    ) -> Result<usize, Error>
    where
        L: Learner<E> + AgentState,
        E: Env<Obs = SVector<f32, OBS>> + EnvState,
    {
        self.save_copies(agent, &envs.cursors, &envs.envs, out)
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
        w.bytes(&0u16.to_le_bytes());
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
    /// statistics may be anything, e.g. `ZERO`) and the training environment
    /// `env`, and returns the trainer. Continuing with
    /// [`iterate`](Self::iterate)/[`run`](Self::run) then reproduces the
    /// uninterrupted run bit for bit.
    ///
    /// # Errors
    /// In the order checked: [`Error::Truncated`], [`Error::BadMagic`],
    /// [`Error::UnsupportedVersion`], [`Error::TrailingBytes`],
    /// [`Error::ChecksumMismatch`], [`Error::ShapeMismatch`] (a checkpoint of
    /// another agent, network, environment or RNG), then
    /// [`Error::InvalidConfig`], [`Error::NonFinite`], [`Error::OutOfDomain`]
    /// or [`Error::InvalidState`] for a value out of range. `agent` and
    /// `env` are unchanged on error.
    pub fn resume<L, E>(agent: &mut L, env: &mut E, bytes: &[u8]) -> Result<Self, Error>
    where
        L: Learner<E> + AgentState,
        E: Env<Obs = SVector<f32, OBS>> + EnvState,
    {
        let mut cursor = [Cursor::idle()];
        let mut trainer =
            Self::resume_copies(agent, core::slice::from_mut(env), &mut cursor, bytes)?;
        let [cursor] = cursor;
        trainer.cursor = cursor;
        Ok(trainer)
    }

    /// [`resume`](Self::resume) of a checkpoint written by
    /// [`save_envs`](Self::save_envs): restores `agent` (whose `config`
    /// must be the run's) and every copy and cursor of `envs`, and puts the
    /// agent's [`n_envs`](Learner::n_envs) copies in use. Continuing with
    /// [`run_envs`](Self::run_envs) reproduces the uninterrupted run bit for
    /// bit.
    ///
    /// # Errors
    /// As [`resume`](Self::resume) (a checkpoint of another `MAX_ENVS` is a
    /// [`Error::ShapeMismatch`]), and [`Error::InvalidConfig`] naming
    /// `n_envs` when the agent needs more than `MAX_ENVS` copies. `agent`
    /// and `envs` are unchanged on error.
    pub fn resume_envs<L, E, const MAX_ENVS: usize>(
        agent: &mut L,
        envs: &mut VecEnv<E, MAX_ENVS>,
        bytes: &[u8],
    ) -> Result<Self, Error>
    where
        L: Learner<E> + AgentState,
        E: Env<Obs = SVector<f32, OBS>> + EnvState,
    {
        let n_envs = agent.n_envs();
        VecEnv::<E, MAX_ENVS>::check(n_envs)?;
        let mut cursors: [Cursor<SVector<f32, OBS>>; MAX_ENVS] =
            core::array::from_fn(|_| Cursor::idle());
        let trainer = Self::resume_copies(agent, &mut envs.envs, &mut cursors, bytes)?;
        envs.cursors = cursors;
        envs.set_n_envs(n_envs);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent;
    use crate::algo::{AcConfig, PpoConfig, ReinforceConfig};
    use crate::env::{CartPole, CartPoleContinuous, Pendulum};
    use crate::rng::Xoshiro128pp;
    use crate::train::Outcome;
    use std::boxed::Box;
    use std::vec;
    use std::vec::Vec;

    type PpoAgent = agent::Ppo<CartPole, 8, 64>;
    type AcAgent = agent::ActorCritic<CartPole, 8>;
    type ReinforceAgent = agent::Reinforce<CartPole, 8, 512>;
    type T = Trainer<SVector<f32, 4>, Xoshiro128pp>;

    /// FNV-1a over the bits of every scalar of `p`.
    fn digest<P: Params>(h: &mut u64, p: &P) {
        for i in 0..P::TENSORS {
            for &x in p.tensor(i) {
                for b in x.to_bits().to_le_bytes() {
                    *h = (*h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
                }
            }
        }
    }

    fn digest_train<P: Params>(h: &mut u64, s: &TrainState<P>) {
        digest(h, &s.params);
        digest(h, &s.optimizer.m);
        digest(h, &s.optimizer.v);
        *h ^= u64::from(s.optimizer.t).wrapping_mul(0x9e37_79b9);
    }

    /// Everything a checkpoint restores, hashed.
    trait Digest {
        fn digest(&self) -> u64;
    }

    impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize, const CHUNK: usize> Digest
        for Ppo<A, C, OBS, N, CHUNK>
    {
        fn digest(&self) -> u64 {
            let mut h = 0xcbf2_9ce4_8422_2325;
            digest_train(&mut h, &self.train);
            digest(&mut h, &self.space);
            digest(&mut h, &self.obs_norm);
            digest(&mut h, &self.return_norm);
            h ^= u64::from(self.discounted_return.to_bits()) << 7;
            h ^= u64::from(self.kl_coef.to_bits()) << 23;
            h ^ self.steps.rotate_left(17)
        }
    }

    impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> Digest
        for Anchored<A, C, OBS, N>
    {
        fn digest(&self) -> u64 {
            let mut h = self.ppo.digest();
            digest(&mut h, &self.reference);
            h ^ (u64::from(self.kl_coef.to_bits()) << 29)
        }
    }

    impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> Digest
        for Reinforce<A, C, OBS, N>
    {
        fn digest(&self) -> u64 {
            self.inner.digest()
        }
    }

    impl<A: Actor<OBS>, C: Critic<OBS>, const OBS: usize, const N: usize> Digest
        for Trpo<A, C, OBS, N>
    {
        fn digest(&self) -> u64 {
            self.inner.digest()
        }
    }

    impl<A: Actor<OBS>, const OBS: usize, const N: usize, const CHUNK: usize> Digest
        for Grpo<A, OBS, N, CHUNK>
    {
        fn digest(&self) -> u64 {
            let mut h = 0xcbf2_9ce4_8422_2325;
            digest_train(&mut h, &self.train);
            digest(&mut h, &self.space);
            digest(&mut h, &self.obs_norm);
            h ^ self.steps.rotate_left(17)
        }
    }

    impl<A: Actor<OBS>, C: Network<OBS, 1>, const OBS: usize> Digest for ActorCritic<A, C, OBS> {
        fn digest(&self) -> u64 {
            let mut h = 0xcbf2_9ce4_8422_2325;
            digest_train(&mut h, &self.actor);
            digest_train(&mut h, &self.critic);
            digest(&mut h, &self.space);
            digest(&mut h, &self.obs_norm);
            h ^ self.steps.rotate_left(17)
        }
    }

    fn run_config(total_steps: u64, eval_interval: u64, threshold: f32) -> RunConfig {
        RunConfig {
            eval_interval,
            solved_eval_interval: eval_interval,
            quick_episodes: 2,
            select_episodes: 3,
            report_episodes: 4,
            // A threshold a young policy passes, so the checkpoints after
            // it carry `solved_at_step` and the selection; no early stop, so
            // the run goes on to the budget. A margin of one standard error
            // (not the default's three) over only 4 deciding episodes.
            select_margin: 1.0,
            early_stop: false,
            ..RunConfig::new(total_steps, threshold)
        }
    }

    /// Runs `fresh()` to the end uninterrupted, and again with a checkpoint
    /// after each of `stops` iterations, resumed into a fresh agent,
    /// environment and trainer: the final agent state (digest), the final
    /// training environment state and the outcome must be bit-identical.
    fn resume_is_bit_identical<L, E, const OBS: usize>(
        fresh: impl Fn() -> Box<L>,
        config: RunConfig,
        stops: &[u64],
    ) where
        L: Learner<E> + AgentState + Digest,
        E: Env<Obs = SVector<f32, OBS>> + EnvState + Default + Copy + PartialEq + core::fmt::Debug,
    {
        let reference = {
            let mut agent = fresh();
            let (mut env, mut eval_env) = (E::default(), E::default());
            let mut trainer =
                Trainer::<SVector<f32, OBS>, Xoshiro128pp>::start(&mut *agent, &mut env, config, 7)
                    .unwrap();
            let outcome = trainer
                .run(&mut *agent, &mut env, &mut eval_env, &mut ())
                .unwrap();
            (agent.digest(), outcome, env)
        };
        assert!(
            reference.1.solved_at_step.is_some(),
            "the run should pass its (low) threshold: {:?}",
            reference.1
        );
        let mut buf =
            vec![0u8; Trainer::<SVector<f32, OBS>, Xoshiro128pp>::checkpoint_len::<L, E>()];
        for &stop in stops {
            let mut agent = fresh();
            let (mut env, mut eval_env) = (E::default(), E::default());
            let mut trainer =
                Trainer::<SVector<f32, OBS>, Xoshiro128pp>::start(&mut *agent, &mut env, config, 7)
                    .unwrap();
            for _ in 0..stop {
                trainer
                    .iterate(&mut *agent, &mut env, &mut eval_env, &mut ())
                    .unwrap();
            }
            assert_eq!(trainer.save(&*agent, &env, &mut buf), Ok(buf.len()));
            let saved = (agent.digest(), env, trainer);

            let mut agent = fresh();
            let (mut env, mut eval_env) = (E::default(), E::default());
            let mut trainer =
                Trainer::<SVector<f32, OBS>, Xoshiro128pp>::resume(&mut *agent, &mut env, &buf)
                    .unwrap();
            // Restored as saved, field by field ...
            assert_eq!(agent.digest(), saved.0);
            assert_eq!(env, saved.1);
            let t = &saved.2;
            assert_eq!(trainer.cursor, t.cursor);
            assert_eq!(trainer.config, t.config);
            assert_eq!((trainer.episodes, trainer.updates), (t.episodes, t.updates));
            assert_eq!(
                (trainer.solved_at_step, trainer.selection),
                (t.solved_at_step, t.selection)
            );
            assert_eq!(trainer.next_eval, t.next_eval);
            assert_eq!(
                (&trainer.rng, &trainer.select_rng, &trainer.report_rng),
                (&t.rng, &t.select_rng, &t.report_rng)
            );
            // ... and the rest of the run is the uninterrupted run's.
            let outcome: Outcome = trainer
                .run(&mut *agent, &mut env, &mut eval_env, &mut ())
                .unwrap();
            assert_eq!(outcome, reference.1, "outcome after resuming at {stop}");
            assert_eq!(
                agent.digest(),
                reference.0,
                "agent after resuming at {stop}"
            );
            assert_eq!(env, reference.2, "environment after resuming at {stop}");
        }
    }

    #[test]
    fn ppo_resumes_bit_identically() {
        let config = PpoConfig {
            total_steps: 2_048,
            normalize_obs: true,
            normalize_reward: true,
            ..PpoConfig::CARTPOLE
        };
        resume_is_bit_identical::<_, CartPole, 4>(
            || Box::new(PpoAgent::new(config)),
            run_config(2_048, 256, 12.0),
            &[1, 3, 7, 20],
        );
    }

    const MAX: usize = 4;
    type Envs = VecEnv<CartPole, MAX>;

    /// PPO with `config` over 3 environment copies (of a `VecEnv` of 4: one
    /// spare) stopped after 1, 3, 7 and 20 iterations, saved, resumed into
    /// a fresh agent, fresh copies and a fresh trainer: the rest of the run
    /// ends bit-identical to the uninterrupted one — agent, every copy,
    /// every cursor (its discounted return included), outcome. Returns the
    /// last checkpoint and a fresh agent, copies and evaluation copy.
    fn copies_resume_bit_identically(
        config: PpoConfig,
    ) -> (Vec<u8>, impl Fn() -> (Box<PpoAgent>, Envs, CartPole)) {
        let run = run_config(2_016, 240, 12.0);
        let fresh = move || {
            (
                Box::new(PpoAgent::new(config)),
                Envs::new([CartPole::new(); MAX]),
                CartPole::new(),
            )
        };
        let reference = {
            let (mut agent, mut envs, mut eval_env) = fresh();
            let mut trainer = T::start_envs(&mut *agent, &mut envs, run, 7).unwrap();
            let outcome = trainer
                .run_envs(&mut *agent, &mut envs, &mut eval_env, &mut ())
                .unwrap();
            (agent.digest(), outcome, envs)
        };
        assert!(reference.1.solved_at_step.is_some(), "{:?}", reference.1);
        assert_eq!(reference.1.steps, 2_016);
        // The three copies ran their own episodes.
        let r = &reference.2;
        assert!(r.cursors[..3].iter().all(|c| c.steps == 2_016 / 3));
        assert!(r.envs[0] != r.envs[1] && r.envs[1] != r.envs[2]);
        let mut buf = vec![0u8; T::checkpoint_len_envs::<PpoAgent, CartPole, MAX>()];
        for stop in [1, 3, 7, 20] {
            let (mut agent, mut envs, mut eval_env) = fresh();
            let mut trainer = T::start_envs(&mut *agent, &mut envs, run, 7).unwrap();
            for _ in 0..stop {
                trainer
                    .iterate_envs(&mut *agent, &mut envs, &mut eval_env, &mut ())
                    .unwrap();
            }
            assert_eq!(trainer.save_envs(&*agent, &envs, &mut buf), Ok(buf.len()));
            let saved = (agent.digest(), envs.clone());
            // Mid-episode copies carry a discounted return exactly when
            // rewards are scaled.
            let returns = saved.1.cursors.each_ref().map(|c| c.discounted_return);
            assert_eq!(
                returns[..3].iter().any(|&g| g != 0.0),
                config.normalize_reward,
                "{returns:?}"
            );

            let (mut agent, mut envs, mut eval_env) = fresh();
            let mut trainer = T::resume_envs(&mut *agent, &mut envs, &buf).unwrap();
            assert_eq!(agent.digest(), saved.0);
            assert_eq!((envs.envs, &envs.cursors), (saved.1.envs, &saved.1.cursors));
            assert_eq!(envs.n_envs(), 3);
            let outcome = trainer
                .run_envs(&mut *agent, &mut envs, &mut eval_env, &mut ())
                .unwrap();
            assert_eq!(outcome, reference.1, "outcome after resuming at {stop}");
            assert_eq!(
                agent.digest(),
                reference.0,
                "agent after resuming at {stop}"
            );
            assert_eq!(
                envs.envs, reference.2.envs,
                "copies after resuming at {stop}"
            );
            assert_eq!(
                envs.cursors, reference.2.cursors,
                "cursors after resuming at {stop}"
            );
        }
        (buf, fresh)
    }

    /// With reward scaling each copy's discounted return resumes with its
    /// cursor (format `VERSION_ENVS`; the same checkpoint as format
    /// `VERSION` is refused).
    #[test]
    fn ppo_over_environment_copies_with_reward_scaling_resumes_bit_identically() {
        let config = PpoConfig {
            total_steps: 2_016,
            n_envs: 3,
            n_steps: 16,
            normalize_reward: true,
            ..PpoConfig::CARTPOLE
        };
        let (mut buf, fresh) = copies_resume_bit_identically(config);
        assert_eq!(buf[4..6], VERSION_ENVS.to_le_bytes());
        buf[4..6].copy_from_slice(&VERSION.to_le_bytes());
        recrc(&mut buf);
        let (mut agent, mut envs, _) = fresh();
        assert_eq!(
            T::resume_envs(&mut *agent, &mut envs, &buf).err(),
            Some(Error::UnsupportedVersion)
        );
    }

    /// Copies without reward scaling resume bit for bit too, and a refused
    /// resume changes nothing.
    #[test]
    fn ppo_over_environment_copies_resumes_bit_identically() {
        let config = PpoConfig {
            total_steps: 2_016,
            n_envs: 3,
            n_steps: 16,
            ..PpoConfig::CARTPOLE
        };
        let (buf, fresh) = copies_resume_bit_identically(config);
        // Refused without change: another number of copies, and a copy's
        // state it cannot be in (the last copy's, after the others have
        // been checked).
        let (mut agent, _, _) = fresh();
        let before = agent.digest();
        // Several copies into one environment, and one environment's
        // checkpoint into several copies: another shape, not another format.
        let mut single = CartPole::new();
        assert_eq!(
            T::resume(&mut *agent, &mut single, &buf).err(),
            Some(Error::ShapeMismatch)
        );
        let mut one = Box::new(PpoAgent::new(PpoConfig::CARTPOLE));
        let mut env = CartPole::new();
        let mut trainer = T::start(&mut *one, &mut env, run_config(1_024, 64, 12.0), 3).unwrap();
        trainer
            .iterate(&mut *one, &mut env, &mut CartPole::new(), &mut ())
            .unwrap();
        let mut single_buf = vec![0u8; T::checkpoint_len::<PpoAgent, CartPole>()];
        assert_eq!(
            trainer.save(&*one, &env, &mut single_buf),
            Ok(single_buf.len())
        );
        assert_eq!(single_buf[4..6], VERSION.to_le_bytes());
        let mut copies = Envs::new([CartPole::new(); MAX]);
        assert_eq!(
            T::resume_envs(&mut *one, &mut copies, &single_buf).err(),
            Some(Error::ShapeMismatch)
        );
        let mut three = VecEnv::new([CartPole::new(); 3]);
        assert_eq!(
            T::resume_envs(&mut *agent, &mut three, &buf).err(),
            Some(Error::ShapeMismatch)
        );
        let mut two = VecEnv::new([CartPole::new(); 2]);
        assert!(matches!(
            T::resume_envs(&mut *agent, &mut two, &buf),
            Err(Error::InvalidConfig {
                field: "n_envs",
                ..
            })
        ));
        let mut bad = buf.clone();
        let last_copy = bad.len() - 4 - 8 * CartPole::WORDS;
        bad[last_copy..last_copy + 8].copy_from_slice(&f64::NAN.to_bits().to_le_bytes());
        recrc(&mut bad);
        let mut envs = Envs::new([CartPole::new(); MAX]);
        assert!(T::resume_envs(&mut *agent, &mut envs, &bad).is_err());
        assert_eq!(agent.digest(), before);
        assert!(envs.envs.iter().all(|e| *e == CartPole::new()));
        assert!(envs.cursors.iter().all(|c| *c == Cursor::idle()));
        assert_eq!(envs.n_envs(), 0);
    }

    /// PPO-penalty: the adaptive KL coefficient is state that must resume.
    #[test]
    fn ppo_penalty_resumes_bit_identically() {
        let config = PpoConfig {
            total_steps: 2_048,
            clip_range: crate::optim::Schedule::Constant(f32::INFINITY),
            kl_coef: 1.0,
            kl_target: Some(0.01),
            ..PpoConfig::CARTPOLE
        };
        resume_is_bit_identical::<_, CartPole, 4>(
            || Box::new(PpoAgent::new(config)),
            run_config(2_048, 256, 12.0),
            &[1, 3, 6],
        );
        // β moved during those iterations (otherwise this checks nothing new).
        let mut agent = Box::new(PpoAgent::new(config));
        let mut env = CartPole::new();
        let mut rng = <crate::rng::Xoshiro128pp as rand_core::SeedableRng>::seed_from_u64(5);
        agent.init(&env, &mut rng).unwrap();
        let mut cursor = crate::algo::Cursor::start(&mut env, &mut rng);
        for _ in 0..3 {
            agent
                .collect(&mut env, &mut cursor, &mut rng, |_| {})
                .unwrap();
            agent.update(&mut rng).unwrap();
        }
        assert_ne!(agent.kl_coef, 1.0);
    }

    /// KL-anchored PPO: the reference policy and the adapted `β` resume too
    /// (the fresh agent's reference is zero: it can only come back from the
    /// checkpoint).
    #[test]
    fn anchored_ppo_resumes_bit_identically() {
        use crate::algo::AnchorConfig;
        type Anchored = agent::Anchored<CartPole, 8, 64>;
        let config = PpoConfig {
            total_steps: 2_048,
            ..PpoConfig::CARTPOLE
        };
        // A reference: a freshly initialised policy of the same shape.
        let mut reference = <crate::Deployed<Anchored> as Params>::ZERO;
        {
            let mut ppo = Box::new(PpoAgent::new(config));
            let mut rng = <Xoshiro128pp as rand_core::SeedableRng>::seed_from_u64(9);
            ppo.init(&CartPole::new(), &mut rng).unwrap();
            ppo.export(&mut reference);
        }
        let fresh = |with_reference: bool| {
            let mut a = Box::new(Anchored::ZERO);
            a.ppo.config = config;
            a.anchor = AnchorConfig {
                kl_coef: 0.5,
                kl_target: Some(0.002),
            };
            if with_reference {
                a.reference.copy_from(&reference);
            }
            a
        };
        // The uninterrupted run and the runs that are stopped start from the
        // reference; resumed ones get it from the checkpoint only.
        let started = std::cell::Cell::new(0u32);
        resume_is_bit_identical::<_, CartPole, 4>(
            || {
                started.set(started.get() + 1);
                // Calls alternate: the reference run, then (stopped, resumed) pairs.
                fresh(started.get() == 1 || started.get().is_multiple_of(2))
            },
            run_config(2_048, 256, 12.0),
            &[1, 4],
        );
    }

    /// Continuous actions: a Gaussian actor (its `log_std` saved and
    /// checked against its domain) and actuator bounds, on the pendulum.
    #[test]
    fn ppo_on_pendulum_resumes_bit_identically() {
        let config = PpoConfig {
            total_steps: 1_024,
            normalize_reward: true,
            ..PpoConfig::DEFAULT
        };
        resume_is_bit_identical::<_, Pendulum, 3>(
            || Box::new(agent::Ppo::<Pendulum, 8, 64>::new(config)),
            run_config(1_024, 256, -2_000.0),
            &[1, 5, 9],
        );
    }

    #[test]
    fn actor_critic_resumes_bit_identically() {
        let config = AcConfig {
            total_steps: 3_000,
            ..AcConfig::DEFAULT
        };
        resume_is_bit_identical::<_, CartPole, 4>(
            || Box::new(AcAgent::new(config)),
            run_config(3_000, 500, 12.0),
            &[1, 3, 7, 777, 1_500],
        );
    }

    /// TRPO: the natural-gradient step and the critic's Adam resume (the
    /// CG vectors and `θ_old` are rebuilt by every update).
    #[test]
    fn trpo_resumes_bit_identically() {
        let config = crate::algo::TrpoConfig {
            total_steps: 2_048,
            critic_minibatches: 4,
            ..crate::algo::TrpoConfig::DEFAULT
        };
        resume_is_bit_identical::<_, CartPole, 4>(
            || Box::new(agent::Trpo::<CartPole, 8, 256>::new(config)),
            run_config(2_048, 256, 12.0),
            &[1, 3, 6],
        );
    }

    /// GRPO: the actor with Adam, the normaliser and the step count.
    #[test]
    fn grpo_resumes_bit_identically() {
        let config = crate::algo::GrpoConfig {
            total_steps: 3_000,
            ..crate::algo::GrpoConfig::DEFAULT
        };
        resume_is_bit_identical::<_, CartPole, 4>(
            || Box::new(agent::Grpo::<CartPole, 8, 1024>::new(config)),
            run_config(3_000, 200, 12.0),
            &[1, 3, 6],
        );
    }

    #[test]
    fn reinforce_resumes_bit_identically() {
        let config = ReinforceConfig {
            total_steps: 3_000,
            ..ReinforceConfig::default()
        };
        resume_is_bit_identical::<_, CartPole, 4>(
            || Box::new(ReinforceAgent::new(config)),
            run_config(3_000, 500, 12.0),
            &[1, 3, 7],
        );
    }

    /// A PPO run on CartPole stopped after 3 iterations, checkpointed.
    fn saved_ppo() -> (Box<PpoAgent>, CartPole, T, Vec<u8>) {
        let config = PpoConfig {
            total_steps: 1_024,
            normalize_reward: true,
            ..PpoConfig::CARTPOLE
        };
        let mut agent = Box::new(PpoAgent::new(config));
        let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
        let mut trainer = T::start(&mut *agent, &mut env, run_config(1_024, 64, 12.0), 3).unwrap();
        for _ in 0..3 {
            trainer
                .iterate(&mut *agent, &mut env, &mut eval_env, &mut ())
                .unwrap();
        }
        let mut buf = vec![0u8; checkpoint_len::<PpoAgent, CartPole, Xoshiro128pp>()];
        trainer.save(&*agent, &env, &mut buf).unwrap();
        (agent, env, trainer, buf)
    }

    /// A destination with a state of its own (another seed), to check that
    /// a refused resume leaves it untouched.
    fn destination() -> (Box<PpoAgent>, CartPole) {
        let (agent, env, ..) = {
            let config = PpoConfig {
                total_steps: 1_024,
                ..PpoConfig::CARTPOLE
            };
            let mut agent = Box::new(PpoAgent::new(config));
            let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
            let mut trainer =
                T::start(&mut *agent, &mut env, run_config(1_024, 64, 12.0), 99).unwrap();
            trainer
                .iterate(&mut *agent, &mut env, &mut eval_env, &mut ())
                .unwrap();
            (agent, env, trainer)
        };
        (agent, env)
    }

    fn refused(bytes: &[u8]) -> Error {
        let (mut agent, mut env) = destination();
        let (before, env_before) = (agent.digest(), env);
        let err = T::resume(&mut *agent, &mut env, bytes).unwrap_err();
        assert_eq!(
            agent.digest(),
            before,
            "agent changed by a refused resume ({err:?})"
        );
        assert_eq!(env, env_before, "env changed by a refused resume ({err:?})");
        err
    }

    /// Rewrites the CRC after a deliberate edit (to reach the checks after it).
    fn recrc(bytes: &mut [u8]) {
        let n = bytes.len();
        let crc = crc32(&bytes[..n - 4]);
        bytes[n - 4..].copy_from_slice(&crc.to_le_bytes());
    }

    /// Formats 2 and 3 (before the run configuration held the deciding
    /// margin) are refused, and so is a margin the configuration forbids.
    #[test]
    fn older_formats_and_a_negative_margin_are_refused() {
        let (_, _, _, buf) = saved_ppo();
        for old in [2u16, 3] {
            let mut bad = buf.clone();
            bad[4..6].copy_from_slice(&old.to_le_bytes());
            recrc(&mut bad);
            assert_eq!(refused(&bad), Error::UnsupportedVersion, "format {old}");
        }
        // The margin follows total_steps, threshold, both intervals, the
        // quick and the deciding episodes.
        let margin_at = HEADER_LEN + 8 + 4 + 8 + 8 + 4 + 4;
        assert_eq!(buf[margin_at..margin_at + 4], 1.0f32.to_le_bytes());
        let mut bad = buf.clone();
        bad[margin_at..margin_at + 4].copy_from_slice(&(-1.0f32).to_le_bytes());
        recrc(&mut bad);
        assert_eq!(
            refused(&bad),
            Error::config("select_margin", "must be finite and >= 0")
        );
    }

    #[test]
    fn damaged_checkpoints_are_refused_without_change() {
        let (_, _, _, buf) = saved_ppo();
        // Every single-byte corruption.
        for i in 0..buf.len() {
            let mut bad = buf.clone();
            bad[i] ^= 0x5a;
            let err = refused(&bad);
            assert!(
                matches!(
                    err,
                    Error::BadMagic
                        | Error::UnsupportedVersion
                        | Error::ChecksumMismatch
                        | Error::Truncated
                        | Error::TrailingBytes
                ),
                "byte {i}: {err:?}"
            );
        }
        // Every truncation, and a trailing byte.
        for n in [
            0,
            3,
            10,
            HEADER_LEN,
            HEADER_LEN + 4,
            buf.len() / 2,
            buf.len() - 1,
        ] {
            assert_eq!(refused(&buf[..n]), Error::Truncated, "length {n}");
        }
        let mut long = buf.clone();
        long.push(0);
        assert_eq!(refused(&long), Error::TrailingBytes);
        // Values out of range behind a valid CRC.
        let mut bad = buf.clone();
        let env_at = buf.len() - 4 - 8 * CartPole::WORDS;
        bad[env_at + 8 * 4..env_at + 8 * 5].copy_from_slice(&0.5f64.to_le_bytes());
        recrc(&mut bad);
        assert!(matches!(refused(&bad), Error::InvalidState { .. }));
        let mut bad = buf.clone();
        let agent_at = HEADER_LEN + trainer_len(4, 4);
        bad[agent_at..agent_at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
        recrc(&mut bad);
        assert_eq!(refused(&bad), Error::NonFinite);
        let mut bad = buf.clone();
        let rng_at = HEADER_LEN + trainer_len(4, 4) - 48;
        bad[rng_at..rng_at + 16].fill(0);
        recrc(&mut bad);
        assert!(matches!(refused(&bad), Error::InvalidState { .. }));
        // The env's refusal comes after every agent check, and still changes
        // nothing; the undamaged checkpoint is accepted by the same destination.
        let (mut agent, mut env) = destination();
        assert!(T::resume(&mut *agent, &mut env, &buf).is_ok());
    }

    #[test]
    fn checkpoints_of_other_types_are_refused() {
        let (_, _, _, buf) = saved_ppo();
        // Another hidden size, another algorithm, another RNG word count.
        let mut wider = Box::new(agent::Ppo::<CartPole, 16, 64>::new(PpoConfig::CARTPOLE));
        let mut other_n = Box::new(agent::Ppo::<CartPole, 8, 128>::new(PpoConfig::CARTPOLE));
        let mut ac = Box::new(AcAgent::new(AcConfig::DEFAULT));
        let mut env = CartPole::new();
        assert_eq!(
            T::resume(&mut *wider, &mut env, &buf).unwrap_err(),
            Error::ShapeMismatch
        );
        assert_eq!(
            T::resume(&mut *other_n, &mut env, &buf).unwrap_err(),
            Error::ShapeMismatch
        );
        assert_eq!(
            T::resume(&mut *ac, &mut env, &buf).unwrap_err(),
            Error::ShapeMismatch
        );
        assert_eq!(env, CartPole::new());
        // Same agent layout, another environment (tag in the header).
        let mut bad = buf.clone();
        bad[28..32].copy_from_slice(&Pendulum::TAG.to_le_bytes());
        recrc(&mut bad);
        assert_eq!(refused(&bad), Error::ShapeMismatch);
        // The header really separates lookalikes.
        assert_ne!(CartPole::TAG, CartPoleContinuous::TAG);
        assert_ne!(
            <agent::Ppo<CartPole, 8, 64> as AgentState>::fingerprint(),
            <agent::Ppo<CartPoleContinuous, 8, 64> as AgentState>::fingerprint()
        );
        // Another format's magic.
        let mut bad = buf.clone();
        bad[..4].copy_from_slice(b"MRLP");
        assert_eq!(refused(&bad), Error::BadMagic);
    }

    #[test]
    fn save_refuses_without_writing() {
        let (mut agent, mut env, trainer, buf) = saved_ppo();
        // Too small.
        let mut small = vec![0xeeu8; buf.len() - 1];
        assert_eq!(
            trainer.save(&*agent, &env, &mut small),
            Err(Error::BufferTooSmall)
        );
        assert!(small.iter().all(|&b| b == 0xee));
        // Mid-iteration: a collected rollout awaiting its update.
        let mut cursor = trainer.cursor.clone();
        let mut rng = trainer.rng.clone();
        agent
            .collect(&mut env, &mut cursor, &mut rng, |_| {})
            .unwrap();
        let mut out = vec![0xeeu8; buf.len() + 8];
        assert_eq!(
            trainer.save(&*agent, &env, &mut out),
            Err(Error::MidIteration)
        );
        assert!(out.iter().all(|&b| b == 0xee));
        // A non-finite value that a resume would refuse.
        agent.update(&mut rng).unwrap();
        agent.discounted_return = f32::NAN;
        assert_eq!(trainer.save(&*agent, &env, &mut out), Err(Error::NonFinite));
        assert!(out.iter().all(|&b| b == 0xee));
        agent.discounted_return = 0.0;
        assert_eq!(trainer.save(&*agent, &env, &mut out), Ok(buf.len()));
        assert_eq!(&out[buf.len()..], &[0xee; 8]);
    }

    #[test]
    fn new_errors_display() {
        use std::string::ToString;
        assert_eq!(
            Error::InvalidState { what: "flag" }.to_string(),
            "invalid saved state: flag"
        );
        assert!(Error::MidIteration.to_string().contains("mid-iteration"));
    }

    #[test]
    fn environments_round_trip_their_state() {
        fn round_trip<E: Env + EnvState + Clone + PartialEq + core::fmt::Debug>(
            mut env: E,
            action: crate::env::ActionOf<E>,
        ) {
            let mut rng = Xoshiro128pp::seed_from_u64(5);
            env.reset(&mut rng);
            for _ in 0..7 {
                env.step(action).unwrap();
            }
            let mut words = [0.0; MAX_ENV_WORDS];
            env.save_state(&mut words[..E::WORDS]);
            let mut copy = env.clone();
            copy.reset(&mut rng);
            copy.restore_state(&words[..E::WORDS]).unwrap();
            assert_eq!(copy, env);
            assert_eq!(copy.step(action).unwrap(), env.step(action).unwrap());
            let before = copy.clone();
            assert_eq!(
                copy.restore_state(&words[..E::WORDS - 1]),
                Err(Error::Truncated)
            );
            words[0] = f64::NAN;
            assert_eq!(
                copy.restore_state(&words[..E::WORDS]),
                Err(Error::NonFinite)
            );
            assert_eq!(copy, before);
        }
        use rand_core::SeedableRng;
        round_trip(CartPole::new(), 1);
        round_trip(CartPoleContinuous::new(), SVector::from([0.3]));
        round_trip(Pendulum::new(), SVector::from([0.7]));
        let mut env = CartPole::new();
        let mut words = [0.0; 6];
        words[4] = 1e10;
        assert!(matches!(
            env.restore_state(&words),
            Err(Error::InvalidState { .. })
        ));
        words[4] = 3.0;
        words[5] = 2.0;
        assert!(matches!(
            env.restore_state(&words),
            Err(Error::InvalidState { .. })
        ));
        assert_eq!(env, CartPole::new());
    }
}
