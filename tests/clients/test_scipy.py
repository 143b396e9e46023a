"""SciPy: ``scipy.special``'s ufuncs take NArrays without any flag (through
``__array_ufunc__``: SciPy's own kernels, on host copies, NArrays back), and
``scipy.stats`` computes in the array API namespace of NArrays under
``SCIPY_ARRAY_API=1`` (in a subprocess: the flag is read when SciPy is imported). Both
give NumPy input's numbers exactly."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv

special = pytest.importorskip("scipy.special")
from tests.clients import array_api_runs  # noqa: E402

UNARY = ("expit", "logit", "erf", "erfc", "erfinv", "gammaln", "gamma", "digamma", "ndtr",
         "ndtri", "log1p", "expm1", "i0", "j0", "sindg", "log_expit", "entr")
"""scipy.special's one-argument ufuncs; ``log1p`` and ``expm1`` have NumPy namesakes,
whose kernels round differently: SciPy's must run."""


def values():
    return np.random.default_rng(0).uniform(-0.9, 0.9, size=12)


@pytest.mark.parametrize("name", UNARY)
def test_special_ufunc_of_an_narray(engine, name):
    function = getattr(special, name)
    x = values()
    with np.errstate(all="ignore"):
        expected, got = function(x), function(mv.array(x))
    assert isinstance(got, mv.NArray)
    result = got.to_numpy()
    assert result.dtype == expected.dtype and np.array_equal(result, expected, equal_nan=True)


def test_special_binary_ufuncs_keywords_and_scalars(engine):
    x, y = np.abs(values()), np.abs(values()[::-1]) + 0.5
    for function in (special.xlogy, special.beta, special.gammainc, special.kl_div):
        assert np.array_equal(function(mv.array(x), mv.array(y)).to_numpy(), function(x, y))
    out = mv.zeros(x.shape)
    assert special.expit(mv.array(x), out=out) is out
    assert np.array_equal(out.to_numpy(), special.expit(x))
    mean = mv.array(x).mean()  # a 0-d result, as NumPy's scalar
    assert special.expit(mean) == special.expit(x.mean())
    assert np.array_equal(special.logsumexp(mv.array(x)), special.logsumexp(x))
    assert np.array_equal(special.softmax(mv.array(x)), special.softmax(x))


def test_special_ufuncs_run_on_the_host_named_by_their_module(engine):
    special.erf(mv.array(values()))
    special.erf(mv.array(values()))
    counts = {name: n for name, n in mv.fallback_stats().items() if name.endswith(".erf")}
    assert len(counts) == 1 and list(counts.values()) == [2]
    assert next(iter(counts)).startswith("scipy.special.")


@pytest.fixture(scope="module")
def stats_results(tmp_path_factory) -> dict:
    pytest.importorskip("array_api_compat")
    path = tmp_path_factory.mktemp("scipy_stats") / "results.pkl"
    return array_api_runs.run_in_subprocess("stats", path)


@pytest.mark.parametrize("name", sorted(array_api_runs.STATS))
def test_stats_under_scipy_array_api(stats_results, name):
    expected, got = stats_results[name]["numpy"], stats_results[name]["minerva"]
    assert "error" not in expected and got.keys() == expected.keys()
    for key, e in expected.items():
        assert got[key].dtype == e.dtype and np.array_equal(got[key], e, equal_nan=True), key
