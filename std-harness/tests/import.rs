//! `microrl import` and `microrl export --format safetensors` as a user runs
//! them: the SB3 fixtures of `tests/fixtures/sb3/` in, microrl policy files
//! out and back, and every refusal one `error: …` line naming what was wrong.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use safetensors::SafeTensors;

use common::{
    Tensors, fixture, fixture_tensors, last_json, microrl, refused, refused_naming, s, succeeds,
    temp_dir, write_tensors,
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

/// `microrl import FILE --from LAYOUT --env pendulum --out OUT --json`'s JSON.
fn import_json(file: &Path, from: &str, out: &Path, extra: &[&str]) -> serde_json::Value {
    let args = [
        &[
            "import",
            "--from",
            from,
            s(file),
            "--env",
            "pendulum",
            "--out",
            s(out),
            "--json",
        ][..],
        extra,
    ]
    .concat();
    serde_json::from_str(succeeds(&args).lines().last().unwrap()).unwrap()
}

/// SAC and TD3 actors at SB3's default sizes (SAC 256-256, TD3 400-300) and
/// in CleanRL's layout import as the `*-squashed` architecture of their
/// sizes, export under either library's names of either algorithm's actor
/// (`--algo`, required: a policy file does not say which algorithm trained
/// it) with metadata naming the activation and the sizes, and import back
/// as the same policy file; SB3's export is the source's actor bit for bit.
#[test]
fn sac_and_td3_actors_at_default_sizes_export_and_import_back() {
    let dir = temp_dir("offpolicy");
    let policy = dir.join("sac.mrlp");
    let json = import_json(
        &fixture("sb3-sac-pendulum-256.safetensors"),
        "sb3",
        &policy,
        &[],
    );
    assert_eq!(json["arch"], "pendulum-squashed-256");
    assert_eq!(json["algo"], "sac");
    assert_eq!(json["activation_source"], "stated");
    let td3 = dir.join("td3.mrlp");
    let json = import_json(
        &fixture("sb3-td3-pendulum-400-300.safetensors"),
        "sb3",
        &td3,
        &[],
    );
    assert_eq!(json["arch"], "pendulum-squashed-400-300");
    assert_eq!(json["algo"], "td3");
    // CleanRL's actors are ReLU in code: no metadata, no option needed.
    let cleanrl = dir.join("cleanrl.mrlp");
    let json = import_json(
        &fixture("cleanrl-sac-pendulum.safetensors"),
        "cleanrl",
        &cleanrl,
        &[],
    );
    assert_eq!(json["arch"], "pendulum-squashed-256");
    assert_eq!(json["activation_source"], "layout");
    assert_eq!(json["tensors"][6], "action_scale");

    // Export: the algorithm is required, and only for SAC/TD3 policies.
    let out = dir.join("sac.safetensors");
    refused_naming(
        &export_safetensors(&policy, &out),
        &[
            "pendulum-squashed-256 is a SAC/TD3 policy",
            "--algo sac or --algo td3",
        ],
    );
    assert!(!out.exists());
    let ppo = dir.join("ppo.mrlp");
    succeeds(&[
        "import",
        "--from",
        "sb3",
        s(&fixture("sb3-pendulum.safetensors")),
        "--env",
        "pendulum",
        "--out",
        s(&ppo),
    ]);
    refused_naming(
        &[&export_safetensors(&ppo, &out)[..], &["--algo", "sac"]].concat(),
        &["drop --algo"],
    );
    refused_naming(
        &["export", s(&policy), "--algo", "sac", "--out", s(&out)],
        &["--algo", "need --format safetensors"],
    );
    assert!(!out.exists());

    // SB3's SAC names: the source's actor tensors bit for bit.
    succeeds(&[&export_safetensors(&policy, &out)[..], &["--algo", "sac"]].concat());
    let (source, _) = fixture_tensors("sb3-sac-pendulum-256.safetensors");
    let bytes = std::fs::read(&out).unwrap();
    let back = SafeTensors::deserialize(&bytes).unwrap();
    assert_eq!(back.len(), 6);
    for (name, tensor) in back.iter() {
        let (_, shape, data) = source.iter().find(|(n, ..)| n == name).unwrap();
        assert_eq!(tensor.shape(), &shape[..], "{name}");
        assert!(tensor.data() == &data[..], "{name}");
    }
    let (_, header) = SafeTensors::read_metadata(&bytes).unwrap();
    let metadata = header.metadata().clone().unwrap();
    assert_eq!(metadata["activation_fn"], "ReLU");
    assert_eq!(metadata["net_arch"], "[256, 256]");

    // The same policy as CleanRL's TD3 actor: its buffers are the bounds,
    // and it imports back as the same file.
    let to_cleanrl = [
        &export_safetensors(&policy, &out)[..],
        &["--to", "cleanrl", "--algo", "td3"],
    ]
    .concat();
    succeeds(&to_cleanrl);
    let bytes = std::fs::read(&out).unwrap();
    let back = SafeTensors::deserialize(&bytes).unwrap();
    assert_eq!(back.tensor("fc_mu.weight").unwrap().shape(), [1, 256]);
    assert_eq!(
        back.tensor("action_scale").unwrap().data(),
        2f32.to_le_bytes()
    );
    assert_eq!(
        back.tensor("action_bias").unwrap().data(),
        0f32.to_le_bytes()
    );
    let again = dir.join("again.mrlp");
    let json = import_json(&out, "cleanrl", &again, &[]);
    assert_eq!(json["algo"], "td3");
    assert_eq!(json["activation_source"], "stated");
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(&policy).unwrap()
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// A SAC/TD3 actor of a size microrl has no architecture for is refused
/// naming the sizes it has; CleanRL buffers that are not the task's bounds
/// are refused naming the buffer and the bounds.
#[test]
fn sac_sizes_and_cleanrl_buffers_that_do_not_fit_are_refused() {
    let dir = temp_dir("offpolicy-refusals");
    let out = dir.join("never.mrlp");
    let (mut tensors, metadata) = fixture_tensors("sb3-sac-pendulum.safetensors");
    let first = tensors
        .iter_mut()
        .find(|(n, ..)| n == "actor.latent_pi.0.weight")
        .unwrap();
    first.1 = vec![128, 3];
    first.2 = vec![0; 128 * 3 * 4];
    let wide = dir.join("wide.safetensors");
    write_tensors(&wide, &tensors, metadata);
    let import = |file: &Path, from: &str| {
        refused(&[
            "import",
            "--from",
            from,
            s(file),
            "--env",
            "pendulum",
            "--out",
            s(&out),
        ])
    };
    let e = import(&wide, "sb3");
    assert!(
        e.contains(
            "tensor `actor.latent_pi.0.weight` has shape [128, 3]: microrl imports SAC actors \
             for pendulum with hidden layers of 64-64, 256-256, 400-300"
        ),
        "{e}"
    );
    let (mut tensors, _) = fixture_tensors("cleanrl-td3-pendulum.safetensors");
    tensors
        .iter_mut()
        .find(|(n, ..)| n == "action_scale")
        .unwrap()
        .2 = 1f32.to_le_bytes().to_vec();
    let scaled = dir.join("scaled.safetensors");
    write_tensors(&scaled, &tensors, None);
    let e = import(&scaled, "cleanrl");
    assert!(
        e.contains(
            "tensor `action_scale` holds 1 at [0], expected 2 for pendulum's action bounds \
             [-2, 2] (action_scale = (high - low) / 2)"
        ),
        "{e}"
    );
    // A discrete task has no SAC/TD3 architecture.
    let e = refused(&[
        "import",
        "--from",
        "sb3",
        s(&fixture("sb3-sac-pendulum.safetensors")),
        "--env",
        "cartpole",
        "--out",
        s(&out),
    ]);
    assert!(e.contains("acts in a continuous space: use --env"), "{e}");
    assert!(!out.exists());
    std::fs::remove_dir_all(dir).unwrap();
}

/// An SB3 SAC actor saved without metadata (`save_file(model.policy.
/// state_dict())`) does not say its activation, and SB3 takes it from
/// `policy_kwargs`: the fixture is a tanh SAC actor, which read as ReLU acts
/// up to 1.9 off SB3's actions on Pendulum's ±2 (`sb3_parity.rs::
/// a_tanh_sac_actor_read_as_relu_acts_far_from_sb3`). `import` refuses it
/// without `--activation`, naming `--activation relu`, refuses
/// `--activation tanh` (ReLU SAC/TD3 actors only) and a file stating ReLU
/// contradicted by `--activation tanh`; `--activation relu` is the user's
/// word and imports.
#[test]
fn an_sb3_sac_actor_without_activation_metadata_needs_activation_relu() {
    let dir = temp_dir("sac-activation");
    let out = dir.join("p.mrlp");
    let tanh = fixture("sb3-sac-pendulum-tanh.safetensors");
    let relu = fixture("sb3-sac-pendulum.safetensors");
    let import = |file: &Path, extra: &[&str]| {
        let args = [
            "import",
            "--from",
            "sb3",
            s(file),
            "--env",
            "pendulum",
            "--out",
            s(&out),
        ];
        args.iter()
            .chain(extra)
            .map(|a| (*a).to_owned())
            .collect::<Vec<String>>()
    };
    let run = |args: Vec<String>, needles: &[&str]| {
        refused_naming(
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            needles,
        )
    };
    let e = run(
        import(&tanh, &[]),
        &["does not state its activation", "pass --activation relu"],
    );
    assert!(e.contains("SB3 SAC actor"), "{e}");
    assert!(!out.exists());
    run(
        import(&tanh, &["--activation", "tanh"]),
        &["--activation tanh", "ReLU hidden layers"],
    );
    run(
        import(&relu, &["--activation", "tanh"]),
        &["activation_fn is ReLU but --activation tanh was given"],
    );
    assert!(!out.exists());
    let args = import(&tanh, &["--activation", "relu", "--json"]);
    let (ok, stdout, stderr) = microrl(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(ok, "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    assert_eq!(last_json(&stdout)["activation_source"], "given");
    std::fs::remove_dir_all(dir).unwrap();
}
