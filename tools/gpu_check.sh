#!/usr/bin/env bash
# minerva's GPU check, for a machine with one NVIDIA GPU and no package index, in about 8
# minutes. Run it from the repository root:   bash tools/gpu_check.sh
#
#   0. install minerva's other dependencies (structlog, sortedcontainers, threadpoolctl) and
#      the test tools (pytest, pytest-timeout, hypothesis and their dependencies) from the
#      wheel folder $WHEELS (default .whl/) into $SITE; stop with a clear message when
#      something is missing
#   1. the device layer's tests on the GPU:     pytest -m gpu tests/test_gpu.py
#   2. the differential programs on 1 and on 2 virtual GPUs (MINERVA_VIRTUAL_GPUS):
#                                               pytest -m gpu tests/test_gpu_differential.py
#   3. tools/bench.py gpu (per-op cost and an MNIST CNN step against raw CuPy and PyTorch
#      eager)
#   4. only when asked for (GPU_CHECK_STAGES="... suites"): the op, NN, contract, error and
#      lifecycle suites on the GPU (tests/test_gpu_suites.py; about 2,000 tests that compile
#      kernels on a cold cache: budget 10 minutes more)
#
# GPU_CHECK_STAGES picks the stages (default "device diff bench"), e.g. to rerun one.
# The machine needs python3 (3.12) with numpy, cupy-cuda13x and (for the comparison) torch.
# doc/devices.md ("Running the GPU checks") says how to build the wheel folder and how to
# ship it with the device runner (carry=[".whl"]). Each stage has its own time limit
# (GPU_CHECK_*_SECONDS). Results go to $OUT (default ./gpu_check_out): summary.txt,
# environment.txt, nvidia-smi.txt, one log and junit file per test stage, bench.log,
# bench_gpu.json. Exit status: 0 when every stage that ran passed; 3 when the wheels are
# missing.
set -uo pipefail

PY="${PYTHON:-python3}"
OUT="${OUT:-$PWD/gpu_check_out}"
WHEELS="${WHEELS:-$PWD/.whl}"
SITE="${SITE:-/tmp/minerva-site}"
DEVICE_SECONDS="${GPU_CHECK_DEVICE_SECONDS:-170}"
DIFF_SECONDS="${GPU_CHECK_DIFF_SECONDS:-90}"
BENCH_SECONDS="${GPU_CHECK_BENCH_SECONDS:-110}"
SUITES_SECONDS="${GPU_CHECK_SUITES_SECONDS:-600}"
STAGES=" ${GPU_CHECK_STAGES:-device diff bench} "
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }
T0=$SECONDS

# ---- 0. dependencies from the wheel folder --------------------------------------------------
NEEDED="structlog sortedcontainers threadpoolctl pytest pytest_timeout hypothesis"
mkdir -p "$SITE"
if compgen -G "$WHEELS/*.whl" > /dev/null; then
    if ! "$PY" -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" \
            "$WHEELS"/*.whl > "$OUT/install.log" 2>&1; then
        echo "pip could not install the wheels (see install.log); unpacking them" >> "$OUT/install.log"
        "$PY" - "$WHEELS" "$SITE" >> "$OUT/install.log" 2>&1 <<'EOF'
import glob, sys, zipfile
for wheel in sorted(glob.glob(sys.argv[1] + "/*.whl")):
    zipfile.ZipFile(wheel).extractall(sys.argv[2])
    print("unpacked", wheel)
EOF
    fi
fi
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1  # only the plugins named below
export OPENBLAS_NUM_THREADS=1
export CUPY_CACHE_DIR="${CUPY_CACHE_DIR:-/tmp/minerva-cupy-cache}"
missing=$("$PY" - $NEEDED <<'EOF'
import importlib.util, sys
print(" ".join(n for n in sys.argv[1:] if importlib.util.find_spec(n) is None))
EOF
)
if [ -n "$missing" ]; then
    note "gpu_check: missing Python packages: $missing"
    note "  put their wheels (for CPython 3.12, manylinux x86_64) in $WHEELS; on a machine"
    note "  with a package index:  python3 -m pip download --only-binary=:all: \\"
    note "    --python-version 3.12 --implementation cp --abi cp312 \\"
    note "    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d .whl \\"
    note "    structlog sortedcontainers threadpoolctl pytest pytest-timeout hypothesis"
    note "  (doc/devices.md, 'Running the GPU checks')"
    exit 3
