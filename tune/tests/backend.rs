//! Depending on `microrl-tune` leaves a user's maths backend alone.
//!
//! Cargo unifies a package's features over everything that depends on it:
//! had this crate asked `microrl` for `fast-math` (as the `microrl` command
//! line does), every crate depending on it would train with `fast-math`
//! too, and its policies' bits would change without a word. The backend is
//! the only feature that changes arithmetic (`docs/formats.md`, "Maths
//! backend"), so a tuner that switches none of them on trains the user's
//! plant to the same `policy_crc32` as the user's crate alone.

use std::process::Command;

/// The `microrl` features that building `microrl-tune` alone switches on,
/// as `cargo tree` resolves them (normal dependencies, this package only).
fn microrl_features() -> String {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "--manifest-path",
            manifest,
            "-p",
            "microrl-tune",
        ])
        .args(["-e", "features,normal", "-i", "microrl", "--prefix", "none"])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn depending_on_the_tuner_switches_on_no_maths_backend() {
    let features = microrl_features();
    assert!(features.contains("microrl feature \"std\""), "{features}");
    for backend in ["fast-math", "micromath"] {
        assert!(
            !features.contains(&format!("microrl feature \"{backend}\"")),
            "microrl-tune switches on `{backend}` for its users:\n{features}"
        );
    }
}
