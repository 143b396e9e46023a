"""scikit-learn without array-API dispatch: estimators convert NArrays with
``numpy.asarray`` (``check_array``) and give the predictions and attributes NumPy input
gives, exactly."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import minerva as mv

sklearn = pytest.importorskip("sklearn")
from sklearn.cluster import KMeans  # noqa: E402
from sklearn.linear_model import LogisticRegression, Ridge  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import MinMaxScaler, StandardScaler  # noqa: E402
from sklearn.utils import check_array  # noqa: E402


def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    return X, (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64)


def both(run):
    """``run(X, y)`` on NumPy arrays and on NArrays of the same values."""
    X, y = data()
    return run(X, y), run(mv.array(X), mv.array(y))


def assert_same(expected, got):
    for e, g in zip(expected, got, strict=True):
        assert type(g) is type(e)
        assert np.array_equal(np.asarray(g), e) and np.asarray(g).dtype == e.dtype


def test_check_array_copies_an_narray(engine):
    X, _ = data()
    x = mv.array(X)
    checked = check_array(x, copy=True)
    assert type(checked) is np.ndarray and np.array_equal(checked, X)
    checked[0, 0] = 99.0  # a copy of its own: writable, and x keeps its values
    assert x[0, 0].item() == X[0, 0]
    assert not np.may_share_memory(checked, x)


@pytest.mark.parametrize("scaler", [StandardScaler, MinMaxScaler])
def test_scalers(engine, scaler):
    def run(X, y):
        fitted = scaler().fit(X)
        learned = [getattr(fitted, a) for a in ("mean_", "scale_", "min_", "data_max_")
                   if hasattr(fitted, a)]
        return [fitted.transform(X), fitted.inverse_transform(X), *learned]
    assert_same(*both(run))


def test_pipeline_of_a_scaler_and_logistic_regression(engine):
    def run(X, y):
        model = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
        return [model.predict(X), model.predict_proba(X), model[-1].coef_,
                model[-1].intercept_, np.asarray(model.score(X, y))]
    assert_same(*both(run))


def test_kmeans(engine):
    def run(X, y):
        model = KMeans(n_clusters=3, random_state=0, n_init=1).fit(X)
        return [model.labels_, model.cluster_centers_, model.predict(X),
                model.transform(X), np.asarray(model.inertia_)]
    assert_same(*both(run))


def test_ridge_fit_on_narrays_predicts_numpy_input(engine):
    def run(X, y):
        model = Ridge(alpha=0.5).fit(X, y.astype(float))
        return [model.coef_, np.asarray(model.intercept_), model.predict(np.asarray(X))]
    assert_same(*both(run))


# ---- every estimator scikit-learn lists, on a small data set --------------------------------

KINDS = ("classifier", "regressor", "transformer", "cluster")
SLOW = {"HistGradientBoostingClassifier", "HistGradientBoostingRegressor", "BisectingKMeans",
        "LogisticRegressionCV", "TheilSenRegressor", "MiniBatchDictionaryLearning",
        "TweedieRegressor", "TSNE", "MiniBatchKMeans", "MeanShift"}
"""Estimators that take over 0.1 s on this data (their conversion is every other's)."""
LIKE_A_LIST = {"LassoCV", "ElasticNetCV"}
"""Estimators that copy input other than a NumPy array (a list, an NArray) into Fortran
order (``isinstance(X, np.ndarray)`` in scikit-learn's ``LinearModelCV.fit``), so their
BLAS calls round differently: NArrays give what a list of the same values gives."""
METHODS = ("predict", "predict_proba", "decision_function", "transform", "score_samples")
FEWER = {"n_estimators": 5, "random_state": 0}


def estimators() -> list:
    """``(kind, class)`` of every estimator scikit-learn lists that its defaults construct
    (meta-estimators need an estimator: they are not listed), once, by its first kind."""
    from sklearn.utils import all_estimators
    found, seen = [], set(SLOW)
    for kind in KINDS:
        for name, cls in all_estimators(type_filter=kind):
            if name in seen:
                continue
            seen.add(name)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FutureWarning)  # deprecated classes
                    cls()
            except TypeError:
                continue
            found.append(pytest.param(kind, cls, id=f"{kind}-{name}"))
    return found


def fitted_outputs(cls, X, y, X_new) -> dict:
    """What an estimator of ``cls`` fitted on ``X, y`` gives: each method's result on
    ``X_new`` and each learned array attribute (an exception's type where one is raised).
    ``X_new`` has ``X``'s values in another object: ``numpy.asarray`` of an NArray is a new
    NumPy array at each call, so scikit-learn's shortcuts for ``Y is X`` (the training
    data's distances to itself) never apply to NArrays; a copy keeps NumPy's side off
    them too."""
    estimator = cls()
    estimator.set_params(**{k: v for k, v in FEWER.items() if k in estimator.get_params()})
    try:
        estimator.fit(X, y)
    except Exception as error:  # noqa: BLE001  (NArrays must fail as NumPy arrays do)
        return {"fit": type(error)}
    found = {name: value for name, value in vars(estimator).items()
             if name.endswith("_") and isinstance(value, np.ndarray) and value.dtype != object}
    for method in METHODS:
        if hasattr(estimator, method):
            try:
                found[method] = getattr(estimator, method)(X_new)
            except Exception as error:  # noqa: BLE001
                found[method] = type(error)
    return found


def as_host(value):
    value = value.toarray() if hasattr(value, "toarray") else value
    return value if isinstance(value, type) else np.asarray(value)


@pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
@pytest.mark.parametrize(("kind", "cls"), estimators())
def test_every_estimator_gives_numpys_results(kind, cls):
    X, y = data()
    X = np.abs(X) + 0.1  # estimators for counts (MultinomialNB ...) take it too
    y = X @ np.arange(1.0, 4.0) if kind == "regressor" else y
    expected = fitted_outputs(cls, X.tolist() if cls.__name__ in LIKE_A_LIST else X, y,
                              X.copy())
    x = mv.array(X)
    got = fitted_outputs(cls, x, mv.array(y), x)
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        value, found = as_host(value), as_host(got[name])
        if isinstance(value, type):
            assert found is value, name
        else:
            assert found.dtype == value.dtype, name
            assert np.array_equal(found, value, equal_nan=value.dtype.kind in "fc"), name
