"""The keywords the array API standard adds to NumPy's functions, with NumPy as the oracle:
creation functions with NumPy 2's signatures (``order=``, ``device=``, ``like=``) making
their result on the device asked for, in NumPy's memory order; ``astype(..., device=)``;
``fft.fftfreq``/``rfftfreq`` with ``dtype=`` and ``device=``; ``linalg.pinv`` with an array
of tolerances."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import minerva as mv

CREATION = ["asarray", "empty", "empty_like", "full", "full_like", "ones", "ones_like",
            "zeros", "zeros_like"]


def parameters(function) -> list:
    """``(name, kind, default)`` of each parameter of ``function``."""
    return [(p.name, p.kind, p.default) for p in
            inspect.signature(function).parameters.values()]


@pytest.mark.parametrize("name", CREATION + ["astype"])
def test_signatures_are_numpys(name):
    assert parameters(getattr(mv, name)) == parameters(getattr(np, name))


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_fftfreq_signatures_are_numpys_with_the_array_apis_dtype(name):
    ours = parameters(getattr(mv.fft, name))
    assert ours[:-1] == parameters(getattr(np.fft, name))
    assert ours[-1] == ("dtype", inspect.Parameter.KEYWORD_ONLY, None)


MAKERS = {
    "zeros": lambda m, **kw: m.zeros((2, 3), **kw),
    "ones": lambda m, **kw: m.ones((2, 3), "f4", **kw),
    "empty": lambda m, **kw: m.empty(4, **kw),
    "full": lambda m, **kw: m.full((2, 3), 7, **kw),
    "zeros_like": lambda m, **kw: m.zeros_like(np.ones((2, 2)), **kw),
    "ones_like": lambda m, **kw: m.ones_like(np.ones(3, "i4"), **kw),
    "empty_like": lambda m, **kw: m.empty_like(np.ones(3), **kw),
    "full_like": lambda m, **kw: m.full_like(np.ones(3), 2.5, **kw),
    "asarray": lambda m, **kw: m.asarray([1, 2], **kw),
    "arange": lambda m, **kw: m.arange(5, **kw),
    "astype": lambda m, **kw: m.astype(m.asarray([1, 2]), "f4", **kw),
    "astype method": lambda m, **kw: m.asarray([1, 2]).astype("f4", **kw),
    "fftfreq": lambda m, **kw: m.fft.fftfreq(5, **kw),
    "rfftfreq": lambda m, **kw: m.fft.rfftfreq(5, **kw),
}


@pytest.mark.parametrize("name", MAKERS)
def test_device_places_the_result_there(engine, name):
    first, second = mv.create_cpu_device(), mv.create_cpu_device()
    mv.set_device(first)
    want = MAKERS[name](np)
    on_second = MAKERS[name](mv, device=second)
    assert on_second.device == second
    assert MAKERS[name](mv, device=None).device == first
    assert on_second.to_device(first).device == first
    if name not in ("empty", "empty_like"):
        np.testing.assert_array_equal(np.asarray(on_second), want)
    assert on_second.dtype == want.dtype and on_second.shape == want.shape


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "full"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_fills_are_laid_out_in_numpys_order(engine, name, order):
    args = ((2, 3, 4), 5) if name == "full" else ((2, 3, 4),)
    got, want = getattr(mv, name)(*args, order=order), getattr(np, name)(*args, order=order)
    assert got.strides == want.strides and got.flags.f_contiguous == want.flags.f_contiguous
    if name != "empty":
        np.testing.assert_array_equal(np.asarray(got), want)


PROTOTYPES = {
    "fortran": lambda: np.ones((2, 3), order="F"),
    "permuted": lambda: np.ones((2, 3, 4)).transpose(1, 0, 2),
    "c": lambda: np.ones((2, 3)),
}


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
@pytest.mark.parametrize("prototype", PROTOTYPES)
@pytest.mark.parametrize("order", ["K", "A", "C", "F"])
@pytest.mark.parametrize("shape", [None, "same", "other ndim"])
def test_like_functions_are_laid_out_in_numpys_order(engine, name, prototype, order, shape):
    proto = PROTOTYPES[prototype]()
    shape = {None: None, "same": proto.shape[::-1], "other ndim": (2, 2, 2, 1)}[shape]
    extra = (3,) if name == "full_like" else ()
    want = getattr(np, name)(proto, *extra, order=order, shape=shape)
    for source in (proto, mv.asarray(proto)):
        got = getattr(mv, name)(source, *extra, order=order, shape=shape)
        assert (got.shape, got.strides) == (want.shape, want.strides)


def test_order_and_like_errors_are_numpys(engine):
    for bad in ({"order": "K"}, {"order": "A"}, {"like": [1]}):
        with pytest.raises(Exception) as want:
            np.zeros(3, **bad)
        with pytest.raises(want.type):
            mv.zeros(3, **bad)
    np.testing.assert_array_equal(np.asarray(mv.zeros(3, like=np.empty(0))), np.zeros(3))


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 6, 7])
def test_fftfreq_dtype_is_numpys_values_in_that_dtype(engine, name, dtype, n):
    got = getattr(mv.fft, name)(n, 0.3, dtype=dtype)
    want = getattr(np.fft, name)(n, 0.3).astype(dtype)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), want)


TOLERANCES = {
    "per matrix": ((3, 4, 2), lambda rng: rng.uniform(0, 0.6, 3)),
    "float32": ((3, 4, 4), lambda rng: np.full(3, 0.3, np.float32)),
    "broadcast": ((2, 3, 3, 2), lambda rng: rng.uniform(0, 1, (1, 3))),
    "0-d array": ((4, 4), lambda rng: np.array(0.2)),
    "empty": ((0, 1, 1), lambda rng: np.array([], np.float32)),
    "narray": ((3, 4, 2), lambda rng: mv.asarray(rng.uniform(0, 0.6, 3))),
}


@pytest.mark.parametrize("keyword", ["rtol", "rcond"])
@pytest.mark.parametrize("case", TOLERANCES)
def test_pinv_with_an_array_of_tolerances_is_numpys(engine, rng, keyword, case):
    shape, make = TOLERANCES[case]
    a = rng.standard_normal(shape).astype(np.float32 if case == "float32" else np.float64)
    tolerance = make(rng)
    want = np.linalg.pinv(a, **{keyword: np.asarray(tolerance)})
    got = mv.linalg.pinv(mv.asarray(a), **{keyword: tolerance})
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("tolerance", [[0.5], np.ones((2, 1))])
def test_pinv_tolerances_that_widen_the_batch_are_numpys_error(engine, tolerance):
    a = np.ones((2, 4, 4)) if np.ndim(tolerance) == 2 else np.ones((4, 4))
    with pytest.raises(ValueError):
        np.linalg.pinv(a, rtol=np.asarray(tolerance))
    with pytest.raises(ValueError):
        mv.linalg.pinv(mv.asarray(a), rtol=tolerance)
