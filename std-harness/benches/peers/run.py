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
# SAC/TD3 on Pendulum-v1. microrl and SB3 run RL Zoo's 20 000 steps; RLtools'
# budgets are compiled into its binaries (run.sh: SAC 10 000 steps, TD3
# 20 000 + 1, upstream's). The held-out curve: a point every OFFPOLICY_EVAL_INTERVAL steps.
OFFPOLICY_STEPS = (20_000, 1_000)
RLTOOLS_OFFPOLICY_STEPS = {"sac": (10_000, 1_000), "td3": (20_001, 1_001)}
OFFPOLICY_EVAL_INTERVAL = (1_000, 500)
THRESHOLD = -200.0
# The suite's peers (--tasks suite): SB3 PPO on the suite plants Gymnasium has,
# with SB3's defaults (500 000 steps, the budget of microrl's peer rows:
# `microrl suite --steps 500000`) and RL Zoo's tuned entries (their own
# n_timesteps), each trained policy imported into microrl and scored
# by `microrl eval --episodes 200 --seed 2000`: the 200 held-out start states
# of `microrl suite` (HELD_OUT_SEED 2000).
SUITE_ENVS = ("acrobot", "mountaincar-continuous", "servo")  # servo: its Python port, defaults only
SUITE_CONFIGS = ("defaults", "rlzoo")
SUITE_STEPS = {  # (full, --quick); None: the script's own (500 000, or RL Zoo's n_timesteps)
    ("defaults", "acrobot"): (None, 2_048), ("defaults", "mountaincar-continuous"): (None, 2_048),
    ("defaults", "servo"): (None, 2_048),
    ("rlzoo", "acrobot"): (None, 4_096), ("rlzoo", "mountaincar-continuous"): (None, 200),
}
SUITE_EVAL_EPISODES = (200, 10)
SUITE_HELD_OUT_SEED = 2000
TASKS = ("ppo", "offpolicy", "suite")
DEFAULT_TASKS = ("ppo", "offpolicy")


def runs(a):
    """The runs of one repetition, in order: key, library, command."""
    out = []
    if "ppo" in a.tasks:
        out += ppo_runs(a)
    if "offpolicy" in a.tasks:
        out += offpolicy_runs(a)
    return out


def suite_runs(a):
    """SB3 PPO on the suite plants: key, library, command, config. Not in the
    repetitions' alternation (no microrl training among them): all seeds of
    SB3's defaults first, then RL Zoo's, so that a long run completes one
    configuration before the next."""
    q = 1 if a.quick else 0
    out = []
    for config in SUITE_CONFIGS:
        for env in SUITE_ENVS:
            if (config, env) not in SUITE_STEPS:
                continue  # RL Zoo has no entry for the servo
            cmd = [a.python, os.path.join(HERE, "sb3_suite_ppo.py"), "--env", env,
                   "--config", config, "--eval-episodes", str(SUITE_EVAL_EPISODES[q])]
            steps = SUITE_STEPS[(config, env)][q]
            if steps is not None:
                cmd += ["--steps", str(steps)]
            out.append((f"sb3_suite_{config}_{env}", "SB3", cmd, config, env))
    return out


