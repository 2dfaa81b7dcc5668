//! `cargo +nightly fuzz run load_policy` (from `fuzz/`): feeds arbitrary
//! bytes to `serialize::load` for a categorical and a Gaussian policy.
//!
//! Checked on every input: no panic; on an error the destination is
//! untouched; on success every value is finite and within its domain, and
//! saving the loaded policy reproduces the input bytes exactly. The bytes
//! are also tried with their CRC-32 recomputed, so the fuzzer gets past the
//! checksum to the header, shape, tag and domain checks.

#![no_main]

use libfuzzer_sys::fuzz_target;
use microrl::env::{CartPole, Pendulum};
use microrl::{Params, agent, serialize};

fn check<P: Params + PartialEq + Clone + core::fmt::Debug>(bytes: &[u8]) {
    let mut policy = P::ZERO;
    let before = policy.clone();
    match serialize::load(&mut policy, bytes) {
        Ok(()) => {
            assert!(policy.is_finite());
            assert!(policy.check_domain().is_ok());
            assert_eq!(serialize::to_vec(&policy).unwrap(), bytes);
        }
        Err(_) => assert_eq!(policy, before, "refused load changed the destination"),
    }
}

fn with_crc(bytes: &[u8]) -> Vec<u8> {
    let mut fixed = bytes.to_vec();
    if fixed.len() >= 4 {
        let n = fixed.len() - 4;
        let crc = serialize::crc32(&fixed[..n]);
        fixed[n..].copy_from_slice(&crc.to_le_bytes());
    }
    fixed
}

fuzz_target!(|bytes: &[u8]| {
    let fixed = with_crc(bytes);
    for input in [bytes, &fixed[..]] {
        check::<agent::Policy<CartPole, 8>>(input);
        check::<agent::Policy<Pendulum, 8>>(input);
    }
});
