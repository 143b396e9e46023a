"""Dtypes beyond numbers, against NumPy: fixed-width strings and bytes, datetimes and
timedeltas, records (structured dtypes) on CPU devices; object arrays through the host
fallback; GPU devices (the CUDA test double) refuse what CuPy cannot hold; and ``x ** y``
with NumPy's ndarray bits (``square``/``sqrt``/``reciprocal`` for 2, 0.5 and -1)."""
from __future__ import annotations

import io

import numpy as np
import pytest

import minerva as mv
from tests.support.fake_cuda import gpu_runtime
from tests.support.profiling import python_calls

WORDS = np.array(["the", "cat", "sat", "on", "the", "mat", "a", "cat"])
BYTES = np.array([b"x", b"abc", b"", b"ab"])
DAYS = np.array(["2024-02-28", "2024-01-30", "2024-03-01", "2023-12-31", "2024-02-29"],
                dtype="datetime64[D]")
GAPS = np.array([3, -1, 0, 48, 7], dtype="timedelta64[h]")
RECORDS = np.array([(3, "Oslo", 1.5), (1, "Lima", -2.0), (2, "Pune", 0.25)],
                   dtype=[("id", "i4"), ("city", "U4"), ("temp", "f8")])
FAMILIES = {"str": WORDS, "bytes": BYTES, "datetime": DAYS, "timedelta": GAPS,
            "records": RECORDS}


def same(got, want) -> None:
    """``got`` (minerva's) is NumPy's ``want``: an NArray of the same dtype, shape and
    values for an array; the same value for a scalar."""
    if isinstance(want, np.ndarray):
        assert isinstance(got, mv.NArray), type(got)
        values = got.to_numpy()
        assert values.dtype == want.dtype, (values.dtype, want.dtype)
        np.testing.assert_array_equal(values, want, strict=True)
    elif isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for mine, theirs in zip(got, want):
            same(mine, theirs)
    else:
        value = got.item() if isinstance(got, mv.NArray) else got
        assert value == want.item() if isinstance(want, np.generic) else value == want


def both(call, *arrays):
    """``call(module, *arrays)`` with minerva (NArray copies of ``arrays``) and NumPy."""
    return call(mv, *(mv.array(a) for a in arrays)), call(np, *arrays)


def check(call, *arrays) -> None:
    same(*both(call, *arrays))


# ---- every family: creation, indexing, views, sorting, joins, where, casts -----------------

@pytest.mark.parametrize("family", FAMILIES)
def test_arrays_beyond_numbers_behave_as_numpys(engine, family):
    a = FAMILIES[family]
    check(lambda m, x: x, a)
    check(lambda m, x: x[1], a)
    check(lambda m, x: x[1:4], a)
    check(lambda m, x: x[::-2], a)
    check(lambda m, x: x[[0, 2, 2]], a)
    check(lambda m, x: x[np.array([True, False, True] + [False] * (len(a) - 3))], a)
    check(lambda m, x: x.reshape(1, -1).T, a)
    check(lambda m, x: m.concatenate([x, x[:2]]), a)
    check(lambda m, x: m.stack([x, x]), a)
    check(lambda m, x: m.where(m.arange(len(x)) % 2 == 0, x, x[::-1]), a)
    check(lambda m, x: m.empty_like(x).shape, a)
    check(lambda m, x: m.zeros(3, x.dtype), a)
    check(lambda m, x: x == x[::-1], a)
    check(lambda m, x: m.flip(x), a)
    assert mv.array(a).tolist() == a.tolist()
    assert repr(mv.array(a)) == repr(a)