def offpolicy_runs(a):
    """SAC and TD3 on Pendulum, alternating microrl, SB3, microrl, RLtools, microrl."""
    q = 1 if a.quick else 0
    steps, ev, every = OFFPOLICY_STEPS[q], EVAL_EPISODES[q], OFFPOLICY_EVAL_INTERVAL[q]
    out = []
    for algo, rltools in (("sac", a.rltools_sac), ("td3", a.rltools_td3)):
        def microrl(*extra, n=steps):
            return [a.microrl, "train", "--env", "pendulum", "--algo", algo, "--steps", str(n),
                    "--eval-episodes", str(ev), "--json", *extra]
        sb3 = [a.python, os.path.join(HERE, "sb3_pendulum_offpolicy.py"), "--algo", algo,
               "--steps", str(steps), "--eval-episodes", str(ev), "--eval-interval", str(every)]
        if a.quick:
            sb3 += ["--learning-starts", "100"]  # smoke test: let the updates run
        out += [
            (f"microrl_{algo}_early_stop", "microrl", microrl()),
            (f"sb3_{algo}_rlzoo", "SB3", sb3),
            (f"microrl_{algo}_full", "microrl", microrl("--no-early-stop", "--final-eval-only")),
            (f"rltools_{algo}", "RLtools", [rltools]),
            (f"microrl_{algo}_rltools_config", "microrl",
             microrl("--no-early-stop", "--final-eval-only",
                     "--config", os.path.join(HERE, f"microrl_pendulum_{algo}_rltools.toml"),
                     n=RLTOOLS_OFFPOLICY_STEPS[algo][q])),
            # The time to solve with RLtools' own settings (the same batch,
            # learning starts and networks), microrl's default early stop.
            (f"microrl_{algo}_rltools_config_early_stop", "microrl",
             microrl("--config", os.path.join(HERE, f"microrl_pendulum_{algo}_rltools.toml"),
                     n=RLTOOLS_OFFPOLICY_STEPS[algo][q])),
        ]
    return out


def ppo_runs(a):
    """The PPO runs of one repetition."""
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
PEERS_EVAL_CPU = re.compile(r"^PEERS_RESULT .*eval_cpu_s=(\S+)", re.M)
PEERS_EVAL = re.compile(r"^PEERS_EVAL step=(\d+) cpu_s=(\S+) return=(\S+)", re.M)


def pinned(cmd, a, key, rep, logdir, log_name=None):
    """Runs `cmd` pinned to a.cpu with one thread; returns the process, the
    full command, user and sys CPU seconds (getrusage(RUSAGE_CHILDREN)) and
    the wall time. Its command and output go to logdir/<rep>-<key>.log."""
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
    log = os.path.join(logdir, log_name or f"{rep}-{key}.log")
    with open(log, "w") as f:
        f.write("$ " + " ".join(full) + "\n--- stdout\n" + p.stdout + "\n--- stderr\n" + p.stderr)
    if p.returncode != 0:
        sys.exit(f"run.py: {key} (rep {rep}) exited {p.returncode}; see {log}")
    return p, full, user, sys_, wall


def run_one(key, library, cmd, a, rep, logdir):
    """Runs `cmd` pinned, returns its record."""
    seed = rep
    if library == "microrl":
        cmd = cmd + ["--seed", str(seed), "--out", os.path.join(logdir, f"{rep}-{key}")]
    elif library == "SB3":
        cmd = cmd + ["--seed", str(seed)]
    else:
        cmd = cmd + [str(seed)]
    p, full, user, sys_, wall = pinned(cmd, a, key, rep, logdir)
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
        e = PEERS_EVAL_CPU.search(p.stdout)
        if e:
            # The held-out curve: its evaluations' CPU time is not the training's.
            curve = [(int(st), float(c), float(r)) for st, c, r in PEERS_EVAL.findall(p.stdout)]
            rec["curve_eval_cpu_s"] = float(e.group(1))
            rec["cpu_s_without_curve"] = round(rec["cpu_s"] - rec["curve_eval_cpu_s"], 3)
            hit = next((c for c in curve if c[2] >= THRESHOLD), None)
            rec["curve"] = curve
            rec["to_threshold_steps"] = hit[0] if hit else None
            rec["to_threshold_cpu_s"] = hit[1] if hit else None
    if rec["key"].startswith("microrl_") and rec["key"].endswith("_early_stop"):
        # microrl's time to solve: the deciding evaluation passed and the
        # held-out report reaches the threshold; the whole run's CPU time.
        rec["to_threshold_steps"] = j["solved_at_step"] if j["solved"] else None
        rec["to_threshold_cpu_s"] = rec["cpu_s"] if j["solved"] else None
    return rec


