"""The host fallback: NumPy's names minerva has no native version of run NumPy's code on
host copies and give NumPy's values, dtypes and result types (NArrays where NumPy gives
arrays); writes reach the NArrays; MINERVA_FALLBACK's modes, the counts, the trace's
host track; NArray's attributes through the host; the native functions that need no
values (and do not wait)."""
from __future__ import annotations

import collections
import json
import threading
import time
import warnings

import numpy as np
import pytest

import minerva as mv
from minerva.api.fallback import HostAttribute, resolve
from minerva.api.fallback.host import HostCopies, HostFunction
from minerva.builder import build
from minerva.common.config import Config
from minerva.ops import registry
from minerva.ops.dtypes import holds
from tests.support.trace_checks import check_chrome_trace

A = np.arange(12, dtype=np.float64).reshape(3, 4) - 4.5
V = np.array([3.0, -1.0, 2.5, 0.0, 7.0, 2.5])
I = np.array([3, 1, 4, 1, 5, 9, 2, 6])  # noqa: E741  (NumPy's docs' name for indices)
Z = np.array([1 + 2j, -3j, 0.5, 2 - 1j])


def same(got, want):
    """``got`` is minerva's form of NumPy's result ``want``: an NArray of the same values,
    dtype and shape for an array of a dtype minerva holds (numbers; strings, datetimes,
    records on a CPU device), the same container type element by element, NumPy's own
    value otherwise (an object array)."""
    if isinstance(want, np.ndarray) and holds(want.dtype):
        assert isinstance(got, mv.NArray), type(got)
        values = got.to_numpy()
        assert values.dtype == want.dtype and values.shape == want.shape
        if want.dtype.kind in "biufc":
            np.testing.assert_allclose(values, want, rtol=1e-12, atol=1e-12, equal_nan=True)
        else:
            np.testing.assert_array_equal(values, want)
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    elif isinstance(want, np.ndarray):
        assert type(got) is np.ndarray and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    else:
        assert type(got) is type(want) and (got == want or got != got and want != want)


def both(call):
    """``call(module, convert)`` with minerva (NArray inputs) and with NumPy."""
    return call(mv, mv.array), call(np, np.asarray)


TOP_LEVEL = {
    "corrcoef": lambda m, a: m.corrcoef(a(A)),
    "cov": lambda m, a: m.cov(a(A), rowvar=False),
    "convolve": lambda m, a: m.convolve(a(V), a(V[:3])),
    "correlate": lambda m, a: m.correlate(a(V), a(V[:3]), "full"),
    "interp": lambda m, a: m.interp(a(V), a(np.sort(V)), a(I[:6] * 1.0)),
    "digitize": lambda m, a: m.digitize(a(V), a(np.array([0.0, 1.0, 3.0]))),
    "ediff1d": lambda m, a: m.ediff1d(a(V), to_begin=-1),
    "trapezoid": lambda m, a: m.trapezoid(a(A), axis=1),
    "vander": lambda m, a: m.vander(a(V[:4]), 3),
    "unwrap": lambda m, a: m.unwrap(a(V * 3)),
    "i0": lambda m, a: m.i0(a(V)),
    "polyfit": lambda m, a: m.polyfit(a(V), a(V ** 2), 2),
    "polyval": lambda m, a: m.polyval(a(V[:3]), a(V)),
    "roots": lambda m, a: m.roots(a(np.array([1.0, -3.0, 2.0]))),
    "lexsort": lambda m, a: m.lexsort((a(I), a(I % 3))),
    "union1d": lambda m, a: m.union1d(a(I), a(I + 2)),
    "setxor1d": lambda m, a: m.setxor1d(a(I), a(I + 2)),
    "unravel_index": lambda m, a: m.unravel_index(a(I), (3, 4)),
    "ravel_multi_index": lambda m, a: m.ravel_multi_index((a(I % 3), a(I % 4)), (3, 4)),
    "tril_indices_from": lambda m, a: m.tril_indices_from(a(A[:, :3])),
    "packbits": lambda m, a: m.packbits(a(I % 2 == 0)),
    "iscomplex": lambda m, a: m.iscomplex(a(Z)),
    "real_if_close": lambda m, a: m.real_if_close(a(Z.real + 0j)),
    "sort_complex": lambda m, a: m.sort_complex(a(Z)),
    "select": lambda m, a: m.select([a(V) > 1, a(V) < 0], [a(V), a(-V)], 9.0),
    "choose": lambda m, a: m.choose(a(I % 2), [a(I), a(-I)]),
    "extract": lambda m, a: m.extract(a(V) > 1, a(V)),
    "block": lambda m, a: m.block([[a(A), a(A)], [a(A), a(A)]]),
    "apply_along_axis": lambda m, a: m.apply_along_axis(np.sum, 1, a(A)),
    "histogram2d": lambda m, a: m.histogram2d(a(V), a(V[::-1]), bins=3),
    "histogramdd": lambda m, a: m.histogramdd(a(A[:, :2]), bins=2),
    "gradient": lambda m, a: m.gradient(a(A)),
    "frexp": lambda m, a: m.frexp(a(V)),
    "nancumsum": lambda m, a: m.nancumsum(a(V)),
    "fix": lambda m, a: m.fix(a(V)),
    "asarray_chkfinite": lambda m, a: m.asarray_chkfinite(a(V)),
    "piecewise": lambda m, a: m.piecewise(a(V), [a(V) < 1], [-1.0, 1.0]),
    "array2string": lambda m, a: m.array2string(a(V)),
    "binary_repr": lambda m, a: m.binary_repr(10, 8),
}


