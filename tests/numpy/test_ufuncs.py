"""minerva's element-wise functions are NumPy's ufuncs, with NumPy as the oracle: their
attributes; the methods ``reduce``, ``accumulate``, ``reduceat``, ``outer`` and ``at`` of
every ufunc minerva has (values, dtypes, NumPy's error class), on minerva's functions and
through NumPy's (``numpy.add.reduce(x)``); the call keywords ``where``, ``dtype``,
``casting``, ``order``, ``subok`` and ``signature``; ``at`` through views and versions; the
kernels GPUs run (the methods built from the array module's functions); gradients.

Dtypes are sampled: each ufunc meets two of ``DTYPES`` (rotating with its position), so the
table covers every dtype without a full product.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import minerva as mv
from minerva.api.core.ufuncs import FUNCTIONS
from minerva.ops import registry
from tests.numpy.test_narray_surface import check, outcome, same_as_numpy
from tests.support.autograd_fixtures import check_grad, uniform

NAMES = sorted({f.__name__ for f in FUNCTIONS.values()})
BINARY = [n for n in NAMES if FUNCTIONS[n].nin == 2]
UNARY = [n for n in NAMES if FUNCTIONS[n].nin == 1]
DTYPES = (np.bool_, np.int8, np.uint8, np.int64, np.float32, np.float64, np.complex128)
WHERE = np.array([[True, False, True, True]])
METHODS = ("reduce", "accumulate", "reduceat", "outer", "at")


def sampled(name: str) -> list:
    """Two dtypes for ufunc ``name``, rotating through ``DTYPES``."""
    i = NAMES.index(name)
    return [DTYPES[i % len(DTYPES)], DTYPES[(i + 3) % len(DTYPES)]]


def values(dtype, shape=(3, 4)) -> np.ndarray:
    """Small values of ``dtype``: 0..4 for integers (no negative powers), fractions of
    both signs for floats, both parts for complex numbers."""
    base = np.arange(int(np.prod(shape))).reshape(shape) % 5
    if dtype == np.bool_:
        return base % 2 == 0
    if np.dtype(dtype).kind == "f":
        return (base * 0.75 - 1.25).astype(dtype)
    if np.dtype(dtype).kind == "c":
        return (base * 0.5 - 1 + 1j * (base % 3)).astype(dtype)
    return base.astype(dtype)


def same(got, want) -> None:
    """``same_as_numpy``, where a plain call's ``DTypeError`` (minerva's TypeError for
    dtypes an op refuses, raised by its shape rule) stands for NumPy's UFuncTypeError."""
    if want[0] == "raised" and isinstance(want[1], np._core._exceptions.UFuncTypeError) \
            and isinstance(got[1], mv.DTypeError):
        return
    same_as_numpy(got, want)


def both_ways(name: str, method: str, *args, **kwargs) -> None:
    """``<name>.<method>(*args, **kwargs)`` on NumPy arrays is what minerva's gives on
    NArrays, and what NumPy's gives on NArrays (NEP 13)."""
    want = outcome(lambda *a: getattr(getattr(np, name), method)(*a, **kwargs), *args)
    arrays = [mv.array(a) if isinstance(a, np.ndarray) else a for a in args]
    for module in (mv, np):
        method_of = getattr(getattr(module, name), method)
        same(outcome(lambda *a, f=method_of: f(*a, **kwargs), *arrays), want)


# ---- attributes --------------------------------------------------------------------------

@pytest.mark.parametrize("name", [n for n in NAMES if isinstance(getattr(np, n, None),
                                                                 np.ufunc)])
def test_attributes_are_numpys(name):
    ours, theirs = FUNCTIONS[name], getattr(np, name)
    for attribute in ("nin", "nout", "nargs", "identity", "ntypes", "types", "__name__",
                      "signature", "__doc__"):
        assert getattr(ours, attribute) == getattr(theirs, attribute), attribute
    for method in METHODS:
        assert getattr(ours, method).__name__ == method


