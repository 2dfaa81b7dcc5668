//! `microrl import` and `microrl export --format safetensors` as a user runs
//! them: the SB3 fixtures of `tests/fixtures/sb3/` in, microrl policy files
//! out and back, and every refusal one `error: …` line naming what was wrong.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use safetensors::SafeTensors;

use common::{
    Tensors, fixture, fixture_tensors, microrl, refused, refused_naming, s, succeeds, temp_dir,
    write_tensors,
};

/// The SB3 CartPole fixture with `edit` applied to its (name, shape, bytes)
/// tensors and `metadata`, written to `dir/name`.
fn edited(
    dir: &Path,
    name: &str,
    edit: impl FnOnce(&mut Tensors),
    metadata: Option<HashMap<String, String>>,
) -> PathBuf {
    let (mut tensors, _) = fixture_tensors("sb3-cartpole.safetensors");
    edit(&mut tensors);
    let path = dir.join(name);
    write_tensors(&path, &tensors, metadata);
    path
}

/// `microrl export POLICY --format safetensors --out OUT`.
fn export_safetensors<'a>(policy: &'a Path, out: &'a Path) -> [&'a str; 6] {
    [
        "export",
        s(policy),
        "--format",
        "safetensors",
        "--out",
        s(out),
    ]
}

#[test]
fn import_then_export_round_trips_and_evaluates() {
    let dir = temp_dir("round-trip");
    let policy = dir.join("sb3.mrlp");
    let stdout = succeeds(&[
        "import",
        "--from",
        "sb3",
        s(&fixture("sb3-cartpole.safetensors")),
        "--env",
        "cartpole",
        "--out",
        s(&policy),
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(json["arch"], "cartpole");
    assert_eq!(json["tensors"].as_array().unwrap().len(), 6);
    assert_eq!(json["normalised"], false);

    // The imported file is an ordinary microrl policy.
    let (ok, stdout, _) = microrl(&["inspect", s(&policy), "--json"]);
    assert!(ok);
    assert!(stdout.contains("\"arch\":\"cartpole\""), "{stdout}");

    // Positional POLICY (`--policy` is an alias), SB3 names by default.
    let out = dir.join("back.safetensors");
    succeeds(&export_safetensors(&policy, &out));
    let back = std::fs::read(&out).unwrap();
    let back = SafeTensors::deserialize(&back).unwrap();
    let source = std::fs::read(fixture("sb3-cartpole.safetensors")).unwrap();
    let source = SafeTensors::deserialize(&source).unwrap();
    for (name, tensor) in back.iter() {
        assert!(
            source.tensor(name).unwrap().data() == tensor.data(),
            "{name}"
        );
    }
    assert!(
        microrl(&[
            "export",
            "--policy",
            s(&policy),
            "--format",
            "safetensors",
            "--to",
            "cleanrl",
            "--out",
            s(&out),
        ])
        .0
    );
    let back = std::fs::read(&out).unwrap();
    assert!(
        SafeTensors::deserialize(&back)
            .unwrap()
            .tensor("actor.4.weight")
            .is_ok()
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn vecnormalize_statistics_travel_both_ways() {
    let dir = temp_dir("vecnormalize");
    let policy = dir.join("p.mrlp");
    let stats = fixture("sb3-pendulum-vecnorm.vecnormalize.json");
    succeeds(&[
        "import",
        "--from",
        "sb3",
        s(&fixture("sb3-pendulum-vecnorm.safetensors")),
        "--vecnormalize",
        s(&stats),
        "--env",
        "pendulum",
        "--out",
        s(&policy),
    ]);
    let out = dir.join("p.safetensors");
    let export = export_safetensors(&policy, &out);
    refused_naming(&export, &["pass --vecnormalize FILE.json"]);
    let json = dir.join("p.json");
    assert!(microrl(&[&export[..], &["--vecnormalize", s(&json)]].concat()).0);
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let source: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    for i in 0..3 {
        let (a, b) = (
            &written["obs_rms"]["mean"][i],
            &source["obs_rms"]["mean"][i],
        );
        assert_eq!(a.as_f64().unwrap() as f32, b.as_f64().unwrap() as f32);
    }
    assert_eq!(written["clip_obs"], 10.0);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn wrong_shapes_missing_tensors_and_wrong_envs_are_refused_naming_the_tensor() {
    let dir = temp_dir("refusals");
    let out = dir.join("never.mrlp");
    let import = |file: &Path, from: &str, env: &str| {
        refused(&[
            "import",
            "--from",
            from,
            s(file),
            "--env",
            env,
            "--out",
            s(&out),
        ])
    };

    // A hidden layer of the wrong width.
    let wide = edited(
        &dir,
        "wide.safetensors",
        |t| {
            let w = t
                .iter_mut()
                .find(|(n, ..)| n == "mlp_extractor.policy_net.2.weight")
                .unwrap();
            w.1 = vec![64, 65];
            w.2.extend([0u8; 64 * 4]);
        },
        None,
    );
    assert_eq!(
        import(&wide, "sb3", "cartpole"),
        format!(
            "error: importing {}: tensor `mlp_extractor.policy_net.2.weight` has shape \
             [64, 65], expected [64, 64] for cartpole (4-64-64-2 categorical)",
            wide.display()
        )
    );

    // A missing tensor: the message names it and lists what the file has.
    let headless = edited(
        &dir,
        "headless.safetensors",
        |t| t.retain(|(n, ..)| n != "action_net.bias"),
        None,
    );
    let e = import(&headless, "sb3", "cartpole");
    assert!(
        e.contains(
            "no tensor `action_net.bias` in the file (needed for cartpole (4-64-64-2 \
             categorical) in the sb3 layout; the file has action_net.weight, "
        ),
        "{e}"
    );

    // Wrong environment: a discrete CartPole policy is not a Pendulum or a
    // continuous CartPole one.
    let cartpole = fixture("sb3-cartpole.safetensors");
    let e = import(&cartpole, "sb3", "pendulum");
    assert!(
        e.contains(
            "tensor `mlp_extractor.policy_net.0.weight` has shape [64, 4], expected [64, 3] \
             for pendulum (3-64-64-1 gaussian)"
        ),
        "{e}"
    );
    let e = import(&cartpole, "sb3", "cartpole-continuous");
    assert!(
        e.contains("tensor `action_net.weight` has shape [2, 64], expected [1, 64]"),
        "{e}"
    );
    // Wrong library: an SB3 file has none of CleanRL's names.
    let e = import(&cartpole, "cleanrl", "cartpole");
    assert!(e.contains("no tensor `actor.0.weight`"), "{e}");

    // An activation other than tanh and ReLU (metadata) is refused; a file
    // without metadata is taken as tanh (ReLU: tests/hardening.rs).
    let leaky = edited(
        &dir,
        "leaky.safetensors",
        |_| {},
        Some(HashMap::from([(
            "activation_fn".into(),
            "LeakyReLU".into(),
        )])),
    );
    let e = import(&leaky, "sb3", "cartpole");
    assert!(e.contains("activation_fn is LeakyReLU"), "{e}");

    // A NaN weight.
    let nan = edited(
        &dir,
        "nan.safetensors",
        |t| {
            t.iter_mut()
                .find(|(n, ..)| n == "action_net.bias")
                .unwrap()
                .2[..4]
                .copy_from_slice(&f32::NAN.to_le_bytes())
        },
        None,
    );
    assert!(import(&nan, "sb3", "cartpole").contains("NaN"));

    // Not a safetensors file at all.
    let e = import(
        &fixture("sb3-cartpole-vecnorm.vecnormalize.json"),
        "sb3",
        "cartpole",
    );
    assert!(e.contains("not a safetensors file"), "{e}");
    assert!(!out.exists());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn unsupported_vecnormalize_statistics_are_refused_naming_the_field() {
    let dir = temp_dir("stats");
    let out = dir.join("never.mrlp");
    let mut stats: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("sb3-cartpole-vecnorm.vecnormalize.json")).unwrap(),
    )
    .unwrap();
    let import = |stats: &serde_json::Value, env: &str| {
        let path = dir.join("stats.json");
        std::fs::write(&path, stats.to_string()).unwrap();
        refused(&[
            "import",
            "--from",
            "sb3",
            s(&fixture("sb3-cartpole-vecnorm.safetensors")),
            "--vecnormalize",
            s(&path),
            "--env",
            env,
            "--out",
            s(&out),
        ])
    };
    stats["clip_obs"] = 5.0.into();
    let e = import(&stats, "cartpole");
    assert!(e.contains("clip_obs 5 is not supported"), "{e}");
    stats["clip_obs"] = 10.0.into();
    stats["obs_rms"]["var"][2] = (-1.0).into();
    assert!(import(&stats, "cartpole").contains("obs_rms.var[2] = -1 must be finite and >= 0"));
    stats["obs_rms"]["var"].as_array_mut().unwrap().pop();
    assert!(import(&stats, "cartpole").contains("obs_rms.var has 3 values, expected 4"));
    stats.as_object_mut().unwrap().remove("obs_rms");
    assert!(import(&stats, "cartpole").contains("missing field `obs_rms`"));
    assert!(!out.exists());
    std::fs::remove_dir_all(dir).unwrap();
}
