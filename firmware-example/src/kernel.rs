//! Hand-scheduled Cortex-M4F inference kernels for `Mlp<I, H, O>` policies,
//! bit-identical to the core's `Dense::forward`, `Actor::mode` and
//! `Controller::act`.
//!
//! The core computes every dense layer as `yᵢ = bᵢ`, then `yᵢ = yᵢ + wᵢⱼ·xⱼ`
//! for `j = 0, 1, …` in order, each product rounded before its addition,
//! then the activation (`math::fast::tanh` with the `fast-math` feature).
//! These kernels perform exactly those IEEE operations in exactly that order,
//! only scheduled by hand, so every result has the same bits (the firmware
//! test `kernel_matches_the_core_bit_for_bit` checks it under QEMU on
//! thousands of random inputs, saturating and huge ones included).
//!
//! # Why assembly
//!
//! LLVM's generic `thumbv7em` tuning fuses every `z + w·x` of the core's
//! kernel into one `VMLA`, which the Cortex-M4 executes in 3 cycles (TRM
//! r0p1, table 7-1) where `VMUL` + `VADD` take 1 + 1; it loads each weight
//! with its own `VLDR` (2 cycles unless right behind another load) between
//! the arithmetic; and its Horner chains in `tanh` feed every result into the
//! next instruction (one stall cycle each). Safe Rust on stable cannot ask
//! for another schedule, and the core crate forbids `unsafe`, so the kernels
//! live here, in `core::arch::asm!` (stable on ARM).
//!
//! # Bit identity
//!
//! The M4's `VMLA` is *chained*, not fused: it rounds the product before the
//! addition (ARMv7-M ARM, "VMLA: … the result of the multiply is rounded
//! before the addition"; the fused one is `VFMA`), so `VMUL` then `VADD` gives
//! the same bits as the compiled core. The kernels use the default FPSCR the
//! compiled code runs with (round to nearest, no flush to zero, no default
//! NaN). Addition is commutative in IEEE 754, so `vadd acc, acc, prod` equals
//! the core's `acc + prod`. The `tanh` runs the core's `math::fast::tanh`
//! operations on `x` itself (`x²`, the two Horner chains, `p·x`, `p/q`) but
//! without its input clamp `clamp(x, −C, C)`, the identity for `|x| < C`;
//! the core's output clamp `clamp(p/q, −1, 1)` is then done in the integer
//! unit on the bits. For `|x| < C` the kernel's quotient is the core's, and
//! it lies in `[−1, 1]` except for one value, `±0x3f800001` (one ulp over
//! `1`, at `|x| = 0x40fcebcd`), which becomes `±1` (checked on the host over
//! every `f32` of `[0, C]`, and the core's `tanh` is odd bit for bit, so the
//! negative half follows). For `C ≤ |x| ≤ ∞` the core computes at `±C` and
//! returns `±1`, and the kernel's quotient (meaningless there, possibly NaN)
//! is replaced by `±1`, the sign taken from `x`'s sign bit. A NaN `x` runs
//! through the same operations as in the core (the clamps keep a NaN) and
//! stays a NaN.
//!
//! # Register blocking and cycle budget (TRM timings; `tools/cycle_model.py`)
//!
//! - **Hidden layers** (`O` a multiple of 16): 16 rows' running sums stay in
//!   `s16–s31` while the kernel walks all the columns. The weights
//!   (contiguous per column in nalgebra's column-major storage) stream
//!   through `s0–s11` in runs of 12 back-to-back `VLDR`s (2 + 11 cycles: a
//!   load right behind a load pipelines), each followed by 12 `VMUL`s
//!   (product into the weight's register) and 12 `VADD`s, ordered so that no
//!   result feeds the very next instruction: three columns (48 weights) are
//!   four runs, a run may end in one column and go on in the next. The
//!   three inputs go to `s12–s14` as the first loads of the first run (1
//!   cycle each). That is 151 cycles per 48 weights, ≈ 3.15 a weight against
//!   3 for load, multiply and add alone (with 16-weight columns in two runs
//!   of 8 and 8 inputs per `VLDM` it was 3.2). The loop body is 12 columns
//!   (two pointers, each reaching columns −3 … 3); then up to 3 groups of
//!   three and 1 or 2 single columns. The bias comes in with one `VLDM`, the
//!   pre-activations go out with one `VSTM` per block.
//! - **Output layer** (`O` = 2 or 4, identity): all the rows in registers,
//!   8 inputs and 16 weights (`VLDM`, contiguous across columns here) per run.
//! - **`tanh`**, 4 lanes at a time, the 11 coefficients (the core's
//!   `math::fast::{TANH_ALPHA, TANH_BETA}`) resident in `s18–s28`: the
//!   core's operations on `x` itself (`x²`, the 13/6 rational's two Horner
//!   chains interleaved over the lanes, `VDIV`, 14 cycles) without the input
//!   clamp, which is the identity below `C`; then in the integer unit the
//!   result becomes `±1` (`x`'s sign) where `C ≤ |x| ≤ ∞` (one compare of
//!   `2·|x|`'s bits; the core's result there is `±1`) or where the quotient
//!   is `±0x3f800001` (the one `|x|` in `[0, C]` where `p/q` exceeds 1,
//!   `0x40fcebcd`; the core's output clamp). Checked over every `f32` of
//!   `[0, C]` on the host: `p/q ≤ 1` except there, and `p/q < 1` just below
//!   `C`, so the saturated range starts at `C` exactly. A NaN runs through
//!   the core's operations. ≈ 47 cycles a lane.
//! - **Normalisation** (`Policy`): [`policy_act`] computes `(x − μ) /
//!   √(σ² + ε)` with `VSQRT` and `VDIV` per call; [`FrozenPolicy`] computes
//!   `σ = √(σ² + ε)` once with the core's expression and per call only
//!   `(x − μ)/σ` (`VDIV`), the `±10` clip on the bits in the integer unit and
//!   one finiteness check for all the inputs (a running sum).
//!
//! # The head
//!
//! [`actor_mode`] returns the core's `Actor::mode`: the core's
//! `Categorical::mode_of_logits`, the first arg max of the logits unless an
//! earlier logit is within `NEAR_TIE` of the largest (then the log-softmax
//! decides; its documentation has the argument).
//!
//! Only for `thumbv7em-none-eabihf` (any hard-float ARM target with VFPv4-SP
//! single precision); the bins that use it keep `forbid(unsafe_code)`.

