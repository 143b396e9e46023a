"""Reductions on the lean path in C (``lean.reduction``: ``x.sum()``, ``np.mean(x, 0)``,
``x.max(axis=1, keepdims=True)`` of ``sum prod max min mean any all``): NumPy's bits,
dtypes, scalars and errors; whatever C does not take (other keywords, a tuple axis, a
listener) keeps the Python path's answer. The Python path alone runs this file too
(test_lean_accel)."""
from __future__ import annotations

import numpy
import pytest

import minerva as mv
from minerva.api.core import lean
from minerva.common.errors import ShapeError
from tests.support.profiling import python_calls

WAIT = 30
NAMES = ("sum", "prod", "max", "min", "mean", "any", "all")


def _same(got, want):
    assert repr(got) == repr(want)
    assert numpy.asarray(got).tobytes() == numpy.asarray(want).tobytes()


@pytest.mark.parametrize("seed", range(8))
def test_random_reductions_equal_numpy_bitwise(seed):
    rng = numpy.random.default_rng(seed)
    dtype = rng.choice(["float64", "float32", "int64", "int8", "bool", "complex128"])
    shape = tuple(int(n) for n in rng.integers(1, 5, rng.integers(1, 4)))
    a = (rng.standard_normal(shape) * 4).astype(dtype)
    x = mv.array(a)
    for name in NAMES:
        if name in ("max", "min") and a.dtype.kind == "c":
            continue
        for args, kwargs in (((), {}), ((0,), {}), ((), {"axis": -1}),
                             ((), {"axis": 0, "keepdims": True}), ((), {"keepdims": True}),
                             ((len(shape) - 1,), {"keepdims": False})):
            want = getattr(a, name)(*args, **kwargs)
            _same(getattr(x, name)(*args, **kwargs), want)
            _same(getattr(mv, name)(x, *args, **kwargs), getattr(numpy, name)(a, *args, **kwargs))


@pytest.mark.parametrize("seed", range(4))
def test_reductions_of_views_equal_numpy_bitwise(seed):
    rng = numpy.random.default_rng(seed)
    a = rng.standard_normal((6, 5))
    x = mv.array(a)
    for got, want in ((x.T.sum(0), a.T.sum(0)), (x[1:4].mean(), a[1:4].mean()),
                      (x[::2, 1:].max(axis=1), a[::2, 1:].max(axis=1)),
                      (mv.sum(x[:, 2]), numpy.sum(a[:, 2])),
                      (x[2].min(keepdims=True), a[2].min(keepdims=True))):
        _same(got, want)


def test_what_c_leaves_keeps_numpys_answers_and_errors():
    a = numpy.arange(24.0).reshape(2, 3, 4)
    x = mv.array(a)
    _same(x.sum(axis=(0, 2)), a.sum(axis=(0, 2)))
    _same(x.sum(dtype=numpy.float32), a.sum(dtype=numpy.float32))
    _same(x.max(initial=100.0), a.max(initial=100.0))
    _same(x.mean(1, keepdims=1), a.mean(1, keepdims=1))
    _same(mv.sum(a), numpy.sum(a))   # a NumPy array: uploaded first
    with pytest.raises(ShapeError) as info:   # minerva's class for a bad axis
        x.sum(3)
    assert any(str(entry.path) == __file__ for entry in info.traceback)
    with pytest.raises(ValueError):
        mv.zeros((0, 3)).max(axis=0)
    with pytest.raises(TypeError):
        x.sum(0, axis=1)


def test_a_reduction_inside_autograd_and_jit_keeps_its_gradient_and_replay():
    x = mv.array(numpy.arange(6.0).reshape(2, 3))
    x.attach_grad()
    with mv.autograd.record():
        loss = (x * x).sum(axis=1).sum()
    loss.backward()
    numpy.testing.assert_array_equal(x.grad.to_numpy(timeout=WAIT),
                                     2 * numpy.arange(6.0).reshape(2, 3))
    step = mv.jit(lambda v: (v * 2.0).mean(axis=0))
    for _ in range(3):
        got = step(x)
    numpy.testing.assert_array_equal(got.to_numpy(timeout=WAIT),
                                     (numpy.arange(6.0).reshape(2, 3) * 2.0).mean(axis=0))


@pytest.mark.skipif(not lean.ACTIVE, reason="the C accelerator is not built")
def test_a_reduction_makes_no_python_call():
    x = mv.ones((8, 4))
    for _ in range(5):
        x.sum(axis=1)
    calls = python_calls(lambda: [(x.sum(), x.max(axis=0), mv.sum(x, axis=1, keepdims=True))
                                  for _ in range(100)])
    assert "build" not in calls and "_reduce" not in calls and "run_lean" not in calls
