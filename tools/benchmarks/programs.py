"""programs, iterate and indexing: whole NumPy programs by import swap, Python-level loops
over arrays, and the indexing lines of the corpus, each against the same code under plain
NumPy.

``programs`` runs every program of ``tests/numpy/programs/`` (the corpus the test suite
compares with NumPy) once with ``import numpy as np`` and once with ``import minerva as np``,
in turns, and prints the time ratio of each. ``iterate`` times ``for v in x`` over a
2000-element array and ``x[i]`` in a Python loop. ``indexing`` times the corpus's mask and
integer-array lines (mandelbrot's ``Z[I] = Z[I] ** 2 + C[I]``, spiral_net's
``dscores[range(n), y] -= 1``, a pivot's row swap, ``fill_diagonal``) and counts minerva's
Python calls per line (cProfile, builtins included).
"""
from __future__ import annotations

import cProfile
import os
import pstats

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


def _indexing_lines(module):
    """The corpus's indexing lines over ``module``'s arrays: name -> a callable running one."""
    rng = np.random.default_rng(0)
    z = module.asarray((rng.standard_normal((50, 60)) + 1j * rng.standard_normal((50, 60)))
                       * 0.1)   # small: z**2 + c stays bounded
    c, inside = z * 0.5, abs(z) < 0.15
    probs = module.asarray(rng.random((180, 3)))
    y = module.asarray((np.arange(180) % 3).astype(np.uint8))
    square, p = module.asarray(rng.random((8, 8))), module.argmax(module.arange(4))

    def mask_step():
        z[inside] = z[inside] ** 2 + c[inside]

    def pick_step():
        probs[range(180), y] -= 1

    def swap():
        square[[1, p]] = square[[p, 1]]
    return {"Z[I] = Z[I]**2 + C[I]": mask_step, "dscores[range(n), y] -= 1": pick_step,
            "A[[k, p]] = A[[p, k]]": swap,
            "fill_diagonal(r2, inf)": lambda: module.fill_diagonal(square, np.inf)}


def _calls(run) -> float:
    """Python calls of one ``run()`` (cProfile, builtins included), over 20 runs."""
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(20):
        run()
    profile.disable()
    return pstats.Stats(profile).total_calls / 20


@scenario("indexing")
def indexing(args) -> dict:
    """The corpus's mask and integer-array indexing lines against NumPy's."""
    mv.init()
    ours, theirs = _indexing_lines(mv), _indexing_lines(np)
    rows, ratios = [], {}
    for name in ours:
        times = interleaved({"numpy": _repeated(theirs[name]),
                             "minerva": _repeated(ours[name])}, args.repeat)
        ratio = ratios[name] = times["minerva"] / times["numpy"]
        rows.append((name, f"{times['numpy'] * 1e4:.2f}", f"{times['minerva'] * 1e4:.2f}",
                     f"{ratio:.1f}x", f"{_calls(ours[name]):.0f}"))
    table("indexing: the corpus's lines, us per line", rows,
          ("line", "numpy us", "minerva us", "ratio", "calls"))
    return {"ratios": ratios}


def _repeated(line, n: int = 100):
    """``line`` run ``n`` times, then the runtime waited for (one timed call)."""
    def run():
        for _ in range(n):
            line()
        mv.wait_for_all()
    return run
