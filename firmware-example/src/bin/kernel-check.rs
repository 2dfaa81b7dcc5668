//! The assembly inference kernels ([`microrl_firmware::kernel`]) against
//! the core, bit for bit, on the Cortex-M4F (QEMU).
//!
//! For each of 18-64-64-4, 4-64-64-2 and 4-32-32-2 and for several weight
//! scales (orthogonal initialisation; then every weight and bias drawn
//! uniformly, at scales that keep the hidden units in tanh's linear range
//! up to scales that saturate nearly all of them), thousands of random
//! observations — uniform at scales from 1e-3 to 1e30, single huge,
//! subnormal, zero and `−0` components, and now and then an infinite or NaN
//! one — go through the core (`Layer::forward`, `Actor::mode`,
//! `Controller::act` with a normaliser holding statistics, some with zero or
//! nearly zero variances where `ε` decides the divisor, and with an empty
//! one) and through the kernels (`act` both as `policy_act` and as
//! `FrozenPolicy::act`, with its precomputed `√(σ² + ε)`), and the
//! normalised observation itself (`RunningNorm::normalize` against
//! `FrozenPolicy::normalize`, some observations within a few `σ` of the
//! mean, where the clip does not hide the divisor); outputs must have the
//! same bits (any NaN equals any NaN) and the same `Result`s. Then `tanh` on random bit
//! patterns and on a dense sweep around the clamp, `VSQRT` against
//! `math::sqrt`, and the arg max on near-tied logits.
//!
//! Logs `kernel-check <what>: <n> cases, <m> mismatches` per check and
//! exits 0 iff every mismatch count is 0.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use cortex_m_rt::entry;
use microrl::algo::Actor;
use microrl::env::Discrete;
use microrl::nn::{Dense, Identity, Layer, Mlp};
use microrl::normalize::RunningNorm;
use microrl::policy::{Categorical, CategoricalActor};
use microrl::{Controller, Params, Policy, SVector};
use microrl_firmware::kernel::{self, OutputLayer};
use microrl_firmware::{exit, log_stack};
use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro128PlusPlus;

/// Observations per weight setting and network size.
const OBSERVATIONS: u32 = 1024;

/// `a` and `b` have the same bits, or are both NaN.
fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn uniform(rng: &mut Xoshiro128PlusPlus, scale: f32) -> f32 {
    microrl::rng::uniform_range(rng, -scale, scale)
}

/// One random observation component of a random kind.
fn component(rng: &mut Xoshiro128PlusPlus, scale: f32) -> f32 {
    match rng.next_u32() % 64 {
        0 => {
            f32::MAX
                * if rng.next_u32().is_multiple_of(2) {
                    1.0
                } else {
                    -1.0
                }
        }
        1 => -0.0,
        2 => 0.0,
        3 => f32::from_bits(rng.next_u32() & 0x807f_ffff), // subnormal (or ±0)
        4 => 1e30 * uniform(rng, 1.0),
        5 => 8.0 * uniform(rng, 1.0),
        _ => uniform(rng, scale),
    }
}

