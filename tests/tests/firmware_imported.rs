//! A Stable-Baselines3 policy on emulated microcontrollers, and the
//! firmware on a Cortex-M0.
//!
//! `firmware-example`'s `imported` binary holds the SB3 PPO CartPole policy
//! of `tests/fixtures/sb3/sb3-cartpole.safetensors` as imported by
//! `microrl import` (`firmware-example/policies/sb3-cartpole.mrlp`, a
//! constant in flash) and 1 024 of the fixture's observations with SB3's
//! deterministic actions. Booted in QEMU — on the Cortex-M4F
//! (`mps2-an386`) and on the Cortex-M0 (`microbit`: nRF51822, no FPU,
//! 256 KB flash, 16 KB RAM) — it must take SB3's action at every one of
//! them, with the same action sequence as the desktop (FNV-1a checksum),
//! and play CartPole episodes bit-identical to a desktop replay. It also
//! reports the instructions of a 4-64-64-2 forward pass on each core
//! (printed, never asserted). `infer` (the 4-32-32-2 policy of
//! `microrl train --small`) runs on the Cortex-M0 too and must equal the
//! desktop bit for bit.
//!
//! The committed inputs are checked first, without QEMU: the policy file is
//! exactly what `microrl import` makes of the fixture today, and the
//! observation and action files are rows [`IN_DISTRIBUTION`] and
//! [`OUT_OF_DISTRIBUTION`] of the parity fixture. `MICRORL_BLESS=1`
//! rewrites them.
//!
//! Skips (one loud line) without the Rust target or `qemu-system-arm`;
//! fails instead with `MICRORL_REQUIRE_FIRMWARE=1` (CI).

mod qemu;

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::OnceLock;

use microrl::env::CartPole;
use microrl::{Controller, SVector, agent, serialize};
use microrl_harness::interop::{self, Layout};
use microrl_harness::train::EnvName;
use qemu::{Board, CORTEX_M0, CORTEX_M4F, Fnv1a};
use safetensors::SafeTensors;

type ImportedPolicy = agent::Policy<CartPole, 64>;
type SmallPolicy = agent::Policy<CartPole, 32>;

/// Rows of the parity fixture from rollouts…
const IN_DISTRIBUTION: Range<usize> = 0..768;
/// …and far out of distribution (the fixture's last 1 000 are).
const OUT_OF_DISTRIBUTION: Range<usize> = 9000..9256;
/// Episodes `imported` plays (its `EPISODES`), and `infer`'s.
const IMPORTED_EPISODES: u32 = 2;
const INFER_EPISODES: u32 = 5;

fn sb3_fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/sb3")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn policy_file(name: &str) -> PathBuf {
    qemu::firmware_dir().join("policies").join(name)
}

/// The committed inputs of `imported`, as they must be: (file name, bytes).
fn expected_inputs() -> [(&'static str, Vec<u8>); 3] {
    let imported = interop::import(
        Layout::Sb3,
        &sb3_fixture("sb3-cartpole.safetensors"),
        None,
        EnvName::Cartpole,
    )
    .unwrap();
    let parity = sb3_fixture("sb3-cartpole.parity.safetensors");
    let parity = SafeTensors::deserialize(&parity).unwrap();
    let (obs, actions) = (
        parity.tensor("obs").unwrap(),
        parity.tensor("action").unwrap(),
    );
    let rows = || IN_DISTRIBUTION.chain(OUT_OF_DISTRIBUTION);
    // f32 little-endian rows of 16 bytes; int32 actions → one byte each.
    let obs: Vec<u8> = rows()
        .flat_map(|r| obs.data()[16 * r..16 * r + 16].to_vec())
        .collect();
    let actions: Vec<u8> = rows().map(|r| actions.data()[4 * r]).collect();
    [
        ("sb3-cartpole.mrlp", imported.blob),
        ("sb3-cartpole-observations.bin", obs),
        ("sb3-cartpole-actions.bin", actions),
    ]
}

#[test]
fn committed_firmware_inputs_are_the_sb3_fixture_and_its_import() {
    let bless = std::env::var_os("MICRORL_BLESS").is_some_and(|v| v == "1");
    for (name, bytes) in expected_inputs() {
        if bless {
            std::fs::write(policy_file(name), &bytes).unwrap();
        }
        let committed = std::fs::read(policy_file(name)).unwrap();
        assert!(
            committed == bytes,
            "firmware-example/policies/{name} is not what the SB3 fixture gives today \
             (rewrite it with MICRORL_BLESS=1)"
        );
    }
}

/// What the desktop computes for `imported`: the action checksum over the
/// committed observations, and per episode (return bits, length, action
/// checksum, observation checksum).
fn imported_on_host() -> (u32, Vec<(u32, u32, u32, u32)>) {
    let [(_, blob), (_, obs), (_, sb3)] = expected_inputs();
    let mut policy = Box::new(ImportedPolicy::ZERO);
    serialize::load(&mut *policy, &blob).unwrap();
    let mut actions = Fnv1a::new();
    for (bytes, &want) in obs.chunks_exact(16).zip(&sb3) {
        let o = SVector::<f32, 4>::from_iterator(
            bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().unwrap())),
        );
        let action = policy.act(&o).unwrap();
        assert_eq!(action, usize::from(want), "the desktop differs from SB3");
        actions.write(&[action as u8]);
    }
    (
        actions.0,
        qemu::episodes_on_host(&*policy, IMPORTED_EPISODES, 0),
    )
}

