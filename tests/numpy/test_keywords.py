"""The keywords NumPy's functions take, with NumPy's meaning, NumPy as the oracle: ``order=``
(``astype``, ``reshape``, ``ravel``, ``copy``, ``flatten``), ``initial=`` and ``where=`` on
the reductions and their methods, ``dtype=``, ``keepdims=``, ``out=`` given a NumPy array
or an array of another dtype (NumPy's casting: unsafe for reductions, ``same_kind`` for
ufuncs), ``ndmin=``, and NumPy 2's rules for Python integers (NEP 50)."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from tests.numpy.test_ndarray import builtin_class, check, outcome, same_as_numpy

BASE = np.arange(24.0).reshape(4, 6) - 7.5
LAYOUTS = {"C": lambda a: a, "F": lambda a: np.asfortranarray(a) if isinstance(
    a, np.ndarray) else mv.asfortranarray(a), "T": lambda a: a.T,
    "strided": lambda a: a[::2, ::-3]}


def on_both(call, layout="C", host=BASE):
    """``call`` on an NArray and on a NumPy array of ``host`` laid out as ``layout``: the
    outcomes (and, for arrays, the same strides as NumPy's)."""
    pick = LAYOUTS[layout]
    got, want = outcome(call, pick(mv.array(host))), outcome(call, pick(host.copy()))
    same_as_numpy(got, want)
    if want[0] == "ok" and isinstance(want[1], np.ndarray) and want[1].ndim:
        assert got[1].strides == want[1].strides, (got[1].strides, want[1].strides)
        assert got[1].flags.c_contiguous == want[1].flags.c_contiguous
        assert got[1].flags.f_contiguous == want[1].flags.f_contiguous


# ---- order= ---------------------------------------------------------------------------------

ORDERS = ["C", "F", "A", "K", "X"]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("method", [
    lambda o: lambda a: a.astype(np.float32, order=o),
    lambda o: lambda a: a.astype(np.float64, order=o, copy=False),
    lambda o: lambda a: a.copy(order=o), lambda o: lambda a: a.flatten(o),
    lambda o: lambda a: a.ravel(o), lambda o: lambda a: a.reshape(3, 8, order=o),
    lambda o: lambda a: a.reshape((-1,), order=o)],
    ids=["astype", "astype same", "copy", "flatten", "ravel", "reshape", "reshape -1"])
def test_order_keywords_are_numpys(engine, method, layout, order):
    on_both(method(order), layout)


@pytest.mark.parametrize("order", ["C", "F", "A"])
def test_functions_take_order_as_numpy(engine, order):
    for call in (lambda m, a: m.reshape(a, (6, 4), order=order),
                 lambda m, a: m.ravel(a, order=order)):
        on_both(lambda a: call(mv if isinstance(a, mv.NArray) else np, a), "T")


def test_a_reshape_in_f_order_is_a_view_where_numpys_is(engine):
    x = mv.array(BASE).T
    view = x.reshape(24, order="F")
    assert view.base is not None and np.shares_memory(BASE.T.reshape(24, order="F"), BASE)
    view[0] = 100
    host = BASE.copy()
    host.T.reshape(24, order="F")[0] = 100
    check(x.T, host)


@pytest.mark.parametrize("casting", ["no", "equiv", "safe", "same_kind", "unsafe"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.complex128])
def test_astype_casting_is_numpys(engine, dtype, casting):
    on_both(lambda a: a.astype(dtype, casting=casting))


# ---- initial= and where= on reductions -------------------------------------------------------

MASK = (np.arange(24).reshape(4, 6) % 3) != 0
REDUCTION_KEYWORDS = {
    "where": {"where": MASK}, "where row": {"where": MASK[0]}, "where axis 0": {
        "where": MASK, "axis": 0}, "initial": {"initial": 5.0}, "initial axis": {
        "initial": -100, "axis": 1}, "both": {"initial": 2, "where": MASK, "axis": 1},
    "both keepdims": {"initial": 1, "where": MASK, "axis": (0, 1), "keepdims": True},
    "where nothing": {"where": False, "initial": 3}, "where False only": {"where": False},
    "initial None": {"initial": None}, "where True": {"where": True},
    "bad where": {"where": np.ones(5, bool)}, "dtype": {"dtype": np.float32,
                                                        "where": MASK}}
REDUCTIONS = ["sum", "prod", "max", "min", "mean", "any", "all"]


@pytest.mark.parametrize("keywords", list(REDUCTION_KEYWORDS))
@pytest.mark.parametrize("name", REDUCTIONS)
def test_initial_and_where_on_reductions_are_numpys(engine, name, keywords):
    kwargs = REDUCTION_KEYWORDS[keywords]
    host = BASE / 8
    got = outcome(lambda: getattr(mv, name)(mv.array(host), **kwargs))
    want = outcome(lambda: getattr(np, name)(host, **kwargs))
    same_as_numpy(got, want)
    got = outcome(lambda: getattr(mv.array(host), name)(**kwargs))  # the method
    same_as_numpy(got, outcome(lambda: getattr(host, name)(**kwargs)))


@pytest.mark.parametrize("name", ["sum", "max", "min", "prod"])
def test_initial_of_an_empty_reduction_is_numpys(engine, name):
    for host in (np.zeros((0, 3)), np.zeros(0, np.uint8)):
        for kwargs in ({"initial": 7}, {"initial": 2.5}, {"initial": 7, "axis": 0}, {}):
            same_as_numpy(outcome(lambda: getattr(mv, name)(mv.array(host), **kwargs)),
                          outcome(lambda: getattr(np, name)(host, **kwargs)))


def test_where_takes_an_narray_mask(engine):
    mask = mv.array(MASK)
    check(mv.sum(mv.array(BASE), where=mask, axis=1), np.sum(BASE, where=MASK, axis=1))
    check(mv.mean(mv.array(BASE), where=mask), np.mean(BASE, where=MASK))


# ---- dtype= and keepdims= ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [None, np.float32, np.int64, np.int8, np.complex64])
@pytest.mark.parametrize("name", ["sum", "prod", "mean", "cumsum", "cumprod"])
def test_dtype_on_reductions_is_numpys(engine, name, dtype):
    host = np.arange(1, 7, dtype=np.int16).reshape(2, 3)
    same_as_numpy(outcome(lambda: getattr(mv, name)(mv.array(host), axis=0, dtype=dtype)),
                  outcome(lambda: getattr(np, name)(host, axis=0, dtype=dtype)))


@pytest.mark.parametrize("name", ["max", "min", "any", "all"])
def test_reductions_without_dtype_refuse_one_as_numpy(engine, name):
    same_as_numpy(outcome(lambda: getattr(mv, name)(mv.array(BASE), dtype=np.float32)),
                  outcome(lambda: getattr(np, name)(BASE, dtype=np.float32)))


KEEPDIMS = {
    "sum": lambda m, a, k: m.sum(a, axis=1, keepdims=k), "prod": lambda m, a, k: m.prod(
        a, keepdims=k), "max": lambda m, a, k: m.max(a, axis=0, keepdims=k),
    "min": lambda m, a, k: m.min(a, keepdims=k), "mean": lambda m, a, k: m.mean(
        a, axis=(0, 1), keepdims=k), "any": lambda m, a, k: m.any(a, axis=1, keepdims=k),
    "all": lambda m, a, k: m.all(a, keepdims=k), "argmax": lambda m, a, k: m.argmax(
        a, axis=1, keepdims=k), "argmin": lambda m, a, k: m.argmin(a, keepdims=k),
    "std": lambda m, a, k: m.std(a, axis=0, keepdims=k), "var": lambda m, a, k: m.var(
        a, keepdims=k), "ptp": lambda m, a, k: m.ptp(a, axis=1, keepdims=k),
    "median": lambda m, a, k: m.median(a, axis=0, keepdims=k),
    "percentile": lambda m, a, k: m.percentile(a, 30, axis=1, keepdims=k),
    "quantile": lambda m, a, k: m.quantile(a, 0.5, keepdims=k),
    "nansum": lambda m, a, k: m.nansum(a, axis=0, keepdims=k),
    "nanmean": lambda m, a, k: m.nanmean(a, axis=1, keepdims=k),
    "nanmax": lambda m, a, k: m.nanmax(a, keepdims=k),
    "count_nonzero": lambda m, a, k: m.count_nonzero(a, axis=0, keepdims=k),
    "average": lambda m, a, k: m.average(a, axis=1, keepdims=k),
    "norm": lambda m, a, k: m.linalg.norm(a, axis=1, keepdims=k),
    "amax": lambda m, a, k: m.amax(a, axis=1, keepdims=k)}


@pytest.mark.parametrize("keepdims", [True, False])
@pytest.mark.parametrize("name", list(KEEPDIMS))
def test_keepdims_is_numpys(engine, name, keepdims):
    same_as_numpy(outcome(KEEPDIMS[name], mv, mv.array(BASE), keepdims),
                  outcome(KEEPDIMS[name], np, BASE, keepdims))


# ---- out= -----------------------------------------------------------------------------------

OUTS = {
    "add": (lambda m, a, o: m.add(a, 1, out=o), (4, 6)),
    "exp": (lambda m, a, o: m.exp(a / 10, out=o), (4, 6)),
    "sum": (lambda m, a, o: m.sum(a, axis=0, out=o), (6,)),
    "max": (lambda m, a, o: m.max(a, out=o), ()),
    "mean": (lambda m, a, o: m.mean(a, axis=1, out=o), (4,)),
    "cumsum": (lambda m, a, o: m.cumsum(a, axis=1, out=o), (4, 6)),
    "matmul": (lambda m, a, o: m.matmul(a, a.T, out=o), (4, 4)),
    "clip": (lambda m, a, o: m.clip(a, -2, 3, out=o), (4, 6)),
    "concatenate": (lambda m, a, o: m.concatenate([a, a], out=o), (8, 6)),
    "sum where": (lambda m, a, o: m.sum(a, axis=1, where=MASK, out=o), (4,)),
    "max initial": (lambda m, a, o: m.max(a, axis=0, initial=0, out=o), (6,)),
}
OUT_DTYPES = [np.float64, np.float32, np.int64, np.complex128, np.bool_]


@pytest.mark.parametrize("kind", ["numpy", "narray"])
@pytest.mark.parametrize("dtype", OUT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(OUTS))
def test_out_is_written_as_numpy_writes_it(engine, name, dtype, kind):
    """NumPy's casting into ``out=``: unsafe for the reductions (``sum``, ``mean``,
    ``cumsum`` ...), ``same_kind`` for ufuncs and ``concatenate``; a NumPy ``out=`` array
    receives the values (minerva waits for them)."""
    call, shape = OUTS[name]
    want_out, got_out = np.zeros(shape, dtype), np.zeros(shape, dtype)
    if kind == "narray":
        got_out = mv.array(got_out)
    got = outcome(call, mv, mv.array(BASE), got_out)
    want = outcome(call, np, BASE.copy(), want_out)
    if want[0] == "raised":
        assert got[0] == "raised" and isinstance(got[1], builtin_class(want[1])), (got, want)
        return
    assert got[0] == "ok" and got[1] is got_out, got
    values = got_out if kind == "numpy" else got_out.to_numpy()
    assert values.dtype == want_out.dtype
    np.testing.assert_allclose(values, want_out, rtol=1e-6)


def test_out_of_the_wrong_shape_is_refused_as_numpy(engine):
    for call in (lambda m, o: m.sum(m.ones((2, 3)), axis=0, out=o),
                 lambda m, o: m.add(m.ones(3), 1, out=o)):
        for shape in ((2,), (2, 3), ()):
            want = outcome(call, np, np.zeros(shape))
            got = outcome(call, mv, np.zeros(shape))
            assert got[0] == want[0], (got, want)


def test_a_read_only_numpy_out_is_refused(engine):
    target = np.zeros(3)
    target.flags.writeable = False
    same_as_numpy(outcome(lambda: mv.add(mv.ones(3), 1, out=target)),
                  outcome(lambda: np.add(np.ones(3), 1, out=target)))


# ---- ndmin= ---------------------------------------------------------------------------------

@pytest.mark.parametrize("ndmin", [0, 1, 3])
def test_ndmin_is_numpys(engine, ndmin):
    for obj in ([[1, 2]], 4.0, np.arange(3)):
        check(mv.array(obj, ndmin=ndmin), np.array(obj, ndmin=ndmin))
        check(mv.array(mv.array(obj), ndmin=ndmin), np.array(np.array(obj), ndmin=ndmin))


# ---- Python integers out of a dtype's range (NEP 50) ---------------------------------------

NEP50 = {
    "add 300": lambda a: a + 300, "radd 300": lambda a: 300 + a, "sub -1": lambda a: a - (-1),
    "mul 256": lambda a: a * 256, "add 255": lambda a: a + 255, "np.add": lambda a:
    np.add(a, 300), "add int64 300": lambda a: a + np.int64(300), "iadd 300": lambda a:
    a.__iadd__(300), "setitem -1": lambda a: a.__setitem__(0, -1), "setitem 255": lambda a:
    a.__setitem__(0, 255), "fill 256": lambda a: a.fill(256), "lt 300": lambda a: a < 300,
    "eq -1": lambda a: a == -1, "ge -5": lambda a: a >= -5, "ne 2**70": lambda a:
    a != 2 ** 70, "max 300": lambda a: np.maximum(a, 300), "full": lambda a: (
        np if isinstance(a, np.ndarray) else mv).full(2, 300, dtype=np.uint8),
    "float add": lambda a: a + 2.5}


@pytest.mark.parametrize("case", list(NEP50))
def test_python_integers_follow_nep_50(engine, case):
    host = np.arange(250, 254, dtype=np.uint8)
    got, want = outcome(NEP50[case], mv.array(host)), outcome(NEP50[case], host.copy())
    same_as_numpy(got, want)
    if want[0] == "raised":
        assert isinstance(got[1], OverflowError) == isinstance(want[1], OverflowError)