#![allow(unsafe_code)]

use core::arch::asm;
use core::mem::MaybeUninit;

use microrl::error::check_all_finite;
use microrl::math::fast::{TANH_ALPHA, TANH_BETA, TANH_CLAMP};
use microrl::nn::{Dense, Identity, Mlp, Tanh};
use microrl::normalize::{CLIP, EPSILON, RunningNorm};
use microrl::policy::{Categorical, CategoricalActor};
use microrl::{Error, Policy, SVector};

/// The constants the `tanh` kernel loads into `s18–s28` with one `VLDM`:
/// `α₀ … α₆, β₀ … β₃`.
static TANH_CONSTANTS: [f32; 11] = [
    TANH_ALPHA[0],
    TANH_ALPHA[1],
    TANH_ALPHA[2],
    TANH_ALPHA[3],
    TANH_ALPHA[4],
    TANH_ALPHA[5],
    TANH_ALPHA[6],
    TANH_BETA[0],
    TANH_BETA[1],
    TANH_BETA[2],
    TANH_BETA[3],
];

/// `2·|x|`'s bits plus this (`r8` in the `tanh` kernel) are, as a signed
/// integer, below [`TANH_SAT_LIMIT`] iff `C ≤ |x| ≤ ∞` (not for a NaN): the
/// lanes whose result is `±1`.
const TANH_SAT_OFFSET: u32 = 0x8000_0000u32.wrapping_sub(TANH_CLAMP.to_bits() << 1);
/// See [`TANH_SAT_OFFSET`] (`r9`).
const TANH_SAT_LIMIT: u32 = 0x8000_0000 + (0xff00_0000 - (TANH_CLAMP.to_bits() << 1)) + 1;

/// One run of a 16-row block: the input loads `$xr @ $xo` (from `{xp}` at
/// byte offset `$xo`), then the weight loads `$w` from `$p` (column `$c`
/// relative to `$p`, row `$r`), all back to back (the first load 2 cycles,
/// each further one 1); then `$w = $w·$x` for every weight, then
/// `$a = $a + $w` (the row's sum), in the same order, so that no result
/// feeds the very next instruction.
macro_rules! run {
    ([$($xr:literal @ $xo:literal),*] $p:literal
     [$(($w:literal, $c:literal, $r:literal, $x:literal, $a:literal)),+ $(,)?]) => {
        concat!(
            $("vldr ", $xr, ", [{xp}, #(", $xo, ")]\n",)*
            $("vldr ", $w, ", [", $p, ", #((", $c, ")*{cs}+4*", $r, ")]\n",)+
            $("vmul.f32 ", $w, ", ", $w, ", ", $x, "\n",)+
            $("vadd.f32 ", $a, ", ", $a, ", ", $w, "\n",)+
        )
    };
}

/// The first run of a column `$c` (relative to `$p`): the input loads
/// `$xr @ $xo`, then rows 0–11 of the column in `s0–s11`, the input in `s12`.
macro_rules! col_head {
    ([$($xr:literal @ $xo:literal),*] $p:literal, $c:literal) => {
        run!([$($xr @ $xo),*] $p [
            ("s0", $c, 0, "s12", "s16"), ("s1", $c, 1, "s12", "s17"),
            ("s2", $c, 2, "s12", "s18"), ("s3", $c, 3, "s12", "s19"),
            ("s4", $c, 4, "s12", "s20"), ("s5", $c, 5, "s12", "s21"),
            ("s6", $c, 6, "s12", "s22"), ("s7", $c, 7, "s12", "s23"),
            ("s8", $c, 8, "s12", "s24"), ("s9", $c, 9, "s12", "s25"),
            ("s10", $c, 10, "s12", "s26"), ("s11", $c, 11, "s12", "s27"),
        ])
    };
}

/// The second run of two columns `$ca`, `$cb` (relative to `$p`): rows
/// 12–15 of `$ca` (input `s12`), then rows 0–7 of `$cb` (input `s13`).
macro_rules! col_pair {
    ($p:literal, $ca:literal, $cb:literal) => {
        run!([] $p [
            ("s0", $ca, 12, "s12", "s28"), ("s1", $ca, 13, "s12", "s29"),
            ("s2", $ca, 14, "s12", "s30"), ("s3", $ca, 15, "s12", "s31"),
            ("s4", $cb, 0, "s13", "s16"), ("s5", $cb, 1, "s13", "s17"),
            ("s6", $cb, 2, "s13", "s18"), ("s7", $cb, 3, "s13", "s19"),
            ("s8", $cb, 4, "s13", "s20"), ("s9", $cb, 5, "s13", "s21"),
            ("s10", $cb, 6, "s13", "s22"), ("s11", $cb, 7, "s13", "s23"),
        ])
    };
}

/// `$op $dᵢ, $aᵢ, $bᵢ` for every lane `i`, one instruction a line.
macro_rules! lanes {
    ($op:literal [$($d:literal),+] [$($a:literal),+] [$($b:literal),+]) => {
        concat!($($op, " ", $d, ", ", $a, ", ", $b, "\n",)+)
    };
}

/// `s0–s15 = s0–s15 · x` (`x` = `$x0` for `s0–s3`, … `$x3` for `s12–s15`),
/// then the products added into `s28–s31` in order: four columns of
/// [`matvec_4`].
macro_rules! mac4 {
    ($x0:literal, $x1:literal, $x2:literal, $x3:literal) => {
        concat!(
            lanes!("vmul.f32"
                ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7",
                 "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15"]
                ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7",
                 "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15"]
                [$x0, $x0, $x0, $x0, $x1, $x1, $x1, $x1,
                 $x2, $x2, $x2, $x2, $x3, $x3, $x3, $x3]),
            lanes!("vadd.f32"
                ["s28", "s29", "s30", "s31", "s28", "s29", "s30", "s31",
                 "s28", "s29", "s30", "s31", "s28", "s29", "s30", "s31"]
                ["s28", "s29", "s30", "s31", "s28", "s29", "s30", "s31",
                 "s28", "s29", "s30", "s31", "s28", "s29", "s30", "s31"]
                ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7",
                 "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15"]),
        )
    };
}

