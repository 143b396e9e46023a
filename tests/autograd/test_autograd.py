"""The ``mv.autograd`` API (MXNet Gluon's): recording state, ``backward``/``grad``/
``value_and_grad``, ``detach``, head gradients, ``create_graph``; ops without a gradient;
mutation (versions, leaves, ``grad_req='add'``); and memory (the recording is freed)."""
from __future__ import annotations

import gc
import re
import weakref

import numpy as np
import pytest

import minerva as mv
from tests.support.autograd_fixtures import check_second, uniform
from tests.conftest import assert_settled

ag = mv.autograd


@pytest.fixture(autouse=True)
def runtime_started():
    """A dag runtime for every test here."""
    mv.init()


def _leaf(values):
    x = mv.array(np.asarray(values, dtype=np.float64))
    x.attach_grad()
    return x


# ---- recording state ---------------------------------------------------------------------

def test_record_pause_train_and_predict_modes():
    assert not ag.is_recording() and not ag.is_training()
    with ag.record():
        assert ag.is_recording() and ag.is_training()
        with ag.pause():
            assert not ag.is_recording() and not ag.is_training()
            with ag.train_mode():
                assert ag.is_training() and not ag.is_recording()
        with ag.predict_mode():
            assert ag.is_recording() and not ag.is_training()
        assert ag.is_recording() and ag.is_training()
    with ag.record(train_mode=False):
        assert ag.is_recording() and not ag.is_training()
    assert not ag.is_recording() and not ag.is_training()


def test_ops_under_pause_are_not_recorded():
    x = _leaf([1.0, 2.0])
    with ag.record():
        y = x * x
        with ag.pause():
            c = x * 3          # a constant to the recording
        loss = (y * c).sum()
    loss.backward()
    assert c._grad_info is None
    np.testing.assert_array_equal(x.grad.to_numpy(), [6.0, 24.0])


def test_ops_outside_record_are_not_recorded():
    x = _leaf([1.0, 2.0])
    y = x * x
    assert y._grad_info is None
    with pytest.raises(ag.AutogradError, match="not computed from a variable"):
        y.backward()


# ---- backward, grad, value_and_grad, detach, head gradients ------------------------------

def test_backward_with_a_head_gradient():
    x = _leaf([1.0, 2.0, 3.0])
    with ag.record():
        y = x * x
    y.backward(mv.array([1.0, 10.0, 100.0]))
    np.testing.assert_array_equal(x.grad.to_numpy(), [2.0, 40.0, 600.0])
    with ag.record():
        z = x ** 3
        z2 = z * 2
    ag.backward([z, z2], [mv.ones(3), mv.array([0.0, 1.0, 0.0])])
    np.testing.assert_array_equal(x.grad.to_numpy(), [3.0, 36.0, 27.0])


def test_grad_of_leaves_and_of_intermediate_arrays():
    x, w = _leaf([1.0, 2.0]), _leaf([3.0, -1.0])
    with ag.record():
        h = x * w
        z = h * h
        loss = (z * x).sum()
    gh, gx, gz = ag.grad(loss, [h, x, z], retain_graph=True)
    np.testing.assert_array_equal(gh.to_numpy(), (2 * h * x).to_numpy())
    np.testing.assert_array_equal(gz.to_numpy(), x.to_numpy())
    np.testing.assert_allclose(gx.to_numpy(), (3 * x ** 2 * w ** 2).to_numpy())
    np.testing.assert_array_equal(x.grad.to_numpy(), [0.0, 0.0])  # grad() writes no .grad
    (gw,) = ag.grad([loss], [w], head_grads=[mv.array(2.0)])
    np.testing.assert_allclose(gw.to_numpy(), (4 * x ** 3 * w).to_numpy())


def test_grad_of_an_intermediate_includes_paths_through_other_wanted_ones():
    x = _leaf([2.0])
    with ag.record():
        h = x * 3
        z = h * h          # depends on h
        loss = (z * h).sum()   # h**3
    gh, gz = ag.grad(loss, [h, z])
    np.testing.assert_allclose(gh.to_numpy(), [3 * 36.0])
    np.testing.assert_allclose(gz.to_numpy(), [6.0])


