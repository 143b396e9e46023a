"""Host data onto the device at once: ``np.array`` of lists and scalars, the fills, a copy
of a whole value (``Engine.run_new``) and advanced indexing by host index arrays, which
are read as they are, not uploaded (``Engine.run_host``), give NumPy's values, dtypes,
layouts and errors; a trace, a recording at the seam, a pending input or a closed runtime
take the general path, which gives what it always gave."""
from __future__ import annotations

import json
import os
import tempfile

import numpy
import pytest

import minerva as mv
from minerva.common.errors import ShapeIndexError
from tests.conftest import assert_settled
from tests.support.profiling import python_calls

DTYPES = ["float64", "float32", "int64", "int32", "int8", "uint8", "uint64", "bool",
          "complex128", "complex64", ">f8", "<i2"]
SEEDS = range(12)


def _sample(rng, dtype, shape):
    values = rng.integers(-40, 40, shape)
    if numpy.dtype(dtype).kind == "u":   # (a list of uint64s past int64 is float64's)
        return numpy.abs(values).astype(dtype)
    if numpy.dtype(dtype).kind == "b":
        return values > 0
    if numpy.dtype(dtype).kind == "f":
        return (values * 0.37).astype(dtype)
    if numpy.dtype(dtype).kind == "c":
        return (values * 0.5 + 1j * numpy.flip(values)).astype(dtype)
    return values.astype(dtype)


def _same(got, want) -> None:
    """``got`` (an NArray) holds NumPy's ``want``: shape, dtype, bits and layout flags."""
    assert isinstance(got, mv.NArray)
    host = got.to_numpy()
    assert host.shape == want.shape and host.dtype == want.dtype
    assert host.tobytes() == want.tobytes()
    assert got.flags.c_contiguous == want.flags.c_contiguous
    assert got.flags.f_contiguous == want.flags.f_contiguous


def _shape(rng):
    return tuple(int(n) for n in rng.integers(1, 6, int(rng.integers(1, 4))))


# ---- np.array, np.asarray, the fills, copies ---------------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_array_of_lists_and_scalars_is_numpys(seed):
    mv.init()
    rng = numpy.random.default_rng(seed)
    for dtype in DTYPES:
        data = _sample(rng, dtype, _shape(rng))
        for obj in (data.tolist(), data[()] if data.ndim == 0 else data[0].tolist(),
                    data.ravel()[0].item(), data, numpy.asfortranarray(data), data.T):
            for order in ("K", "C", "F", "A"):
                _same(mv.array(obj, order=order), numpy.array(obj, order=order))
            _same(mv.asarray(obj), numpy.asarray(obj))
            _same(mv.array(obj, dtype=dtype), numpy.array(obj, dtype=dtype))
            _same(mv.array(obj, ndmin=3), numpy.array(obj, ndmin=3))


def test_nested_lists_of_narrays_still_stack_on_the_device():
    mv.init()
    a, b = mv.arange(3.0), mv.ones(3)
    _same(mv.array([a, b]), numpy.array([numpy.arange(3.0), numpy.ones(3)]))
    _same(mv.array([[1.0, 2.0, 3.0], (a, [4.0, 5.0, 6.0])][1]),
          numpy.array([numpy.arange(3.0), [4.0, 5.0, 6.0]]))
    mixed = [numpy.float64(1.5), 2, True]
    _same(mv.array(mixed), numpy.array(mixed))


@pytest.mark.parametrize("seed", SEEDS)
def test_fills_are_numpys(seed):
    mv.init()
    rng = numpy.random.default_rng(seed)
    for dtype in DTYPES:
        shape = _shape(rng)
        for order in ("C", "F"):
            for name in ("zeros", "ones"):
                _same(getattr(mv, name)(shape, dtype, order),
                      getattr(numpy, name)(shape, dtype, order))
            got = mv.empty(shape, dtype, order)
            assert got.shape == shape and got.dtype == numpy.dtype(dtype)
            value = _sample(rng, dtype, ())[()]
            _same(mv.full(shape, value, dtype, order),
                  numpy.full(shape, value, dtype, order))
            _same(mv.full(shape, value), numpy.full(shape, value))
        like = _sample(rng, dtype, shape)
        for name in ("zeros_like", "ones_like"):
            _same(getattr(mv, name)(mv.array(like)), getattr(numpy, name)(like))
        _same(mv.full_like(mv.array(like), 7), numpy.full_like(like, 7))
        _same(mv.full_like(mv.array(like), 2.75), numpy.full_like(like, 2.75))