def run_suite_one(key, cmd, config, env, a, rep, logdir):
    """One SB3 suite run, pinned; then its policy imported into microrl and
    scored on microrl suite's held-out start states (not timed)."""
    seed = rep
    q = 1 if a.quick else 0
    out = os.path.join(logdir, f"{rep}-{key}")
    p, full, user, sys_, wall = pinned(cmd + ["--seed", str(seed), "--out", out], a, key, rep, logdir)
    m = PEERS_RESULT.search(p.stdout)
    if not m:
        sys.exit(f"run.py: {key} (rep {rep}) printed no PEERS_RESULT line; see {logdir}/{rep}-{key}.log")
    line = p.stdout[m.start():].splitlines()[0]
    kv = dict(x.split("=", 1) for x in line.split()[1:])
    field = lambda name: float(kv[name])
    policy = os.path.join(out, "policy.mrlp")
    imp = [a.microrl, "import", "--from", "sb3", os.path.join(out, "policy.safetensors"),
           "--env", env, "--out", policy, "--json"]
    stats = os.path.join(out, "vecnormalize.json")
    if os.path.exists(stats):
        imp[-1:-1] = ["--vecnormalize", stats]
    ev = [a.microrl, "eval", policy, "--episodes", str(SUITE_EVAL_EPISODES[q]),
          "--seed", str(SUITE_HELD_OUT_SEED), "--json"]
    logs = []
    for name, c in (("import", imp), ("eval", ev)):
        r = subprocess.run(c, capture_output=True, text=True)
        logs.append("$ " + " ".join(c) + "\n--- stdout\n" + r.stdout + "\n--- stderr\n" + r.stderr)
        if r.returncode != 0:
            with open(os.path.join(logdir, f"{rep}-{key}-microrl.log"), "w") as f:
                f.write("\n".join(logs))
            sys.exit(f"run.py: microrl {name} of {key} (rep {rep}) exited {r.returncode}; "
                     f"see {logdir}/{rep}-{key}-microrl.log")
    with open(os.path.join(logdir, f"{rep}-{key}-microrl.log"), "w") as f:
        f.write("\n".join(logs))
    j = json.loads(r.stdout.strip().splitlines()[-1])
    return {"rep": rep, "key": key, "library": "SB3", "seed": seed, "config": config, "env": env,
            "cpu_s": round(user + sys_, 3), "user_s": round(user, 3), "sys_s": round(sys_, 3),
            "wall_s": round(wall, 3), "steps": int(m.group(1)),
            "train_cpu_s": field("train_cpu_s"),
            "final_eval": j["mean"], "final_eval_std": j["std"],
            "final_eval_start_states": f"microrl eval --episodes {j['episodes']} --seed {SUITE_HELD_OUT_SEED}",
            "gym_eval": float(m.group(2)), "gym_eval_cpu_s": field("eval_cpu_s"),
            "gym_eval_start_states": f"Gymnasium reset(seed=1_000_000 + i), i < {j['episodes']}",
            "solved_at_step": None, "command": " ".join(full),
            "microrl_commands": [" ".join(imp), " ".join(ev)]}


def suite_summary(records):
    """Per (env, config): the per-seed held-out returns on microrl's start
    states, their mean, the Gymnasium cross-check and the CPU seconds."""
    rows = []
    for config in SUITE_CONFIGS:
        for env in SUITE_ENVS:
            rs = sorted((r for r in records if r.get("config") == config and r.get("env") == env),
                        key=lambda r: r["seed"])
            if not rs:
                continue
            rows.append({
                "env": env, "config": config, "seeds": [r["seed"] for r in rs],
                "steps": statistics.median(r["steps"] for r in rs),
                "held_out": [r["final_eval"] for r in rs],
                "held_out_mean": statistics.mean(r["final_eval"] for r in rs),
                "gym_eval": [r["gym_eval"] for r in rs],
                "train_cpu_s": [r["train_cpu_s"] for r in rs],
                "train_cpu_s_median": statistics.median(r["train_cpu_s"] for r in rs),
                "cpu_s_median": statistics.median(r["cpu_s"] for r in rs),
            })
    return rows