fi

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi not available" > "$OUT/nvidia-smi.txt"
timeout 60 "$PY" - > "$OUT/environment.txt" 2>&1 <<'EOF'
import platform, numpy
print("python", platform.python_version(), "numpy", numpy.__version__)
try:
    import cupy
    rt = cupy.cuda.runtime
    print("cupy", cupy.__version__, "runtime", rt.runtimeGetVersion(), "driver", rt.driverGetVersion())
    print("gpus", rt.getDeviceCount(), rt.getDeviceProperties(0)["name"])
except Exception as exc:
    print("cupy/gpu problem:", type(exc).__name__, exc)
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.cuda.is_available())
except Exception as exc:
    print("torch problem:", type(exc).__name__, exc)
import minerva as mv
print("minerva gpus", mv.get_gpu_device_count())
EOF
cat "$OUT/environment.txt"
note "gpu_check: $(grep -E '^(python|cupy|gpus|torch|minerva)' "$OUT/environment.txt" | tr '\n' ';')"

status=0
stage() {  # stage NAME SECONDS COMMAND...: run one stage with its time limit, note the result
    local name=$1 seconds=$2
    shift 2
    local start=$SECONDS
    timeout --signal=INT --kill-after=15 "$seconds" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    local last
    last=$(grep -E "passed|failed|error|skipped|no tests ran" "$OUT/$name.log" | tail -n 1)
    [ "$rc" -eq 124 ] && last="TIMED OUT after ${seconds}s; $last"
    note "$(printf '%-14s exit %3d in %4ds  %s' "$name" "$rc" $((SECONDS - start)) "$last")"
    [ "$rc" -ne 0 ] && status=$rc
    return 0
}
PYTEST=("$PY" -m pytest -p pytest_timeout -p no:cacheprovider -q -rfE -m gpu --timeout 120)

# ---- 1. the device layer ---------------------------------------------------------------------
if [[ "$STAGES" == *" device "* ]]; then
    stage device "$DEVICE_SECONDS" "${PYTEST[@]}" --junitxml "$OUT/device.xml" tests/test_gpu.py
fi

# ---- 2. the differential programs on 1 and 2 virtual GPUs ---------------------------------------
if [[ "$STAGES" == *" diff "* ]]; then
    for n in 1 2; do
        stage "diff-${n}vgpu" "$DIFF_SECONDS" env MINERVA_VIRTUAL_GPUS=$n "${PYTEST[@]}" \
            --junitxml "$OUT/diff-${n}vgpu.xml" tests/test_gpu_differential.py
    done
fi

# ---- 3. the benchmark -----------------------------------------------------------------------
if [[ "$STAGES" == *" bench "* ]]; then
    stage bench "$BENCH_SECONDS" "$PY" tools/bench.py gpu --repeat 3 --json "$OUT/bench_gpu.json"
    grep -E "dependent chain|independent batch|^ *(minerva|raw cupy|pytorch eager) |[a-z_]+ = [0-9]|completions:" \
        "$OUT/bench.log" | sed 's/^/    /' | tee -a "$SUMMARY"
fi

# ---- 4. the long suites, on request ----------------------------------------------------------
if [[ "$STAGES" == *" suites "* ]]; then
    stage suites "$SUITES_SECONDS" "${PYTEST[@]}" --junitxml "$OUT/suites.xml" \
        tests/test_gpu_suites.py
fi

note "gpu_check: exit $status after $((SECONDS - T0))s"
exit "$status"
