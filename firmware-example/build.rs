//! Puts the memory layout where the linker finds it as `memory.x` (the
//! cortex-m-rt/embassy convention: cortex-m-rt's `link.x` does
//! `INCLUDE memory.x`). `memory/mps2-an386.x` (QEMU) by default;
//! `memory/stm32f407.x` with the `stm32f407` feature.
//!
//! The layouts live in `memory/`, not as `memory.x` in the crate root: the
//! linker runs in the crate root and looks there for `INCLUDE`d files before
//! the search path, so a root `memory.x` would shadow the selected layout.

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"));
    let layout = if env::var_os("CARGO_FEATURE_STM32F407").is_some() {
        "memory/stm32f407.x"
    } else {
        "memory/mps2-an386.x"
    };
    fs::copy(layout, out.join("memory.x")).expect("copy the memory layout to OUT_DIR");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory");
    println!("cargo:rerun-if-changed=build.rs");
}
