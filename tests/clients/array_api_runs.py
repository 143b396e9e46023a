"""Client code run under array-API dispatch, in a process of its own: scikit-learn with
``array_api_dispatch=True`` and ``scipy.stats`` need ``SCIPY_ARRAY_API=1`` set before
SciPy is first imported, which the test process cannot do. Each run gives, per case, what
the client returned for each kind of input (NumPy arrays, array_api_strict's arrays over
NumPy, NArrays) as NumPy arrays, or the exception's type name; the tests compare them.

    SCIPY_ARRAY_API=1 python -m tests.clients.array_api_runs sklearn OUT.pkl
    SCIPY_ARRAY_API=1 python -m tests.clients.array_api_runs stats OUT.pkl
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import warnings

import numpy as np

import minerva as mv

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LABELS = np.array([7, -3, 2])
"""Class labels whose hash order is not their sorted order."""


def run_in_subprocess(what: str, out_path, timeout: float = 90) -> dict:
    """This module run as ``what`` in a fresh Python with ``SCIPY_ARRAY_API=1``; its
    results (``{case: {input kind: [outputs]}}``)."""
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    done = subprocess.run([sys.executable, "-m", "tests.clients.array_api_runs", what,
                           str(out_path)], cwd=ROOT, env=env, timeout=timeout,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
    with open(out_path, "rb") as stream:
        return pickle.load(stream)


def data():
    """A small classification and regression problem: ``X``, labels, targets."""
    rng = np.random.default_rng(0)
    X = np.abs(rng.normal(size=(30, 4))) + 0.1
    classes = LABELS[np.digitize(X[:, 0] - X[:, 1], [-0.3, 0.3])]
    return X, classes, X @ np.arange(1.0, 5.0)


def to_host(value):
    """A client's output as a NumPy array (a scalar as a 0-d one)."""
    if isinstance(value, mv.NArray):
        return value.to_numpy()
    if hasattr(value, "__dlpack__") and not isinstance(value, np.ndarray):
        return np.from_dlpack(value)
    return np.asarray(value)


def inputs() -> dict:
    """The converters of each kind of input: NumPy, array_api_strict, minerva."""
    import array_api_strict
    return {"numpy": np.asarray, "strict": array_api_strict.asarray, "minerva": mv.array}


def outputs(call) -> dict:
    """``call()``'s outputs (a dict of them, a tuple or one value) as NumPy arrays by
    name (``'0'``, ``'1'`` ... for a tuple's), or ``{'error': the exception's type name}``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = call()
    except Exception as error:  # noqa: BLE001  (compared with the other inputs' errors)
        return {"error": type(error).__name__}
    if not isinstance(found, dict):
        found = dict(enumerate(found if isinstance(found, tuple) else (found,)))
    return {str(name): to_host(value) for name, value in found.items()}


# ---- scikit-learn ---------------------------------------------------------------------

METHODS = ("predict", "predict_proba", "decision_function", "transform")


def array_api_estimators() -> list:
    """The estimators scikit-learn tags as array-API capable (``array_api_support``), by
    name, among those its defaults construct."""
    from sklearn.utils import all_estimators
    from sklearn.utils._tags import get_tags
    names = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, cls in all_estimators():
            try:
                if get_tags(cls()).array_api_support:
                    names.append(name)
            except (TypeError, ValueError, AttributeError):
                continue  # a meta-estimator: it needs an estimator to be made
    return names


def fit_arguments(estimator, X, classes, targets) -> tuple:
    """What ``fit`` takes: the labels alone for a label encoder, a kernel matrix for a
    kernel centerer, else ``X`` with the labels or the targets."""
    from sklearn.base import is_regressor
    name = type(estimator).__name__
    if name == "LabelEncoder":
        return (classes,)
    if name == "KernelCenterer":
        return (X @ X.T,)
    return X, targets if is_regressor(estimator) else classes


def estimator_outputs(name: str, convert) -> dict:
    """An estimator of ``name`` fitted on converted data: its learned attributes (numbers
    and arrays) and each method's result on the data it was fitted on, by name."""
    from sklearn.utils import all_estimators
    estimator = dict(all_estimators())[name]()
    if "random_state" in estimator.get_params():
        estimator.set_params(random_state=0)
    arguments = [convert(a) for a in fit_arguments(estimator, *data())]
    estimator.fit(*arguments)
    found = {a: v for a, v in vars(estimator).items() if a.endswith("_")
             and not a.startswith("_") and not isinstance(v, (str, type(None)))}
    found.update({m: getattr(estimator, m)(arguments[0]) for m in METHODS
                  if hasattr(estimator, m)})
    return found