/// Three columns of a 16-row block (48 weights, columns `$ca`, `$cb`, `$cc`
/// relative to `$p`, inputs at `{xp}` + `$xa`, `$xb`, `$xc`) in four runs of
/// 12 weights in `s0–s11`; the three inputs go to `s12–s14` in the first
/// run (the previous run's products are done with them).
macro_rules! unit3 {
    ($p:literal, $ca:literal, $cb:literal, $cc:literal, $xa:literal, $xb:literal, $xc:literal) => {
        concat!(
            col_head!(["s12" @ $xa, "s13" @ $xb, "s14" @ $xc] $p, $ca),
            col_pair!($p, $ca, $cb),
            run!([] $p [
                ("s0", $cb, 8, "s13", "s24"), ("s1", $cb, 9, "s13", "s25"),
                ("s2", $cb, 10, "s13", "s26"), ("s3", $cb, 11, "s13", "s27"),
                ("s4", $cb, 12, "s13", "s28"), ("s5", $cb, 13, "s13", "s29"),
                ("s6", $cb, 14, "s13", "s30"), ("s7", $cb, 15, "s13", "s31"),
                ("s8", $cc, 0, "s14", "s16"), ("s9", $cc, 1, "s14", "s17"),
                ("s10", $cc, 2, "s14", "s18"), ("s11", $cc, 3, "s14", "s19"),
            ]),
            run!([] $p [
                ("s0", $cc, 4, "s14", "s20"), ("s1", $cc, 5, "s14", "s21"),
                ("s2", $cc, 6, "s14", "s22"), ("s3", $cc, 7, "s14", "s23"),
                ("s4", $cc, 8, "s14", "s24"), ("s5", $cc, 9, "s14", "s25"),
                ("s6", $cc, 10, "s14", "s26"), ("s7", $cc, 11, "s14", "s27"),
                ("s8", $cc, 12, "s14", "s28"), ("s9", $cc, 13, "s14", "s29"),
                ("s10", $cc, 14, "s14", "s30"), ("s11", $cc, 15, "s14", "s31"),
            ]),
        )
    };
}

/// One column of a 16-row block (column `$c` relative to `$p`, input at
/// `{xp}` + `$xa`): runs of 12 and 4 weights.
macro_rules! col1 {
    ($p:literal, $c:literal, $xa:literal) => {
        concat!(
            col_head!(["s12" @ $xa] $p, $c),
            run!([] $p [
                ("s0", $c, 12, "s12", "s28"), ("s1", $c, 13, "s12", "s29"),
                ("s2", $c, 14, "s12", "s30"), ("s3", $c, 15, "s12", "s31"),
            ]),
        )
    };
}

/// Two columns of a 16-row block (`$ca`, `$cb` relative to `$p`, inputs at
/// `{xp}` + `$xa`, `$xb`): runs of 12, 12 and 8 weights.
macro_rules! col2 {
    ($p:literal, $ca:literal, $cb:literal, $xa:literal, $xb:literal) => {
        concat!(
            col_head!(["s12" @ $xa, "s13" @ $xb] $p, $ca),
            col_pair!($p, $ca, $cb),
            run!([] $p [
                ("s0", $cb, 8, "s13", "s24"), ("s1", $cb, 9, "s13", "s25"),
                ("s2", $cb, 10, "s13", "s26"), ("s3", $cb, 11, "s13", "s27"),
                ("s4", $cb, 12, "s13", "s28"), ("s5", $cb, 13, "s13", "s29"),
                ("s6", $cb, 14, "s13", "s30"), ("s7", $cb, 15, "s13", "s31"),
            ]),
        )
    };
}

/// Twelve columns of a 16-row block, four [`unit3`]s: columns 0–5 from
/// `{pa}` (which points at column 3: relative −3 … 2), 6–11 from `{pb}`
/// (column 9), inputs at `{xp}` + 0 … 44.
macro_rules! body12 {
    () => {
        concat!(
            unit3!("{pa}", "-3", "-2", "-1", "0", "4", "8"),
            unit3!("{pa}", "0", "1", "2", "12", "16", "20"),
            unit3!("{pb}", "-3", "-2", "-1", "24", "28", "32"),
            unit3!("{pb}", "0", "1", "2", "36", "40", "44"),
        )
    };
}

