"""``x[2]``, ``x[1:3]``, ``x[i, ::-2]`` and ``x.T`` made at once in C (minerva._lean.Element's
view path in front of NArray.__getitem__, and Transposed in front of the ``T`` getter): the
view handle equals the one the Python path (``fields.getitem``, ``manipulation.transpose``)
makes — the same layout, spec, read-only flag and base — and reads
and writes through it as NumPy's view does. Other keys go to the Python path."""
from __future__ import annotations

import numpy
import pytest

import minerva as mv
from minerva.api.core import fields, lean, manipulation
from tests.support.profiling import python_calls

SHAPES = [(7,), (4, 5), (3, 1, 4), (2, 3, 2, 2), (0, 3), (3, 0)]


def _key(rng, shape):
    """A random basic key of exact ints and slices, at most one per axis, and None."""
    items = []
    for n in shape[:rng.integers(1, len(shape) + 1)]:
        if n and rng.random() < 0.35:
            items.append(int(rng.integers(-n, n)))
        else:
            bounds = [None if rng.random() < 0.3 else int(rng.integers(-n - 2, n + 3))
                      for _ in range(2)]
            step = rng.choice([None, 1, 2, -1, -2, 3])
            items.append(slice(bounds[0], bounds[1], None if step is None else int(step)))
    if rng.random() < 0.3:   # numpy.newaxis somewhere
        items.insert(int(rng.integers(0, len(items) + 1)), None)
    return items[0] if len(items) == 1 and rng.random() < 0.5 else tuple(items)


def _same_handle(got, want):
    assert got._view == want._view and got._spec == want._spec
    assert got._readonly == want._readonly and got._owndata == want._owndata is False
    assert got.base is want.base


def _sources(expected):
    """The array as a whole value, transposed, reversed and sliced (views)."""
    x = mv.array(expected)
    yield x, expected
    yield x.T, expected.T
    yield x[::-1], expected[::-1]
    if expected.ndim > 1:
        yield x[1:, ::2], expected[1:, ::2]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_view_equals_the_python_paths_and_numpys(shape):
    rng = numpy.random.default_rng(sum(shape) + len(shape))
    expected = rng.standard_normal(shape)
    for x, base in _sources(expected):
        for _ in range(40):
            key = _key(rng, base.shape)
            want = base[key]
            if numpy.ndim(want) == 0:
                continue
            got = x[key]
            _same_handle(got, fields.getitem(x, key))
            numpy.testing.assert_array_equal(got.to_numpy(), want)
            assert got.strides == want.strides or want.size == 0


@pytest.mark.parametrize("shape", SHAPES + [(), (2, 3, 4, 5, 1)])
def test_the_transpose_equals_the_python_paths_and_numpys(shape):
    expected = numpy.arange(float(numpy.prod(shape))).reshape(shape)
    for x, base in list(_sources(expected)) if shape else [(mv.array(expected), expected)]:
        got, want = x.T, base.T
        _same_handle(got, manipulation.transpose(x))
        numpy.testing.assert_array_equal(got.to_numpy(), want)
        assert got.strides == want.strides and got.T.strides == base.strides or not base.size


@pytest.mark.parametrize("dtype", ["float32", "int16", "bool", "complex128", "<U3",
                                   "datetime64[s]"])
def test_other_dtypes_and_writes_through_the_view(dtype):
    base = numpy.arange(24).reshape(4, 6).astype(dtype)
    x = mv.array(base)
    row, column = x[2], x[:, 1]
    numpy.testing.assert_array_equal(row.to_numpy(), base[2])
    row[1:3] = base[0, :2]
    column[::2] = base[3, 1]
    expected = base.copy()
    expected[2, 1:3] = base[0, :2]
    expected[::2, 1] = base[3, 1]
    numpy.testing.assert_array_equal(x.to_numpy(), expected)
    assert row.base is x and column.base is x and x[1:][1].base is x


def test_a_view_of_a_read_only_array_is_read_only():
    x = mv.arange(6.0)
    x.flags.writeable = False
    view = x[1:4]
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 1.0


def test_a_whole_slice_of_a_whole_array_has_no_view():
    x = mv.ones((3, 4))
    assert x[:]._view is None and x[:, :]._view is None and x[::-1]._view is not None
    assert x[:].base is x


def test_a_view_keeps_its_storage_after_the_base_goes():
    x = mv.arange(12.0).reshape(3, 4) + 0
    row = x[1]
    del x
    numpy.testing.assert_array_equal(row.to_numpy(), numpy.arange(4.0, 8.0))
    assert row.base is not None and row.base.shape == (3, 4)


@pytest.mark.parametrize("key", [5, (0, 9), (slice(None), 7), -6])
def test_out_of_bounds_raises_numpys_index_error(key):
    expected = numpy.zeros((5, 7))
    with pytest.raises(IndexError) as ours:
        mv.array(expected)[key]
    with pytest.raises(IndexError) as numpys:
        expected[key]
    assert str(ours.value) == str(numpys.value)


def test_other_keys_take_the_python_path():
    base = numpy.arange(24.0).reshape(2, 3, 4)
    x = mv.array(base)
    for key in [(Ellipsis, 1), (numpy.int64(1),), (slice(numpy.int64(1), 3),),
                (True,), [0, 1], (slice(None), [0, 2])]:
        numpy.testing.assert_array_equal(x[key].to_numpy(), base[key])
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        x[::0]


def test_while_autograd_records_the_view_is_told_to_the_seam():
    x = mv.array(numpy.arange(6.0))
    x.attach_grad()
    with mv.autograd.record():
        y = (x[1:4] * 2.0).sum() + (x.T * 3.0).sum()
    y.backward()
    numpy.testing.assert_array_equal(x.grad.to_numpy(), [3, 5, 5, 5, 3, 3])


@pytest.mark.parametrize("seed", range(6))
def test_in_place_operators_through_views_equal_numpys(seed):
    rng = numpy.random.default_rng(seed)
    a, b = rng.standard_normal((6, 5)), rng.uniform(0.5, 1.5, (6, 5))
    x, y = mv.array(a), mv.array(b)
    for _ in range(30):
        i, j = (int(k) for k in rng.integers(0, 5, 2))
        for key in (i, (slice(None), j), (slice(1, 4), slice(None, None, 2)), (i, slice(j))):
            scalar = float(rng.standard_normal())
            x[key] -= scalar
            a[key] -= scalar
            x[key] *= y[key]
            a[key] *= b[key]
            view, want = x[key], a[key]
            view += 1.0
            want += 1.0
    x[1:] += x[:-1]   # overlapping: the Python path, NumPy's answer
    a[1:] += a[:-1]
    numpy.testing.assert_array_equal(x.to_numpy(), a)


def test_an_in_place_operator_on_a_read_only_view_raises():
    x = mv.ones(4)
    x.flags.writeable = False
    with pytest.raises(ValueError):
        x[1:3] += 1.0
    numpy.testing.assert_array_equal(x.to_numpy(), numpy.ones(4))


@pytest.mark.skipif(not lean.ACTIVE, reason="the C accelerator is not built")
def test_an_in_place_operator_through_a_row_takes_no_python_call():
    dy = mv.zeros((5, 1))

    def step():
        dy[3] -= 1
    step()
    assert set(python_calls(step)) <= {"step", "<method 'disable' of '_lsprof.Profiler' objects>"}
    numpy.testing.assert_array_equal(dy.to_numpy()[:, 0], [0, 0, 0, -2, 0])
