//! Unit tests of `interop`.

use super::*;
use microrl::normalize;

#[test]
fn sb3_and_cleanrl_names() {
    let sb3: Vec<_> = actor_tensors::<CartPolePolicy>(Layout::Sb3, Family::OnPolicy)
        .into_iter()
        .map(|(_, n, s, _)| (n, s))
        .collect();
    assert_eq!(
        sb3,
        [
            ("mlp_extractor.policy_net.0.weight".into(), vec![64, 4]),
            ("mlp_extractor.policy_net.0.bias".into(), vec![64]),
            ("mlp_extractor.policy_net.2.weight".into(), vec![64, 64]),
            ("mlp_extractor.policy_net.2.bias".into(), vec![64]),
            ("action_net.weight".into(), vec![2, 64]),
            ("action_net.bias".into(), vec![2]),
        ]
    );
    let names = |p: Vec<(usize, String, Vec<usize>, bool)>| {
        p.into_iter().map(|(_, n, ..)| n).collect::<Vec<_>>()
    };
    assert_eq!(
        names(actor_tensors::<PendulumPolicy>(
            Layout::Cleanrl,
            Family::OnPolicy
        )),
        [
            "actor_mean.0.weight",
            "actor_mean.0.bias",
            "actor_mean.2.weight",
            "actor_mean.2.bias",
            "actor_mean.4.weight",
            "actor_mean.4.bias",
            "actor_logstd"
        ]
    );
    assert_eq!(
        names(actor_tensors::<CartPoleSmallPolicy>(
            Layout::Cleanrl,
            Family::OnPolicy
        ))[4],
        "actor.4.weight"
    );
    assert_eq!(
        names(actor_tensors::<PendulumPolicy>(
            Layout::Sb3,
            Family::OnPolicy
        ))[6],
        "log_std"
    );
}

