//! The harness writes policies; the core (as linked into firmware) reads them.

use microrl::nn::Layer;
use microrl::policy::Categorical;
use microrl::{Error, Params, SVector, serialize};
use microrl_harness::Arch;
use microrl_harness::arch::{CartPolePolicy, PendulumPolicy, act, init_blob};

#[test]
fn harness_blob_loads_into_core_type_and_acts_identically() {
    let blob = init_blob(Arch::Cartpole, 17).unwrap();
    let mut policy = Box::new(CartPolePolicy::ZERO);
    serialize::load(&mut *policy, &blob).unwrap();
    for k in 0..20 {
        let obs = [0.01 * k as f32, -0.3, 0.02 * k as f32 - 0.1, 0.5];
        let from_harness = act(Arch::Cartpole, &blob, &obs).unwrap();
        // A fresh policy's normaliser is empty (the identity), so the
        // network sees the raw observation.
        let logits = policy
            .actor
            .net
            .forward(&SVector::<f32, 4>::from_column_slice(&obs));
        let dist = Categorical::from_logits(&logits).unwrap();
        assert_eq!(from_harness.discrete, Some(dist.mode()));
        let probs: Vec<u32> = dist.probs().iter().map(|p| p.to_bits()).collect();
        let harness_probs: Vec<u32> = from_harness
            .probs
            .unwrap()
            .iter()
            .map(|p| p.to_bits())
            .collect();
        assert_eq!(probs, harness_probs, "bit-identical probabilities");
    }
}

#[test]
fn initialisation_is_seeded() {
    for arch in Arch::ALL {
        assert_eq!(init_blob(arch, 5).unwrap(), init_blob(arch, 5).unwrap());
        assert_ne!(init_blob(arch, 5).unwrap(), init_blob(arch, 6).unwrap());
    }
}

#[test]
fn blobs_do_not_load_into_other_architectures() {
    let pendulum = init_blob(Arch::Pendulum, 1).unwrap();
    let mut cartpole = Box::new(CartPolePolicy::ZERO);
    assert_eq!(
        serialize::load(&mut *cartpole, &pendulum),
        Err(Error::ShapeMismatch)
    );
    assert!(cartpole.norm_squared() == 0.0, "destination untouched");
    let mut p = Box::new(PendulumPolicy::ZERO);
    serialize::load(&mut *p, &pendulum).unwrap();
    assert_eq!(p.actor.head.log_std[0], 0.0);
    assert_eq!(
        (p.space.low, p.space.high),
        ([-2.0], [2.0]),
        "Pendulum's torque bounds"
    );
}

/// The committed firmware policy, written before the header recorded the
/// maths backend (its reserved `u16` is 0), still loads byte for byte as it
/// is: 0 is `fast-math`, the backend of the harness that wrote it and of
/// this test build (the harness's feature unifies); the same file marked
/// libm is reported, not loaded, unless accepted explicitly.
#[test]
fn a_committed_policy_from_before_the_backend_field_loads() {
    use microrl::math::{BACKEND, MathBackend};
    use microrl_harness::arch::CartPoleSmallPolicy;
    let blob = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../firmware-example/policies/cartpole-small.mrlp"
    ))
    .unwrap();
    assert_eq!(blob[4..8], [1, 0, 0, 0]);
    assert_eq!(BACKEND, MathBackend::FastMath);
    assert_eq!(
        serialize::verify(&blob).unwrap().backend,
        MathBackend::FastMath
    );
    let mut policy = Box::new(CartPoleSmallPolicy::ZERO);
    serialize::load(&mut *policy, &blob).unwrap();
    // Saved again by this build: the same bytes.
    assert_eq!(serialize::to_vec(&*policy).unwrap(), blob);

    let mut libm = blob.clone();
    libm[6] = 1;
    let n = libm.len();
    let crc = serialize::crc32(&libm[..n - 4]);
    libm[n - 4..].copy_from_slice(&crc.to_le_bytes());
    let mut dst = Box::new(CartPoleSmallPolicy::ZERO);
    assert_eq!(
        serialize::load(&mut *dst, &libm),
        Err(Error::Backend {
            file: MathBackend::Libm,
            build: MathBackend::FastMath
        })
    );
    assert!(*dst == CartPoleSmallPolicy::ZERO);
    assert_eq!(
        serialize::load_any_backend(&mut *dst, &libm),
        Ok(MathBackend::Libm)
    );
    assert!(*dst == *policy);
}