def test_a_fill_cast_with_a_floating_point_error_reports_it_as_numpy_does():
    mv.init()
    like = numpy.ones(3, numpy.float32)
    with numpy.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            numpy.full_like(like, 1e300)
        with pytest.raises(FloatingPointError):
            mv.full_like(mv.array(like), 1e300).to_numpy()


@pytest.mark.parametrize("seed", SEEDS)
def test_copies_are_numpys(seed):
    mv.init()
    rng = numpy.random.default_rng(seed)
    for dtype in DTYPES:
        data = _sample(rng, dtype, _shape(rng))
        x = mv.array(data)
        for order in ("K", "C", "F", "A"):
            _same(x.copy(order), data.copy(order))
            _same(mv.copy(x, order), numpy.copy(data, order))
        copied = x.copy()
        copied[...] = numpy.ones((), dtype)   # a copy is its own buffer
        _same(x, data)


# ---- advanced indexing by host index arrays ----------------------------------------

def _index(rng, shape, form):
    """A host index of ``form`` into an array of ``shape``: NumPy arrays or lists, some
    negative, some 2-D, with slices, ints and masks."""
    n = shape[0]
    idx = rng.integers(-n, n, int(rng.integers(1, 7)))
    if form == "array":
        return idx
    if form == "list":
        return idx.tolist()
    if form == "2d":
        return rng.integers(-n, n, (2, 3))
    if form == "mask":
        return rng.integers(0, 2, n).astype(bool)
    if form == "tail" and len(shape) > 1:
        return (slice(None), rng.integers(-shape[1], shape[1], 4))
    if form == "pair" and len(shape) > 1:
        return (idx, rng.integers(0, shape[1], idx.size))
    if form == "mixed" and len(shape) > 1:
        return (idx.tolist(), slice(1, None))
    return (idx, Ellipsis)


FORMS = ["array", "list", "2d", "mask", "tail", "pair", "mixed", "ellipsis"]


def _views(data, x):
    """Pairs of (NumPy array, the same view of ``x``)."""
    yield data, x
    if data.shape[0] > 1:
        yield data[1:], x[1:]
        yield data[::-1], x[::-1]
    if data.ndim > 1:
        yield data.T, x.T


@pytest.mark.parametrize("seed", SEEDS)
def test_gathers_by_host_indices_are_numpys(seed):
    mv.init()
    rng = numpy.random.default_rng(seed)
    for dtype in DTYPES[::2]:
        data = _sample(rng, dtype, _shape(rng))
        for want_base, got_base in _views(data, mv.array(data)):
            for form in FORMS:
                key = _index(rng, want_base.shape, form)
                want = want_base[key]
                got = got_base[key]
                _same(got, numpy.ascontiguousarray(want))   # a gather is C-ordered


@pytest.mark.parametrize("seed", SEEDS)
def test_scatters_by_host_indices_are_numpys(seed):
    mv.init()
    rng = numpy.random.default_rng(100 + seed)
    for dtype in DTYPES[::2]:
        data = _sample(rng, dtype, _shape(rng))
        want, x = data.copy(), mv.array(data)
        for want_view, got_view in _views(want, x):
            for form in FORMS:
                key = _index(rng, want_view.shape, form)
                picked = want_view[key]
                scalar = _sample(rng, dtype, ())[()]
                want_view[key] = scalar
                got_view[key] = scalar
                _same(x, want)
                values = _sample(rng, dtype, picked.shape)
                want_view[key] = values
                got_view[key] = mv.array(values) if form != "list" else values
                _same(x, want)
                if picked.ndim:   # a value broadcast along the last axis, as a list
                    row = _sample(rng, dtype, picked.shape[-1:])
                    want_view[key] = row.tolist()
                    got_view[key] = row.tolist()
                    _same(x, want)


def test_a_scatter_of_a_value_read_from_the_written_array_reads_the_old_values():
    mv.init()
    want = numpy.arange(10.0)
    x = mv.array(want)
    for key, source in [([0, 1, 2], slice(7, None)), ([9, 8, 7], slice(None, 3)),
                        ([1, 3, 5], slice(None, None, -4))]:
        want[key] = want[source]
        x[key] = x[source]
        _same(x, want)
    want[[2, 4]] = want[[4, 2]]
    x[[2, 4]] = x[[4, 2]]
    _same(x, want)


def test_repeated_indices_keep_the_last_value_as_numpy():
    mv.init()
    want = numpy.zeros(5)
    x = mv.zeros(5)
    key = numpy.array([1, 3, 1, 1, 3])
    want[key] = numpy.arange(5.0)
    x[key] = numpy.arange(5.0)
    _same(x, want)