@pytest.mark.parametrize("name", sorted(TOP_LEVEL))
def test_top_level_names_give_numpys_results(engine, name):
    got, want = both(TOP_LEVEL[name])
    same(got, want)


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "ihfft", "fft2", "ifft2", "fftn",
                                  "ifftn", "rfft2", "rfftn"])
def test_fft_transforms_give_numpys_results(engine, name):
    got, want = both(lambda m, a: getattr(m.fft, name)(a(A), norm="ortho"))
    same(got, want)
    assert isinstance(mv.fft.__dict__.get(name, getattr(mv.fft, name)), HostFunction)


@pytest.mark.parametrize("inverse, forward", [("ifft", "fft"), ("ifftn", "fftn"),
                                              ("irfft", "rfft"), ("irfftn", "rfftn"),
                                              ("ifft2", "fft2"), ("hfft", "ihfft")])
def test_fft_round_trips(engine, inverse, forward):
    x = mv.array(A)
    spectrum = getattr(mv.fft, forward)(x)
    back = getattr(mv.fft, inverse)(spectrum, **({"n": 4} if "h" in forward else {}))
    back = back if "r" in forward or "h" in forward else mv.real(back)
    np.testing.assert_allclose(back.to_numpy(), A, atol=1e-12)
    if "r" in forward:  # an explicit length for an odd-length input
        odd = mv.fft.irfft(mv.fft.rfft(x[:, :3]), n=3)
        np.testing.assert_allclose(odd.to_numpy(), A[:, :3], atol=1e-12)


def test_native_fft_helpers_are_numpys(engine):
    for n, d in ((8, 1.0), (7, 0.25), (1, 2.0)):
        same(mv.fft.fftfreq(n, d), np.fft.fftfreq(n, d))
        same(mv.fft.rfftfreq(n, d), np.fft.rfftfreq(n, d))
    for axes in (None, 0, (1,), (0, 1)):
        same(mv.fft.fftshift(mv.array(A), axes), np.fft.fftshift(A, axes))
        same(mv.fft.ifftshift(mv.array(A), axes), np.fft.ifftshift(A, axes))
    with pytest.raises(ValueError, match="n should be an integer"):
        mv.fft.fftfreq(2.5)
    assert mv.fallback_stats() == {}


@pytest.mark.parametrize("name", ["sqrt", "log", "log2", "log10", "arccos", "arcsin",
                                  "arctanh"])
def test_emath_gives_complex_results_where_numpy_does(engine, name):
    for values in (V, np.abs(V) / 10):
        with np.errstate(divide="ignore", invalid="ignore"):
            got, want = both(lambda m, a, v=values: getattr(m.emath, name)(a(v)))
        same(got, want)
        with np.errstate(divide="ignore", invalid="ignore"):
            same(mv.emath.logn(2, mv.array(values)), np.emath.logn(2, values))
        same(mv.emath.power(mv.array(values), 0.5), np.emath.power(values, 0.5))