def test_minervas_own_ufuncs_describe_themselves():
    for name in ("sigmoid", "relu"):
        ufunc = FUNCTIONS[name]
        assert (ufunc.nin, ufunc.nout, ufunc.nargs, ufunc.identity) == (1, 1, 2, None)
        assert ufunc.ntypes == len(ufunc.types) and "d->d" in ufunc.types
    assert mv.abs is mv.absolute and mv.abs.__name__ == "absolute"


# ---- the methods, ufunc by ufunc ---------------------------------------------------------

REDUCE_CASES = [{}, {"axis": None}, {"axis": 1, "keepdims": True}, {"axis": (0, 1)},
                {"axis": -1, "initial": 2}, {"axis": 1, "where": WHERE, "initial": 1},
                {"axis": 0, "dtype": np.float64}, {"axis": 2}, {"axis": (0, 0)}]


@pytest.mark.parametrize("name", BINARY)
def test_reduce_is_numpys(name):
    for dtype in sampled(name):
        host = values(dtype)
        for case in REDUCE_CASES:
            both_ways(name, "reduce", host, **case)
        empty = np.zeros((0, 3), dtype)
        both_ways(name, "reduce", empty)
        both_ways(name, "reduce", empty, axis=1)


@pytest.mark.parametrize("name", BINARY)
def test_accumulate_is_numpys(name):
    for dtype in sampled(name):
        host = values(dtype)
        for case in ({}, {"axis": 1}, {"axis": -1, "dtype": np.float64}, {"axis": None},
                     {"axis": 2}):
            both_ways(name, "accumulate", host, **case)
        both_ways(name, "accumulate", host[0], axis=None)
        both_ways(name, "accumulate", np.array(values(dtype)[0, 0]))


@pytest.mark.parametrize("name", BINARY)
def test_reduceat_is_numpys(name):
    for dtype in sampled(name):
        host = values(dtype)
        both_ways(name, "reduceat", host, [0, 2, 1, 3], axis=1)
        both_ways(name, "reduceat", host, [0, 2])
        both_ways(name, "reduceat", host, [0, 5], axis=1)
        both_ways(name, "reduceat", host, [1], axis=0, dtype=np.float64)


@pytest.mark.parametrize("name", BINARY)
def test_outer_is_numpys(name):
    a, b = sampled(name)
    both_ways(name, "outer", values(a, (3,)), values(b, (2, 2)))
    both_ways(name, "outer", values(a, (2,)), 3)


@pytest.mark.parametrize("name", NAMES)
def test_at_is_numpys(name):
    index = ([0, 2, 0, 0], [1, 3, 1, 2])
    operand = () if FUNCTIONS[name].nin == 1 else (values(np.int64, (4,)) + 1,)
    for dtype in sampled(name):
        for extra in (operand, (2,) if operand else ()):
            if name in ("sigmoid", "relu"):
                want = outcome(_own_at, name, values(dtype), index)
            else:
                want = outcome(_at, np, name, values(dtype), index, *extra)
            for module in (mv, np) if isinstance(getattr(np, name, None), np.ufunc) else (mv,):
                same(outcome(_at, module, name, mv.array(values(dtype)), index, *extra),
                     want)


def _at(module, name, a, index, *b):
    getattr(module, name).at(a, index, *b)
    return a


def _own_at(name, a, index):
    """sigmoid and relu (which NumPy lacks) applied once per occurrence of an index."""
    function = {"sigmoid": lambda v: 1 / (1 + np.exp(-v)), "relu": lambda v: np.maximum(v, 0)}
    for i, j in zip(*index):
        a[i, j] = function[name](a[i, j])
    return a


@pytest.mark.parametrize("name", ["exp", "negative", "divmod"])
def test_methods_numpy_refuses_raise_numpys_errors(name):
    x = values(np.float64)
    for method, args in {"reduce": (x,), "accumulate": (x,), "reduceat": (x, [0]),
                         "outer": (x, x), "at": (x, [0], 1.0)}.items():
        both_ways(name, method, *args)
    both_ways("add", "at", x, [0])


# ---- call keywords -----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["add", "divide", "floor_divide", "maximum", "exp",
                                  "sqrt", "divmod", "less"])
