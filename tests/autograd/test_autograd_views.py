"""Gradients through views, reshapes, indexing, item writes and joins, against central
finite differences in float64 (``autograd_fixtures.check_grad``)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minerva as mv
from tests.support.autograd_fixtures import check_grad, uniform


@pytest.fixture(autouse=True)
def runtime_started():
    """A dag runtime for every test here."""
    mv.init()


X = uniform(np.random.default_rng(31), (2, 3, 4))

VIEWS = {
    "transpose": lambda a: mv.transpose(a) * 1.5,
    "transpose_axes": lambda a: a.transpose(1, 0, 2)[:, :, 1:],
    "T": lambda a: a.T[::2],
    "swapaxes": lambda a: mv.swapaxes(a, 0, 2),
    "moveaxis": lambda a: mv.moveaxis(a, 0, -1),
    "reshape_view": lambda a: a.reshape(6, 4)[1:5],
    "reshape_copy": lambda a: a.transpose(2, 0, 1).reshape(4, -1),
    "ravel": lambda a: mv.ravel(a)[::3],
    "ravel_copy": lambda a: a.T.ravel()[:7],
    "squeeze": lambda a: mv.squeeze(a[:, :1, :]),
    "expand_dims": lambda a: mv.expand_dims(a, 1) * mv.expand_dims(a, 0)[:, :2],
    "broadcast_to": lambda a: mv.broadcast_to(a[0], (3, 3, 4)) * a[1],
    "newaxis": lambda a: a[None, ..., None][:, 1],
    "slices_with_steps": lambda a: a[1:, ::2, -1:0:-2],
    "negative_steps": lambda a: a[::-1, ::-2],
    "int_index": lambda a: a[1, 2, 1:] + a[0, -1, 1:],
    "scalar_element": lambda a: a[1, 2, 3] * a[0],
    "flip": lambda a: mv.flip(a, 1) - mv.flip(a),
    "diagonal": lambda a: mv.diagonal(a[0]) * mv.diagonal(a[1], 1).sum()
    + mv.diag(a[1, :, :3]),
    "split": lambda a: mv.split(a, 2, axis=2)[1] * mv.array_split(a, 2, axis=1)[1][..., :2],
    "view_of_view": lambda a: a[:, 1:].T[1:, ::2].reshape(-1),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views(name):
    check_grad(VIEWS[name], X)


INDICES = {
    "repeated": lambda a: a[[0, 1, 0, 0]],
    "array_2d": lambda a: a[np.array([[1, 0], [1, 1]])],
    "negative": lambda a: a[:, [-1, 0, -1]],
    "pairs": lambda a: a[[0, 1, 1], [2, 2, 0]],
    "narray_index": lambda a: a[mv.array([1, 1, 0]), 1:],
    "mixed_slice": lambda a: a[1:, [0, 2, 2], ::2],
    "separated": lambda a: a[[1, 0], :, [3, 3]],
    "host_mask": lambda a: a[np.array([[True, False, True], [False, False, True]])],
    "narray_mask": lambda a: a[mv.array([False, True, True]) if a.ndim else 0],
    "value_mask": lambda a: a[a > 0.2] * 3,
    "with_newaxis": lambda a: a[None, [1, 0]],
    "take": lambda a: mv.take(a, [3, 0, 3], axis=2),
}


@pytest.mark.parametrize("name", sorted(INDICES))
def test_advanced_indexing(name):
    if name == "narray_mask":
        check_grad(lambda a: a[:, mv.array([False, True, True])], X)
        return
    check_grad(INDICES[name], X)


def test_repeated_indices_accumulate():
    x = mv.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with mv.autograd.record():
        y = x[[0, 0, 2, 0]].sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.to_numpy(), [3.0, 0.0, 1.0])


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4),
       data=st.data())
def test_random_basic_and_integer_indices(shape, data):
    index = data.draw(hnp.basic_indices(shape, min_dims=0, allow_ellipsis=True))
    picks = data.draw(st.lists(st.integers(-shape[0], shape[0] - 1), min_size=1,
                               max_size=5))
    x = uniform(np.random.default_rng(len(shape)), shape)
    check_grad(lambda a: a[index] * 2 + a[picks].sum(), x)


# ---- item writes inside record -----------------------------------------------------------

def _write_one(a, v):
    y = a * 1
    y[1] = v
    return y * y


def _add_slice(a, v):
    y = a * 2
    y[:, 1:] += v
    return y * a


def _mask_zero(a, v):
    y = a * v[1:]
    y[y < 0.3] = 0
    return y * y


def _repeated_assign(a, v):
    y = a ** 2
    y[[0, 0, 1]] = v[:, :1] * 1   # the last write to row 0 wins
    return y * a


def _repeated_add(a, v):
    y = a ** 2
    y[[0, 0]] += v[:2] * 1          # NumPy adds once (buffered)
    return y


def _write_views(a, v):
    y = mv.exp(a)
    z = y * 1
    z[1, ::2] = v[0, :2]
    z[:, 0] = (z[:, 0] + 0) * v[:2, 1]
    z[...] = z + 1
    z[:, 1] += v[1:, 2]
    return mv.sum(z, axis=0) * y[0]


def _in_place_operators(a, v):
    y = a * 1
    y += v[1:]
    y *= 3.0
    y -= 2 * v[:2]
    y /= 4.0
    y = y * a
    y += 1
    return y


def _boolean_value_write(a, v):
    y = a + 0
    y[np.array([True, False])] = v[0]
    return y


WRITES = {"write_one": _write_one, "add_slice": _add_slice, "mask_zero": _mask_zero,
          "repeated_assign": _repeated_assign, "repeated_add": _repeated_add,
          "write_views": _write_views, "in_place_operators": _in_place_operators,
          "boolean_value_write": _boolean_value_write}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_item_writes(name):
    rng = np.random.default_rng(37)
    a, v = uniform(rng, (2, 3), 0.2, 1.0), uniform(rng, (3, 3), 0.3, 1.2)
    if name in ("write_one",):
        v = v[0]
    if name == "add_slice":
        v = v[0, :2]
    if name == "repeated_add":
        v = v[:2]
    check_grad(WRITES[name], a, v)


def test_last_write_wins_exactly():
    x = mv.zeros(3)
    v = mv.array([1.0, 2.0, 3.0])
    v.attach_grad()
    with mv.autograd.record():
        x[[0, 0, 2]] = v
        loss = (x * mv.array([10.0, 20.0, 30.0])).sum()
    loss.backward()
    np.testing.assert_array_equal(x.to_numpy(), [2.0, 0.0, 3.0])
    np.testing.assert_array_equal(v.grad.to_numpy(), [0.0, 10.0, 30.0])


# ---- joins -------------------------------------------------------------------------------

def test_concatenate_stack_split():
    rng = np.random.default_rng(41)
    a, b = uniform(rng, (2, 3)), uniform(rng, (4, 3))
    check_grad(lambda x, y: mv.concatenate([x, y, x]), a, b)
    check_grad(lambda x, y: mv.concatenate([x, y], axis=None), a, b)
    check_grad(lambda x, y: mv.concatenate([x.T, y.T], axis=1), a, b)
    check_grad(lambda x: mv.stack([x, 2 * x, x * x], axis=1), a)
    check_grad(lambda x: mv.stack([x, x[::-1]], axis=-1), a)
    check_grad(lambda x: mv.vstack([x, x]) * mv.hstack([x, x])[:, :3].sum(), a)
    check_grad(lambda y: mv.split(y, [1, 3])[1] * mv.split(y, 4)[3], b)


def test_writes_through_out():
    rng = np.random.default_rng(43)
    a = uniform(rng, (2, 3))

    def f(x):
        y = mv.zeros((2, 3))
        mv.exp(x, out=y)
        z = mv.zeros((2, 3), dtype=np.float32)
        mv.multiply(x, 2.0, out=z)          # a cast on the way into out=
        w = mv.zeros((2, 3))
        mv.clip(y, out=w)                   # no bounds: a copy into out=
        return y * z + w

    check_grad(f, a, rtol=1e-4, atol=1e-4, eps=1e-3)


def test_complex_parts():
    z = mv.array(np.array([1 + 2j, -0.5 + 1j]))
    z.attach_grad()
    with mv.autograd.record():
        loss = (mv.real(z) * 2 + mv.imag(z) * 3).sum()
    loss.backward()
    np.testing.assert_array_equal(z.grad.to_numpy(), [2 + 3j, 2 + 3j])
