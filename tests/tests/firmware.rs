//! The firmware on an emulated Cortex-M4F, checked against the desktop.
//!
//! Builds `firmware-example/` (its own workspace, `thumbv7em-none-eabihf`,
//! `cargo build --release --bins`) once per test run, boots each binary in
//! `qemu-system-arm -cpu cortex-m4 -machine mps2-an386` with semihosting,
//! decodes the defmt frames from QEMU's stdout with `defmt-decoder` (the
//! format strings come from the same ELF) and compares what the MCU computed
//! with the same computation on the desktop:
//!
//! - `infer`: per episode, the return's `f32` bits, the length and FNV-1a
//!   checksums of the action sequence and of every observation's `f32` bits
//!   must equal a host replay of the same policy on the same episodes.
//! - `train-ppo` / `train-ac`: the firmware runs `microrl::train::Trainer`
//!   with the protocol of `microrl train --small` (same seeds, RNG streams
//!   and evaluations), so the step at which it solves CartPole, the reported
//!   evaluation's bits and a checksum of the learned weights must equal the
//!   harness's own run. `train-ppo` must also stay within its memory budget
//!   (flash ≤ 64 KB, static RAM + measured peak stack ≤ 64 KB).
//! - `train-resume`: the same run, checkpointed into RAM after 5 updates,
//!   the agent zeroed and everything else rebuilt, resumed: the `solved`
//!   line must still equal the desktop's uninterrupted run, and static RAM +
//!   peak stack must fit the 128 KB of RAM.
//! - `train-ppo-tiny` / `train-ac-tiny`: the smallest trainers (4-16-16 PPO
//!   with a 128-step rollout; 4-12-12 online actor-critic) run the core's
//!   `Trainer` with the firmware's configuration, which the test runs on the
//!   desktop too: the solving step, the reported evaluation's bits and the
//!   weights' checksum must be the desktop's, the reported evaluation must
//!   reach 475, and static RAM + measured peak stack must stay within
//!   32 KB and 16 KB.
//! - `infer-plant`: the committed 4-32-32-2 policy, as a constant in flash,
//!   commanding a replayed plant (128 recorded observations): the commands
//!   must equal the desktop policy's bit for bit, no `f64` simulator may be
//!   linked, and flash must stay within 16 KB.
//! - `plant`: learns the simulated DC motor behind the plant interface and
//!   must exit 0 with a `solved` line.
//! - `finetune`: the exported desktop policy fine-tuned on the device for a
//!   changed plant with and without the KL anchor; both runs must equal the
//!   desktop's `microrl train --kl-ref` runs bit for bit, recover the
//!   return, and the anchored one must end closer to the reference.
//! - `kernel-check`: the assembly inference kernels (`src/kernel.rs`) against
//!   the core on the MCU; every check must report 0 mismatches.
//! - `bench`: runs under `-icount shift=0` and must report every figure.
//! - `train-sac`: SAC (3-24-24 actor, twin 4-24-24-1 critics, a
//!   2 000-transition ring, minibatches of 64) on Pendulum for 4 000 steps
//!   through the core's `Trainer`; the same configuration on the desktop
//!   must give the same reported evaluation bits and the same weights
//!   (actor and critics), the evaluation must be clearly better than the
//!   untrained policy's, and static RAM + peak stack must fit the 128 KB of
//!   an STM32F405/F407's main SRAM. `bench-sac` (`-icount shift=0`) must
//!   report the instructions of its gradient and environment steps.
//! - `learn-rt`: PPO learns CartPole while a 50 Hz timer interrupt controls
//!   it (the lagged schedule), under `-icount shift=0`: no
//!   deadline miss, no overrun, solved, and the solving step, updates,
//!   reported evaluation and weights equal the desktop's `LaggedPpo` run
//!   through `Trainer::run`; prints one `realtime learn-rt: …` line.
//! - `learn-rt-ac`: the online actor-critic learns the servo while a 1 kHz
//!   timer interrupt controls it, the learner a software-pended interrupt
//!   below it, the trainer's evaluations in thread mode (`-icount
//!   shift=0`): no deadline miss, overrun or dropped tick, and the outcome
//!   and weights equal the desktop's `LaggedAc` run through `Trainer::run`;
//!   prints one `realtime learn-rt-ac: …` line with the blocking
//!   `ActorCritic`'s solving step beside it.
//! - `learn-rt-sac`: SAC learns Pendulum while a 20 Hz timer interrupt
//!   controls it (one gradient step per tick in the learner's interrupt):
//!   the same checks against the desktop's `LaggedSac` over a 2 000-step
//!   budget, and static RAM + peak stack within 128 KB; prints one
//!   `realtime learn-rt-sac: …` line. Its solving run (`--features
//!   sac-solve`) is `--ignored`.
//!
//! - `train-ppo` again, linked for the STM32F405 (`--features stm32f405`)
//!   and booted in QEMU's `netduinoplus2` (the Crazyflie 2.x's MCU): the
//!   same `solved` line as the desktop's, within the same budget.
//!
//! - `fault-drill`: the safety net's fault drills
//!   (`microrl::safety::drill::cartpole`) with the committed 4-32-32-1
//!   CartPoleContinuous policy: every scenario × fault × arm's line (every
//!   counter and switch) equals the recorded one and the desktop's drill
//!   bit for bit, and each drill's claims hold on the MCU's own figures.
//!
//! QEMU's exit status is the firmware's (`microrl_firmware::exit`, or 1 from
//! the panic and HardFault handlers). Without `qemu-system-arm` or the
//! `thumbv7em-none-eabihf` target the tests skip with one line on stderr
//! saying what is missing and how to install it — or fail with it when
//! `MICRORL_REQUIRE_FIRMWARE=1` (CI); `MICRORL_SKIP_QEMU=1` skips them on
//! purpose (README).

mod qemu;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use microrl::algo::{AcConfig, Ppo, PpoConfig, SacConfig, evaluate};
use microrl::env::{CartPole, CartPoleParams, Env, Pendulum, Servo};
use microrl::optim::Schedule;
use microrl::train::{Learner, Outcome, RunConfig, Trainer, report_seed};
use microrl::{Controller, Params, agent, serialize};
use microrl_harness::train::{
    Algo, AnchorOptions, EnvName, Overrides, TrainOptions, TrainSummary, train,
};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

use microrl::algo::Sac;
use qemu::{CORTEX_M4F, Fnv1a, NETDUINOPLUS2, Run, after, firmware_dir, hex};

/// The firmware's small CartPole policy type (`infer`, `train-ppo`, `train-ac`):
/// 4-32-32-2 actor, frozen normaliser, discrete action space.
type SmallPolicy = agent::Policy<CartPole, 32>;

/// The binaries these tests boot.
const BINS: &[&str] = &[
    "infer",
    "train-ppo",
    "train-resume",
    "train-ac",
    "finetune",
    "plant",
    "train-ppo-tiny",
    "train-ac-tiny",
    "infer-plant",
    "kernel-check",
    "bench",
    "train-sac",
    "bench-sac",
    "learn-rt",
    "learn-rt-ac",
    "learn-rt-sac",
    "fault-drill",
];

/// The built firmware ELFs by binary name, built once per test run, or
/// `None` when skipped ([`qemu::tools`]). `MICRORL_FIRMWARE_BINS=a,b`
/// builds only those binaries (e.g. `tests/removals/run`: `fault-drill`),
/// for running one test.
fn firmware() -> Option<&'static HashMap<String, PathBuf>> {
    static BUILT: OnceLock<Option<HashMap<String, PathBuf>>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            qemu::tools(CORTEX_M4F).then(|| match std::env::var("MICRORL_FIRMWARE_BINS") {
                Ok(only) if !only.is_empty() => {
                    let bins: Vec<&str> = only.split(',').map(str::trim).collect();
                    qemu::build(CORTEX_M4F, &bins)
                }
                _ => qemu::build(CORTEX_M4F, BINS),
            })
        })
        .as_ref()
}

