"""Public-style NumPy programs run unmodified by import swap (``import minerva as np``)
must give NumPy's numbers. Each program in ``programs/`` is plain NumPy code written in
the idioms of a well-known public NumPy program (its docstring names which); it runs
once with NumPy and once with minerva on every engine (and one on two devices), and
every number of its ``RESULT`` must match — values, dtypes, shapes and Python types —
exactly, since on CPU devices every kernel is NumPy's own.

The corpus stands for what NumPy users write, not for what minerva already does: a
program that minerva cannot run yet is marked ``xfail`` (strict) with its first failure,
so that the mark must go once minerva runs it."""
from __future__ import annotations

import math
import os

import numpy
import pytest

import minerva as mv
from tests.conftest import start_engine

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")

# Each with what it is in the style of (its docstring says more).
PROGRAMS = [
    # neural networks
    "spiral_net",             # CS231n: a two-layer net on spiral data
    "logistic_regression",    # tutorials: batch gradient descent
    "mlp_sgd",                # an MLP with in-place SGD through a parameter list
    "min_char_rnn",           # Karpathy's min-char-rnn
    "pico_gpt",               # Jay Mody's picoGPT: a tiny GPT-2 forward pass and decoding
    # simulations and stencils
    "game_of_life",           # Rougier, "From Python to NumPy": slices and np.roll
    "heat_equation",          # benchpress heat_equation: Jacobi, red-black, explicit heat
    "nbody",                  # benchpress nbody: pairwise forces, leapfrog
    "mandelbrot",             # Rougier, "From Python to NumPy": escape time by masks
    "monte_carlo",            # benchpress montecarlo_pi / black_scholes: paths, bootstrap
    # numerical methods
    "rk4_ode",                # course notes: RK4 on Lotka-Volterra, Lorenz, y' = Ay
    "linear_solvers",         # textbooks: Gaussian elimination, LU, CG, power iteration
    "numerical_methods",      # course notes: Newton, bisection, Simpson, polyfit, interp
    # classic machine learning from scratch
    "kmeans",                 # tutorials: k-means++ and Lloyd's iterations
    "pca_regression",         # tutorials: PCA by cov/eigh and svd, lstsq, ridge
    "naive_bayes_adaboost",   # ML-From-Scratch: Gaussian naive Bayes, AdaBoost stumps
    "softmax_regression",     # UFLDL: softmax regression with a gradient check
    # exercises, images, text and data
    "numpy_exercises",        # Rougier, "100 NumPy exercises"
    "image_processing",       # OpenCV-Python tutorials: blur, Sobel, equalization, Otsu
    "bag_of_words",           # text mining: vocabulary, document-term matrix, TF-IDF
    "groupby_table",          # "group by without pandas": loadtxt, reduceat, split
    "records_dates",          # NumPy's user guide: genfromtxt, structured, datetime64
]

# The first failure of each program minerva cannot run yet.
XFAIL: dict = {}


def run(name: str, module: str) -> dict:
    """Execute program ``name`` with ``import numpy as np`` bound to ``module``."""
    with open(os.path.join(HERE, name + ".py"), encoding="utf-8") as src:
        source = src.read()
    if module != "numpy":
        assert "import numpy as np" in source
        source = source.replace("import numpy as np", f"import {module} as np")
    scope = {"__name__": f"program_{name}"}
    with numpy.printoptions(), numpy.errstate():
        exec(compile(source, os.path.join(HERE, name + ".py"), "exec"), scope)
    return scope["RESULT"]


def assert_same(got, want, where: str = "RESULT") -> None:
    """``got`` is ``want``: the same containers, Python types, and arrays (or NumPy
    scalars) of the same dtype, shape and values."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), where
        for key, value in want.items():
            assert_same(got[key], value, f"{where}[{key!r}]")
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), where
        for i, (mine, value) in enumerate(zip(got, want)):
            assert_same(mine, value, f"{where}[{i}]")
    elif isinstance(want, (numpy.ndarray, numpy.generic)):
        mine = numpy.asarray(got)
        assert mine.dtype == want.dtype, f"{where}: dtype {mine.dtype}, NumPy's {want.dtype}"
        numpy.testing.assert_array_equal(mine, numpy.asarray(want), err_msg=where, strict=True)
    else:
        assert type(got) is type(want), \
            f"{where}: {type(got).__name__}, NumPy's {type(want).__name__}"
        if isinstance(want, float) and math.isnan(want):
            assert math.isnan(got), where
        else:
            assert got == want, f"{where}: {got!r}, NumPy's {want!r}"


@pytest.fixture(scope="module")
def references():
    return {name: run(name, "numpy") for name in PROGRAMS}


def cases():
    for name in PROGRAMS:
        if name in XFAIL:
            yield pytest.param(name, marks=pytest.mark.xfail(reason=XFAIL[name], strict=True))
        else:
            yield name


@pytest.mark.parametrize("name", list(cases()))
@pytest.mark.parametrize("engine_name", ["naive", "dag", "dag-queued"])
def test_a_numpy_program_runs_by_import_swap(references, name, engine_name):
    start_engine(engine_name)
    assert_same(run(name, "minerva"), references[name])


def test_a_numpy_program_on_another_device(references):
    start_engine("dag")
    mv.create_cpu_device()
    mv.set_device(mv.create_cpu_device())
    assert_same(run("spiral_net", "minerva"), references["spiral_net"])
