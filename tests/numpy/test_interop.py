"""NumPy functions applied to NArrays run in minerva (``__array_ufunc__`` and
``__array_function__``), under every engine, and give NumPy's numbers and dtypes."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv

A = np.arange(12, dtype=np.float64).reshape(3, 4) - 4.5
B = np.linspace(-1.0, 2.0, 12).reshape(3, 4)


def check(got, want):
    """``got`` is an NArray holding exactly NumPy's ``want`` (values, dtype, shape)."""
    assert isinstance(got, mv.NArray), type(got)
    values, want = got.to_numpy(), np.asarray(want)
    assert values.dtype == want.dtype and values.shape == want.shape
    np.testing.assert_array_equal(values, want)


@pytest.fixture
def without(monkeypatch):
    """``without(module, name)``: minerva's ``module`` lacks ``name`` for this test."""
    def remove(module, name):
        if name in vars(module):
            monkeypatch.delattr(module, name)
        if module is mv:
            monkeypatch.delitem(mv.NAMES, name, raising=False)
        return name
    return remove


# ---- ufuncs ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["exp", "negative", "absolute", "sqrt", "isnan", "floor"])
def test_unary_ufuncs_run_in_minerva(engine, name):
    ufunc = getattr(np, name)
    with np.errstate(invalid="ignore"):
        check(ufunc(mv.array(A)), ufunc(A))


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "maximum",
                                  "power", "less", "equal", "arctan2", "logical_and"])
def test_binary_ufuncs_take_narrays_and_numpy_arrays_on_either_side(engine, name):
    ufunc = getattr(np, name)
    x, y = mv.array(A), mv.array(B)
    with np.errstate(invalid="ignore"):
        check(ufunc(x, y), ufunc(A, B))
        check(ufunc(x, B), ufunc(A, B))
        check(ufunc(A, y), ufunc(A, B))
        check(ufunc(A[0], y), ufunc(A[0], B))


def test_numpy_operators_with_an_narray_on_the_right_give_narrays(engine):
    y = mv.array(B)
    check(A + y, A + B)
    check(A - y, A - B)
    check(A * y, A * B)
    check(A / y, A / B)
    check(A ** 2 < y, A ** 2 < B)
    check(A == y, A == B)
    check(A.T @ y, A.T @ B)
    check(np.float32(2) * mv.array(A.astype(np.float32)), np.float32(2) * A.astype(np.float32))


def test_scalars_and_dtypes_follow_numpy(engine):
    x32 = mv.array(A.astype(np.float32))
    check(np.multiply(2, x32), np.multiply(2, A.astype(np.float32)))
    check(np.add(x32, B), np.add(A.astype(np.float32), B))
    check(np.add(np.int8(3), mv.array(np.arange(4, dtype=np.int8))),
          np.add(np.int8(3), np.arange(4, dtype=np.int8)))
    check(np.add(mv.array(A), B, dtype=np.float32), np.add(A, B, dtype=np.float32))


def test_out_narray_is_written_in_place(engine):
    x, y, z = mv.array(A), mv.array(B), mv.zeros((3, 4))
    assert np.add(x, y, out=z) is z
    check(z, A + B)
    assert np.exp(x, out=(z,)) is z
    check(z, np.exp(A))
    np.multiply(B, x, out=x)
    check(x, A * B)


def test_out_numpy_array_receives_the_result(engine):
    x, host = mv.array(A), np.zeros((3, 4))
    assert np.add(x, B, out=host) is host
    np.testing.assert_array_equal(host, A + B)
    acc = np.ones((3, 4))
    acc += x
    assert type(acc) is np.ndarray
    np.testing.assert_array_equal(acc, 1 + A)


def test_out_casts_by_numpy_rules(engine):
    with pytest.raises(TypeError):
        np.add(mv.array(A), B, out=np.zeros((3, 4), dtype=np.int64))
    with pytest.raises(TypeError):
        np.add(mv.array(A), B, out=mv.zeros((3, 4), dtype=np.int64))
    host = np.zeros((3, 4), dtype=np.float32)
    np.add(mv.array(A), B, out=host)
    np.testing.assert_array_equal(host, (A + B).astype(np.float32))


