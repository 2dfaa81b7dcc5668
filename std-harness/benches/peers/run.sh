#!/usr/bin/env bash
# microrl's peer benchmark: CPU seconds for the same training work in microrl,
# Stable-Baselines3 and RLtools, on one pinned core.
#
# What is measured, and why it is "equal work"
# --------------------------------------------
# CPU seconds (user + sys of the training process, from getrusage) of whole
# runs -- start-up, training for the FULL budget (no early stop) and the final
# 100-episode deterministic evaluation -- each process pinned to one core
# (taskset -c CPU, default 1) with one thread. Three comparisons, each against the
# peer that publishes a tuned configuration for it:
#
#  * PPO CartPole-v1, 100 000 steps, RL Zoo's tuned SB3 configuration
#    (sb3_cartpole_ppo.py): 256 steps a rollout (8 envs x 32), 20 passes of
#    one 256-sample minibatch, gamma 0.98, lambda 0.8, lr 1e-3 -> 0, clip
#    0.2 -> 0, 64-64 tanh actor and critic, max_grad_norm 0.5, no VecNormalize.
#    microrl runs the same numbers (microrl_cartpole_rlzoo.toml): 391 rollouts
#    of 256 steps collected as 8 environment copies x 32 steps (n_envs,
#    n_steps), GAE per copy, 391 x 20 gradient steps on 256 samples each, the
#    same networks -- the same environment steps, forward and backward passes.
#
#  * PPO Pendulum-v1, ~300 000 steps: RLtools' own PPO Pendulum training
#    (vendor/rltools/rltools_pendulum_ppo.cpp, upstream's training.cpp and hyper-parameters,
#    built from the headers the rltools PyPI package ships, g++ -O3, no BLAS,
#    no -march=native, no -ffast-math) against microrl with its own Pendulum
#    defaults (the same budget and task, each library's tuned configuration:
#    not the same gradient work, microrl does ~5x the backward passes), and
#    microrl with its default early stop (time to solve). A supplementary row
#    runs microrl with RLtools' hyper-parameters (microrl_pendulum_rltools.toml:
#    the same gradient steps per environment step).
#
#  * SAC and TD3 Pendulum-v1: RLtools' own SAC and TD3 Pendulum trainings
#    (vendor/rltools/rltools_pendulum_{sac,td3}.cpp, upstream's examples and hyper-parameters,
#    built as the PPO one) and SB3 with RL Zoo's Pendulum-v1 entries
#    (sb3_pendulum_offpolicy.py), each printing a held-out evaluation curve
#    (100 deterministic episodes from start states no training uses, every
#    1 000 steps; its CPU time reported apart and subtracted), against microrl
#    with its defaults and early stop (the time to solve, held-out report) and
#    for the full budget; and, as equal work, microrl with RLtools' SAC and TD3
#    settings (microrl_pendulum_{sac,td3}_rltools.toml).
#
#  * The suite's peers (--tasks suite, not a default: ~3 CPU hours): SB3 PPO
#    on the two suite plants Gymnasium has, Acrobot-v1 and
#    MountainCarContinuous-v0 (sb3_suite_ppo.py), with SB3's defaults for
#    500 000 steps (microrl's peer rows: microrl suite --steps 500000) and
#    with RL Zoo's tuned entries (their own
#    budgets, VecNormalize), seeds 0 .. reps-1. Each trained policy is imported
#    into microrl (microrl import --from sb3, the frozen VecNormalize
#    statistics with it) and scored by microrl eval --episodes 200 --seed
#    2000: the held-out start states of microrl suite's rows and baselines.
#    CPU seconds of model.learn() and of the whole process reported apart.
#
# Runs alternate (microrl, SB3, microrl, RLtools, ... per repetition) so that
# the noise of a shared machine falls on every library alike; the table gives
# medians over the repetitions.
#
# Usage:  std-harness/benches/peers/run.sh [--reps N] [--quick] [--cpu C] [--out DIR]
#                                          [--tasks ppo,offpolicy,suite] [--venv DIR]
#                                          [--microrl BIN]
#   --reps N   repetitions (default 3)
#   --quick    tiny budgets (2 048 CartPole and 40 960 Pendulum PPO steps,
#              1 000 SAC/TD3 steps with a curve point every 500, 10-episode
#              evaluations; suite: one rollout of each configuration -- 200
#              steps for RL Zoo's MountainCarContinuous --, 10-episode
#              evaluations): a smoke test of the whole pipeline, not a measurement
#   --tasks T  which comparisons, comma-separated: ppo (CartPole and Pendulum
#              PPO), offpolicy (SAC and TD3 on Pendulum), suite (SB3 PPO on
#              Acrobot-v1 and MountainCarContinuous-v0); default ppo,offpolicy
#   --resume   keep the runs OUT/results.json already holds (the same tasks,
#              --quick, --reps, --cpu and versions) and run the missing ones:
#              results.json is rewritten after every run
#   --microrl BIN  only with --tasks suite: import and evaluate with this
#              microrl binary instead of building one (the suite's rows time
#              no microrl run)
#   --venv DIR reuse an existing venv (also $PEERS_VENV) instead of building
#              target/peers-venv: refused unless its stable-baselines3,
#              gymnasium, torch and numpy (and, for the suite, safetensors)
#              are requirements.txt's versions; if
#              it lacks rltools, the pinned rltools (headers only, 0.6 MB) goes
#              to target/peers/rltools-pkg
#   --cpu C    the core every run is pinned to (default 1)
#   --out DIR  where results.{csv,json}, table.md and the run logs go
#              (default target/peers/results, or target/peers/results-quick)
#
# Downloads (a benchmark, not a test: never part of `cargo test`): the pinned
# Python packages of requirements.txt into a venv at target/peers-venv, built
# once and reused. Torch comes from PyTorch's CPU wheel index when that index
# is reachable, else the same torch version from PyPI (its CUDA build; the
# benchmark runs it on the CPU all the same).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
VENV="$TARGET/peers-venv"
BUILD="$TARGET/peers"
TORCH_CPU_INDEX="https://download.pytorch.org/whl/cpu"