METRICS = {
    "accuracy_score": lambda M, c, y, p, t, s: M.accuracy_score(c(y), c(p)),
    "log_loss": lambda M, c, y, p, t, s: M.log_loss(c(y), c(s)),
    "f1_score": lambda M, c, y, p, t, s: M.f1_score(c(y), c(p), average="macro"),
    "confusion_matrix": lambda M, c, y, p, t, s: M.confusion_matrix(c(y), c(p)),
    "balanced_accuracy_score": lambda M, c, y, p, t, s: M.balanced_accuracy_score(c(y),
                                                                                   c(p)),
    "r2_score": lambda M, c, y, p, t, s: M.r2_score(c(t), c(t[::-1])),
    "mean_squared_error": lambda M, c, y, p, t, s: M.mean_squared_error(c(t), c(t[::-1])),
    "euclidean_distances": lambda M, c, y, p, t, s: M.pairwise.euclidean_distances(c(s)),
    "rbf_kernel": lambda M, c, y, p, t, s: M.pairwise.rbf_kernel(c(s)),
}
"""Metrics scikit-learn computes in the inputs' namespace, each on converted data
(labels, predicted labels, targets, class probabilities)."""


def metric_data() -> tuple:
    rng = np.random.default_rng(1)
    classes = np.array([5, 3, 1, 0])
    labels, predicted = classes[rng.integers(0, 4, 20)], classes[rng.integers(0, 4, 20)]
    scores = rng.random((20, 4))
    return labels, predicted, rng.normal(size=20), scores / scores.sum(1, keepdims=True)


def sklearn_runs() -> dict:
    import sklearn
    from sklearn import metrics
    sklearn.set_config(array_api_dispatch=True)
    results = {}
    for name in array_api_estimators():
        results[name] = {kind: outputs(lambda c=convert: estimator_outputs(name, c))
                         for kind, convert in inputs().items()}
    for name, metric in METRICS.items():
        results[name] = {kind: outputs(lambda c=convert: metric(metrics, c, *metric_data()))
                         for kind, convert in inputs().items()}
    return results


# ---- scipy.stats ----------------------------------------------------------------------

STATS = {
    "zscore": lambda st, c, x, y: st.zscore(c(x)),
    "describe": lambda st, c, x, y: tuple(st.describe(c(x))),
    "ttest_ind": lambda st, c, x, y: tuple(st.ttest_ind(c(x), c(y))),
    "skew": lambda st, c, x, y: st.skew(c(x)),
    "kurtosis": lambda st, c, x, y: st.kurtosis(c(x)),
    "pearsonr": lambda st, c, x, y: tuple(st.pearsonr(c(x), c(y))),
    "sem": lambda st, c, x, y: st.sem(c(x)),
    "gmean": lambda st, c, x, y: st.gmean(c(np.abs(x))),
    "moment": lambda st, c, x, y: st.moment(c(x), order=3),
    "variation": lambda st, c, x, y: st.variation(c(x)),
    "entropy": lambda st, c, x, y: st.entropy(c(np.abs(x))),
    "trim_mean": lambda st, c, x, y: st.trim_mean(c(x), 0.1),
    "iqr": lambda st, c, x, y: st.iqr(c(x)),
    "rankdata": lambda st, c, x, y: st.rankdata(c(x)),
}
"""``scipy.stats`` functions that take array-API arrays under ``SCIPY_ARRAY_API=1``."""


def stats_runs() -> dict:
    import scipy.stats
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=16), rng.normal(size=16) + 0.4
    converters = {"numpy": np.asarray, "minerva": mv.array}
    return {name: {kind: outputs(lambda c=convert: call(scipy.stats, c, x, y))
                   for kind, convert in converters.items()}
            for name, call in STATS.items()}


RUNS = {"sklearn": sklearn_runs, "stats": stats_runs}


def main(argv: list) -> None:
    what, out_path = argv
    results = RUNS[what]()
    with open(out_path, "wb") as stream:
        pickle.dump(results, stream)


if __name__ == "__main__":
    main(sys.argv[1:])