/// SAC's and TD3's actors in both libraries' names: SB3's module tree,
/// CleanRL's `fc*` layers (its buffers are added by `unmap` and `map`).
#[test]
fn sac_and_td3_names() {
    type P = crate::arch::Squashed<3, 400, 300, 1>;
    let names = |layout, family| {
        actor_tensors::<P>(layout, family)
            .into_iter()
            .map(|(_, n, s, _)| format!("{n} {s:?}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(Layout::Sb3, Family::Sac),
        [
            "actor.latent_pi.0.weight [400, 3]",
            "actor.latent_pi.0.bias [400]",
            "actor.latent_pi.2.weight [300, 400]",
            "actor.latent_pi.2.bias [300]",
            "actor.mu.weight [1, 300]",
            "actor.mu.bias [1]",
        ]
    );
    assert_eq!(
        names(Layout::Sb3, Family::Td3)[4],
        "actor.mu.4.weight [1, 300]"
    );
    assert_eq!(
        names(Layout::Cleanrl, Family::Sac),
        [
            "fc1.weight [400, 3]",
            "fc1.bias [400]",
            "fc2.weight [300, 400]",
            "fc2.bias [300]",
            "fc_mean.weight [1, 300]",
            "fc_mean.bias [1]",
        ]
    );
    assert_eq!(names(Layout::Cleanrl, Family::Td3)[5], "fc_mu.bias [1]");
}

/// A fresh policy through export and import is the same file, for every
/// architecture and both layouts (a SAC/TD3 one as either algorithm's
/// actor); weights are transposed, not reshaped.
#[test]
fn export_then_import_is_the_identity() {
    for layout in [Layout::Sb3, Layout::Cleanrl] {
        for arch in Arch::ALL {
            let blob = arch::init_blob(arch, 7).unwrap();
            let algos = if arch.squashed() {
                let e = export(layout, &blob).unwrap_err().to_string();
                assert!(e.contains("pass --algo sac or --algo td3"), "{e}");
                vec![Some(OffPolicyAlgo::Sac), Some(OffPolicyAlgo::Td3)]
            } else {
                let e = export_with(layout, Some(OffPolicyAlgo::Sac), &blob).unwrap_err();
                assert!(e.to_string().contains("drop --algo"), "{e}");
                vec![None]
            };
            for algo in algos {
                let out = export_with(layout, algo, &blob).unwrap();
                assert_eq!(out.arch, arch);
                assert!(out.stats.is_none());
                let back = import(layout, &out.safetensors, None, arch.env()).unwrap();
                assert_eq!(back.arch, arch);
                assert_eq!(back.blob, blob, "{arch:?} {layout:?} {algo:?}");
                assert_eq!(back.tensors, out.tensors);
                assert_eq!(back.algo, algo);
            }
        }
    }
    // The metadata of a SAC/TD3 export: its activation and sizes, in key
    // order, so the same policy exports to the same bytes.
    let blob = arch::init_blob(Arch::PendulumSquashed400, 7).unwrap();
    let out = export_with(Layout::Sb3, Some(OffPolicyAlgo::Td3), &blob).unwrap();
    let (_, header) = SafeTensors::read_metadata(&out.safetensors).unwrap();
    let metadata = header.metadata().clone().unwrap();
    assert_eq!(metadata["activation_fn"], "ReLU");
    assert_eq!(metadata["net_arch"], "[400, 300]");
    assert_eq!(metadata.len(), 2);
    for _ in 0..4 {
        let again = export_with(Layout::Sb3, Some(OffPolicyAlgo::Td3), &blob).unwrap();
        assert!(again.safetensors == out.safetensors);
    }
    let len = u64::from_le_bytes(out.safetensors[..8].try_into().unwrap()) as usize;
    let text = std::str::from_utf8(&out.safetensors[8..8 + len]).unwrap();
    assert!(
        text.starts_with(r#"{"__metadata__":{"activation_fn":"ReLU","net_arch":"[400, 300]"},"#),
        "{text}"
    );

    let blob = arch::init_blob(Arch::Cartpole, 7).unwrap();
    let policy = arch::load::<CartPolePolicy>(&blob).unwrap();
    let out = export(Layout::Sb3, &blob).unwrap();
    let file = SafeTensors::deserialize(&out.safetensors).unwrap();
    let w = file.tensor("mlp_extractor.policy_net.0.weight").unwrap();
    assert_eq!(w.shape(), [64, 4]);
    // Row 1 of PyTorch's [out, in] is output unit 1's four input weights.
    let row1: Vec<f32> = w.data()[16..32]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let w0 = &policy.actor.net.first.weight;
    assert_eq!(row1, [w0[(1, 0)], w0[(1, 1)], w0[(1, 2)], w0[(1, 3)]]);
}

#[test]
fn vecnormalize_statistics_fold_epsilon_and_round_trip() {
    let stats = VecNormalizeStats {
        obs_rms: ObsRms {
            mean: vec![0.5, -1.0, 0.25],
            var: vec![2.0, 0.0, 1e-3],
            count: Some(1234.0),
        },
        clip_obs: 10.0,
        epsilon: 1e-4,
        norm_obs: true,
    };
    let norm = stats.to_running_norm::<3>(EnvName::Pendulum).unwrap();
    // var + 1e-4 − 1e-8: the root sees var + epsilon.
    assert_eq!(norm.var[1], (1e-4 - f64::from(normalize::EPSILON)) as f32);
    let z = norm
        .normalize(&microrl::SVector::<f32, 3>::new(0.5, -0.99, 0.25))
        .unwrap();
    assert!((z[1] - 0.01 / 1e-4f32.sqrt()).abs() < 1e-5, "{z:?}");
    // Exported statistics import back to the same bits.
    let again = VecNormalizeStats::from_running_norm(&norm)
        .to_running_norm::<3>(EnvName::Pendulum)
        .unwrap();
    assert_eq!(again, norm);
    let mut clip = stats.clone();
    clip.clip_obs = 5.0;
    let e = clip.to_running_norm::<3>(EnvName::Pendulum).unwrap_err();
    assert!(e.to_string().contains("clip_obs 5"), "{e}");
    let e = stats.to_running_norm::<4>(EnvName::Cartpole).unwrap_err();
    assert_eq!(
        e.to_string(),
        "obs_rms.mean has 3 values, expected 4 for cartpole"
    );
    let off = VecNormalizeStats {
        norm_obs: false,
        ..stats
    };
    assert!(
        !off.to_running_norm::<3>(EnvName::Pendulum)
            .unwrap()
            .has_statistics()
    );
}
