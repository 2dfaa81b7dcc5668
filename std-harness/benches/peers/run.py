"""The peer benchmark's runs and table; run.sh (beside this file) builds
everything and then calls this with the venv's Python. See run.sh's header
for what is measured and why it is equal work.

Each run is one process, `taskset -c CPU <command>`, its CPU seconds the
user + sys that getrusage(RUSAGE_CHILDREN) gains while it runs. Per
repetition the runs go in RUNS' order, alternating libraries; seed = the
repetition's index for every library.
"""

import argparse
import csv
import datetime
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))

# Budgets: (full, --quick).
CARTPOLE_STEPS = (100_000, 2_048)
PENDULUM_STEPS = (300_000, 40_960)  # RLtools evaluates every 10 rollouts of 4096: >= 10 of them
EVAL_EPISODES = (100, 10)


def runs(a):
    """The runs of one repetition, in order: key, library, command."""
    q = 1 if a.quick else 0
    cp, pd, ev = CARTPOLE_STEPS[q], PENDULUM_STEPS[q], EVAL_EPISODES[q]

    def microrl(env, steps, *extra, binary=None):
        return [binary or a.microrl, "train", "--env", env, "--algo", "ppo", "--steps",
                str(steps), "--eval-episodes", str(ev), "--json", *extra]

    # The same microrl as the workspace builds it by default, for this CPU
    # (target-cpu=native; the same bits, see docs/speed.md).
    native = []
    if a.microrl_native:
        native = [
            ("microrl_native_cartpole_rlzoo", "microrl",
             microrl("cartpole", cp, "--final-eval-only",
                     "--config", os.path.join(HERE, "microrl_cartpole_rlzoo.toml"),
                     binary=a.microrl_native)),
            ("microrl_native_pendulum_early_stop", "microrl",
             microrl("pendulum", pd, binary=a.microrl_native)),
        ]
    return native + [
        ("microrl_cartpole_rlzoo", "microrl",
         microrl("cartpole", cp, "--final-eval-only",
                 "--config", os.path.join(HERE, "microrl_cartpole_rlzoo.toml"))),
        ("sb3_cartpole_rlzoo", "SB3",
         [a.python, os.path.join(HERE, "sb3_cartpole_ppo.py"), "--steps", str(cp),
          "--eval-episodes", str(ev)]),
        ("microrl_pendulum_defaults", "microrl", microrl("pendulum", pd, "--no-early-stop")),
        ("rltools_pendulum", "RLtools", [a.rltools]),
        ("microrl_pendulum_early_stop", "microrl", microrl("pendulum", pd)),
        ("microrl_pendulum_rltools_config", "microrl",
         microrl("pendulum", pd, "--no-early-stop",
                 "--config", os.path.join(HERE, "microrl_pendulum_rltools.toml"))),
    ]


# Table rows: label, microrl run, peer run, note.
ROWS = [
    ("PPO CartPole-v1, {cp} steps, RL Zoo config, full budget",
     "microrl_cartpole_rlzoo", "sb3_cartpole_rlzoo"),
    ("PPO Pendulum-v1, {pd} steps, each library's own tuned config, full budget",
     "microrl_pendulum_defaults", "rltools_pendulum"),
    ("PPO Pendulum-v1, microrl early stop (time to solve) vs RLtools' full budget",
     "microrl_pendulum_early_stop", "rltools_pendulum"),
    ("PPO Pendulum-v1, {pd} steps, RLtools' config in microrl (supplementary)",
     "microrl_pendulum_rltools_config", "rltools_pendulum"),
]

# With --microrl-native: the same tasks with microrl's default build for this CPU.
ROWS_NATIVE = [
    ("PPO CartPole-v1, {cp} steps, RL Zoo config, full budget; microrl's default build (target-cpu=native)",
     "microrl_native_cartpole_rlzoo", "sb3_cartpole_rlzoo"),
    ("PPO Pendulum-v1, microrl early stop (time to solve), microrl's default build (target-cpu=native), vs RLtools' full budget",
     "microrl_native_pendulum_early_stop", "rltools_pendulum"),
]

PEERS_RESULT = re.compile(r"^PEERS_RESULT steps=(\d+) final_return=(\S+)", re.M)


