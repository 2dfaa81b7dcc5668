#!/usr/bin/env python3
"""Cortex-M4 cycle estimate of the `bench` figures from a QEMU execution trace.

The `bench` binary counts *instructions* (QEMU `-icount shift=0` turns SysTick
into an instruction counter; see `src/icount.rs`). This tool turns those
counts into estimated Cortex-M4 *cycles*: it runs the same ELF under QEMU with
an execution trace, takes the dynamic instruction stream of every measured
block, and charges each executed instruction its Cortex-M4 cycle count.

Design:
- **Trace.** QEMU 7.2 runs the bench with `-icount shift=0 -d
  exec,nochain,in_asm`: `in_asm` disassembles every translation block (TB)
  once, when it is translated; `exec` logs every TB execution ("Trace" lines),
  and `nochain` makes QEMU return to its main loop after every TB, so no
  execution goes unlogged. Two more log lines are honoured: "Stopped execution
  of TB chain before …" (the TB just logged did not run: an interrupt or the
  icount budget stopped it at its start) and "cpu_io_recompile: rewound
  execution of TB to <pc>" (the TB ran up to the device access at `<pc>`,
  which then runs again as a TB of its own). The log is a few GB, so it is
  never written to disk: QEMU writes it into a FIFO (`-D`) and this script
  aggregates it on the fly, counting executions of each (previous TB, TB,
  next TB) triple, which is all the cycle model needs. `-dfilter` drops the
  calibration `nop_loop` (723 M of the run's ~1 G instructions, outside every
  figure) from the log.
- **Regions.** Every `Ticks::measure` reads the SysTick current value
  register twice. Under `-icount` a device read not at the end of a TB makes
  QEMU rewind and re-run that load as a one-instruction TB flagged
  `CF_LAST_IO` (cflags bit 0x8000), so each clock read shows up in the trace
  as such a TB at a load. The instructions between two reads are exactly what
  the bench's tick difference counts (one tick = 40 instructions), so no
  marker code is needed in the firmware and the measured code is unchanged.
  The bench's last 25 measurements (`MEASURES` below, in program order, from
  `src/bin/bench.rs`) are the last 50 clock reads; each read's function is
  checked against the expected one. A figure is, as in the bench,
  `(body − empty loop) / reps` for instructions and for cycles alike.
- **Cross-check.** QEMU's stdout (the defmt frames) is decoded with
  `defmt-print` when it is on the PATH: every figure's trace instruction count
  is compared with the bench's own (within the tick quantisation, `2 · 40 /
  reps`), and every region with the bench's raw ticks.
- **Cycle model** (Cortex-M4 Technical Reference Manual r0p1, ARM DDI 0439D /
  100166_0001_00: Table 3-1 "Cortex-M4 instruction set summary" with section
  3.3.2 "Load/store timings", and Table 7-1 "FPU instruction set"; zero flash
  wait states assumed, i.e. an STM32F4's ART accelerator always hits):
  - 1 cycle: data processing, shifts, compares, MOV/MOVW/MOVT, bit fields,
    extends, MUL and the 32x32->64 multiplies (UMULL/SMULL/UMLAL/SMLAL), IT,
    barriers, VADD/VSUB/VMUL/VNMUL/VABS/VNEG/VCMP/VCVT/VMRS/VMSR, VMOV (2 when
    it moves two core registers);
  - MLA/MLS 2; SDIV/UDIV 7 (TRM: 2 to 12, data dependent);
  - single loads and stores (LDR*, STR*, LDREX/STREX, VLDR/VSTR of an S
    register) 2, but 1 when the previous instruction is a single load whose
    destination is not part of this one's address (3.3.2 pipelining);
    VLDR/VSTR of a D register and LDRD/STRD 3;
  - LDM/STM/PUSH/POP/VLDM/VSTM/VPUSH/VPOP 1+N (N words), +P if PC is loaded;
  - VMLA/VMLS/VNMLA/VNMLS/VFMA/VFMS/VFNMA/VFNMS 3; VDIV/VSQRT 14; an FP
    arithmetic instruction whose result the next instruction reads one more;
  - B/BL/BX/BLX 1+P; conditional branches, CBZ/CBNZ 1+P taken, 1 not taken
    (taken = the next executed TB does not start at the fall-through
    address); TBB/TBH 2+P; LDR PC 2+P.
  P, the pipeline refill after a taken branch, is 1 to 3 cycles depending on
  the target's alignment and width and on whether the branch address is
  speculated early; the tables print P = 2 with the P = 1..3 range.
- **Not modelled**: flash wait states when the ART accelerator misses,
  LDR Rx,[PC,#imm] fetch contention, unaligned wide-instruction fetch
  effects, interrupt entry and exit (one SysTick per 2^24 ticks), DMB cost,
  data-dependent division time, and two load/store rules of 3.3.2 which a
  second table bounds instead of charging: the one-cycle stall of a load or
  store whose address register the data-processing instruction just before
  wrote (+1 each), and `STR Rx,[Ry,#imm]` completing in one cycle when the
  next instruction is no load or store (the model charges 2; −1 each).
  `--detail` prints the instruction-class mix and the top functions behind
  every figure.
- **Cost.** About 25 s for the whole bench (QEMU streams ~2.9 GB of log
  through the FIFO; Python aggregates it as fast as QEMU writes it).

Usage: `cycle_model.py <bench ELF>` (see `--help`); the figures are a
markdown table on stdout, progress and checks on stderr.
"""

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict

# --------------------------------------------------------------------------
# What the bench measures (mirrors src/bin/bench.rs).

#: The bench's last 25 `Ticks::measure` calls, in program order:
#: (label, function whose code reads the clock).
MEASURES = [
    (f"{size} {what}", "bench::bench_inference")
    for size in ("4-64-64-2", "18-64-64-4", "4-32-32-2")
    for what in ("empty loop", "forward", "act", "policy", "forward asm", "act asm", "policy asm")
] + [
    ("ac empty loop", "bench::__cortex_m_rt_main"),
    ("ac steps", "bench::__cortex_m_rt_main"),
    ("ppo collect", "bench::__cortex_m_rt_main"),
    ("ppo update", "bench::__cortex_m_rt_main"),
]

#: (figure name as the bench logs it, body measure, empty-loop measure, reps).
FIGURES = [
    (f"{kind}-{size}{suffix}", 7 * s + 1 + k + 3 * a, 7 * s, 1000)
    for s, size in enumerate(("4-64-64-2", "18-64-64-4", "4-32-32-2"))
    for a, suffix in enumerate(("", "-asm"))
    for k, kind in enumerate(("mlp", "act", "policy"))
] + [
    ("ac-step", 22, 21, 500),
    ("ppo-collect-256", 23, None, 1),
    ("ppo-collect-per-step", 23, None, 256),
    ("ppo-update-256", 24, None, 1),
]

#: Functions kept out of the trace (`-dfilter`): the calibration loop.
DEFAULT_EXCLUDE = ["bench::nop_loop"]

#: `--bench sac`: the measurements of `src/bin/bench-sac.rs` (`train-sac`'s
#: agent), in program order, all read in its `main`.
SAC_MEASURES = [
    (label, "bench_sac::__cortex_m_rt_main")
    for label in ("warm-up empty loop", "warm-up steps", "pendulum empty loop", "pendulum steps",
                  "train empty loop", "gradient steps", "train steps", "act empty loop", "acts")
]
SAC_FIGURES = [
    ("sac-warmup-step", 1, 0, 2000),
    ("pendulum-step", 3, 2, 1000),
    ("sac-gradient-step", 5, 4, 20),
    ("sac-train-step", 6, 4, 20),
    ("sac-act", 8, 7, 1000),
]
SAC_EXCLUDE = ["microrl_firmware::icount::nop_loop"]

QEMU_ARGS = [
    "-cpu", "cortex-m4", "-machine", "mps2-an386", "-nographic",
    "-semihosting-config", "enable=on,target=native", "-icount", "shift=0",
]

CF_LAST_IO = 0x8000  # QEMU 7.2 include/exec/exec-all.h

# --------------------------------------------------------------------------
# ELF symbols (for -dfilter) and Rust legacy demangling (for display).