/// Boots firmware binary `name` on the Cortex-M4F (with `-icount shift=0`
/// iff `icount`), decodes its output and asserts that it exited with 0.
fn run_ok(elfs: &HashMap<String, PathBuf>, name: &str, icount: bool) -> Run {
    let run = qemu::boot(CORTEX_M4F, &elfs[name], icount);
    assert_eq!(
        run.status,
        Some(0),
        "{name} exit status\n{}",
        run.lines.join("\n")
    );
    run
}

/// The `(0x…)` bits logged after a float: `key <value> (<bits>)`.
fn bits_after(message: &str, key: &str) -> u32 {
    let mut tokens = message.split_whitespace();
    tokens.by_ref().find(|t| *t == key);
    hex(tokens
        .nth(1)
        .unwrap_or_else(|| panic!("no `{key} <value> (<bits>)` in `{message}`")))
}

/// `microrl_firmware::params_fnv`: the actor's tensors, then the normaliser's
/// (the serialisation order; the discrete action space has no tensors).
fn params_fnv(policy: &SmallPolicy) -> u32 {
    weights_fnv(&policy.actor, &policy.obs_norm)
}

/// `microrl_firmware::params_fnv(actor, obs_norm)` for any widths.
fn weights_fnv<A: Params, N: Params>(actor: &A, obs_norm: &N) -> u32 {
    fn write<P: Params>(h: &mut Fnv1a, p: &P) {
        for i in 0..P::TENSORS {
            for x in p.tensor(i) {
                h.write_u32(x.to_bits());
            }
        }
    }
    let mut h = Fnv1a::new();
    write(&mut h, actor);
    write(&mut h, obs_norm);
    h.0
}

fn load_small(blob: &[u8]) -> Box<SmallPolicy> {
    let mut policy = Box::new(SmallPolicy::ZERO);
    serialize::load(&mut *policy, blob).expect("a 4-32-32-2 CartPole policy");
    policy
}

/// The exported policy `infer` embeds.
fn committed_policy() -> Vec<u8> {
    std::fs::read(firmware_dir().join("policies/cartpole-small.mrlp")).expect("policy file")
}

/// `microrl train --small` with `algo`, seed 0 and `steps`, writing the policy.
fn harness_run(algo: Algo, steps: u64, name: &str) -> (TrainSummary, Vec<u8>) {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let opts = TrainOptions {
        small: true,
        out: Some(out),
        progress: false,
        ..TrainOptions::new(EnvName::Cartpole, algo, 0, steps)
    };
    let summary = train(&opts).expect("harness training runs");
    let path = summary.policy.clone().expect("policy written");
    // The parameter blob, without the file's task record (what `export`
    // writes for the firmware).
    let blob = microrl_harness::policy_file::read(&path)
        .expect("read the policy")
        .blob;
    (summary, blob)
}

/// The MCU's `solved:` line (`microrl_firmware::finish`) against the
/// desktop's run of the same protocol: the same first passing step, the same
/// reported evaluation bits and the same weights.
fn assert_solved_like_desktop(run: &Run, summary: &TrainSummary, blob: &[u8]) {
    assert!(summary.solved, "{summary:?}");
    let desktop_fnv = params_fnv(&load_small(blob));
    let (step, updates) = (summary.solved_at_step, summary.updates);
    assert_solved_line(run, step, updates, summary.eval_mean, desktop_fnv);
}

/// The MCU's `solved:` line against a desktop run: the same first passing
/// step (`solved_at_step`) and number of `updates`, the same reported
/// evaluation bits (`eval`) and the same weights (`policy_fnv`).
fn assert_solved_line(
    run: &Run,
    solved_at_step: Option<u64>,
    updates: u64,
    eval: f32,
    policy_fnv: u32,
) {
    let solved = run.line("INFO solved:");
    let step = solved_at_step.expect("the desktop run solves");
    assert_eq!(
        after(solved, "step").parse::<u64>().unwrap(),
        step,
        "MCU and desktop solved at different steps"
    );
    assert_eq!(
        after(solved, "updates").parse::<u64>().unwrap(),
        updates,
        "MCU and desktop made different numbers of updates"
    );
    assert_eq!(
        bits_after(solved, "eval"),
        eval.to_bits(),
        "MCU and desktop reported evaluations differ"
    );
    assert_eq!(
        hex(after(solved, "policy_fnv")),
        policy_fnv,
        "MCU and desktop learned different weights"
    );
}

#[test]
fn committed_policy_is_what_the_harness_trains() {
    // `policies/cartpole-small.mrlp` is `microrl train --small --seed 0`
    // (PPO, CartPole, default budget) exported unchanged: training is
    // deterministic, so retraining must reproduce it byte for byte.
    let (summary, blob) = harness_run(Algo::Ppo, 100_000, "fw-committed-policy");
    assert!(summary.solved_at_step.is_some(), "{summary:?}");
    assert!(
        blob == committed_policy(),
        "firmware-example/policies/cartpole-small.mrlp is not what `microrl train --small \
         --seed 0` produces any more; regenerate it (firmware-example/README.md)"
    );
}

#[test]
fn infer_matches_desktop_bit_for_bit() {
    let Some(elfs) = firmware() else { return };
    let run = run_ok(elfs, "infer", false);

    let blob = committed_policy();
    let policy = load_small(&blob);
    let loaded = run.line("INFO policy loaded:");
    assert_eq!(after(loaded, "loaded:"), blob.len().to_string());

    let host = qemu::episodes_on_host(&*policy, 5, 0);
    let (mut actions_all, mut obs_all) = (Fnv1a::new(), Fnv1a::new());
    for (i, &(ret_bits, len, actions, observations)) in host.iter().enumerate() {
        let mcu = run.line(&format!("INFO episode {i}:"));
        let mcu_ret = bits_after(mcu, "return");
        assert_eq!(
            (
                mcu_ret,
                after(mcu, "len").parse::<u32>().expect("len"),
                hex(after(mcu, "actions_fnv")),
                hex(after(mcu, "obs_fnv")),
            ),
            (ret_bits, len, actions, observations),
            "episode {i}: MCU (return bits, length, actions FNV, observations FNV) != desktop"
        );
        actions_all.write_u32(actions);
        obs_all.write_u32(observations);
    }
    let done = run.line("INFO done:");
    assert_eq!(hex(after(done, "actions_fnv")), actions_all.0);
    assert_eq!(hex(after(done, "obs_fnv")), obs_all.0);
    // The exported policy solves the task; the MCU's episodes are the desktop's.
    assert!(host.iter().all(|&(_, len, _, _)| len == 500), "{host:?}");
}

/// Flash and static RAM of an ELF, as `arm-none-eabi-size` counts them:
/// flash = every allocated section with contents in the image (vector table,
/// `.text`, `.rodata`, and `.data`'s initial values); RAM = every allocated
/// section at a RAM address (`.data`, `.bss`, `.uninit`; 0x2000_0000 and up).
fn footprint(elf: &Path) -> (u64, u64) {
    const SHF_ALLOC: u64 = 2;
    const SHT_NOBITS: u64 = 8;
    const RAM_START: u64 = 0x2000_0000;
    let bytes = std::fs::read(elf).expect("read ELF");
    // Section headers of a 32-bit little-endian ELF (ELF32_Shdr).
    let u32_at = |o: usize| u64::from(u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap()));
    let u16_at = |o: usize| usize::from(u16::from_le_bytes(bytes[o..o + 2].try_into().unwrap()));
    let (shoff, shentsize, shnum) = (u32_at(0x20) as usize, u16_at(0x2e), u16_at(0x30));
    let (mut flash, mut ram) = (0, 0);
    for i in 0..shnum {
        let h = shoff + i * shentsize;
        let (sh_type, flags, addr, size) =
            (u32_at(h + 4), u32_at(h + 8), u32_at(h + 12), u32_at(h + 20));
        if flags & SHF_ALLOC == 0 {
            continue;
        }
        if sh_type != SHT_NOBITS {
            flash += size;
        }
        if addr >= RAM_START {
            ram += size;
        }
    }
    (flash, ram)
}