/// `z = W x + b` for `O` a multiple of 16 (at most 64: the `VLDR` offsets
/// of columns −3 … 3 from a pointer must stay within ±1 020 bytes): 16 rows
/// at a time, their sums in `s16–s31` over all the columns, in column order.
/// The columns go 12 at a time ([`body12`], a loop if there are 24 or
/// more), then up to 3 [`unit3`]s and 1 or 2 single columns.
#[inline(never)]
fn matvec_wide<const I: usize, const O: usize>(
    w: &[[f32; O]; I],
    b: &[f32; O],
    x: &[f32; I],
    z: *mut [f32; O],
) {
    const { assert!(O.is_multiple_of(16) && O >= 16 && O <= 64 && I >= 1 && I <= 255) };
    // SAFETY: reads `w` (I·O floats), `b` (O) and `x` (I), writes all of
    // `z` (O; the callers pass a `&mut`, possibly of uninitialised memory),
    // all valid for those lengths by their types; every pointer the
    // assembly advances is an `inout` scratch copy; it clobbers only the
    // registers listed; no stack use.
    unsafe {
        asm!(
            "1:",
            "vldmia {bp}!, {{s16-s31}}",
            "add {pa}, {wp}, #(3*{cs})",
            "add {pb}, {wp}, #(9*{cs})",
            ".if {bodies} >= 2",
            "movs {n}, #{bodies}",
            "2:",
            body12!(),
            "add {pa}, {pa}, #(12*{cs})",
            "add {pb}, {pb}, #(12*{cs})",
            "add {xp}, {xp}, #48",
            "subs {n}, {n}, #1",
            "bne 2b",
            ".elseif {bodies} == 1",
            body12!(),
            "add {pa}, {pa}, #(12*{cs})",
            "add {pb}, {pb}, #(12*{cs})",
            "add {xp}, {xp}, #48",
            ".endif",
            ".if {units} >= 1",
            unit3!("{pa}", "-3", "-2", "-1", "0", "4", "8"),
            ".endif",
            ".if {units} >= 2",
            unit3!("{pa}", "0", "1", "2", "12", "16", "20"),
            ".endif",
            ".if {units} >= 3",
            unit3!("{pb}", "-3", "-2", "-1", "24", "28", "32"),
            ".endif",
            ".if {cols} == 1",
            ".if {units} == 0",
            col1!("{pa}", "-3", "0"),
            ".elseif {units} == 1",
            col1!("{pa}", "0", "12"),
            ".elseif {units} == 2",
            col1!("{pb}", "-3", "24"),
            ".else",
            col1!("{pb}", "0", "36"),
            ".endif",
            ".elseif {cols} == 2",
            ".if {units} == 0",
            col2!("{pa}", "-3", "-2", "0", "4"),
            ".elseif {units} == 1",
            col2!("{pa}", "0", "1", "12", "16"),
            ".elseif {units} == 2",
            col2!("{pb}", "-3", "-2", "24", "28"),
            ".else",
            col2!("{pb}", "0", "1", "36", "40"),
            ".endif",
            ".endif",
            ".if {bodies} >= 1",
            "sub {xp}, {xp}, #(48*{bodies})",
            ".endif",
            "vstmia {zp}!, {{s16-s31}}",
            "add {wp}, {wp}, #64",
            "subs {rows}, {rows}, #1",
            "bne 1b",
            cs = const O * 4,
            bodies = const I / 12,
            units = const (I % 12) / 3,
            cols = const I % 3,
            wp = inout(reg) w.as_ptr() => _,
            bp = inout(reg) b.as_ptr() => _,
            xp = inout(reg) x.as_ptr() => _,
            zp = inout(reg) z => _,
            rows = inout(reg) O / 16 => _,
            pa = out(reg) _,
            pb = out(reg) _,
            n = out(reg) _,
            out("s0") _, out("s1") _, out("s2") _, out("s3") _,
            out("s4") _, out("s5") _, out("s6") _, out("s7") _,
            out("s8") _, out("s9") _, out("s10") _, out("s11") _,
            out("s12") _, out("s13") _, out("s14") _,
            out("s16") _, out("s17") _, out("s18") _, out("s19") _,
            out("s20") _, out("s21") _, out("s22") _, out("s23") _,
            out("s24") _, out("s25") _, out("s26") _, out("s27") _,
            out("s28") _, out("s29") _, out("s30") _, out("s31") _,
            options(nostack),
        );
    }
}

/// `z = W x + b` for `O = 4`, `I` a multiple of 8: the 4 sums in
/// `s28–s31`, 8 inputs (`s16–s23`) and 4 columns' 16 weights (`s0–s15`, one
/// `VLDM`: the columns are contiguous) per run.
#[inline(never)]
fn matvec_4<const I: usize>(w: &[[f32; 4]; I], b: &[f32; 4], x: &[f32; I], z: &mut [f32; 4]) {
    const { assert!(I.is_multiple_of(8) && I >= 8 && I <= 256) };
    // SAFETY: as `matvec_wide`.
    unsafe {
        asm!(
            "vldmia {bp}, {{s28-s31}}",
            ".rept {chunks}",
            "vldmia {xp}!, {{s16-s23}}",
            "vldmia {wp}!, {{s0-s15}}",
            mac4!("s16", "s17", "s18", "s19"),
            "vldmia {wp}!, {{s0-s15}}",
            mac4!("s20", "s21", "s22", "s23"),
            ".endr",
            "vstmia {zp}, {{s28-s31}}",
            chunks = const I / 8,
            wp = inout(reg) w.as_ptr() => _,
            bp = in(reg) b.as_ptr(),
            xp = inout(reg) x.as_ptr() => _,
            zp = in(reg) z.as_mut_ptr(),

            out("s0") _, out("s1") _, out("s2") _, out("s3") _,
            out("s4") _, out("s5") _, out("s6") _, out("s7") _,
            out("s8") _, out("s9") _, out("s10") _, out("s11") _,
            out("s12") _, out("s13") _, out("s14") _, out("s15") _,
            out("s16") _, out("s17") _, out("s18") _, out("s19") _,
            out("s20") _, out("s21") _, out("s22") _, out("s23") _,
            out("s28") _, out("s29") _, out("s30") _, out("s31") _,
            options(nostack),
        );
    }
}

/// `z = W x + b` for `O = 2`, `I` a multiple of 8: the 2 sums in `s30–s31`,
/// 8 inputs (`s16–s23`) and 8 columns' 16 weights (`s0–s15`) per run.
#[inline(never)]
fn matvec_2<const I: usize>(w: &[[f32; 2]; I], b: &[f32; 2], x: &[f32; I], z: &mut [f32; 2]) {
    const { assert!(I.is_multiple_of(8) && I >= 8 && I <= 2040) };
    // SAFETY: as `matvec_wide`.
    unsafe {
        asm!(
            "vldmia {bp}, {{s30-s31}}",
            "movs {n}, #{chunks}",
            "1:",
            "vldmia {xp}!, {{s16-s23}}",
            "vldmia {wp}!, {{s0-s15}}",
            lanes!("vmul.f32"
                ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7",
                 "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15"]
                ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7",
                 "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15"]
                ["s16", "s16", "s17", "s17", "s18", "s18", "s19", "s19",
                 "s20", "s20", "s21", "s21", "s22", "s22", "s23", "s23"]),
            lanes!("vadd.f32"
                ["s30", "s31", "s30", "s31", "s30", "s31", "s30", "s31",
                 "s30", "s31", "s30", "s31", "s30", "s31", "s30", "s31"]
                ["s30", "s31", "s30", "s31", "s30", "s31", "s30", "s31",
                 "s30", "s31", "s30", "s31", "s30", "s31", "s30", "s31"]
                ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7",
                 "s8", "s9", "s10", "s11", "s12", "s13", "s14", "s15"]),
            "subs {n}, {n}, #1",
            "bne 1b",
            "vstmia {zp}, {{s30-s31}}",
            chunks = const I / 8,
            wp = inout(reg) w.as_ptr() => _,
            bp = in(reg) b.as_ptr(),
            xp = inout(reg) x.as_ptr() => _,
            zp = in(reg) z.as_mut_ptr(),
            n = out(reg) _,
            out("s0") _, out("s1") _, out("s2") _, out("s3") _,
            out("s4") _, out("s5") _, out("s6") _, out("s7") _,
            out("s8") _, out("s9") _, out("s10") _, out("s11") _,
            out("s12") _, out("s13") _, out("s14") _, out("s15") _,
            out("s16") _, out("s17") _, out("s18") _, out("s19") _,
            out("s20") _, out("s21") _, out("s22") _, out("s23") _,
            out("s30") _, out("s31") _,
            options(nostack),
        );
    }
}

