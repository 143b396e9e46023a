"""Integer-array indexing done at once (``minerva.api.core.picks``: ``x[rows, cols]``,
``x[idx]``, ``x[range(n), y] -= 1``, with ranges, lists, NumPy arrays and NArrays of one
shape on the leading axes): NumPy's bits on random arrays and indices, reads, writes of
values and scalars, in-place updates, through views; NumPy's errors out of bounds; the
general way for what it does not take; and no general index checks on its way. The
Python path alone runs this file too (test_lean_accel)."""
from __future__ import annotations

import numpy
import pytest

import minerva as mv
from minerva.common.errors import ShapeIndexError
from tests.support.profiling import python_calls

WAIT = 30
DTYPES = ["float64", "float32", "int64", "int32", "complex128"]


def _index_item(rng, n, size, kind):
    values = rng.integers(-n, n, size)
    if kind == "range":
        start = int(rng.integers(0, n - size + 1))
        return range(start, start + size), numpy.arange(start, start + size)
    if kind == "list":
        return [int(v) for v in values], values
    if kind == "numpy":
        return values.astype(rng.choice(["int64", "int32", "uint8"]) if values.min() >= 0
                             else "int64"), values
    return mv.array(values), values


@pytest.mark.parametrize("seed", range(16))
def test_random_picks_read_and_write_as_numpy(seed):
    rng = numpy.random.default_rng(seed)
    dtype = DTYPES[seed % len(DTYPES)]
    shape = tuple(int(n) for n in rng.integers(2, 7, rng.integers(1, 4)))
    a = (rng.standard_normal(shape) * 5).astype(dtype)
    x = mv.array(a)
    for _ in range(10):
        k = int(rng.integers(1, len(shape) + 1))
        size = int(rng.integers(1, min(shape[:k]) + 1))
        ours, theirs = [], []
        for axis in range(k):
            kind = rng.choice(["range", "list", "numpy", "narray"])
            item, values = _index_item(rng, shape[axis], size, kind)
            ours.append(item)
            theirs.append(values)
        if k < len(shape) and rng.random() < 0.3:
            ours.append(slice(None))
            theirs.append(slice(None))
        key, expected_key = tuple(ours), tuple(theirs)
        picked = a[expected_key]
        got = x[key]
        assert got.shape == picked.shape and got.dtype == picked.dtype
        assert got.to_numpy(timeout=WAIT).tobytes() == picked.tobytes()
        roll = rng.random()
        if roll < 0.35:
            x[key] = 3
            a[expected_key] = 3
        elif roll < 0.7:
            x[key] -= 1
            a[expected_key] -= 1
        else:
            v = (rng.standard_normal(picked.shape[rng.integers(0, picked.ndim + 1):]) * 2
                 ).astype(dtype)
            x[key] = mv.array(v)
            a[expected_key] = v
    assert x.to_numpy(timeout=WAIT).tobytes() == a.tobytes()


def test_the_spiral_net_lines_equal_numpy():
    rng = numpy.random.default_rng(3)
    probs, y = rng.random((30, 3)), (numpy.arange(30) % 3).astype("uint8")
    ours, labels = mv.array(probs), mv.array(y)
    picked = ours[range(30), labels]
    assert picked.to_numpy(timeout=WAIT).tobytes() == probs[range(30), y].tobytes()
    ours[range(30), labels] -= 1
    probs[range(30), y] -= 1
    assert ours.to_numpy(timeout=WAIT).tobytes() == probs.tobytes()


def test_picks_through_views_and_repeated_indices_equal_numpy():
    a = numpy.arange(40.0).reshape(5, 8)
    x = mv.array(a)
    v, w = x[1:, ::2], a[1:, ::2]
    idx = numpy.array([0, 2, 2, 3])
    assert v[idx, [1, 0, 3, 3]].to_numpy(timeout=WAIT).tobytes() == \
        w[idx, [1, 0, 3, 3]].tobytes()
    v[idx, [1, 0, 3, 3]] = mv.array([-1.0, -2.0, -3.0, -4.0])   # the last one wins
    w[idx, [1, 0, 3, 3]] = [-1.0, -2.0, -3.0, -4.0]
    x[[4, 0]] = x[[0, 4]]   # a row swap, as linear solvers pivot
    a[[4, 0]] = a[[0, 4]]
    assert x.to_numpy(timeout=WAIT).tobytes() == a.tobytes()