def elf_functions(path):
    """(address, size, name) of the FUNC symbols of a 32-bit little-endian ELF."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 1 or data[5] != 1:
        raise SystemExit(f"{path}: not a 32-bit little-endian ELF")
    shoff, = struct.unpack_from("<I", data, 0x20)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x2E)
    sections = [struct.unpack_from("<10I", data, shoff + i * shentsize) for i in range(shnum)]
    out = []
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], 16):
            name, value, size, info = struct.unpack_from("<IIIB", data, off)
            if info & 0xF != 2 or size == 0:  # STT_FUNC
                continue
            s = strtab[4] + name
            out.append((value & ~1, size, data[s:data.index(b"\0", s)].decode()))
    return out


_ESCAPES = {"LT": "<", "GT": ">", "C": ",", "RF": "&", "BP": "*", "SP": "@",
            "u20": " ", "u27": "'", "u5b": "[", "u5d": "]", "u7b": "{", "u7d": "}",
            "LP": "(", "RP": ")", "u3b": ";", "u7e": "~", "u21": "!", "u22": '"', "u2b": "+"}


def demangle(sym):
    """Rust symbol to `path::name`: legacy (`_ZN…E`) fully, v0 (`_R…`) roughly."""
    if sym.startswith("_R"):
        # v0: keep the identifiers, drop crate disambiguators (`s<base62>_`).
        s, parts = re.sub(r"s[0-9A-Za-z]*_(?=\d)", "", sym[2:]), []
        for m in re.finditer(r"(\d+)_?", s):
            n, ident = int(m.group(1)), s[m.end():m.end() + int(m.group(1))]
            if len(ident) == n and re.fullmatch(r"[A-Za-z_]\w*", ident) and \
                    not re.fullmatch(r"\d+", s[m.start() - 1:m.start()] or "x"):
                parts.append(ident)
        return "::".join(parts) if parts else sym
    m = re.match(r"_ZN(.*)E(\.\S*)?$", sym)
    if not m:
        return sym
    s, parts = m.group(1), []
    while s and s[0].isdigit():
        n = re.match(r"\d+", s).group()
        parts.append(s[len(n):len(n) + int(n)])
        s = s[len(n) + int(n):]
    if parts and re.fullmatch(r"h[0-9a-f]{16}", parts[-1]):
        parts.pop()
    parts = [p[1:] if p.startswith("_$") else p for p in parts]
    text = "::".join(parts).replace("..", "::")
    return re.sub(r"\$([A-Za-z0-9]+)\$", lambda e: _ESCAPES.get(e.group(1), e.group(0)), text)


# --------------------------------------------------------------------------
# Instructions (capstone syntax, as QEMU's in_asm prints them).

CONDS = {"eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc", "hi", "ls",
         "ge", "lt", "gt", "le", "al"}

# base mnemonic -> kind
KINDS = {}
for _k, _names in {
    "alu": """adc add addw adr and asr bfc bfi bic clz cmn cmp eor lsl lsr mov movt
        movw mvn neg orn orr rbit rev rev16 revsh ror rrx rsb sbc sbfx ssat sub subw
        sxtb sxth sxtab sxtah sxtb16 uxtb uxth uxtab uxtah uxtb16 teq tst ubfx usat
        pkhbt pkhtb sel qadd qsub qdadd qdsub sadd16 ssub16 uadd8 usub8 sadd8 ssub8
        uadd16 usub16""",
    "mul": """mul umull smull umlal smlal smulbb smulbt smultb smultt smulwb smulwt
        smlabb smlabt smlatb smlatt smlawb smlawt smmul smmla smmls smuad smusd
        smlad smlsd smlald smlsld umaal""",
    "mla": "mla mls",
    "div": "sdiv udiv",
    "misc": "nop dmb dsb isb mrs msr cpsid cpsie wfi wfe sev yield bkpt svc udf clrex",
    "it": "it",
    "load": "ldr ldrb ldrh ldrsb ldrsh ldrt ldrbt ldrht ldrex ldrexb ldrexh",
    "store": "str strb strh strt strbt strht strex strexb strexh",
    "dual": "ldrd strd",
    "multi": """ldm ldmia ldmdb ldmfd ldmea stm stmia stmdb stmea stmfd push pop vldm
        vldmia vldmdb vstm vstmia vstmdb vpush vpop""",
    "branch": "b bl bx blx",
    "bcond": "bcond cbz cbnz",
    "table": "tbb tbh",
    "vload": "vldr",
    "vstore": "vstr",
    "fp1": """vabs vadd vsub vmul vnmul vneg vcmp vcmpe vcvt vcvtr vcvta vcvtn vcvtp
        vcvtm vcvtb vcvtt vmrs vmsr vmov vsel vmaxnm vminnm vrinta vrintn vrintp
        vrintm vrintr vrintx vrintz""",
    "fmac": "vmla vmls vnmla vnmls vfma vfms vfnma vfnms",
    "fdiv": "vdiv vsqrt",
}.items():
    for _n in _names.split():
        KINDS[_n] = _k
_BASES_LONGEST_FIRST = sorted(KINDS, key=len, reverse=True)

#: FP arithmetic whose result costs the next instruction one cycle if read at once.
FP_ARITH = {"vadd", "vsub", "vmul", "vnmul", "vmla", "vmls", "vnmla", "vnmls", "vfma",
            "vfms", "vfnma", "vfnms", "vdiv", "vsqrt", "vcvt", "vcvtr"}
#: Instructions whose first operand is read, not written.
READS_FIRST = {"str", "strb", "strh", "strt", "strd", "strex", "strexb", "strexh", "vstr",
               "stm", "stmia", "stmdb", "stmea", "stmfd", "push", "vstm", "vstmia", "vstmdb",
               "vpush", "cmp", "cmn", "tst", "teq", "vcmp", "vcmpe", "bx", "blx", "cbz",
               "cbnz", "vmla", "vmls", "vnmla", "vnmls", "vfma", "vfms", "vfnma", "vfnms",
               "vmsr", "tbb", "tbh"}

_ALIASES = {"sb": "r9", "sl": "r10", "fp": "r11", "ip": "r12", "sp": "r13", "lr": "r14",
            "pc": "r15"}
_REG = r"(?:r1[0-5]|r[0-9]|sb|sl|fp|ip|sp|lr|pc|s[0-9]+|d[0-9]+)"


def _expand(reg):
    """Architectural registers of an operand: d<n> is s<2n> and s<2n+1>."""
    reg = _ALIASES.get(reg, reg)
    if reg[0] == "d":
        n = int(reg[1:])
        return [f"s{2 * n}", f"s{2 * n + 1}"] if n < 16 else [reg]
    return [reg]


def operand_regs(ops):
    """Register operands in order, lists `{a-b}` expanded, d registers as s pairs."""
    out = []
    for m in re.finditer(rf"\b({_REG})\b(?:\s*-\s*({_REG})\b)?", ops):
        a, b = m.group(1), m.group(2)
        if b and a[0] == b[0] and a[0] in "rsd":
            out += [x for i in range(int(a[1:]), int(b[1:]) + 1) for x in _expand(f"{a[0]}{i}")]
        else:
            out += _expand(a)
    return out


def split_mnemonic(mnem):
    """`addne.w` -> (`add`, conditional?)."""
    m = mnem.split(".")[0]
    if re.fullmatch(r"it[te]{0,3}", m):
        return "it", False
    if m == "b":
        return "b", False
    if m[0] == "b" and m[1:] in CONDS:
        return "bcond", True
    for b in _BASES_LONGEST_FIRST:
        if m.startswith(b):
            rest = m[len(b):]
            if rest in ("", "s"):
                return b, False
            for r in (rest, rest[1:] if rest[:1] == "s" else None,
                      rest[:-1] if rest[-1:] == "s" else None):
                if r in CONDS:
                    return b, r != "al"
    return m, False


class Ins:
    """One decoded instruction and the facts the cycle model needs."""

    __slots__ = ("addr", "size", "mnem", "ops", "base", "kind", "cond", "regs", "addr_regs",
                 "words", "dst", "reads", "loads_pc", "writes_pc", "double", "imm_store")

    def __init__(self, addr, size, mnem, ops):
        self.addr, self.size, self.mnem, self.ops = addr, size, mnem, ops
        self.base, self.cond = split_mnemonic(mnem)
        self.kind = KINDS.get(self.base, "unknown")
        if self.base in ("cbz", "cbnz"):
            self.cond = True
        self.regs = operand_regs(ops)
        br = re.search(r"\[([^\]]*)\]", ops)
        self.addr_regs = set(operand_regs(br.group(1))) if br else set()
        self.double = bool(re.match(r"\s*d\d", ops))
        if self.kind == "multi" and not ops.startswith("{"):
            self.addr_regs = set(self.regs[:1])  # LDM/STM base register
        # STR Rx,[Ry,#imm]: no register offset, no write-back, not post-indexed.
        self.imm_store = self.kind in ("store", "vstore") and not self.double and bool(
            re.search(r"\[\s*\w+\s*(,\s*#[-0-9a-fx]+\s*)?\]\s*$", ops))
        inner = re.search(r"\{([^}]*)\}", ops)
        self.words = len(operand_regs(inner.group(1))) if inner else 0
        first = self.regs[:2] if self.double else self.regs[:1]
        self.dst = set(first) if self.base not in READS_FIRST or self.kind == "fmac" else set()
        self.reads = set(self.regs) if self.base in READS_FIRST else set(self.regs[len(first):])
        if self.kind in ("load", "vload", "store", "vstore", "dual"):
            self.reads |= self.addr_regs
        self.loads_pc = (self.kind in ("load", "multi") and self.base not in
                         ("push", "stm", "stmia", "stmdb", "stmea", "stmfd")
                         and "r15" in (self.regs if self.kind == "multi" else self.regs[:1]))
        self.writes_pc = self.kind == "alu" and self.regs[:1] == ["r15"] and \
            self.base not in READS_FIRST

    @property
    def transfers_control(self):
        return self.kind in ("branch", "bcond", "table") or self.loads_pc or self.writes_pc


_INS_RE = re.compile(rb"0x([0-9a-f]+):\s+([0-9a-f]{4}(?: [0-9a-f]{4})?)\s+(\S+)\s*(.*)")


def parse_block(lines):
    out = []
    for raw in lines:
        m = _INS_RE.match(raw)
        if m:
            out.append(Ins(int(m.group(1), 16), len(m.group(2).replace(b" ", b"")) // 2,
                           m.group(3).decode(), m.group(4).decode().strip()))
    return out


# --------------------------------------------------------------------------
# Cycle model.

UNKNOWN = Counter()


def ins_cycles(ins, prev, nxt, taken):
    """(cycles without refills, pipeline refills P) of one executed instruction."""
    k, refill = ins.kind, 0
    if k in ("load", "store", "vload", "vstore"):
        if k in ("vload", "vstore") and ins.double:
            c = 3
        elif prev is not None and prev.kind in ("load", "vload") and not prev.double \
                and not prev.loads_pc and not (prev.dst & ins.addr_regs):
            c = 1  # pipelined behind a single load (TRM 3.3.2)
        else:
            c = 2
        if ins.loads_pc:
            c, refill = 2, 1
    elif k == "dual":
        c = 3
    elif k == "multi":
        c = 1 + ins.words
        refill = 1 if ins.loads_pc else 0
    elif k == "branch":
        c, refill = 1, 1
    elif k == "bcond":
        c, refill = (1, 1) if taken else (1, 0)
    elif k == "table":
        c, refill = 2, 1
    elif k == "mla":
        c = 2
    elif k == "div":
        c = 7
    elif k == "fmac":
        c = 3
    elif k == "fdiv":
        c = 14
    elif k == "fp1":
        c = 2 if ins.base == "vmov" and sum(r[0] == "r" for r in ins.regs) >= 2 else 1
    elif k in ("alu", "mul", "misc", "it"):
        c = 1
        if ins.writes_pc:
            refill = 1
    else:
        c = 1
        UNKNOWN[ins.mnem] += 1
    # A conditional PC-changing instruction other than a branch (POPcc {…, pc}).
    if ins.cond and k != "bcond" and (ins.loads_pc or ins.writes_pc or k == "branch") \
            and not taken:
        c, refill = 1, 0
    if ins.base in FP_ARITH and nxt is not None and ins.dst & nxt.reads:
        c += 1
    return c, refill


def classify(ins, taken):
    """Instruction class for the `--detail` mix."""
    k = ins.kind
    if k in ("bcond",) or (ins.transfers_control and ins.cond):
        return "branch taken" if taken else "branch not taken"
    if k in ("branch", "table") or ins.loads_pc or ins.writes_pc:
        return "branch/call/return"
    return {"load": "load/store", "store": "load/store", "vload": "load/store",
            "vstore": "load/store", "dual": "ldrd/strd", "multi": "ldm/stm/push/pop",
            "fmac": "vmla (fp mac)", "fdiv": "vdiv/vsqrt", "fp1": "fp other",
            "mul": "alu/mul", "alu": "alu/mul", "mla": "mla/div", "div": "mla/div",
            "it": "it", "misc": "misc"}.get(k, "unknown")


class Block:
    __slots__ = ("pc", "sym", "ins", "io")

    def __init__(self, pc, sym, ins, io):
        self.pc, self.sym, self.ins, self.io = pc, sym, ins, io


MEMORY = ("load", "store", "vload", "vstore", "dual", "multi")
DATA_PROCESSING = ("alu", "mul", "mla", "div")


def triple_cost(a, b, c, detail):
    """One execution of TB `b` between TBs `a` and `c`: (instructions, cycles without
    refills, pipeline refills, address-dependency stalls, one-cycle immediate stores,
    class mix). The stalls and one-cycle stores are not in the cycles (second table)."""
    ins = b.ins
    n = len(ins)
    base = refills = agu = imm = 0
    mix = Counter() if detail else None
    for i, x in enumerate(ins):
        prev = ins[i - 1] if i else (a.ins[-1] if a is not None and a.ins else None)
        nxt = ins[i + 1] if i + 1 < n else (c.ins[0] if c is not None and c.ins else None)
        taken = i + 1 == n and c is not None and c.pc != x.addr + x.size
        cyc, ref = ins_cycles(x, prev, nxt, taken)
        base += cyc
        refills += ref
        # TRM 3.3.2 effects the model leaves out, counted for the sensitivity table.
        if x.kind in MEMORY and prev is not None and prev.kind in DATA_PROCESSING \
                and prev.dst & x.addr_regs:
            agu += 1
        if x.imm_store and cyc == 2 and (nxt is None or nxt.kind not in MEMORY):
            imm += 1
        if detail:
            cls = classify(x, taken)
            mix[cls, "n"] += 1
            mix[cls, "base"] += cyc
            mix[cls, "ref"] += ref
    return n, base, refills, agu, imm, mix


# --------------------------------------------------------------------------
# Trace reader.


class Trace:
    """Aggregated TB executions, split into segments at every clock read."""

    def __init__(self):
        self.blocks = {}          # Trace line (bytes) -> Block
        self.segments = [defaultdict(int)]   # (prev key, key, next key) -> executions
        self.reads = []           # clock-read TB keys, one per segment end
        self.lines = 0

    def read(self, stream):
        blocks, segments, reads = self.blocks, self.segments, self.reads
        seg = segments[0]
        a = b = None       # the two last executed TBs
        seg_b = seg        # segment in which b executed
        cur = None         # last logged TB, not yet known to have run
        pending = None     # in_asm lines of the latest translation
        inblock = False
        nlines = 0
        for line in stream:
            nlines += 1
            c0 = line[:1]
            if c0 == b"T":
                if pending is not None or line not in blocks:
                    if not line.endswith(b"\n"):
                        break  # a saved log cut off mid-line
                    # The TB just translated (or, after a TB cache flush, retranslated).
                    blocks[line] = self._bind(line, pending)
                    pending = None
                if cur is not None:
                    d = seg_b
                    k = (a, b, cur)
                    d[k] = d.get(k, 0) + 1
                    a, b, seg_b = b, cur, seg
                    if blocks[cur].io:
                        reads.append(cur)
                        seg = defaultdict(int)
                        segments.append(seg)
                cur = line
                inblock = False
            elif c0 == b"0":
                if inblock:
                    pending.append(line)
            elif c0 == b"I":
                if line.startswith(b"IN:"):
                    pending, inblock = [], True
            elif c0 == b"S":
                if line.startswith(b"Stopped execution"):
                    cur = None
            elif c0 == b"c":
                if line.startswith(b"cpu_io_recompile") and cur is not None:
                    pc = int(line.split()[-1], 16)
                    key = cur.rstrip(b"\n") + b" |partial %x" % pc
                    if key not in blocks:
                        full = blocks[cur]
                        blocks[key] = Block(full.pc, full.sym,
                                            [x for x in full.ins if x.addr < pc], False)
                    if blocks[key].ins:
                        d = seg_b
                        k = (a, b, key)
                        d[k] = d.get(k, 0) + 1
                        a, b, seg_b = b, key, seg
                    cur = None
            elif c0 == b"\n" or c0 == b"-":
                inblock = False
        if cur is not None:
            seg_b[(a, b, cur)] = seg_b.get((a, b, cur), 0) + 1
            a, b, seg_b = b, cur, seg
        if b is not None:
            seg_b[(a, b, None)] = seg_b.get((a, b, None), 0) + 1
        self.lines = nlines

    @staticmethod
    def _bind(line, pending):
        m = re.match(rb"Trace \d+: \S+ \[([0-9a-f]+)/([0-9a-f]+)/([0-9a-f]+)/([0-9a-f]+)\] ?(.*)",
                     line)
        if not m:
            raise SystemExit(f"unexpected trace line: {line[:200]!r}")
        if pending is None:
            raise SystemExit(f"TB executed without its in_asm disassembly: {line[:200]!r}")
        ins = parse_block(pending)
        cflags = int(m.group(4), 16)
        io = bool(cflags & CF_LAST_IO) and len(ins) >= 1 and ins[-1].kind in ("load", "vload")
        return Block(int(m.group(2), 16), demangle(m.group(5).decode(errors="replace")), ins, io)


class Costs:
    """Per-segment totals under the cycle model (cached per TB triple)."""

    def __init__(self, trace, detail):
        self.trace, self.detail = trace, detail
        self.cache = {}
        self.totals = [None] * len(trace.segments)

    def triple(self, key):
        v = self.cache.get(key)
        if v is None:
            blk = self.trace.blocks
            a, b, c = key
            v = triple_cost(blk[a] if a else None, blk[b], blk[c] if c else None, self.detail)
            self.cache[key] = v
        return v

    def segment(self, i):
        if self.totals[i] is None:
            tot = [0] * 5
            for key, count in self.trace.segments[i].items():
                if key[1] is None:
                    continue
                for j, v in enumerate(self.triple(key)[:5]):
                    tot[j] += count * v
            self.totals[i] = tot
        return self.totals[i]

    def region(self, first, last):
        """Sums over segments first..last (inclusive): instructions, cycles without
        refills, refills, address-dependency stalls, one-cycle immediate stores."""
        tot = [0] * 5
        for i in range(first, last + 1):
            tot = [t + v for t, v in zip(tot, self.segment(i))]
        return tot

    def region_detail(self, first, last):
        """(mix Counter, per-function Counter of (insns, cycles at P=2))."""
        mix, funcs = Counter(), defaultdict(lambda: [0, 0])
        blk = self.trace.blocks
        for i in range(first, last + 1):
            for key, count in self.trace.segments[i].items():
                if key[1] is None:
                    continue
                ni, bi, ri, _, _, m = self.triple(key)
                for k, v in m.items():
                    mix[k] += count * v
                f = funcs[blk[key[1]].sym]
                f[0] += count * ni
                f[1] += count * (bi + 2 * ri)
        return mix, funcs


# --------------------------------------------------------------------------
# Running QEMU.


def dfilter_for(elf, exclude):
    """`-dfilter` ranges covering everything but the excluded functions."""
    funcs = elf_functions(elf)
    cut = []
    for want in exclude:
        hits = [(a, s, n) for a, s, n in funcs
                if demangle(n) == want or demangle(n).endswith("::" + want)]
        if not hits:
            print(f"warning: function {want} not in {elf}; not excluded from the trace",
                  file=sys.stderr)
        cut += [(a, a + s - 1) for a, s, _ in hits]
    if not cut:
        return None
    ranges, start = [], 0
    for lo, hi in sorted(cut):
        if lo > start:
            ranges.append(f"0x{start:x}..0x{lo - 1:x}")
        start = max(start, hi + 1)
    ranges.append(f"0x{start:x}..0xffffffff")
    return ",".join(ranges)


def run_qemu(args, trace):
    with tempfile.TemporaryDirectory(prefix="cycle_model.") as tmp:
        return _run_qemu(args, trace, tmp)


def _run_qemu(args, trace, tmp):
    fifo = os.path.join(tmp, "trace.fifo")
    out_path = os.path.join(tmp, "defmt.bin")
    os.mkfifo(fifo)
    cmd = [args.qemu] + QEMU_ARGS + ["-d", "exec,nochain,in_asm"]
    dfilter = dfilter_for(args.elf, args.exclude)
    if dfilter:
        cmd += ["-dfilter", dfilter]
    cmd += ["-D", fifo, "-kernel", args.elf]
    print("running: " + " ".join(cmd), file=sys.stderr)
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)

    done = threading.Event()

    def unblock():
        # If QEMU dies before opening the log, open the FIFO's write end once so
        # that the reader's open() returns (and then sees end of file).
        proc.wait()
        while not done.is_set():
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                return
            except OSError:  # ENXIO: the reader has not opened the FIFO yet
                time.sleep(0.05)

    threading.Thread(target=unblock, daemon=True).start()
    with open(fifo, "rb", buffering=1 << 20) as stream:
        trace.read(stream)
    done.set()
    rc = proc.wait()
    err = proc.stderr.read().decode(errors="replace")
    with open(out_path, "rb") as f:
        defmt_frames = f.read()
    if rc != 0:
        sys.stderr.write(err)
        raise SystemExit(f"qemu exited with status {rc} (the bench failed?)")
    return defmt_frames


def decode_defmt(args, frames):
    """The bench's own figures from its defmt output, or None without defmt-print."""
    tool = args.defmt_print or shutil.which("defmt-print")
    if not tool:
        print("warning: defmt-print not found; skipping the cross-check with the bench's "
              "own counts", file=sys.stderr)
        return None
    text = subprocess.run([tool, "-e", args.elf], input=frames, capture_output=True,
                          check=True).stdout.decode(errors="replace")
    bench = {}
    for m in re.finditer(r"bench (\S+): (\d+) instructions \((\d+) reps, (\d+) ticks, "
                         r"empty loop (\d+) ticks\)", text):
        bench[m.group(1)] = tuple(int(m.group(i)) for i in range(2, 6))
    m = re.search(r"calibration: (\d+) instructions per tick", text)
    ipt = int(m.group(1)) if m else None
    if not bench or "bench: done" not in text:
        print(text, file=sys.stderr)
        raise SystemExit("the bench output lacks its figures or `bench: done`")
    return bench, ipt


