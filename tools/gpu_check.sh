#!/usr/bin/env bash
# minerva's GPU check: one call on a machine with an NVIDIA GPU, Python 3.12, NumPy, CuPy and
# the test tools (pytest, pytest-timeout, hypothesis) already there, nothing to install:
#
#     bash tools/gpu_check.sh
#
# The stages run most valuable first, each under its own limit and all under one time budget
# (GPU_CHECK_BUDGET_SECONDS, default 420): a stage gets at most what the budget has left, and
# is skipped when less than 15 s are left.
#
#   bringup   import minerva, a CPU op, then GPU 0 brought up and one op on it      30 s
#   launch    launching ahead and its ordering (tests/gpu/test_gpu.py)                  45 s
#   copies    copies between a CPU and (virtual) GPUs, every GPU-to-GPU path         45 s
#   diff-1vgpu, diff-2vgpu   tests/gpu/test_gpu_differential.py on 1, then 2 virtual
#             GPUs (MINERVA_VIRTUAL_GPUS)                                       60 s, 45 s
#   device    the rest of tests/gpu/test_gpu.py: memory, out of memory, sticky errors    90 s
#   suites    a share of tests/gpu/test_gpu_suites.py: every test function, at most
#             GPU_CHECK_SUITES_PER_FAMILY (default 6) of its cases, those whose ids
#             hash lowest (0: all)                                                  100 s
#   bench     tools/bench.py gpu                                                    100 s
#
# Every test runs under a per-test timeout of GPU_CHECK_TEST_SECONDS (default 60), at most
# half its stage's time. GPU_CHECK_STAGES picks stages (default: all, in the order above;
# "diff" names both diff stages); GPU_CHECK_PYTEST_ARGS adds options to every pytest run;
# PYTHON picks the interpreter (default python3). Without a GPU every stage still runs and
# the GPU tests skip: a dry run (tests/gpu/test_gpu_check.py runs it in CI). When nvidia-smi
# shows a GPU that minerva cannot use, the bringup stage fails.
#
# $OUT (default ./gpu_check_out) receives three files: summary.txt (also printed), the
# benchmark's bench_gpu.json and logs.tar.gz (environment, nvidia-smi, each stage's log and
# JUnit XML), the archive refreshed after every stage. Exit status: 0 when every stage that
# ran passed, 1 otherwise. doc/devices.md, "Running the GPU checks".
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-python3}"
OUT="${OUT:-$PWD/gpu_check_out}"
BUDGET="${GPU_CHECK_BUDGET_SECONDS:-420}"
TEST_SECONDS="${GPU_CHECK_TEST_SECONDS:-60}"
PER_FAMILY="${GPU_CHECK_SUITES_PER_FAMILY:-6}"
STAGES=" ${GPU_CHECK_STAGES:-bringup launch copies diff device suites bench} "
read -r -a EXTRA <<< "${GPU_CHECK_PYTEST_ARGS:-}"
GRACE=10      # seconds a stage has to stop after its limit, before it is killed
MIN_STAGE=15  # a stage is skipped when the budget has less than this left
T0=$SECONDS

mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"
rm -f "$OUT/summary.txt" "$OUT/bench_gpu.json" "$OUT/logs.tar.gz"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")"
LOGS="$WORK/logs"
mkdir -p "$LOGS" "$WORK/plugins"
trap 'pack; rm -rf "$WORK"' EXIT
cd "$ROOT"

export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1  # only the plugins named below
export OPENBLAS_NUM_THREADS=1
export CUPY_CACHE_DIR="${CUPY_CACHE_DIR:-/tmp/minerva-cupy-cache}"

note() { echo "$*" | tee -a "$OUT/summary.txt"; }
pack() {  # the logs into $OUT/logs.tar.gz, replaced whole
    tar -czf "$WORK/logs.tar.gz" -C "$WORK" logs 2>/dev/null \
        && mv -f "$WORK/logs.tar.gz" "$OUT/logs.tar.gz"
}
wanted() { [[ "$STAGES" == *" $1 "* ]]; }