def run_one(key, library, cmd, a, rep, logdir):
    """Runs `cmd` pinned, returns its record."""
    seed = rep
    if library == "microrl":
        cmd = cmd + ["--seed", str(seed), "--out", os.path.join(logdir, f"{rep}-{key}")]
    elif library == "SB3":
        cmd = cmd + ["--seed", str(seed)]
    else:
        cmd = cmd + [str(seed)]
    full = ["taskset", "-c", str(a.cpu)] + cmd
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(full, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user = after.ru_utime - before.ru_utime
    sys_ = after.ru_stime - before.ru_stime
    log = os.path.join(logdir, f"{rep}-{key}.log")
    with open(log, "w") as f:
        f.write("$ " + " ".join(full) + "\n--- stdout\n" + p.stdout + "\n--- stderr\n" + p.stderr)
    if p.returncode != 0:
        sys.exit(f"run.py: {key} (rep {rep}) exited {p.returncode}; see {log}")
    rec = {"rep": rep, "key": key, "library": library, "seed": seed,
           "cpu_s": round(user + sys_, 3), "user_s": round(user, 3), "sys_s": round(sys_, 3),
           "wall_s": round(wall, 3), "steps": None, "final_eval": None,
           "solved_at_step": None, "command": " ".join(full)}
    if library == "microrl":
        j = json.loads(p.stdout.strip().splitlines()[-1])
        rec.update(steps=j["steps_run"], final_eval=j["eval_mean"],
                   solved_at_step=j["solved_at_step"], updates=j["updates"])
    else:
        m = PEERS_RESULT.search(p.stdout)
        if not m:
            sys.exit(f"run.py: {key} (rep {rep}) printed no PEERS_RESULT line; see {log}")
        rec.update(steps=int(m.group(1)), final_eval=float(m.group(2)))
    return rec


def sh(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, shell=True).stdout.strip()
    except OSError:
        return ""


def machine():
    lscpu = sh("lscpu")
    field = lambda name: next((l.split(":", 1)[1].strip() for l in lscpu.splitlines()
                               if l.startswith(name + ":")), "?")
    return {
        "cpu_model": field("Model name"),
        "cpu_family_model": f"family {field('CPU family')} model {field('Model')}",
        "hypervisor": field("Hypervisor vendor"),
        "cpus_online": os.cpu_count(),
        "threads_per_core": field("Thread(s) per core"),
        "cores_per_socket": field("Core(s) per socket"),
        "sockets": field("Socket(s)"),
        "kernel": platform.release(),
        "memory": sh("free -h | awk '/^Mem:/ {print $2}'"),
    }


def versions(a):
    import gymnasium
    import numpy
    import stable_baselines3
    import torch
    from importlib.metadata import version

    commit = sh(f"git -C {ROOT} rev-parse --short HEAD")
    dirty = sh(f"git -C {ROOT} status --porcelain -- core std-harness Cargo.lock ':!std-harness/benches'")
    src = os.path.join(a.venv, ".peers-torch-source")
    return {
        "microrl": f"{commit}{' (modified)' if dirty else ''}",
        "rustc": sh("rustc --version"),
        "g++": sh("g++ --version | head -1"),
        "python": platform.python_version(),
        "torch": torch.__version__ + (" (CUDA build, run on the CPU)" if torch.version.cuda else ""),
        "torch_source": open(src).read().strip() if os.path.exists(src) else "?",
        "stable-baselines3": stable_baselines3.__version__,
        "gymnasium": gymnasium.__version__,
        "numpy": numpy.__version__,
        "rltools": version("rltools") + " (headers = rl-tools tag v2.2.0)",
        "rltools_compile": a.rltools_compile.replace(ROOT + "/", ""),
    }


def fmt_eval(recs):
    vals = [r["final_eval"] for r in recs]
    med = statistics.median(vals)
    s = f"{med:.1f}" if len(vals) == 1 else f"{med:.1f} [{min(vals):.1f}, {max(vals):.1f}]"
    solved = [r["solved_at_step"] for r in recs if r["library"] == "microrl"]
    if recs[0]["key"].endswith("early_stop"):
        steps = [r["steps"] for r in recs]
        s += f"; stopped at {statistics.median(steps) / 1000:.0f}k steps (median)"
        if any(x is None for x in solved):
            s += f", {sum(x is None for x in solved)} unsolved"
    return s


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--cpu", type=int, default=1)
    p.add_argument("--out", required=True)
    p.add_argument("--microrl", required=True,
                   help="microrl built for a portable x86-64 (the main rows)")
    p.add_argument("--rltools", required=True)
    p.add_argument("--microrl-native", default="",
                   help="microrl's default build, -C target-cpu=native (adds its rows)")
    p.add_argument("--rltools-compile", default="")
    p.add_argument("--venv", default="")
    a = p.parse_args()
    a.python = sys.executable

    logdir = os.path.join(a.out, "logs")
    shutil.rmtree(logdir, ignore_errors=True)
    os.makedirs(logdir)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    load_before = os.getloadavg()
    records = []
    for rep in range(a.reps):
        for key, library, cmd in runs(a):
            rec = run_one(key, library, cmd, a, rep, logdir)
            records.append(rec)
            print(f"rep {rep} {key:34s} cpu {rec['cpu_s']:8.2f} s  wall {rec['wall_s']:8.2f} s  "
                  f"steps {rec['steps']}  eval {rec['final_eval']:.1f}", file=sys.stderr, flush=True)
    load_after = os.getloadavg()

    q = 1 if a.quick else 0
    by = lambda k: [r for r in records if r["key"] == k]
    summary = []
    for label, mk, pk in ROWS + (ROWS_NATIVE if a.microrl_native else []):
        m, pr = by(mk), by(pk)
        mc = statistics.median(r["cpu_s"] for r in m)
        pc = statistics.median(r["cpu_s"] for r in pr)
        summary.append({
            "task": label.format(cp=f"{CARTPOLE_STEPS[q]:,}".replace(",", " "),
                                 pd=f"{PENDULUM_STEPS[q]:,}".replace(",", " ")),
            "microrl_run": mk, "peer_run": pk, "peer": pr[0]["library"],
            "microrl_cpu_s": mc, "microrl_eval": fmt_eval(m),
            "peer_cpu_s": pc, "peer_eval": fmt_eval(pr), "ratio": pc / mc,
        })

    mach, vers = machine(), versions(a)
    cmdline = "std-harness/benches/peers/run.sh --reps %d --cpu %d%s" % (
        a.reps, a.cpu, " --quick" if a.quick else "")
    lines = [
        f"Measured {started} with `{cmdline}`: CPU seconds (user + sys) of whole runs "
        f"pinned to core {a.cpu}, one thread, median of {a.reps}; final eval = mean return of "
        f"the {EVAL_EPISODES[q]}-episode deterministic evaluation after training "
        f"(median [min, max] over the repetitions).",
        "",
        "| task | microrl CPU s | microrl final eval | peer | peer CPU s | peer final eval | peer / microrl |",
        "|---|---:|---|---|---:|---|---:|",
    ]
    for s in summary:
        lines.append(f"| {s['task']} | {s['microrl_cpu_s']:.2f} | {s['microrl_eval']} | {s['peer']} "
                     f"| {s['peer_cpu_s']:.2f} | {s['peer_eval']} | {s['ratio']:.2f}x |")
    lines += [
        "",
        f"Machine: {mach['cpu_model']} ({mach['cpu_family_model']}, hypervisor "
        f"{mach['hypervisor']}), {mach['cpus_online']} CPUs online "
        f"({mach['sockets']} socket(s) x {mach['cores_per_socket']} core(s) x "
        f"{mach['threads_per_core']} thread(s)), {mach['memory']} RAM, Linux {mach['kernel']}; "
        f"load average {load_before[0]:.2f} at the start, {load_after[0]:.2f} at the end.",
        "",
        "Versions: " + "; ".join(v if k in ("rustc", "g++") else f"{k} {v}"
                                 for k, v in vers.items() if k != "rltools_compile") + ".",
        "",
        f"RLtools built with `{vers['rltools_compile']}`.",
    ]
    table = "\n".join(lines) + "\n"

    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(table)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"started": started, "command": cmdline, "quick": a.quick, "reps": a.reps,
                   "cpu": a.cpu, "load_average": {"before": load_before, "after": load_after},
                   "machine": mach, "versions": vers, "summary": summary, "runs": records},
                  f, indent=2)
    cols = ["rep", "key", "library", "seed", "cpu_s", "user_s", "sys_s", "wall_s", "steps",
            "final_eval", "solved_at_step", "command"]
    with open(os.path.join(a.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(records)
    print(table)
    print(f"raw results: {a.out}/results.csv, results.json; logs: {logdir}", file=sys.stderr)


if __name__ == "__main__":
    main()
