//! The same trained bits from the baseline x86-64 build, an AVX2 build and
//! the workspace's own build for this CPU.
//!
//! Builds `core/examples/bit_identity.rs` (PPO on CartPole and on Pendulum,
//! 12 updates from seed 0, fingerprints of the weights and diagnostics)
//! three times in release, each in its own target directory: for baseline
//! x86-64 (`-C target-cpu=x86-64`: SSE2, 4-wide vectors), for x86-64-v3
//! (`-C target-cpu=x86-64-v3`: AVX2 8-wide vectors, FMA, BMI2) and with the
//! workspace's `.cargo/config.toml` (`-C target-cpu=native`: AVX-512 where
//! the CPU has it), then runs all three and requires identical output.
//! Wider vectors must not change a summation order, and the FMA unit must
//! never fuse a multiply into an add.
//!
//! The AVX2 build is skipped, with one loud line, on a CPU without AVX2 and
//! FMA (it could not run there). The builds take about a minute and a half.

use std::path::Path;
use std::process::Command;

/// `cargo run --release --example bit_identity` with `rustflags`, or with
/// the workspace's own flags for `None`.
fn run_example(target_dir: &Path, rustflags: Option<&str>) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root");
    let mut command = Command::new(cargo);
    match rustflags {
        Some(flags) => command.env("RUSTFLAGS", flags),
        None => command.env_remove("RUSTFLAGS"),
    };
    let out = command
        .current_dir(root)
        .args([
            "run",
            "--release",
            "-q",
            "-p",
            "microrl",
            "--example",
            "bit_identity",
        ])
        .arg("--target-dir")
        .arg(target_dir)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "bit_identity ({rustflags:?}) failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

#[test]
fn avx2_and_native_builds_train_the_same_bits_as_the_baseline_build() {
    #[cfg(target_arch = "x86_64")]
    {
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let baseline = run_example(&tmp.join("simd-baseline"), Some("-C target-cpu=x86-64"));
        print!("baseline x86-64:\n{baseline}");
        assert_eq!(baseline.lines().count(), 2, "{baseline}");
        let native = run_example(&tmp.join("simd-native"), None);
        print!("the workspace's build (target-cpu=native):\n{native}");
        assert_eq!(native, baseline, "the native build trained different bits");
        let v3 = is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("bmi2");
        if !v3 {
            eprintln!(
                "\n*** SKIPPING the AVX2 bit-identity build: this CPU has no AVX2/FMA (x86-64-v3) ***\n"
            );
            return;
        }
        let avx2 = run_example(&tmp.join("simd-avx2"), Some("-C target-cpu=x86-64-v3"));
        print!("x86-64-v3 (AVX2, FMA):\n{avx2}");
        assert_eq!(avx2, baseline, "the AVX2 build trained different bits");
    }
    #[cfg(not(target_arch = "x86_64"))]
    eprintln!("\n*** SKIPPING the SIMD bit-identity test: not an x86-64 host ***\n");
}