@pytest.mark.parametrize("key", [(range(2, 6), [0, 1, 2, 3]), ([0, 9],),
                                 (numpy.array([1, -6]),)])
def test_an_index_out_of_bounds_raises_numpys_error(key):
    a = numpy.zeros((5, 4))
    x = mv.array(a)
    with pytest.raises(IndexError) as theirs:
        a[key]
    with pytest.raises(ShapeIndexError) as ours:
        x[key]
    assert str(ours.value).startswith(str(theirs.value))
    with pytest.raises(ShapeIndexError):
        x[key] = 1.0


def test_an_narray_index_out_of_bounds_fails_the_op_alone():
    x = mv.zeros(4)
    with pytest.raises(mv.OpError, match="index 7 is out of bounds for axis 0"):
        x[mv.array([1, 7])].to_numpy(timeout=WAIT)
    numpy.testing.assert_array_equal((x + 1).to_numpy(timeout=WAIT), numpy.ones(4))


def test_index_arrays_of_other_shapes_take_the_general_way():
    a = numpy.arange(12.0).reshape(3, 4)
    x = mv.array(a)
    rows = numpy.array([[0], [2]])
    assert x[rows, [1, 3]].to_numpy(timeout=WAIT).tobytes() == a[rows, [1, 3]].tobytes()
    with pytest.raises(IndexError, match="could not be broadcast"):
        x[[0, 1], [0, 1, 2]]


def test_a_value_that_does_not_fit_raises_numpys_error():
    x = mv.zeros((4, 3))
    with pytest.raises(ShapeIndexError, match="could not be broadcast"):
        x[[0, 1]] = mv.ones(2)


def test_picks_never_take_the_general_index_checks():
    x, y = mv.zeros((30, 3)), mv.array(numpy.arange(30) % 3)
    x[range(30), y] -= 1   # warm: shape rules made once
    for run in (lambda: x[range(30), y], lambda: x.__setitem__((range(30), y), 2.0),
                lambda: x.__setitem__([1, 2], mv.ones(3))):
        calls = python_calls(run)
        assert "advanced" not in calls and "build" not in calls, calls
    expected = numpy.zeros((30, 3))
    expected[range(30), numpy.arange(30) % 3] = 2.0
    expected[[1, 2]] = 1.0
    assert x.to_numpy(timeout=WAIT).tobytes() == expected.tobytes()


def test_a_list_of_ints_numpy_integers_and_0d_narrays_picks_as_numpy():
    a = numpy.arange(36.0).reshape(6, 6)
    x = mv.array(a)
    p = 1 + mv.argmax(mv.abs(x[1:, 1]))   # a 0-d NArray, NumPy's scalar in NumPy
    q = 1 + numpy.argmax(numpy.abs(a[1:, 1]))
    x[[1, p]] = x[[p, 1]]   # a pivot's row swap, as linear solvers write it
    a[[1, q]] = a[[q, 1]]
    x[[numpy.int64(0), 2], 1:] = 0.0
    a[[numpy.int64(0), 2], 1:] = 0.0
    assert x.to_numpy(timeout=WAIT).tobytes() == a.tobytes()
    calls = python_calls(lambda: x[[p, 1]])
    assert "advanced" not in calls and "build" not in calls, calls


def _after_slices_item(rng, n, size, kind):
    """An index item for an axis of ``n`` after full slices: ``_index_item``'s kinds, or
    a 1-D mask (NumPy or NArray) of that axis."""
    if kind in ("mask", "narray mask"):
        mask = rng.random(n) < 0.5
        mask[int(rng.integers(0, n))] = True   # picks at least one
        return (mv.array(mask) if kind == "narray mask" else mask), mask
    return _index_item(rng, n, size, kind)


def _key_after_slices(rng, shape, lead, k, size, kinds):
    """(minerva's key, NumPy's) of ``lead`` full slices, then ``k`` index items of
    ``kinds`` (and 1-D masks when ``k`` is 1) of ``size`` elements."""
    kinds = kinds + (["mask", "narray mask"] if k == 1 else [])
    ours, theirs = [slice(None)] * lead, [slice(None)] * lead
    for axis in range(lead, lead + k):
        item, values = _after_slices_item(rng, shape[axis], size, rng.choice(kinds))
        ours.append(item)
        theirs.append(values)
    return tuple(ours), tuple(theirs)