@pytest.mark.parametrize("family", ["str", "bytes", "datetime", "timedelta"])
def test_sorting_unique_and_comparisons_beyond_numbers(engine, family):
    a = FAMILIES[family]
    check(lambda m, x: m.sort(x), a)
    check(lambda m, x: m.argsort(x, kind="stable"), a)
    check(lambda m, x: m.unique(x, return_index=True, return_inverse=True,
                                 return_counts=True), a)
    check(lambda m, x: (x < x[0], x >= x[2], x != x[1]), a)
    check(lambda m, x: (x.argmax(), x.argmin(), m.searchsorted(m.sort(x), x[0])), a)
    check(lambda m, x: m.isin(x, x[:2]), a)
    if a.dtype.kind in "mM":  # NumPy's maximum has no loop for strings
        check(lambda m, x: (x.max(), x.min(), m.maximum(x, x[::-1]), m.ptp(x)), a)
    else:
        with pytest.raises(TypeError):
            mv.array(a).max()


def test_item_assignment_and_scalars_compare_as_numpy(engine):
    def write(m, x):
        x[0] = "zebra"
        x[x == "cat"] = "dog"
        return x
    check(write, WORDS)
    check(lambda m, x: (x == "cat", x < "d", "mat" == x, x == 1, x == None), WORDS)  # noqa: E711
    check(lambda m, x: (x == b"ab", x > b"a"), BYTES)
    check(lambda m, x: (x == np.datetime64("2024-02-29"), x < np.datetime64("2024-02")),
          DAYS)
    check(lambda m, x: (x > 0, x == np.timedelta64(2, "D")), GAPS)
    with pytest.raises(TypeError):
        mv.array(DAYS) < 1
    with pytest.raises(TypeError):
        mv.equal(mv.array(WORDS), 1)


def test_casts_between_strings_numbers_and_dates(engine):
    numbers = np.array([1.5, -2.0, 10.0])
    check(lambda m, x: x.astype(str), numbers)
    check(lambda m, x: x.astype("U3"), numbers)
    check(lambda m, x: x.astype("S"), np.arange(4))
    check(lambda m, x: x.astype(float), np.array(["1.5", "-2", "1e3"]))
    check(lambda m, x: x.astype("datetime64[D]"), np.array(["2024-01-30", "2024-02-29"]))
    check(lambda m, x: x.astype("datetime64"), np.array(["2024-01", "2024-02-03"]))
    check(lambda m, x: x.astype(np.int64), DAYS)
    check(lambda m, x: x.astype("datetime64[M]").astype(str), DAYS)
    check(lambda m, x: m.array(x, dtype=str), numbers)
    check(lambda m, x: m.full(2, "ab", "U3"), numbers)