/// The integer tail of one lane: `$b` holds `x`'s bits, `$q` the quotient's
/// bits, replaced by `x`'s sign ORed into `1.0` when `C ≤ |x| ≤ ∞` (first
/// compare, see [`TANH_SAT_OFFSET`]) or when the quotient is `±0x3f800001`
/// (second compare, signed `0x7f000001 − 2·|q| < 0`: `2·|q|` is at most
/// `0x7f000002` below `C`, and a NaN's `2·|q|` is negative as a signed
/// integer, so it never triggers).
macro_rules! tail {
    ($b:literal, $q:literal) => {
        concat!(
            "add r12, r8, ",
            $b,
            ", lsl #1\n",
            "cmp r12, r9\n",
            "it ge\n",
            "cmpge r10, ",
            $q,
            ", lsl #1\n",
            "itt lt\n",
            "andlt ",
            $q,
            ", ",
            $b,
            ", #0x80000000\n",
            "orrlt ",
            $q,
            ", ",
            $q,
            ", #0x3f800000\n",
        )
    };
}

/// One Horner step `y = y·x² + c` over the four lanes (`y` in `$y`: `p` in
/// `s8–s11` or `q` in `s0–s3`; `x²` in `s4–s7`; `c` in `$c`).
macro_rules! horner {
    ([$($y:literal),+], $c:literal) => {
        concat!(
            lanes!("vmul.f32" [$($y),+] [$($y),+] ["s4", "s5", "s6", "s7"]),
            lanes!("vadd.f32" [$($y),+] [$($y),+] [$c, $c, $c, $c]),
        )
    };
}

/// Four lanes of [`tanh_in_place`] at `{zp}` (advanced by 16 bytes).
macro_rules! tanh4 {
    () => {
        concat!(
            "vldmia {zp}, {{s0-s3}}\n",
            "vmov r0, r1, s0, s1\n",
            "vmov r2, r3, s2, s3\n",
            // x² = x·x
            lanes!("vmul.f32" ["s4", "s5", "s6", "s7"] ["s0", "s1", "s2", "s3"] ["s0", "s1", "s2", "s3"]),
            // p = α₆·x² + α₅ (α₆ in s24, α₅ in s23), then the rest of Horner.
            lanes!("vmul.f32" ["s8", "s9", "s10", "s11"] ["s24", "s24", "s24", "s24"] ["s4", "s5", "s6", "s7"]),
            lanes!("vadd.f32" ["s8", "s9", "s10", "s11"] ["s8", "s9", "s10", "s11"] ["s23", "s23", "s23", "s23"]),
            horner!(["s8", "s9", "s10", "s11"], "s22"),
            horner!(["s8", "s9", "s10", "s11"], "s21"),
            horner!(["s8", "s9", "s10", "s11"], "s20"),
            horner!(["s8", "s9", "s10", "s11"], "s19"),
            horner!(["s8", "s9", "s10", "s11"], "s18"),
            // p = p·x
            lanes!("vmul.f32" ["s8", "s9", "s10", "s11"] ["s8", "s9", "s10", "s11"] ["s0", "s1", "s2", "s3"]),
            // q = β₃·x² + β₂ (β₃ in s28, β₂ in s27), then β₁, β₀.
            lanes!("vmul.f32" ["s0", "s1", "s2", "s3"] ["s28", "s28", "s28", "s28"] ["s4", "s5", "s6", "s7"]),
            lanes!("vadd.f32" ["s0", "s1", "s2", "s3"] ["s0", "s1", "s2", "s3"] ["s27", "s27", "s27", "s27"]),
            horner!(["s0", "s1", "s2", "s3"], "s26"),
            horner!(["s0", "s1", "s2", "s3"], "s25"),
            lanes!("vdiv.f32" ["s8", "s9", "s10", "s11"] ["s8", "s9", "s10", "s11"] ["s0", "s1", "s2", "s3"]),
            "vmov r4, r5, s8, s9\n",
            tail!("r0", "r4"),
            tail!("r1", "r5"),
            "stmia {zp}!, {{r4, r5}}\n",
            "vmov r4, r5, s10, s11\n",
            tail!("r2", "r4"),
            tail!("r3", "r5"),
            "stmia {zp}!, {{r4, r5}}\n",
        )
    };
}

/// Groups of 4 lanes per iteration of [`tanh_in_place`]'s loop: 8 if `n` is
/// a multiple of 32 (two iterations for 64 lanes, one for 32), else 4 if a
/// multiple of 16, else 2.
const fn tanh_groups(n: usize) -> usize {
    if n.is_multiple_of(32) {
        8
    } else if n.is_multiple_of(16) {
        4
    } else {
        2
    }
}

