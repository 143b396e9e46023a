"""Basic-index writes on the lean path in C (``lean.setitem``: ``x[i] = 2.0``,
``x[1:-1, j] = y``): NumPy's bits after every write, through views, with broadcast and
cast values; errors as the Python path raises them; a write that must wait (a pending
reader) takes the Python path. The Python path alone runs this file too (test_lean_accel)."""
from __future__ import annotations

import numpy
import pytest

import minerva as mv
from minerva.api.core import lean
from minerva.common.errors import ShapeError
from tests.support.profiling import python_calls

WAIT = 30


def _key(rng, shape):
    items = []
    for extent in shape[:rng.integers(1, len(shape) + 1)]:
        if rng.random() < 0.4:
            items.append(int(rng.integers(-extent, extent)))
        else:
            start, stop = sorted(int(v) for v in rng.integers(-extent, extent + 1, 2))
            items.append(slice(start, stop, int(rng.choice([1, 1, 2, -1]))))
    return items[0] if len(items) == 1 and rng.random() < 0.5 else tuple(items)


@pytest.mark.parametrize("seed", range(10))
def test_random_basic_writes_equal_numpy_bitwise(seed):
    rng = numpy.random.default_rng(seed)
    dtype = rng.choice(["float64", "float32", "complex128", "int64", "int16"])
    shape = tuple(int(n) for n in rng.integers(2, 6, rng.integers(1, 4)))
    a = numpy.zeros(shape, dtype)
    x = mv.array(a)
    for _ in range(25):
        key = _key(rng, shape)
        target = a[key]
        if rng.random() < 0.5 and a.dtype.kind in "fc":
            value = float(rng.standard_normal()) if rng.random() < 0.7 else \
                numpy.float32(rng.standard_normal())
            x[key] = value
            a[key] = value
        else:
            vshape = numpy.shape(target)[rng.integers(0, numpy.ndim(target) + 1):]
            v = (rng.standard_normal(vshape) * 5).astype(rng.choice(["float64", "int32"]))
            x[key] = mv.array(v)
            a[key] = v
    got = x.to_numpy(timeout=WAIT)
    assert got.dtype == a.dtype and got.tobytes() == a.tobytes()


def test_writes_through_views_and_of_view_values_equal_numpy():
    a = numpy.arange(30.0).reshape(5, 6)
    x = mv.array(a)
    v, w = x[1:4], a[1:4]
    v[0] = -1.0
    w[0] = -1.0
    v[1:, ::2] = x[0, :3] * 2.0
    w[1:, ::2] = a[0, :3] * 2.0
    x.T[2] = 9.5
    a.T[2] = 9.5
    x[4, 1:5] = x[0, 2:6]
    a[4, 1:5] = a[0, 2:6]
    assert x.to_numpy(timeout=WAIT).tobytes() == a.tobytes()


def test_what_c_leaves_keeps_the_python_paths_answers():
    a = numpy.zeros((3, 4), "int64")
    x = mv.array(a)
    x[0] = 7            # an int into an integer array: the Python path checks its range
    a[0] = 7
    x[1, 2] = True
    a[1, 2] = True
    x[..., 3] = 5       # an Ellipsis
    a[..., 3] = 5
    x[2] = x[0]         # the same buffer
    a[2] = a[0]
    assert x.to_numpy(timeout=WAIT).tobytes() == a.tobytes()
    f = mv.zeros(4)
    with pytest.raises(IndexError):
        f[4] = 1.0
    with pytest.raises(ShapeError):
        f[1:3] = mv.ones(3)
    with pytest.raises(ValueError):
        mv.broadcast_to(f, (2, 4))[0] = 1.0


def test_a_write_after_a_pending_read_keeps_the_value_read():
    mv.init(cpu_threads=2)
    mv.set_device(mv.create_cpu_device())
    x = mv.array(numpy.arange(4.0))
    x.wait(timeout=WAIT)
    y = x * 2.0          # read, maybe still pending
    x[1] = 100.0
    numpy.testing.assert_array_equal(y.to_numpy(timeout=WAIT), numpy.arange(4.0) * 2.0)
    numpy.testing.assert_array_equal(x.to_numpy(timeout=WAIT), [0.0, 100.0, 2.0, 3.0])


def test_a_write_recorded_by_autograd_still_gives_its_gradient():
    x = mv.array(numpy.arange(3.0))
    x.attach_grad()
    with mv.autograd.record():
        y = x * 2.0
        y[1] = 0.0
        loss = y.sum()
    loss.backward()
    numpy.testing.assert_array_equal(x.grad.to_numpy(timeout=WAIT), [2.0, 0.0, 2.0])


@pytest.mark.skipif(not lean.ACTIVE, reason="the C accelerator is not built")
def test_a_basic_write_makes_no_python_call():
    x, row = mv.zeros((50, 3)), mv.ones(3)
    for i in range(5):
        x[i] = row
    calls = python_calls(lambda: [(x.__setitem__(i, row), x.__setitem__((i, slice(1, 3)), 2.5))
                                  for i in range(50)])
    assert "setitem" not in calls and "build" not in calls and "assign" not in calls
    want = numpy.ones((50, 3))
    want[:, 1:3] = 2.5
    assert x.to_numpy(timeout=WAIT).tobytes() == want.tobytes()