# ---- the helpers the stages run ------------------------------------------------------------
cat > "$WORK/bringup.py" <<'EOF'
"""Versions, minerva imported and a CPU op checked, then GPU 0 brought up and one op on it."""
import importlib.metadata, os, platform, sys, time
import numpy as np
print("python", platform.python_version(), "numpy", np.__version__)
for name in ("cupy-cuda13x", "torch", "numexpr"):
    try:
        print(name, importlib.metadata.version(name))
    except importlib.metadata.PackageNotFoundError:
        print(name, "not installed")
import minerva as mv
from minerva.common.logging import logging_backend
print("minerva from", os.path.dirname(mv.__file__), "logging via", logging_backend())
host = np.arange(12.0).reshape(3, 4)
result = (mv.array(host) @ mv.array(host).T + 1).to_numpy()
assert np.array_equal(result, host @ host.T + 1), result
print("bringup: cpu op ok (matmul, add)")
n_gpus = mv.get_gpu_device_count()
if n_gpus == 0:
    reason = "minerva counts 0 GPUs"
    try:
        mv.create_gpu_device(0)
    except mv.DeviceError as err:
        reason = str(err)
    expected = os.environ.get("GPU_CHECK_EXPECT_GPU") == "1"
    print("bringup: no GPU here:", reason)
    print("bringup:", "FAILED: nvidia-smi shows a GPU that minerva cannot use" if expected
          else "no GPU: a dry run, the GPU tests skip")
    mv.shutdown(timeout=30)
    sys.exit(1 if expected else 0)
gpu = mv.create_gpu_device(0)
print("gpu 0:", mv.device_info(gpu))
mv.set_device(gpu)
start = time.perf_counter()
values = mv.array(host.astype(np.float32))
total = (values * 2 + 1).sum(axis=0).to_numpy()
assert np.array_equal(total, (host.astype(np.float32) * 2 + 1).sum(axis=0)), total
print(f"bringup: {n_gpus} GPU(s); gpu op ok in {time.perf_counter() - start:.2f}s (first kernels)")
mv.shutdown(timeout=30)
EOF

cat > "$WORK/plugins/gpu_check_sample.py" <<'EOF'
"""Keeps a deterministic share of the collected tests: every test function runs, with at most
GPU_CHECK_SUITES_PER_FAMILY of its parametrized cases (0: all), those whose ids hash lowest."""
import os
import zlib


def pytest_collection_modifyitems(config, items):
    per_family = int(os.environ.get("GPU_CHECK_SUITES_PER_FAMILY", "0"))
    if per_family <= 0:
        return
    families = {}
    for item in items:
        families.setdefault(item.nodeid.split("[")[0], []).append(item)
    keep = set()
    for members in families.values():
        members = sorted(members, key=lambda item: zlib.crc32(item.nodeid.encode()))
        keep.update(item.nodeid for item in members[:per_family])
    config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in keep])
    items[:] = [item for item in items if item.nodeid in keep]
    print(f"gpu_check: {len(items)} tests of {len(families)} test functions kept")
EOF