#[test]
fn train_ppo_solves_cartpole_like_the_desktop_within_budget() {
    let Some(elfs) = firmware() else { return };
    let run = run_ok(elfs, "train-ppo", false);

    let (summary, blob) = desktop_ppo();
    assert_solved_like_desktop(&run, summary, blob);
    assert!(summary.eval_mean >= 475.0, "{summary:?}");

    // Memory budget: flash ≤ 64 KB, static RAM + measured peak stack ≤ 64 KB.
    let (flash, ram) = footprint(&elfs["train-ppo"]);
    let peak: u64 = after(run.line("INFO stack:"), "peak").parse().unwrap();
    println!("train-ppo: flash {flash} B, static RAM {ram} B, peak stack {peak} B");
    assert!(flash <= 64 * 1024, "train-ppo flash {flash} B > 64 KB");
    assert!(
        ram + peak <= 64 * 1024,
        "train-ppo RAM {ram} + stack {peak} B > 64 KB"
    );
}

/// `train-ppo` linked for the STM32F405 (the `stm32f405` feature:
/// `memory/stm32f405.x`, flash at 0x0800_0000) and booted in QEMU's
/// `netduinoplus2`, an STM32F405 board — the Crazyflie 2.x's MCU: the same
/// run as the desktop's (and the MPS2 board's), bit for bit, within the
/// same budget.
#[test]
fn train_ppo_on_the_stm32f405_netduinoplus2_matches_the_desktop() {
    if !qemu::tools(NETDUINOPLUS2) {
        return;
    }
    let elfs = qemu::build_in(
        Some("stm32f405"),
        NETDUINOPLUS2,
        &["train-ppo"],
        &["stm32f405"],
    );
    let elf = &elfs["train-ppo"];
    // Linked for the STM32's flash, not the MPS2's code SRAM at 0.
    let bytes = std::fs::read(elf).expect("read ELF");
    let entry = u32::from_le_bytes(bytes[0x18..0x1c].try_into().unwrap());
    assert!(
        (0x0800_0000..0x0810_0000).contains(&entry),
        "entry point {entry:#010x} is not in the STM32F405's flash"
    );
    let run = qemu::boot(NETDUINOPLUS2, elf, false);
    assert_eq!(run.status, Some(0), "{}", run.lines.join("\n"));
    let (summary, blob) = desktop_ppo();
    assert_solved_like_desktop(&run, summary, blob);
    let (flash, ram) = footprint(elf);
    let peak: u64 = after(run.line("INFO stack:"), "peak").parse().unwrap();
    println!(
        "netduinoplus2 train-ppo: solved at {:?}, flash {flash} B, static RAM {ram} B, peak stack {peak} B",
        summary.solved_at_step
    );
    assert!(flash <= 64 * 1024, "train-ppo flash {flash} B > 64 KB");
    assert!(
        ram + peak <= 64 * 1024,
        "RAM {ram} + stack {peak} B > 64 KB"
    );
}

/// The desktop reference of `train-ppo` and `train-resume`, trained once per
/// test run: seed 0, 100 000 steps, PpoConfig::CARTPOLE, rollout 256,
/// RunConfig::new(100_000, 475) — `microrl train --small`.
fn desktop_ppo() -> &'static (TrainSummary, Vec<u8>) {
    static RUN: OnceLock<(TrainSummary, Vec<u8>)> = OnceLock::new();
    RUN.get_or_init(|| harness_run(Algo::Ppo, 100_000, "fw-train-ppo"))
}

#[test]
fn train_resume_after_reset_matches_the_uninterrupted_run() {
    let Some(elfs) = firmware() else { return };
    let run = run_ok(elfs, "train-resume", false);
    // It really was interrupted: a checkpoint saved after a few updates,
    // resumed from the buffer into a zeroed agent and fresh environments.
    let saved = run.line("INFO checkpoint:");
    let resumed = run.line("INFO resumed:");
    let at = after(saved, "step");
    assert!(at.parse::<u64>().unwrap() > 0, "{saved}");
    assert_eq!(after(resumed, "step"), at, "{resumed}");
    assert!(after(saved, "checkpoint:").parse::<u64>().unwrap() > 0);

    // The whole run equals the uninterrupted one: train-ppo's, the desktop's.
    let (summary, blob) = desktop_ppo();
    assert_solved_like_desktop(&run, summary, blob);
    assert!(
        summary.solved_at_step.unwrap() > at.parse::<u64>().unwrap(),
        "solved before the reset: the resume proved nothing"
    );

    // RAM (the F407's and mps2-an386's 128 KB): static + measured peak stack.
    let (flash, ram) = footprint(&elfs["train-resume"]);
    let peak: u64 = after(run.line("INFO stack:"), "peak").parse().unwrap();
    println!("train-resume: flash {flash} B, static RAM {ram} B, peak stack {peak} B");
    assert!(
        ram + peak <= 128 * 1024,
        "train-resume RAM {ram} + stack {peak} B > 128 KB"
    );
}

#[test]
fn train_ac_learns_like_the_desktop() {
    let Some(elfs) = firmware() else { return };
    let run = run_ok(elfs, "train-ac", false);
    // train-ac: seed 0, 60 000 steps, AcConfig::DEFAULT, an evaluation every
    // 1 000 steps — `microrl train --algo ac --small --steps 60000`.
    let (summary, blob) = harness_run(Algo::Ac, 60_000, "fw-train-ac");
    assert_solved_like_desktop(&run, &summary, &blob);
}

/// `finetune`: the desktop policy fine-tuned on the device for a changed
/// plant (control loop 4× slower), with `β = 0` (plain PPO) and `β = 1`
/// (anchored to the reference) — each run bit-identical to
/// `microrl train --small --plant tau=0.08 --kl-ref
/// firmware-example/policies/cartpole-small.mrlp --kl-beta β --steps 20000
/// --no-early-stop`, both recovering the return the reference lost, the
/// anchored one closer to the reference.
#[test]
fn finetune_recovers_like_the_desktop() {
    let Some(elfs) = firmware() else { return };
    let run = run_ok(elfs, "finetune", false);
    let lines: Vec<&String> = run
        .lines
        .iter()
        .filter(|l| l.starts_with("INFO finetune: beta"))
        .collect();
    assert_eq!(lines.len(), 2, "{}", run.lines.join("\n"));

    // The reference on the changed plant, on the report stream's start
    // states, evaluated on the host.
    let plant = CartPole::with_params(CartPoleParams {
        tau: 0.08,
        ..CartPoleParams::DEFAULT
    })
    .unwrap();
    let reference = load_small(&committed_policy());
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(report_seed(0));
    let (before, _) = evaluate(&*reference, &mut plant.clone(), 100, &mut rng).unwrap();
    assert!(
        before < 200.0,
        "the changed plant must hurt the reference: {before}"
    );

    let mut kl = Vec::new();
    for (line, beta) in lines.into_iter().zip([0.0f32, 1.0]) {
        assert_eq!(after(line, "beta").parse::<f32>().unwrap(), beta, "{line}");
        assert_eq!(bits_after(line, "reference"), before.to_bits(), "{line}");
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fw-finetune-{beta}"));
        let mut plant_table = toml::Table::new();
        plant_table.insert("tau".into(), toml::Value::Float(0.08));
        // What the CLI sets for `--kl-ref`: the reference's statistics stay frozen.
        let mut overrides = Overrides::default();
        overrides
            .0
            .insert("normalize_obs".into(), toml::Value::Boolean(false));
        let opts = TrainOptions {
            overrides,
            small: true,
            out: Some(out),
            progress: false,
            early_stop: false,
            plant: plant_table,
            // The firmware's fine-tune runs to its budget and keeps its last
            // policy: the desktop run keeps the last one too.
            keep_best: 0,
            anchor: Some(AnchorOptions {
                reference: firmware_dir().join("policies/cartpole-small.mrlp"),
                kl_coef: beta,
                kl_target: None,
            }),
            ..TrainOptions::new(EnvName::Cartpole, Algo::Ppo, 0, 20_000)
        };
        let summary = train(&opts).expect("the desktop fine-tune runs");
        assert!(summary.solved, "{summary:?}");
        assert_eq!(after(line, "solved"), "true", "{line}");
        assert_eq!(
            after(line, "step").parse::<u64>().unwrap(),
            summary.solved_at_step.unwrap(),
            "{line}"
        );
        assert_eq!(
            after(line, "updates").parse::<u64>().unwrap(),
            summary.updates,
            "{line}"
        );
        assert_eq!(
            bits_after(line, "eval"),
            summary.eval_mean.to_bits(),
            "{line}"
        );
        let last = summary.last_update.expect("updates ran");
        assert_eq!(
            bits_after(line, "kl"),
            last.kl_reference.to_bits(),
            "{line}"
        );
        let blob = microrl_harness::policy_file::read(summary.policy.as_ref().unwrap())
            .unwrap()
            .blob;
        assert_eq!(
            hex(after(line, "policy_fnv")),
            params_fnv(&load_small(&blob)),
            "MCU and desktop fine-tuned different weights"
        );
        // The return the changed plant took away is recovered.
        assert!(summary.eval_mean >= 475.0, "{summary:?}");
        println!(
            "finetune beta {beta}: reference {before} -> {} (solved at step {}), KL to the reference {}",
            summary.eval_mean,
            summary.solved_at_step.unwrap(),
            last.kl_reference
        );
        kl.push(last.kl_reference);
    }
    assert!(
        kl[1] < 0.75 * kl[0],
        "the anchored fine-tune is not closer to the reference: KL {kl:?}"
    );
    let (flash, ram) = footprint(&elfs["finetune"]);
    let peak: u64 = after(run.line("INFO stack:"), "peak").parse().unwrap();
    println!("finetune: flash {flash} B, static RAM {ram} B, peak stack {peak} B");
}