def test_datetime_and_timedelta_arithmetic_and_reductions(engine):
    check(lambda m, d, g: (d + g, d - g, d - d[0], m.diff(d)), DAYS, GAPS)
    check(lambda m, d, g: (g * 2, g // 3, g / np.timedelta64(1, "h"), -g, abs(g)), DAYS, GAPS)
    check(lambda m, d, g: (g.sum(), g.mean(), m.cumsum(g), d.max() - d.min()), DAYS, GAPS)
    check(lambda m, d, g: d + np.timedelta64(1, "W"), DAYS, GAPS)
    check(lambda m: m.arange(np.datetime64("2024-02-26"), np.datetime64("2024-03-04")))
    check(lambda m: m.arange(np.datetime64("2024-01"), np.datetime64("2024-06"), 2))
    with pytest.raises(TypeError):
        mv.array(DAYS) + mv.array(DAYS)
    with pytest.raises(TypeError):
        mv.array(DAYS).sum()


def test_string_ufuncs_and_numpy_strings(engine):
    check(lambda m, x: (x + x, m.add(x, "!"), "<" + x, m.strings.multiply(x, 2)), WORDS)
    same(np.char.str_len(mv.array(WORDS)), np.char.str_len(WORDS))
    same(np.strings.upper(mv.array(WORDS)), np.strings.upper(WORDS))
    same(mv.char.upper(mv.array(WORDS)), np.char.upper(WORDS))
    with pytest.raises(TypeError):
        mv.array(WORDS).sum()


# ---- records ---------------------------------------------------------------------------------

def test_record_fields_are_views_as_numpys(engine):
    check(lambda m, r: (r["id"], r["city"], r["temp"] * 2), RECORDS)
    check(lambda m, r: r[["temp", "id"]], RECORDS)
    check(lambda m, r: r[r["temp"] > 0]["city"], RECORDS)
    check(lambda m, r: m.sort(r, order="temp"), RECORDS)
    check(lambda m, r: m.argsort(r, order=["city"]), RECORDS)
    check(lambda m, r: m.unique(r["city"]), RECORDS)

    def write(m, r):
        r["temp"] = r["temp"] + 1
        r["city"][0] = "Rome"
        r[1] = (9, "Bonn", 9.5)
        return r
    check(write, RECORDS)
    nested = np.zeros(2, dtype=[("pos", "f8", (2,)), ("n", "i2")])
    nested["pos"] = [[1, 2], [3, 4]]
    check(lambda m, r: (r["pos"], r["pos"][:, 1], r["n"]), nested)
    x = mv.array(RECORDS)
    assert x[0]["city"].item() == RECORDS[0]["city"]
    assert x.dtype.names == RECORDS.dtype.names
    with pytest.raises(ValueError, match="no field of name"):
        x["nope"]
    with pytest.raises(IndexError):
        mv.arange(3)["id"]


def test_genfromtxt_and_loadtxt_give_records(engine):
    text = "date,city,temp\n2024-01-30,Oslo,-3.5\n2024-02-01,Lima,22.0\n2024-02-02,Oslo,1\n"
    mine = mv.genfromtxt(io.StringIO(text), delimiter=",", names=True, dtype=None,
                         encoding="utf-8")
    theirs = np.genfromtxt(io.StringIO(text), delimiter=",", names=True, dtype=None,
                           encoding="utf-8")
    same(mine, theirs)
    same(mv.unique(mine["city"], return_counts=True),
         np.unique(theirs["city"], return_counts=True))
    same(mine["date"].astype("datetime64[D]"), theirs["date"].astype("datetime64[D]"))
    rows = "1 Oslo 2.5\n2 Lima 3.0\n"
    dtype = [("n", "i8"), ("city", "U4"), ("v", "f8")]
    same(mv.loadtxt(io.StringIO(rows), dtype=dtype), np.loadtxt(io.StringIO(rows), dtype=dtype))


# ---- object arrays, refused dtypes -------------------------------------------------------------

def test_object_arrays_come_back_as_numpys_from_the_fallback(engine):
    twice = np.frompyfunc(lambda v: v * 2, 1, 1)
    got, want = twice(mv.arange(3)), twice(np.arange(3))
    assert type(got) is np.ndarray and got.dtype == object
    assert got.tolist() == want.tolist()
    for make in (lambda: mv.array([1, "a"], dtype=object), lambda: mv.zeros(2, object),
                 lambda: mv.array([None, 1]), lambda: mv.zeros(2, "(2,)f8"),
                 lambda: mv.arange(3).astype(object)):
        with pytest.raises(mv.DTypeError):
            make()


# ---- GPU devices refuse what CuPy cannot hold ------------------------------------------------

@pytest.fixture
def fake_gpu(monkeypatch):
    """CPU device 0 (yielded) and, current, a GPU device over the CUDA test double."""
    for _ in gpu_runtime(monkeypatch, with_cpu=True):   # made CPU device 0 first
        yield 0


def test_a_gpu_device_refuses_dtypes_beyond_numbers(fake_gpu):
    for make in (lambda: mv.array(WORDS), lambda: mv.array(DAYS), lambda: mv.array(RECORDS),
                 lambda: mv.zeros(3, "M8[D]"), lambda: mv.full(2, "a"),
                 lambda: mv.arange(3).astype(str), lambda: mv.empty(2, "S3")):
        with pytest.raises(mv.DTypeError, match="gpu device"):
            make()
    with mv.device(fake_gpu):
        words = mv.array(WORDS)
        numbers = mv.arange(3.0)
    with pytest.raises(mv.DTypeError, match="gpu device"):
        words.to(mv.current_device())
    same(numbers.to(mv.current_device()) * 2, np.arange(3.0) * 2)  # numbers still move
    text = mv.datetime_as_string(DAYS)  # a fallback's strings stay NumPy's on a GPU device
    assert type(text) is np.ndarray and text.tolist() == np.datetime_as_string(DAYS).tolist()


# ---- x ** y: NumPy's ndarray power, to the bit ------------------------------------------------

POWER_DTYPES = ("float16", "float32", "float64", "complex64", "complex128", "int64", "uint8",
                "bool")
EXPONENTS = (2, 0.5, -1, 1, 0, 3, 2.0, -1.0, np.int64(2), np.float64(0.5), True)


def _base(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    values = rng.standard_normal(257) * 3 + 1j * rng.standard_normal(257)
    if dtype == "bool":
        return values.real > 0
    if dtype.startswith("complex"):
        return values.astype(dtype)
    return (np.abs(values.real) if dtype[0] in "iu" else values.real).astype(dtype)


_ERRORS = (OverflowError, TypeError, ValueError)


def _outcome(function):
    """``function()``'s dtype and bytes, or the error it raised."""
    with np.errstate(all="ignore"):
        try:
            result = function()
        except _ERRORS as exc:
            return exc
    values = np.asarray(result)
    return values.dtype, values.tobytes()


def _same_outcome(got, want) -> bool:
    """The same dtype and bytes, or an error of the kind NumPy raised."""
    if isinstance(want, Exception):
        kind = next(k for k in _ERRORS if isinstance(want, k))
        return isinstance(got, kind)
    return got == want


@pytest.mark.parametrize("dtype", POWER_DTYPES)
def test_power_gives_numpys_ndarray_bits(engine, dtype):
    host = _base(dtype)
    for exponent in EXPONENTS:
        def power(m, x):
            return x ** exponent

        def in_place(m, x):
            x **= exponent
            return x
        for call in (power, in_place):
            for a in (host, host[3]):  # an array and a 0-d array
                a = np.array(a)
                want = _outcome(lambda: call(np, a.copy()))
                got = _outcome(lambda: call(mv, mv.array(a)).to_numpy())
                # bool **= -1 breaks two rules: NumPy names the cast, minerva the power
                either = call is in_place and isinstance(want, Exception)
                assert _same_outcome(got, want) or either and isinstance(got, Exception), (
                    dtype, exponent, call.__name__, a.ndim)


def test_power_of_a_scalar_is_numpy_power_and_a_reflected_power_too(engine):
    z = _base("complex128")
    s = mv.array(z)[4]  # a scalar: NumPy's scalars take no fast path
    with np.errstate(all="ignore"):
        for exponent in (2, 0.5, -1):
            assert np.asarray(s ** exponent).tobytes() == np.asarray(z[4] ** exponent).tobytes()
        assert (2 ** mv.array(z)).to_numpy().tobytes() == (2 ** z).tobytes()
        assert mv.power(mv.array(z), 2).to_numpy().tobytes() == np.power(z, 2).tobytes()


def test_strings_and_bytes_are_uploaded_at_once_as_numpys():
    """A host array of strings or bytes is copied into a new value at once on a CPU
    device (the engine's ``run_new``, no op built), NumPy's values and dtype."""
    for host in (np.array(WORDS), np.array([b"ab", b"c"]), np.array(WORDS).reshape(-1, 1)):
        mv.array(host)
        calls = python_calls(lambda: mv.array(host))
        assert "build" not in calls, calls
        got = mv.array(host)
        assert got.dtype == host.dtype and got.to_numpy().tobytes() == host.tobytes()