/// `zᵢ = tanh(zᵢ)` in place (`math::fast::tanh`, bit for bit), [`tanh_groups`]
/// groups of 4 lanes per loop iteration; `N` a multiple of 8.
///
/// Per lane, the core's operations on `x` itself, without its input clamp:
/// `x² = x·x`; `p` = the Horner chain of `α₆ … α₀` in `x²`, then `p·x`; `q`
/// = the Horner chain of `β₃ … β₀`; `r = p/q`. Below `C` in magnitude the
/// clamp is the identity, so these are the core's values; then the integer
/// unit replaces `r` by `±1` (`x`'s sign) where the core's result is `±1`
/// and `r` is not: at `C ≤ |x| ≤ ∞` (where the core computes at `±C` and
/// gets `±1`, and the kernel's `r` is meaningless) and at the one quotient
/// beyond `±1`, `±0x3f800001` (the core's output clamp; see the module
/// documentation). A NaN runs through the same operations as in the core.
#[inline(never)]
fn tanh_in_place<const N: usize>(z: &mut [f32; N]) {
    const { assert!(N.is_multiple_of(8) && N >= 8 && N <= 2040) };
    // SAFETY: reads and writes `z` (N floats) and reads the 11 constants;
    // clobbers only the registers listed and the flags; no stack use.
    unsafe {
        asm!(
            "vldmia r12, {{s18-s28}}",
            "1:",
            ".rept {groups}",
            tanh4!(),
            ".endr",
            "subs {n}, {n}, #1",
            "bne 1b",
            groups = const tanh_groups(N),
            zp = inout(reg) z.as_mut_ptr() => _,
            n = inout(reg) N / (4 * tanh_groups(N)) => _,
            inout("r12") TANH_CONSTANTS.as_ptr() => _,
            in("r8") TANH_SAT_OFFSET,
            in("r9") TANH_SAT_LIMIT,
            in("r10") 0x7f00_0001u32,
            out("r0") _,
            out("r1") _,
            out("r2") _,
            out("r3") _,
            out("r4") _,
            out("r5") _,
            out("s0") _, out("s1") _, out("s2") _, out("s3") _,
            out("s4") _, out("s5") _, out("s6") _, out("s7") _,
            out("s8") _, out("s9") _, out("s10") _, out("s11") _,
            out("s18") _, out("s19") _,
            out("s20") _, out("s21") _, out("s22") _, out("s23") _,
            out("s24") _, out("s25") _, out("s26") _, out("s27") _,
            out("s28") _,
            options(nostack),
        );
    }
}

/// `zᵢ = microrl::math::tanh(zᵢ)` (the `fast-math` tanh), bit for bit, with
/// the kernel of the hidden layers; `N` a multiple of 4.
pub fn tanh_array<const N: usize>(z: &mut [f32; N]) {
    tanh_in_place(z);
}

/// A hidden layer, `y = tanh(W x + b)`, as the core's `Dense::forward`,
/// into `y` (which need not be initialised); returns `y`, now initialised.
/// `O` a multiple of 16, at most 64.
pub fn dense_tanh<'y, const I: usize, const O: usize>(
    layer: &Dense<I, O, Tanh>,
    x: &[f32; I],
    y: &'y mut MaybeUninit<[f32; O]>,
) -> &'y mut [f32; O] {
    matvec_wide(
        &layer.weight.data.0,
        &layer.bias.data.0[0],
        x,
        y.as_mut_ptr(),
    );
    // SAFETY: `matvec_wide` wrote all `O` elements.
    let y = unsafe { y.assume_init_mut() };
    tanh_in_place(y);
    y
}

/// The output layers the kernels cover: `Dense<I, O, Identity>` for `O` = 2
/// or 4 and `I` a multiple of 8.
pub trait OutputLayer<const I: usize, const O: usize> {
    /// `y = W x + b`, as the core's `Dense::forward`.
    fn forward_kernel(&self, x: &[f32; I], y: &mut [f32; O]);
}

impl<const I: usize> OutputLayer<I, 2> for Dense<I, 2, Identity> {
    fn forward_kernel(&self, x: &[f32; I], y: &mut [f32; 2]) {
        matvec_2(&self.weight.data.0, &self.bias.data.0[0], x, y);
    }
}

impl<const I: usize> OutputLayer<I, 4> for Dense<I, 4, Identity> {
    fn forward_kernel(&self, x: &[f32; I], y: &mut [f32; 4]) {
        matvec_4(&self.weight.data.0, &self.bias.data.0[0], x, y);
    }
}

/// `Mlp<I, H, O>::forward` (tanh hidden layers), bit for bit: `H` a multiple
/// of 16 up to 64, `O` = 2 or 4.
pub fn mlp_forward<const I: usize, const H: usize, const O: usize>(
    net: &Mlp<I, H, O>,
    x: &SVector<f32, I>,
) -> SVector<f32, O>
where
    Dense<H, O, Identity>: OutputLayer<H, O>,
{
    mlp_forward_array(net, &x.data.0[0])
}

/// [`mlp_forward`] of an array.
fn mlp_forward_array<const I: usize, const H: usize, const O: usize>(
    net: &Mlp<I, H, O>,
    x: &[f32; I],
) -> SVector<f32, O>
where
    Dense<H, O, Identity>: OutputLayer<H, O>,
{
    let mut h1 = MaybeUninit::uninit();
    let mut h2 = MaybeUninit::uninit();
    let mut y = SVector::<f32, O>::zeros();
    let h1 = dense_tanh(&net.first, x, &mut h1);
    let h2 = dense_tanh(&net.second.first, h1, &mut h2);
    net.second.second.forward_kernel(h2, &mut y.data.0[0]);
    y
}

/// `Actor::mode` of a `CategoricalActor<Mlp<OBS, H, A>>`, bit for bit.
///
/// # Errors
/// As the core's: [`Error::NonFinite`] for a non-finite input or logit.
pub fn actor_mode<const OBS: usize, const H: usize, const A: usize>(
    actor: &CategoricalActor<Mlp<OBS, H, A>>,
    input: &SVector<f32, OBS>,
) -> Result<usize, Error>
where
    Dense<H, A, Identity>: OutputLayer<H, A>,
{
    check_all_finite(input.as_slice())?;
    Categorical::mode_of_logits(&mlp_forward(&actor.net, input))
}

