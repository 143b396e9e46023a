"""The harness: a registry of scenarios, timing helpers, and the command line."""
from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable

SCENARIOS: dict[str, Callable] = {}
MODULES = ("dispatch", "memory", "conv", "cnn_torch", "overlap", "steps", "autograd", "gpu",
           "trace", "jit", "fusion", "dist", "programs",
           "benchpress")


def scenario(name: str):
    """Register ``function(args) -> dict`` as scenario ``name``; the dict holds its figures
    (and ``ratios``: name -> value) for the JSON output."""
    def register(function):
        SCENARIOS[name] = function
        return function
    return register


def timed(function, repeat: int = 5, warmup: int = 1) -> float:
    """Median wall time in seconds of ``function()`` over ``repeat`` runs."""
    for _ in range(warmup):
        function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(functions: dict, repeat: int = 5, warmup: int = 1) -> dict:
    """Median seconds of each named function, run in turns so drift hits all alike."""
    for function in functions.values():
        for _ in range(warmup):
            function()
    samples = {name: [] for name in functions}
    for _ in range(repeat):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def table(title: str, rows: list[tuple], header: tuple) -> None:
    """Print an aligned table."""
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    print(f"\n== {title}")
    for row in (header, *rows):
        print("  ".join(str(x).rjust(w) for x, w in zip(row, widths)))


def check_goal(goals: dict, name: str, value: float, results: dict) -> None:
    """Record the ratio ``value`` as ``results[name]`` and print it against its goal
    ``goals[name]`` (a ratio it must not exceed)."""
    goal = goals[name]
    results[name] = value
    print(f"  {name}: {value:.3f}x (goal <= {goal}x) {'met' if value <= goal else 'MISSED'}")


def machine() -> dict:
    """What the figures were measured on."""
    import numpy
    return {"python": platform.python_version(), "numpy": numpy.__version__,
            "machine": platform.machine(), "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.uname().machine}


NOT_LOADED: dict[str, str] = {}
"""Scenario modules left out here, with the package each one misses."""


def _load_all() -> None:
    """Import every scenario module; one whose package is missing here is left out (its
    scenarios are unknown), so the others still run."""
    for module in MODULES:
        try:
            importlib.import_module(f"benchmarks.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"benchmarks.{module}":
                NOT_LOADED[module] = exc.name


def run_isolated(name: str, args) -> dict:
    """Run one scenario in a fresh interpreter (so what earlier scenarios imported and
    left on the heap cannot slow it down); its figures."""
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "bench.py")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        command = [sys.executable, script, name, "--repeat", str(args.repeat), "--json", out]
        if args.quick:
            command.append("--quick")
        subprocess.run(command, check=True)
        with open(out) as result:
            return json.load(result)[name]


def main(argv) -> int:
    """Run the scenarios named on the command line."""
    _load_all()
    parser = argparse.ArgumentParser(prog="bench.py", description=__doc__)
    parser.add_argument("scenarios", nargs="*", help=f"'all' or some of: {sorted(SCENARIOS)}")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per figure")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a try")
    parser.add_argument("--list", action="store_true", help="list the scenarios")
    args = parser.parse_args(argv)
    if args.list or not args.scenarios:
        print("\n".join(sorted(SCENARIOS)))
        return 0
    names = sorted(SCENARIOS) if args.scenarios == ["all"] else args.scenarios
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        missing = "".join(f"; {m} not loaded: no {p}" for m, p in sorted(NOT_LOADED.items()))
        parser.error(f"unknown scenario(s) {unknown}; choose from {sorted(SCENARIOS)}{missing}")
    results = {"machine": machine()}
    for name in names:
        results[name] = (SCENARIOS[name](args) if len(names) == 1
                         else run_isolated(name, args))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2, default=str)
    return 0