reps=3
quick=0
cpu=1
out=""
tasks="ppo,offpolicy"
venv_arg="${PEERS_VENV:-}"
microrl_arg=""
resume=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --reps) reps="$2"; shift 2 ;;
        --quick) quick=1; shift ;;
        --cpu) cpu="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --tasks) tasks="$2"; shift 2 ;;
        --venv) venv_arg="$2"; shift 2 ;;
        --microrl) microrl_arg="$2"; shift 2 ;;
        --resume) resume=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
if [[ -z "$out" ]]; then
    if [[ $quick == 1 ]]; then out="$BUILD/results-quick"; else out="$BUILD/results"; fi
fi
mkdir -p "$BUILD" "$out"

has_task() { [[ ",$tasks," == *",$1,"* ]]; }
if [[ -n "$microrl_arg" ]]; then
    if [[ "$tasks" != "suite" ]]; then
        echo "run.sh: --microrl only with --tasks suite (the other rows time run.sh's own builds)" >&2
        exit 2
    fi
    if [[ ! -x "$microrl_arg" ]]; then
        echo "run.sh: --microrl $microrl_arg is not an executable" >&2
        exit 2
    fi
    microrl_arg="$(cd "$(dirname "$microrl_arg")" && pwd)/$(basename "$microrl_arg")"
fi

