//! The same trained bits from the baseline x86-64 build and an AVX2 build.
//!
//! Builds `core/examples/bit_identity.rs` (PPO on CartPole and on Pendulum,
//! 12 updates from seed 0, fingerprints of the weights and diagnostics)
//! twice in release, each in its own target directory: for baseline x86-64
//! (`-C target-cpu=x86-64`: SSE2, 4-wide vectors) and for x86-64-v3
//! (`-C target-cpu=x86-64-v3`: AVX2 8-wide vectors, FMA, BMI2), then runs
//! both and requires identical output. Wider vectors must not change a
//! summation order, and the FMA unit must never fuse a multiply into an add.
//!
//! Skipped, with one loud line, on a CPU without AVX2 and FMA (the AVX2 build
//! could not run there). The two builds take about a minute.

use std::path::Path;
use std::process::Command;

/// `cargo run --release --example bit_identity` with `rustflags`.
fn run_example(target_dir: &Path, rustflags: &str) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root");
    let out = Command::new(cargo)
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
        .env("RUSTFLAGS", rustflags)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "bit_identity ({rustflags}) failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

#[test]
fn avx2_build_trains_the_same_bits_as_the_baseline_build() {
    #[cfg(target_arch = "x86_64")]
    {
        let v3 = is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("bmi2");
        if !v3 {
            eprintln!(
                "\n*** SKIPPING the AVX2 bit-identity test: this CPU has no AVX2/FMA (x86-64-v3) ***\n"
            );
            return;
        }
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let baseline = run_example(&tmp.join("simd-baseline"), "-C target-cpu=x86-64");
        let avx2 = run_example(&tmp.join("simd-avx2"), "-C target-cpu=x86-64-v3");
        print!("baseline x86-64:\n{baseline}x86-64-v3 (AVX2, FMA):\n{avx2}");
        assert_eq!(baseline.lines().count(), 2, "{baseline}");
        assert_eq!(avx2, baseline, "the AVX2 build trained different bits");
    }
    #[cfg(not(target_arch = "x86_64"))]
    eprintln!("\n*** SKIPPING the AVX2 bit-identity test: not an x86-64 host ***\n");
}
