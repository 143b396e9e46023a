"""scikit-learn with ``array_api_dispatch=True``: every estimator scikit-learn tags as
array-API capable, and its array-API metrics, computed in the namespace NArrays give
(``x.__array_namespace__()``, minerva.array_api) give NumPy input's predictions exactly,
and exactly the numbers scikit-learn's array-API path gives on NumPy's values
(array_api_strict's arrays take the same path; NumPy arrays take scikit-learn's NumPy
branches, which round differently). Run in a subprocess: dispatch needs
``SCIPY_ARRAY_API=1`` before SciPy is imported."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("array_api_compat")
pytest.importorskip("array_api_strict")

from tests.clients import array_api_runs  # noqa: E402

@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("sklearn_array_api") / "results.pkl"
    return array_api_runs.run_in_subprocess("sklearn", path)


def assert_equal_outputs(expected: dict, got: dict) -> None:
    assert got.keys() == expected.keys()
    for name, e in expected.items():
        g = got[name]
        if isinstance(e, str):  # the type name of an exception
            assert g == e, name
        else:
            assert g.dtype == e.dtype and g.shape == e.shape, name
            assert np.array_equal(g, e, equal_nan=e.dtype.kind in "fc"), name


def test_every_array_api_estimator_is_run(results):
    tagged = set(array_api_runs.array_api_estimators())
    assert {"LogisticRegression", "GaussianNB", "LabelEncoder", "StandardScaler"} <= tagged
    assert tagged <= set(results)


@pytest.mark.parametrize("name", array_api_runs.array_api_estimators())
def test_estimator_gives_the_array_api_paths_numbers(results, name):
    runs = results[name]
    assert "error" not in runs["strict"], runs["strict"]  # the case itself runs
    assert_equal_outputs(runs["strict"], runs["minerva"])


@pytest.mark.parametrize("name", array_api_runs.array_api_estimators())
def test_estimator_gives_numpys_predictions(results, name):
    expected, got = results[name]["numpy"], results[name]["minerva"]
    assert got.keys() == expected.keys()
    for key, e in expected.items():
        if e.dtype.kind in "iub":  # labels, class indices, counts: exactly
            assert got[key].dtype == e.dtype and np.array_equal(got[key], e), key
        else:
            np.testing.assert_allclose(got[key], e, rtol=1e-9, atol=1e-12, err_msg=key)


@pytest.mark.parametrize("name", sorted(array_api_runs.METRICS))
def test_metric_gives_numpys_number(results, name):
    runs = results[name]
    assert_equal_outputs(runs["strict"], runs["minerva"])
    np.testing.assert_allclose(runs["minerva"]["0"], runs["numpy"]["0"], rtol=1e-12)