# --- 1. The Python venv (pinned; reused while requirements.txt is unchanged),
# or an existing one with the same versions of the packages that run.
req_hash="$(sha256sum "$HERE/requirements.txt" | cut -c1-16)"
if [[ -n "$venv_arg" ]]; then
    VENV="$(cd "$venv_arg" && pwd)"
    checked=(stable-baselines3 gymnasium torch numpy)
    has_task suite && checked+=(safetensors)  # the suite's policies go to microrl import
    for pkg in "${checked[@]}"; do
        want="$(grep -iE "^$pkg==" "$HERE/requirements.txt" | cut -d= -f3)"
        have="$("$VENV/bin/python" -c 'import sys; from importlib.metadata import version; print(version(sys.argv[1]))' "$pkg" 2>/dev/null || echo none)"
        if [[ "$have" != "$want" ]]; then
            echo "run.sh: --venv $VENV has $pkg $have, requirements.txt pins $want" >&2
            exit 2
        fi
    done
    echo "== reusing the venv $VENV (${checked[*]} as pinned)" >&2
elif [[ ! -f "$VENV/.peers-$req_hash" ]]; then
    echo "== building the venv $VENV" >&2
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    torch_pin="$(grep -E '^torch==' "$HERE/requirements.txt")"
    if "$VENV/bin/python" -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1] + '/torch/', timeout=10)" \
        "$TORCH_CPU_INDEX" 2>/dev/null; then
        echo "== torch from the CPU wheel index" >&2
        "$VENV/bin/pip" install --index-url "$TORCH_CPU_INDEX" "$torch_pin" >&2
        echo "cpu-index" > "$VENV/.peers-torch-source"
    else
        echo "== the CPU wheel index is unreachable: $torch_pin from PyPI" >&2
        echo "pypi" > "$VENV/.peers-torch-source"
    fi
    "$VENV/bin/pip" install -r "$HERE/requirements.txt" >&2
    "$VENV/bin/pip" freeze > "$VENV/.peers-freeze.txt"
    touch "$VENV/.peers-$req_hash"
fi
PY="$VENV/bin/python"
RLT_PKG=""
RLT_INCLUDE=""
# The RLtools headers (not needed by the suite's rows).
if has_task ppo || has_task offpolicy; then
    if ! RLT_INCLUDE="$("$PY" -c 'import os, rltools; print(os.path.join(os.path.dirname(rltools.__file__), "external", "rl_tools", "include"))' 2>/dev/null)"; then
        # A reused venv without rltools: the pinned package's headers beside the build.
        RLT_PKG="$BUILD/rltools-pkg"
        rlt_pin="$(grep -E '^rltools==' "$HERE/requirements.txt")"
        if [[ ! -d "$RLT_PKG/rltools-${rlt_pin#rltools==}.dist-info" ]]; then
            echo "== $PY -m pip install --no-deps --target $RLT_PKG $rlt_pin" >&2
            rm -rf "$RLT_PKG"
            "$PY" -m pip install --no-deps --target "$RLT_PKG" "$rlt_pin" >&2
        fi
        RLT_INCLUDE="$RLT_PKG/rltools/external/rl_tools/include"
    fi
fi

# --- 2. microrl's release builds. The table's main rows use a portable
# x86-64 build (SSE2; RLtools below is compiled without -march=native too).
# The workspace's default build targets this CPU (.cargo/config.toml:
# -C target-cpu=native, AVX2 / AVX-512 where it has them; rustc never fuses a
# multiply into an add and the kernels' summation order does not depend on the
# vector width: the same trained bits, see docs/speed.md): extra
# rows in the table.
MICRORL="$BUILD/x86-64/release/microrl"
if [[ -n "$microrl_arg" ]]; then
    MICRORL="$microrl_arg"
    echo "== using $MICRORL (--microrl) for the suite's import and eval" >&2
else
    echo "== RUSTFLAGS='-C target-cpu=x86-64' cargo build --release -p microrl-harness --target-dir $BUILD/x86-64" >&2
    (cd "$ROOT" && RUSTFLAGS="-C target-cpu=x86-64" \
        cargo build --release -p microrl-harness --target-dir "$BUILD/x86-64" >&2)
fi
MICRORL_NATIVE=""
if has_task ppo; then  # the default build's rows are PPO rows
    echo "== cargo build --release -p microrl-harness" >&2
    (cd "$ROOT" && env -u RUSTFLAGS cargo build --release -p microrl-harness >&2)
    MICRORL_NATIVE="$TARGET/release/microrl"