def test_where_with_out_keeps_the_other_elements(name):
    ufunc = getattr(np, name)
    operands = [values(np.float64)] + [values(np.float64) + 1.5] * (ufunc.nin - 1)
    outs = tuple(np.full((3, 4), -7.0) for _ in range(ufunc.nout))
    with np.errstate(all="ignore"):
        ufunc(*operands, out=outs, where=WHERE)
    mine = tuple(mv.full((3, 4), -7.0) for _ in range(ufunc.nout))
    with np.errstate(all="ignore"):
        got = getattr(mv, name)(*map(mv.array, operands), where=mv.array(WHERE),
                                out=mine if ufunc.nout > 1 else mine[0])
    assert got is (mine if ufunc.nout > 1 else mine[0])
    for m, o in zip(mine, outs):
        check(m, o)


def test_where_without_out_gives_zeros_elsewhere_and_numpys_warning():
    x = values(np.float64)
    with pytest.warns(UserWarning, match="'where' used without 'out'"):
        got = mv.multiply(mv.array(x), 2.0, where=WHERE)
    check(got, np.where(WHERE, x * 2.0, 0.0))
    with pytest.warns(UserWarning):
        got = np.add(mv.array(x), 1, where=WHERE)
    assert isinstance(got, mv.NArray) and got.to_numpy()[WHERE.repeat(3, 0)].tolist() == (
        (x + 1)[WHERE.repeat(3, 0)]).tolist()


def test_where_is_a_division_guard(engine):
    a, b = values(np.float64), values(np.int64)
    want = np.divide(a, b, out=np.zeros_like(a), where=b != 0)
    x, y = mv.array(a), mv.array(b)
    check(np.divide(x, y, out=mv.zeros_like(x), where=y != 0), want)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no division by zero is met
        got = mv.divide(x, y, out=mv.zeros_like(x), where=y != 0)
    check(got, want)


KEYWORD_CASES = [
    ("add", (np.int64, np.float64), {"casting": "safe"}),
    ("add", (np.float64, np.float64), {"dtype": np.int64}),
    ("add", (np.float64, np.float64), {"dtype": np.int64, "casting": "unsafe"}),
    ("add", (np.int8, np.int8), {"dtype": np.float32}),
    ("add", (np.int64, np.int64), {"dtype": np.int8}),
    ("add", (np.int64, np.int64), {"signature": "dd->d"}),
    ("add", (np.float64, np.float64), {"signature": "ii->i", "casting": "unsafe"}),
    ("add", (np.float64, np.float64), {"signature": "ii"}),
    ("add", (np.float64, np.float64), {"dtype": np.float32, "signature": "dd->d"}),
    ("equal", (np.int64, np.int64), {"dtype": np.bool_}),
    ("equal", (np.int64, np.int64), {"dtype": np.float64}),
    ("exp", (np.int64,), {"dtype": np.float32}),
    ("sqrt", (np.int8,), {"casting": "no"}),
    ("subtract", (np.float32, np.float32), {"casting": "no"}),
    ("multiply", (np.float64, np.float64), {"casting": "bad"}),
    ("multiply", (np.float64, np.float64), {"order": "X"}),
    ("multiply", (np.float64, np.float64), {"subok": "x"}),
    ("multiply", (np.float64, np.float64), {"subok": False, "order": "C"}),
    ("multiply", (np.float64, np.float64), {"bogus": 1}),
    ("divmod", (np.int64, np.float32), {"dtype": np.float64}),
]


@pytest.mark.parametrize("name, dtypes, kwargs", KEYWORD_CASES, ids=str)
def test_call_keywords_are_numpys(name, dtypes, kwargs):
    operands = [values(d) + i for i, d in enumerate(dtypes)]
    both_ways(name, "__call__", *operands, **kwargs)


@pytest.mark.parametrize("casting", ["no", "equiv", "safe", "same_kind", "unsafe"])
@pytest.mark.parametrize("target", [np.int8, np.int64, np.float32, np.complex128])
def test_casting_into_out_is_numpys(casting, target):
    a = values(np.float64)
    want = outcome(lambda: np.add(a, a, out=np.zeros((3, 4), target), casting=casting))
    out = mv.zeros((3, 4), target)
    same(outcome(lambda: mv.add(mv.array(a), mv.array(a), out=out, casting=casting)), want)