def suite_table(rows, q):
    n = SUITE_EVAL_EPISODES[q]
    lines = [
        "",
        f"SB3 PPO on the suite plants (`--tasks suite`): held-out = mean return of the deterministic "
        f"policy, imported into microrl (`microrl import --from sb3`), over the {n} held-out start "
        f"states of `microrl suite` (`microrl eval --episodes {n} --seed {SUITE_HELD_OUT_SEED}`); "
        f"Gymnasium check = the same policy in SB3 and Gymnasium, episode i from "
        f"reset(seed=1_000_000 + i): the same start-state distribution, not the same start states. "
        f"Training CPU s = model.learn() alone (time.process_time); process CPU s = the whole "
        f"run (getrusage: start-up, training, saving, the Gymnasium check).",
        "",
        "| env | config | steps | seeds | held-out per seed | held-out mean | Gymnasium check per seed "
        "| training CPU s per seed | training CPU s (median) | process CPU s (median) |",
        "|---|---|---:|---|---|---:|---|---|---:|---:|",
    ]
    for r in rows:
        j = lambda xs, d: ", ".join(f"{x:.{d}f}" for x in xs)
        lines.append(f"| {r['env']} | {r['config']} | {r['steps']:.0f} | {j(r['seeds'], 0)} | "
                     f"{j(r['held_out'], 3)} | {r['held_out_mean']:.3f} | {j(r['gym_eval'], 3)} | "
                     f"{j(r['train_cpu_s'], 1)} | {r['train_cpu_s_median']:.1f} | {r['cpu_s_median']:.1f} |")
    return lines


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
    v = {
        "microrl": f"{commit}{' (modified)' if dirty else ''}",
        "rustc": sh("rustc --version"),
        "g++": sh("g++ --version | head -1"),
        "python": platform.python_version(),
        "torch": torch.__version__ + (" (CUDA build, run on the CPU)" if torch.version.cuda else ""),
        "torch_source": open(src).read().strip() if os.path.exists(src) else "?",
        "stable-baselines3": stable_baselines3.__version__,
        "gymnasium": gymnasium.__version__,
        "numpy": numpy.__version__,
    }
    if "ppo" in a.tasks or "offpolicy" in a.tasks:
        v.update({
            "rltools": rltools_version(a) + " (headers = rl-tools tag v2.2.0)",
            "rltools_compile": a.rltools_compile.replace(ROOT + "/", ""),
            "rltools_offpolicy_compile": a.rltools_offpolicy_compile.replace(ROOT + "/", ""),
        })
    if "suite" in a.tasks:
        v["safetensors"] = version("safetensors")
    if a.microrl_given:
        # A binary the caller gave (run.sh --microrl): which one, not the tree's commit.
        digest = sh(f"sha256sum {a.microrl} | cut -c1-16")
        v["microrl"] = (f"{a.microrl} ({sh(a.microrl + ' --version')}, sha256 {digest}; "
                        f"tree at {v['microrl']})")
    return v