/// The episode lines of a run against the desktop's episodes.
fn assert_episodes(run: &qemu::Run, host: &[(u32, u32, u32, u32)]) {
    for (k, &(ret, len, actions, observations)) in host.iter().enumerate() {
        let line = run.line(&format!("INFO episode {k}:"));
        // `return <value> (<bits>)`
        let mut tokens = line.split_whitespace().skip_while(|t| *t != "return");
        let ret_bits = qemu::hex(tokens.nth(2).unwrap_or_else(|| panic!("{line}")));
        assert_eq!(ret_bits, ret, "episode {k} return: {line}");
        assert_eq!(
            qemu::after(line, "len").parse::<u32>().unwrap(),
            len,
            "{line}"
        );
        assert_eq!(
            qemu::hex(qemu::after(line, "actions_fnv")),
            actions,
            "{line}"
        );
        assert_eq!(
            qemu::hex(qemu::after(line, "obs_fnv")),
            observations,
            "{line}"
        );
    }
}

/// The firmware built for `board` once per test run (`None`: skipped).
fn built(board: Board) -> Option<&'static HashMap<String, PathBuf>> {
    static M4F: OnceLock<Option<HashMap<String, PathBuf>>> = OnceLock::new();
    static M0: OnceLock<Option<HashMap<String, PathBuf>>> = OnceLock::new();
    let (cell, bins): (_, &[&str]) = if board.target == CORTEX_M0.target {
        (&M0, &["imported", "infer"])
    } else {
        (&M4F, &["imported"])
    };
    cell.get_or_init(|| qemu::tools(board).then(|| qemu::build(board, bins)))
        .as_ref()
}

fn imported_acts_as_sb3_and_the_desktop(board: Board) {
    let Some(elfs) = built(board) else { return };
    let elf = &elfs["imported"];
    let (actions_fnv, episodes) = imported_on_host();
    let run = qemu::run(board, elf);
    assert_eq!(run.status, Some(0), "imported failed on the {}", board.name);
    let parity = run.line("INFO parity:");
    assert_eq!(qemu::after(parity, "parity:"), "1024", "{parity}");
    assert_eq!(qemu::after(parity, "observations,"), "1024", "{parity}");
    assert_eq!(qemu::after(parity, "difference"), "-1,", "{parity}");
    assert_eq!(qemu::hex(qemu::after(parity, "actions_fnv")), actions_fnv);
    assert_episodes(&run, &episodes);
    let icount = run.line("INFO icount:");
    let forward: u64 = qemu::after(icount, "forward").parse().unwrap();
    let command: u64 = qemu::after(icount, "command").parse().unwrap();
    assert!(forward > 0 && command >= forward, "{icount}");
    let footprint = qemu::footprint(elf);
    println!(
        "{}: 4-64-64-2 forward pass {forward} instructions, deployed command {command}; \
         flash + static RAM {footprint:?} bytes",
        board.name
    );
}

#[test]
fn imported_sb3_policy_on_cortex_m4f_acts_as_sb3_and_the_desktop() {
    imported_acts_as_sb3_and_the_desktop(CORTEX_M4F);
}

#[test]
fn imported_sb3_policy_on_cortex_m0_acts_as_sb3_and_the_desktop() {
    imported_acts_as_sb3_and_the_desktop(CORTEX_M0);
}

#[test]
fn infer_on_cortex_m0_matches_the_desktop_bit_for_bit() {
    let Some(elfs) = built(CORTEX_M0) else { return };
    let blob = std::fs::read(policy_file("cartpole-small.mrlp")).unwrap();
    let mut policy = Box::new(SmallPolicy::ZERO);
    serialize::load(&mut *policy, &blob).unwrap();
    let run = qemu::run(CORTEX_M0, &elfs["infer"]);
    assert_eq!(run.status, Some(0), "infer failed on the Cortex-M0");
    assert_episodes(&run, &qemu::episodes_on_host(&*policy, INFER_EPISODES, 0));
    println!(
        "Cortex-M0 infer: flash + static RAM {:?} bytes, {}",
        qemu::footprint(&elfs["infer"]),
        run.line("INFO stack:")
    );
}
