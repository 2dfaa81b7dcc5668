//! Robustness of the core's data paths against hostile numbers and bytes.
//!
//! Property-style tests over seeded random inputs — observations, actions,
//! logits, weights and statistics drawn from a palette that includes NaN,
//! ±∞, `±f32::MAX`, subnormals, huge and tiny values and raw random bit
//! patterns — require of every public function on the acting, training and
//! normalising paths: no panic, and never an `Ok` holding a non-finite number
//! (a refusal is [`Error::NonFinite`] or another named error, and changes
//! nothing). A bounded in-process fuzz test mutates real policy blobs and
//! feeds them to [`serialize::load`], recomputing the CRC on half of them so
//! the deep checks (counts, shapes, tags, finiteness, domains) are reached:
//! no panic, and on every error the destination is bit-for-bit untouched.
//! Regression tests pin the episode counters of [`Cursor`] (no overflow,
//! no stalling return) and the step cap of [`algo::evaluate`].

use std::time::Instant;

use microrl::algo::{
    self, Actor, Controller, Cursor, EVAL_MAX_STEPS, Episode, evaluate, evaluate_capped,
};
use microrl::env::{CartPole, Continuous, Discrete, Env, Pendulum, Step};
use microrl::normalize::RunningNorm;
use microrl::policy::{Categorical, LOG_STD_MAX, LOG_STD_MIN};
use microrl::rand_core::Rng;
use microrl::{Error, Params, SVector, agent, serialize};
use rand_xoshiro::Xoshiro128PlusPlus;

type CatPolicy = agent::Policy<CartPole, 32>;
type GaussPolicy = agent::Policy<Pendulum, 8>;

// ---------------------------------------------------------------------------
// Random values
// ---------------------------------------------------------------------------

/// An `f32` from a palette weighted towards trouble: specials, extremes,
/// subnormals, raw bit patterns, and ordinary values of every magnitude.
fn wild(rng: &mut Xoshiro128PlusPlus) -> f32 {
    const SPECIAL: [f32; 16] = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        1e-45, // smallest subnormal
        -1e-45,
        0.0,
        -0.0,
        1e30,
        -1e30,
        1e-30,
        3.0e38,
        -88.8,
    ];
    match rng.next_u32() % 8 {
        0 => SPECIAL[(rng.next_u32() % SPECIAL.len() as u32) as usize],
        1 => f32::from_bits(rng.next_u32()),
        2 => {
            // ±10^k for k in −40..40.
            let k = (rng.next_u32() % 81) as i32 - 40;
            let sign = if rng.next_u32() & 1 == 0 { 1.0 } else { -1.0 };
            sign * 10f32.powi(k)
        }
        _ => microrl::rng::uniform_range(rng, -3.0, 3.0),
    }
}

/// A finite value, usually ordinary, sometimes extreme.
fn finite(rng: &mut Xoshiro128PlusPlus) -> f32 {
    loop {
        let x = wild(rng);
        if x.is_finite() {
            return x;
        }
    }
}

fn wild_vector<const N: usize>(rng: &mut Xoshiro128PlusPlus) -> SVector<f32, N> {
    SVector::from_fn(|_, _| wild(rng))
}

/// Random weights: usually an ordinary initialisation, sometimes with a few
/// scalars replaced by finite extremes (weights are always finite: `load`
/// and the optimiser refuse anything else).
fn randomise<P: Params>(p: &mut P, rng: &mut Xoshiro128PlusPlus, extremes: usize) {
    for k in 0..P::LEN {
        if let Some(x) = p.get_flat_mut(k) {
            *x = microrl::rng::uniform_range(rng, -1.0, 1.0);
        }
    }
    for _ in 0..extremes {
        let k = (rng.next_u32() as usize) % P::LEN;
        if let Some(x) = p.get_flat_mut(k) {
            *x = finite(rng);
        }
    }
}

fn all_finite(xs: &[f32]) -> bool {
    xs.iter().all(|x| x.is_finite())
}

const CASES: usize = 4_000;

// ---------------------------------------------------------------------------
// Distributions and actors
// ---------------------------------------------------------------------------