def test_random_bit_generators_are_numpys(engine):
    for name in ("PCG64", "MT19937", "Philox", "SFC64", "SeedSequence", "BitGenerator"):
        assert getattr(mv.random, name) is getattr(np.random, name)
    same(mv.random.default_rng(mv.random.PCG64(5)).random(3),
         np.random.default_rng(np.random.PCG64(5)).random(3))
    mv.random.set_bit_generator(np.random.MT19937(11))
    assert isinstance(mv.random.get_bit_generator(), np.random.MT19937)
    same(mv.random.rand(3), np.random.RandomState(np.random.MT19937(11)).rand(3))


def test_numpys_own_objects_are_handed_out(engine):
    for name in ("ndindex", "poly1d", "vectorize", "nditer", "matrix", "ScalarType",
                 "sctypeDict", "testing", "show_config", "busdaycalendar", "get_include"):
        assert resolve("", name) is getattr(np, name)  # where minerva has no native one
        assert getattr(mv, name) is getattr(np, name) or name in mv.NAMES
    assert list(resolve("", "ndindex")(2, 2)) == list(np.ndindex(2, 2))
    assert mv.linalg.test is np.linalg.test and mv.lib.NumpyVersion is np.lib.NumpyVersion
    assert mv.fallback_stats() == {}


def test_results_keep_their_kinds(engine):
    x = mv.array(V)
    assert mv.asanyarray(x) is x  # NumPy returns its argument: minerva returns the NArray
    dates = np.array(["2001-01-01", "2001-02-03"], dtype="M8[D]")
    same(mv.datetime_as_string(dates), np.datetime_as_string(dates))
    got = mv.frombuffer(np.array([1, 2], dtype=">i2").tobytes(), dtype=">i2")
    assert got.dtype == np.int16 and got.tolist() == [1, 2]
    Pair = collections.namedtuple("Pair", "left right")
    copies = HostCopies([])
    converted = copies.to_device({"a": Pair(np.ones(2), [np.arange(2), 3]), "b": "text"})
    assert type(converted["a"]) is Pair and converted["b"] == "text"
    same(converted["a"].right, [np.arange(2), 3])
    same(converted["a"].left, np.ones(2))


# ---- writes ---------------------------------------------------------------------------------

def _write_cases():
    return {
        "put": lambda m, x: m.put(x, [0, 5], [-1.0, -2.0]),
        "place": lambda m, x: m.place(x, x > 0, [9.0, 8.0]),
        "putmask": lambda m, x: m.putmask(x, x < 0, 0.5),
        "fill_diagonal": lambda m, x: m.fill_diagonal(x, 7.0),
        "copyto where": lambda m, x: m.copyto(x, -x, where=x > 1),
        "put_along_axis": lambda m, x: m.put_along_axis(x, np.array([[1], [0], [2]]), 4.0,
                                                        axis=1),
    }


@pytest.mark.parametrize("name", sorted(_write_cases()))
@pytest.mark.parametrize("through", ["minerva", "numpy"])
def test_writes_reach_the_array_and_its_views(engine, name, through):
    write, want = _write_cases()[name], A.copy()
    x = mv.array(A)
    view = x[1:]
    before = x * 1  # an earlier reader keeps the old values
    write(mv if through == "minerva" else np, x)
    write(np, want)
    same(x, want)
    same(view, want[1:])
    same(x + 1, want + 1)
    same(before, A)


@pytest.mark.parametrize("name", sorted(_write_cases()))
def test_writes_into_a_view_reach_its_base(engine, name):
    base, want = mv.array(A), A.copy()
    _write_cases()[name](mv, base[:, 1:])
    _write_cases()[name](np, want[:, 1:])
    same(base, want)


def test_out_narrays_are_written(engine):
    x, out = mv.array(V), mv.zeros(6)
    result = mv.nancumsum(x, out=out)
    assert result is out
    same(out, np.nancumsum(V))
    spectrum = mv.zeros(6, dtype=np.complex128)
    assert np.fft.fft(x, out=spectrum) is spectrum
    same(spectrum, np.fft.fft(V))
    mantissa, exponent = mv.zeros(6), mv.zeros(6, dtype=np.int32)
    assert mv.frexp(x, mantissa, exponent)[0] is mantissa
    same(exponent, np.frexp(V)[1])


def test_a_read_only_target_is_refused_as_numpy_refuses_it(engine):
    target = mv.broadcast_to(mv.array(V), (2, 6))
    with pytest.raises(ValueError, match="read-only"):
        mv.place(target, target > 0, [1.0])
    with pytest.raises(ValueError, match="read-only"):
        np.place(np.broadcast_to(V, (2, 6)), np.ones((2, 6), bool), [1.0])


# ---- modes, counts, traces ------------------------------------------------------------------

