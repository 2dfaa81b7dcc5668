//! Building `firmware-example` for a Cortex-M target, booting a binary in
//! `qemu-system-arm` and decoding its defmt output — for test files that
//! run firmware (`mod qemu;`).
//!
//! The rules of `tests/firmware.rs` hold here too: without the Rust target
//! or `qemu-system-arm`, [`tools`] says what is missing and how to install
//! it on one line of standard error and the test skips; with
//! `MICRORL_REQUIRE_FIRMWARE=1` (CI) it fails instead; `MICRORL_SKIP_QEMU=1`
//! skips on purpose.
//!
//! `tests/firmware.rs` (Cortex-M4F only) and `tests/firmware_imported.rs`
//! (both boards) each use part of it, hence `allow(dead_code)`.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use microrl::Controller;
use microrl::env::{CartPole, Env};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro128PlusPlus;

const SKIP_VAR: &str = "MICRORL_SKIP_QEMU";
const REQUIRE_VAR: &str = "MICRORL_REQUIRE_FIRMWARE";
/// Longest a single firmware run may take before it counts as hung.
const QEMU_TIMEOUT: Duration = Duration::from_secs(600);

/// An emulated board: the Rust target its firmware is built for and QEMU's
/// machine options.
#[derive(Clone, Copy, Debug)]
pub struct Board {
    /// Rust target triple.
    pub target: &'static str,
    /// `qemu-system-arm` options selecting the machine.
    pub machine: &'static [&'static str],
    /// What it is, for messages.
    pub name: &'static str,
}

/// Arm MPS2+ AN386: Cortex-M4F (`thumbv7em-none-eabihf`), the firmware's default.
pub const CORTEX_M4F: Board = Board {
    target: "thumbv7em-none-eabihf",
    machine: &["-cpu", "cortex-m4", "-machine", "mps2-an386"],
    name: "Cortex-M4F",
};

/// Netduino Plus 2: an STM32F405RG (Cortex-M4F, 1 MB flash at 0x0800_0000,
/// 128 KB SRAM + 64 KB CCM), the Crazyflie 2.x's MCU. Its firmware is the
/// Cortex-M4F build linked with the `stm32f405` feature's layout
/// ([`build_in`] into its own target directory).
pub const NETDUINOPLUS2: Board = Board {
    target: "thumbv7em-none-eabihf",
    machine: &["-machine", "netduinoplus2"],
    name: "STM32F405 (netduinoplus2)",
};

/// BBC micro:bit (nRF51822): Cortex-M0, no FPU, 256 KB flash, 16 KB RAM.
pub const CORTEX_M0: Board = Board {
    target: "thumbv6m-none-eabi",
    machine: &["-machine", "microbit"],
    name: "Cortex-M0",
};

pub fn firmware_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../firmware-example")
}

fn env_is_1(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| v == "1")
}

/// One line on stderr, which the test harness does not capture.
fn loud(message: &str) {
    let _ = writeln!(std::io::stderr(), "{message}");
}

/// `true` when `board`'s firmware can be built and run; `false` (after one
/// loud line) when the test should skip; panics when it may not skip.
pub fn tools(board: Board) -> bool {
    let required = env_is_1(REQUIRE_VAR);
    if env_is_1(SKIP_VAR) && !required {
        loud(&format!(
            "SKIPPING the firmware tests (QEMU, {}): {SKIP_VAR}=1",
            board.name
        ));
        return false;
    }
    let mut missing = Vec::new();
    let mut install = Vec::new();
    if !target_installed(board.target) {
        missing.push(format!("the Rust target `{}`", board.target));
        install.push(format!("`rustup target add {}`", board.target));
    }
    let qemu = Command::new("qemu-system-arm").arg("--version").output();
    if !qemu.is_ok_and(|o| o.status.success()) {
        missing.push("`qemu-system-arm`".to_owned());
        install.push(
            "`apt-get install qemu-system-arm binutils-arm-none-eabi` (Debian/Ubuntu; \
             macOS: `brew install qemu arm-none-eabi-binutils`)"
                .to_owned(),
        );
    }
    if missing.is_empty() {
        return true;
    }
    let message = format!(
        "missing {}: install with {} (or set {SKIP_VAR}=1 to skip these tests)",
        missing.join(" and "),
        install.join(" and ")
    );
    assert!(!required, "{REQUIRE_VAR}=1, but {message}");
    loud(&format!(
        "SKIPPING the firmware tests (QEMU, {}): {message}",
        board.name
    ));
    false
}

