//! Puts the memory layout where the linker finds it as `memory.x` (the
//! cortex-m-rt/embassy convention: cortex-m-rt's `link.x` does
//! `INCLUDE memory.x`). `memory/mps2-an386.x` (QEMU's Cortex-M4F board) by
//! default; `memory/stm32f407.x` with the `stm32f407` feature;
//! `memory/stm32f405.x` (QEMU's `netduinoplus2`, the Crazyflie's MCU) with
//! the `stm32f405` feature; `memory/nrf52840.x` with the `nrf52840` feature;
//! `memory/microbit.x` (QEMU's Cortex-M0 board, 256 KB flash, 16 KB RAM)
//! when building for `thumbv6m-none-eabi`.
//!
//! The layouts live in `memory/`, not as `memory.x` in the crate root: the
//! linker runs in the crate root and looks there for `INCLUDE`d files before
//! the search path, so a root `memory.x` would shadow the selected layout.
//!
//! It also writes `imported_policy.rs` for the `imported` binary: the policy
//! file `policies/sb3-cartpole.mrlp` (written by `microrl import`; another
//! 4-64-64-2 CartPole policy file with `MICRORL_IMPORTED_POLICY=path`),
//! loaded and checked with the core's own loader, as a constant
//! expression of the deployed policy type in which every weight is an
//! `f32::from_bits` literal. The `static` it initialises stays in flash: the
//! 18 KB policy is used in place, never copied to RAM (the Cortex-M0 board
//! has 16 KB of it). `small_policy.rs`, for `infer-plant`, is the same for
//! the 4-32-32-2 policy `policies/cartpole-small.mrlp`: a constant needs no
//! loader, no CRC and no copy of the weights on the stack. And
//! `replay_observations.bin`, the observations `infer-plant`'s replayed
//! plant reports: every 8th of `policies/sb3-cartpole-observations.bin`.

use std::env;
use std::fmt::Write;
use std::fs;
use std::path::{Path, PathBuf};

use microrl::env::CartPole;
use microrl::math::MathBackend;
use microrl::{agent, serialize};

/// The maths backend the firmware builds the core with (`Cargo.toml`:
/// `microrl = { features = ["defmt", "fast-math"] }`). This build script's
/// own core is a build dependency with default features (libm), so it loads
/// with `load_any_backend` and requires the file's backend to be the
/// firmware's: a policy evaluated under another backend can act
/// differently in the last bit (`docs/formats.md`, "Maths backend").
const FIRMWARE_BACKEND: MathBackend = MathBackend::FastMath;

/// The `imported` binary's policy width (its `Policy` alias is
/// `agent::Policy<CartPole, 64>`).
const IMPORTED_WIDTH: usize = 64;
/// The `infer-plant` binary's policy width (`agent::Policy<CartPole, 32>`).
const SMALL_WIDTH: usize = 32;
/// The `infer-plant` binary's policy file.
const SMALL_POLICY: &str = "policies/cartpole-small.mrlp";
/// CartPole observations (4 little-endian `f32` each) recorded for the SB3
/// parity fixture: 768 from rollouts, then 256 far out of distribution.
const RECORDED_OBSERVATIONS: &str = "policies/sb3-cartpole-observations.bin";
/// `infer-plant` replays every 8th of them (96 in distribution, 32 out):
/// 2 KB of flash instead of 16 KB.
const REPLAY_STRIDE: usize = 8;

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"));
    let cortex_m0 = env::var("TARGET").is_ok_and(|t| t.starts_with("thumbv6m"));
    let layout = if env::var_os("CARGO_FEATURE_STM32F407").is_some() {
        "memory/stm32f407.x"
    } else if env::var_os("CARGO_FEATURE_STM32F405").is_some() {
        "memory/stm32f405.x"
    } else if env::var_os("CARGO_FEATURE_NRF52840").is_some() {
        "memory/nrf52840.x"
    } else if cortex_m0 {
        "memory/microbit.x"
    } else {
        "memory/mps2-an386.x"
    };
    fs::copy(layout, out.join("memory.x")).expect("copy the memory layout to OUT_DIR");
    // cortex-m-rt's `device` feature INCLUDEs `device.x` (a PAC's handler
    // names); the firmware's table (src/vectors.rs) names only
    // `DefaultHandler`, so it is empty.
    fs::write(
        out.join("device.x"),
        "/* src/vectors.rs: every interrupt enters DefaultHandler */\n",
    )
    .expect("write device.x to OUT_DIR");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory");
    println!("cargo:rerun-if-changed=build.rs");

    let policy = env::var_os("MICRORL_IMPORTED_POLICY").map_or_else(
        || PathBuf::from("policies/sb3-cartpole.mrlp"),
        PathBuf::from,
    );
    println!("cargo:rerun-if-env-changed=MICRORL_IMPORTED_POLICY");
    println!("cargo:rerun-if-changed={}", policy.display());
    let source = policy_source::<IMPORTED_WIDTH>(&policy);
    fs::write(out.join("imported_policy.rs"), source).expect("write imported_policy.rs");

    println!("cargo:rerun-if-changed={SMALL_POLICY}");
    let source = policy_source::<SMALL_WIDTH>(Path::new(SMALL_POLICY));
    fs::write(out.join("small_policy.rs"), source).expect("write small_policy.rs");

    println!("cargo:rerun-if-changed={RECORDED_OBSERVATIONS}");
    let recorded = fs::read(RECORDED_OBSERVATIONS)
        .unwrap_or_else(|e| panic!("reading {RECORDED_OBSERVATIONS}: {e}"));
    fs::write(
        out.join("replay_observations.bin"),
        replay_observations(&recorded),
    )
    .expect("write replay_observations.bin");
}