def test_a_scatter_cast_meets_numpys_floating_point_error():
    mv.init()
    x = mv.zeros(4, dtype="int64")
    with numpy.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError):
            numpy.zeros(4, "int64")[[0, 1]] = numpy.array([numpy.nan, 1.0])
        x[[0, 1]] = mv.array([numpy.nan, 1.0])
        with pytest.raises(mv.MinervaError) as failed:
            x.to_numpy()
    assert "FloatingPointError" in str(failed.value) or "invalid" in str(failed.value)


@pytest.mark.parametrize("key", [[5], [-6], [0, 7], (slice(None), [3]), ([0, 1], [0, 1, 2]),
                                 numpy.array([[1], [9]]), [1.0], ([0, 1], [0, 1], [0])])
def test_bad_host_indices_raise_numpys_error_class_now(key):
    mv.init()
    want = numpy.arange(15.0).reshape(5, 3)
    x = mv.array(want)
    with pytest.raises(IndexError) as numpys:
        want[key]
    with pytest.raises(IndexError) as ours:
        x[key]
    assert isinstance(ours.value, ShapeIndexError)
    with pytest.raises(IndexError):
        want[key] = 1.0
    with pytest.raises(IndexError):
        x[key] = 1.0
    with pytest.raises(IndexError):
        x[key] = mv.ones(1)
    _same(x, want)
    assert str(numpys.value)


def test_an_index_out_of_bounds_names_numpys_axis_and_value():
    mv.init()
    x = mv.zeros((4, 6))
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 0 with size 4"):
        x[[0, 4]]
    with pytest.raises(IndexError, match="index -7 is out of bounds for axis 1 with size"):
        x[:, [5, -7]] = 1.0
    with pytest.raises(IndexError) as numpys:
        numpy.zeros((4, 6))[numpy.arange(20) * 2]
    with pytest.raises(IndexError) as ours:
        x[numpy.arange(20) * 2]   # a larger index array: checked by the op's own check
    assert str(ours.value).startswith(str(numpys.value))


def test_read_only_targets_stay_read_only():
    mv.init()
    x = mv.broadcast_to(mv.arange(3.0), (4, 3))
    with pytest.raises(ValueError, match="read-only"):
        x[[0, 1]] = 1.0


# ---- the paths taken -----------------------------------------------------------------

def test_a_host_index_is_not_uploaded_and_host_data_take_no_build():
    mv.init()
    p, idx = mv.zeros(64), numpy.array([1, 5, 9])
    p[idx] = 1.0
    p[idx].wait()
    q, yi = mv.zeros((3, 4)), mv.array([0, 3, 1])
    for run in (lambda: p[idx], lambda: p.__setitem__(idx, 2.0),
                lambda: p.__setitem__([1, 2], mv.ones(2)), lambda: q[range(3), yi],
                lambda: q.__setitem__((range(3), yi), 1.0)):
        calls = python_calls(run)   # the general way's run_host, or an index op at once
        assert {"run_host", "gather_now", "scatter_now"} & set(calls), calls
        assert "upload" not in calls and "build" not in calls
    for run in (lambda: mv.array([[1.0, 2.0]]), lambda: mv.zeros(6), lambda: mv.ones(3),
                lambda: mv.full(4, 2.5), lambda: mv.empty(2), lambda: p.copy()):
        calls = python_calls(run)   # at once: the lean path in C, or run_new
        assert "build" not in calls and "submit" not in calls, calls
    want = numpy.zeros(64)
    want[[1, 5, 9]] = 2.0
    want[[1, 2]] = 1.0
    _same(p, want)


def test_values_made_at_once_are_settled_and_counted():
    mv.init()
    held = [mv.array([1.0, 2.0]), mv.zeros((3, 3)), mv.ones(5, "int8"), mv.full(2, 7)]
    x = mv.arange(10.0)
    held += [x.copy(), x[[1, 2, 3]], x[numpy.array([[0], [9]])]]
    x[[0, 1]] = 5.0
    held.append(x)
    for _ in range(50):   # dead values hand their blocks over
        mv.zeros(6)
        x[[2, 3]]
        x[[4]] = 1.0
    assert_settled(*held)


def test_a_pending_input_takes_the_dag_path_with_the_same_values(engine):
    big = mv.ones(600_000)          # touches more than the inline limit: a DAG op
    y = (big * 2.0)[:7]
    want = numpy.full(600_000, 2.0)[:7]
    _same(y[[0, 3, -1]], want[[0, 3, -1]])
    y2 = big * 3.0
    y2[[0, 5]] = 0.0
    want2 = numpy.full(600_000, 3.0)
    want2[[0, 5]] = 0.0
    _same(y2[:8], want2[:8])
    _same(mv.array([[1, 2], [3, 4]]), numpy.array([[1, 2], [3, 4]]))
    _same(mv.zeros(3, "int16"), numpy.zeros(3, "int16"))