#[test]
fn categorical_from_extreme_logits_is_finite_or_refused() {
    let mut rng = microrl_tests::rng(1);
    for case in 0..CASES {
        let logits = wild_vector::<4>(&mut rng);
        match Categorical::from_logits(&logits) {
            Err(e) => {
                assert_eq!(e, Error::NonFinite);
                assert!(!all_finite(logits.as_slice()), "{logits:?} refused");
            }
            Ok(dist) => {
                let ctx = || format!("case {case}: logits {logits:?}");
                assert!(all_finite(dist.log_probs().as_slice()), "{}", ctx());
                assert!(dist.log_probs().iter().all(|&lp| lp <= 0.0), "{}", ctx());
                let h = dist.entropy();
                assert!(h.is_finite() && h >= -1e-6, "{}: H = {h}", ctx());
                assert!(all_finite(dist.grad_entropy().as_slice()), "{}", ctx());
                let probs = dist.probs();
                assert!((probs.sum() - 1.0).abs() < 1e-5, "{}", ctx());
                let a = dist.sample(&mut rng);
                assert!(a < 4 && probs[a] > 0.0, "{}", ctx());
                assert!(dist.log_prob(a).unwrap().is_finite());
                assert!(all_finite(dist.grad_log_prob(a).unwrap().as_slice()));
                assert!(dist.mode() < 4);
            }
        }
    }
    // The case the reliability report named.
    let dist = Categorical::from_logits(&SVector::<f32, 2>::new(f32::MAX, f32::MIN)).unwrap();
    assert_eq!(dist.entropy(), 0.0);
    assert!(all_finite(dist.log_probs().as_slice()));
}

#[test]
fn categorical_actor_never_returns_a_non_finite_ok() {
    let mut rng = microrl_tests::rng(2);
    let mut policy = CatPolicy::ZERO;
    let mut cache = <<CatPolicy as HasActor>::A as Actor<4>>::ZERO_CACHE;
    for case in 0..CASES {
        if case % 50 == 0 {
            randomise(&mut policy.actor, &mut rng, case % 7);
        }
        let input = wild_vector::<4>(&mut rng);
        let input_ok = all_finite(input.as_slice());
        match policy.actor.mode(&input) {
            Ok(a) => assert!(a < 2 && input_ok),
            Err(e) => assert_eq!(e, Error::NonFinite),
        }
        match policy.actor.sample(&input, &mut rng) {
            Ok((a, lp)) => assert!(a < 2 && lp.is_finite() && lp <= 0.0 && input_ok),
            Err(e) => assert_eq!(e, Error::NonFinite),
        }
        let action = (rng.next_u32() % 3) as usize; // 2 is out of range
        match policy.actor.evaluate(&input, &action, &mut cache) {
            Ok((lp, h)) => {
                assert!(input_ok && action < 2, "case {case}: {input:?} accepted");
                assert!(lp.is_finite() && h.is_finite(), "case {case}: {lp}, {h}");
            }
            Err(Error::InvalidAction) => assert_eq!(action, 2),
            Err(e) => assert_eq!(e, Error::NonFinite),
        }
    }
}

#[test]
fn gaussian_actor_never_returns_a_non_finite_ok() {
    let mut rng = microrl_tests::rng(3);
    let mut policy = GaussPolicy::ZERO;
    let mut cache = <<GaussPolicy as HasActor>::A as Actor<3>>::ZERO_CACHE;
    for case in 0..CASES {
        if case % 50 == 0 {
            randomise(&mut policy.actor.net, &mut rng, case % 5);
            // log σ: in range, at the edges, or absurd (100, f32::MAX).
            policy.actor.head.log_std[0] = match case / 50 % 5 {
                0 => 0.0,
                1 => LOG_STD_MIN,
                2 => LOG_STD_MAX,
                3 => 100.0,
                _ => finite(&mut rng),
            };
        }
        let input = wild_vector::<3>(&mut rng);
        let action = wild_vector::<1>(&mut rng);
        let input_ok = all_finite(input.as_slice());
        match policy.actor.mode(&input) {
            Ok(m) => assert!(input_ok && m[0].is_finite()),
            Err(e) => assert_eq!(e, Error::NonFinite),
        }
        match policy.actor.sample(&input, &mut rng) {
            Ok((raw, lp)) => {
                assert!(input_ok, "case {case}: {input:?} accepted");
                assert!(
                    raw[0].is_finite() && lp.is_finite(),
                    "case {case}: {raw:?} {lp}"
                );
            }
            Err(e) => assert_eq!(e, Error::NonFinite),
        }
        match policy.actor.evaluate(&input, &action, &mut cache) {
            Ok((lp, h)) => {
                assert!(
                    input_ok && action[0].is_finite(),
                    "case {case}: {input:?} / {action:?} accepted"
                );
                assert!(lp.is_finite() && h.is_finite(), "case {case}: {lp}, {h}");
            }
            Err(e) => assert_eq!(e, Error::NonFinite),
        }
    }
}