#[test]
fn plant_learns_the_simulated_motor() {
    let Some(elfs) = firmware() else { return };
    let run = run_ok(elfs, "plant", false);
    let solved = run.line("INFO solved:");
    let eval: f32 = after(solved, "eval").parse().expect("eval");
    // The learned policy beats the feed-forward controller on the same
    // held-out start states, and its deployed copy ran the plant.
    let baseline: f32 = after(run.line("INFO baseline:"), "episodes:")
        .parse()
        .expect("baseline");
    assert!(eval > baseline, "learned {eval} <= feed-forward {baseline}");
    let deployed = run
        .lines
        .iter()
        .filter(|l| l.starts_with("INFO deployed: episode"))
        .count();
    assert_eq!(deployed, 3, "{}", run.lines.join("\n"));
}

/// The MCU's `solved:` line against a desktop run of the same `Trainer`
/// configuration ([`assert_solved_line`]).
fn assert_solved_like_outcome(run: &Run, outcome: &Outcome, policy_fnv: u32) {
    let (step, updates, eval) = (outcome.solved_at_step, outcome.updates, outcome.report.mean);
    assert_solved_line(run, step, updates, eval, policy_fnv);
}

/// A firmware CartPole trainer's run: `total_steps`, an evaluation every
/// `eval_interval` steps, early stop at [`CartPole::SOLVED_RETURN`].
fn cartpole_run(total_steps: u64, eval_interval: u64) -> RunConfig {
    RunConfig {
        eval_interval,
        ..RunConfig::new(total_steps, CartPole::SOLVED_RETURN)
    }
}

/// Asserts that `name`'s static RAM plus peak stack ([`ram_and_stack`]) is
/// at most `budget` bytes.
fn assert_ram_within(elfs: &HashMap<String, PathBuf>, name: &str, run: &Run, budget: u64) {
    let total = ram_and_stack(name, &elfs[name], run);
    assert!(
        total <= budget,
        "{name} static RAM + peak stack {total} B > {budget} B"
    );
}

/// Static RAM (`.data` + `.bss`) plus the painted peak stack the run logged,
/// in bytes, printed with the flash for the README's footprint table.
fn ram_and_stack(name: &str, elf: &Path, run: &Run) -> u64 {
    let (flash, ram) = footprint(elf);
    let peak: u64 = after(run.line("INFO stack:"), "peak").parse().unwrap();
    println!(
        "{name}: flash {flash} B, static RAM {ram} B, peak stack {peak} B, static + stack {} B",
        ram + peak
    );
    ram + peak
}

/// `train-ppo-tiny`'s RAM budget: static RAM + peak stack.
const PPO_TINY_RAM_BUDGET: u64 = 32 * 1024;
/// `train-ac-tiny`'s RAM budget: static RAM + peak stack.
const AC_TINY_RAM_BUDGET: u64 = 16 * 1024;
/// `infer-plant`'s flash budget: text + data.
const INFER_PLANT_FLASH_BUDGET: u64 = 16 * 1024;

/// `agent`'s run on the desktop as a firmware CartPole trainer runs it (a
/// training and an evaluation CartPole, `Xoshiro128PlusPlus` from seed 0,
/// no hooks); asserts that it solved CartPole.
fn desktop_cartpole<L: Learner<CartPole>>(agent: &mut L, run_config: RunConfig) -> Outcome {
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let mut trainer =
        Trainer::<_, Xoshiro128PlusPlus>::start(agent, &mut env, run_config, 0).unwrap();
    let outcome = trainer
        .run(agent, &mut env, &mut eval_env, &mut ())
        .unwrap();
    assert!(outcome.solved(CartPole::SOLVED_RETURN), "{outcome:?}");
    outcome
}

/// Firmware trainer `name` against `agent` trained on the desktop with
/// `run_config` ([`desktop_cartpole`]): exit status 0, the same solving
/// step, evaluation and weights (`fnv` checksums the agent's policy), and
/// static RAM plus peak stack within `budget` bytes.
fn trains_like_desktop_within<L: Learner<CartPole>>(
    elfs: &HashMap<String, PathBuf>,
    name: &str,
    agent: &mut L,
    run_config: RunConfig,
    fnv: impl Fn(&L) -> u32,
    budget: u64,
) {
    let run = run_ok(elfs, name, false);
    let outcome = desktop_cartpole(agent, run_config);
    assert_solved_like_outcome(&run, &outcome, fnv(agent));
    assert_ram_within(elfs, name, &run, budget);
}

#[test]
fn train_ppo_tiny_solves_like_the_desktop_within_32_kb() {
    let Some(elfs) = firmware() else { return };
    let run_config = cartpole_run(100_000, 1);
    // train-ppo-tiny's configuration on the desktop: 4-16-16 actor and
    // critic, 128-step rollout, PpoConfig::CARTPOLE over 100 000 steps, an
    // evaluation after every rollout, seed 0.
    type Agent = agent::Ppo<CartPole, 16, 128>;
    let mut agent = Box::new(Agent::ZERO);
    agent.config = PpoConfig {
        total_steps: run_config.total_steps,
        ..PpoConfig::CARTPOLE
    };
    let fnv = |a: &Agent| weights_fnv(a.actor(), &a.obs_norm);
    trains_like_desktop_within(
        elfs,
        "train-ppo-tiny",
        &mut *agent,
        run_config,
        fnv,
        PPO_TINY_RAM_BUDGET,
    );
}

#[test]
fn train_ac_tiny_solves_like_the_desktop_within_16_kb() {
    let Some(elfs) = firmware() else { return };
    let run_config = cartpole_run(60_000, 1_000);
    // train-ac-tiny's configuration on the desktop: 4-12-12 actor and
    // critic, AcConfig::DEFAULT with learning rates 1e-3 (actor) and 3e-3
    // (critic), 60 000 steps, an evaluation every 1 000, seed 0.
    type Agent = agent::ActorCritic<CartPole, 12>;
    let mut agent = Box::new(Agent::ZERO);
    agent.config = AcConfig {
        total_steps: run_config.total_steps,
        actor_lr: Schedule::Constant(1e-3),
        critic_lr: Schedule::Constant(3e-3),
        ..AcConfig::DEFAULT
    };
    let fnv = |a: &Agent| weights_fnv(a.actor(), &a.obs_norm);
    trains_like_desktop_within(
        elfs,
        "train-ac-tiny",
        &mut *agent,
        run_config,
        fnv,
        AC_TINY_RAM_BUDGET,
    );
}