def test_the_mode_is_a_setting():
    assert Config.from_env({}).fallback == "allow"
    assert Config.from_env({"MINERVA_FALLBACK": "WARN"}).fallback == "warn"
    with pytest.raises(ValueError, match="MINERVA_FALLBACK='never'.*allow, warn, raise"):
        Config.from_env({"MINERVA_FALLBACK": "never"})


def test_allow_runs_without_warning():
    mv.init(fallback="allow")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same(mv.fft.fft(mv.array(V)), np.fft.fft(V))


def test_warn_warns_once_per_name_at_the_users_line():
    mv.init(fallback="warn")
    x = mv.array(V)
    with pytest.warns(RuntimeWarning, match="has no native version") as seen:
        line = _line_after()
        mv.fft.fft(x)
        mv.fft.fft(x)
        mv.fft.ifft(x)
    assert [str(w.message).split()[1] for w in seen] == ["numpy.fft.fft", "numpy.fft.ifft"]
    assert seen[0].filename == __file__ and seen[0].lineno == line
    assert f"test_fallback.py:{line}" in str(seen[0].message)


def _line_after() -> int:
    import inspect
    return inspect.currentframe().f_back.f_lineno + 1


def test_raise_raises_a_fallback_error_naming_the_function():
    mv.init(fallback="raise")
    with pytest.raises(mv.FallbackError, match="numpy.fft.fft has no native version") as info:
        mv.fft.fft(mv.array(V))
    assert isinstance(info.value, mv.MinervaError) and isinstance(info.value,
                                                                  NotImplementedError)
    assert info.value.name == "numpy.fft.fft"
    with pytest.raises(mv.FallbackError, match="numpy.histogram2d"):
        np.histogram2d(mv.array(V), mv.array(V))
    same(mv.fft.fftshift(mv.array(V)), np.fft.fftshift(V))  # native: allowed
    assert mv.fallback_stats() == {}


def test_fallback_stats_count_each_name(monkeypatch):
    monkeypatch.setattr(mv.NArray, "tobytes", HostAttribute("tobytes"))  # through the host
    x = mv.array(V)
    mv.fft.fft(x), mv.fft.fft(x), mv.emath.sqrt(x), x.tobytes()
    np.histogram2d(x, x)
    assert mv.fallback_stats() == {"numpy.emath.sqrt": 1, "numpy.fft.fft": 2,
                                   "numpy.histogram2d": 1, "numpy.ndarray.tobytes": 1}
    mv.reset_fallback_stats()
    assert mv.fallback_stats() == {}
    mv.shutdown()
    mv.fft.fft(mv.array(V))
    assert mv.fallback_stats() == {"numpy.fft.fft": 1}  # a new runtime counts anew


def test_a_fallback_call_is_a_host_slice_in_the_trace(tmp_path):
    path = tmp_path / "run.json"
    mv.profiler.start(str(path))
    x = mv.array(V)
    line = _line_after()
    y = mv.fft.fft(x) * 2
    y.wait(timeout=30)
    mv.profiler.stop()
    trace = json.loads(path.read_text())
    check_chrome_trace(trace)
    events = trace["traceEvents"]
    host = [e for e in events if e.get("cat") == "host"]
    assert [e["name"] for e in host] == ["numpy.fft.fft"]
    assert host[0]["args"]["created_at"] == f"test_fallback.py:{line}"
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events if e["ph"] == "M"
             and e["name"] in ("process_name", "thread_name")}
    assert names[(host[0]["pid"], host[0]["tid"])] == "host"
    assert "from_host" in {e["name"] for e in events if e.get("cat") == "op"}


def test_numpy_functions_minerva_lacks_run_through_array_function(engine):
    x, y = mv.array(V), mv.array(V[::-1])
    got = np.histogram2d(x, y, bins=2)
    same(got, np.histogram2d(V, V[::-1], bins=2))
    same(np.emath.sqrt(x), np.emath.sqrt(V))
    same(np.polynomial.polynomial.polyval(x, [1.0, 2.0]),
         np.polynomial.polynomial.polyval(V, [1.0, 2.0]))
    assert set(mv.fallback_stats()) >= {"numpy.histogram2d", "numpy.emath.sqrt"}


def test_a_jit_recording_refuses_the_host_fallback():
    @mv.jit
    def spectrum(x):
        return mv.fft.fft(x)

    with pytest.raises(mv.JitError, match="numpy.fft.fft"):
        spectrum(mv.array(V))


