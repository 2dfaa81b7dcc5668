//! Inference only, behind the plant interface, with no simulator linked:
//! the smallest deployment of a 4-32-32-2 CartPole policy.
//!
//! The controller is the committed policy `policies/cartpole-small.mrlp`
//! (`agent::Policy<CartPole, 32>`: 4-32-32-2 tanh actor, frozen observation
//! normaliser), which build.rs turns into a constant: the `static` stays in
//! flash and is used in place — no loader, no CRC check, no copy of the
//! 5 KB of weights in RAM. What it controls is a
//! [`Plant`](microrl_firmware::plant::Plant) (sensors → observation,
//! command → actuator, one control period per step): on a board, the ADC
//! readings of the cart and pole and the motor driver; here
//! [`ReplayPlant`], which reports observations recorded on the desktop (every
//! 8th of `policies/sb3-cartpole-observations.bin`, 128 of them, from flash)
//! and records every command it is sent: their count per action, an FNV-1a
//! checksum of the sequence and the sequence itself packed one bit per
//! command. The host test acts with the same policy on the same
//! observations and compares bit for bit.
//!
//! The control loop is [`control`]: read, act ([`Controller::act`]:
//! normalise, forward pass, arg max), write, wait — nothing else runs, so
//! the image is the policy, the three dense kernels, the `fast-math` `exp`
//! their tanh is built on, and the logging. (`infer` plays CartPole episodes instead,
//! which links the `f64` simulator: 13 KB more.)
//!
//! Exits 0 iff every recorded observation got a command.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use cortex_m_rt::entry;
use microrl::env::{CartPole, Discrete};
use microrl::{Controller, Error, SVector, agent};
use microrl_firmware::plant::{Command, Plant};
use microrl_firmware::{Fnv1a, exit, log_stack};

/// The deployed policy: `microrl train --small`'s 4-32-32-2 CartPole policy.
type Policy = agent::Policy<CartPole, 32>;

/// In flash: the constant build.rs generated from `policies/cartpole-small.mrlp`.
static POLICY: Policy = include!(concat!(env!("OUT_DIR"), "/small_policy.rs"));

/// The recorded observations, 4 little-endian `f32` (16 bytes) each.
const RECORDED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/replay_observations.bin"));
/// Bytes of observation.
const OBS_BYTES: usize = 16;
/// Control periods: one per recorded observation (128).
const STEPS: usize = RECORDED.len() / OBS_BYTES;

/// Why the replayed plant stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, defmt::Format)]
enum ReplayError {
    /// Every recorded observation has been read.
    Exhausted,
}

/// A plant that reports recorded observations and records the commands it
/// is sent: the stand-in for a board's sensors and actuator.
struct ReplayPlant {
    /// The recordings, [`OBS_BYTES`] per observation.
    recorded: &'static [u8],
    /// Index of the observation the current control period reports.
    period: usize,
    /// Commands received per action.
    counts: [u32; 2],
    /// FNV-1a of the command sequence, one byte per command.
    fnv: Fnv1a,
    /// The command sequence, one bit per command (bit `k % 8` of byte `k / 8`).
    packed: [u8; STEPS / 8],
}

impl ReplayPlant {
    const fn new(recorded: &'static [u8]) -> Self {
        Self {
            recorded,
            period: 0,
            counts: [0; 2],
            fnv: Fnv1a(0x811c_9dc5),
            packed: [0; STEPS / 8],
        }
    }
}

impl Plant for ReplayPlant {
    type Obs = SVector<f32, 4>;
    type Space = Discrete<2>;
    type Error = ReplayError;

    fn action_space(&self) -> Discrete<2> {
        Discrete
    }

    fn read(&mut self) -> Result<SVector<f32, 4>, ReplayError> {
        let start = self.period * OBS_BYTES;
        let bytes = self
            .recorded
            .get(start..start + OBS_BYTES)
            .ok_or(ReplayError::Exhausted)?;
        Ok(SVector::<f32, 4>::from_fn(|i, _| {
            f32::from_le_bytes([
                bytes[4 * i],
                bytes[4 * i + 1],
                bytes[4 * i + 2],
                bytes[4 * i + 3],
            ])
        }))
    }

    fn write(&mut self, command: Command<Self>) -> Result<(), ReplayError> {
        let bit = u8::from(command != 0);
        self.counts[usize::from(bit)] += 1;
        self.fnv.write(&[bit]);
        if let Some(byte) = self.packed.get_mut(self.period / 8) {
            *byte |= bit << (self.period % 8);
        }
        Ok(())
    }

    fn wait(&mut self) {
        self.period += 1;
    }
}

/// Why the control loop stopped.
#[derive(Clone, Copy, Debug, defmt::Format)]
enum Stop<E> {
    /// The plant failed (for the replay: it ran out of recordings).
    Plant(E),
    /// The controller refused an observation (non-finite).
    Controller(Error),
}

/// The deployed control loop: per period, read the sensors, compute the
/// command, send it, wait for the next period — `periods` times.
fn control<P, C, const OBS: usize>(
    plant: &mut P,
    controller: &C,
    periods: usize,
) -> Result<(), Stop<P::Error>>
where
    P: Plant<Obs = SVector<f32, OBS>>,
    C: Controller<OBS, Action = Command<P>>,
{
    for _ in 0..periods {
        let obs = plant.read().map_err(Stop::Plant)?;
        let command = controller.act(&obs).map_err(Stop::Controller)?;
        plant.write(command).map_err(Stop::Plant)?;
        plant.wait();
    }
    Ok(())
}

#[entry]
fn main() -> ! {
    let mut plant = ReplayPlant::new(RECORDED);
    if let Err(stop) = control(&mut plant, &POLICY, STEPS) {
        defmt::error!("control stopped at period {=usize}: {}", plant.period, stop);
        exit(false);
    }
    defmt::info!(
        "replayed: {=usize} periods action0 {=u32} action1 {=u32} actions_fnv {=u32:#010x} actions {=[u8]}",
        plant.period,
        plant.counts[0],
        plant.counts[1],
        plant.fnv.0,
        plant.packed
    );
    log_stack();
    exit(true)
}