#[test]
fn infer_plant_commands_like_the_desktop_within_16_kb_of_flash() {
    let Some(elfs) = firmware() else { return };
    let elf = &elfs["infer-plant"];
    let run = run_ok(elfs, "infer-plant", false);

    // The replayed plant's observations (build.rs: every 8th of the
    // recorded file) and the committed policy's command at each, on the
    // desktop, in the firmware's three forms.
    let recorded = std::fs::read(firmware_dir().join("policies/sb3-cartpole-observations.bin"))
        .expect("recorded observations");
    let policy = load_small(&committed_policy());
    let (mut counts, mut fnv, mut packed) = ([0u32; 2], Fnv1a::new(), vec![0u8; 16]);
    let observations: Vec<&[u8]> = recorded.chunks_exact(16).step_by(8).collect();
    assert_eq!(observations.len(), 128);
    for (k, bytes) in observations.into_iter().enumerate() {
        let obs = microrl::SVector::<f32, 4>::from_fn(|i, _| {
            f32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap())
        });
        let action = policy.act(&obs).expect("finite observation");
        let bit = u8::from(action != 0);
        counts[usize::from(bit)] += 1;
        fnv.write(&[bit]);
        packed[k / 8] |= bit << (k % 8);
    }
    let line = run.line("INFO replayed:");
    assert_eq!(after(line, "replayed:"), "128", "{line}");
    assert_eq!(
        (
            after(line, "action0").parse::<u32>().unwrap(),
            after(line, "action1").parse::<u32>().unwrap(),
        ),
        (counts[0], counts[1]),
        "{line}"
    );
    assert_eq!(hex(after(line, "actions_fnv")), fnv.0, "{line}");
    assert!(
        line.ends_with(&format!("actions {packed:?}")),
        "MCU commands != desktop {packed:?}: {line}"
    );
    // Both actions occur: the comparison is not of a constant.
    assert!(counts[0] > 0 && counts[1] > 0, "{counts:?}");

    // No simulator: none of the soft-float f64 routines CartPole's physics needs.
    let image = std::fs::read(elf).expect("read ELF");
    assert!(
        !image.windows(12).any(|w| w == b"__aeabi_dadd"),
        "infer-plant links f64 arithmetic (a simulator?)"
    );
    let (flash, _) = footprint(elf);
    ram_and_stack("infer-plant", elf, &run);
    assert!(
        flash <= INFER_PLANT_FLASH_BUDGET,
        "infer-plant flash {flash} B > {INFER_PLANT_FLASH_BUDGET} B"
    );
}

#[test]
fn kernel_matches_the_core_bit_for_bit() {
    let Some(elfs) = firmware() else { return };
    // `kernel-check` compares the assembly kernels (`src/kernel.rs`) with the
    // core on the MCU: forward pass, mode and act of 18-64-64-4, 4-64-64-2
    // and 4-32-32-2 over thousands of observations and five weight scales,
    // tanh, VSQRT and the arg max on near ties.
    let run = run_ok(elfs, "kernel-check", false);
    for what in "tanh sqrt mode 18-64-64-4 4-64-64-2 4-32-32-2".split_whitespace() {
        let line = run.line(&format!("INFO kernel-check {what}:"));
        let cases: u64 = after(line, &format!("{what}:")).parse().expect("a count");
        assert!(cases >= 5000, "{line}");
        assert_eq!(after(line, "cases,"), "0", "{line}");
    }
    run.line("INFO kernel-check: bit-identical");
}

#[test]
fn bench_reports_every_instruction_count() {
    let Some(elfs) = firmware() else { return };
    // `-icount shift=0`: one virtual nanosecond per instruction; `bench`
    // calibrates its SysTick counter against that and exits 1 if it cannot.
    let run = run_ok(elfs, "bench", true);
    // Every inference figure: forward pass, mode and act of each network,
    // with the core's code and with the assembly kernels; then training.
    let mut names = Vec::new();
    for asm in ["", "-asm"] {
        for net in ["4-64-64-2", "18-64-64-4", "4-32-32-2"] {
            for kind in ["mlp", "act", "policy"] {
                names.push(format!("{kind}-{net}{asm}"));
            }
        }
    }
    names.extend(["ac-step", "ppo-collect-256", "ppo-update-256"].map(String::from));
    for name in &names {
        let line = run.line(&format!("INFO bench {name}:"));
        let count: u64 = after(line, &format!("{name}:")).parse().expect("a count");
        assert!(count > 0, "{line}");
    }
}

/// `train-sac`'s sizes: hidden width, replay ring, minibatch.
type SacAgent = agent::Sac<Pendulum, 24, 2_000, 64, 4>;
/// `train-sac`'s budget (without `--features sac-solve`).
const SAC_STEPS: u64 = 4_000;
/// The RAM of an STM32F405/F407's main SRAM (the 64 KB CCM left free):
/// `train-sac`'s static RAM + peak stack.
const SAC_RAM_BUDGET: u64 = 128 * 1024;
/// How much better than the untrained policy `train-sac`'s reported
/// evaluation must be after its budget (Pendulum's return is a cost, about
/// −1 200 for a random policy; −200 solves it).
const SAC_MIN_GAIN: f32 = 250.0;

/// `train-sac`'s run on the desktop with a budget of `steps`: RL Zoo's
/// Pendulum-v1 SAC settings with the agent's ring and minibatch, an
/// evaluation every 1 000 steps, early stop at −200, seed 0. The maths are
/// the firmware's: this crate's `microrl` has `fast-math` (unified through
/// microrl-harness), as the firmware's has. Returns the untrained policy's
/// mean return on the reported evaluation's start states, the outcome and
/// the checksum of the learned weights (actor, then both critics).
fn desktop_sac(steps: u64) -> (f32, Outcome, u32) {
    let run_config = RunConfig::new(steps, Pendulum::SOLVED_RETURN);
    let mut agent = SacAgent::boxed(SacConfig {
        buffer_size: 2_000,
        batch_size: 64,
        ..SacConfig::PENDULUM
    });
    let (mut env, mut eval_env) = (Pendulum::new(), Pendulum::new());
    let mut trainer =
        Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, run_config, 0).unwrap();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(report_seed(0));
    let (untrained, _) = evaluate(&*agent, &mut Pendulum::new(), 100, &mut rng).unwrap();
    let outcome = trainer
        .run(&mut *agent, &mut env, &mut eval_env, &mut ())
        .unwrap();
    (untrained, outcome, sac_fnv(&agent))
}

/// `train-sac`'s checksum: the actor's tensors, then both critics'.
fn sac_fnv<
    T,
    Q,
    const OBS: usize,
    const ACT: usize,
    const OA: usize,
    const H: usize,
    const CAP: usize,
    const BATCH: usize,
>(
    agent: &Sac<T, Q, OBS, ACT, OA, H, CAP, BATCH>,
) -> u32
where
    T: microrl::nn::Layer<Input = microrl::SVector<f32, OBS>, Output = microrl::SVector<f32, H>>,
    Q: microrl::nn::Layer<Input = microrl::SVector<f32, OA>, Output = microrl::SVector<f32, 1>>,
{
    weights_fnv(&agent.actor.params, &agent.critic.params)
}

#[test]
fn train_sac_learns_pendulum_like_the_desktop() {
    let Some(elfs) = firmware() else { return };
    let run = run_ok(elfs, "train-sac", false);
    let (untrained, outcome, fnv) = desktop_sac(SAC_STEPS);

    let line = run.line("INFO trained:");
    assert_eq!(
        after(line, "steps").parse::<u64>().unwrap(),
        outcome.steps,
        "{line}"
    );
    assert_eq!(
        after(line, "updates").parse::<u64>().unwrap(),
        outcome.updates,
        "MCU and desktop made different numbers of gradient steps: {line}"
    );
    assert_eq!(
        bits_after(line, "eval"),
        outcome.report.mean.to_bits(),
        "MCU and desktop reported evaluations differ: {line}"
    );
    assert_eq!(
        hex(after(line, "policy_fnv")),
        fnv,
        "MCU and desktop learned different weights: {line}"
    );
    println!(
        "train-sac: untrained {untrained}, after {} steps ({} gradient steps) {} ± {}",
        outcome.steps, outcome.updates, outcome.report.mean, outcome.report.std
    );
    assert!(
        outcome.report.mean >= untrained + SAC_MIN_GAIN,
        "SAC did not learn: untrained {untrained}, trained {}",
        outcome.report.mean
    );
    assert_ram_within(elfs, "train-sac", &run, SAC_RAM_BUDGET);
    // `Sac::ZERO` is all zero bytes: the 107 KB agent sits in `.bss`, not
    // in the flash image (it took 195 KB of flash when it did not).
    let (flash, _) = footprint(&elfs["train-sac"]);
    assert!(
        flash <= 96 * 1024,
        "train-sac flash {flash} B: is the agent in the image?"
    );
}

