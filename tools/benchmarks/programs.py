"""programs and iterate: whole NumPy programs by import swap, and Python-level loops over
arrays, each against the same code under plain NumPy.

``programs`` runs every program of ``tests/numpy/programs/`` (the corpus the test suite
compares with NumPy) once with ``import numpy as np`` and once with ``import minerva as np``,
in turns, and prints the time ratio of each. ``iterate`` times ``for v in x`` over a
2000-element array and ``x[i]`` in a Python loop.
"""
from __future__ import annotations

import os

import numpy as np

import minerva as mv
from benchmarks.harness import interleaved, scenario, table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROGRAMS = os.path.join(ROOT, "tests", "numpy", "programs")


def _program(name: str, module: str):
    """A callable running program ``name`` with ``np`` bound to ``module``."""
    with open(os.path.join(PROGRAMS, name + ".py"), encoding="utf-8") as src:
        source = src.read()
    if module != "numpy":
        source = source.replace("import numpy as np", f"import {module} as np")
    code = compile(source, name + ".py", "exec")

    def run():
        exec(code, {"__name__": f"program_{name}"})
        mv.wait_for_all()
    return run


def program_names() -> list[str]:
    """Every program of the corpus, sorted."""
    return sorted(f[:-3] for f in os.listdir(PROGRAMS) if f.endswith(".py"))


@scenario("programs")
def programs(args) -> dict:
    """Each corpus program by import swap against the same file under NumPy."""
    mv.init()
    rows, ratios = [], {}
    for name in program_names():
        try:
            times = interleaved({"numpy": _program(name, "numpy"),
                                 "minerva": _program(name, "minerva")}, args.repeat)
        except Exception as exc:  # a program minerva cannot run yet: say so, go on
            rows.append((name, "-", "-", f"fails: {type(exc).__name__}"))
            continue
        ratios[name] = times["minerva"] / times["numpy"]
        rows.append((name, f"{times['numpy'] * 1e3:.1f}", f"{times['minerva'] * 1e3:.1f}",
                     f"{ratios[name]:.2f}x"))
    table("programs: each by import swap vs NumPy (goal <= 3x)", rows,
          ("program", "numpy ms", "minerva ms", "ratio"))
    return {"ratios": ratios}


def _iterate(module, n: int):
    x = module.arange(n, dtype=module.float64)
    if module is mv:
        x.wait()

    def loop():
        total = 0.0
        for v in x:
            total += v
        return float(total)
    return loop


def _index(module, n: int):
    x = module.arange(n, dtype=module.float64)
    if module is mv:
        x.wait()

    def loop():
        total = 0.0
        for i in range(n):
            total += x[i]
        return float(total)
    return loop


@scenario("iterate")
def iterate(args) -> dict:
    """``for v in x`` and ``x[i]`` in a Python loop over 2000 elements (goal <= 10x)."""
    mv.init()
    n = 2000
    rows, ratios = [], {}
    for what, make in (("for v in x", _iterate), ("x[i] in a loop", _index)):
        times = interleaved({"numpy": make(np, n), "minerva": make(mv, n)}, args.repeat)
        ratio = ratios[what] = times["minerva"] / times["numpy"]
        rows.append((what, f"{times['numpy'] * 1e3:.2f}", f"{times['minerva'] * 1e3:.2f}",
                     f"{ratio:.1f}x"))
    table(f"iterate: {n} elements, Python-level loops", rows,
          ("loop", "numpy ms", "minerva ms", "ratio"))
    return {"ratios": ratios}