# ---- NArray's attributes through the host --------------------------------------------------

HOST_NAMES = ("tobytes", "view", "flat", "data", "byteswap", "setfield", "getfield", "choose")


@pytest.fixture
def through_the_host(monkeypatch):
    """NArray without native versions of ``HOST_NAMES``: they go through the host."""
    for name in HOST_NAMES:
        monkeypatch.setattr(mv.NArray, name, HostAttribute(name))


def test_ndarray_methods_minerva_lacks_run_on_the_host(engine, through_the_host):
    x = mv.array(A)
    assert x.tobytes() == A.tobytes()
    same(x.view(np.int64), A.view(np.int64))
    same(x.getfield(np.float64), A.getfield(np.float64))
    same(mv.array(I % 2).choose([-1, 1]), (I % 2).choose([-1, 1]))
    assert x.flat[5] == A.flat[5] and bytes(x.data) == bytes(A.data)
    with pytest.raises(ValueError, match="read-only"):
        x.flat[0] = 1.0  # a host copy: refused rather than lost
    assert set(mv.fallback_stats()) >= {"numpy.ndarray.tobytes", "numpy.ndarray.flat"}


def test_ndarray_methods_that_write_in_place_reach_the_array(engine, through_the_host):
    x, want = mv.array(A), A.copy()
    x.byteswap(inplace=True), want.byteswap(inplace=True)
    same(x, want)
    x, want = mv.array(A), A.copy()
    view = x[0]
    x.setfield(np.float64(2.0), np.float64), want.setfield(np.float64(2.0), np.float64)
    same(x, want)
    same(view, want[0])


def test_names_that_cannot_run_on_a_host_copy_say_why(engine):
    x = mv.array(A)
    if "resize" not in type(x).__dict__:
        with pytest.raises(AttributeError, match="resize cannot run on a host copy"):
            x.resize((2, 6))
    with pytest.raises(AttributeError, match="^'NArray' object has no attribute 'nope'$"):
        x.nope  # noqa: B018
    with pytest.raises(AttributeError):
        x.__array_struct__  # noqa: B018


# ---- the native functions that need no values ----------------------------------------------

GATE, STARTED = threading.Event(), threading.Event()


def _gate_impl(xp, x, *, out):
    STARTED.set()
    GATE.wait(timeout=30)
    out[...] = x


GATED = registry.register("test_fallback_gate", lambda x: (x,), _gate_impl)


def test_no_value_functions_do_not_wait():
    mv.init(engine="dag")
    GATE.clear(), STARTED.clear()
    safety = threading.Timer(30, GATE.set)
    safety.start()
    try:
        pending = build(GATED, [mv.array(A)])
        assert STARTED.wait(timeout=30)
        start = time.monotonic()
        assert mv.shape(pending) == (3, 4) and mv.ndim(pending) == 2
        assert mv.size(pending) == 12 and mv.size(pending, 1) == 4
        assert mv.may_share_memory(pending, pending[1:]) and mv.shares_memory(pending,
                                                                            pending[1])
        assert not mv.isscalar(pending) and mv.iterable(pending)
        assert time.monotonic() - start < 5 and not GATE.is_set()
    finally:
        GATE.set()
        safety.cancel()
    same(pending, A)


@pytest.mark.parametrize("value", [[[1, 2, 3], [4, 5, 6]], 3.5, [], (1, 2, 3), A, "text"])
def test_shapes_of_anything_are_numpys(value):
    assert mv.shape(value) == np.shape(value) and mv.ndim(value) == np.ndim(value)
    assert mv.size(value) == np.size(value)
    assert mv.isscalar(value) == np.isscalar(value)
    assert mv.iterable(value) == np.iterable(value)


def test_scalars_and_zero_d_arrays(engine):
    zero_d = mv.array(2.0)
    assert mv.shape(zero_d) == () and not mv.iterable(zero_d) and not mv.isscalar(zero_d)
    assert mv.isscalar(2.0) and mv.isscalar(np.float32(1)) and not mv.isscalar([1])
    assert mv.broadcast_shapes((3, 1), (1, 4)) == (3, 4)


VIEWS = {
    "same": lambda a: a, "tail": lambda a: a[2:], "head": lambda a: a[:2],
    "evens": lambda a: a[::2], "odds": lambda a: a[1::2], "reversed": lambda a: a[::-1],
    "column": lambda a: a.reshape(3, 4)[:, 1], "empty": lambda a: a[5:5],
    "last": lambda a: a[-1:], "transposed": lambda a: a.reshape(3, 4).T,
}