fi

# --- 3. RLtools' PPO Pendulum, from the headers of the rltools package.
# Upstream's flags minus its benchmark target's -Ofast -march=native: plain -O3,
# no BLAS backend (RL_TOOLS_BACKEND_ENABLE_* unset), as the main rows' microrl
# builds for a generic x86-64.
if [[ $quick == 1 ]]; then rlt_steps=40960; rlt_eval=10; else rlt_steps=300000; rlt_eval=100; fi
RLT_BIN="$BUILD/rltools_pendulum_ppo_${rlt_steps}_${rlt_eval}"
RLT_CMD=(g++ -std=c++17 -O3 -DRL_TOOLS_DISABLE_TENSORBOARD
         -DPEERS_TOTAL_STEPS="$rlt_steps" -DPEERS_FINAL_EVAL_EPISODES="$rlt_eval"
         -I "$RLT_INCLUDE" "$HERE/vendor/rltools/rltools_pendulum_ppo.cpp" -o "$RLT_BIN")
if has_task ppo && [[ ! -x "$RLT_BIN" || "$HERE/vendor/rltools/rltools_pendulum_ppo.cpp" -nt "$RLT_BIN" ]]; then
    echo "== ${RLT_CMD[*]}" >&2
    "${RLT_CMD[@]}"
fi

# --- 3b. RLtools' SAC and TD3 Pendulum, the same flags. Upstream's budgets
# (SAC 10 000 steps, TD3 20 000 + 1) unless --quick; the held-out curve every
# 1 000 steps (--quick: 500), 100 episodes (--quick: 10).
if [[ $quick == 1 ]]; then op_steps=1000; op_every=500; else op_steps=""; op_every=1000; fi
RLT_OFFPOLICY_CMD=()
RLT_BOTH='rltools_pendulum_{sac,td3}'  # the two commands differ only in it
for algo in sac td3; do
    bin="$BUILD/rltools_pendulum_${algo}_${op_steps:-upstream}_${op_every}_${rlt_eval}"
    cmd=(g++ -std=c++17 -O3 -DRL_TOOLS_DISABLE_TENSORBOARD
         ${op_steps:+-DPEERS_STEP_LIMIT=$op_steps} -DPEERS_EVAL_INTERVAL="$op_every"
         -DPEERS_EVAL_EPISODES="$rlt_eval" -I "$RLT_INCLUDE" "$HERE/vendor/rltools/rltools_pendulum_${algo}.cpp" -o "$bin")
    if has_task offpolicy && [[ ! -x "$bin" || "$HERE/vendor/rltools/rltools_pendulum_${algo}.cpp" -nt "$bin" ]]; then
        echo "== ${cmd[*]}" >&2
        "${cmd[@]}"
    fi
    declare "RLT_${algo^^}_BIN=$bin"
    RLT_OFFPOLICY_CMD=("${cmd[@]}")
done

# --- 4. The runs, alternating, and the table.
quick_flag=()
[[ $quick == 1 ]] && quick_flag=(--quick)
[[ -n "$microrl_arg" ]] && quick_flag+=(--microrl-given)
[[ $resume == 1 ]] && quick_flag+=(--resume)
exec "$PY" "$HERE/run.py" --reps "$reps" --cpu "$cpu" --out "$out" "${quick_flag[@]}" \
    --tasks "$tasks" --microrl "$MICRORL" --microrl-native "$MICRORL_NATIVE" \
    --rltools "$RLT_BIN" --rltools-sac "$RLT_SAC_BIN" --rltools-td3 "$RLT_TD3_BIN" \
    --rltools-compile "${RLT_CMD[*]}" \
    --rltools-offpolicy-compile "${RLT_OFFPOLICY_CMD[*]//rltools_pendulum_td3/$RLT_BOTH}" \
    --rltools-pkg "$RLT_PKG" --venv "$VENV"
