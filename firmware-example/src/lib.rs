//! `microrl-firmware`: the Cortex-M4F (thumbv7em-none-eabihf) example crate.
//!
//! Its binaries (inference of an exported policy, PPO and actor-critic training
//! on the device, benchmarks) and the QEMU `mps2-an386` runner are not part of
//! this crate yet; today the crate holds no code. The core library it will link,
//! `microrl`, is already built for `thumbv7em-none-eabihf` in CI.

#![no_std]
