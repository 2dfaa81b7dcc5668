//! What the `microrl` binary promises about the files it touches and the
//! sizes it accepts: outputs never replace a device node, FIFO or socket;
//! leftovers of killed writes are cleaned up; every size option is bounded;
//! import messages name the tensor or field; batch `act`; `plot` of a huge
//! curve.

mod common;

use std::fs;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{
    Tensors, fixture, fixture_tensors, last_json, listing, microrl, refused, refused_naming,
    remove_holding, s, succeeds, temp_dir, write_tensors,
};

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// `mknod PATH c MAJOR MINOR` (root only).
fn mknod(path: &Path, major: u32, minor: u32) -> bool {
    Command::new("mknod")
        .args([
            "-m",
            "666",
            s(path),
            "c",
            &major.to_string(),
            &minor.to_string(),
        ])
        .status()
        .is_ok_and(|st| st.success())
}

/// A FIFO given as `--out` receives the output through the pipe and is still
/// a FIFO afterwards (it is not replaced by a regular file).
#[test]
fn an_output_fifo_is_written_through_not_replaced() {
    let dir = temp_dir("fifo");
    let fifo = dir.join("out.fifo");
    let status = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(status.success());
    // Opened read-write, the FIFO has a reader (so the writer's open does not
    // block) and the test can read what arrived without a second thread.
    let mut pipe = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let stdout = succeeds(&["init", "--seed", "3", "--out", s(&fifo), "--json"]);
    assert!(
        fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(),
        "the FIFO was replaced"
    );
    let bytes = last_json(&stdout)["bytes"].as_u64().unwrap() as usize;
    let mut got = vec![0; bytes];
    pipe.read_exact(&mut got).unwrap();
    // What came through the pipe is the policy file init writes.
    let file = dir.join("p.mrlp");
    succeeds(&["init", "--seed", "3", "--out", s(&file)]);
    assert_eq!(got, fs::read(&file).unwrap());
    // Export writes through the FIFO too.
    succeeds(&["export", s(&file), "--out", s(&fifo)]);
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    pipe.read_exact(&mut got).unwrap();
    assert_eq!(got, fs::read(&file).unwrap());
    remove_holding(&dir, &["out.fifo", "p.mrlp"]);
}

/// A socket is not written through: refused, naming it, and left in place.
#[test]
fn an_output_socket_is_refused_and_left_in_place() {
    let dir = temp_dir("socket");
    let sock = dir.join("s.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    refused_naming(
        &["init", "--out", s(&sock)],
        &["s.sock", "not a regular file"],
    );
    assert!(fs::symlink_metadata(&sock).unwrap().file_type().is_socket());
    remove_holding(&dir, &["s.sock"]);
}

/// Character devices (made with `mknod`, so root only): `/dev/null`'s twin
/// takes the output, `/dev/full`'s refuses it with ENOSPC — reported as one
/// `error:` line naming the path — and both nodes, and a symbolic link to
/// one, stay what they were.
#[test]
fn an_output_device_node_is_written_through_and_its_errors_reported() {
    if !is_root() {
        eprintln!(
            "SKIPPED an_output_device_node_is_written_through_and_its_errors_reported: \
             mknod needs root"
        );
        return;
    }
    let dir = temp_dir("devnode");
    let full = dir.join("full");
    let null = dir.join("null");
    if !(mknod(&full, 1, 7) && mknod(&null, 1, 3)) {
        eprintln!("SKIPPED: mknod failed (no device nodes on this filesystem?)");
        fs::remove_dir_all(&dir).unwrap();
        return;
    }
    let policy = dir.join("p.mrlp");
    succeeds(&["init", "--out", s(&policy)]);
    let err = refused(&["init", "--out", s(&full)]);
    assert!(
        err.contains("No space left on device") && err.contains(s(&full)),
        "{err}"
    );
    for args in [
        &["export", s(&policy), "--out", s(&full)][..],
        &[
            "export",
            s(&policy),
            "--format",
            "safetensors",
            "--out",
            s(&full),
        ][..],
        &[
            "reward-model",
            "--segments",
            "20",
            "--pairs",
            "20",
            "--epochs",
            "1",
            "--out",
            s(&full),
        ][..],
    ] {
        let err = refused(args);
        assert!(err.contains("No space left on device"), "{args:?}: {err}");
    }
    succeeds(&["init", "--out", s(&null)]);
    let link = dir.join("link");
    std::os::unix::fs::symlink(&null, &link).unwrap();
    succeeds(&["export", s(&policy), "--out", s(&link)]);
    for node in [&full, &null] {
        let kind = fs::symlink_metadata(node).unwrap().file_type();
        assert!(kind.is_char_device(), "{} was replaced", node.display());
    }
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    remove_holding(&dir, &["full", "link", "null", "p.mrlp"]);
}

