"""benchpress: the NumPy programs of Benchpress (PyPI ``benchpress``, the suite Bohrium was
measured with), each run three ways in turns and compared (issue 26):

- ``numpy``: the program as published, under NumPy;
- ``minerva``: the same program by import swap: its ``import numpy`` (and those of the
  suite's ``util`` and of the helper modules beside it) give minerva;
- ``jit``: by import swap, with the program's loop body jitted (``mv.jit``) by a small
  adapter below, where the program has one.

The programs are read from the installed package at run time (``pip install
minerva[bench]``); nothing of Benchpress is copied here. Each program is executed as a
module with its size on the command line, and its ``main()`` called (after its adapter, in
the ``jit`` mode); the time is
the program's own measured region, from its ``bench.start()`` to its ``bench.stop()``
(minerva's work is waited for at both). At ``bench.stop()`` the arrays and numbers among
the caller's variables are its results: every run's must agree with NumPy's
(``check``, within ``TOLERANCE``).

Minerva runs on one CPU device of ``THREADS`` threads; NumPy on one core (its BLAS on one
thread, as every baseline of ``tools/bench.py``). Sizes: ``PROGRAMS`` (NumPy takes about a
second at each on the 2-core machine of doc/benchpress.md; ``--quick`` runs the tiny ones).
"""
from __future__ import annotations

import builtins
import dataclasses
import importlib.util
import os
import statistics
import sys
import time
import types
import warnings
from collections.abc import Callable
from unittest import mock

import numpy as np

import minerva as mv
from benchmarks.harness import check_goal, scenario, table

if importlib.util.find_spec("benchpress") is None:  # the harness leaves this scenario out
    raise ModuleNotFoundError("No module named 'benchpress'", name="benchpress")

GOALS = {"eager_median": 0.75, "eager_max": 1.2, "jit_median": 0.4}
ONLY_VARIABLE = "MINERVA_BENCHPRESS_ONLY"
"""An environment variable: a comma-separated list of program names runs only those
(``MINERVA_BENCHPRESS_ONLY=gauss,lu python tools/bench.py benchpress``)."""
MODES_VARIABLE = "MINERVA_BENCHPRESS_MODES"
"""An environment variable: a comma-separated list of modes; ``numpy`` and ``minerva``
always run, ``jit`` when it is named or the variable unset (``MINERVA_BENCHPRESS_MODES=
minerva python tools/bench.py benchpress`` times the eager runs alone)."""
THREADS = 2
SEED = 42
TOLERANCE = 1e-6
"""Results agree when ``|minerva - numpy| <= TOLERANCE * (|numpy| + max |numpy|)`` element
by element (NaNs at the same places): a relative error of 1e-6 of the array's scale."""


def benchmarks_folder() -> str:
    """The folder of the installed package's programs (``benchpress/benchmarks``), found
    without importing the package (its ``__init__`` needs ``pkg_resources``)."""
    spec = importlib.util.find_spec("benchpress")
    return os.path.join(spec.submodule_search_locations[0], "benchmarks")


# ---- the adapters: which function of a program is its loop body, jitted -------------------

def _jit_names(*names) -> Callable:
    """An adapter jitting the program's functions ``names`` in place."""
    def adapt(ns: dict) -> None:
        for name in names:
            ns[name] = mv.jit(ns[name])
    return adapt


def _jit_play(ns: dict) -> None:
    """gameoflife: ``play(state, iterations, ...)`` as ``iterations`` jitted one-step plays."""
    play = ns["play"]
    step = mv.jit(lambda state, version: play(state, 1, version, False))

    def play_jitted(state, iterations, version=1, visualize=False):
        for _ in range(iterations):
            step(state, version)
        return state
    ns["play"] = play_jitted


NBODY_KEYS = ("m", "x", "y", "z", "vx", "vy", "vz")


def _jit_move(ns: dict) -> None:
    """nbody: ``move(galaxy, dt)`` jitted over the galaxy's arrays (a dict is no argument)."""
    move = ns["move"]
    cache = {}

    def move_jitted(galaxy, dt):
        if dt not in cache:
            cache[dt] = mv.jit(lambda *arrays: move(dict(zip(NBODY_KEYS, arrays)), dt))
        cache[dt](*(galaxy[key] for key in NBODY_KEYS))
    ns["move"] = move_jitted


DO_WHILE = "do_while"
"""The adapter of programs whose loop body goes to ``bench.do_while`` (Bohrium's hook for
it): the body is jitted there."""