/// `√x` with the FPU's `VSQRT` (IEEE 754 correctly rounded, as `libm`'s
/// `sqrtf` that `microrl::math::sqrt` calls on the MCU: the same bits).
#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    let r: u32;
    // SAFETY: register-to-register instructions only. (The bits go through
    // a core register: rustc passes `f32` operands in S registers only with
    // the `vfp2` target feature, which stable Rust does not let a crate name.)
    unsafe {
        asm!(
            "vmov s0, {x}",
            "vsqrt.f32 s0, s0",
            "vmov {r}, s0",
            x = in(reg) x.to_bits(),
            r = lateout(reg) r,
            out("s0") _,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    f32::from_bits(r)
}

/// The statistics part of `RunningNorm::normalize`, two components at a
/// time: `outᵢ = clamp((xᵢ − μᵢ) / √(σᵢ² + ε), −10, 10)` (`VSQRT`, `VDIV`,
/// the core's clamp order: below `−10` first), writing all of `out`.
/// Returns `false` iff an `xᵢ` or an `outᵢ` is not finite (`x − x` is `+0`
/// for a finite `x` and NaN otherwise; their sum is NaN iff one is).
#[inline(never)]
fn normalize_into<const N: usize>(norm: &RunningNorm<N>, x: &[f32; N], out: *mut [f32; N]) -> bool {
    const { assert!(N.is_multiple_of(2) && N >= 2 && N <= 510) };
    const { assert!(CLIP == 10.0) }; // `vmov.f32 #10.0` below
    let ok: u32;
    // SAFETY: reads `x`, the mean and variance (N floats each) and `ε`,
    // writes all of `out` (N); clobbers only the registers listed and the
    // flags; no stack use.
    unsafe {
        asm!(
            "vldr s13, [{e}]",
            "vmov.f32 s12, #10.0",
            "vmov.f32 s11, #-10.0",
            "vsub.f32 s14, s12, s12",
            "1:",
            "vldmia {xp}!, {{s0-s1}}",
            "vldmia {mp}!, {{s2-s3}}",
            "vldmia {vp}!, {{s4-s5}}",
            "vsub.f32 s6, s0, s0",
            "vsub.f32 s7, s1, s1",
            "vadd.f32 s4, s4, s13",
            "vadd.f32 s5, s5, s13",
            "vsub.f32 s0, s0, s2",
            "vsub.f32 s1, s1, s3",
            "vadd.f32 s14, s14, s6",
            "vsqrt.f32 s4, s4",
            "vadd.f32 s14, s14, s7",
            "vsqrt.f32 s5, s5",
            "vdiv.f32 s0, s0, s4",
            "vdiv.f32 s1, s1, s5",
            "vcmp.f32 s0, s11",
            "vmrs APSR_nzcv, fpscr",
            "it lt",
            "vmovlt.f32 s0, s11",
            "vcmp.f32 s0, s12",
            "vmrs APSR_nzcv, fpscr",
            "it gt",
            "vmovgt.f32 s0, s12",
            "vcmp.f32 s1, s11",
            "vmrs APSR_nzcv, fpscr",
            "it lt",
            "vmovlt.f32 s1, s11",
            "vcmp.f32 s1, s12",
            "vmrs APSR_nzcv, fpscr",
            "it gt",
            "vmovgt.f32 s1, s12",
            "vsub.f32 s6, s0, s0",
            "vsub.f32 s7, s1, s1",
            "vadd.f32 s14, s14, s6",
            "vstmia {op}!, {{s0-s1}}",
            "vadd.f32 s14, s14, s7",
            "subs {n}, {n}, #1",
            "bne 1b",
            "vcmp.f32 s14, #0",
            "vmrs APSR_nzcv, fpscr",
            "ite eq",
            "moveq {ok}, #1",
            "movne {ok}, #0",
            e = in(reg) &EPSILON,
            xp = inout(reg) x.as_ptr() => _,
            mp = inout(reg) norm.mean.data.0[0].as_ptr() => _,
            vp = inout(reg) norm.var.data.0[0].as_ptr() => _,
            op = inout(reg) out => _,
            n = inout(reg) N / 2 => _,
            ok = lateout(reg) ok,
            out("s0") _, out("s1") _, out("s2") _, out("s3") _,
            out("s4") _, out("s5") _, out("s6") _, out("s7") _,
            out("s11") _, out("s12") _, out("s13") _, out("s14") _,
            options(nostack),
        );
    }
    ok != 0
}

/// `RunningNorm::normalize`, bit for bit (`N` even).
///
/// # Errors
/// As the core's: [`Error::NonFinite`] for a non-finite input or result.
pub fn normalize<const N: usize>(
    norm: &RunningNorm<N>,
    x: &SVector<f32, N>,
) -> Result<SVector<f32, N>, Error> {
    if !norm.has_statistics() {
        check_all_finite(x.as_slice())?;
        return Ok(*x);
    }
    let mut out = SVector::<f32, N>::zeros();
    if normalize_into(norm, &x.data.0[0], &mut out.data.0[0]) {
        Ok(out)
    } else {
        Err(Error::NonFinite)
    }
}

/// `Controller::act` of a deployed discrete `Policy` (normalise with the
/// frozen statistics, then the actor's mode), bit for bit (`OBS` even).
///
/// # Errors
/// As the core's: [`Error::NonFinite`] for a non-finite observation,
/// normalised input or logit.
pub fn policy_act<const OBS: usize, const H: usize, const A: usize>(
    policy: &Policy<CategoricalActor<Mlp<OBS, H, A>>, OBS>,
    obs: &SVector<f32, OBS>,
) -> Result<usize, Error>
where
    Dense<H, A, Identity>: OutputLayer<H, A>,
{
    if !policy.obs_norm.has_statistics() {
        // `normalize` is the identity; `actor_mode` checks the input.
        return actor_mode(&policy.actor, obs);
    }
    let mut input = MaybeUninit::<[f32; OBS]>::uninit();
    if !normalize_into(&policy.obs_norm, &obs.data.0[0], input.as_mut_ptr()) {
        return Err(Error::NonFinite);
    }
    // SAFETY: `normalize_into` wrote all `OBS` elements.
    let input = unsafe { input.assume_init_ref() };
    // Finite (checked above, clipped to ±10): `Actor::mode`'s input check
    // would pass.
    Categorical::mode_of_logits(&mlp_forward_array(&policy.actor.net, input))
}

/// `(xᵢ − μᵢ) / σᵢ` clipped to `±10`, two components at a time, with `σᵢ`
/// precomputed, writing all of `out`: one `VSUB` and one `VDIV` per
/// component, the clip on the bits in the integer unit (`|z| > 10` iff
/// `2·bits(z)` exceeds `2·bits(10)` unsigned; then `z`'s sign ORed into
/// `10`: the core's `clamp` for every non-NaN `z`, and with well-formed
/// statistics `z` is NaN only for a NaN `x`). Returns `false` if `Σ xᵢ` is
/// not finite: always when an `xᵢ` is not finite, rarely (an overflowing
/// sum) otherwise; the caller then takes the exact path. Unrolled.
#[inline(never)]
fn normalize_frozen<const N: usize>(
    x: &[f32; N],
    mean: &[f32; N],
    sigma: &[f32; N],
    out: *mut [f32; N],
) -> bool {
    const { assert!(N.is_multiple_of(2) && N >= 2 && N <= 510) };
    let ok: u32;
    // SAFETY: reads `x`, `mean` and `sigma` (N floats each), writes all of
    // `out` (N); clobbers only the registers listed and the flags; no
    // stack use.
    unsafe {
        asm!(
            "movs r0, #0",
            "vmov s14, r0",
            ".rept {pairs}",
            "vldmia {xp}!, {{s0-s1}}",
            "vldmia {mp}!, {{s2-s3}}",
            "vldmia {sp}!, {{s4-s5}}",
            "vadd.f32 s14, s14, s0",
            "vsub.f32 s0, s0, s2",
            "vadd.f32 s14, s14, s1",
            "vsub.f32 s1, s1, s3",
            "vdiv.f32 s0, s0, s4",
            "vdiv.f32 s1, s1, s5",
            "vmov r0, s0",
            "cmp {ten2}, r0, lsl #1",
            "itt lo",
            "andlo r0, r0, #0x80000000",
            "orrlo r0, r0, {ten}",
            "vmov r1, s1",
            "cmp {ten2}, r1, lsl #1",
            "itt lo",
            "andlo r1, r1, #0x80000000",
            "orrlo r1, r1, {ten}",
            "stmia {op}!, {{r0, r1}}",
            ".endr",
            "vsub.f32 s14, s14, s14",
            "vcmp.f32 s14, #0",
            "vmrs APSR_nzcv, fpscr",
            "ite eq",
            "moveq {ok}, #1",
            "movne {ok}, #0",
            pairs = const N / 2,
            ten = in(reg) CLIP.to_bits(),
            ten2 = in(reg) CLIP.to_bits() << 1,
            xp = inout(reg) x.as_ptr() => _,
            mp = inout(reg) mean.as_ptr() => _,
            sp = inout(reg) sigma.as_ptr() => _,
            op = inout(reg) out => _,
            ok = lateout(reg) ok,
            out("r0") _, out("r1") _,
            out("s0") _, out("s1") _, out("s2") _, out("s3") _,
            out("s4") _, out("s5") _, out("s14") _,
            options(nostack),
        );
    }
    ok != 0
}

/// A deployed discrete `Policy` ready for [`FrozenPolicy::act`]: its
/// normaliser's statistics are frozen, so the divisors `σᵢ = √(σᵢ² + ε)`
/// are computed once, here, with the core's own operations
/// (`math::sqrt(var + EPSILON)`, the same `f32`s as every call of
/// `RunningNorm::normalize`), and each action costs one `VSUB` and one
/// `VDIV` per observation component instead of also a `VADD` and a
/// `VSQRT`. It borrows the policy (caller-owned, no allocation): the
/// statistics cannot change under it.
pub struct FrozenPolicy<'p, const OBS: usize, const H: usize, const A: usize> {
    policy: &'p Policy<CategoricalActor<Mlp<OBS, H, A>>, OBS>,
    sigma: [f32; OBS],
    /// Statistics present, every `μᵢ` finite and every `σᵢ` finite and
    /// positive: then `(x − μ)/σ` is never NaN for a finite `x` and the
    /// normalised input needs no finiteness check. Otherwise (no
    /// statistics, or statistics written outside their domain) `act` runs
    /// [`policy_act`].
    fast: bool,
}