def test_grad_of_an_unused_variable_is_zero():
    x, w = _leaf([1.0, 2.0]), _leaf([5.0])
    with ag.record():
        loss = (x * x).sum()
    gx, gw = ag.grad(loss, [x, w])
    np.testing.assert_array_equal(gw.to_numpy(), [0.0])
    np.testing.assert_array_equal(gx.to_numpy(), [2.0, 4.0])


def test_value_and_grad_with_int_and_tuple_argnums():
    def f(a, b, scale=1.0):
        return (a * a * b).sum() * scale

    a, b = mv.array([1.0, 2.0]), mv.array([3.0, 4.0])
    value, ga = ag.value_and_grad(f)(a, b, scale=2.0)
    assert float(value) == 2.0 * (3.0 + 16.0)
    np.testing.assert_array_equal(ga.to_numpy(), [12.0, 32.0])
    value, (gb, ga2) = ag.value_and_grad(f, argnums=(1, 0))(a, b)
    np.testing.assert_array_equal(gb.to_numpy(), [1.0, 4.0])
    np.testing.assert_array_equal(ga2.to_numpy(), [6.0, 16.0])
    assert a._grad_info is None and b._grad_info is None   # the caller's arrays untouched


def test_detach_cuts_the_gradient():
    x = _leaf([1.0, 2.0])
    with ag.record():
        y = x * x
        d = y.detach()
        loss = (y * d).sum()
    assert d._grad_info is None and d._storage is y._storage
    loss.backward()
    np.testing.assert_array_equal(x.grad.to_numpy(), [2.0, 16.0])


def test_grad_req_null_gets_no_gradient():
    x, w = _leaf([1.0]), mv.array([2.0])
    w.attach_grad(grad_req="null")
    with ag.record():
        loss = (x * w).sum()
    loss.backward()
    np.testing.assert_array_equal(x.grad.to_numpy(), [2.0])
    np.testing.assert_array_equal(w.grad.to_numpy(), [0.0])
    with pytest.raises(ValueError, match="grad_req"):
        x.attach_grad(grad_req="sometimes")


# ---- second derivatives ------------------------------------------------------------------

def test_second_derivative_of_a_cube():
    x = _leaf([1.0, -2.0, 3.0])
    with ag.record():
        y = x ** 3
        (g,) = ag.grad(y, [x], head_grads=[mv.ones(3)], create_graph=True)
    np.testing.assert_array_equal(g.to_numpy(), [3.0, 12.0, 27.0])
    g.backward()
    np.testing.assert_array_equal(x.grad.to_numpy(), [6.0, -12.0, 18.0])


SECOND = {
    "elementwise": lambda a: mv.sin(a) * mv.exp(a) / (a * a + 1) + mv.sqrt(a * a + 2),
    "power_and_tanh": lambda a: mv.tanh(a) ** 3 + a ** 4,
    "reductions": lambda a: mv.sum(a ** 2, axis=0) * mv.max(a, axis=0) + mv.mean(a * a)
    * mv.prod(a, axis=1, keepdims=True) + mv.min(a ** 3),
    "matmul": lambda a: (a @ a.T) ** 2,
    "einsum": lambda a: mv.einsum("ij,kj->ik", a * a, a),
    "views": lambda a: a.T[::-1, 1:] * mv.flip(a)[1:].T,
    "indexing": lambda a: a[[0, 0, 1]] ** 3 + a[a > 0].sum(),
    "item_write": lambda a: _write_then_square(a),
    "softmax": lambda a: mv.nn.softmax(a * a) + mv.nn.log_softmax(a, axis=0),
    "where_clip": lambda a: mv.where(a > 0, a ** 3, mv.clip(a, -0.4, 0.4) ** 2),
}


def _write_then_square(a):
    y = a * 1
    y[0] = a[1] ** 2
    return y ** 3


@pytest.mark.parametrize("name", sorted(SECOND))
def test_create_graph_gives_hessian_vector_products(name):
    x = uniform(np.random.default_rng(2), (2, 3), -1.0, 1.0)
    check_second(SECOND[name], x)


def test_create_graph_across_devices():
    d1 = mv.create_cpu_device()
    x = _leaf([1.0, 2.0])
    with ag.record():
        with mv.device(d1):
            y = x ** 3
        (g,) = ag.grad(y.sum(), [x], create_graph=True)
        total = g.sum()
    total.backward()
    np.testing.assert_array_equal(x.grad.to_numpy(), [6.0, 12.0])


# ---- ops without a gradient --------------------------------------------------------------

