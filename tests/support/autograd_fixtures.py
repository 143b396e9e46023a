"""Helpers for the autograd tests: gradients from ``backward`` against central finite
differences, in float64.

``check_grad(f, *arrays)`` calls ``f`` on NArrays made from ``arrays`` (NumPy arrays; any
other argument is passed as is), projects the result on a fixed random array ``r`` (so
every element of the gradient matters: the loss is ``sum(f(...) * r)``), and compares the
gradient of each float input with central differences of the same loss computed through
minerva's own forward ops. It returns the gradients.
"""
from __future__ import annotations

import numpy as np

import minerva as mv

EPS = 1e-6


def as_args(arrays) -> list:
    """NArrays of the NumPy arrays in ``arrays``; anything else as is."""
    return [mv.array(a) if isinstance(a, np.ndarray) else a for a in arrays]


def float_positions(arrays) -> list:
    """Positions of the float NumPy arrays (the inputs that get a gradient)."""
    return [i for i, a in enumerate(arrays)
            if isinstance(a, np.ndarray) and a.dtype.kind == "f"]


def projection(f, arrays, seed: int = 0) -> np.ndarray:
    """A random array of the shape of ``f``'s result (the head gradient)."""
    shape = np.shape(f(*as_args(arrays)).to_numpy())
    return np.random.default_rng(seed).standard_normal(shape)


def backward_grads(f, arrays, wrt, project) -> list:
    """Gradients of ``sum(f(*arrays) * project)`` with respect to ``arrays[i]`` for ``i`` in
    ``wrt``, by ``attach_grad`` / ``record`` / ``backward`` (as NumPy arrays)."""
    args = as_args(arrays)
    for i in wrt:
        args[i].attach_grad()
    with mv.autograd.record():
        loss = (f(*args) * mv.array(project)).sum()
    loss.backward()
    return [args[i].grad.to_numpy() for i in wrt]


def loss_value(f, arrays, project) -> float:
    """``sum(f(*arrays) * project)``, computed by minerva without recording."""
    return float((f(*as_args(arrays)).to_numpy() * project).sum())


def numeric_grads(f, arrays, wrt, project, eps: float = EPS) -> list:
    """Central differences of ``sum(f(*arrays) * project)`` for each input in ``wrt``."""
    result = []
    for i in wrt:
        grad = np.zeros(arrays[i].shape)
        for j in np.ndindex(arrays[i].shape):
            values = [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]
            values[i][j] += eps
            up = loss_value(f, values, project)
            values[i][j] -= 2 * eps
            grad[j] = (up - loss_value(f, values, project)) / (2 * eps)
        result.append(grad)
    return result


def check_grad(f, *arrays, wrt=None, rtol=1e-5, atol=1e-6, eps=EPS, seed=0) -> list:
    """Assert that ``backward`` gives ``f``'s gradients (see the module docstring)."""
    arrays = [np.asarray(a) if isinstance(a, np.generic) else a for a in arrays]
    wrt = float_positions(arrays) if wrt is None else list(wrt)
    project = projection(f, arrays, seed)
    got = backward_grads(f, arrays, wrt, project)
    want = numeric_grads(f, arrays, wrt, project, eps)
    for i, g, w in zip(wrt, got, want):
        assert g.shape == arrays[i].shape and g.dtype == arrays[i].dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol,
                                   err_msg=f"gradient of input {i}")
    return got


def check_second(f, x: np.ndarray, rtol=1e-5, atol=1e-5, seed=1) -> None:
    """Assert that ``grad(..., create_graph=True)`` can be differentiated again: the
    gradient of ``sum(grad_x(sum(f(x) * r)) * q)`` against central differences of the
    first-order gradient (a Hessian-vector product)."""
    rng = np.random.default_rng(seed)
    project = projection(f, [x], seed)
    q = rng.standard_normal(x.shape)

    def first(values):
        return backward_grads(f, [values], [0], project)[0]

    v = mv.array(x)
    v.attach_grad()
    with mv.autograd.record():
        loss = (f(v) * mv.array(project)).sum()
        (g,) = mv.autograd.grad(loss, [v], create_graph=True)
        second = (g * mv.array(q)).sum()
    second.backward()
    want = np.zeros(x.shape)
    for j in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[j] += EPS
        down[j] -= EPS
        want[j] = ((first(up) - first(down)) * q).sum() / (2 * EPS)
    np.testing.assert_allclose(v.grad.to_numpy(), want, rtol=rtol, atol=atol)


def uniform(rng, shape, low=-1.0, high=1.0) -> np.ndarray:
    """Float64 values in ``[low, high)`` of ``shape``."""
    return np.asarray(rng.uniform(low, high, size=shape), dtype=np.float64)


def away_from_zero(rng, shape, low=0.3, high=1.5) -> np.ndarray:
    """Float64 values with ``low <= |x| < high`` and random signs."""
    signs = rng.choice([-1.0, 1.0], size=shape)
    return np.asarray(rng.uniform(low, high, size=shape) * signs, dtype=np.float64)


def distinct(rng, shape, spread=1.0) -> np.ndarray:
    """Float64 values of ``shape`` at least ``spread / size`` apart (no ties: max, sort
    and pooling are differentiable there)."""
    size = int(np.prod(shape))
    values = (rng.permutation(size) + rng.uniform(0.1, 0.9, size)) * spread / max(size, 1)
    return np.asarray(values.reshape(shape) - spread / 2, dtype=np.float64)