def test_order_lays_the_result_out_as_numpy():
    a = values(np.float64)
    for order in "CFAK":
        got, want = mv.add(mv.array(a), 1, order=order), np.add(a, 1, order=order)
        check(got, want)
        assert got.flags.f_contiguous == want.flags.f_contiguous
    fortran = np.asfortranarray(a)
    got = mv.add(mv.asfortranarray(mv.array(a)), 1, order="A")
    assert got.flags.f_contiguous == np.add(fortran, 1, order="A").flags.f_contiguous


# ---- dispatch, views and versions ----------------------------------------------------------

def test_numpys_methods_on_narrays_return_narrays(engine):
    x, host = mv.array(values(np.float64)), values(np.float64)
    check(np.add.outer(x, x[0]), np.add.outer(host, host[0]))
    check(np.multiply.reduce(x), np.multiply.reduce(host))
    check(np.maximum.accumulate(x, axis=1), np.maximum.accumulate(host, axis=1))
    check(np.minimum.reduceat(x, [0, 2], axis=1), np.minimum.reduceat(host, [0, 2], axis=1))
    out = mv.zeros(4)
    assert np.add.reduce(x, out=out, where=WHERE[0] | True) is out
    check(out, np.add.reduce(host))
    array = np.zeros(4, np.float32)
    assert np.subtract.reduce(x, out=array) is array
    np.testing.assert_array_equal(array, np.subtract.reduce(host, out=np.zeros(4, np.float32)))
    assert np.add.at(x, ([0, 0], [1, 1]), 1.0) is None
    np.add.at(host, ([0, 0], [1, 1]), 1.0)
    check(x, host)
    target, want = values(np.float64), values(np.float64)
    np.multiply.at(target, ([0, 0], [2, 2]), mv.array([2.0, 3.0]))
    np.multiply.at(want, ([0, 0], [2, 2]), [2.0, 3.0])
    np.testing.assert_array_equal(target, want)


def test_generalized_ufunc_methods_raise_numpys_errors():
    x = mv.ones((2, 2))
    with pytest.raises(RuntimeError, match="signature"):
        np.matmul.reduce(x)
    with pytest.raises(TypeError, match="non-trivial signature"):
        np.matmul.outer(x, x)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "minimum",
                                  "negative"])
def test_at_writes_through_views_and_versions(engine, name):
    host = values(np.float64, (4, 5))
    x = mv.array(host)
    before = x * 1.0                           # read before the write: the old values
    view, host_view = x[1:, ::2], host[1:, ::2]
    index, extra = ([0, 0, 2], [1, 1, 0]), () if name == "negative" else (3.0,)
    getattr(mv, name).at(view, index, *extra)
    getattr(np, name).at(host_view, index, *extra)
    check(x, host)
    check(view, host_view)
    check(before, values(np.float64, (4, 5)))
    check(x + 0.0, host + 0.0)                 # read after the write: the new values
    with pytest.raises(ValueError, match="read-only"):
        mv.add.at(mv.broadcast_to(mv.ones(3), (2, 3)), [0], 1.0)


# ---- the kernels GPUs run: the methods built from the array module's functions -------------

class NotNumPy:
    """NumPy under another name: the kernels take the path of array modules whose ufuncs
    lack the methods (CuPy's)."""

    def __getattr__(self, name):
        return getattr(np, name)


def portable(op: str, *inputs, out, **attrs):
    registry.get(op).impl(NotNumPy(), *inputs, out=out, **attrs)
    return out


