"""``x[i]`` read at once in C (minerva._lean.Element in front of NArray.__getitem__): one
element of a whole computed value is NumPy's own scalar, with NumPy's IndexError; every
other key, view or state goes to the Python path and gives what it gave."""
from __future__ import annotations

import itertools
import operator
import warnings

import numpy
import pytest

import minerva as mv
from minerva.api.core import lean
from minerva.narray import NArray

accelerated = pytest.mark.skipif(not lean.ACTIVE, reason="the C accelerator is not built")
DTYPES = ["float64", "float32", "int64", "int8", "uint16", "bool", "complex64", "<U3",
          "datetime64[s]"]


def _sample(rng, dtype, shape):
    values = rng.integers(-50, 50, shape)
    if dtype == "<U3":
        return values.astype(str).astype(dtype)
    if dtype == "bool":
        return values > 0
    return values.astype(dtype)


@accelerated
def test_getitem_is_the_c_element_read():
    assert type(NArray.__dict__["__getitem__"]).__name__ == "Element"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 2)])
def test_every_element_is_numpys_scalar(dtype, shape):
    rng = numpy.random.default_rng(len(dtype) + len(shape))
    expected = _sample(rng, dtype, shape)
    x = mv.array(expected)
    for index in numpy.ndindex(*shape):
        for key in (index, tuple(i - n for i, n in zip(index, shape))):   # and negative
            key = key[0] if len(shape) == 1 else key
            got, want = x[key], expected[key]
            assert type(got) is type(want) and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("dtype", ["float64", "int16", "complex128", "bool"])
@pytest.mark.parametrize("seed", range(4))
def test_every_element_of_a_view_is_numpys_scalar(dtype, seed):
    rng = numpy.random.default_rng(seed)
    expected = _sample(rng, dtype, (6, 5, 4))
    x = mv.array(expected)
    picks = [(2,), (slice(1, 6, 2), slice(None, None, -1)), (slice(None), 3),
             (slice(4, 0, -2), slice(1, 4), slice(None, None, 3)), (-1, slice(2, None))]
    for pick in picks:
        view, want_view = x[pick], expected[pick]
        for index in numpy.ndindex(*want_view.shape):
            for key in (index, tuple(i - n for i, n in zip(index, want_view.shape))):
                key = key[0] if len(key) == 1 else key
                got, want = view[key], want_view[key]
                assert type(got) is type(want) and got.tobytes() == want.tobytes()
        bad = (want_view.shape[0],) + (0,) * (want_view.ndim - 1)
        with pytest.raises(IndexError):
            view[bad[0] if len(bad) == 1 else bad]


@pytest.mark.parametrize("key", [7, -8, 100, (0, 9), (5, 0)])
def test_out_of_bounds_raises_numpys_index_error(key):
    expected = numpy.arange(28.0).reshape(4, 7) if isinstance(key, tuple) \
        else numpy.arange(7.0)
    x = mv.array(expected)
    with pytest.raises(IndexError) as ours:
        x[key]
    with pytest.raises(IndexError) as numpys:
        expected[key]
    assert str(ours.value) == str(numpys.value)


def test_other_keys_and_views_give_what_the_python_path_gives():
    base = numpy.arange(24.0).reshape(4, 6)
    x = mv.array(base)
    for key in [1, (1,), (1, slice(None)), True, numpy.int64(2), (numpy.int64(1), 2),
                (Ellipsis, 3), (1, 2, None), [0, 2], slice(1, 3)]:
        got, want = x[key], base[key]
        got = got.to_numpy() if isinstance(got, NArray) else got
        numpy.testing.assert_array_equal(got, want)
    view = x[1:, ::2]
    assert view[2, 1] == base[1:, ::2][2, 1]
    assert x.T[5, 3] == base.T[5, 3]


def test_a_pending_value_is_read_when_computed():
    big = mv.ones(300_000)   # past the inline limit: made on the device's thread
    y = big * 3.0 + 1.0
    assert y[123] == 4.0 and y[-1] == 4.0