#[test]
fn bench_sac_reports_every_instruction_count() {
    let Some(elfs) = firmware() else { return };
    let run = run_ok(elfs, "bench-sac", true);
    for name in [
        "sac-warmup-step",
        "pendulum-step",
        "sac-gradient-step",
        "sac-train-step",
        "sac-act",
    ] {
        let line = run.line(&format!("INFO bench {name}:"));
        let count: u64 = after(line, &format!("{name}:")).parse().expect("a count");
        assert!(count > 0, "{line}");
    }
}

/// `train-sac` built with `--features sac-solve` (a 20 000-step budget,
/// early stop) solves Pendulum as the desktop does, bit for bit: the same
/// solving step, gradient steps, reported evaluation and weights, held-out
/// mean ≥ −200. Minutes of emulation, hence `--ignored`:
/// `cargo test -p microrl-tests --test firmware train_sac_solves -- --ignored --nocapture`.
/// Longest the solving run may take (under 10 minutes on an idle core).
const SAC_SOLVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

#[test]
#[ignore = "minutes of emulation; run with -- --ignored"]
fn train_sac_solves_pendulum_like_the_desktop() {
    if !qemu::tools(CORTEX_M4F) {
        return;
    }
    // Its own target directory: the default build's `train-sac` stays the
    // 4 000-step one the other tests boot.
    let elfs = qemu::build_in(
        Some("sac-solve"),
        CORTEX_M4F,
        &["train-sac"],
        &["sac-solve"],
    );
    let run = qemu::boot_within(CORTEX_M4F, &elfs["train-sac"], false, SAC_SOLVE_TIMEOUT);
    assert_eq!(run.status, Some(0), "{}", run.lines.join("\n"));
    let (_, outcome, fnv) = desktop_sac(20_000);
    assert!(outcome.solved(Pendulum::SOLVED_RETURN), "{outcome:?}");
    assert_solved_like_outcome(&run, &outcome, fnv);
    println!(
        "train-sac (sac-solve): solved at step {:?}, {} gradient steps, held-out {} ± {}",
        outcome.solved_at_step, outcome.updates, outcome.report.mean, outcome.report.std
    );
    assert_ram_within(&elfs, "train-sac", &run, SAC_RAM_BUDGET);
}

/// The desktop reference of `learn-rt`: `agent::LaggedPpo<CartPole, 32,
/// 256>` with `PpoConfig::CARTPOLE` over 100 000 steps, run by
/// `Trainer::run` from seed 0 with an evaluation after every update — the
/// one-thread schedule the firmware splits into an interrupt and a learner.
fn desktop_lagged() -> (Outcome, u32) {
    type Lagged = agent::LaggedPpo<CartPole, 32, 256>;
    let config = PpoConfig {
        total_steps: 100_000,
        ..PpoConfig::CARTPOLE
    };
    let mut agent = Box::new(Lagged::new(Ppo::new(config)));
    let (mut env, mut eval_env) = (CartPole::new(), CartPole::new());
    let run = RunConfig {
        eval_interval: 1,
        ..RunConfig::new(100_000, CartPole::SOLVED_RETURN)
    };
    let mut trainer =
        Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, run, 0).unwrap();
    let outcome = trainer
        .run(&mut *agent, &mut env, &mut eval_env, &mut ())
        .unwrap();
    (
        outcome,
        weights_fnv(agent.learner.actor(), &agent.learner.obs_norm),
    )
}

/// `learn-rt` learns while it controls, in real time: every tick's
/// actuator command within the deadline, no overrun of the lagged
/// schedule, CartPole solved, and bit-identical to the desktop's
/// `LaggedPpo`. Prints the one `realtime learn-rt:` summary line.
#[test]
fn learn_rt_realtime_matches_the_desktop_lagged_schedule() {
    let Some(elfs) = firmware() else { return };
    let run = qemu::run(CORTEX_M4F, &elfs["learn-rt"]);
    let (desktop, desktop_fnv) = desktop_lagged();

    let rt = run.line("INFO rt: rate_hz");
    let number = |key: &str| -> u64 { after(rt, key).parse().unwrap() };
    let solved = run
        .lines
        .iter()
        .find(|l| l.starts_with("INFO solved:"))
        .map(String::as_str);
    let solved_at = solved.map(|l| after(l, "step").parse::<u64>().unwrap());
    let bit_identical = solved.is_some_and(|l| {
        Some(after(l, "step").parse::<u64>().unwrap()) == desktop.solved_at_step
            && after(l, "updates").parse::<u64>().unwrap() == desktop.updates
            && bits_after(l, "eval") == desktop.report.mean.to_bits()
            && hex(after(l, "policy_fnv")) == desktop_fnv
    });
    let deadline_misses = number("deadline_misses");
    println!(
        "realtime learn-rt: rate_hz={} worst_tick_instr={} median_tick_instr={} deadline_misses={} solved_at={} bit_identical={}",
        number("rate_hz"),
        number("worst_tick_instr"),
        number("median_tick_instr"),
        deadline_misses,
        solved_at.map_or_else(|| "none".to_owned(), |s| s.to_string()),
        bit_identical
    );
    assert_eq!(run.status, Some(0), "{}", run.lines.join("\n"));
    assert_eq!(deadline_misses, 0, "{rt}");
    assert_eq!(number("overruns"), 0, "{rt}");
    assert_eq!(number("dropped"), 0, "{rt}");
    assert!(desktop.solved(CartPole::SOLVED_RETURN), "{desktop:?}");
    assert!(
        bit_identical,
        "learn-rt and the desktop LaggedPpo differ: {solved:?} vs {desktop:?}, policy_fnv {desktop_fnv:#010x}"
    );
}

/// `learn-rt-ac`'s configuration (its constants): the servo, judged every
/// 5 000 steps, solved at −50, a 100 000-step budget.
fn servo_run() -> RunConfig {
    RunConfig {
        eval_interval: 5_000,
        ..RunConfig::new(100_000, -50.0)
    }
}

/// `learn-rt-ac`'s desktop reference: `agent::LaggedAc<Servo, 8, 250>`
/// with `AcConfig::PLANT` through `Trainer::run` from seed 0 (the
/// firmware's maths: this crate's `microrl` has `fast-math`, as the
/// firmware's has), and the weights' checksum.
fn desktop_lagged_servo() -> (Outcome, u32) {
    type Lagged = agent::LaggedAc<Servo, 8, 250>;
    let config = AcConfig {
        total_steps: 100_000,
        ..AcConfig::PLANT
    };
    let mut agent = Box::new(Lagged::new(microrl::algo::ActorCritic::new(config)));
    let (mut env, mut eval_env) = (Servo::new(), Servo::new());
    let mut trainer =
        Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, servo_run(), 0).unwrap();
    let outcome = trainer
        .run(&mut *agent, &mut env, &mut eval_env, &mut ())
        .unwrap();
    (outcome, exported_fnv(&*agent))
}

/// [`weights_fnv`] of every tensor of `agent`'s exported policy, in order
/// (the firmware's `policy_fnv`).
fn exported_fnv<A: microrl::train::Agent>(agent: &A) -> u32
where
    A::Policy: Params,
{
    let mut policy = Box::new(<A::Policy as Params>::ZERO);
    agent.export(&mut policy);
    weights_fnv(&*policy, &microrl::SVector::<f32, 0>::zeros())
}

/// The same plant, configuration and seed learned by the blocking online
/// actor-critic (`ActorCritic<Servo, 8>`, one step per tick, no lag).
fn desktop_blocking_servo() -> Outcome {
    let config = AcConfig {
        total_steps: 100_000,
        ..AcConfig::PLANT
    };
    let mut agent = Box::new(agent::ActorCritic::<Servo, 8>::new(config));
    let (mut env, mut eval_env) = (Servo::new(), Servo::new());
    let mut trainer =
        Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, servo_run(), 0).unwrap();
    trainer
        .run(&mut *agent, &mut env, &mut eval_env, &mut ())
        .unwrap()
}

