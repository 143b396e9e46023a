"""Boolean-mask indexing done at once (``minerva.api.core.masks``: ``x[mask]``,
``x[mask] = values``, ``x[mask] = scalar`` with one mask of ``x``'s leading shape): NumPy's
bits on random arrays, masks and values, through views, with NumPy masks and NArray ones;
NumPy's errors; the general way where a mask does not match or the value reads ``x``; and
the kernel indexes by the mask, never by its ``nonzero()``. The Python path alone runs this
file too (test_lean_accel)."""
from __future__ import annotations

import json

import numpy
import pytest

import minerva as mv
from minerva.api.core import lean
from minerva.common.errors import ShapeIndexError
from tests.support.profiling import python_calls

WAIT = 30
DTYPES = ["float64", "float32", "complex128", "int64", "int16", "bool"]


def _random(rng, shape, dtype):
    values = rng.standard_normal(shape) * 4
    return values.astype(dtype) if numpy.dtype(dtype).kind != "c" else \
        (values + 1j * rng.standard_normal(shape)).astype(dtype)


def _mask(rng, shape):
    return rng.random(shape) < rng.choice([0.0, 0.3, 0.7, 1.0])


@pytest.mark.parametrize("seed", range(12))
def test_random_mask_reads_and_writes_equal_numpy_bitwise(seed):
    rng = numpy.random.default_rng(seed)
    dtype = DTYPES[seed % len(DTYPES)]
    shape = tuple(int(n) for n in rng.integers(1, 7, rng.integers(1, 4)))
    a = _random(rng, shape, dtype)
    x = mv.array(a)
    for _ in range(12):
        mask = _mask(rng, shape[:rng.integers(1, len(shape) + 1)])
        key = mv.array(mask) if rng.random() < 0.7 else mask
        picked = a[mask]
        got = x[key]
        assert got.shape == picked.shape and got.dtype == picked.dtype
        assert got.to_numpy(timeout=WAIT).tobytes() == picked.tobytes()
        roll = rng.random()
        if roll < 0.4:   # values of the picked shape, or broadcast from its trailing axes
            vshape = picked.shape[rng.integers(0, picked.ndim + 1):]
            v = _random(rng, vshape, dtype if dtype in ("bool", "int16", "int64")
                        else rng.choice([dtype, "float64"]))
            x[key] = mv.array(v)
            a[mask] = v
        elif roll < 0.7:
            value = bool(rng.random() < 0.5) if dtype == "bool" else int(rng.integers(-9, 9))
            x[key] = value
            a[mask] = value
        else:   # the value computed from x itself, as ``Z[I] = Z[I] ** 2 + C[I]``
            x[key] = got * 2 + 1
            a[mask] = picked * 2 + 1
    result = x.to_numpy(timeout=WAIT)
    assert result.dtype == a.dtype and result.tobytes() == a.tobytes()


def test_masks_through_views_equal_numpy():
    a = numpy.arange(48.0).reshape(6, 8)
    x = mv.array(a)
    v, w = x[1:, ::2], a[1:, ::2]
    mask = w > 20
    assert v[mv.array(mask)].to_numpy(timeout=WAIT).tobytes() == w[mask].tobytes()
    v[mv.array(mask)] = -v[mv.array(mask)]
    w[mask] = -w[mask]
    v[mask[:, 0]] = mv.arange(4.0)
    w[mask[:, 0]] = numpy.arange(4.0)
    assert x.to_numpy(timeout=WAIT).tobytes() == a.tobytes()


def test_the_mandelbrot_step_equals_numpy():
    xs, ys = numpy.linspace(-2.0, 0.5, 30), numpy.linspace(-1.2, 1.2, 20)
    c = xs + ys[:, None] * 1j
    z, n = numpy.zeros_like(c), numpy.zeros(c.shape, int)
    mc, mz, mn = mv.array(c), mv.zeros(c.shape, complex), mv.zeros(c.shape, int)
    for k in range(12):
        inside = numpy.less(abs(z), 2.0)
        n[inside] = k + 1
        z[inside] = z[inside] ** 2 + c[inside]
        minside = mv.less(abs(mz), 2.0)
        mn[minside] = k + 1
        mz[minside] = mz[minside] ** 2 + mc[minside]
    assert mz.to_numpy(timeout=WAIT).tobytes() == z.tobytes()
    assert mn.to_numpy(timeout=WAIT).tobytes() == n.tobytes()


def test_a_value_that_does_not_fit_raises_numpys_error():
    x, mask = mv.zeros(5), mv.array([True, False, True, True, False])
    with pytest.raises(ShapeIndexError, match="could not be broadcast"):
        x[mask] = mv.ones(2)
    with pytest.raises(ValueError):
        numpy.zeros(5)[mask.to_numpy()] = numpy.ones(2)
    numpy.testing.assert_array_equal(x.to_numpy(timeout=WAIT), numpy.zeros(5))


def test_a_mask_of_the_wrong_shape_raises_numpys_error():
    x = mv.zeros((3, 4))
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[mv.array([True, False])]
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[mv.array([True, False])] = mv.ones(1)


def test_a_value_reading_the_written_array_is_read_before_the_write():
    a = numpy.arange(6.0)
    x = mv.array(a)
    mask = numpy.array([True, True, False, True, True, True])
    x[mv.array(mask)] = x[::-1][:5]
    a[mask] = a[::-1][:5].copy()   # NumPy's own result on the overlap is unspecified
    assert x.to_numpy(timeout=WAIT).tobytes() == a.tobytes()


def test_a_mask_index_never_takes_the_nonzero_way():
    z = mv.array(numpy.linspace(0.0, 3.0, 300).reshape(15, 20))
    inside = z < 1.5
    inside.wait(timeout=WAIT)
    z[inside]   # warm: shape rules and variants made once
    for run in (lambda: z[inside], lambda: z.__setitem__(inside, z[inside] * 0.5)):
        calls = python_calls(run)
        assert "advanced" not in calls and "_index_arrays" not in calls, calls
    calls = python_calls(lambda: z.__setitem__(inside, 2.0))   # the mask kept, not read
    assert "_index_arrays" not in calls and ("advanced" not in calls or not lean.ACTIVE)
    expected = numpy.linspace(0.0, 3.0, 300).reshape(15, 20)
    where = expected < 1.5
    expected[where] = expected[where] * 0.5
    expected[where] = 2.0
    assert z.to_numpy(timeout=WAIT).tobytes() == expected.tobytes()


def test_a_traced_mask_read_shows_the_general_way(tmp_path):
    x = mv.arange(10.0)
    mask = x > 4.0
    mask.wait(timeout=WAIT)
    mv.profiler.start(str(tmp_path / "trace.json"))
    y = x[mask]
    x[mask] = y + 1.0
    mv.wait_for_all()
    with open(mv.profiler.stop()) as file:
        events = json.load(file)["traceEvents"]
    numpy.testing.assert_array_equal(y.to_numpy(timeout=WAIT), numpy.arange(5.0, 10.0))
    numpy.testing.assert_array_equal(x.to_numpy(timeout=WAIT),
                                     numpy.r_[numpy.arange(5.0), numpy.arange(6.0, 11.0)])
    names = [e["name"] for e in events if e.get("cat") == "op"]
    assert names.count("from_host") == 2 and "take_index" in names and "put_index" in names