/// The deployed decision rule: an `Ok` command is finite and, for a
/// continuous space, within the actuator bounds.
#[test]
fn deployed_policies_act_finitely_or_refuse() {
    let mut rng = microrl_tests::rng(4);
    let mut cat = Box::new(CatPolicy::ZERO);
    let mut gauss = Box::new(GaussPolicy::ZERO);
    gauss.space = Continuous::symmetric(2.0);
    for case in 0..CASES {
        if case % 100 == 0 {
            randomise(&mut cat.actor, &mut rng, case % 3);
            randomise(&mut gauss.actor.net, &mut rng, case % 3);
            // Statistics in their domain: any mean, variance and count ≥ 0.
            for i in 0..4 {
                cat.obs_norm.mean[i] = finite(&mut rng);
                cat.obs_norm.var[i] = finite(&mut rng).abs();
            }
            cat.obs_norm.count[0] = finite(&mut rng).abs();
            for i in 0..3 {
                gauss.obs_norm.mean[i] = finite(&mut rng);
                gauss.obs_norm.var[i] = finite(&mut rng).abs();
            }
            gauss.obs_norm.count[0] = finite(&mut rng).abs();
        }
        let obs4 = wild_vector::<4>(&mut rng);
        match cat.act(&obs4) {
            Ok(a) => assert!(a < 2 && all_finite(obs4.as_slice())),
            Err(e) => assert_eq!(e, Error::NonFinite),
        }
        let obs3 = wild_vector::<3>(&mut rng);
        match gauss.act(&obs3) {
            Ok(u) => assert!(
                u[0].is_finite() && (-2.0..=2.0).contains(&u[0]),
                "case {case}: {u:?}"
            ),
            Err(e) => assert_eq!(e, Error::NonFinite),
        }
    }
}

// ---------------------------------------------------------------------------
// Normaliser
// ---------------------------------------------------------------------------

