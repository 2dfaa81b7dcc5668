//! Helpers the `microrl` binary's integration tests share (`cli`,
//! `hardening`, `import`): running the binary and reading what it says,
//! per-test scratch directories, and the SB3 fixtures.
//!
//! Every test file is its own crate and includes this module with
//! `mod common;`; a file uses only some of the helpers, hence
//! `allow(dead_code)`.

#![allow(dead_code)]

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use safetensors::tensor::TensorView;
use safetensors::{Dtype, SafeTensors};

/// Runs `microrl args` (with `RUST_BACKTRACE=1`, so that an error that
/// carried a backtrace would show it): success, standard output (lossy: an
/// output may be written to standard output), standard error.
pub fn microrl(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_microrl"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run microrl");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Runs microrl expecting a refusal: a non-zero exit (not a signal) and
/// exactly one line on standard error, `error: …`, even with backtraces
/// switched on (anyhow would print one). Returns that line.
pub fn refused(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_microrl"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run microrl");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!out.status.success(), "{args:?} accepted: {stderr}");
    assert!(out.status.code().is_some(), "{args:?}: killed by a signal");
    assert_one_line_error(&stderr, args);
    stderr.trim_end().to_owned()
}

/// Runs microrl expecting success; returns its standard output.
pub fn succeeds(args: &[&str]) -> String {
    let (ok, stdout, stderr) = microrl(args);
    assert!(ok, "{stderr}");
    stdout
}

/// Runs microrl expecting a failure whose standard error mentions `needle`.
pub fn fails_naming(args: &[&str], needle: &str) {
    let (ok, _, stderr) = microrl(args);
    assert!(!ok, "{args:?} accepted");
    assert!(stderr.contains(needle), "{stderr}");
}

/// [`refused`], with every one of `needles` in the error line; returns it.
pub fn refused_naming(args: &[&str], needles: &[&str]) -> String {
    let line = refused(args);
    for needle in needles {
        assert!(line.contains(needle), "{args:?}: no `{needle}` in {line}");
    }
    line
}

/// `stderr` is exactly one line, `error: …`, and no panic.
pub fn assert_one_line_error(stderr: &str, what: impl std::fmt::Debug) {
    let lines: Vec<&str> = stderr.trim_end().lines().collect();
    assert!(
        lines.len() == 1 && lines[0].starts_with("error: "),
        "{what:?}: not a one-line error:\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{what:?}: {stderr}");
}

/// The JSON object on the last line of `stdout` (the `--json` contract).
pub fn last_json(stdout: &str) -> serde_json::Value {
    let last = stdout.lines().last().expect("some output");
    let value: serde_json::Value = serde_json::from_str(last).expect("last line is JSON");
    assert!(value.is_object());
    value
}

/// A fresh, empty scratch directory for test `name` of this test file and
/// process.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "microrl-{}-{name}-{}",
        env!("CARGO_CRATE_NAME"),
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// `p` as a command-line argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The names in `dir`, sorted.
pub fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Asserts that scratch directory `dir` holds exactly `names` (sorted:
/// nothing left behind), then removes it.
pub fn remove_holding(dir: &Path, names: &[&str]) {
    assert_eq!(listing(dir), names);
    fs::remove_dir_all(dir).unwrap();
}

/// The SB3 fixture `name` (`tests/fixtures/sb3/`).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/sb3")
        .join(name)
}

/// A safetensors file's tensors as (name, shape, bytes), in file order.
pub type Tensors = Vec<(String, Vec<usize>, Vec<u8>)>;

/// The tensors and the metadata of the SB3 fixture `name`.
pub fn fixture_tensors(name: &str) -> (Tensors, Option<HashMap<String, String>>) {
    let bytes = fs::read(fixture(name)).unwrap();
    let file = SafeTensors::deserialize(&bytes).unwrap();
    let tensors = file
        .iter()
        .map(|(n, t)| (n.to_owned(), t.shape().to_vec(), t.data().to_vec()))
        .collect();
    let (_, header) = SafeTensors::read_metadata(&bytes).unwrap();
    (tensors, header.metadata().clone())
}

/// Writes `tensors` (all `f32`) and `metadata` to `path` as safetensors.
pub fn write_tensors(path: &Path, tensors: &Tensors, metadata: Option<HashMap<String, String>>) {
    let views: Vec<_> = tensors
        .iter()
        .map(|(n, shape, data)| {
            let view = TensorView::new(Dtype::F32, shape.clone(), data).unwrap();
            (n.clone(), view)
        })
        .collect();
    fs::write(path, safetensors::serialize(views, metadata).unwrap()).unwrap();
}
