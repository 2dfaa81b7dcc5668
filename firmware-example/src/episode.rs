//! Deterministic CartPole episodes of a deployed policy, as `infer` and
//! `imported` play them and the host test replays them bit for bit.
//!
//! [`play`] runs one episode from `env.reset(rng)` until it ends, acting
//! with whatever the caller passes (the core's `Controller::act` or the
//! assembly kernels), and keeps what the host compares: the return (its
//! `f32` bits), the length and FNV-1a checksums of the action sequence (one
//! byte an action) and of every observation's `f32` bits, then logs them in
//! the one `episode …` line both binaries print. A failed act or step is
//! returned ([`Failed`]) for the caller to report in its own words.

use microrl::env::{CartPole, Env};
use microrl::{Error, SVector};
use rand_core::Rng;

use crate::Fnv1a;

/// What one episode produced.
#[derive(Clone, Copy, Debug)]
pub struct Played {
    /// Sum of the rewards.
    pub ret: f32,
    /// Steps taken.
    pub len: u32,
    /// FNV-1a of the actions, one byte each.
    pub actions: Fnv1a,
    /// FNV-1a of the observations acted on, `f32` bits, in order.
    pub observations: Fnv1a,
}

/// The error that ended an episode early.
#[derive(Clone, Copy, Debug)]
pub struct Failed {
    /// What failed: `"act"` or `"step"`.
    pub what: &'static str,
    /// The step of the episode it failed at (0-based).
    pub step: u32,
    /// The error.
    pub error: Error,
}

/// Plays episode number `episode` on `env` (reset from `rng`) with `act`,
/// then logs `episode <n>: return <r> (<bits>) len <n> actions_fnv <fnv>
/// obs_fnv <fnv>`.
///
/// # Errors
/// The first error of `act` or of a step, with where it happened.
pub fn play<R: Rng>(
    env: &mut CartPole,
    rng: &mut R,
    mut act: impl FnMut(&SVector<f32, 4>) -> Result<usize, Error>,
    episode: u32,
) -> Result<Played, Failed> {
    let mut obs = env.reset(rng);
    let (mut ret, mut len) = (0.0f32, 0u32);
    let (mut actions, mut observations) = (Fnv1a::default(), Fnv1a::default());
    let failed = |what, step, error| Failed { what, step, error };
    loop {
        observations.write_f32s(obs.as_slice());
        let action = act(&obs).map_err(|e| failed("act", len, e))?;
        actions.write(&[action as u8]);
        let step = env.step(action).map_err(|e| failed("step", len, e))?;
        ret += step.reward;
        len += 1;
        obs = step.obs;
        if step.done() {
            break;
        }
    }
    defmt::info!(
        "episode {=u32}: return {=f32} ({=u32:#010x}) len {=u32} actions_fnv {=u32:#010x} obs_fnv {=u32:#010x}",
        episode,
        ret,
        ret.to_bits(),
        len,
        actions.0,
        observations.0
    );
    Ok(Played {
        ret,
        len,
        actions,
        observations,
    })
}