REDUCTIONS = ["add", "multiply", "maximum", "minimum", "logical_and", "logical_or"]


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("kwargs", [{}, {"axis": None}, {"axis": 1}, {"axis": (0, 1)},
                                    {"axis": -1, "keepdims": True}])
def test_ufunc_reduce(engine, name, kwargs):
    ufunc = getattr(np, name)
    check(ufunc.reduce(mv.array(A), **kwargs), ufunc.reduce(A, **kwargs))


def test_ufunc_reduce_with_dtype_and_out(engine):
    ints = np.arange(12, dtype=np.int8).reshape(3, 4)
    check(np.add.reduce(mv.array(ints), dtype=np.int64), np.add.reduce(ints, dtype=np.int64))
    check(np.add.reduce(mv.array(ints > 5)), np.add.reduce(ints > 5))
    out = mv.zeros(4)
    assert np.maximum.reduce(mv.array(A), out=out) is out
    check(out, np.maximum.reduce(A))
    host = np.zeros(3)
    assert np.multiply.reduce(mv.array(A), axis=1, out=host) is host
    np.testing.assert_array_equal(host, np.multiply.reduce(A, axis=1))


def test_ufunc_reduce_of_other_ufuncs_is_numpys(engine):
    check(np.subtract.reduce(mv.array(A)), np.subtract.reduce(A))
    check(np.subtract.reduce(mv.array(A), axis=1), np.subtract.reduce(A, axis=1))
    with pytest.raises(ValueError, match="not reorderable"):
        np.subtract.reduce(mv.array(A), axis=None)


@pytest.mark.parametrize("name, function", [("add", "cumsum"), ("multiply", "cumprod")])
def test_ufunc_accumulate(engine, name, function):
    if not hasattr(mv, function):
        with pytest.raises(TypeError, match=f"{name}.accumulate"):
            getattr(np, name).accumulate(mv.array(A))
        return
    ufunc = getattr(np, name)
    check(ufunc.accumulate(mv.array(A)), ufunc.accumulate(A))
    check(ufunc.accumulate(mv.array(A), axis=1), ufunc.accumulate(A, axis=1))


@pytest.mark.parametrize("name", ["add", "multiply", "subtract", "greater"])
def test_ufunc_outer(engine, name):
    ufunc = getattr(np, name)
    a, b = np.arange(3.0), B[:2]
    check(ufunc.outer(mv.array(a), mv.array(b)), ufunc.outer(a, b))
    check(ufunc.outer(a, mv.array(b)), ufunc.outer(a, b))


def test_other_ufunc_methods_run_minervas(engine):
    x, want = mv.array(A), A.copy()
    assert np.add.at(x, [0, 2, 0], 1.0) is None
    np.add.at(want, [0, 2, 0], 1.0)
    check(x, want)
    check(np.add.reduceat(x, [0, 2]), np.add.reduceat(want, [0, 2]))
    assert np.logaddexp.at(x, [0], 1.0) is None
    np.logaddexp.at(want, [0], 1.0)
    check(x, want)


def test_a_ufunc_minerva_lacks_runs_on_the_host(engine, without):
    name = without(mv, "spacing")
    check(getattr(np, name)(mv.array(A)), getattr(np, name)(A))
    assert mv.fallback_stats() == {f"numpy.{name}": 1}


def test_ufunc_keywords_are_numpys(engine):
    out, want = mv.array(B), B.copy()
    assert np.add(mv.array(A), B, out=out, where=A > 0) is out
    np.add(A, B, out=want, where=A > 0)
    check(out, want)
    host = B.copy()
    np.add(mv.array(A), B, out=host, where=A > 0)
    np.testing.assert_array_equal(host, want)
    with pytest.raises(TypeError, match="bogus"):
        np.add(mv.array(A), B, bogus=1)