#[test]
fn normaliser_updates_and_normalises_finitely_or_refuses_without_change() {
    let mut rng = microrl_tests::rng(5);
    let mut norm = RunningNorm::<3>::ZERO;
    for case in 0..CASES * 4 {
        if case % 500 == 0 {
            norm = RunningNorm::ZERO;
        }
        let x = wild_vector::<3>(&mut rng);
        let before = norm.clone();
        match norm.update(&x) {
            Ok(()) => {
                assert!(all_finite(x.as_slice()));
                assert!(norm.is_finite(), "case {case}: {x:?} -> {norm:?}");
                assert_eq!(norm.check_domain(), Ok(()), "case {case}");
            }
            Err(e) => {
                assert_eq!(e, Error::NonFinite);
                assert_eq!(
                    norm, before,
                    "case {case}: refused update changed the statistics"
                );
            }
        }
        let y = wild_vector::<3>(&mut rng);
        match norm.normalize(&y) {
            Ok(z) => {
                assert!(all_finite(z.as_slice()), "case {case}: {z:?}");
                if norm.has_statistics() {
                    assert!(z.iter().all(|v| v.abs() <= microrl::normalize::CLIP));
                }
            }
            Err(e) => {
                assert_eq!(e, Error::NonFinite);
                assert!(!all_finite(y.as_slice()), "case {case}: {y:?} refused");
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Loading hostile blobs
// ---------------------------------------------------------------------------

/// Gives the actor type of a `Policy` alias a name.
trait HasActor {
    type A;
}
impl<A: Actor<OBS>, const OBS: usize> HasActor for microrl::Policy<A, OBS> {
    type A = A;
}

fn bits_equal<P: Params>(a: &P, b: &P) -> bool {
    (0..P::TENSORS).all(|i| {
        let (x, y) = (a.tensor(i), b.tensor(i));
        x.len() == y.len() && x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits())
    })
}

/// Outcome counts of a fuzz run, by error.
#[derive(Debug, Default)]
struct Outcomes {
    ok: u32,
    checksum: u32,
    truncated_or_trailing: u32,
    header: u32,
    shape: u32,
    non_finite: u32,
    domain: u32,
    other: u32,
}

/// Mutates `blob` in place; may change its length.
fn mutate(blob: &mut Vec<u8>, tensors: usize, rng: &mut Xoshiro128PlusPlus) {
    let payload = serialize::HEADER_LEN + serialize::TENSOR_DESCRIPTOR_LEN * tensors;
    let len = blob.len();
    let pick = |rng: &mut Xoshiro128PlusPlus, n: usize| (rng.next_u32() as usize) % n.max(1);
    match rng.next_u32() % 10 {
        // Flip one to four random bits.
        0 | 1 => {
            for _ in 0..1 + rng.next_u32() % 4 {
                let at = pick(rng, len);
                blob[at] ^= 1 << (rng.next_u32() % 8);
            }
        }
        // A hostile value over one scalar of the payload (negative variance,
        // NaN, absurd log σ, …).
        3..=5 if len >= payload + 8 => {
            let scalars = (len - payload - 4) / 4;
            // Half the time one of the last 12 scalars: where the log σ,
            // the normaliser's statistics and the actuator bounds live.
            let k = if rng.next_u32() & 1 == 0 {
                scalars.saturating_sub(1 + pick(rng, 12))
            } else {
                pick(rng, scalars)
            };
            let at = payload + 4 * k;
            let value = if rng.next_u32() & 1 == 0 {
                wild(rng)
            } else {
                -microrl::rng::uniform_range(rng, 0.0, 50.0)
            };
            blob[at..at + 4].copy_from_slice(&value.to_le_bytes());
        }
        // A random byte anywhere.
        2..=5 => {
            let at = pick(rng, len);
            blob[at] = rng.next_u32() as u8;
        }
        // The header or a tensor descriptor.
        6 => {
            let at = pick(rng, payload.min(len));
            blob[at] = match rng.next_u32() % 3 {
                0 => 0,
                1 => 0xFF,
                _ => rng.next_u32() as u8,
            };
        }
        // One 32-bit field of the header/descriptors set to a small or huge count.
        7 if len >= payload => {
            let field = 4 * pick(rng, payload / 4);
            let value = match rng.next_u32() % 3 {
                0 => u32::MAX,
                1 => rng.next_u32() % 70,
                _ => rng.next_u32(),
            };
            blob[field..field + 4].copy_from_slice(&value.to_le_bytes());
        }
        // Truncate.
        7 | 8 => blob.truncate(pick(rng, len)),
        // Append bytes.
        _ => {
            for _ in 0..1 + rng.next_u32() % 8 {
                blob.push(rng.next_u32() as u8);
            }
        }
    }
}

/// Loads `iterations` mutated copies of `original` into a destination that
/// holds `sentinel`; checks no panic (implicitly), an untouched destination
/// on every error, and a loaded value that is finite, in its domain and
/// equal to the blob on every success.
fn fuzz_load<P: Params + Clone>(
    original: &[u8],
    sentinel: &P,
    iterations: u32,
    seed: u64,
) -> Outcomes {
    let mut rng = microrl_tests::rng(seed);
    let mut dst = sentinel.clone();
    let mut blob = Vec::with_capacity(original.len() + 16);
    let mut out = Outcomes::default();
    for it in 0..iterations {
        blob.clear();
        blob.extend_from_slice(original);
        for _ in 0..1 + rng.next_u32() % 3 {
            if blob.len() < 4 {
                break;
            }
            mutate(&mut blob, P::TENSORS, &mut rng);
        }
        // Half of the blobs get a valid checksum, so the deep checks run.
        if it % 2 == 0 && blob.len() >= 4 {
            let n = blob.len();
            let crc = serialize::crc32(&blob[..n - 4]);
            blob[n - 4..].copy_from_slice(&crc.to_le_bytes());
        }
        match serialize::load(&mut dst, &blob) {
            Ok(()) => {
                out.ok += 1;
                assert!(dst.is_finite(), "iteration {it}: non-finite value loaded");
                assert_eq!(dst.check_domain(), Ok(()), "iteration {it}");
                // The loaded value is the blob's payload, bit for bit.
                let mut again = vec![0u8; serialize::encoded_len::<P>()];
                serialize::save(&dst, &mut again).unwrap();
                assert_eq!(
                    again, blob,
                    "iteration {it}: loaded value differs from the blob"
                );
                dst = sentinel.clone();
            }
            Err(e) => {
                assert!(
                    bits_equal(&dst, sentinel),
                    "iteration {it}: destination modified on {e:?}"
                );
                match e {
                    Error::ChecksumMismatch => out.checksum += 1,
                    Error::Truncated | Error::TrailingBytes => out.truncated_or_trailing += 1,
                    Error::BadMagic | Error::UnsupportedVersion | Error::Backend { .. } => {
                        out.header += 1
                    }
                    Error::ShapeMismatch => out.shape += 1,
                    Error::NonFinite => out.non_finite += 1,
                    Error::OutOfDomain { .. } => out.domain += 1,
                    _ => out.other += 1,
                }
            }
        }
    }
    out
}

/// A policy with random ordinary weights, an empty normaliser and the
/// default action space.
fn trained_like<A: Actor<OBS>, const OBS: usize>(seed: u64) -> Box<microrl::Policy<A, OBS>> {
    let mut p = Box::new(microrl::Policy::<A, OBS>::ZERO);
    randomise(&mut p.actor, &mut microrl_tests::rng(seed), 0);
    p.space = <A::Space as microrl::env::ActionSpace>::DEFAULT;
    p
}

/// ≥ 100 000 mutated blobs of two real policies, half with a recomputed CRC.
#[test]
fn fuzzed_blobs_never_panic_and_never_touch_the_destination_on_error() {
    const PER_POLICY: u32 = 50_000;
    let start = Instant::now();

    let mut cat: Box<CatPolicy> = trained_like(10);
    cat.obs_norm = RunningNorm::ZERO;
    for k in 0..20 {
        cat.obs_norm
            .update(&SVector::<f32, 4>::new(k as f32, 0.5, -0.1 * k as f32, 2.0))
            .unwrap();
    }
    cat.space = Discrete;
    let cat_blob = serialize::to_vec(&*cat).unwrap();
    let mut cat_sentinel: Box<CatPolicy> = trained_like(11);
    cat_sentinel.obs_norm = cat.obs_norm.clone();

    let mut gauss: Box<GaussPolicy> = trained_like(12);
    gauss.actor.head.log_std[0] = -0.7;
    gauss.obs_norm = RunningNorm::ZERO;
    for k in 0..20 {
        gauss
            .obs_norm
            .update(&SVector::<f32, 3>::new(0.1 * k as f32, -1.0, 3.0))
            .unwrap();
    }
    gauss.space = Continuous::symmetric(2.0);
    let gauss_blob = serialize::to_vec(&*gauss).unwrap();
    let mut gauss_sentinel: Box<GaussPolicy> = trained_like(13);
    gauss_sentinel.actor.head.log_std[0] = 0.25;
    gauss_sentinel.obs_norm = gauss.obs_norm.clone();
    gauss_sentinel.space = Continuous::symmetric(1.0);

    let a = fuzz_load(&cat_blob, &*cat_sentinel, PER_POLICY, 100);
    let b = fuzz_load(&gauss_blob, &*gauss_sentinel, PER_POLICY, 200);
    let elapsed = start.elapsed();
    eprintln!(
        "fuzzed {} blobs in {:.2} s\n  categorical: {a:?}\n  gaussian:    {b:?}",
        2 * PER_POLICY,
        elapsed.as_secs_f64()
    );
    // The deep checks were reached, every kind of refusal happened, and
    // harmless mutations (a weight bit flip with a valid CRC) still load.
    for (name, o) in [("categorical", &a), ("gaussian", &b)] {
        assert!(o.ok > 0, "{name}: nothing loaded");
        assert!(o.checksum > 0, "{name}: no checksum refusal");
        assert!(o.truncated_or_trailing > 0, "{name}: no length refusal");
        assert!(o.header > 0, "{name}: no header refusal");
        assert!(o.shape > 0, "{name}: no shape refusal");
        assert!(o.non_finite > 0, "{name}: no non-finite refusal");
        assert!(o.domain > 0, "{name}: no domain refusal");
        assert_eq!(o.other, 0, "{name}: unexpected error kinds");
    }
}

/// The report's case: a negative normaliser variance behind a valid CRC
/// loaded fine and then made every `act` fail.
#[test]
fn negative_variance_blob_is_refused_and_names_the_tensor() {
    let mut policy: Box<CatPolicy> = trained_like(20);
    policy.obs_norm = RunningNorm::ZERO;
    policy
        .obs_norm
        .update(&SVector::<f32, 4>::new(0.1, 0.2, 0.3, 0.4))
        .unwrap();
    let mut blob = serialize::to_vec(&*policy).unwrap();
    // The variance is the normaliser's second tensor: after the actor's
    // tensors and the mean.
    let actor_tensors = <<CatPolicy as HasActor>::A as Params>::TENSORS;
    let var_tensor = actor_tensors + 1;
    let scalar = <<CatPolicy as HasActor>::A as Params>::LEN + 4 + 2; // var[2]
    let at =
        serialize::HEADER_LEN + serialize::TENSOR_DESCRIPTOR_LEN * CatPolicy::TENSORS + 4 * scalar;
    blob[at..at + 4].copy_from_slice(&(-1.0f32).to_le_bytes());
    let n = blob.len();
    let crc = serialize::crc32(&blob[..n - 4]);
    blob[n - 4..].copy_from_slice(&crc.to_le_bytes());
    assert_eq!(
        serialize::verify(&blob).map(|h| h.tensors as usize),
        Ok(CatPolicy::TENSORS)
    );

    let mut dst = Box::new(CatPolicy::ZERO);
    let before = dst.clone();
    let err = serialize::load(&mut *dst, &blob).unwrap_err();
    assert_eq!(
        err,
        Error::OutOfDomain {
            tensor: var_tensor as u32,
            reason: "normaliser variance must be >= 0"
        }
    );
    assert!(err.to_string().contains("variance"));
    assert!(bits_equal(&*dst, &*before));
}

// ---------------------------------------------------------------------------
// Episode counters and the evaluation step cap
// ---------------------------------------------------------------------------

/// An environment that pays `reward` per step and ends after `ends_after`
/// steps (`u64::MAX`: never).
#[derive(Clone, Debug)]
struct Endless {
    reward: f32,
    ends_after: u64,
    t: u64,
}

impl Endless {
    /// Rewards `reward` a step; ends after `ends_after` steps.
    fn new(reward: f32, ends_after: u64) -> Self {
        Self {
            reward,
            ends_after,
            t: 0,
        }
    }
}

impl Env for Endless {
    type Obs = SVector<f32, 1>;
    type Space = Discrete<2>;
    const SOLVED_RETURN: f32 = 0.0;

    fn reset<R: Rng + ?Sized>(&mut self, _rng: &mut R) -> SVector<f32, 1> {
        self.t = 0;
        SVector::<f32, 1>::new(0.0)
    }

    fn step(&mut self, _action: usize) -> Result<Step<SVector<f32, 1>>, Error> {
        self.t += 1;
        Ok(Step {
            obs: SVector::<f32, 1>::new(0.0),
            reward: self.reward,
            terminated: self.t >= self.ends_after,
            truncated: false,
        })
    }
}

/// 2³² steps without an end overflowed the `u32` length (a panic with
/// overflow checks, a wrap to 0 without).
#[test]
fn cursor_episode_length_saturates() {
    let mut rng = microrl_tests::rng(30);
    let mut env = Endless::new(1.0, u64::MAX);
    let mut cursor = Cursor::start(&mut env, &mut rng);
    cursor.len = u32::MAX - 1; // as after 2³² − 1 steps
    let mut episodes = Vec::new();
    for _ in 0..3 {
        cursor
            .advance(&mut env, 0, &mut rng, &mut |e: Episode| episodes.push(e))
            .unwrap();
    }
    assert_eq!(cursor.len, u32::MAX);
    assert_eq!(cursor.steps, 3);
    // When the endless episode finally ends, it reports the saturated length.
    env.ends_after = env.t + 1;
    cursor
        .advance(&mut env, 0, &mut rng, &mut |e: Episode| episodes.push(e))
        .unwrap();
    assert_eq!(episodes.len(), 1);
    assert_eq!(episodes[0].len, u32::MAX);
    assert_eq!(cursor.len, 0);
    // The total step count saturates too.
    cursor.steps = u64::MAX;
    cursor
        .advance(&mut env, 0, &mut rng, &mut |_: Episode| {})
        .unwrap();
    assert_eq!(cursor.steps, u64::MAX);
}

/// An `f32` running return stops growing at 2²⁴ with unit rewards
/// (2²⁴ + 1 rounds back to 2²⁴).
#[test]
fn cursor_return_keeps_growing_past_two_to_the_24() {
    let mut rng = microrl_tests::rng(31);
    let mut env = Endless::new(1.0, u64::MAX);
    let mut cursor = Cursor::start(&mut env, &mut rng);
    cursor.ret = 16_777_216.0; // 2²⁴, as after 2²⁴ unit rewards
    let mut episodes = Vec::new();
    cursor
        .advance(&mut env, 0, &mut rng, &mut |e: Episode| episodes.push(e))
        .unwrap();
    env.ends_after = env.t + 1;
    cursor
        .advance(&mut env, 0, &mut rng, &mut |e: Episode| episodes.push(e))
        .unwrap();
    assert_eq!(episodes.len(), 1);
    assert_eq!(episodes[0].ret, 16_777_218.0);
    // A return beyond f32's range is reported saturated, not as +∞.
    let mut env = Endless::new(f32::MAX, 3);
    let mut cursor = Cursor::start(&mut env, &mut rng);
    let mut reported = Vec::new();
    for _ in 0..3 {
        cursor
            .advance(&mut env, 0, &mut rng, &mut |e: Episode| reported.push(e))
            .unwrap();
    }
    assert_eq!(reported.len(), 1);
    assert_eq!(reported[0].ret, f32::MAX);
}

/// `evaluate` had no step cap: an environment that never ends hung it.
#[test]
fn evaluate_stops_an_episode_that_never_ends() {
    let always_left = |_: &SVector<f32, 1>| Ok::<_, Error>(0usize);
    let mut rng = microrl_tests::rng(32);
    let mut env = Endless::new(1.0, u64::MAX);
    assert_eq!(
        evaluate_capped(&always_left, &mut env, 3, 1_000, &mut rng),
        Err(Error::EpisodeTooLong { max_steps: 1_000 })
    );
    assert_eq!(env.t, 1_000, "stopped exactly at the cap");
    // The default cap of `evaluate` (1 000 000 steps).
    let start = Instant::now();
    assert_eq!(
        evaluate(&always_left, &mut env, 1, &mut rng),
        Err(Error::EpisodeTooLong {
            max_steps: EVAL_MAX_STEPS
        })
    );
    assert_eq!(env.t, u64::from(EVAL_MAX_STEPS));
    eprintln!(
        "default cap reached in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    // An episode of exactly the cap is fine.
    env.ends_after = 1_000;
    assert_eq!(
        evaluate_capped(&always_left, &mut env, 2, 1_000, &mut rng),
        Ok((1_000.0, 0.0))
    );
    assert_eq!(
        evaluate_capped(&always_left, &mut env, 2, 0, &mut rng),
        Err(Error::config("max_steps", "must be > 0"))
    );
    // A non-finite reward is refused rather than averaged into NaN.
    env.reward = f32::NAN;
    assert_eq!(
        evaluate_capped(&always_left, &mut env, 1, 10_000, &mut rng),
        Err(Error::NonFinite)
    );
}

/// The cap does not change real evaluations.
#[test]
fn evaluate_matches_a_generous_explicit_cap_on_cartpole() {
    let policy: Box<CatPolicy> = trained_like(40);
    let a = evaluate(
        &*policy,
        &mut CartPole::new(),
        5,
        &mut microrl_tests::rng(41),
    )
    .unwrap();
    let b = evaluate_capped(
        &*policy,
        &mut CartPole::new(),
        5,
        500,
        &mut microrl_tests::rng(41),
    )
    .unwrap();
    assert_eq!(a, b);
    assert!(a.0.is_finite() && a.1.is_finite());
    let _ = algo::EVAL_MAX_STEPS;
}