def test_a_jit_recording_and_autograd_take_the_python_path():
    w = mv.array(numpy.arange(3.0))
    w.attach_grad()
    with mv.autograd.record():
        picked = w[1]   # recorded: an op, so the gradient flows
        loss = picked * 2.0
    loss.backward()
    numpy.testing.assert_array_equal(w.grad.to_numpy(), [0.0, 2.0, 0.0])

    def step(v):
        return v[0] + v[2]
    jitted = mv.jit(step)
    v = mv.array(numpy.array([1.0, 5.0, 7.0]))
    assert float(jitted(v)) == 8.0 and float(jitted(v)) == 8.0


def test_a_structured_element_is_read_as_the_python_path_reads_it():
    kind = numpy.dtype([("a", "i4"), ("b", "f8")])
    base = numpy.array([(1, 2.0), (3, 4.0)], dtype=kind)
    x = mv.array(base)
    assert x[1]["a"] == 3 and x[0]["b"] == 2.0


@pytest.mark.parametrize("kind", ["int64", "int32", "uint8", "intp"])
def test_numpy_integer_keys_read_and_write_as_python_ints(kind):
    expected = numpy.arange(24.0).reshape(4, 6)
    x = mv.array(expected)
    i, j = numpy.dtype(kind).type(2), numpy.dtype(kind).type(5)
    for key in (i, (i, j), (1, j), (i, slice(1, 4))):
        got, want = x[key], expected[key]
        if isinstance(want, numpy.ndarray):   # a row: a view of x
            assert isinstance(got, NArray) and got.to_numpy().tobytes() == want.tobytes()
        else:
            assert type(got) is type(want) and got.tobytes() == want.tobytes()
    x[i] = 7.0
    x[1, j] = -1.0
    expected[i] = 7.0
    expected[1, j] = -1.0
    assert x.to_numpy().tobytes() == expected.tobytes()
    with pytest.raises(IndexError):
        x[numpy.dtype(kind).type(4)]


@accelerated
def test_conversions_are_the_c_reads():
    for name, kind in (("__float__", "ToFloat"), ("__int__", "ToInt"), ("__bool__", "ToBool"),
                       ("__index__", "ToIndex")):
        assert type(NArray.__dict__[name]).__name__ == kind


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8", "bool", "complex128"])
@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_conversions_of_one_element_are_numpys(dtype, shape):
    """As NumPy converts the element's 0-d array (its scalar, for a NumPy scalar)."""
    integral = numpy.dtype(dtype).kind in "iub"
    for value in (0, 3, 7.5, float("nan")):
        if integral and value not in (0, 3):
            continue
        expected = numpy.full(shape, value, dtype=dtype)
        cases = [(mv.array(expected), expected)]
        if not shape:   # a NumPy scalar: the one element of a sum
            cases.append((mv.array(expected.reshape(1)).sum(), expected.reshape(1).sum()))
        for (x, want_of), convert in itertools.product(cases, (float, int, bool, operator.index)):
            if isinstance(want_of, numpy.ndarray) and convert is not operator.index:
                want_of = want_of.reshape(())   # minerva's contract: one element, any shape
            try:
                with warnings.catch_warnings(record=True) as seen:
                    warnings.simplefilter("always")
                    want = convert(want_of)
                    want_warnings = [type(w.message) for w in seen]
            except Exception as exc:   # NumPy refuses: so do we, with its class
                with pytest.raises(type(exc)), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    convert(x)
                continue
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                got = convert(x)
            assert type(got) is type(want) and (got == want or (got != got and want != want))
            assert [type(w.message) for w in seen] == want_warnings


def test_conversions_of_several_elements_raise_numpys_errors():
    x, expected = mv.array([1.0, 2.0]), numpy.array([1.0, 2.0])
    for convert in (float, int, bool):
        with pytest.raises(Exception) as want:
            convert(expected)
        with pytest.raises(type(want.value)):
            convert(x)
