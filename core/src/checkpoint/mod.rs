//! Checkpoints: the complete state of a training run at an iteration
//! boundary, in a checksummed binary format, so that a run interrupted (a
//! power cut on the MCU, a killed job on the desktop) resumes **bit for bit**
//! as if it had never stopped.
//!
//! Design:
//! - **Everything a future step reads, nothing else.** A checkpoint holds
//!   the agent ([`AgentState`]: weights, Adam's `m`, `v` and step `t` of every
//!   [`TrainState`](crate::optim::TrainState), the action space, the observation and return
//!   normalisers, the running discounted return of a single environment
//!   and the step counter), the
//!   [`Trainer`](crate::train::Trainer) (its [`RunConfig`](crate::train::RunConfig), the [`Cursor`](crate::algo::Cursor) into the training episode,
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
//! - **Caller-owned bytes, no allocation.** [`Trainer::save`](crate::train::Trainer::save) writes into a
//!   `&mut [u8]` of at least [`checkpoint_len`] bytes (a `const fn`, so the
//!   buffer can be a `static` array or a flash sector); [`Trainer::resume`](crate::train::Trainer::resume)
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
//! | 6 | 2 | maths backend ([`MathBackend::code`](crate::math::MathBackend::code): 0 `fast-math`, 1 libm, 2 `micromath`; reserved and 0 before it existed) |
//! | 8 | 4 | total length in bytes, CRC included |
//! | 12 | 4 | agent kind ([`AgentState::KIND`]) |
//! | 16 | 4 | agent fingerprint ([`AgentState::fingerprint`]: every tensor's shape and kind, the rollout length) |
//! | 20 | 4 | agent section length in bytes ([`AgentState::LEN`]) |
//! | 24 | 4 | observation size |
//! | 28 | 4 | environment tag ([`EnvState::TAG`]) |
//! | 32 | 4 | environment words ([`EnvState::WORDS`], times the copies of a [`VecEnv`](crate::vec_env::VecEnv)) |
//! | 36 | 4 | RNG words per stream ([`RngState::WORDS`]) |
//! | 40 | 4 | trainer section length in bytes |
//! | 44 | … | trainer section: run configuration, cursor (one per copy; with more than one copy each also holds its copy's discounted return), counters, evaluation record, three RNG states |
//! | … | [`AgentState::LEN`] | agent section |
//! | … | 8·[`EnvState::WORDS`] per copy | environment section (`f64` words), copy by copy |
//! | end − 4 | 4 | CRC-32 ([`crc32`]) of every preceding byte |
//!
//! A run over `MAX_ENVS` environment copies ([`VecEnv`](crate::vec_env::VecEnv),
//! [`Trainer::save`](crate::train::Trainer::save)) saves every copy and its cursor in place of the
//! single environment and cursor: the same layout with `MAX_ENVS` of each,
//! so a one-copy checkpoint is the single-environment one byte for byte
//! (format [`VERSION`]), and a checkpoint of another number of copies is
//! refused as a [`Error::ShapeMismatch`]. With more than one copy each
//! cursor also carries its copy's running discounted return
//! ([`Cursor::discounted_return`](crate::algo::Cursor::discounted_return), after the step counter: reward scaling
//! keeps one per copy, as SB3's `VecNormalize`), and the format version is
//! [`VERSION_ENVS`] (the same checkpoint in format [`VERSION`], without
//! those returns, is refused as [`Error::UnsupportedVersion`]).
//!
//! Formats 2 (one copy) and 3 (copies), written before the run
//! configuration held [`RunConfig::select_margin`](crate::train::RunConfig::select_margin), are refused as
//! [`Error::UnsupportedVersion`]: resume such a run with the release that
//! wrote it.
//!
//! **The maths backend.** A checkpoint promises a resume bit for bit, which
//! only a build computing `exp`/`tanh` with the same backend can keep:
//! [`Trainer::save`](crate::train::Trainer::save) records
//! [`math::BACKEND`](crate::math::BACKEND) and
//! [`Trainer::resume`](crate::train::Trainer::resume) refuses a checkpoint of
//! another backend with [`Error::Backend`]`{ file, build }` (there is no
//! override: continue such a run with a build of the file's backend).
//! Checkpoints written before the field hold 0, which is `fast-math` — the
//! backend of the `microrl` CLI and the firmware, so theirs keep their bytes.
//!
//! [`Trainer::resume`](crate::train::Trainer::resume) checks, in order: magic, version and a known backend code, that the length is
//! the one the header announces ([`Error::Truncated`],
//! [`Error::TrailingBytes`]), the CRC, that every header field matches the
//! destination types ([`Error::ShapeMismatch`]: another agent, network size,
//! rollout length, environment or RNG), the maths backend
//! ([`Error::Backend`]), then every value: finite numbers,
//! tensors in their domain, a valid run and agent configuration, counters
//! and flags in range, a non-zero RNG state.

mod framing;
mod state;
#[cfg(test)]
mod tests;
mod trainer;

pub use framing::{Reader, Writer};
pub(crate) use state::fold;
pub use state::{AgentState, Field, Fields, fold_shapes};
pub(crate) use state::{agent_state, state_field};
#[cfg(test)]
pub(crate) use state::{field_bytes, state_bytes};