# ---- running a stage -----------------------------------------------------------------------
status=0
stage() {  # stage NAME LIMIT COMMAND...: COMMAND under min(LIMIT, the budget left); one line
    local name=$1 limit=$2
    shift 2
    local left=$((BUDGET - (SECONDS - T0) - GRACE))
    if ((left < MIN_STAGE)); then
        note "$(printf '%-12s skipped: %ds of the %ds budget left' \
            "$name" $((left + GRACE)) "$BUDGET")"
        return 0
    fi
    STAGE_NAME=$name
    STAGE_T=$((limit < left ? limit : left))
    PER_TEST=""
    local start=$SECONDS
    "$@" > "$LOGS/$name.log" 2>&1
    local rc=$?
    local last
    last=$(grep -E "(passed|failed|skipped|deselected|errors?|no tests ran).* in [0-9.]+s" \
        "$LOGS/$name.log" | tail -n 1)
    [ -z "$last" ] && last=$(grep -v '^\s*$' "$LOGS/$name.log" | tail -n 1)
    ((rc == 124 || rc == 137)) && last="TIMED OUT; $last"
    local limits="${STAGE_T}s"
    ((STAGE_T < limit)) && limits="${STAGE_T}s (shortened from ${limit}s)"
    [ -n "$PER_TEST" ] && limits="$limits, ${PER_TEST}s a test"
    note "$(printf '%-12s exit %3d in %3ds of %s  %s' \
        "$name" "$rc" $((SECONDS - start)) "$limits" "$last")"
    ((rc != 0)) && status=1
    pack
    return 0
}
limited() {  # limited COMMAND...: COMMAND stopped (SIGINT, then SIGKILL) at the stage's limit
    timeout --signal=INT --kill-after="$GRACE" "$STAGE_T" "$@"
}
gpu_tests() {  # gpu_tests [VAR=value...] PYTEST-ARGS...: pytest -m gpu under the stage's limits
    PER_TEST=$((STAGE_T / 2 < TEST_SECONDS ? STAGE_T / 2 : TEST_SECONDS))
    local assignments=()
    while [[ $# -gt 0 && "$1" == [A-Z]*=* ]]; do assignments+=("$1"); shift; done
    limited env "${assignments[@]}" "$PY" -m pytest -p pytest_timeout -p no:cacheprovider \
        -q -rfE -m gpu --timeout "$PER_TEST" --junitxml "$LOGS/$STAGE_NAME.xml" \
        "${EXTRA[@]}" "$@"
}

# ---- the environment -----------------------------------------------------------------------
EXPECT_GPU=0
SEEN_GPU="no GPU"
if timeout 30 nvidia-smi -L > "$LOGS/nvidia-smi.txt" 2>&1 \
        && grep -q '^GPU ' "$LOGS/nvidia-smi.txt"; then
    EXPECT_GPU=1
    SEEN_GPU=$(grep -m1 '^GPU ' "$LOGS/nvidia-smi.txt")
    timeout 30 nvidia-smi >> "$LOGS/nvidia-smi.txt" 2>&1
fi
env | grep -E '^(MINERVA|GPU_CHECK|CUPY|CUDA|PYTHON|OUT)' | sort > "$LOGS/environment.txt"
note "gpu_check: $(date -u +%FT%TZ) on $(uname -n); budget ${BUDGET}s; stages:${STAGES% }"
note "gpu_check: nvidia-smi: $SEEN_GPU"

# ---- the stages, most valuable first -------------------------------------------------------
LAUNCH="long_dependent_chain or upload_read_at_once or bad_label or live_on_their_streams"
COPIES="copies_in_every_direction or gpu_to_gpu_path or two_physical_gpus or scalar_arrays_cross"

if wanted bringup; then
    stage bringup 30 limited env GPU_CHECK_EXPECT_GPU=$EXPECT_GPU "$PY" "$WORK/bringup.py"
    grep -E '^(python|cupy|torch|minerva|gpu 0|bringup: (cpu|no GPU here))' \
        "$LOGS/bringup.log" 2>/dev/null | sed 's/^/    /' | tee -a "$OUT/summary.txt"
fi
wanted launch && stage launch 45 gpu_tests tests/gpu/test_gpu.py -k "$LAUNCH"
wanted copies && stage copies 45 gpu_tests tests/gpu/test_gpu.py -k "$COPIES"
if wanted diff; then
    for n in 1 2; do
        stage "diff-${n}vgpu" $((n == 1 ? 60 : 45)) gpu_tests MINERVA_VIRTUAL_GPUS=$n \
            tests/gpu/test_gpu_differential.py
    done
fi
wanted device && stage device 90 gpu_tests tests/gpu/test_gpu.py -k "not ($LAUNCH) and not ($COPIES)"
if wanted suites; then
    stage suites 100 gpu_tests GPU_CHECK_SUITES_PER_FAMILY="$PER_FAMILY" \
        PYTHONPATH="$WORK/plugins:$PYTHONPATH" -p gpu_check_sample tests/gpu/test_gpu_suites.py
fi
if wanted bench; then
    stage bench 100 limited "$PY" tools/bench.py gpu --repeat 3 --json "$OUT/bench_gpu.json"
    BENCH_LINES="dependent chain|independent batch|^ *(minerva|raw cupy|pytorch eager) "
    grep -E "$BENCH_LINES|[a-z_]+ = [0-9]|completions:" "$LOGS/bench.log" 2>/dev/null \
        | sed 's/^/    /' | tee -a "$OUT/summary.txt"
fi

note "gpu_check: exit $status after $((SECONDS - T0))s of the ${BUDGET}s budget"
exit "$status"
