"""minerva's benchmark harness: each scenario runs minerva and its baseline side by side in
one process and prints the ratios.

    python tools/bench.py dispatch            # one scenario
    python tools/bench.py all --json out.json # every scenario (each in a fresh interpreter)
    python tools/bench.py --list
"""
from __future__ import annotations

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")  # as minerva sets it (see minerva/__init__.py)
# Like their NumPy baselines, devices run on one thread unless a scenario says otherwise
# (cnn-torch and conv compare thread counts and set them explicitly).
os.environ.setdefault("MINERVA_CPU_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchmarks.harness import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