def rltools_version(a):
    """The rltools package whose headers were compiled: the venv's, or the
    headers-only copy run.sh installs beside the build (--rltools-include)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("rltools")
    except PackageNotFoundError:
        m = re.search(r"rltools-([0-9.]+)\.dist-info", " ".join(os.listdir(a.rltools_pkg))) \
            if a.rltools_pkg and os.path.isdir(a.rltools_pkg) else None
        return (m.group(1) if m else "?") + " (headers only, pip install --no-deps --target)"


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


def median_or_none(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def offpolicy_summary(records, q):
    """Per (algorithm, library): the time to held-out >= THRESHOLD, the final
    held-out evaluation and the full budget's CPU time, medians over the
    repetitions; and the equal-work comparison."""
    by = lambda k: [r for r in records if r["key"] == k]
    rows = []
    for algo in ("sac", "td3"):
        for library, solve_key, full_key in (
            ("microrl", f"microrl_{algo}_early_stop", f"microrl_{algo}_full"),
            ("microrl, RLtools' settings", f"microrl_{algo}_rltools_config_early_stop",
             f"microrl_{algo}_rltools_config"),
            ("RLtools", f"rltools_{algo}", f"rltools_{algo}"),
            ("SB3", f"sb3_{algo}_rlzoo", f"sb3_{algo}_rlzoo"),
        ):
            solve, full = by(solve_key), by(full_key)
            if not solve or not full:
                continue
            reached = [r for r in solve if r.get("to_threshold_steps") is not None]
            full_cpu = [r.get("cpu_s_without_curve", r["cpu_s"]) for r in full]
            rows.append({
                "algo": algo.upper(), "library": library, "solve_run": solve_key, "full_run": full_key,
                "reached": len(reached), "reps": len(solve),
                "to_threshold_cpu_s": median_or_none(r["to_threshold_cpu_s"] for r in reached),
                "to_threshold_steps": median_or_none(r["to_threshold_steps"] for r in reached),
                "early_stop_final_eval": fmt_eval(solve) if library.startswith("microrl") else None,
                "final_eval": fmt_eval(full),
                "full_budget_steps": statistics.median(r["steps"] for r in full),
                "full_budget_cpu_s": statistics.median(full_cpu),
                "curve_eval_cpu_s": median_or_none(r.get("curve_eval_cpu_s") for r in full),
            })
    # Each row's time to the threshold as a multiple of RLtools' (the
    # issue's target: microrl at most 0.5x).
    for r in rows:
        peer = next((p for p in rows if p["algo"] == r["algo"] and p["library"] == "RLtools"), None)
        r["vs_rltools"] = (r["to_threshold_cpu_s"] / peer["to_threshold_cpu_s"]
                           if peer and peer["to_threshold_cpu_s"] and r["to_threshold_cpu_s"]
                           else None)
    equal = []
    for algo in ("sac", "td3"):
        m, pr = by(f"microrl_{algo}_rltools_config"), by(f"rltools_{algo}")
        if not m or not pr:
            continue
        mc = statistics.median(r["cpu_s"] for r in m)
        pc = statistics.median(r.get("cpu_s_without_curve", r["cpu_s"]) for r in pr)
        equal.append({"algo": algo.upper(), "steps": statistics.median(r["steps"] for r in m),
                      "microrl_cpu_s": mc, "microrl_eval": fmt_eval(m),
                      "rltools_cpu_s": pc, "rltools_eval": fmt_eval(pr), "ratio": pc / mc})
    return {"rows": rows, "equal_work": equal}


def offpolicy_table(o, q, reps):
    f = lambda x, d=2: "—" if x is None else f"{x:.{d}f}"
    lines = [
        "",
        f"SAC and TD3 on Pendulum-v1. Time to held-out >= {THRESHOLD:.0f}: microrl (with its "
        f"defaults, or with RLtools' settings from microrl_pendulum_{{sac,td3}}_rltools.toml), its default "
        f"early stop (the deciding evaluation on selection start states passes, the "
        f"{EVAL_EPISODES[q]}-episode held-out report reaches the threshold): the whole run's CPU "
        f"seconds and solved_at_step; RLtools and SB3, the first point of their held-out curve "
        f"(a {EVAL_EPISODES[q]}-episode deterministic evaluation every "
        f"{OFFPOLICY_EVAL_INTERVAL[q]} steps) at or above the threshold: the process's CPU "
        f"seconds at that point without the curve's evaluations. Medians over the repetitions "
        f"that reached it (reached/reps). Full budget: microrl --no-early-stop "
        f"--final-eval-only; the peers' whole run without the curve's evaluations (their final "
        f"evaluation included, as microrl's).",
        "",
        "| algorithm | library | CPU s to held-out ≥ −200 | × RLtools' time | env steps to held-out ≥ −200 | "
        "reached | final held-out | full budget (steps) | full-budget CPU s |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in o["rows"]:
        final = r["final_eval"]
        if r["early_stop_final_eval"]:
            final = f"{r['early_stop_final_eval']} (early stop); {final} (full budget)"
        lines.append(f"| {r['algo']} | {r['library']} | {f(r['to_threshold_cpu_s'])} | "
                     f"{f(r.get('vs_rltools'))} | "
                     f"{f(r['to_threshold_steps'], 0)} | {r['reached']}/{r['reps']} | {final} | "
                     f"{r['full_budget_steps']:.0f} | {f(r['full_budget_cpu_s'])} |")
    if o["equal_work"]:
        lines += [
            "",
            "Equal work: RLtools' own configuration in microrl (microrl_pendulum_{sac,td3}_rltools.toml, "
            "the same steps, batch and networks) against RLtools' run without its curve.",
            "",
            "| algorithm | steps | microrl CPU s | microrl final held-out | RLtools CPU s | "
            "RLtools final held-out | RLtools / microrl |",
            "|---|---:|---:|---|---:|---|---:|",
        ]
        for e in o["equal_work"]:
            lines.append(f"| {e['algo']} | {e['steps']:.0f} | {e['microrl_cpu_s']:.2f} | {e['microrl_eval']} | "
                         f"{e['rltools_cpu_s']:.2f} | {e['rltools_eval']} | {e['ratio']:.2f}x |")
    return lines


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--cpu", type=int, default=1)
    p.add_argument("--out", required=True)
    p.add_argument("--microrl", required=True,
                   help="microrl built for a portable x86-64 (the main rows); the suite's "
                        "rows use it only to import and evaluate SB3's policies")
    p.add_argument("--microrl-given", action="store_true",
                   help="--microrl is a binary the caller gave run.sh (--microrl), not its build")
    p.add_argument("--rltools", default="", help="RLtools' PPO Pendulum binary")
    p.add_argument("--rltools-sac", default="", help="RLtools' SAC Pendulum binary")
    p.add_argument("--rltools-td3", default="", help="RLtools' TD3 Pendulum binary")
    p.add_argument("--tasks", default=",".join(DEFAULT_TASKS),
                   help="comma-separated: ppo (CartPole and Pendulum PPO), offpolicy (SAC, TD3), "
                        "suite (SB3 PPO on Acrobot-v1 and MountainCarContinuous-v0; not a default)")
    p.add_argument("--microrl-native", default="",
                   help="microrl's default build, -C target-cpu=native (adds its rows)")
    p.add_argument("--rltools-compile", default="")
    p.add_argument("--rltools-offpolicy-compile", default="")
    p.add_argument("--rltools-pkg", default="",
                   help="where run.sh installed the rltools package when the venv lacks it")
    p.add_argument("--venv", default="")
    p.add_argument("--resume", action="store_true",
                   help="keep the runs OUT/results.json already holds (same tasks, budgets and "
                        "repetitions) and run only the missing ones")
    a = p.parse_args()
    a.python = sys.executable
    a.tasks = [t for t in a.tasks.split(",") if t]
    if not a.tasks or any(t not in TASKS for t in a.tasks):
        p.error(f"--tasks: a comma-separated subset of {','.join(TASKS)}")
    if "ppo" in a.tasks and not a.rltools:
        p.error("--tasks ppo needs --rltools")
    if "offpolicy" in a.tasks and not (a.rltools_sac and a.rltools_td3):
        p.error("--tasks offpolicy needs --rltools-sac and --rltools-td3")
    if "ppo" not in a.tasks:
        a.microrl_native = ""

    logdir = os.path.join(a.out, "logs")
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    load_before = os.getloadavg()
    mach, vers = machine(), versions(a)
    records = []
    prev = os.path.join(a.out, "results.json")
    if a.resume and os.path.exists(prev):
        with open(prev) as f:
            old = json.load(f)
        if (old["tasks"], old["quick"], old["reps"], old["cpu"]) != (a.tasks, a.quick, a.reps, a.cpu):
            sys.exit(f"run.py: --resume: {prev} is of another run (tasks {old['tasks']}, quick "
                     f"{old['quick']}, reps {old['reps']}, cpu {old['cpu']})")
        # A given microrl binary is named by its digest; the tree's commit may move on.
        same = lambda v: {k: (re.sub(r"; tree at .*\)$", ")", x) if k == "microrl" and a.microrl_given
                              else x) for k, x in v.items()}
        if same(old["versions"]) != same(vers):
            sys.exit(f"run.py: --resume: {prev} ran other versions: {old['versions']}")
        records = old["runs"]
        started = old["started"] + " (resumed " + started + ")"
        load_before = tuple(old["load_average"]["before"])
        print(f"== resuming: {len(records)} runs kept from {prev}", file=sys.stderr)
    else:
        shutil.rmtree(logdir, ignore_errors=True)
    os.makedirs(logdir, exist_ok=True)
    done = {(r["key"], r["rep"]) for r in records}
    plan = [(rep, key, library, cmd) for rep in range(a.reps) for key, library, cmd in runs(a)]
    suite_plan = ([(config, rep, key, cmd, env) for key, _, cmd, config, env in suite_runs(a)
                   for rep in range(a.reps)] if "suite" in a.tasks else [])
    # The suite's runs: configuration-major (every seed of SB3's defaults, then RL Zoo's).
    suite_plan.sort(key=lambda x: (SUITE_CONFIGS.index(x[0]), x[1]))
    total = len(plan) + len(suite_plan)
    for rep, key, library, cmd in plan:
        if (key, rep) in done:
            continue
        rec = run_one(key, library, cmd, a, rep, logdir)
        records.append(rec)
        print(f"rep {rep} {key:34s} cpu {rec['cpu_s']:8.2f} s  wall {rec['wall_s']:8.2f} s  "
              f"steps {rec['steps']}  eval {rec['final_eval']:.1f}", file=sys.stderr, flush=True)
        report(a, records, total, started, load_before, mach, vers, logdir, final=False)
    for config, rep, key, cmd, env in suite_plan:
        if (key, rep) in done:
            continue
        rec = run_suite_one(key, cmd, config, env, a, rep, logdir)
        records.append(rec)
        print(f"rep {rep} {key:34s} cpu {rec['cpu_s']:8.2f} s  train {rec['train_cpu_s']:8.2f} s  "
              f"wall {rec['wall_s']:8.2f} s  steps {rec['steps']}  held-out {rec['final_eval']:.3f}  "
              f"gym {rec['gym_eval']:.3f}", file=sys.stderr, flush=True)
        report(a, records, total, started, load_before, mach, vers, logdir, final=False)
    table = report(a, records, total, started, load_before, mach, vers, logdir, final=True)
    print(table)
    print(f"raw results: {a.out}/results.csv, results.json; logs: {logdir}", file=sys.stderr)


def report(a, records, total, started, load_before, mach, vers, logdir, final):
    """Writes table.md, results.json and results.csv for the runs so far
    (after every run: a long run leaves its results if stopped); returns the table."""
    load_after = os.getloadavg()
    q = 1 if a.quick else 0
    by = lambda k: [r for r in records if r["key"] == k]
    summary = []
    ppo_rows = (ROWS + (ROWS_NATIVE if a.microrl_native else [])) if "ppo" in a.tasks else []
    for label, mk, pk in ppo_rows:
        m, pr = by(mk), by(pk)
        if not m or not pr:
            continue
        mc = statistics.median(r["cpu_s"] for r in m)
        pc = statistics.median(r["cpu_s"] for r in pr)
        summary.append({
            "task": label.format(cp=f"{CARTPOLE_STEPS[q]:,}".replace(",", " "),
                                 pd=f"{PENDULUM_STEPS[q]:,}".replace(",", " ")),
            "microrl_run": mk, "peer_run": pk, "peer": pr[0]["library"],
            "microrl_cpu_s": mc, "microrl_eval": fmt_eval(m),
            "peer_cpu_s": pc, "peer_eval": fmt_eval(pr), "ratio": pc / mc,
        })

    cmdline = "std-harness/benches/peers/run.sh --reps %d --cpu %d%s%s%s" % (
        a.reps, a.cpu, " --quick" if a.quick else "",
        "" if a.tasks == list(DEFAULT_TASKS) else " --tasks " + ",".join(a.tasks),
        f" --microrl {a.microrl}" if a.microrl_given else "")
    lines = [
        f"Measured {started} with `{cmdline}`: CPU seconds (user + sys) of whole runs "
        f"pinned to core {a.cpu}, one thread, median of {a.reps}" + (
            f"; final eval = mean return of the {EVAL_EPISODES[q]}-episode deterministic "
            f"evaluation after training (median [min, max] over the repetitions)."
            if "ppo" in a.tasks or "offpolicy" in a.tasks else
            f" (seeds 0 .. {a.reps - 1})."),
    ]
    if not final:
        lines += ["", f"**Partial: {len(records)} of {total} runs so far.**"]
    if summary:
        lines += [
            "",
            "| task | microrl CPU s | microrl final eval | peer | peer CPU s | peer final eval | peer / microrl |",
            "|---|---:|---|---|---:|---|---:|",
        ]
    for s in summary:
        lines.append(f"| {s['task']} | {s['microrl_cpu_s']:.2f} | {s['microrl_eval']} | {s['peer']} "
                     f"| {s['peer_cpu_s']:.2f} | {s['peer_eval']} | {s['ratio']:.2f}x |")
    offpolicy = None
    if "offpolicy" in a.tasks and any(r["key"].startswith(("microrl_sac", "microrl_td3")) for r in records):
        offpolicy = offpolicy_summary(records, q)
        lines += offpolicy_table(offpolicy, q, a.reps)
    suite = suite_summary(records) if "suite" in a.tasks else None
    if suite:
        lines += suite_table(suite, q)
    lines += [
        "",
        f"Machine: {mach['cpu_model']} ({mach['cpu_family_model']}, hypervisor "
        f"{mach['hypervisor']}), {mach['cpus_online']} CPUs online "
        f"({mach['sockets']} socket(s) x {mach['cores_per_socket']} core(s) x "
        f"{mach['threads_per_core']} thread(s)), {mach['memory']} RAM, Linux {mach['kernel']}; "
        f"load average {load_before[0]:.2f} at the start, {load_after[0]:.2f} at the end.",
        "",
        "Versions: " + "; ".join(v if k in ("rustc", "g++") else f"{k} {v}"
                                 for k, v in vers.items() if not k.startswith("rltools_")) + ".",
        "",
    ] + ([f"RLtools PPO built with `{vers['rltools_compile']}`."] if "ppo" in a.tasks else []) + (
        [f"RLtools SAC and TD3 built with `{vers['rltools_offpolicy_compile']}`."]
        if "offpolicy" in a.tasks else []) + [
    ]
    table = "\n".join(lines) + "\n"

    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(table)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"started": started, "command": cmdline, "quick": a.quick, "reps": a.reps,
                   "cpu": a.cpu, "tasks": a.tasks, "complete": final,
                   "load_average": {"before": load_before, "after": load_after},
                   "machine": mach, "versions": vers, "summary": summary,
                   "offpolicy_summary": offpolicy, "suite_summary": suite, "runs": records},
                  f, indent=2)
    cols = ["rep", "key", "library", "seed", "cpu_s", "user_s", "sys_s", "wall_s", "steps",
            "final_eval", "solved_at_step", "curve_eval_cpu_s", "cpu_s_without_curve",
            "to_threshold_steps", "to_threshold_cpu_s", "command"]
    if suite:
        # The suite's columns, after the others (the earlier files' columns unchanged).
        cols[-1:-1] = ["config", "env", "train_cpu_s", "gym_eval", "gym_eval_cpu_s"]
    with open(os.path.join(a.out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(records)
    return table


if __name__ == "__main__":
    main()