/// Compares the kernels with the core on one network size; returns the
/// number of mismatches.
#[inline(never)]
fn check_size<const OBS: usize, const H: usize, const ACT: usize>(
    name: &str,
    rng: &mut Xoshiro128PlusPlus,
) -> u32
where
    Dense<H, ACT, Identity>: OutputLayer<H, ACT>,
{
    let mut policy = Policy {
        actor: CategoricalActor {
            net: Mlp::<OBS, H, ACT>::ZERO,
        },
        obs_norm: RunningNorm::<OBS>::ZERO,
        space: Discrete::<ACT>,
    };
    let mut cases = 0u32;
    let mut mismatches = 0u32;
    // Weight settings: orthogonal, then uniform weights and biases at
    // increasing scales (1 saturates most hidden units of a 64-wide layer).
    for (setting, scale) in [0.0f32, 0.05, 0.3, 1.0, 8.0].into_iter().enumerate() {
        Actor::init(&mut policy.actor, rng);
        if scale > 0.0 {
            for t in 0..Mlp::<OBS, H, ACT>::TENSORS {
                for w in policy.actor.net.tensor_mut(t) {
                    *w = uniform(rng, scale);
                }
            }
        }
        policy.obs_norm = RunningNorm::ZERO;
        let with_statistics = setting % 2 == 0;
        if with_statistics {
            for _ in 0..16 {
                let mut o = SVector::<f32, OBS>::zeros();
                for x in o.iter_mut() {
                    *x = uniform(rng, 3.0);
                }
                let _ = policy.obs_norm.update(&o);
            }
            if setting > 0 {
                // Nearly constant components: `ε` decides their divisors
                // (`√ε` or `√(5e-9 + ε)`, and `√(3e-8 + ε)`).
                policy.obs_norm.var[0] = if setting == 2 { 0.0 } else { 5e-9 };
                policy.obs_norm.var[1] = 3e-8;
            }
        }
        let frozen = kernel::FrozenPolicy::new(&policy);
        for k in 0..OBSERVATIONS {
            let obs_scale = [1e-3f32, 0.5, 1.0, 3.0, 30.0, 1e4, 1e30][k as usize % 7];
            let mut o = SVector::<f32, OBS>::zeros();
            for x in o.iter_mut() {
                *x = component(rng, obs_scale);
            }
            if with_statistics && k % 3 == 1 {
                // Within a few σ of the mean, where the clip does not hide
                // the divisor.
                for i in 0..2 {
                    o[i] = policy.obs_norm.mean[i] + uniform(rng, 1e-3);
                }
            }
            if k % 97 == 0 {
                o[k as usize % OBS] = if k % 2 == 0 { f32::NAN } else { f32::INFINITY };
            }
            cases += 1;
            let core_y = policy.actor.net.forward(&o);
            let kernel_y = kernel::mlp_forward(&policy.actor.net, &o);
            let forward_ok = core_y
                .iter()
                .zip(kernel_y.iter())
                .all(|(&a, &b)| same(a, b));
            let mode_ok = policy.actor.mode(&o) == kernel::actor_mode(&policy.actor, &o);
            let core_act = policy.act(&o);
            let act_ok = core_act == kernel::policy_act(&policy, &o) && core_act == frozen.act(&o);
            let norm_ok = match (policy.obs_norm.normalize(&o), frozen.normalize(&o)) {
                (Ok(a), Ok(b)) => a.iter().zip(b.iter()).all(|(&a, &b)| same(a, b)),
                (a, b) => a.is_err() && b.is_err(),
            };
            if !(forward_ok && mode_ok && act_ok && norm_ok) {
                if mismatches < 4 {
                    defmt::error!(
                        "kernel-check {=str}: setting {=usize} observation {=u32}: forward {=bool} mode {=bool} act {=bool} normalize {=bool}; core {=[?]} kernel {=[?]}",
                        name,
                        setting,
                        k,
                        forward_ok,
                        mode_ok,
                        act_ok,
                        norm_ok,
                        core_y.as_slice(),
                        kernel_y.as_slice()
                    );
                }
                mismatches += 1;
            }
        }
    }
    report(name, cases, mismatches)
}

/// Logs `kernel-check <what>: <cases> cases, <mismatches> mismatches`;
/// returns `mismatches`.
fn report(what: &str, cases: u32, mismatches: u32) -> u32 {
    defmt::info!(
        "kernel-check {=str}: {=u32} cases, {=u32} mismatches",
        what,
        cases,
        mismatches
    );
    mismatches
}

/// Cases `0..n` of a check, `agrees(i)` for each in order; [`report`]s and
/// returns the mismatches.
fn check_cases(what: &str, n: u32, mut agrees: impl FnMut(u32) -> bool) -> u32 {
    let mismatches = (0..n).filter(|&i| !agrees(i)).count() as u32;
    report(what, n, mismatches)
}