def test_a_trace_shows_the_uploads_as_before():
    mv.init()
    x = mv.arange(8.0)
    x.wait()
    path = os.path.join(tempfile.mkdtemp(), "trace.json")
    mv.profiler.start(path)
    y = x[[1, 2]]
    x[numpy.array([0])] = 3.0
    z = mv.array([1.0, 2.0]) + mv.zeros(2)
    mv.wait_for_all()
    events = json.load(open(mv.profiler.stop()))["traceEvents"]
    names = [e["name"] for e in events if e.get("cat") == "op"]
    assert names == ["from_host", "take_index", "from_host", "put_index", "from_host",
                     "fill", "add"]
    _same(y, numpy.array([1.0, 2.0]))
    _same(z, numpy.array([1.0, 2.0]))


def test_autograd_records_gathers_and_uploads():
    mv.init()
    x = mv.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with mv.autograd.record():
        y = (x[numpy.array([0, 0, 2])] * mv.array([1.0, 2.0, 3.0]) + mv.ones(3)).sum()
    y.backward()
    numpy.testing.assert_array_equal(x.grad.to_numpy(), [3.0, 0.0, 3.0])


def test_a_closed_runtime_still_says_why():
    mv.init()
    x = mv.arange(4.0)
    x.wait()
    mv.shutdown()
    with pytest.raises(mv.MinervaError):
        x[[0, 1]]
    with pytest.raises(mv.MinervaError):
        x.copy()


@pytest.mark.parametrize("seed", SEEDS)
def test_masks_host_and_device_gather_and_scatter_as_numpy(seed):
    mv.init()
    rng = numpy.random.default_rng(200 + seed)
    want = rng.standard_normal((4, 5))
    x = mv.array(want)
    for mask in (want > 0, (want > 0)[0], (want > 0)[:, 1]):
        key = mask if mask.shape[0] == 4 and mask.ndim == 2 or mask.shape == (4,) \
            else (slice(None), mask)
        picked = numpy.ascontiguousarray(want[key])   # a gather is C-ordered in minerva
        _same(x[key], picked)
        _same(x[mv.array(mask)] if not isinstance(key, tuple) else x[key], picked)
        want[key] = 0.5
        x[key] = 0.5
        _same(x, want)
        values = rng.standard_normal(want[key].shape)
        want[key] = values
        x[key] = values
        _same(x, want)
    for bad in (numpy.ones(3, bool), numpy.ones((4, 4), bool), numpy.ones((2, 5), bool)):
        with pytest.raises(IndexError):
            want[bad]
        with pytest.raises(IndexError):
            x[bad]
        with pytest.raises(IndexError):
            x[bad] = 1.0
    _same(x, want)


@pytest.mark.parametrize("seed", SEEDS)
def test_host_and_narray_indices_together_are_numpys(seed):
    mv.init()
    rng = numpy.random.default_rng(300 + seed)
    n, k = int(rng.integers(1, 9)), int(rng.integers(1, 5))
    want = rng.standard_normal((n, k))
    y = rng.integers(0, k, n)
    x, y_mv = mv.array(want), mv.array(y)
    _same(x[range(n), y_mv], want[range(n), y])            # spiral_net's loss
    _same(x[y_mv % n, [k - 1]], want[y % n, [k - 1]])
    want[range(n), y] -= 1                                 # and its gradient
    x[range(n), y_mv] -= 1
    _same(x, want)
    want[numpy.arange(n)[::-1], y] = numpy.arange(n) * 0.5
    x[numpy.arange(n)[::-1], y_mv] = mv.arange(n) * 0.5
    _same(x, want)
    table_np = y % min(n, k)   # an index read from the written array: copied first
    table = mv.array(table_np)
    table[numpy.arange(n)] = table[table]
    table_np[numpy.arange(n)] = table_np[table_np]
    _same(table, table_np)
    table[table] = mv.arange(n)   # the index is the written array itself
    table_np[table_np.copy()] = numpy.arange(n)
    _same(table, table_np)
    if n > 1:   # index shapes that do not broadcast: the shape rule's error, now
        with pytest.raises(IndexError):
            x[range(n), mv.zeros(n + 1, "int64")]
        with pytest.raises(IndexError):
            x[range(n), mv.zeros(n + 1, "int64")] = 1.0
