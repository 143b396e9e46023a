"""Well-known NumPy programs run unmodified by import swap (``import minerva as np``)
and give NumPy's numbers: Karpathy's min-char-rnn, the CS231n spiral two-layer net, an
MLP trained with in-place SGD through a parameter list, and logistic regression. Each
runs once with NumPy and once with minerva (every engine; two devices for one), and the
results must match: exactly where the kernels are NumPy's own, which on CPU devices they
all are."""
from __future__ import annotations

import os

import numpy
import pytest

import minerva as mv
from tests.conftest import start_engine

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
PROGRAMS = ["spiral_net", "logistic_regression", "mlp_sgd", "min_char_rnn"]


def run(name: str, module: str) -> dict:
    """Execute program ``name`` with ``import numpy as np`` bound to ``module``."""
    with open(os.path.join(HERE, name + ".py"), encoding="utf-8") as src:
        source = src.read()
    if module != "numpy":
        assert "import numpy as np" in source
        source = source.replace("import numpy as np", f"import {module} as np")
    scope = {"__name__": f"program_{name}"}
    exec(compile(source, name + ".py", "exec"), scope)
    return scope["RESULT"]


def assert_same(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for key, value in want.items():
        mine = got[key]
        if isinstance(value, numpy.ndarray):
            numpy.testing.assert_array_equal(numpy.asarray(mine), value, err_msg=key)
        else:
            assert mine == value, key


@pytest.fixture(scope="module")
def references():
    return {name: run(name, "numpy") for name in PROGRAMS}


@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("engine_name", ["naive", "dag", "dag-queued"])
def test_a_numpy_program_runs_by_import_swap(references, name, engine_name):
    start_engine(engine_name)
    assert_same(run(name, "minerva"), references[name])


def test_a_numpy_program_on_another_device(references):
    start_engine("dag")
    mv.create_cpu_device()
    mv.set_device(mv.create_cpu_device())
    assert_same(run("spiral_net", "minerva"), references["spiral_net"])
