#!/usr/bin/env bash
# minerva's GPU checks, for a machine with one NVIDIA GPU and no package registry:
#   1. pytest -m gpu          (every GPU test; about 3 minutes at most)
#   2. tools/bench.py gpu     (per-op overhead, MNIST CNN step vs raw CuPy and PyTorch)
# in under 5 minutes. Run it from the repository root:   bash tools/gpu_check.sh
#
# The machine needs python3 (3.12) with numpy, cupy-cuda13x and torch. The other wheels
# (sortedcontainers, structlog, threadpoolctl, pytest, pytest-timeout, hypothesis and their
# dependencies) are carried in .whl/ at the repository root; doc/devices.md has the command
# that downloads them. Results go to $OUT (default ./gpu_check_out): environment.txt,
# nvidia-smi.txt, pytest.log, junit.xml, bench.log, bench_gpu.json, summary.txt.
# Exit status: 0 when the tests passed and the benchmark ran.
set -uo pipefail

PY="${PYTHON:-python3}"
OUT="${OUT:-$PWD/gpu_check_out}"
TEST_SECONDS="${GPU_CHECK_TEST_SECONDS:-200}"
BENCH_SECONDS="${GPU_CHECK_BENCH_SECONDS:-80}"
mkdir -p "$OUT"

if compgen -G ".whl/*.whl" > /dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
    export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
    echo "note: no .whl/ folder; using the packages python3 already has" >&2
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
export OPENBLAS_NUM_THREADS=1
export CUPY_CACHE_DIR="${CUPY_CACHE_DIR:-/tmp/minerva-cupy-cache}"

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi not available" > "$OUT/nvidia-smi.txt"
"$PY" - > "$OUT/environment.txt" 2>&1 <<'EOF'
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

start=$SECONDS
timeout --signal=INT --kill-after=10 "$TEST_SECONDS" \
    "$PY" -m pytest -m gpu -q -p no:cacheprovider -rfE --timeout 120 --continue-on-collection-errors \
    --junitxml "$OUT/junit.xml" tests 2>&1 | tee "$OUT/pytest.log"
tests_rc=${PIPESTATUS[0]}
tests_s=$((SECONDS - start))

start=$SECONDS
timeout --signal=INT --kill-after=10 "$BENCH_SECONDS" \
    "$PY" tools/bench.py gpu --repeat 3 --json "$OUT/bench_gpu.json" 2>&1 | tee "$OUT/bench.log"
bench_rc=${PIPESTATUS[0]}
bench_s=$((SECONDS - start))

{
    echo "pytest -m gpu: exit $tests_rc in ${tests_s}s ($(tail -n 1 "$OUT/pytest.log"))"
    echo "bench.py gpu:  exit $bench_rc in ${bench_s}s"
    grep -E "skipped: no GPU|minerva/" "$OUT/bench.log" || true
} | tee "$OUT/summary.txt"

if [ "$tests_rc" -ne 0 ]; then exit "$tests_rc"; fi
exit "$bench_rc"
