"""NumPy's statistics in minerva (std, var, the nan-functions, median, quantiles, average,
ptp, count_nonzero, cumulative sums, diff, histogram, bincount) against NumPy itself:
values, dtypes and shapes identical, errors of the same class raised at once, under every
engine."""
from __future__ import annotations

import types
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minerva as mv

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN slices on purpose

DTYPES = (np.float64, np.float32, np.int32, np.int8, np.bool_)
HYPOTHESIS = settings(max_examples=20, deadline=None,
                      suppress_health_check=[HealthCheck.function_scoped_fixture])


def sample(rng, shape, dtype, nans=False):
    """Random values of ``dtype``; floats get NaNs when ``nans``."""
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-5, 9, size=shape).astype(dtype)
    values = (rng.standard_normal(shape) * 3).astype(dtype)
    if nans and values.size:
        values[rng.random(shape) < 0.2] = np.nan
    return values


def check(got, want):
    """Same dtype, shape and values (NaNs equal)."""
    values = got.to_numpy() if isinstance(got, mv.NArray) else np.asarray(got)
    want = np.asarray(want)
    assert values.dtype == want.dtype, (values.dtype, want.dtype)
    assert values.shape == want.shape, (values.shape, want.shape)
    np.testing.assert_array_equal(values, want)