@dataclasses.dataclass(frozen=True)
class Program:
    """One Benchpress program: its size argument at full and tiny scale, the helper modules
    beside it that it imports, and its jit adapter (None: no loop body to jit)."""
    size: str
    tiny: str
    jit: Callable | str | None = None


PROGRAMS = {
    "black_scholes": Program("1000000*13", "1000*3", _jit_names("CND")),
    "convolve": Program("1000*20*2*35", "20*3*2*1"),
    "convolve1d": Program("1000000*100*70", "1000*10*2"),
    "galton_bean_machine": Program("400000*50", "1000*10"),
    "gameoflife": Program("1000*1000*75*1", "20*20*3*1", _jit_play),
    "gauss": Program("1000", "20"),
    "heat_equation": Program("1000*1000*150", "20*20*3", DO_WHILE),
    "lattice_boltzmann_D2Q9": Program("400*400*30", "20*20*3", DO_WHILE),
    "leibnitz_pi": Program("10000000*4", "1000*3", _jit_names("leibnitz_pi")),
    "lu": Program("1000", "20"),
    "magnetic_field_extrapolation": Program("24*24*11", "8*8*2", _jit_names("calcB")),
    "montecarlo_pi": Program("10000000*2", "1000*3"),
    "nbody": Program("1000*28", "20*3", _jit_move),
    "quasicrystal": Program("5*30*500*220", "3*5*20*3"),
    "rosenbrock": Program("10000000*2", "1000*3", _jit_names("rosen")),
    "shallow_water": Program("1000*1000*9", "20*20*3", DO_WHILE),
    "snakes_and_ladders": Program("1000*30", "20*5"),
}
"""The 17 programs that run on NumPy 2.x. Not here: ``nbody_nice`` (``numpy.float``),
``xraysim`` (``numpy.int``), ``wisp`` (slices by a float: Python 2 only)."""


# ---- running a program ---------------------------------------------------------------------

class Clock:
    """The measured region of one run (``bench.start()`` to ``bench.stop()``) and the
    results found among the variables of ``bench.stop()``'s caller."""

    def __init__(self, module):
        self.module = module
        self.began = self.seconds = None
        self.results = {}

    def start(self) -> None:
        """Begin the region once the work issued before it is done."""
        self._settle()
        self.began = time.perf_counter()

    def stop(self, variables: dict) -> None:
        """End the region once the work issued in it is done; keep ``variables``' values."""
        self._settle()
        self.seconds = time.perf_counter() - self.began
        self.results = {name: host(value) for name, value in variables.items()
                        if not name.startswith("_")}
        self.results = {k: v for k, v in self.results.items() if v is not None}

    def _settle(self) -> None:
        if self.module is mv:
            mv.wait_for_all()


def host(value):
    """``value`` as NumPy values: arrays and numbers, through dicts, lists and tuples;
    None for anything else."""
    if isinstance(value, (list, tuple)):
        items = [host(v) for v in value]
        return items if items and all(v is not None for v in items) else None
    if isinstance(value, dict):
        items = {k: host(v) for k, v in value.items()}
        return {k: v for k, v in items.items() if v is not None} or None
    if isinstance(value, (mv.NArray, np.ndarray, np.generic, int, float, complex)) \
            and not isinstance(value, bool):
        array = np.asarray(value)
        return array.copy() if array.dtype.kind in "biufc" else None
    return None


def _benchmark_class(base: type, clock: Clock, jitted: bool) -> type:
    """The suite's ``util.Benchmark`` timed by ``clock``, printing nothing; with ``jitted``,
    ``do_while`` jits the loop body it is given."""
    class Timed(base):
        def start(self):
            clock.start()

        def stop(self):
            clock.stop(sys._getframe(1).f_locals)

        def pprint(self):
            pass

        def do_while(self, func, niters, *args, **kwargs):
            if not jitted:
                return super().do_while(func, niters, *args, **kwargs)
            return _do_while(mv.jit(func), niters, args)
    return Timed


def _do_while(body, niters: int, args: tuple) -> int:
    """Call ``body(*args)`` ``niters`` times, or until it returns a false value."""
    for i in range(niters):
        cond = body(*args)
        if cond is not None and not cond:
            return i + 1
    return niters