# ---- array functions ------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda m, a, b: m.sum(a),
    lambda m, a, b: m.sum(a, axis=1, keepdims=True),
    lambda m, a, b: m.mean(a, axis=0),
    lambda m, a, b: m.max(a),
    lambda m, a, b: m.argmin(a, axis=1),
    lambda m, a, b: m.dot(a, b.T),
    lambda m, a, b: m.matmul(a.T, b),
    lambda m, a, b: m.concatenate([a, b]),
    lambda m, a, b: m.concatenate([a, B], axis=1),
    lambda m, a, b: m.stack([a, b], axis=1),
    lambda m, a, b: m.transpose(a),
    lambda m, a, b: m.reshape(a, (4, 3)),
    lambda m, a, b: m.where(a > 0, a, b),
    lambda m, a, b: m.clip(a, -1, 1),
    lambda m, a, b: m.swapaxes(a, 0, 1),
], ids=lambda f: "")
def test_numpy_functions_run_in_minerva(engine, call):
    check(call(np, mv.array(A), mv.array(B)), call(np, A, B))


def test_numpy_function_with_numpy_out(engine):
    host = np.zeros(4)
    assert np.sum(mv.array(A), axis=0, out=host) is host
    np.testing.assert_array_equal(host, A.sum(axis=0))


def test_numpy_linalg_functions_run_in_minerva_linalg(engine):
    got = np.linalg.norm(mv.array(A))
    assert isinstance(got, mv.NArray)
    np.testing.assert_allclose(got.to_numpy(), np.linalg.norm(A), rtol=1e-12)


def test_a_linalg_function_minerva_lacks_runs_on_the_host(engine, without):
    name = without(mv.linalg, "cond")
    got = getattr(np.linalg, name)(mv.array(A[:, :3] + np.eye(3)))
    assert got == getattr(np.linalg, name)(A[:, :3] + np.eye(3))
    assert mv.fallback_stats() == {f"numpy.linalg.{name}": 1}


def test_a_function_minerva_lacks_runs_on_the_host(engine, without):
    name = without(mv, "gradient")
    got, want = getattr(np, name)(mv.array(A)), getattr(np, name)(A)
    assert type(got) is type(want)
    for values, expected in zip(got, want):
        check(values, expected)
    assert mv.fallback_stats() == {f"numpy.{name}": 1}


def test_like_keyword_creates_narrays(engine):
    x = mv.array(A)
    check(np.asarray([1, 2], like=x), np.asarray([1, 2]))
    check(np.arange(5, like=x), np.arange(5))


def test_asarray_and_array_materialize_instead_of_dispatching(engine):
    x = mv.array(A)
    for values in (np.asarray(x), np.array(x), np.asarray(x, dtype=np.float32)):
        assert type(values) is np.ndarray
        np.testing.assert_array_equal(values, A.astype(values.dtype))
    np.testing.assert_allclose(x, A)


def test_a_reexported_numpy_function_runs_numpy_implementation(engine, monkeypatch):
    monkeypatch.setattr(mv, "ndim", np.ndim, raising=False)
    assert np.ndim(mv.array(A)) == 2


def test_mixed_operands_land_on_the_current_device(engine):
    d0, d1 = mv.create_cpu_device(), mv.create_cpu_device()
    with mv.device(d0):
        x = mv.array(A)
    with mv.device(d1):
        got = np.add(B, x)
        assert got.device == d1
        check(got, A + B)
        check(np.concatenate([x, B]), np.concatenate([A, B]))


def test_other_array_types_are_not_implemented(engine):
    class Other:
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            return "other"

    assert mv.array(A).__array_ufunc__(np.add, "__call__", mv.array(A), Other()) \
        is NotImplemented
    assert np.add(mv.array(A), Other()) == "other"
    assert mv.array(A).__array_function__(np.sum, (mv.NArray, Other), (A,), {}) \
        is NotImplemented


def test_functions_of_other_numpy_modules_are_not_mistaken_for_minervas(engine):
    x = mv.array(A)
    check(np.emath.sqrt(x), np.emath.sqrt(A))  # complex where A < 0: not minerva's sqrt
    with pytest.raises(TypeError) as numpys:
        np.strings.upper(A)
    with pytest.raises(type(numpys.value), match=str(numpys.value)):
        np.strings.upper(x)
    if hasattr(mv, "sliding_window_view"):
        check(np.lib.stride_tricks.sliding_window_view(x, 2, axis=1),
              np.lib.stride_tricks.sliding_window_view(A, 2, axis=1))