impl<'p, const OBS: usize, const H: usize, const A: usize> FrozenPolicy<'p, OBS, H, A>
where
    Dense<H, A, Identity>: OutputLayer<H, A>,
{
    /// Precomputes `σᵢ = √(σᵢ² + ε)` of `policy`'s normaliser.
    pub fn new(policy: &'p Policy<CategoricalActor<Mlp<OBS, H, A>>, OBS>) -> Self {
        let norm = &policy.obs_norm;
        let mut sigma = [1.0; OBS];
        let mut fast = norm.has_statistics();
        for (i, s) in sigma.iter_mut().enumerate() {
            // The core's expression in `RunningNorm::normalize`.
            *s = microrl::math::sqrt(norm.var[i] + EPSILON);
            fast &= norm.mean[i].is_finite() && s.is_finite() && *s > 0.0;
        }
        Self {
            policy,
            sigma,
            fast,
        }
    }

    /// The policy this was built from.
    pub fn policy(&self) -> &'p Policy<CategoricalActor<Mlp<OBS, H, A>>, OBS> {
        self.policy
    }

    /// `RunningNorm::normalize` of the policy's normaliser, bit for bit
    /// (`OBS` even), with the precomputed `σ` ([`act`](Self::act)'s first
    /// step; the core's path for what that step leaves to it).
    ///
    /// # Errors
    /// As the core's: [`Error::NonFinite`] for a non-finite observation or
    /// result.
    pub fn normalize(&self, obs: &SVector<f32, OBS>) -> Result<SVector<f32, OBS>, Error> {
        if self.fast {
            let mut out = SVector::<f32, OBS>::zeros();
            if normalize_frozen(
                &obs.data.0[0],
                &self.policy.obs_norm.mean.data.0[0],
                &self.sigma,
                &mut out.data.0[0],
            ) {
                return Ok(out);
            }
        }
        normalize(&self.policy.obs_norm, obs)
    }

    /// `Controller::act` of the policy, bit for bit (`OBS` even): normalise
    /// with the precomputed `σ`, then the actor's mode.
    ///
    /// # Errors
    /// As the core's: [`Error::NonFinite`] for a non-finite observation or
    /// logit (or normalised input, which only statistics outside their
    /// domain can produce).
    pub fn act(&self, obs: &SVector<f32, OBS>) -> Result<usize, Error> {
        if !self.fast {
            return policy_act(self.policy, obs);
        }
        let mut input = MaybeUninit::<[f32; OBS]>::uninit();
        if !normalize_frozen(
            &obs.data.0[0],
            &self.policy.obs_norm.mean.data.0[0],
            &self.sigma,
            input.as_mut_ptr(),
        ) {
            // A non-finite component (or an overflowing sum): the exact
            // path returns the core's `Result`.
            return policy_act(self.policy, obs);
        }
        // SAFETY: `normalize_frozen` wrote all `OBS` elements.
        let input = unsafe { input.assume_init_ref() };
        // Finite (finite `x`, well-formed statistics, clipped to ±10):
        // `RunningNorm::normalize`'s and `Actor::mode`'s checks would pass.
        Categorical::mode_of_logits(&mlp_forward_array(&self.policy.actor.net, input))
    }
}