# --------------------------------------------------------------------------
# Report.


def fmt_int(x):
    return f"{x:,.0f}".replace(",", " ")


def fmt_num(x):
    return fmt_int(x) if abs(x) >= 100 else f"{x:.1f}"


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example:\n  python3 tools/cycle_model.py "
               "/tmp/fw-cyc/thumbv7em-none-eabihf/release/bench")
    ap.add_argument("elf", help="the bench ELF (firmware-example `--bin bench`, release)")
    ap.add_argument("--mhz", type=float, default=168.0, help="core clock for the µs column "
                    "(default 168, an STM32F407)")
    ap.add_argument("--qemu", default="qemu-system-arm", help="QEMU binary (7.2 tested)")
    ap.add_argument("--defmt-print", help="defmt-print binary (default: from PATH)")
    ap.add_argument("--exclude", action="append", default=None, metavar="FUNCTION",
                    help="keep a function out of the trace with -dfilter (repeatable; "
                         f"default {' '.join(DEFAULT_EXCLUDE)}); must lie outside the figures")
    ap.add_argument("--detail", action="store_true",
                    help="also print each figure's instruction-class mix and top functions")
    ap.add_argument("--log", help="read a saved `-d exec,nochain,in_asm` log instead of "
                    "running QEMU (no cross-check with the bench output)")
    ap.add_argument("--bench", choices=("bench", "sac"), default="bench",
                    help="which ELF's measurements: `bench` (default) or `bench-sac`")
    args = ap.parse_args()
    global MEASURES, FIGURES
    if args.bench == "sac":
        MEASURES, FIGURES = SAC_MEASURES, SAC_FIGURES
    if args.exclude is None:
        args.exclude = SAC_EXCLUDE if args.bench == "sac" else DEFAULT_EXCLUDE

    t0 = time.monotonic()
    trace = Trace()
    if args.log:
        with open(args.log, "rb", buffering=1 << 20) as f:
            trace.read(f)
        decoded = None
    else:
        decoded = decode_defmt(args, run_qemu(args, trace))
    t1 = time.monotonic()
    print(f"trace: {trace.lines} log lines, {len(trace.blocks)} TBs, {len(trace.reads)} "
          f"clock reads, {t1 - t0:.0f} s", file=sys.stderr)

    # Clock reads -> measurements. A read repeated within a few instructions at
    # the same place is `Ticks::now`'s retry after a SysTick wrap: keep the last.
    costs = Costs(trace, args.detail)
    # Read i ends segment i, so the instructions between reads j and i are
    # segments j+1..i.
    reads = []
    for i, key in enumerate(trace.reads):
        if reads and trace.blocks[trace.reads[reads[-1]]].pc == trace.blocks[key].pc \
                and costs.region(reads[-1] + 1, i)[0] < 16:
            reads[-1] = i
        else:
            reads.append(i)
    need = 2 * len(MEASURES)
    if len(reads) < need:
        raise SystemExit(f"found {len(reads)} clock reads, need at least {need}")
    reads = reads[-need:]
    regions = []
    problems = []
    for m, (label, func) in enumerate(MEASURES):
        start, end = reads[2 * m], reads[2 * m + 1]
        for r in (start, end):
            sym = trace.blocks[trace.reads[r]].sym
            if sym != func and not sym.startswith(func + "<"):
                problems.append(f"measure {label!r}: clock read in {sym}, expected {func}")
        regions.append((start + 1, end))
    if problems:
        raise SystemExit("the trace does not match MEASURES (bench.rs changed?):\n  "
                         + "\n  ".join(problems))

    totals = [costs.region(a, b) for a, b in regions]
    bench, ipt = decoded if decoded else ({}, None)
    ipt = ipt or 40

    rows, checks, ok = [], [], True
    for name, body, empty, reps in FIGURES:
        tot = totals[body]
        if empty is not None:
            tot = [x - y for x, y in zip(tot, totals[empty])]
        n, base, ref, agu, imm = (x / reps for x in tot)
        cyc = {p: base + p * ref for p in (1, 2, 3)}
        b = bench.get(name)
        if b is not None:
            per_op, breps, ticks, eticks = b
            tol = 2 * ipt / reps + 1
            good = breps == reps and abs(n - per_op) <= tol
            ok &= good
            checks.append(f"{name}: bench {per_op}, trace {n:.1f} (tolerance ±{tol:.1f})"
                          f"{'' if good else '  MISMATCH'}")
            for label, idx, t in ((MEASURES[body][0], body, ticks),
                                  (MEASURES[empty][0] if empty is not None else None, empty,
                                   eticks)):
                if idx is None:
                    continue
                tn = totals[idx][0]
                good = abs(tn - t * ipt) < ipt
                ok &= good
                checks.append(f"  region {label}: trace {tn} instructions, bench {t} ticks = "
                              f"{t * ipt} ± {ipt}{'' if good else '  MISMATCH'}")
        rows.append((name, b[0] if b else None, n, cyc, agu, imm))

    mhz = args.mhz
    print(f"| figure | bench instructions | trace instructions | CPI, P=2 (P=1..3) | "
          f"cycles, P=2 (P=1..3) | µs at {mhz:g} MHz, P=2 (P=1..3) |")
    print("|---|--:|--:|--:|--:|--:|")
    for name, bn, n, cyc, _, _ in rows:
        print(f"| {name} | {fmt_int(bn) if bn is not None else '–'} | {fmt_num(n)} | "
              f"{cyc[2] / n:.2f} ({cyc[1] / n:.2f}..{cyc[3] / n:.2f}) | "
              f"{fmt_int(cyc[2])} ({fmt_int(cyc[1])}..{fmt_int(cyc[3])}) | "
              f"{fmt_num(cyc[2] / mhz)} ({fmt_num(cyc[1] / mhz)}..{fmt_num(cyc[3] / mhz)}) |")

    # Sensitivity: two TRM 3.3.2 load/store effects outside the model, bounded.
    print("\nLoad/store effects outside the model (TRM 3.3.2), per figure at P=2: "
          "address-dependency stalls (a load/store whose address register the data-processing "
          "instruction just before wrote: +1 cycle each) and `STR Rx,[Ry,#imm]` charged 2 "
          "but not followed by a load/store (1 cycle if the write buffer accepts it: "
          "−1 each).\n")
    print("| figure | cycles, P=2 | address stalls | one-cycle stores | "
          "cycles with both | change |")
    print("|---|--:|--:|--:|--:|--:|")
    for name, _, n, cyc, agu, imm in rows:
        alt = cyc[2] + agu - imm
        print(f"| {name} | {fmt_int(cyc[2])} | +{fmt_num(agu)} | −{fmt_num(imm)} | "
              f"{fmt_int(alt)} | {f'{100 * (alt / cyc[2] - 1):+.1f}'.replace('-', '−')} % |")

    if args.detail:
        for name, body, empty, reps in FIGURES:
            if name.endswith("per-step"):
                continue
            mix, funcs = costs.region_detail(*regions[body])
            if empty is not None:
                m0, f0 = costs.region_detail(*regions[empty])
                mix.subtract(m0)
                for k, v in f0.items():
                    funcs[k][0] -= v[0]
                    funcs[k][1] -= v[1]
            ntot = sum(v for (c, w), v in mix.items() if w == "n")
            ctot = sum(v for (c, w), v in mix.items() if w == "base") + \
                2 * sum(v for (c, w), v in mix.items() if w == "ref")
            print(f"\n{name} (per repetition; P=2)\n\n| class | instructions | % | cycles | % |")
            print("|---|--:|--:|--:|--:|")
            classes = sorted({c for c, _ in mix}, key=lambda c: -mix[c, "n"])
            for c in classes:
                ni, ci = mix[c, "n"], mix[c, "base"] + 2 * mix[c, "ref"]
                if ni:
                    print(f"| {c} | {fmt_num(ni / reps)} | {100 * ni / ntot:.1f} | "
                          f"{fmt_num(ci / reps)} | {100 * ci / ctot:.1f} |")
            print("\n| function | instructions | cycles | CPI |\n|---|--:|--:|--:|")
            for f, (ni, ci) in sorted(funcs.items(), key=lambda kv: -kv[1][1])[:8]:
                if ni / reps >= 0.5:
                    print(f"| `{f[:90]}` | {fmt_num(ni / reps)} | {fmt_num(ci / reps)} | "
                          f"{ci / ni:.2f} |")

    t2 = time.monotonic()
    if checks:
        print("\ncross-check with the bench's own counts (defmt output):", file=sys.stderr)
        for c in checks:
            print("  " + c, file=sys.stderr)
    if UNKNOWN:
        print(f"unclassified mnemonics (charged 1 cycle): {dict(UNKNOWN.most_common(20))}",
              file=sys.stderr)
    print(f"done in {t2 - t0:.0f} s", file=sys.stderr)
    if not ok:
        raise SystemExit("the trace disagrees with the bench's own counts")


if __name__ == "__main__":
    main()