@pytest.mark.parametrize("seed", range(16))
def test_picks_after_full_slices_read_and_write_as_numpy(seed):
    """``x[:, order]``, ``x[:, :, rows, cols]``, ``counts[:, mask]``: index arrays (or a
    1-D mask) on the axes after full slices, at once, with NumPy's bits, of numbers and
    strings."""
    rng = numpy.random.default_rng(100 + seed)
    shape = tuple(int(n) for n in rng.integers(2, 6, rng.integers(2, 5)))
    a = (rng.standard_normal(shape) * 5).astype(DTYPES[seed % len(DTYPES)])
    if seed % 4 == 3:
        a = a.astype(str)
    x = mv.array(a)
    for _ in range(8):
        lead = int(rng.integers(1, len(shape)))
        k = int(rng.integers(1, len(shape) - lead + 1))
        size = int(rng.integers(1, min(shape[lead:lead + k]) + 1))
        key, expected_key = _key_after_slices(rng, shape, lead, k, size,
                                              ["range", "list", "numpy", "narray"])
        picked = a[expected_key]
        got = x[key]
        assert got.shape == picked.shape and got.dtype == picked.dtype
        assert got.to_numpy(timeout=WAIT).tobytes() == picked.tobytes()
        value = picked[::-1] if picked.ndim and rng.random() < 0.5 else picked.flat[0]
        x[key] = value if numpy.ndim(value) == 0 else mv.array(value)
        a[expected_key] = value
    assert x.to_numpy(timeout=WAIT).tobytes() == a.tobytes()


def test_picks_after_full_slices_never_take_the_general_index_checks():
    x, order = mv.array(numpy.arange(24.0).reshape(2, 3, 4)), mv.array([3, 0, 1])
    mask = numpy.array([True, False, True])
    x[:, :, order]   # warm: shape rules made once
    for run in (lambda: x[:, :, order], lambda: x[:, mask], lambda: x[:, [2, 0]],
                lambda: x.__setitem__((slice(None), mask), 0.5)):
        calls = python_calls(run)
        assert "advanced" not in calls and "build" not in calls, calls


@pytest.mark.parametrize("seed", range(12))
def test_add_at_by_picks_is_numpys(seed):
    """``np.add.at`` by index arrays (repeated indices add each time), after full slices
    or by a 1-D mask, of a scalar or an array of the target's dtype: NumPy's bits, at
    once (no general index checks)."""
    rng = numpy.random.default_rng(200 + seed)
    dtype = DTYPES[seed % len(DTYPES)]
    shape = tuple(int(n) for n in rng.integers(2, 6, rng.integers(1, 4)))
    a = (rng.standard_normal(shape) * 5).astype(dtype)
    x = mv.array(a)
    for _ in range(6):
        lead = int(rng.integers(0, len(shape)))
        k = int(rng.integers(1, len(shape) - lead + 1))
        size = int(rng.integers(1, 9))
        key, expected_key = _key_after_slices(rng, shape, lead, k, size,
                                              ["list", "numpy", "narray"])
        picked = a[expected_key].shape
        if rng.random() < 0.5:
            value = numpy.asarray(rng.standard_normal(picked) * 3).astype(dtype)
            mv.add.at(x, key, mv.array(value))
        else:
            value = int(rng.integers(-3, 4)) if dtype.startswith("int") else 1.5
            mv.add.at(x, key, value)
        numpy.add.at(a, expected_key, value)
        assert x.to_numpy(timeout=WAIT).tobytes() == a.tobytes()
    counts, d, w = mv.zeros((4, 6), dtype=numpy.int64), [0, 3, 3], numpy.array([5, 1, 1])
    mv.add.at(counts, (d, w), 1)
    calls = python_calls(lambda: mv.add.at(counts, (d, w), 1))
    assert "advanced" not in calls and "build" not in calls, calls
    expected = numpy.zeros((4, 6), numpy.int64)
    numpy.add.at(expected, (d, w), 2)
    assert counts.to_numpy(timeout=WAIT).tobytes() == expected.tobytes()