/// Every [`REPLAY_STRIDE`]-th 16-byte observation of `recorded`: what
/// `infer-plant`'s replayed plant reports, in order.
fn replay_observations(recorded: &[u8]) -> Vec<u8> {
    recorded
        .chunks_exact(16)
        .step_by(REPLAY_STRIDE)
        .flatten()
        .copied()
        .collect()
}

/// The policy file at `path` as a constant expression of type
/// `agent::Policy<CartPole, H>` (a 4-H-H-2 categorical actor).
fn policy_source<const H: usize>(path: &Path) -> String {
    let blob = fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut policy = Box::new(agent::Policy::<CartPole, H>::ZERO);
    let backend = serialize::load_any_backend(&mut *policy, &blob).unwrap_or_else(|e| {
        panic!(
            "{} is not a 4-{H}-{H}-2 categorical CartPole policy file: {e}",
            path.display()
        )
    });
    assert!(
        backend == FIRMWARE_BACKEND,
        "{} was written with the `{backend}` maths backend, the firmware computes with `{FIRMWARE_BACKEND}`",
        path.display()
    );
    let net = &policy.actor.net;
    let norm = &policy.obs_norm;
    format!(
        "// Generated by build.rs from {} (CRC-32 {:08x}).\n\
         ::microrl::Policy {{\n\
         actor: ::microrl::policy::CategoricalActor {{\n\
         net: ::microrl::nn::Chain {{\n\
         first: {},\n\
         second: ::microrl::nn::Chain {{ first: {}, second: {} }},\n\
         }},\n\
         }},\n\
         obs_norm: ::microrl::normalize::RunningNorm {{ mean: {}, var: {}, count: {} }},\n\
         space: ::microrl::env::Discrete,\n\
         }}\n",
        path.display(),
        serialize::crc32(&blob[..blob.len() - 4]),
        dense(net.first.weight.as_slice(), net.first.bias.as_slice()),
        dense(
            net.second.first.weight.as_slice(),
            net.second.first.bias.as_slice()
        ),
        dense(
            net.second.second.weight.as_slice(),
            net.second.second.bias.as_slice()
        ),
        matrix(norm.mean.as_slice(), norm.mean.len()),
        matrix(norm.var.as_slice(), norm.var.len()),
        matrix(norm.count.as_slice(), 1),
    )
}

/// `Dense::from_parts(W, b)` for a column-major `weight` with `bias.len()` rows.
fn dense(weight: &[f32], bias: &[f32]) -> String {
    format!(
        "::microrl::nn::Dense::from_parts({}, {})",
        matrix(weight, bias.len()),
        matrix(bias, bias.len())
    )
}

/// A matrix of `rows` rows from its column-major values (nalgebra's
/// `ArrayStorage` is an array of columns), every value by its exact bits.
fn matrix(values: &[f32], rows: usize) -> String {
    let mut s = String::from("::microrl::SMatrix::from_array_storage(::nalgebra::ArrayStorage([");
    for column in values.chunks(rows) {
        s.push('[');
        for v in column {
            let _ = write!(s, "f32::from_bits({:#010x}),", v.to_bits());
        }
        s.push_str("],");
    }
    s.push_str("]))");
    s
}
