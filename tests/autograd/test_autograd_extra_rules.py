"""Gradient rules of the NumPy-namespace ops (manipulation, statistics, sorting, linear
algebra) against central finite differences in float64."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from tests.support.autograd_fixtures import away_from_zero, check_grad, check_second, distinct, uniform


@pytest.fixture(autouse=True)
def runtime_started():
    """A dag runtime for every test here."""
    mv.init()


X = uniform(np.random.default_rng(79), (3, 4))
X3 = uniform(np.random.default_rng(83), (2, 3, 2))

MANIPULATION = {
    "roll": lambda a: mv.roll(a, 2, axis=1) * mv.roll(a, -1, axis=0),
    "roll_flat": lambda a: mv.roll(a, 5),
    "roll_tuple": lambda a: mv.roll(a, (1, -2), axis=(0, 1)),
    "tile": lambda a: mv.tile(a, (2, 1, 3)),
    "tile_short": lambda a: mv.tile(a, 2),
    "repeat": lambda a: mv.repeat(a, 3, axis=1),
    "repeat_counts": lambda a: mv.repeat(a, [2, 0, 1], axis=0),
    "repeat_flat": lambda a: mv.repeat(a, 2),
    "pad_constant": lambda a: mv.pad(a, ((1, 2), (0, 3)), constant_values=0.5),
    "pad_edge": lambda a: mv.pad(a, ((2, 1), (1, 2)), mode="edge"),
    "pad_reflect": lambda a: mv.pad(a, 2, mode="reflect"),
    "pad_symmetric": lambda a: mv.pad(a, ((1, 1), (3, 0)), mode="symmetric"),
    "pad_wrap": lambda a: mv.pad(a, ((0, 4), (2, 1)), mode="wrap"),
    "tril": lambda a: mv.tril(a) + mv.tril(a, -1),
    "triu": lambda a: mv.triu(a, 1) * mv.triu(a),
    "tril_vector": lambda a: mv.tril(a[0]),
    "take_along_axis": lambda a: mv.take_along_axis(a, mv.array([[0, 0], [3, 1], [2, 2]]),
                                                    axis=1),
    "take_along_broadcast": lambda a: mv.take_along_axis(a, mv.array([[2, 0, 2, 1]]), 0),
    "take_along_flat": lambda a: mv.take_along_axis(a, mv.array([11, 0, 0, 5]), None),
}


@pytest.mark.parametrize("name", sorted(MANIPULATION))
def test_manipulation(name):
    check_grad(MANIPULATION[name], X)


STATISTICS = {
    "var": lambda a: mv.var(a, axis=1) + mv.var(a, ddof=1),
    "std": lambda a: mv.std(a, axis=(0, 2), keepdims=True) * mv.std(a),
    "var_method": lambda a: a.var(axis=0, ddof=1).sum() + a.std(axis=-1),
    "nansum": lambda a: mv.nansum(_with_nan(a), axis=1) + mv.nansum(a),
    "nanmean": lambda a: mv.nanmean(_with_nan(a), axis=0) * mv.nanmean(_with_nan(a)),
    "nanprod": lambda a: mv.nanprod(_with_nan(a) + 2, axis=2),
    "nanmax": lambda a: mv.nanmax(_with_nan(a), axis=1) - mv.nanmin(_with_nan(a)),
    "ptp": lambda a: mv.ptp(a, axis=1) * mv.ptp(a),
    "average": lambda a: mv.average(a, axis=(2, 0)) + mv.average(a),
    "cumsum": lambda a: mv.cumsum(a, axis=1) * mv.cumsum(a)[:3].sum(),
    "cumprod": lambda a: mv.cumprod(a + 2, axis=0) + a.cumprod()[-1],
    "cumulative_initial": lambda a: mv.cumulative_sum(a, axis=2, include_initial=True)
    * mv.cumulative_prod(a + 2, axis=1, include_initial=True)[:, 1:, :1],
    "diff": lambda a: mv.diff(a, axis=1) + mv.diff(a, n=2, axis=0).sum(),
    "diff_edges": lambda a: mv.diff(a, n=2, prepend=a[:, :, :1], append=0.5),
}


def _with_nan(a):
    """``a`` with one element replaced by NaN (a constant: it gets no gradient)."""
    mask = np.zeros(a.shape, dtype=bool)
    mask.flat[1] = True
    return mv.where(mv.array(mask), np.nan, a)


@pytest.mark.parametrize("name", sorted(STATISTICS))
def test_statistics(name):
    x = distinct(np.random.default_rng(89), (2, 3, 2), 3.0) if "nanmax" in name or \
        name == "ptp" else X3
    check_grad(STATISTICS[name], x)


def test_ties_of_nanmax_and_ptp_split_evenly():
    x = mv.array([[1.0, 4.0, 4.0, np.nan], [0.0, 0.0, 2.0, 2.0]])
    x.attach_grad()
    with mv.autograd.record():
        loss = (mv.nanmax(x, axis=1) + mv.ptp(x[1:], axis=1)).sum()
    loss.backward()
    # row 1: nanmax's half to each tied maximum; ptp (added to both rows): twice its part
    np.testing.assert_array_equal(x.grad.to_numpy(), [[0, 0.5, 0.5, 0], [-1, -1, 1.5, 1.5]])


SORTING = {
    "sort": lambda a: mv.sort(a, axis=0) * mv.sort(a)[:, ::-1],
    "sort_flat": lambda a: mv.sort(a, axis=None)[1:],
    "nan_to_num": lambda a: mv.nan_to_num(mv.log(a)) * a,
    "real_imag": lambda a: mv.real(a) * 2 + mv.imag(a),
}


@pytest.mark.filterwarnings("ignore:invalid value encountered in log:RuntimeWarning")
@pytest.mark.parametrize("name", sorted(SORTING))
def test_sorting(name):
    x = distinct(np.random.default_rng(97), (3, 4), 4.0)
    check_grad(SORTING[name], x)


# ---- linear algebra ----------------------------------------------------------------------

def _well_conditioned(rng, shape):
    return uniform(rng, shape, -0.4, 0.4) + 2 * np.eye(shape[-1])


def _spd(b):
    return b @ mv.swapaxes(b, -1, -2) + 3 * mv.eye(b.shape[-1])


LINALG = {
    "inv": lambda a: mv.linalg.inv(a),
    "det": lambda a: mv.linalg.det(a),
    "slogdet": lambda a: mv.linalg.slogdet(a)[1] * 2 + mv.linalg.slogdet(-a)[1],
    "matrix_power_3": lambda a: mv.linalg.matrix_power(a, 3),
    "matrix_power_1": lambda a: mv.linalg.matrix_power(a, 1),
    "matrix_power_neg": lambda a: mv.linalg.matrix_power(a, -2),
    "matrix_power_0": lambda a: mv.linalg.matrix_power(a, 0) * a,
    "cholesky": lambda a: mv.linalg.cholesky(_spd(a)),
    "cholesky_upper": lambda a: mv.linalg.cholesky(_spd(a), upper=True),
    "frobenius": lambda a: mv.linalg.norm(a) + mv.linalg.norm(a, "fro", axis=(-2, -1)),
    "norm_axis": lambda a: mv.linalg.norm(a, axis=-1, keepdims=True) * a,
    "norm_p": lambda a: mv.linalg.norm(a, 3, axis=1) + mv.linalg.norm(a[0, 0], 1),
    "norm_inf": lambda a: mv.linalg.norm(a, np.inf, axis=-2) + mv.linalg.norm(a, -np.inf,
                                                                              axis=-1),
    "vector_norm": lambda a: mv.linalg.vector_norm(a, axis=(0, 2)) + mv.linalg.vector_norm(
        a, ord=1.5),
}


@pytest.mark.parametrize("name", sorted(LINALG))
def test_linalg(name):
    rng = np.random.default_rng(101)
    a = _well_conditioned(rng, (2, 3, 3))
    if name.startswith("norm_inf"):
        a = distinct(rng, (2, 3, 3), 5.0)
    check_grad(LINALG[name], a)


@pytest.mark.parametrize("a_shape,b_shape", [((3, 3), (3,)), ((2, 3, 3), (3, 2)),
                                             ((3, 3), (2, 3, 1)), ((2, 3, 3), (3,))],
                         ids=str)
def test_solve(a_shape, b_shape):
    rng = np.random.default_rng(103)
    a, b = _well_conditioned(rng, a_shape), uniform(rng, b_shape)
    check_grad(mv.linalg.solve, a, b)


def test_vdot_and_vecdot():
    rng = np.random.default_rng(107)
    a, b = uniform(rng, (2, 3)), uniform(rng, (3, 2))
    check_grad(mv.vdot, a, b)
    c, d = uniform(rng, (2, 1, 3)), uniform(rng, (4, 3))
    check_grad(mv.vecdot, c, d)
    e, f = uniform(rng, (3, 2)), uniform(rng, (3, 1))
    check_grad(lambda x, y: mv.vecdot(x, y, axis=0), e, f)


def test_second_derivatives_through_new_rules():
    x = _well_conditioned(np.random.default_rng(109), (3, 3))
    check_second(lambda a: mv.linalg.inv(a) * mv.linalg.det(a), x)
    check_second(lambda a: mv.cumsum(mv.roll(a, 1, 0) ** 2, axis=1) * mv.var(a, axis=0), x)
    check_second(lambda a: mv.diff(mv.tile(a, 2) ** 3, axis=0).sum()
                 + mv.sort(a * a, axis=1), x)


@pytest.mark.parametrize("op,name", [
    (lambda a: mv.round(a, 1), "round"), (lambda a: mv.median(a), "median"),
    (lambda a: mv.linalg.norm(a, 2), "norm"), (lambda a: mv.linalg.eigh(a)[0], "eigh")],
    ids=["round", "median", "spectral_norm", "eigh"])
def test_ops_without_a_rule_raise(op, name):
    x = mv.array(away_from_zero(np.random.default_rng(0), (3, 3)) + 3 * np.eye(3))
    x.attach_grad()
    with mv.autograd.record():
        loss = (op(x) * x).sum()
    with pytest.raises((mv.autograd.AutogradError, NotImplementedError), match=name):
        loss.backward()