/// `tanh` on random bit patterns (every class of `f32`) and on a dense sweep
/// of `[7.7, 7.95]` (where `p/q` crosses 1 and the clamp binds) and its
/// negative.
fn check_tanh(rng: &mut Xoshiro128PlusPlus) -> u32 {
    let mut cases = 0u32;
    let mut mismatches = 0u32;
    let mut check = |z: &mut [f32; 64], cases: &mut u32| {
        let input = *z;
        kernel::tanh_array(z);
        for (&x, &y) in input.iter().zip(z.iter()) {
            *cases += 1;
            if !same(microrl::math::tanh(x), y) {
                if mismatches < 4 {
                    defmt::error!(
                        "kernel-check tanh({=f32} = {=u32:#010x}): core {=u32:#010x} kernel {=u32:#010x}",
                        x,
                        x.to_bits(),
                        microrl::math::tanh(x).to_bits(),
                        y.to_bits()
                    );
                }
                mismatches += 1;
            }
        }
    };
    let mut z = [0.0f32; 64];
    for _ in 0..2048 {
        for x in z.iter_mut() {
            *x = match rng.next_u32() % 4 {
                0 => f32::from_bits(rng.next_u32()),
                1 => uniform(rng, 10.0),
                2 => uniform(rng, 1.0),
                _ => uniform(rng, 1e-3),
            };
        }
        check(&mut z, &mut cases);
    }
    // Every f32 of [7.7, 7.95] and of its negative, 32 apart (~ 120 000).
    let (lo, hi) = (7.7f32.to_bits(), 7.95f32.to_bits());
    let mut bits = lo;
    while bits <= hi {
        for (i, x) in z.iter_mut().enumerate() {
            let b = bits + 32 * (i as u32 / 2);
            *x = if i % 2 == 0 {
                f32::from_bits(b)
            } else {
                -f32::from_bits(b)
            };
        }
        check(&mut z, &mut cases);
        bits += 32 * 32;
    }
    // Every f32 within 32 ulps of 7.903_784_3 (0x40fc_ebcd), the one input
    // of [0, C] where the rational exceeds 1 (by one ulp) and the output
    // clamp binds, and of its negative.
    for (i, x) in z.iter_mut().enumerate() {
        let b = 0x40fc_ebcd - 16 + (i as u32 / 2);
        *x = if i % 2 == 0 {
            f32::from_bits(b)
        } else {
            -f32::from_bits(b)
        };
    }
    check(&mut z, &mut cases);
    report("tanh", cases, mismatches)
}

/// `kernel::sqrt` (`VSQRT`) against `math::sqrt` on random bit patterns.
fn check_sqrt(rng: &mut Xoshiro128PlusPlus) -> u32 {
    check_cases("sqrt", 100_000, |i| {
        let x = match i % 3 {
            0 => f32::from_bits(rng.next_u32()),
            1 => f32::from_bits(rng.next_u32() & 0x7fff_ffff),
            _ => microrl::rng::uniform(rng) * 16.0,
        };
        same(kernel::sqrt(x), microrl::math::sqrt(x))
    })
}

/// The arg max of near-tied logits: the core's log-softmax decides ties
/// that the logits alone do not.
fn check_mode(rng: &mut Xoshiro128PlusPlus) -> u32 {
    check_cases("mode", 20_000, |i| {
        let base = uniform(rng, [1.0f32, 30.0, 1e4][i as usize % 3]);
        let mut l = SVector::<f32, 4>::zeros();
        for x in l.iter_mut() {
            // Within a few ulps of `base`, or 1e-6 .. 1e-4 away.
            let ulps = (rng.next_u32() % 9) as i32 - 4;
            *x = match rng.next_u32() % 3 {
                0 => f32::from_bits((base.to_bits() as i32 + ulps) as u32),
                1 => base - 1e-6 * (rng.next_u32() % 100) as f32,
                _ => base,
            };
        }
        let core = Categorical::from_logits(&l).map(|d| d.mode());
        core == Categorical::mode_of_logits(&l)
    })
}

#[entry]
fn main() -> ! {
    let mut rng = Xoshiro128PlusPlus::seed_from_u64(7);
    let mut mismatches = 0;
    mismatches += check_tanh(&mut rng);
    mismatches += check_sqrt(&mut rng);
    mismatches += check_mode(&mut rng);
    mismatches += check_size::<18, 64, 4>("18-64-64-4", &mut rng);
    mismatches += check_size::<4, 64, 2>("4-64-64-2", &mut rng);
    mismatches += check_size::<4, 32, 2>("4-32-32-2", &mut rng);
    log_stack();
    if mismatches == 0 {
        defmt::info!("kernel-check: bit-identical");
    }
    exit(mismatches == 0)
}