/// `learn-rt-ac` learns while it controls a 1 kHz servo, in real time:
/// every tick's actuator command within the deadline, no overrun of the
/// lagged schedule, no dropped tick, no snapshot left unjudged, and the
/// outcome (solving step, updates, episodes, reported evaluation) and the
/// weights equal the desktop's `LaggedAc`. Prints the one `realtime
/// learn-rt-ac:` summary line and the blocking learner's solving step.
#[test]
fn learn_rt_ac_realtime_matches_the_desktop_lagged_schedule() {
    let Some(elfs) = firmware() else { return };
    let run = qemu::run(CORTEX_M4F, &elfs["learn-rt-ac"]);
    let (desktop, desktop_fnv) = desktop_lagged_servo();
    let blocking = desktop_blocking_servo();

    let rt = run.line("INFO rt: rate_hz");
    let number = |key: &str| -> u64 { after(rt, key).parse().unwrap() };
    let trained = run.line("INFO trained:");
    let solved_at = after(trained, "solved_at").parse::<u64>().unwrap();
    let bit_identical = after(trained, "steps").parse::<u64>().unwrap() == desktop.steps
        && Some(solved_at).filter(|&s| s > 0) == desktop.solved_at_step
        && after(trained, "updates").parse::<u64>().unwrap() == desktop.updates
        && after(trained, "episodes").parse::<u64>().unwrap() == desktop.episodes
        && bits_after(trained, "eval") == desktop.report.mean.to_bits()
        && hex(after(trained, "policy_fnv")) == desktop_fnv;
    let deadline_misses = number("deadline_misses");
    let show = |s: Option<u64>| s.map_or_else(|| "none".to_owned(), |s| s.to_string());
    println!(
        "realtime learn-rt-ac: rate_hz={} worst_tick_instr={} median_tick_instr={} deadline_misses={} solved_at={} bit_identical={}",
        number("rate_hz"),
        number("worst_tick_instr"),
        number("median_tick_instr"),
        deadline_misses,
        show(Some(solved_at).filter(|&s| s > 0)),
        bit_identical
    );
    println!(
        "learn-rt-ac: held-out {} ± {}; the blocking ActorCritic<Servo, 8>: solved at {}, held-out {} ± {}",
        desktop.report.mean,
        desktop.report.std,
        show(blocking.solved_at_step),
        blocking.report.mean,
        blocking.report.std
    );
    assert_eq!(run.status, Some(0), "{}", run.lines.join("\n"));
    assert_eq!(deadline_misses, 0, "{rt}");
    assert_eq!(number("overruns"), 0, "{rt}");
    assert_eq!(number("dropped"), 0, "{rt}");
    let judge = run.line("INFO rt: judge_queue_full");
    assert_eq!(after(judge, "judge_queue_full"), "0", "{judge}");
    // A real comparison: the desktop run solves (so the solving step,
    // not only the budget, must match).
    assert!(desktop.solved_at_step.is_some(), "{desktop:?}");
    assert!(
        bit_identical,
        "learn-rt-ac and the desktop LaggedAc differ: {trained} vs {desktop:?}, policy_fnv {desktop_fnv:#010x}"
    );
}

/// `learn-rt-sac`'s agent: `train-sac`'s SAC on the lagged schedule,
/// blocks of 5 ticks.
type RtSac = agent::LaggedSac<Pendulum, 24, 1_500, 64, 4, 5>;

/// `learn-rt-sac`'s desktop reference: [`RtSac`] with RL Zoo's Pendulum
/// settings and the agent's ring and minibatch, judged every 1 000 steps,
/// solved at −200, through `Trainer::run` from seed 0 with a budget of
/// `steps` (the firmware's maths: `fast-math`), and the exported policy's
/// checksum.
fn desktop_lagged_sac(steps: u64) -> (Outcome, u32) {
    let config = SacConfig {
        buffer_size: 1_500,
        batch_size: 64,
        ..SacConfig::PENDULUM
    };
    let mut agent = RtSac::boxed(config);
    let (mut env, mut eval_env) = (Pendulum::new(), Pendulum::new());
    let run = RunConfig {
        eval_interval: 1_000,
        ..RunConfig::new(steps, Pendulum::SOLVED_RETURN)
    };
    let mut trainer =
        Trainer::<_, Xoshiro128PlusPlus>::start(&mut *agent, &mut env, run, 0).unwrap();
    let outcome = trainer
        .run(&mut *agent, &mut env, &mut eval_env, &mut ())
        .unwrap();
    (outcome, exported_fnv(&*agent))
}

/// `learn-rt-sac`'s run against the desktop's `LaggedSac` of the same
/// budget: no deadline miss, overrun, dropped tick or unjudged snapshot,
/// and the outcome (steps, solving step, gradient steps, episodes, reported
/// evaluation) and the exported policy equal the desktop's. Prints the
/// `realtime learn-rt-sac:` line; returns the desktop's outcome.
fn check_learn_rt_sac(run: &Run, steps: u64) -> Outcome {
    let (desktop, desktop_fnv) = desktop_lagged_sac(steps);
    let rt = run.line("INFO rt: rate_hz");
    let number = |key: &str| -> u64 { after(rt, key).parse().unwrap() };
    let trained = run.line("INFO trained:");
    let solved_at = after(trained, "solved_at").parse::<u64>().unwrap();
    let bit_identical = after(trained, "steps").parse::<u64>().unwrap() == desktop.steps
        && Some(solved_at).filter(|&s| s > 0) == desktop.solved_at_step
        && after(trained, "updates").parse::<u64>().unwrap() == desktop.updates
        && after(trained, "episodes").parse::<u64>().unwrap() == desktop.episodes
        && bits_after(trained, "eval") == desktop.report.mean.to_bits()
        && hex(after(trained, "policy_fnv")) == desktop_fnv;
    let deadline_misses = number("deadline_misses");
    println!(
        "realtime learn-rt-sac: rate_hz={} worst_tick_instr={} median_tick_instr={} deadline_misses={} solved_at={} bit_identical={}",
        number("rate_hz"),
        number("worst_tick_instr"),
        number("median_tick_instr"),
        deadline_misses,
        Some(solved_at)
            .filter(|&s| s > 0)
            .map_or_else(|| "none".to_owned(), |s| s.to_string()),
        bit_identical
    );
    assert_eq!(run.status, Some(0), "{}", run.lines.join("\n"));
    assert_eq!(deadline_misses, 0, "{rt}");
    assert_eq!(number("overruns"), 0, "{rt}");
    assert_eq!(number("dropped"), 0, "{rt}");
    let judge = run.line("INFO rt: judge_queue_full");
    assert_eq!(after(judge, "judge_queue_full"), "0", "{judge}");
    assert!(desktop.updates > 0, "{desktop:?}");
    assert!(
        bit_identical,
        "learn-rt-sac and the desktop LaggedSac differ: {trained} vs {desktop:?}, policy_fnv {desktop_fnv:#010x}"
    );
    desktop
}

/// `learn-rt-sac` learns Pendulum with SAC while a 20 Hz timer interrupt
/// controls it (one gradient step per tick, 78 % of the period, in the
/// learner's interrupt): its default 2 000-step run is in real time and
/// bit-identical to the desktop's `LaggedSac`. Prints the one `realtime
/// learn-rt-sac:` line.
#[test]
fn learn_rt_sac_realtime_matches_the_desktop_lagged_schedule() {
    let Some(elfs) = firmware() else { return };
    let run = qemu::run(CORTEX_M4F, &elfs["learn-rt-sac"]);
    check_learn_rt_sac(&run, 2_000);
    assert_ram_within(elfs, "learn-rt-sac", &run, SAC_RAM_BUDGET);
}

