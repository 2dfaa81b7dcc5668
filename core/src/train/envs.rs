//! [`Envs`]: where a run trains — one environment `E`, or copies of it in
//! a [`VecEnv`] — so that [`Trainer`](super::Trainer)'s start, iterate,
//! run, save and resume are one API for both.
//!
//! A single-environment user writes `Trainer::start(&mut agent, &mut env,
//! …)` and never meets `MAX_ENVS`; a user of copies passes `&mut vec_env`
//! to the same calls. The trait is sealed: its methods are the trainer's
//! plumbing (how to start the copies, step them, and lay them out in a
//! checkpoint), implemented here for exactly these two cases. With one
//! copy in a `VecEnv` a run is the single-environment run bit for bit.

use nalgebra::SVector;
use rand_core::Rng;

use super::Learner;
use crate::algo::{Cursor, Episode};
use crate::env::Env;
use crate::error::Error;
use crate::vec_env::VecEnv;

mod sealed {
    pub trait Sealed {}
    impl<E: crate::env::Env> Sealed for E {}
    impl<E: crate::env::Env, const MAX_ENVS: usize> Sealed for crate::vec_env::VecEnv<E, MAX_ENVS> {}
}

/// The cursor into an episode of `V`'s environment.
pub type CursorOf<V> = Cursor<<<V as Envs>::Env as Env>::Obs>;

/// The training side of a run: an environment `E` itself, or a
/// [`VecEnv<E, MAX_ENVS>`](VecEnv) of copies — so that
/// [`Trainer`](super::Trainer)'s start, iterate, run, save and resume are
/// one API for both.
///
/// A single-environment user writes `Trainer::start(&mut agent, &mut env,
/// …)` and never meets `MAX_ENVS`; a user of copies passes `&mut vec_env`
/// to the same calls. The trait is sealed: its methods are the trainer's
/// plumbing, implemented for exactly these two cases. With one copy in a
/// `VecEnv` a run is the single-environment run bit for bit.
pub trait Envs: sealed::Sealed {
    /// The environment (of every copy).
    type Env: Env;

    /// How many copies a checkpoint of the run holds: 1, or `MAX_ENVS`
    /// (in use or not).
    const COPIES: usize;

    /// Initialises `agent` for the first copy from `rng`, then resets the
    /// agent's [`n_envs`](Learner::n_envs) copies (copy 0 first); returns
    /// the trainer's own cursor (idle for a `VecEnv`, whose cursors are
    /// its own).
    #[doc(hidden)]
    fn start_run<L, R>(&mut self, agent: &mut L, rng: &mut R) -> Result<CursorOf<Self>, Error>
    where
        L: Learner<Self::Env>,
        R: Rng + ?Sized;

    /// One [`Learner::iterate`] (or [`Learner::iterate_envs`] over the
    /// copies in use); `own` is the trainer's cursor.
    #[doc(hidden)]
    fn train<L, R>(
        &mut self,
        agent: &mut L,
        own: &mut CursorOf<Self>,
        rng: &mut R,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<L::Stats, Error>
    where
        L: Learner<Self::Env>,
        R: Rng + ?Sized;

    /// Every copy and its cursor, as a checkpoint saves them (`own` is the
    /// trainer's cursor).
    #[doc(hidden)]
    fn copies<'a>(&'a self, own: &'a CursorOf<Self>) -> (&'a [Self::Env], &'a [CursorOf<Self>]);

    /// Restores the copies through `load` (which reads every copy's state
    /// and cursor and changes nothing when it fails), then puts the agent's
    /// `n_envs` copies in use; returns `load`'s value and the trainer's own
    /// cursor.
    #[doc(hidden)]
    fn restore<T, F>(&mut self, n_envs: usize, load: F) -> Result<(T, CursorOf<Self>), Error>
    where
        F: FnOnce(&mut [Self::Env], &mut [CursorOf<Self>]) -> Result<T, Error>;
}

impl<E: Env<Obs = SVector<f32, OBS>>, const OBS: usize> Envs for E {
    type Env = E;
    const COPIES: usize = 1;

    fn start_run<L, R>(&mut self, agent: &mut L, rng: &mut R) -> Result<Cursor<E::Obs>, Error>
    where
        L: Learner<E>,
        R: Rng + ?Sized,
    {
        agent.init(self, rng)?;
        Ok(Cursor::start(self, rng))
    }

    fn train<L, R>(
        &mut self,
        agent: &mut L,
        own: &mut Cursor<E::Obs>,
        rng: &mut R,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<L::Stats, Error>
    where
        L: Learner<E>,
        R: Rng + ?Sized,
    {
        agent.iterate(self, own, rng, on_episode)
    }

    fn copies<'a>(&'a self, own: &'a Cursor<E::Obs>) -> (&'a [E], &'a [Cursor<E::Obs>]) {
        (core::slice::from_ref(self), core::slice::from_ref(own))
    }

    fn restore<T, F>(&mut self, _n_envs: usize, load: F) -> Result<(T, Cursor<E::Obs>), Error>
    where
        F: FnOnce(&mut [E], &mut [Cursor<E::Obs>]) -> Result<T, Error>,
    {
        let mut cursor = [Cursor::idle()];
        let value = load(core::slice::from_mut(self), &mut cursor)?;
        let [cursor] = cursor;
        Ok((value, cursor))
    }
}

impl<E: Env<Obs = SVector<f32, OBS>>, const OBS: usize, const MAX_ENVS: usize> Envs
    for VecEnv<E, MAX_ENVS>
{
    type Env = E;
    const COPIES: usize = MAX_ENVS;

    /// # Errors
    /// [`Error::InvalidConfig`] naming `n_envs` when the agent needs more
    /// copies than `MAX_ENVS`; nothing changes then.
    fn start_run<L, R>(&mut self, agent: &mut L, rng: &mut R) -> Result<Cursor<E::Obs>, Error>
    where
        L: Learner<E>,
        R: Rng + ?Sized,
    {
        let n_envs = agent.n_envs();
        Self::check(n_envs)?;
        let first = self.envs.first().ok_or(Error::config(
            "n_envs",
            "must be > 0 and at most the VecEnv's MAX_ENVS copies",
        ))?;
        agent.init(first, rng)?;
        self.start(n_envs, rng)?;
        Ok(Cursor::idle())
    }

    fn train<L, R>(
        &mut self,
        agent: &mut L,
        _own: &mut Cursor<E::Obs>,
        rng: &mut R,
        on_episode: &mut dyn FnMut(Episode),
    ) -> Result<L::Stats, Error>
    where
        L: Learner<E>,
        R: Rng + ?Sized,
    {
        let (copies, cursors) = self.in_use();
        agent.iterate_envs(copies, cursors, rng, on_episode)
    }

    fn copies<'a>(&'a self, _own: &'a Cursor<E::Obs>) -> (&'a [E], &'a [Cursor<E::Obs>]) {
        (&self.envs, &self.cursors)
    }

    fn restore<T, F>(&mut self, n_envs: usize, load: F) -> Result<(T, Cursor<E::Obs>), Error>
    where
        F: FnOnce(&mut [E], &mut [Cursor<E::Obs>]) -> Result<T, Error>,
    {
        Self::check(n_envs)?;
        let mut cursors: [Cursor<E::Obs>; MAX_ENVS] = core::array::from_fn(|_| Cursor::idle());
        let value = load(&mut self.envs, &mut cursors)?;
        self.cursors = cursors;
        self.set_n_envs(n_envs);
        Ok((value, Cursor::idle()))
    }
}