class Loader:
    """The modules of one run: the program, the suite's ``util`` and the helper modules
    beside the program, each executed from the installed source with ``import numpy``
    giving ``module`` (NumPy or minerva). ``numpy_force`` (Bohrium's own NumPy) is not
    found, as without Bohrium."""

    def __init__(self, folder: str, module, clock: Clock, jitted: bool):
        self.folder, self.module, self.clock, self.jitted = folder, module, clock, jitted
        self.builtins = dict(vars(builtins), __import__=self._import)
        self.loaded = {}

    def _import(self, name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and name == "numpy":
            return self.module
        if level == 0 and name == "numpy_force":
            raise ImportError("No module named 'numpy_force'")
        if level == 0 and name == "benchpress.benchmarks":
            return types.SimpleNamespace(util=self.util())
        if level == 0 and os.path.isfile(os.path.join(self.folder, name + ".py")):
            return self.load(name)
        return builtins.__import__(name, globals, locals, fromlist, level)

    def util(self) -> types.ModuleType:
        """The suite's ``util``, its ``Benchmark`` timed by the run's clock."""
        if "util" not in self.loaded:
            path = os.path.join(benchmarks_folder(), "util.py")
            util = self.loaded["util"] = self.execute(path, "benchpress_util")
            util.Benchmark = _benchmark_class(util.Benchmark, self.clock, self.jitted)
        return self.loaded["util"]

    def load(self, name: str) -> types.ModuleType:
        """A helper module of the program's folder, executed once per run."""
        if name not in self.loaded:
            self.loaded[name] = self.execute(os.path.join(self.folder, name + ".py"), name)
        return self.loaded[name]

    def execute(self, path: str, name: str) -> types.ModuleType:
        """A fresh module named ``name`` from the source at ``path``."""
        module = types.ModuleType(name)
        module.__file__ = path
        module.__builtins__ = self.builtins
        with open(path, "rb") as src:  # bytes: the source's coding declaration applies
            code = compile(src.read(), path, "exec")
        exec(code, vars(module))  # noqa: S102  (the benchmark's own program)
        return module


def run_program(name: str, mode: str, size: str) -> Clock:
    """Run program ``name`` once (``mode``: 'numpy', 'minerva' or 'jit'); its clock."""
    program = PROGRAMS[name]
    module = np if mode == "numpy" else mv
    clock = Clock(module)
    folder = os.path.join(benchmarks_folder(), name, "python_numpy")
    loader = Loader(folder, module, clock, jitted=mode == "jit")
    path = os.path.join(folder, name + ".py")
    np.random.seed(SEED)
    mv.random.seed(SEED)
    with mock.patch.object(sys, "argv", [path, size]), np.errstate(all="ignore"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # nbody sets strides
        ns = vars(loader.execute(path, "benchpress_program"))
        if mode == "jit" and callable(program.jit):
            program.jit(ns)
        if "main" in ns:
            ns["main"]()
    if clock.seconds is None:
        raise RuntimeError(f"{name} never called bench.stop()")
    return clock


# ---- agreement ---------------------------------------------------------------------------

def disagreements(want, got, where: str = "") -> list[str]:
    """Where the results ``got`` differ from NumPy's ``want`` (beyond ``TOLERANCE``)."""
    if isinstance(want, dict):
        return [d for k in want for d in disagreements(want[k], got.get(k), f"{where}.{k}")
                ] if isinstance(got, dict) else [f"{where}: missing"]
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return [f"{where}: missing"]
        return [d for i, (w, g) in enumerate(zip(want, got))
                for d in disagreements(w, g, f"{where}[{i}]")]
    if not isinstance(got, np.ndarray) or got.shape != want.shape:
        return [f"{where}: {None if got is None else got.shape} for {want.shape}"]
    if not _close(want, got):
        return [f"{where}: max error {np.nanmax(np.abs(got - want.astype(got.dtype)))}"]
    return []


def _close(want: np.ndarray, got: np.ndarray) -> bool:
    if want.dtype.kind not in "fc":
        return bool(np.array_equal(want, got))
    finite = np.isfinite(want)
    scale = np.max(np.abs(want[finite]), initial=0.0)
    with np.errstate(all="ignore"):
        near = np.abs(got - want) <= TOLERANCE * (np.abs(want) + scale)
    return bool(np.all(np.where(finite, near, np.isnan(want) & np.isnan(got)
                                | (want == got))))


def check(name: str, want: Clock, got: Clock) -> list[str]:
    """The disagreements of run ``got`` of program ``name`` with NumPy's run ``want``."""
    return [f"{name}{d}" for d in disagreements(want.results, got.results)]


# ---- the scenario ------------------------------------------------------------------------

MODES = ("numpy", "minerva", "jit")


def measure(name: str, size: str, repeat: int) -> tuple[dict, dict]:
    """Median seconds of each mode of program ``name`` at ``size``, run in turns after one
    round of warm-up, and each mode's last clock."""
    asked = [m for m in os.environ.get(MODES_VARIABLE, "").split(",") if m]
    modes = [m for m in MODES if m != "jit" or (PROGRAMS[name].jit is not None
                                                  and (not asked or m in asked))]
    samples = {mode: [] for mode in modes}
    last = {}
    for turn in range(repeat + 1):
        for mode in modes:
            last[mode] = run_program(name, mode, size)
            if turn:
                samples[mode].append(last[mode].seconds)
    return {mode: statistics.median(s) for mode, s in samples.items()}, last


def _row(name: str, size: str, times: dict, last: dict) -> tuple:
    wrong = [d for mode in times if mode != "numpy" for d in check(name, last["numpy"],
                                                                     last[mode])]
    ratio = {mode: times[mode] / times["numpy"] for mode in times}
    jit = (f"{times['jit']:.3f}", f"{ratio['jit']:.2f}x") if "jit" in times else ("-", "-")
    return ((name, size, f"{times['numpy']:.3f}", f"{times['minerva']:.3f}",
             f"{ratio['minerva']:.2f}x", *jit, "yes" if not wrong else "NO"), ratio, wrong)


def selected() -> dict:
    """The programs to run: those ``ONLY_VARIABLE`` names (all when it is unset); a name
    not in ``PROGRAMS`` is an error."""
    names = [n for n in os.environ.get(ONLY_VARIABLE, "").split(",") if n]
    unknown = sorted(set(names) - set(PROGRAMS))
    if unknown:
        raise ValueError(f"{ONLY_VARIABLE}: no program {unknown}; choose from {sorted(PROGRAMS)}")
    return {n: p for n, p in PROGRAMS.items() if not names or n in names}


@scenario("benchpress")
def benchpress(args) -> dict:
    """Every program of ``PROGRAMS`` with NumPy, by import swap, and with its loop body
    jitted; the time ratios against NumPy and the goals of issue 26."""
    mv.set_device(mv.create_cpu_device(threads=THREADS))
    rows, eager, jitted, failed, wrong = [], {}, {}, {}, []
    for name, program in selected().items():
        size = program.tiny if args.quick else program.size
        try:
            times, last = measure(name, size, args.repeat)
        except Exception as exc:  # noqa: BLE001  (a program minerva cannot run: say so)
            failed[name] = f"{type(exc).__name__}: {exc}"
            rows.append((name, size, "-", "-", "-", "-", "-", "fails"))
            continue
        row, ratio, errors = _row(name, size, times, last)
        rows.append(row)
        wrong += errors
        eager[name] = ratio["minerva"]
        if "jit" in ratio:
            jitted[name] = ratio["jit"]
    _report(rows, eager, jitted, failed, wrong)
    return _figures(eager, jitted, failed, wrong)


def _report(rows, eager, jitted, failed, wrong) -> None:
    table(f"benchpress: {len(rows)} programs, seconds of each one's measured region "
          f"(minerva: one CPU device of {THREADS} threads)", rows,
          ("program", "size", "numpy", "minerva", "ratio", "jit", "jit ratio", "agree"))
    for name, error in failed.items():
        print(f"  {name} fails: {error}")
    for line in wrong:
        print(f"  disagrees: {line}")
    print(f"  {len(eager)} of {len(rows)} run; {len(eager) - len({w.split('.')[0] for w in wrong})}"
          f" agree with NumPy (tolerance {TOLERANCE} of the scale)")


def _figures(eager, jitted, failed, wrong) -> dict:
    results = {"ratios": {**{f"eager {k}": v for k, v in eager.items()},
                          **{f"jit {k}": v for k, v in jitted.items()}},
               "failed": failed, "disagree": wrong}
    figures = {"eager_median": statistics.median(eager.values()) if eager else float("nan"),
               "eager_max": max(eager.values(), default=float("nan")),
               "jit_median": statistics.median(jitted.values()) if jitted else float("nan")}
    for goal, value in figures.items():
        check_goal(GOALS, goal, value, results)
    return results