/// Whether the toolchain `firmware-example/` builds with has `target`.
fn target_installed(target: &str) -> bool {
    let rustup = Command::new("rustup")
        .current_dir(firmware_dir())
        .args(["target", "list", "--installed"])
        .output();
    if let Ok(out) = rustup
        && out.status.success()
    {
        return String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.trim() == target);
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    Command::new(rustc)
        .current_dir(firmware_dir())
        .args(["--print", "sysroot"])
        .output()
        .is_ok_and(|out| {
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
                .join("lib/rustlib")
                .join(target)
                .is_dir()
        })
}

/// `cargo build --release --target <board> --bin …` in `firmware-example/`;
/// the ELFs by binary name.
pub fn build(board: Board, bins: &[&str]) -> HashMap<String, PathBuf> {
    build_in(None, board, bins, &[])
}

/// [`build`] with the firmware's cargo `features` enabled (on top of the
/// defaults), into `firmware-example/target/<dir>` when `dir` is given
/// instead of the default target directory: a build with other
/// features writes its ELFs to the same paths, so a test that boots them
/// while others boot the default build's needs a directory of its own.
pub fn build_in(
    dir: Option<&str>,
    board: Board,
    bins: &[&str],
    features: &[&str],
) -> HashMap<String, PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(firmware_dir()).args([
        "build",
        "--release",
        "--target",
        board.target,
        "--message-format=json-render-diagnostics",
    ]);
    if let Some(dir) = dir {
        cmd.arg("--target-dir")
            .arg(firmware_dir().join("target").join(dir));
    }
    for bin in bins {
        cmd.args(["--bin", bin]);
    }
    if !features.is_empty() {
        cmd.args(["--features", &features.join(",")]);
    }
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .expect("run cargo for firmware-example");
    assert!(
        out.status.success(),
        "building firmware-example for {} failed (see above)",
        board.target
    );
    let mut elfs = HashMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] == "compiler-artifact"
            && let (Some(name), Some(exe)) =
                (msg["target"]["name"].as_str(), msg["executable"].as_str())
        {
            elfs.insert(name.to_owned(), PathBuf::from(exe));
        }
    }
    elfs
}

/// One decoded firmware run.
pub struct Run {
    /// QEMU's exit status (the firmware's semihosting exit code).
    pub status: Option<i32>,
    /// `LEVEL message` per defmt frame.
    pub lines: Vec<String>,
}

impl Run {
    /// The message of the first line starting with `LEVEL prefix`.
    pub fn line(&self, level_and_prefix: &str) -> &str {
        self.lines
            .iter()
            .find(|l| l.starts_with(level_and_prefix))
            .unwrap_or_else(|| panic!("no `{level_and_prefix}` line in\n{}", self.lines.join("\n")))
    }
}

/// Boots `elf` on `board` with `-icount shift=0` (one virtual nanosecond
/// per instruction), waits and decodes its defmt output.
pub fn run(board: Board, elf: &Path) -> Run {
    boot(board, elf, true)
}

/// Boots `elf` on `board`, with `-icount shift=0` iff `icount`, waits (at
/// most [`QEMU_TIMEOUT`]) and decodes its defmt output.
pub fn boot(board: Board, elf: &Path, icount: bool) -> Run {
    boot_within(board, elf, icount, QEMU_TIMEOUT)
}