@pytest.mark.parametrize("op", [mv.sign, mv.floor, mv.ceil, mv.rint, mv.trunc,
                                lambda a: a // 0.3, lambda a: mv.heaviside(a, 0.5)],
                         ids=["sign", "floor", "ceil", "rint", "trunc", "floor_divide",
                              "heaviside"])
def test_piecewise_constant_ops_raise_naming_the_op(op):
    x = _leaf([0.5, -1.5])
    with ag.record():
        y = op(x) * x
        loss = y.sum()
    with pytest.raises(ag.AutogradError, match=r"has no gradient") as info:
        loss.backward()
    assert "test_autograd.py:" in str(info.value)


@pytest.mark.parametrize("op,name", [(lambda a: a > 0, "greater_scalar"),
                                     (lambda a: mv.equal(a, a), "equal"),
                                     (lambda a: mv.argmax(a), "argmax"),
                                     (lambda a: mv.isfinite(a), "isfinite")])
def test_results_without_float_values_name_their_op(op, name):
    x = _leaf([0.5, -1.5])
    with ag.record():
        y = op(x)
        loss = x.sum()
    with pytest.raises(ag.AutogradError, match=f"'{name}'.*no gradient"):
        y.backward()
    with pytest.raises(ag.AutogradError, match=f"'{name}'"):
        ag.grad(loss, [y])


def test_a_comparison_inside_the_graph_is_a_constant():
    x = _leaf([0.5, -1.5])
    with ag.record():
        loss = (x * (x > 0)).sum()
    loss.backward()
    np.testing.assert_array_equal(x.grad.to_numpy(), [1.0, 0.0])


# ---- mutation ----------------------------------------------------------------------------

def _line_of(pattern: str) -> int:
    """The line of this file that contains ``pattern``."""
    with open(__file__) as source:
        return next(i for i, line in enumerate(source, 1) if pattern in line)


def test_writing_a_saved_value_raises_naming_the_write():
    x, w = _leaf([1.0, 2.0]), mv.array([3.0, 4.0])
    with ag.record():
        loss = (x * w).sum()
    w += 1  # the write that breaks it
    with pytest.raises(ag.AutogradError, match="'multiply'") as info:
        loss.backward()
    line = _line_of("w += 1  # the write that breaks it")
    assert f"test_autograd.py:{line}" in str(info.value)


def test_writing_a_saved_output_raises():
    x = _leaf([1.0, 2.0])
    with ag.record():
        y = mv.exp(x)
        y[0] = 0.0
        loss = y.sum()
    with pytest.raises(ag.AutogradError, match="'exp'.*overwritten"):
        loss.backward()


def test_in_place_ops_that_need_the_old_value_raise():
    x, w = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    with ag.record():
        y = x * 1
        y *= w            # the gradient of w needs y's old value
        loss = y.sum()
    with pytest.raises(ag.AutogradError, match=re.escape("'multiply'")):
        loss.backward()


def test_in_place_ops_that_do_not_need_the_old_value_work():
    x, w = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    with ag.record():
        y = x * 1
        y += w
        y *= 2.0
        y /= 4.0
        y -= x
        loss = (y * y).sum()
    loss.backward()
    want = ((x + w) / 2 - x).to_numpy()
    np.testing.assert_allclose(x.grad.to_numpy(), -want)
    np.testing.assert_allclose(w.grad.to_numpy(), want)


def test_writing_through_another_view_raises():
    x = _leaf([1.0, 2.0, 3.0])
    with ag.record():
        y = x * 2
        z = y[1:]
        z[0] = 5.0
        with pytest.raises(ag.AutogradError, match="another view"):
            (y * y).sum()


def test_partial_writes_into_recorded_arrays_raise():
    x = _leaf([1.0, 2.0, 3.0])
    with ag.record():
        y = x * 2
        with pytest.raises(ag.AutogradError, match="scatter_add"):
            mv.add.at(y, [0, 0], 1.0)
        z = x * 2
        with pytest.raises(ag.AutogradError, match="put_along_axis"):
            mv.put_along_axis(z, mv.array([0]), 1.0, axis=0)


def test_grad_req_add_accumulates_over_backward_passes():
    x = _leaf([1.0, 2.0])
    x.attach_grad(grad_req="add")
    for _ in range(2):
        with ag.record():
            loss = (x * x).sum()
        loss.backward()
    np.testing.assert_array_equal(x.grad.to_numpy(), [4.0, 8.0])
    with ag.record():
        loss = (x * x).sum()
    loss.backward()
    np.testing.assert_array_equal(x.grad.to_numpy(), [6.0, 12.0])


def test_grad_req_write_overwrites():
    x = _leaf([1.0, 2.0])
    for _ in range(2):
        with ag.record():
            loss = (x * x).sum()
        loss.backward()
    np.testing.assert_array_equal(x.grad.to_numpy(), [2.0, 4.0])


def test_optimizer_steps_under_pause_update_leaves_in_place():
    w = _leaf([1.0, -2.0])
    for _ in range(3):
        with ag.record():
            loss = (w * w).sum()
            loss.backward()
            with ag.pause():
                w -= 0.25 * w.grad
    np.testing.assert_allclose(w.to_numpy(), [0.125, -0.25])
    with ag.record():
        loss = (w * w).sum()
    loss.backward()
    np.testing.assert_allclose(w.grad.to_numpy(), [0.25, -0.5])


@pytest.mark.parametrize("write", ["iadd", "setitem", "out", "fill"])
def test_writing_a_leaf_while_recording_raises(write):
    x = _leaf([1.0, 2.0])
    with ag.record():
        with pytest.raises(ag.AutogradError, match="attach_grad"):
            if write == "iadd":
                x += 1
            elif write == "setitem":
                x[0] = 3.0
            elif write == "out":
                mv.exp(mv.array([0.0, 1.0]), out=x)
            else:
                x.fill(0.0)


# ---- memory ------------------------------------------------------------------------------

def test_backward_frees_the_recording():
    x = _leaf([1.0, 2.0])
    with ag.record():
        loss = (mv.exp(x) * x).sum()
    loss.backward()
    with pytest.raises(ag.AutogradError, match="retain_graph"):
        loss.backward()


def test_retain_graph_allows_a_second_backward():
    x = _leaf([1.0, 2.0])
    x.attach_grad(grad_req="add")
    with ag.record():
        loss = (mv.exp(x) * x).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    want = 2 * (np.exp([1.0, 2.0]) * np.array([2.0, 3.0]))
    np.testing.assert_allclose(x.grad.to_numpy(), want)


def test_dropping_the_result_frees_the_recording_at_once():
    x = _leaf(np.ones((3, 4)))
    gc.collect()
    gc.disable()
    try:
        with ag.record():
            h = mv.tanh(x @ mv.ones((4, 5)))
            h[0] = h[1] * 2
            loss = mv.nn.softmax(h.T[::2]).sum()
        refs = [weakref.ref(loss._grad_info.node), weakref.ref(h._grad_info.node)]
        del h
        assert refs[0]() is not None and refs[1]() is not None
        del loss
        assert [r() for r in refs] == [None, None]
    finally:
        gc.enable()


def test_in_place_writes_make_no_reference_cycle():
    a = _leaf([1.0, 2.0])
    gc.collect()
    gc.disable()
    try:
        with ag.record():
            x = a * 1
            y = x * a          # saves x
            x *= y             # x's new recording reads y's
            loss = x.sum()
        ref = weakref.ref(y._grad_info.node)
        del x, y, loss
        assert ref() is None
    finally:
        gc.enable()


def test_memory_returns_to_the_variables_after_backward():
    x, w = _leaf(np.ones((8, 16))), _leaf(np.ones((16, 4)))
    w.attach_grad()
    assert_settled(x, w, x.grad, w.grad)
    with ag.record():
        h = mv.relu(x @ w)
        loss = mv.nn.log_softmax(h * h, axis=1)[:, 1:].sum()
    loss.backward()
    del h, loss
    assert_settled(x, w, x.grad, w.grad)


def test_memory_returns_to_the_variables_without_backward():
    x = _leaf(np.ones((8, 16)))
    with ag.record():
        loss = mv.exp(x).sum()
    del loss
    assert_settled(x, x.grad)


def test_a_copy_to_another_device_carries_the_gradient():
    import numpy
    mv.create_cpu_device()
    other = mv.create_cpu_device()
    x = mv.array(numpy.arange(3.0))
    x.attach_grad()
    with mv.autograd.record():
        y = (x.to(other) * 2).sum()
    y.backward()
    numpy.testing.assert_array_equal(x.grad.to_numpy(), [2.0, 2.0, 2.0])