use crate::env::EnvState;
use crate::error::Error;
use crate::math::{BACKEND, MathBackend};
use crate::rng::RngState;
use crate::serialize::crc32;
use crate::train::Envs;
use crate::train::EvalKind;

/// Magic number at the start of every checkpoint.
pub const MAGIC: [u8; 4] = *b"MRLC";
/// Current format version of a checkpoint of one environment (a
/// single-environment run, or a [`VecEnv`](crate::vec_env::VecEnv) of one copy).
pub const VERSION: u16 = 4;
/// Current format version of a checkpoint of more than one environment
/// copy: format [`VERSION`] with one more field per cursor, its copy's
/// running discounted return ([`Cursor::discounted_return`](crate::algo::Cursor::discounted_return)).
pub const VERSION_ENVS: u16 = 5;

/// The format version of a checkpoint with `copies` environment copies.
const fn version(copies: usize) -> u16 {
    if copies > 1 { VERSION_ENVS } else { VERSION }
}
/// Size of the header.
pub const HEADER_LEN: usize = 44;
/// Largest [`EnvState::WORDS`] a checkpoint supports (the words pass
/// through a stack array of this many `f64`s).
pub const MAX_ENV_WORDS: usize = 48;
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

/// Size in bytes of the checkpoint of agent `L` training on `V` (one
/// environment, or a [`VecEnv<E, MAX_ENVS>`](crate::vec_env::VecEnv) whose
/// copies are all saved, in use or not) with RNG streams `R`. A `const fn`,
/// so a buffer can be declared as
/// `[u8; checkpoint_len::<Agent, CartPole, Xoshiro128pp>()]`. With
/// `MAX_ENVS = 1` it is the single environment's size, and the checkpoints
/// are the same bytes.
pub const fn checkpoint_len<L: AgentState, V: Envs, R: RngState>() -> usize
where
    V::Env: EnvState,
{
    copies_len::<L, V::Env, R>(V::COPIES)
}

/// The checkpoint's size with `copies` environment copies.
const fn copies_len<L: AgentState, E: EnvState, R: RngState>(copies: usize) -> usize {
    HEADER_LEN + trainer_len_copies(L::OBS, R::WORDS, copies) + L::LEN + copies * 8 * E::WORDS + 4
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

/// What a checkpoint's header says about the file itself, read without
/// the destination types ([`file_info`]), e.g. to describe a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FileInfo {
    /// Format version ([`VERSION`] or [`VERSION_ENVS`]).
    pub version: u16,
    /// The maths backend of the build that wrote it; resuming needs the
    /// same ([`Error::Backend`]).
    pub backend: MathBackend,
    /// Total length in bytes, CRC included.
    pub len: u32,
}

/// Checks a checkpoint's magic, version, backend code, length and CRC —
/// what [`Trainer::resume`](crate::train::Trainer::resume) checks first —
/// and returns them. Whether it fits an agent, environment and RNG, and
/// whether its backend is this build's, only `resume` says.
///
/// # Errors
/// [`Error::Truncated`], [`Error::BadMagic`], [`Error::UnsupportedVersion`]
/// (also for an unknown backend code), [`Error::TrailingBytes`],
/// [`Error::ChecksumMismatch`].
pub fn file_info(bytes: &[u8]) -> Result<FileInfo, Error> {
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
    let version = r.u16()?;
    let backend = MathBackend::from_code(r.u16()?);
    let (VERSION | VERSION_ENVS, Some(backend)) = (version, backend) else {
        return Err(Error::UnsupportedVersion);
    };
    let len = r.u32()?;
    if (bytes.len() as u64) < u64::from(len) {
        return Err(Error::Truncated);
    }
    if bytes.len() as u64 > u64::from(len) {
        return Err(Error::TrailingBytes);
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    if crc32(body).to_le_bytes() != crc {
        return Err(Error::ChecksumMismatch);
    }
    Ok(FileInfo {
        version,
        backend,
        len,
    })
}

/// Checks magic, version, length, CRC and that the header describes
/// `L`/`E`/`R`; returns a reader positioned at the trainer section.
fn verify<L: AgentState, E: EnvState, R: RngState>(
    bytes: &[u8],
    copies: usize,
) -> Result<Reader<'_>, Error> {
    let expected = Header::of::<L, E, R>(copies);
    let FileInfo {
        version,
        backend,
        len,
    } = file_info(bytes)?;
    let mut r = Reader {
        buf: bytes,
        pos: 12,
        commit: false,
    };
    let mut found = [len, 0, 0, 0, 0, 0, 0, 0, 0];
    for f in &mut found[1..] {
        *f = r.u32()?;
    }
    // Another number of copies shows in the header (the length); only a
    // checkpoint of these copies in the other format is then left.
    if found != expected.fields() {
        return Err(Error::ShapeMismatch);
    }
    if version != self::version(copies) {
        return Err(Error::UnsupportedVersion);
    }
    if backend != BACKEND {
        return Err(Error::Backend {
            file: backend,
            build: BACKEND,
        });
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