/// `learn-rt-sac` built with `--features sac-solve` (20 000 steps, early
/// stop) solves Pendulum while it controls it, as the desktop's
/// `LaggedSac` does, bit for bit. Minutes of emulation, hence `--ignored`:
/// `cargo test -p microrl-tests --test firmware learn_rt_sac_solves -- --ignored --nocapture`.
#[test]
#[ignore = "minutes of emulation; run with -- --ignored"]
fn learn_rt_sac_solves_pendulum_like_the_desktop() {
    if !qemu::tools(CORTEX_M4F) {
        return;
    }
    let elfs = qemu::build_in(
        Some("sac-solve"),
        CORTEX_M4F,
        &["learn-rt-sac"],
        &["sac-solve"],
    );
    let run = qemu::boot_within(CORTEX_M4F, &elfs["learn-rt-sac"], true, SAC_SOLVE_TIMEOUT);
    let desktop = check_learn_rt_sac(&run, 20_000);
    assert!(desktop.solved(Pendulum::SOLVED_RETURN), "{desktop:?}");
    println!(
        "learn-rt-sac (sac-solve): solved at step {:?}, {} gradient steps, held-out {} ± {}",
        desktop.solved_at_step, desktop.updates, desktop.report.mean, desktop.report.std
    );
}

/// `fault-drill`'s policy: `agent::Policy<CartPoleContinuous, 32>`.
type DrillPolicy = agent::Policy<microrl::env::CartPoleContinuous, 32>;

/// The committed `policies/cartpole-continuous-32.mrlp`.
const DRILL_POLICY: &str = "policies/cartpole-continuous-32.mrlp";

/// `fault-drill`'s policy file is PPO with the CLI's `cartpole-continuous`
/// configuration (`PpoConfig::CARTPOLE_CONTINUOUS`, a 2 048-step rollout)
/// and 4-32-32-1 networks, seed
/// 0, trained to a held-out mean ≥ 475 — retrained here and compared byte
/// for byte. `MICRORL_BLESS=1` writes it instead.
#[test]
fn drill_policy_is_what_ppo_trains() {
    type Agent = agent::Ppo<microrl::env::CartPoleContinuous, 32, 2048>;
    let mut agent = Box::new(Agent::new(PpoConfig::CARTPOLE_CONTINUOUS));
    let (mut env, mut eval_env) = (
        microrl::env::CartPoleContinuous::new(),
        microrl::env::CartPoleContinuous::new(),
    );
    let mut trainer = Trainer::<_, Xoshiro128PlusPlus>::start(
        &mut *agent,
        &mut env,
        RunConfig::new(200_000, 475.0),
        0,
    )
    .unwrap();
    let outcome = trainer
        .run(&mut *agent, &mut env, &mut eval_env, &mut ())
        .unwrap();
    assert!(outcome.solved(475.0), "{outcome:?}");
    let mut policy = Box::new(DrillPolicy::ZERO);
    microrl::train::Agent::export(&*agent, &mut policy);
    let blob = serialize::to_vec(&*policy).unwrap();
    let path = firmware_dir().join(DRILL_POLICY);
    if std::env::var_os("MICRORL_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &blob).unwrap();
    }
    assert_eq!(
        std::fs::read(&path).expect("the committed drill policy"),
        blob,
        "{DRILL_POLICY} is not what PPO trains (MICRORL_BLESS=1 rewrites it)"
    );
}

/// `fault-drill`'s flash budget: text + data.
const FAULT_DRILL_FLASH_BUDGET: u64 = 64 * 1024;
/// `fault-drill`'s RAM budget: static RAM + peak stack.
const FAULT_DRILL_RAM_BUDGET: u64 = 64 * 1024;

/// `fault-drill` runs `microrl::safety::drill::cartpole::drill` for every
/// scenario, fault and arm on the MCU: each line — every counter and switch
/// of the pieces, the returns, the score's bits, the ticks of the switches
/// and restores, a hash of every event with its tick — equals the recorded
/// one (`tests/fixtures/fault-drill.txt`) and the desktop's drill, and the
/// drills' claims (`microrl_tests::drill::claims`) hold on the MCU's own
/// figures; flash and static RAM + peak stack stay within 64 KB each.
/// Prints the table of docs/safety.md as measured on the MCU;
/// a failure lists every drill that differs (`MISMATCH`, `DESKTOP`) or
/// whose claim fails (`CLAIM`).
#[test]
fn fault_drill_matches_the_record_and_the_desktop() {
    use microrl::safety::drill::Arm;
    use microrl::safety::drill::cartpole::Scenario;
    use microrl_tests::drill::{self as drills, Figures};
    let Some(elfs) = firmware() else { return };
    // Not `run_ok`: a drill that stops is reported with the others below.
    let run = qemu::boot(CORTEX_M4F, &elfs["fault-drill"], false);
    let (flash, _) = footprint(&elfs["fault-drill"]);
    assert!(
        flash <= FAULT_DRILL_FLASH_BUDGET,
        "fault-drill flash {flash} B > {FAULT_DRILL_FLASH_BUDGET} B"
    );
    assert_ram_within(elfs, "fault-drill", &run, FAULT_DRILL_RAM_BUDGET);
    let trained = drills::policy();
    let record = drills::record();
    let mut problems = Vec::new();
    println!(
        "| scenario | fault | envelope held guarded / fallback / unguarded | return guarded / fallback / unguarded | mean score ×1000 guarded / fallback / unguarded | switches to fallback (first at, per episode) | restored (at) | refused |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for scenario in Scenario::ALL {
        // The MCU's figures of a drill, or what became of it.
        let mcu = |fault, arm| {
            let head = drills::head(scenario, fault, arm);
            let found = |prefix: &str| run.lines.iter().find(|l| l.starts_with(prefix));
            match (
                found(&format!("INFO {head}:")),
                found(&format!("ERROR STOPPED {head}:")),
            ) {
                (Some(line), _) => Ok(Figures::parse(line.strip_prefix("INFO ").unwrap_or(line))),
                (None, Some(stopped)) => Err(stopped.trim_start_matches("ERROR ").to_owned()),
                (None, None) => Err(format!("MISSING {head} on the MCU")),
            }
        };
        let nominal = mcu(microrl::safety::drill::Fault::Nominal, Arm::Guarded);
        for &fault in scenario.faults() {
            let mut arms = Vec::new();
            for arm in drills::ARMS {
                let head = drills::head(scenario, fault, arm);
                let figures = match mcu(fault, arm) {
                    Ok(figures) => figures,
                    Err(problem) => {
                        problems.push(problem);
                        continue;
                    }
                };
                if record.get(&head) != Some(&figures.line) {
                    problems.push(format!(
                        "MISMATCH {head}\n  recorded: {}\n  MCU:      {}",
                        record.get(&head).map_or("(none)", String::as_str),
                        figures.line
                    ));
                }
                let desktop = drills::try_drill(&trained, scenario, fault, arm).map_or_else(
                    |e| format!("STOPPED {head}: {e}"),
                    |d| drills::line(scenario, fault, arm, &d),
                );
                if desktop != figures.line {
                    problems.push(format!(
                        "DESKTOP {head}\n  desktop: {desktop}\n  MCU:     {}",
                        figures.line
                    ));
                }
                arms.push(figures);
            }
            let ([g, f, u], Ok(nominal)) = (arms.as_slice(), &nominal) else {
                continue;
            };
            for failed in drills::claims(scenario, fault, g, f, u, nominal) {
                problems.push(format!("CLAIM {failed}\n  MCU: {}", g.line));
            }
            let yes = |b: bool| if b { "yes" } else { "**no**" };
            let sum = |x: &Figures| x.list("returns").iter().sum::<u32>();
            let ticks = |xs: Vec<u32>| {
                let t: Vec<String> = xs
                    .iter()
                    .map(|&t| {
                        if t == u32::MAX {
                            "–".into()
                        } else {
                            t.to_string()
                        }
                    })
                    .collect();
                t.join(" ")
            };
            println!(
                "| {scenario:?} | {fault:?} | {} / {} / {} | {} / {} / {} | {} / {} / {} | {} ({}) | {} ({}) | {} |",
                yes(g.flag("held")),
                yes(f.flag("held")),
                yes(u.flag("held")),
                sum(g),
                sum(f),
                sum(u),
                g.n("score_milli"),
                f.n("score_milli"),
                u.n("score_milli"),
                g.n("to_fallback"),
                ticks(g.list("switch_at")),
                g.n("rolled_back"),
                ticks(g.list("restored_at")),
                g.n("refusals"),
            );
        }
    }
    if run.status != Some(0) {
        problems.push(format!("fault-drill exit status {:?}", run.status));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