/// `--out /dev/stdout` writes the file to standard output. (Tested through
/// a link of its own to `/proc/self/fd/1`, what `/dev/stdout` is on Linux,
/// so that a regression cannot replace the system's `/dev/stdout`.)
#[test]
fn out_dev_stdout_writes_to_standard_output() {
    let dir = temp_dir("stdout");
    let stdout = dir.join("stdout");
    std::os::unix::fs::symlink("/proc/self/fd/1", &stdout).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_microrl"))
        .args(["init", "--seed", "3", "--out", s(&stdout)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        fs::symlink_metadata(&stdout)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let file = dir.join("p.mrlp");
    succeeds(&["init", "--seed", "3", "--out", s(&file)]);
    let blob = fs::read(&file).unwrap();
    assert!(out.stdout.starts_with(&blob), "the policy is not on stdout");
    remove_holding(&dir, &["p.mrlp", "stdout"]);
}

/// Temporary siblings left by a killed write (`.NAME.tmp-PID-N`, of a
/// process that no longer runs) are removed by the next write of NAME;
/// those of live processes and of other names are not.
#[test]
fn stale_temporary_files_of_a_killed_write_are_removed() {
    let dir = temp_dir("stale-tmp");
    // u32::MAX is above any pid_max: no such process runs.
    let dead = format!(".p.mrlp.tmp-{}-0", u32::MAX);
    // Process 1 always runs.
    let live = ".p.mrlp.tmp-1-0".to_string();
    let other = format!(".q.mrlp.tmp-{}-0", u32::MAX);
    let unrelated = ".p.mrlp.tmp-notes".to_string();
    for name in [&dead, &live, &other, &unrelated] {
        fs::write(dir.join(name), b"partial").unwrap();
    }
    succeeds(&["init", "--out", s(&dir.join("p.mrlp"))]);
    let mut expected = vec![live, other, unrelated, "p.mrlp".to_string()];
    expected.sort();
    assert_eq!(listing(&dir), expected);
    fs::remove_dir_all(&dir).unwrap();
}

/// A checkpoint staging directory left by a run killed while checkpointing
/// (`DIR.checkpoint.tmp-PID-N/`) is removed when the run's outputs are
/// next written.
#[test]
fn stale_checkpoint_staging_is_removed_when_the_run_is_written() {
    let dir = temp_dir("stale-ckpt");
    let stale = dir.join(format!("run.checkpoint.tmp-{}-0", u32::MAX));
    fs::create_dir(&stale).unwrap();
    fs::write(stale.join("state.bin"), b"partial").unwrap();
    let live = dir.join("run.checkpoint.tmp-1-0");
    fs::create_dir(&live).unwrap();
    let run = dir.join("run");
    succeeds(&["train", "--steps", "1024", "--out", s(&run)]);
    remove_holding(&dir, &["run", "run.checkpoint.tmp-1-0"]);
}

/// Every size option of `reward-model` and `validate --seeds` is bounded:
/// one `error:` line naming the option and its maximum, before any memory
/// is allocated or any work started.
#[test]
fn size_options_are_bounded_naming_the_option_and_the_bound() {
    let dir = temp_dir("bounds");
    let out = dir.join("rm.mrlp");
    for (option, value, bound) in [
        ("--segments", "1000000000", "100000"),
        ("--pairs", "1000000000000", "10000000"),
        ("--epochs", "4294967295", "100000"),
    ] {
        let err = refused(&["reward-model", option, value, "--out", s(&out)]);
        assert!(
            err.contains(option) && err.contains(bound),
            "{option}: {err}"
        );
    }
    for seeds in ["4294967296", "1025"] {
        refused_naming(
            &["validate", "--seeds", seeds, "--steps", "256"],
            &["--seeds", "1024"],
        );
    }
    remove_holding(&dir, &[]);
}

/// Spawns `microrl args` (standard output and error captured if `capture`,
/// else discarded) and polls it every `poll` until it exits or `stop()`
/// says to stop it; then kills it. Returns its output if it exited by itself.
fn microrl_until(
    args: &[&str],
    capture: bool,
    poll: Duration,
    mut stop: impl FnMut() -> bool,
) -> Option<Output> {
    let stdio = || {
        if capture {
            Stdio::piped()
        } else {
            Stdio::null()
        }
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_microrl"))
        .args(args)
        .stdout(stdio())
        .stderr(stdio())
        .spawn()
        .unwrap();
    while !stop() {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(poll);
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Runs microrl, killing it after `secs` seconds; `None` if it had to be killed.
fn microrl_within(args: &[&str], secs: u64) -> Option<Output> {
    let start = Instant::now();
    microrl_until(args, true, Duration::from_millis(50), || {
        start.elapsed().as_secs() >= secs
    })
}

/// Segments that all stayed upright equally long give no pair to label:
/// refused, instead of looking for one for ever (seed 4 draws two such
/// segments).
#[test]
fn reward_model_without_a_labellable_pair_is_refused_not_hung() {
    let dir = temp_dir("rm-hang");
    let out = dir.join("rm.mrlp");
    let args = [
        "reward-model",
        "--segments",
        "2",
        "--pairs",
        "1",
        "--epochs",
        "1",
        "--seed",
        "4",
        "--out",
        s(&out),
    ];
    let output = microrl_within(&args, 60).expect("reward-model hung");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.contains("--segments"),
        "{stderr}"
    );
    assert!(!out.exists());
    fs::remove_dir_all(&dir).unwrap();
}

/// The SB3 fixture `name` with `edit` applied to its (name, shape, bytes)
/// tensors, written to `dir/out`.
fn edited_fixture(dir: &Path, name: &str, out: &str, edit: impl FnOnce(&mut Tensors)) -> PathBuf {
    let (mut tensors, metadata) = fixture_tensors(name);
    edit(&mut tensors);
    let path = dir.join(out);
    write_tensors(&path, &tensors, metadata);
    path
}

/// Sets element `index` of tensor `name` to `value`.
fn set(tensors: &mut [(String, Vec<usize>, Vec<u8>)], name: &str, index: usize, value: f32) {
    let t = tensors.iter_mut().find(|t| t.0 == name).unwrap();
    t.2[4 * index..4 * index + 4].copy_from_slice(&value.to_le_bytes());
}

/// Import refusals name the tensor by the file's own name, or the
/// statistics field by its JSON key, with the offending value and the bound
/// (stated once).
#[test]
fn import_refusals_name_the_tensor_or_field_and_the_bound() {
    let dir = temp_dir("import-names");
    let out = dir.join("p.mrlp");
    let import = |file: &Path, env: &str, stats: Option<&Path>| {
        let mut args = vec![
            "import",
            "--from",
            "sb3",
            s(file),
            "--env",
            env,
            "--out",
            s(&out),
        ];
        if let Some(stats) = stats {
            args.extend(["--vecnormalize", s(stats)]);
        }
        refused(&args)
    };
    // A NaN weight: row 3, column 5 of the second hidden layer.
    let nan = edited_fixture(&dir, "sb3-cartpole.safetensors", "nan.safetensors", |t| {
        set(t, "mlp_extractor.policy_net.2.weight", 3 * 64 + 5, f32::NAN)
    });
    let err = import(&nan, "cartpole", None);
    assert!(
        err.contains("`mlp_extractor.policy_net.2.weight`")
            && err.contains("NaN")
            && err.contains("[3, 5]"),
        "{err}"
    );
    let inf = edited_fixture(&dir, "sb3-cartpole.safetensors", "inf.safetensors", |t| {
        set(t, "action_net.bias", 1, f32::NEG_INFINITY)
    });
    let err = import(&inf, "cartpole", None);
    assert!(
        err.contains("`action_net.bias`") && err.contains("-inf") && err.contains("[1]"),
        "{err}"
    );
    // log_std beyond microrl's bound.
    let wide = edited_fixture(&dir, "sb3-pendulum.safetensors", "wide.safetensors", |t| {
        set(t, "log_std", 0, 1e30)
    });
    let err = import(&wide, "pendulum", None);
    assert!(
        err.contains("`log_std`") && err.contains("1e30") && err.contains("[-20, 20]"),
        "{err}"
    );
    assert_eq!(err.matches("[-20, 20]").count(), 1, "{err}");
    assert!(!err.contains("tensor 6"), "{err}");

    // VecNormalize statistics: a count no f32 holds.
    let cartpole = fixture("sb3-cartpole-vecnorm.safetensors");
    let text = fs::read_to_string(fixture("sb3-cartpole-vecnorm.vecnormalize.json")).unwrap();
    let mut stats: serde_json::Value = serde_json::from_str(&text).unwrap();
    stats["obs_rms"]["count"] = serde_json::json!(1e300);
    let huge = dir.join("huge.json");
    fs::write(&huge, stats.to_string()).unwrap();
    let err = import(&cartpole, "cartpole", Some(&huge));
    assert!(
        err.contains("obs_rms.count") && err.contains("1e300") && err.contains("3.4028235e38"),
        "{err}"
    );
    // Python's json.dump writes NaN and Infinity, which JSON does not allow.
    let python = dir.join("python.json");
    fs::write(&python, text.replacen("-0.07451463542606959", "NaN", 1)).unwrap();
    let err = import(&cartpole, "cartpole", Some(&python));
    assert!(
        err.contains("obs_rms.mean[1]") && err.contains("NaN"),
        "{err}"
    );
    fs::write(&python, text.replacen("20481.0001", "Infinity", 1)).unwrap();
    let err = import(&cartpole, "cartpole", Some(&python));
    assert!(
        err.contains("obs_rms.count") && err.contains("Infinity"),
        "{err}"
    );
    // ... in a field microrl does not read, they are harmless.
    fs::write(
        &python,
        text.replacen(
            "\"clip_obs\"",
            "\"ret_rms\": {\"var\": [-Infinity, NaN]}, \"clip_obs\"",
            1,
        ),
    )
    .unwrap();
    succeeds(&[
        "import",
        "--from",
        "sb3",
        s(&cartpole),
        "--env",
        "cartpole",
        "--vecnormalize",
        s(&python),
        "--out",
        s(&out),
    ]);
    fs::remove_dir_all(&dir).unwrap();
}

/// An `.npy` v1.0 file of little-endian `descr` values of `shape`.
fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// `act --obs-file`: one action per observation of a CSV or `.npy` file,
/// the same as `act --obs` gives for each; CSV or `.npy` out; a bad row is
/// refused naming its number.
#[test]
fn act_on_a_file_of_observations() {
    let dir = temp_dir("batch-act");
    let policy = dir.join("p.mrlp");
    succeeds(&["init", "--seed", "5", "--out", s(&policy)]);
    let obs: [[f32; 4]; 4] = [
        [0.01, 0.0, -0.02, 0.03],
        [0.1, -0.5, 0.2, 1.5],
        [-1.0, 2.0, -0.2, -1.5],
        [2.0, 0.3, 0.05, -0.3],
    ];
    let single: Vec<u64> = obs
        .iter()
        .map(|o| {
            let text = o.map(|x| x.to_string()).join(",");
            let stdout = succeeds(&["act", s(&policy), "--obs", &text, "--json"]);
            last_json(&stdout)["action"]["discrete"].as_u64().unwrap()
        })
        .collect();
    let mut csv = "x,x_dot,theta,theta_dot\n".to_string();
    for o in &obs {
        csv.push_str(&o.map(|x| x.to_string()).join(", "));
        csv.push('\n');
    }
    let csv_file = dir.join("obs.csv");
    fs::write(&csv_file, &csv).unwrap();
    let stdout = succeeds(&["act", s(&policy), "--obs-file", s(&csv_file)]);
    let expected: Vec<String> = std::iter::once("action".to_string())
        .chain(single.iter().map(u64::to_string))
        .collect();
    assert_eq!(stdout.lines().collect::<Vec<_>>(), expected);

    // .npy in (float32 and float64), .npy out: int64 [N].
    let f32s: Vec<u8> = obs.iter().flatten().flat_map(|x| x.to_le_bytes()).collect();
    let f64s: Vec<u8> = obs
        .iter()
        .flatten()
        .flat_map(|&x| f64::from(x).to_le_bytes())
        .collect();
    for (descr, data) in [("<f4", f32s), ("<f8", f64s)] {
        let npy_file = dir.join("obs.npy");
        fs::write(&npy_file, npy(descr, "(4, 4)", &data)).unwrap();
        let out = dir.join("actions.npy");
        let stdout = succeeds(&[
            "act",
            s(&policy),
            "--obs-file",
            s(&npy_file),
            "--out",
            s(&out),
            "--json",
        ]);
        assert_eq!(last_json(&stdout)["rows"], 4);
        let want: Vec<u8> = single
            .iter()
            .flat_map(|&a| (a as i64).to_le_bytes())
            .collect();
        assert_eq!(
            fs::read(&out).unwrap(),
            npy("<i8", "(4,)", &want),
            "{descr}"
        );
    }

    // A Gaussian policy: float32 [N, 1] commands, or CSV into --out.
    let pendulum = dir.join("pendulum.mrlp");
    succeeds(&["init", "--arch", "pendulum", "--out", s(&pendulum)]);
    let pobs = dir.join("pendulum.csv");
    fs::write(&pobs, "1,0,0\n0,1,-3\n").unwrap();
    let out = dir.join("commands.csv");
    succeeds(&[
        "act",
        s(&pendulum),
        "--obs-file",
        s(&pobs),
        "--out",
        s(&out),
    ]);
    let text = fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[0], "action");
    let (ok, stdout, _) = microrl(&["act", s(&pendulum), "--obs", "0,1,-3", "--json"]);
    assert!(ok);
    let command = last_json(&stdout)["action"]["continuous"][0]
        .as_f64()
        .unwrap() as f32;
    assert_eq!(lines[2].parse::<f32>().unwrap(), command);
    let out = dir.join("commands.npy");
    succeeds(&[
        "act",
        s(&pendulum),
        "--obs-file",
        s(&pobs),
        "--out",
        s(&out),
    ]);
    assert!(
        fs::read(&out)
            .unwrap()
            .starts_with(&npy("<f4", "(2, 1)", &[])[..64])
    );

    // Bad rows, named.
    let bad = dir.join("bad.csv");
    for (text, needle) in [
        ("x,y,z,w\n0,0,0,0\n0,0,0\n", "row 2 (line 3)"),
        (
            "0,0,0,0\n0,x,0,0\n",
            "row 2 (line 2), column 2: not a number",
        ),
        ("0,0,0,0\n0,0,0,0\nNaN,0,0,0\n", "row 3 (line 3)"),
        ("x,y,z,w\n", "no observation"),
    ] {
        fs::write(&bad, text).unwrap();
        let err = refused(&["act", s(&policy), "--obs-file", s(&bad)]);
        assert!(
            err.contains(needle) && err.contains("bad.csv"),
            "{text:?}: {err}"
        );
    }
    let npy_file = dir.join("bad.npy");
    fs::write(&npy_file, npy("<f4", "(2, 3)", &[0; 24])).unwrap();
    let err = refused(&["act", s(&policy), "--obs-file", s(&npy_file)]);
    assert!(err.contains("(N, 4)"), "{err}");
    refused_naming(
        &["act", s(&policy), "--obs", "0,0,0,0", "--obs-file", s(&bad)],
        &["--obs"],
    );
    fs::remove_dir_all(&dir).unwrap();
}

/// The actions `policy` takes at the parity fixture's observations
/// (through `act --obs-file`), and the fixture's own (SB3's).
fn actions_on_parity(dir: &Path, policy: &Path, parity: &str) -> (Vec<i64>, Vec<i64>) {
    let bytes = fs::read(fixture(parity)).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let obs = file.tensor("obs").unwrap();
    let n = obs.shape()[0];
    let obs_file = dir.join("parity-obs.npy");
    fs::write(&obs_file, npy("<f4", &format!("({n}, 4)"), obs.data())).unwrap();
    let out = dir.join("parity-actions.npy");
    succeeds(&[
        "act",
        s(policy),
        "--obs-file",
        s(&obs_file),
        "--out",
        s(&out),
    ]);
    let ours = fs::read(&out).unwrap();
    let ours: Vec<i64> = ours[ours.len() - 8 * n..]
        .chunks_exact(8)
        .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let sb3: Vec<i64> = file
        .tensor("action")
        .unwrap()
        .data()
        .chunks_exact(4)
        .map(|b| i64::from(i32::from_le_bytes(b.try_into().unwrap())))
        .collect();
    (ours, sb3)
}

/// A ReLU SB3 policy saved without metadata (as SB3's documentation saves
/// a state_dict): imported as tanh it is said so on standard error (and
/// acts differently from SB3); `--activation relu` imports it as a ReLU
/// policy that takes SB3's deterministic action at every one of the
/// fixture's 10 000 observations, exports back with `activation_fn` ReLU,
/// and a file that states ReLU needs no option.
#[test]
fn a_relu_policy_imports_with_activation_relu_and_the_assumption_is_said() {
    let dir = temp_dir("relu");
    let file = fixture("sb3-cartpole-relu.safetensors");
    let tanh = dir.join("tanh.mrlp");
    let (ok, stdout, stderr) = microrl(&[
        "import",
        "--from",
        "sb3",
        s(&file),
        "--env",
        "cartpole",
        "--out",
        s(&tanh),
        "--json",
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("does not state its activation") && stderr.contains("assuming tanh"),
        "{stderr}"
    );
    assert_eq!(last_json(&stdout)["activation_source"], "assumed");
    let (ours, sb3) = actions_on_parity(&dir, &tanh, "sb3-cartpole-relu.parity.safetensors");
    let wrong = ours.iter().zip(&sb3).filter(|(a, b)| a != b).count();
    assert!(
        wrong > 0,
        "imported as tanh, the ReLU policy should act differently"
    );

    let relu = dir.join("relu.mrlp");
    let (ok, stdout, stderr) = microrl(&[
        "import",
        "--from",
        "sb3",
        s(&file),
        "--env",
        "cartpole",
        "--activation",
        "relu",
        "--out",
        s(&relu),
        "--json",
    ]);
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("assuming"), "{stderr}");
    let json = last_json(&stdout);
    assert_eq!(json["arch"], "cartpole-relu");
    assert_eq!(json["activation"], "relu");
    let (ours, sb3) = actions_on_parity(&dir, &relu, "sb3-cartpole-relu.parity.safetensors");
    let wrong: Vec<usize> = (0..ours.len()).filter(|&k| ours[k] != sb3[k]).collect();
    assert!(
        wrong.is_empty(),
        "{} of {} differ: {wrong:?}",
        wrong.len(),
        ours.len()
    );
    let (ok, stdout, _) = microrl(&["inspect", s(&relu), "--json"]);
    assert!(ok);
    assert_eq!(last_json(&stdout)["arch"], "cartpole-relu");
    let stdout = succeeds(&["eval", s(&relu), "--episodes", "3", "--json"]);
    assert_eq!(last_json(&stdout)["arch"], "cartpole-relu");

    // Exported, the file states ReLU; imported again, no option is needed
    // and the policy is the same file.
    let exported = dir.join("relu.safetensors");
    succeeds(&[
        "export",
        s(&relu),
        "--format",
        "safetensors",
        "--out",
        s(&exported),
    ]);
    let again = dir.join("again.mrlp");
    let (ok, stdout, stderr) = microrl(&[
        "import",
        "--from",
        "sb3",
        s(&exported),
        "--env",
        "cartpole",
        "--out",
        s(&again),
        "--json",
    ]);
    assert!(ok, "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(last_json(&stdout)["activation_source"], "stated");
    assert_eq!(fs::read(&again).unwrap(), fs::read(&relu).unwrap());
    // A file that states ReLU contradicted by --activation, or another activation.
    refused_naming(
        &[
            "import",
            "--from",
            "sb3",
            s(&exported),
            "--env",
            "cartpole",
            "--activation",
            "tanh",
            "--out",
            s(&again),
        ],
        &["ReLU", "--activation tanh"],
    );
    fs::remove_dir_all(&dir).unwrap();
}

/// A run directory whose curve.csv has `rows` rows (a noisy rising return,
/// an evaluation every 10th row).
fn big_run(dir: &Path, rows: u64) -> PathBuf {
    use std::io::Write;
    let run = dir.join("big");
    fs::create_dir_all(&run).unwrap();
    let mut csv = std::io::BufWriter::new(fs::File::create(run.join("curve.csv")).unwrap());
    writeln!(csv, "step,episodes,mean_return,eval_mean,eval_std,wall_s").unwrap();
    let mut state = 12345u64;
    for i in 0..rows {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let noise = (state >> 40) as f64 / (1u64 << 24) as f64 * 40.0 - 20.0;
        let mean = (i as f64 / rows as f64 * 480.0 + noise).clamp(0.0, 500.0);
        if i % 10 == 0 {
            writeln!(
                csv,
                "{},{},{mean},{},3.5,{}.000",
                (i + 1) * 1000,
                i,
                mean + 5.0,
                i / 100
            )
        } else {
            writeln!(csv, "{},{},{mean},,,{}.000", (i + 1) * 1000, i, i / 100)
        }
        .unwrap();
    }
    csv.flush().unwrap();
    let summary = serde_json::json!({
        "env": "cartpole", "algo": "ppo", "seed": 0, "threshold": 475.0, "eval_mean": 480.0,
    });
    fs::write(run.join("summary.json"), summary.to_string()).unwrap();
    run
}

/// `plot` of a curve of 2 000 000 rows draws it within 512 MB of address
/// space (the plot's memory is bounded by the picture, not the curve): the
/// PNG is written and the report counts every row.
#[test]
fn plot_of_a_huge_curve_is_bounded_by_the_picture() {
    let dir = temp_dir("big-plot");
    let run = big_run(&dir, 2_000_000);
    let png = dir.join("big.png");
    let script = format!(
        "ulimit -v 524288 && exec '{}' plot '{}' --out '{}' --json",
        env!("CARGO_BIN_EXE_microrl"),
        s(&run),
        s(&png)
    );
    let out = Command::new("sh").args(["-c", &script]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    let json = last_json(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(json["runs"][0]["rows"], 2_000_000);
    let bytes = fs::read(&png).unwrap();
    let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!((info.width, info.height), (800, 500));
    // The run (its line and markers, blue) and the threshold (green) are drawn.
    let count = |rgb: [u8; 3]| pixels.chunks_exact(3).filter(|p| *p == rgb).count();
    assert!(count([31, 119, 180]) > 20_000, "{}", count([31, 119, 180]));
    assert!(count([44, 160, 44]) > 500, "{}", count([44, 160, 44]));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn too_many_environment_copies_are_refused_naming_the_bound() {
    let dir = temp_dir("n-envs");
    let config = dir.join("many.toml");
    std::fs::write(&config, "n_envs = 40\nn_steps = 8\n").unwrap();
    refused_naming(
        &[
            "train",
            "--config",
            s(&config),
            "--out",
            s(&dir.join("run")),
        ],
        &["`n_envs` = 40", "16"],
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run long enough to be killed after a checkpoint (add `--out`).
const CHECKPOINTED: [&str; 7] = [
    "train",
    "--steps",
    "6000",
    "--no-early-stop",
    "--small",
    "--checkpoint-every",
    "1",
];

/// A run of `args` (which must include `--checkpoint-every 1 --out OUT`)
/// killed as soon as its first checkpoint is on disk; `true` if one was
/// left behind in `<out>.checkpoint/`.
fn killed_after_a_checkpoint(args: &[&str], out: &Path) -> bool {
    let mut name = out.file_name().unwrap().to_os_string();
    name.push(".checkpoint");
    let state = out.with_file_name(name).join("state.mrlc");
    for _ in 0..5 {
        let _ = fs::remove_dir_all(out);
        microrl_until(args, false, Duration::from_micros(200), || state.is_file());
        if state.is_file() {
            return true;
        }
    }
    false
}

#[test]
fn checkpoint_every_zero_or_without_an_output_is_refused() {
    let dir = temp_dir("ckpt-every");
    let v = dir.join("v");
    let common = [
        "validate",
        "--seeds",
        "1",
        "--steps",
        "3000",
        "--no-early-stop",
        "--threshold",
        "0",
    ];
    refused_naming(
        &[&common[..], &["--checkpoint-every", "0", "--out", s(&v)]].concat(),
        &["--checkpoint-every", "> 0"],
    );
    refused_naming(
        &[&common[..], &["--checkpoint-every", "5"]].concat(),
        &["--checkpoint-every", "--out"],
    );

    // A checkpoint whose progress.json says `checkpoint_every: 0`.
    let out = dir.join("run");
    let args = [&CHECKPOINTED[..], &["--out", s(&out)]].concat();
    assert!(killed_after_a_checkpoint(&args, &out), "no checkpoint");
    let progress = dir.join("run.checkpoint").join("progress.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&fs::read(&progress).unwrap()).unwrap();
    json["checkpoint_every"] = 0.into();
    reseal(&progress, json);
    refused_naming(
        &["train", "--resume", s(&out)],
        &["checkpoint_every", "progress.json", "> 0"],
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_plant_key_given_twice_is_refused_naming_it() {
    let dir = temp_dir("plant-twice");
    let out = dir.join("run");
    for plant in [
        &["--plant", "masspole=0.3,masspole=0.5"][..],
        &["--plant", "masspole=0.3", "--plant", "masspole=0.5"][..],
    ] {
        let args = [&["train", "--steps", "10", "--out", s(&out)][..], plant].concat();
        refused_naming(&args, &["--plant", "`masspole`", "twice"]);
        refused_naming(
            &[&["eval", "--episodes", "1", "missing.mrlp"][..], plant].concat(),
            &["`masspole`", "twice"],
        );
    }
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn a_schedule_without_its_end_is_refused_naming_it() {
    let dir = temp_dir("schedule-end");
    let config = dir.join("c.toml");
    let out = dir.join("run");
    for algo in ["ppo", "a2c"] {
        for text in [
            "learning_rate = { start = 1e-3 }\n",
            "learning_rate = { end = 0.0 }\n",
        ] {
            fs::write(&config, text).unwrap();
            let line = refused(&[
                "train",
                "--algo",
                algo,
                "--steps",
                "10",
                "--config",
                s(&config),
                "--out",
                s(&out),
            ]);
            assert!(
                line.contains("learning_rate") && line.contains("missing field"),
                "{algo} {text}: {line}"
            );
        }
    }
    // A whole schedule still replaces the default.
    fs::write(&config, "learning_rate = { start = 1e-3, end = 1e-4 }\n").unwrap();
    let (ok, _, err) = microrl(&[
        "train",
        "--steps",
        "10",
        "--config",
        s(&config),
        "--out",
        s(&out),
        "--json",
    ]);
    assert!(ok, "{err}");
    let json: serde_json::Value =
        serde_json::from_slice(&fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        json["config"]["learning_rate"]["end"].as_f64().unwrap() as f32,
        1e-4
    );
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn an_infinite_clip_range_round_trips_through_json() {
    let dir = temp_dir("inf-clip");
    // `--config summary.json` of a PPO-penalty run.
    let a = dir.join("a");
    let b = dir.join("b");
    let penalty = [
        "train",
        "--algo",
        "ppo-penalty",
        "--steps",
        "3000",
        "--no-early-stop",
    ];
    let (ok, _, err) = microrl(&[&penalty[..], &["--out", s(&a)]].concat());
    assert!(ok, "{err}");
    let summary = |d: &Path| -> serde_json::Value {
        serde_json::from_slice(&fs::read(d.join("summary.json")).unwrap()).unwrap()
    };
    assert_eq!(summary(&a)["config"]["clip_range"], "inf");
    let config = a.join("summary.json");
    let (ok, _, err) = microrl(&[&penalty[..], &["--config", s(&config), "--out", s(&b)]].concat());
    assert!(ok, "{err}");
    assert_eq!(summary(&a)["config"], summary(&b)["config"]);
    assert_eq!(summary(&a)["policy_crc32"], summary(&b)["policy_crc32"]);

    // `--resume` of a killed PPO-penalty run.
    let out = dir.join("run");
    let args = [&penalty[..], &["--checkpoint-every", "1", "--out", s(&out)]].concat();
    assert!(killed_after_a_checkpoint(&args, &out), "no checkpoint");
    let (ok, _, err) = microrl(&["train", "--resume", s(&out)]);
    assert!(ok, "{err}");
    assert_eq!(summary(&out)["config"], summary(&a)["config"]);
    assert_eq!(summary(&out)["policy_crc32"], summary(&a)["policy_crc32"]);
    let _ = fs::remove_dir_all(&dir);
}

/// Every plant parameter has a physical range: a value outside it is
/// refused by `eval` and `train`, naming the field, the value and the range.
#[test]
fn plant_parameters_outside_their_physical_range_are_refused() {
    let dir = temp_dir("plant-range");
    let cartpole = dir.join("c.mrlp");
    let pendulum = dir.join("p.mrlp");
    let (ok, _, err) = microrl(&["init", "--out", s(&cartpole)]);
    assert!(ok, "{err}");
    let (ok, _, err) = microrl(&["init", "--arch", "pendulum", "--out", s(&pendulum)]);
    assert!(ok, "{err}");
    // The value is printed as it was typed.
    for (policy, plant, range) in [
        (&cartpole, "tau=1e-30", "[0.0001, 0.1]"),
        (&cartpole, "tau=1e30", "[0.0001, 0.1]"),
        (&cartpole, "masspole=1e38", "[0.001, 1000]"),
        (&cartpole, "gravity=1e39", "[0, 100]"),
        (&cartpole, "length=200", "[0.001, 100]"),
        (&pendulum, "dt=1e-30", "[0.0001, 0.1]"),
        (&pendulum, "m=5000", "[0.001, 1000]"),
        (&pendulum, "max_torque=20000", "[0.001, 10000]"),
    ] {
        let (field, value) = plant.split_once('=').unwrap();
        let field = format!("`{field}`");
        refused_naming(
            &["eval", s(policy), "--episodes", "1", "--plant", plant],
            &[&field, value, range],
        );
    }
    refused_naming(
        &[
            "train",
            "--steps",
            "10",
            "--plant",
            "tau=1e-30",
            "--out",
            s(&dir.join("run")),
        ],
        &["`tau`", "[0.0001, 0.1]"],
    );
    // The defaults, and the ends of a range, are accepted.
    for plant in ["tau=0.1", "masspole=0.001", "gravity=0"] {
        let (ok, _, err) = microrl(&["eval", s(&cartpole), "--episodes", "1", "--plant", plant]);
        assert!(ok, "{plant}: {err}");
    }
    let _ = fs::remove_dir_all(&dir);
}

/// Seals an edited `progress.json` as microrl does: the CRC-32 of its
/// canonical JSON (keys sorted, no spaces) without the `checksum` field,
/// as eight hex digits.
fn reseal(path: &Path, mut json: serde_json::Value) {
    json.as_object_mut().unwrap().remove("checksum");
    let crc = microrl::serialize::crc32(json.to_string().as_bytes());
    json["checksum"] = format!("{crc:08x}").into();
    fs::write(path, json.to_string()).unwrap();
}

/// `state.mrlc` and `progress.json` resume only as the unit they were
/// written as: an edit to progress.json (a field, the configuration, the
/// plant, the curve) or a state.mrlc from another run is refused, naming
/// what differs; a progress.json without its checksum (an older run) too.
#[test]
fn a_checkpoint_resumes_only_as_the_unit_it_was_written() {
    let dir = temp_dir("ckpt-unit");
    let killed = |seed: &str, name: &str| {
        let out = dir.join(name);
        let args = [&CHECKPOINTED[..], &["--seed", seed, "--out", s(&out)]].concat();
        assert!(killed_after_a_checkpoint(&args, &out), "no checkpoint");
        out
    };
    let a = killed("0", "a");
    let b = killed("1", "b");
    let ckpt = |out: &Path| {
        let mut name = out.file_name().unwrap().to_os_string();
        name.push(".checkpoint");
        out.with_file_name(name)
    };
    let progress = ckpt(&a).join("progress.json");
    let original = fs::read(&progress).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&original).unwrap();
    type Edit = fn(&mut serde_json::Value);
    let edits: [(&str, Edit); 7] = [
        ("gamma", |j| j["config"]["gamma"] = 0.9.into()),
        ("n_envs", |j| j["config"]["n_envs"] = 2.into()),
        ("seed", |j| j["seed"] = 1.into()),
        ("plant", |j| {
            j["plant"] = serde_json::json!({ "masspole": 0.3 })
        }),
        ("iterations", |j| {
            j["iterations"] = (j["iterations"].as_u64().unwrap() + 1).into()
        }),
        ("curve", |j| j["curve"] = serde_json::json!([])),
        ("checksum", |j| {
            j.as_object_mut().unwrap().remove("checksum");
        }),
    ];
    for (what, edit) in edits {
        eprintln!("progress.json edited: {what}");
        let mut edited = json.clone();
        edit(&mut edited);
        fs::write(&progress, edited.to_string()).unwrap();
        refused_naming(
            &["train", "--resume", s(&a)],
            &["progress.json", "checksum"],
        );
        fs::write(&progress, &original).unwrap();
    }
    // Seed 1's state beside seed 0's progress.
    let state = ckpt(&a).join("state.mrlc");
    let own = fs::read(&state).unwrap();
    fs::copy(ckpt(&b).join("state.mrlc"), &state).unwrap();
    refused_naming(
        &["train", "--resume", s(&a)],
        &["state.mrlc", "another run"],
    );
    fs::write(&state, own).unwrap();
    // The unit as written resumes.
    let (ok, _, err) = microrl(&["train", "--resume", s(&a)]);
    assert!(ok, "{err}");
    let _ = fs::remove_dir_all(&dir);
}

/// `--config runs/X/summary.json` takes X's algorithm, task, plant and,
/// without `--steps`, budget (and says so), so the replay's policy is X's
/// bit for bit; an explicit option wins over the summary, and that is said
/// too.
#[test]
fn config_summary_json_reproduces_the_algorithm_task_and_plant() {
    let dir = temp_dir("config-summary");
    let crc = |stdout: &str| last_json(stdout)["policy_crc32"].clone();
    for (name, first) in [
        (
            "cartpole",
            &["--plant", "masspole=0.3", "--algo", "a2c"][..],
        ),
        ("pendulum", &["--env", "pendulum", "--algo", "a2c"][..]),
    ] {
        let common = [
            "train",
            "--seed",
            "2",
            "--steps",
            "2000",
            "--no-early-stop",
            "--json",
        ];
        let a = dir.join(format!("{name}-a"));
        let (ok, original, err) = microrl(&[&common[..], first, &["--out", s(&a)]].concat());
        assert!(ok, "{err}");
        let config = a.join("summary.json");
        let b = dir.join(format!("{name}-b"));
        let (ok, replay, err) =
            microrl(&[&common[..], &["--config", s(&config), "--out", s(&b)]].concat());
        assert!(ok, "{err}");
        assert_eq!(crc(&replay), crc(&original), "{name}");
        assert!(
            err.starts_with("note: ") && err.contains("a2c") && err.contains("summary.json"),
            "{err}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        // Without `--steps` the budget is the summary's too (its schedules
        // annealed over it), and the note says so.
        let d = dir.join(format!("{name}-d"));
        let no_steps = ["train", "--seed", "2", "--no-early-stop", "--json"];
        let (ok, replay, err) =
            microrl(&[&no_steps[..], &["--config", s(&config), "--out", s(&d)]].concat());
        assert!(ok, "{err}");
        assert_eq!(crc(&replay), crc(&original), "{name} without --steps");
        assert_eq!(last_json(&replay)["steps"], 2000, "{replay}");
        assert!(err.contains("steps 2000"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        if name == "cartpole" {
            assert!(err.contains("masspole=0.3"), "{err}");
            // The command line's plant wins, and the note says so.
            let c = dir.join("cartpole-c");
            let (ok, other, err) = microrl(
                &[
                    &common[..],
                    &[
                        "--config",
                        s(&config),
                        "--plant",
                        "masspole=0.5",
                        "--out",
                        s(&c),
                    ],
                ]
                .concat(),
            );
            assert!(ok, "{err}");
            assert!(
                err.contains("--plant masspole=0.5") && err.contains("masspole=0.3"),
                "{err}"
            );
            assert_ne!(crc(&other), crc(&original));
        } else {
            assert!(err.contains("pendulum"), "{err}");
        }
    }
    let _ = fs::remove_dir_all(&dir);
}

/// An output at the path of another output or of an input of the same
/// command (the same path, a symbolic or hard link to it, or a file in a
/// run directory the command replaces) is refused before anything is
/// written, naming both options.
#[test]
fn an_output_at_the_path_of_another_output_or_an_input_is_refused() {
    let dir = temp_dir("same-path");
    let policy = dir.join("p.mrlp");
    let (ok, _, err) = microrl(&["init", "--out", s(&policy)]);
    assert!(ok, "{err}");
    // A trained policy has observation statistics to export.
    let run = dir.join("run");
    let (ok, _, err) = microrl(&["train", "--steps", "1000", "--out", s(&run)]);
    assert!(ok, "{err}");
    let stats = run.join("policy.mrlp");
    let x = dir.join("x");
    refused_naming(
        &[
            "export",
            s(&stats),
            "--format",
            "safetensors",
            "--out",
            s(&x),
            "--vecnormalize",
            s(&x),
        ],
        &["--out", "--vecnormalize"],
    );
    let link = dir.join("link.mrlp");
    std::os::unix::fs::symlink(&policy, &link).unwrap();
    let hard = dir.join("hard.mrlp");
    fs::hard_link(&policy, &hard).unwrap();
    let dotted = format!("{}/./p.mrlp", s(&dir));
    for out in [s(&policy), s(&link), s(&hard), &dotted] {
        refused_naming(&["export", s(&policy), "--out", out], &["--out", "POLICY"]);
    }
    // import --out over its own input.
    let file = dir.join("sb3.safetensors");
    fs::copy(fixture("sb3-cartpole.safetensors"), &file).unwrap();
    let import = ["import", "--from", "sb3", "--env", "cartpole", s(&file)];
    refused_naming(
        &[&import[..], &["--out", s(&file)]].concat(),
        &["--out", "FILE"],
    );
    // act --out over its observations.
    let obs = dir.join("obs.csv");
    fs::write(&obs, "0,0,0,0\n").unwrap();
    refused_naming(
        &["act", s(&policy), "--obs-file", s(&obs), "--out", s(&obs)],
        &["--out", "--obs-file"],
    );
    // plot --out over a run's summary; train --out over its --config.
    let summary = run.join("summary.json");
    let before = fs::read(&summary).unwrap();
    refused_naming(&["plot", s(&run), "--out", s(&summary)], &["--out", "RUN"]);
    refused_naming(
        &[
            "train",
            "--steps",
            "1000",
            "--config",
            s(&summary),
            "--out",
            s(&run),
        ],
        &["--out", "--config"],
    );
    assert_eq!(fs::read(&summary).unwrap(), before);
    // validate --out DIR replaces DIR/seed<N>, not DIR.
    let gate = [
        "validate",
        "--seeds",
        "1",
        "--steps",
        "600",
        "--threshold",
        "0",
    ];
    let config = dir.join("gate.toml");
    fs::write(&config, "gamma = 0.99\n").unwrap();
    let (ok, _, err) = microrl(&[&gate[..], &["--out", s(&dir), "--config", s(&config)]].concat());
    assert!(ok, "{err}");
    let seed0 = dir.join("seed0").join("summary.json");
    refused_naming(
        &[&gate[..], &["--out", s(&dir), "--config", s(&seed0)]].concat(),
        &["--out", "--config"],
    );
    fs::remove_file(&config).unwrap();
    fs::remove_dir_all(dir.join("seed0")).unwrap();
    assert_eq!(
        listing(&dir),
        [
            "hard.mrlp",
            "link.mrlp",
            "obs.csv",
            "p.mrlp",
            "run",
            "sb3.safetensors"
        ]
    );
    let _ = fs::remove_dir_all(&dir);
}