/// [`boot`] with another limit than [`QEMU_TIMEOUT`] (runs of minutes).
pub fn boot_within(board: Board, elf: &Path, icount: bool, timeout: Duration) -> Run {
    let mut cmd = Command::new("qemu-system-arm");
    cmd.args(board.machine).args([
        "-nographic",
        "-semihosting-config",
        "enable=on,target=native",
    ]);
    if icount {
        cmd.args(["-icount", "shift=0"]);
    }
    let mut child = cmd
        .arg("-kernel")
        .arg(elf)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start qemu-system-arm");
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        stdout.read_to_end(&mut bytes).map(|_| bytes)
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for qemu") {
            break status;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            panic!("{} did not finish within {timeout:?}", elf.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let bytes = reader
        .join()
        .expect("reader thread")
        .expect("read qemu stdout");
    let lines = decode_defmt(elf, &bytes);
    for line in &lines {
        println!(
            "[{} {}] {line}",
            board.name,
            elf.file_name().unwrap_or_default().to_string_lossy()
        );
    }
    Run {
        status: status.code(),
        lines,
    }
}

fn decode_defmt(elf: &Path, bytes: &[u8]) -> Vec<String> {
    let elf_bytes = std::fs::read(elf).expect("read the firmware ELF");
    let table = defmt_decoder::Table::parse(&elf_bytes)
        .expect("parse the ELF's defmt table")
        .expect("the ELF has defmt data");
    let mut decoder = table.new_stream_decoder();
    decoder.received(bytes);
    let mut lines = Vec::new();
    loop {
        match decoder.decode() {
            Ok(frame) => {
                let level = frame.level().map_or("", |l| l.as_str());
                lines.push(format!(
                    "{} {}",
                    level.to_uppercase(),
                    frame.display_message()
                ));
            }
            Err(defmt_decoder::DecodeError::UnexpectedEof) => break,
            Err(defmt_decoder::DecodeError::Malformed) => {
                panic!("malformed defmt frame after {lines:?}")
            }
        }
    }
    lines
}

/// The token after `key` in a whitespace-separated log message.
pub fn after<'a>(message: &'a str, key: &str) -> &'a str {
    let mut tokens = message.split_whitespace();
    tokens
        .by_ref()
        .find(|t| *t == key)
        .unwrap_or_else(|| panic!("no `{key}` in `{message}`"));
    tokens
        .next()
        .unwrap_or_else(|| panic!("nothing after `{key}` in `{message}`"))
}

/// `0x…` (optionally in parentheses) as a `u32`.
pub fn hex(token: &str) -> u32 {
    let t = token.trim_matches(|c| c == '(' || c == ')' || c == ',');
    u32::from_str_radix(t.trim_start_matches("0x"), 16)
        .unwrap_or_else(|e| panic!("`{token}` is not hex: {e}"))
}

/// The firmware's 32-bit FNV-1a (`microrl_firmware::Fnv1a`).
#[derive(Clone, Copy)]
pub struct Fnv1a(pub u32);

impl Fnv1a {
    pub fn new() -> Self {
        Self(0x811c_9dc5)
    }
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u32::from(b)).wrapping_mul(0x0100_0193);
        }
    }
    pub fn write_u32(&mut self, x: u32) {
        self.write(&x.to_le_bytes());
    }
}

/// CartPole episodes from `seed` as the firmware plays them (`infer`,
/// `imported`): per episode the return's bits, the length, and the FNV-1a
/// of the actions and of the observations.
pub fn episodes_on_host<P: Controller<4, Action = usize>>(
    policy: &P,
    episodes: u32,
    seed: u64,
) -> Vec<(u32, u32, u32, u32)> {
    let mut env = CartPole::new();
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(seed);
    (0..episodes)
        .map(|_| {
            let mut obs = env.reset(&mut rng);
            let (mut ret, mut len) = (0.0f32, 0u32);
            let (mut actions, mut observations) = (Fnv1a::new(), Fnv1a::new());
            loop {
                for x in obs.iter() {
                    observations.write_u32(x.to_bits());
                }
                let action = policy.act(&obs).unwrap();
                actions.write(&[action as u8]);
                let step = env.step(action).unwrap();
                ret += step.reward;
                len += 1;
                obs = step.obs;
                if step.done() {
                    break;
                }
            }
            (ret.to_bits(), len, actions.0, observations.0)
        })
        .collect()
}

/// Flash (text + data) and static RAM (data + bss) of `elf`, with
/// `arm-none-eabi-size` (`None` without it).
pub fn footprint(elf: &Path) -> Option<(u64, u64)> {
    let out = Command::new("arm-none-eabi-size").arg(elf).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let numbers: Vec<u64> = text
        .lines()
        .nth(1)?
        .split_whitespace()
        .take(3)
        .map(|n| n.parse().ok())
        .collect::<Option<_>>()?;
    Some((numbers[0] + numbers[1], numbers[1] + numbers[2]))
}