@pytest.mark.parametrize("first", sorted(VIEWS))
@pytest.mark.parametrize("second", ["evens", "odds", "tail", "head", "column", "same"])
def test_shared_memory_is_numpys(first, second):
    host, x = np.arange(12.0), mv.arange(12.0)
    for work in (0, -1):
        want = np.may_share_memory(VIEWS[first](host), VIEWS[second](host), max_work=work)
        assert mv.may_share_memory(VIEWS[first](x), VIEWS[second](x), max_work=work) == want
    want = np.shares_memory(VIEWS[first](host), VIEWS[second](host))
    assert mv.shares_memory(VIEWS[first](x), VIEWS[second](x)) == want
    assert np.may_share_memory(VIEWS[first](x), VIEWS[second](x)) == np.may_share_memory(
        VIEWS[first](host), VIEWS[second](host))


def test_separate_arrays_share_no_memory(engine):
    x, y = mv.arange(4.0), mv.arange(4.0)
    assert not mv.may_share_memory(x, y) and not mv.shares_memory(x, y)
    assert not mv.may_share_memory(x, np.arange(4.0)) and not mv.may_share_memory(x, [1.0])
    assert mv.may_share_memory(x, mv.asarray(x)) and not mv.may_share_memory(x, x.copy())
    assert mv.may_share_memory(np.arange(3), np.arange(3)) is False


# ---- stride tricks: native views ------------------------------------------------------------

@pytest.mark.parametrize("window, axis", [(2, None), ((2, 3), None), (2, 1), ((2, 2), (0, 0)),
                                          (3, -1)])
def test_sliding_window_views_are_numpys(engine, window, axis):
    matrix = V if axis is None and np.ndim(window) == 0 else A
    x = mv.array(matrix)
    got = mv.lib.stride_tricks.sliding_window_view(x, window, axis)
    want = np.lib.stride_tricks.sliding_window_view(matrix, window, axis)
    same(got, want)
    assert got.strides == want.strides and mv.shares_memory(got, x)
    assert not got.flags.writeable
    same(np.lib.stride_tricks.sliding_window_view(x, window, axis), want)
    assert mv.fallback_stats() == {}


def test_sliding_window_view_refuses_what_numpy_refuses(engine):
    for window, axis in ((7, None), (-1, None), ((2, 2), None), (2, 3)):
        with pytest.raises(Exception) as want:
            np.lib.stride_tricks.sliding_window_view(V, window, axis)
        with pytest.raises(type(want.value)):
            mv.lib.stride_tricks.sliding_window_view(mv.array(V), window, axis)


def test_as_strided_views_write_through(engine):
    x, host = mv.arange(10.0), np.arange(10.0)
    got = mv.lib.stride_tricks.as_strided(x[1:], shape=(3, 2), strides=(16, 8))
    want = np.lib.stride_tricks.as_strided(host[1:], shape=(3, 2), strides=(16, 8))
    same(got, want)
    got[0, 1] = -5.0
    want[0, 1] = -5.0
    same(x, host)
    same(mv.lib.stride_tricks.as_strided(x, (5,)), np.lib.stride_tricks.as_strided(host, (5,)))
    reader = mv.lib.stride_tricks.as_strided(x, writeable=False)
    assert not reader.flags.writeable
    with pytest.raises(ValueError, match="outside the array's memory"):
        mv.lib.stride_tricks.as_strided(x, shape=(20,))
    with pytest.raises(ValueError, match="mismatch in length of strides and shape"):
        mv.lib.stride_tricks.as_strided(x, shape=(2,), strides=(8, 8))


def test_ndarray_names_narray_lacks_are_descriptors_not_a_getattr(engine):
    """NArray has no ``__getattr__`` (Python then specialises every attribute read of an
    NArray): the names it lacks are HostAttribute descriptors; any other name is
    Python's plain AttributeError."""
    assert not hasattr(mv.NArray, "__getattr__")
    assert isinstance(vars(mv.NArray)["compress"], HostAttribute)
    same(mv.array(A).compress([True, False, True], axis=0),
         A.compress([True, False, True], axis=0))
    with pytest.raises(AttributeError, match="'NArray' object has no attribute 'nope'"):
        mv.ones(2).nope
    assert not hasattr(mv.ones(2), "nope")