def close(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(got, want)


PORTABLE = ["add", "multiply", "maximum", "fmin", "logical_xor", "bitwise_or", "gcd",
            "subtract", "power", "logaddexp", "hypot", "divide", "lcm"]
"""(Not arctan2, nor power of floats: NumPy's reduce of those gives f(first, last), where
the GPU kernels fold in order.)"""


@pytest.mark.parametrize("name", PORTABLE)
def test_portable_reduce_and_accumulate_are_numpys(name):
    ufunc = getattr(np, name)
    dtype = np.int64 if name in ("gcd", "lcm", "bitwise_or", "power") else np.float64
    x = values(dtype) + (1 if name == "power" else 0)
    cases = [{"axis": (0,)}, {"axis": (1,), "initial": 2}, {"axis": (1,), "initial": 3,
                                                            "where": WHERE}]
    if name not in ("subtract", "power", "divide", "lcm"):
        cases += [{"axis": None}, {"axis": (0, 1), "where": WHERE, "initial": 1}]
    for case in cases:
        want = ufunc.reduce(x, **case)
        mask = (np.broadcast_to(case.pop("where"), x.shape),) if "where" in case else ()
        got = portable("ufunc_reduce", x, *mask, out=np.empty(want.shape, want.dtype),
                       name=name, keepdims=False, dtype=None, result=want.dtype,
                       **{"initial": None, **case})
        close(got, want)
    for axis in (0, 1):
        want = ufunc.accumulate(x, axis=axis)
        close(portable("ufunc_accumulate", x, out=np.empty_like(want), name=name, axis=axis,
                       dtype=None, result=want.dtype), want)
    want = ufunc.reduceat(x, [0, 2, 1, 3], axis=1)
    close(portable("ufunc_reduceat", x, out=np.empty_like(want), name=name, axis=1,
                   indices=(0, 2, 1, 3), dtype=None, result=want.dtype), want)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "minimum",
                                  "negative", "sqrt"])
def test_portable_at_and_where_are_numpys(name):
    from minerva.ops.elementwise import ARRAY
    x, nin = values(np.float64) + 2.0, getattr(np, name).nin
    index = ([0, 2, 0, 0, 1], [1, 3, 1, 1, 0])
    value = np.array([1.5, -2.0, 3.0, 0.5, 4.0])
    want = x.copy()
    getattr(np, name).at(want, index, *((value,) if nin == 2 else ()))
    layout = (ARRAY, ARRAY)
    arrays = ((value,) if nin == 2 else ()) + tuple(np.array(i) for i in index)
    got = portable("ufunc_at", *arrays, out=x.copy(), name=name, layout=layout,
                   value=ARRAY if nin == 2 else None, shape=x.shape, dtype=x.dtype)
    close(got, want)
    operands = (x, x[::-1]) if nin == 2 else (x,)
    want = np.full((3, 4), -1.0)
    getattr(np, name)(*operands, out=want, where=WHERE)
    got = portable("ufunc_where", *operands, WHERE, out=np.full((3, 4), -1.0), name=name,
                   dtypes=(want.dtype,), fresh=False)
    close(got, want)


# ---- gradients ---------------------------------------------------------------------------

X = uniform(np.random.default_rng(5), (3, 4))
GRADIENTS = {
    "add.reduce": lambda a: mv.add.reduce(a, axis=1),
    "add.reduce where initial": lambda a: mv.add.reduce(a, axis=1, where=WHERE, initial=1.0),
    "multiply.reduce initial": lambda a: mv.multiply.reduce(a, axis=0, initial=2.0),
    "multiply.reduce where": lambda a: mv.multiply.reduce(a, axis=(0, 1), where=WHERE),
    "maximum.reduce initial": lambda a: mv.maximum.reduce(a, axis=1, initial=-5.0),
    "minimum.reduce where": lambda a: mv.minimum.reduce(a, where=WHERE, initial=9.0),
    "add.accumulate": lambda a: mv.add.accumulate(a, axis=1),
    "multiply.accumulate": lambda a: mv.multiply.accumulate(a),
    "multiply.outer": lambda a: mv.multiply.outer(a[0], a[1:]),
    "subtract.outer": lambda a: mv.subtract.outer(a, a[:, 0]),
    "add.at values": lambda a: _added_at(a),
}


def _added_at(a):
    target = mv.zeros((2, 4))
    mv.add.at(target, ([0, 1, 0], [1, 2, 1]), a[0, :3])
    return target


@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_gradients(name):
    check_grad(GRADIENTS[name], X)