def numpy_result(function, *args, **kwargs):
    """NumPy's result, or the exception it raises."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return function(*args, **kwargs), None
    except (TypeError, ValueError, IndexError) as exc:
        return None, exc


def compare(name, x_np, *args, **kwargs):
    """``mv.<name>`` against ``np.<name>`` on ``x_np``: equal results, or the same class
    of error, raised when the op is built."""
    want, error = numpy_result(getattr(np, name), x_np, *args, **kwargs)
    if error is not None:
        with pytest.raises(_family(error)):
            getattr(mv, name)(mv.array(x_np), *args, **kwargs)
        return
    got = getattr(mv, name)(mv.array(x_np), *args, **kwargs)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            check(g, w)
    else:
        check(got, want)


def _family(error):
    """The exception class minerva must raise where NumPy raised ``error`` (an AxisError
    is a ValueError and an IndexError: a ValueError will do)."""
    if isinstance(error, np.exceptions.AxisError):
        return ValueError
    for kind in (IndexError, TypeError, ValueError):
        if isinstance(error, kind):
            return kind
    raise AssertionError(error)


AXES = (None, 0, -1, (0, 2), (2, 0, 1))
REDUCTIONS = ("std", "var", "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanstd",
              "nanvar", "median", "nanmedian", "ptp", "count_nonzero")


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_match_numpy(engine, rng, name, dtype):
    x_np = sample(rng, (3, 4, 5), dtype, nans=True)
    for axis in AXES:
        for keepdims in (False, True):
            compare(name, x_np, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("name", ("std", "var", "nanstd", "nanvar"))
def test_ddof_correction_and_dtype(engine, rng, name):
    x_np = sample(rng, (4, 6), np.float64, nans=True)
    compare(name, x_np, axis=1, ddof=1)
    compare(name, x_np, axis=0, correction=2)
    compare(name, x_np.astype(np.int32), dtype=np.float32)
    compare(name, x_np, ddof=1, correction=1)  # ValueError, both given


@pytest.mark.parametrize("name", ("nanargmax", "nanargmin"))
@pytest.mark.parametrize("dtype", (np.float64, np.float32, np.int32))
def test_nanarg_reductions(engine, rng, name, dtype):
    x_np = sample(rng, (4, 5), dtype, nans=False)
    if dtype != np.int32:
        x_np[0, 1] = x_np[2, 3] = np.nan
    for axis in (None, 0, 1, -1):
        compare(name, x_np, axis=axis)
        compare(name, x_np, axis=axis, keepdims=True)
    with pytest.raises(TypeError):
        getattr(mv, name)(mv.array(x_np), axis=(0, 1))


def test_all_nan_slice_fails_when_the_op_runs(engine):
    x = mv.array(np.array([[np.nan, 1.0], [np.nan, np.nan]]))
    result = mv.nanargmax(x, axis=1)  # built at once: the error depends on the values
    with pytest.raises(mv.OpError) as info:
        result.to_numpy()
    assert isinstance(info.value.__cause__, ValueError)


@pytest.mark.parametrize("name", ("nanmax", "nanmin", "ptp", "nanargmax", "nanargmin",
                                  "median", "nansum", "std"))
def test_empty_reductions(engine, name):
    x_np = np.zeros((0, 3))
    compare(name, x_np, axis=0)
    compare(name, x_np, axis=1)


def test_reduction_out_and_methods(engine, rng):
    x_np = sample(rng, (3, 4), np.float64)
    x = mv.array(x_np)
    out = mv.zeros(4)
    assert mv.std(x, axis=0, out=out) is out
    check(out, np.std(x_np, axis=0))
    check(x.std(axis=1, ddof=1), x_np.std(axis=1, ddof=1))
    check(x.var(), x_np.var())
    check(x.ptp(axis=0), np.ptp(x_np, axis=0))
    with pytest.raises(TypeError):
        mv.std(x, where=x > 0)
    with pytest.raises(ValueError):
        mv.std(x, axis=0, out=mv.zeros(3))


def test_reductions_of_strided_views(engine, rng):
    x_np = sample(rng, (6, 8), np.float64, nans=True)
    x = mv.array(x_np)
    for name in ("nanmean", "median", "std", "nanmedian"):
        check(getattr(mv, name)(x[::2, 1::3], axis=0),
              getattr(np, name)(x_np[::2, 1::3], axis=0))
        check(getattr(mv, name)(x.T, axis=1), getattr(np, name)(x_np.T, axis=1))


@HYPOTHESIS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_random_shapes_and_axes(engine, shape, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x_np = sample(rng, tuple(shape), data.draw(st.sampled_from(DTYPES)), nans=True)
    axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1))
    name = data.draw(st.sampled_from(REDUCTIONS + ("average", "cumsum", "cumprod")))
    kwargs = {} if name in ("cumsum", "cumprod") else {
        "keepdims": data.draw(st.booleans())}
    compare(name, x_np, axis=axis, **kwargs)


# ---- quantiles -----------------------------------------------------------------------------

QUANTILES = {"percentile": (0, 37.5, 100, [10, 50.0, 90], np.array([[25.0], [75.0]])),
             "nanpercentile": (50, 12.5, [0, 100]),
             "quantile": (0.5, 1, [0.1, 0.9], np.float32(0.25), np.array([0.3, 0.7])),
             "nanquantile": (0.5, [0.25, 0.75])}


@pytest.mark.parametrize("name", sorted(QUANTILES))
@pytest.mark.parametrize("dtype", (np.float64, np.float32, np.int32))
def test_quantiles(engine, rng, name, dtype):
    x_np = sample(rng, (4, 5, 3), dtype, nans=name.startswith("nan"))
    for q in QUANTILES[name]:
        for axis in (None, 1, (0, 2)):
            compare(name, x_np, q, axis=axis)
        compare(name, x_np, q, axis=-1, keepdims=True)


@pytest.mark.parametrize("method", ("lower", "higher", "nearest", "midpoint",
                                    "inverted_cdf", "median_unbiased", "weibull"))
def test_quantile_methods(engine, rng, method):
    x_np = sample(rng, (5, 6), np.float64)
    compare("quantile", x_np, [0.2, 0.5, 0.8], axis=1, method=method)
    compare("percentile", x_np.astype(np.int32), 30, method=method)


def test_quantile_weights_and_q_arrays(engine, rng):
    x_np = sample(rng, (4, 5), np.float64)
    w_np = rng.random((4, 5))
    compare("quantile", x_np, 0.5, axis=1, method="inverted_cdf", weights=w_np)
    compare("quantile", x_np, [0.5], axis=(1, 0), method="inverted_cdf",
            weights=w_np.T)
    compare("quantile", x_np, 0.5, axis=1, weights=w_np)  # ValueError: needs inverted_cdf
    compare("quantile", x_np, 0.5, method="inverted_cdf", weights=w_np[0])  # TypeError
    q = mv.array([0.25, 0.5])
    check(mv.quantile(mv.array(x_np), q, axis=0), np.quantile(x_np, [0.25, 0.5], axis=0))
    bad = mv.quantile(mv.array(x_np), mv.array([1.5]))  # checked when the op runs
    with pytest.raises(mv.OpError):
        bad.to_numpy()


@pytest.mark.parametrize("name, q", [("percentile", 101), ("percentile", [-1, 5]),
                                     ("quantile", 1.5), ("quantile", [np.nan]),
                                     ("percentile", 50 + 1j), ("quantile", 2)])
def test_quantile_errors(engine, name, q):
    compare(name, np.arange(6.0), q)
    compare(name, np.arange(6.0), 0.5, method="bogus")
    compare(name, np.arange(6.0) + 1j, 0.5)
    compare(name, np.arange(6.0), 0.5, axis=3)


# ---- average ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", (np.float64, np.float32, np.int32, np.bool_))
def test_average(engine, rng, dtype):
    x_np = sample(rng, (3, 4, 2), dtype)
    for axis in (None, 1, (0, 2), (2, 0)):
        compare("average", x_np, axis=axis)
        compare("average", x_np, axis=axis, returned=True, keepdims=True)
    compare("average", x_np, axis=1, weights=rng.random(4).astype(np.float32),
            returned=True)
    compare("average", x_np, axis=(2, 0), weights=rng.random((2, 3)))
    compare("average", x_np, weights=rng.integers(1, 5, (3, 4, 2)), returned=True)


def test_average_errors(engine, rng):
    x_np = sample(rng, (3, 4), np.float64)
    compare("average", x_np, weights=np.ones(4))  # TypeError: axis needed
    compare("average", x_np, axis=1, weights=np.ones(3))  # ValueError
    compare("average", x_np, axis=(0, 1), weights=np.ones((4, 3)))  # ValueError
    result = mv.average(mv.array(x_np), axis=0, weights=mv.zeros((3, 4)))
    with pytest.raises(mv.OpError) as info:
        result.to_numpy()
    assert isinstance(info.value.__cause__, ZeroDivisionError)


# ---- cumulative sums and differences -----------------------------------------------------------

@pytest.mark.parametrize("name", ("cumsum", "cumprod"))
@pytest.mark.parametrize("dtype", DTYPES + (np.uint8,))
def test_cumsum_cumprod(engine, rng, name, dtype):
    x_np = sample(rng, (3, 4), dtype) % 4 if dtype != np.bool_ else sample(rng, (3, 4), dtype)
    for axis in (None, 0, 1, -1):
        compare(name, x_np, axis=axis)
    compare(name, x_np, axis=1, dtype=np.float32)
    compare(name, x_np, axis=2)
    compare(name, x_np, axis=(0, 1))
    check(getattr(mv.array(x_np), name)(axis=0), getattr(x_np, name)(axis=0))
    out = mv.zeros(12, np.float64)
    getattr(mv, name)(mv.array(x_np), out=out)
    check(out, getattr(np, name)(x_np).astype(np.float64))


@pytest.mark.parametrize("name", ("cumulative_sum", "cumulative_prod"))
@pytest.mark.parametrize("dtype", (np.float64, np.int8, np.bool_))
def test_cumulative_array_api(engine, rng, name, dtype):
    x_np = sample(rng, (3, 4), dtype)
    for axis in (0, 1, -1):
        for include_initial in (False, True):
            compare(name, x_np, axis=axis, include_initial=include_initial)
    compare(name, x_np[0], include_initial=True)
    compare(name, x_np[0, 0], include_initial=True)
    compare(name, x_np, axis=None)  # ValueError: axis needed for 2-D
    compare(name, x_np, axis=1, dtype=np.float32, include_initial=True)
    check(getattr(mv, name)(mv.array(x_np).T, axis=1, include_initial=True),
          getattr(np, name)(x_np.T, axis=1, include_initial=True))


@pytest.mark.parametrize("dtype", (np.float64, np.int32, np.uint8, np.bool_))
def test_diff(engine, rng, dtype):
    x_np = sample(rng, (3, 5), dtype)
    for n in (0, 1, 2, 6):
        for axis in (0, 1, -1):
            compare("diff", x_np, n=n, axis=axis)
    compare("diff", x_np, prepend=0, append=x_np[:, :2])
    compare("diff", x_np, axis=0, prepend=x_np[:1], append=1)
    x = mv.array(x_np)
    assert mv.diff(x, n=0) is x
    compare("diff", x_np, n=-1)
    compare("diff", x_np[0, 0])
    compare("diff", x_np, axis=2)
    compare("diff", x_np, prepend=np.zeros((2, 2)))


# ---- histogram and bincount ------------------------------------------------------------

@pytest.mark.parametrize("dtype", (np.float64, np.float32, np.int32))
def test_histogram(engine, rng, dtype):
    x_np = sample(rng, (40,), dtype)
    compare("histogram", x_np)
    compare("histogram", x_np, bins=7, range=(-2, 3))
    compare("histogram", x_np, bins=np.array([-3, 0, 0.5, 4]))
    compare("histogram", x_np, bins=[-3, 0, 1, 4], density=True)
    compare("histogram", x_np.reshape(5, 8), bins=5, weights=rng.random((5, 8)))
    compare("histogram", x_np, bins=4, density=True, weights=rng.random(40))
    compare("histogram", x_np, bins="auto")  # waits: the number of bins depends on values
    compare("histogram", x_np, bins=np.int64(3))
    edges = mv.array(np.array([-1.0, 0.0, 2.0]))
    hist, got_edges = mv.histogram(mv.array(x_np), bins=edges)
    check(hist, np.histogram(x_np, bins=[-1.0, 0.0, 2.0])[0])


@pytest.mark.parametrize("kwargs", [{"bins": 0}, {"bins": -2}, {"bins": 2.5},
                                    {"bins": [3, 1, 2]}, {"range": (2, 1)},
                                    {"range": (0, np.inf)}, {"weights": np.ones(3)},
                                    {"bins": np.ones((2, 2))}])
def test_histogram_errors(engine, kwargs):
    compare("histogram", np.arange(10.0), **kwargs)


def test_bincount(engine, rng):
    x_np = rng.integers(0, 7, 30)
    compare("bincount", x_np)
    compare("bincount", x_np, minlength=12)
    compare("bincount", x_np, weights=rng.random(30))
    compare("bincount", np.array([1, -1]))
    compare("bincount", np.array([1.5]))
    compare("bincount", np.zeros((2, 2), np.int64))


def test_count_nonzero_is_asynchronous_and_indexes(engine, rng):
    x_np = sample(rng, (4, 5), np.int32)
    n = mv.count_nonzero(mv.array(x_np))
    assert isinstance(n, mv.NArray) and n.shape == ()
    assert int(n) == np.count_nonzero(x_np)
    assert len(range(n)) == np.count_nonzero(x_np)


WAITING = ("bincount", "histogram")


@pytest.mark.parametrize("name", WAITING)
def test_waiting_functions_say_so(name):
    assert "wait" in getattr(mv, name).__doc__


def test_names_are_exported():
    for name in ("std", "var", "nansum", "nanprod", "nanmax", "nanmin", "nanmean",
                 "nanstd", "nanvar", "nanargmax", "nanargmin", "median", "nanmedian",
                 "percentile", "quantile", "average", "ptp", "count_nonzero", "cumsum",
                 "cumprod", "cumulative_sum", "cumulative_prod", "diff", "histogram",
                 "bincount"):
        assert callable(getattr(mv, name)), name
        assert getattr(mv, name).__doc__, name


class _DeviceArray(np.ndarray):
    """A stand-in for another array module's array: ``get()`` copies it to the host."""

    def get(self):
        return np.asarray(self).copy()


def _refuses(*args, **kwargs):
    raise TypeError("an argument this array module does not take")


def test_kernels_fall_back_to_numpy_on_other_array_modules():
    from minerva.ops.kernels import call
    module = types.SimpleNamespace(asarray=lambda r: np.asarray(r).view(_DeviceArray),
                                   std=_refuses)
    host = np.arange(12.0).reshape(3, 4)
    host[1, 2] = np.nan
    x = host.view(_DeviceArray)
    got = call(module, "nanpercentile", x, 40, axis=1)  # a function the module lacks
    assert isinstance(got, _DeviceArray)
    np.testing.assert_array_equal(got, np.nanpercentile(host, 40, axis=1))
    got = call(module, "std", x, axis=0, keepdims=True)  # an argument it refuses
    np.testing.assert_array_equal(got, np.std(host, axis=0, keepdims=True))
    counts, edges = call(module, "histogram", x[0], 3)
    np.testing.assert_array_equal(edges, np.histogram(host[0], 3)[1])
