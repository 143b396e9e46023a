"""Writes through aliases (doc/autograd.md, "Mutation"): every kind of write, through every
kind of handle that shares an array's memory, into a variable (refused at once while
recording), a saved value (refused in ``backward``, naming the write's line), a recorded
array or an array that was not recorded; and the writes that stay free, with their
gradients against NumPy and central finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from tests.support.autograd_fixtures import check_grad, uniform

ag = mv.autograd
X0 = np.arange(1.0, 7.0).reshape(2, 3)
W0 = np.arange(2.0, 8.0).reshape(2, 3) / 4


@pytest.fixture(autouse=True)
def runtime_started():
    """A dag runtime for every test here."""
    mv.init()


def _detach(xp, x):
    return x.detach() if xp is mv else x


ALIASES = {
    "itself": lambda xp, x: x,
    "full_slice": lambda xp, x: x[:],
    "ellipsis": lambda xp, x: x[...],
    "basic_slice": lambda xp, x: x[:, 1:],
    "int_row": lambda xp, x: x[1],
    "steps": lambda xp, x: x[::-1, ::2],
    "T": lambda xp, x: x.T,
    "transpose": lambda xp, x: xp.transpose(x),
    "swapaxes": lambda xp, x: xp.swapaxes(x, 0, 1),
    "reshape": lambda xp, x: x.reshape(3, 2),
    "ravel": lambda xp, x: xp.ravel(x),
    "newaxis": lambda xp, x: x[None],
    "expand_dims": lambda xp, x: xp.expand_dims(x, 0),
    "squeeze": lambda xp, x: xp.squeeze(x[None]),
    "flip": lambda xp, x: xp.flip(x, 1),
    "split": lambda xp, x: xp.split(x, 3, axis=1)[1],
    "view_of_view": lambda xp, x: x[:, ::-1].T[1:],
    "real": lambda xp, x: x.real,
    "detach": lambda xp, x: _detach(xp, x),
    "view_of_detach": lambda xp, x: _detach(xp, x)[0],
}
"""Handles that share all or part of the memory of a (2, 3) array, made with ``xp``
(minerva, or NumPy for the values a write must give)."""


# Each write is the line after its ``def`` (the line the errors must name).

def _setitem_all(v):
    v[...] = 0.0


def _setitem_item(v):
    v[(0,) * v.ndim] = 5.0


def _setitem_slice_array(v):
    v[..., :1] = mv.zeros(v.shape[:-1] + (1,))


def _setitem_host_mask(v):
    v[np.ones(v.shape, dtype=bool)] = 0.0


def _setitem_narray_mask(v):
    v[mv.ones(v.shape, dtype=bool)] = 0.0


def _setitem_int_array(v):
    v[[0, 0]] = 7.0


def _setitem_int_array_values(v):
    v[[0]] = mv.ones(v.shape[1:])


def _fill(v):
    v.fill(0.0)


def _iadd(v):
    v += 1


def _imul(v):
    v *= 2.0


def _ipow(v):
    v **= 2


def _out(v):
    mv.exp(mv.zeros(v.shape), out=v)


def _out_cast(v):
    mv.add(mv.ones(v.shape, dtype=np.float32), 1, out=v)


def _numpy_ufunc_out(v):
    np.add(v, 1, out=v)


def _numpy_unary_out(v):
    np.negative(v, out=v)


def _copyto(v):
    mv.copyto(v, mv.zeros(v.shape))


def _copyto_scalar(v):
    mv.copyto(v, 3.0)


def _copyto_where(v):
    mv.copyto(v, 3.0, where=mv.ones(v.shape, dtype=bool))


def _add_at(v):
    mv.add.at(v, [0, 0], 1.0)


def _put(v):
    mv.put(v, [0], 9.0)


def _put_along_axis(v):
    mv.put_along_axis(v, mv.array([0]), 1.0, axis=None)


WRITES = {f.__name__[1:]: f for f in (
    _setitem_all, _setitem_item, _setitem_slice_array, _setitem_host_mask,
    _setitem_narray_mask, _setitem_int_array, _setitem_int_array_values, _fill, _iadd,
    _imul, _ipow, _out, _out_cast, _numpy_ufunc_out, _numpy_unary_out, _copyto,
    _copyto_scalar, _copyto_where, _add_at, _put, _put_along_axis)}
"""Every kind of in-place write, each through its one argument."""

PARTIAL = {"copyto_where", "add_at", "put", "put_along_axis"}
"""The writes autograd cannot follow into an array that takes part in gradients."""


def _alias(name: str, x):
    """The alias ``name`` of minerva array ``x``."""
    return ALIASES[name](mv, x)


def _line_of(write) -> str:
    """Where ``write`` writes, as the errors name it."""
    return f"test_autograd_aliases.py:{write.__code__.co_firstlineno + 1}"


def _variable(values=X0, grad_req="write"):
    x = mv.array(values)
    x.attach_grad(grad_req)
    return x


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_each_alias_shares_the_memory(alias):
    x = mv.array(X0)
    v = _alias(alias, x)
    v[...] = -1.0
    assert v._storage is x._storage and (x.to_numpy() == -1.0).any()


# ---- variables: refused at once, through any alias --------------------------------------

@pytest.mark.parametrize("write", sorted(WRITES))
@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_a_write_into_a_variable_through_any_alias_raises_at_once(alias, write):
    x = _variable()
    with ag.record():
        v = _alias(alias, x)
        with pytest.raises(ag.AutogradError) as info:
            WRITES[write](v)
    message = str(info.value)
    assert "variable that needs a gradient" in message and "shape (2, 3)" in message
    assert "autograd.pause()" in message
    assert isinstance(info.value, mv.MinervaError)


def test_the_reported_program_raises_instead_of_a_wrong_gradient():
    x = mv.array([1.0, 2.0])
    x.attach_grad()
    with ag.record():
        v = x[:]
        with pytest.raises(ag.AutogradError, match="an item assignment"):
            v[...] = 0


@pytest.mark.parametrize("write", ["setitem_all", "iadd", "numpy_ufunc_out", "copyto",
                                   "setitem_int_array"])
@pytest.mark.parametrize("alias", ["T", "reshape", "newaxis", "view_of_view", "detach"])
def test_views_taken_before_record_and_mark_variables_are_covered(alias, write):
    x, g = mv.array(X0), mv.zeros((2, 3))
    ag.mark_variables([x], [g])
    v = _alias(alias, x)       # taken outside the recording
    with ag.record():
        with pytest.raises(ag.AutogradError, match="mark_variables"):
            WRITES[write](v)


def test_in_place_matmul_through_a_view_raises():
    x = _variable(np.eye(3))
    with ag.record():
        v = x.T
        with pytest.raises(ag.AutogradError, match="'matmul'"):
            v @= mv.ones((3, 3))


@pytest.mark.parametrize("part", ["real", "imag"])
def test_setting_a_complex_part_through_a_view_raises(part):
    z = _variable(np.array([[1 + 2j, -0.5 + 1j]]))
    with ag.record():
        with pytest.raises(ag.AutogradError, match="'set_part'.*variable"):
            setattr(z.T[::-1], part, mv.zeros((2, 1)))
        y = z * 2
        with pytest.raises(ag.AutogradError, match="'set_part' writes part of an array"):
            setattr(y[0], part, mv.zeros(2))


def test_overlap_is_by_memory_range():
    buf = mv.array(np.arange(8.0))
    x = buf[:4]
    x.attach_grad()
    with ag.record():
        buf[4:] = 0.0                         # another part of the buffer: free
        mv.exp(mv.zeros(4), out=buf[4:])
        with pytest.raises(ag.AutogradError, match="shape \\(4,\\)"):
            buf[3:5] = 1.0                    # one element of it is the variable's
        loss = (x * x).sum()
    loss.backward()
    held = np.array([0.0, 1.0, 2.0, 1.0])     # the refused write was made all the same
    np.testing.assert_array_equal(x.to_numpy(), held)
    np.testing.assert_array_equal(x.grad.to_numpy(), 2 * held)
    odd = mv.array(np.arange(8.0))
    even = odd[::2]
    even.attach_grad()
    with ag.record(), pytest.raises(ag.AutogradError):
        odd[1::2] = 0.0                       # interleaved: the ranges meet
    with ag.record(), pytest.raises(ag.AutogradError):
        buf[[5, 6]] = 0.0                     # an integer-array write: all of buf


def test_a_variable_with_grad_req_null_takes_writes():
    x = _variable(grad_req="null")
    with ag.record():
        v = x.T
        v += 1
    np.testing.assert_array_equal(x.to_numpy(), X0 + 1)
    y = _variable()
    ag.mark_variables([y], [mv.zeros((2, 3))], "null")   # no longer needs a gradient
    with ag.record():
        y[0] = 0.0
    y.attach_grad()                                       # needs one again
    with ag.record(), pytest.raises(ag.AutogradError, match="variable"):
        y.T[0] = 1.0


def test_value_and_grad_guards_the_argument_only_while_it_runs():
    a = mv.array([1.0, 2.0])

    def writes_its_argument(t):
        a[0] = 3.0
        return (t * t).sum()

    with pytest.raises(ag.AutogradError, match="variable"):
        ag.value_and_grad(writes_its_argument)(a)
    a[...] = mv.array([1.0, 2.0])
    value, grad = ag.value_and_grad(lambda t: (t * t * t).sum())(a)
    with ag.record():
        a.T[...] = 0.0                        # no longer a variable: free
    np.testing.assert_allclose(grad.to_numpy(), 3 * np.array([1.0, 2.0]) ** 2)
    np.testing.assert_array_equal(a.to_numpy(), [0.0, 0.0])


# ---- variables: free outside record() and under pause() ---------------------------------

@pytest.mark.parametrize("where", ["outside", "pause"])
@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_updates_through_any_alias_outside_recording_give_the_right_gradient(alias, where):
    x = _variable()
    want = X0.copy()
    ALIASES[alias](np, want)[...] *= 2.0
    if where == "outside":
        v = _alias(alias, x)
        v *= 2.0
    else:
        with ag.record(), ag.pause():
            v = _alias(alias, x)
            v *= 2.0
    with ag.record():
        loss = (x * x * x).sum()
    loss.backward()
    np.testing.assert_array_equal(x.to_numpy(), want)
    np.testing.assert_allclose(x.grad.to_numpy(), 3 * want ** 2)


def test_writes_into_the_gradient_buffer_and_a_detached_copy_are_free():
    x = _variable()
    with ag.record():
        x.grad[...] = 5.0
        c = x.detach().copy()
        c[0] = 0.0
        d = mv.array(x)
        d += 1
        loss = (x * x).sum() + (c * d).sum()      # d is a recorded copy of x
    loss.backward()
    copied = X0.copy()
    copied[0] = 0.0
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * X0 + copied)


def test_a_view_outliving_its_variable_handle_is_an_ordinary_recorded_array():
    x = _variable(np.array([1.0, 2.0, 3.0]))
    g = x.grad
    with ag.record():
        v = x[:]
        del x
        v[0] = 5.0
        loss = (v * v).sum()
    loss.backward()
    np.testing.assert_allclose(g.to_numpy(), [0.0, 4.0, 6.0])


# ---- saved values: refused in backward, naming the write --------------------------------

@pytest.mark.parametrize("write", sorted(WRITES))
@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_a_saved_value_written_through_any_alias_raises_in_backward(alias, write):
    x, w = _variable(), mv.array(W0)
    with ag.record():
        loss = (x * w).sum()          # multiply saves w
    WRITES[write](_alias(alias, w))
    with pytest.raises(ag.AutogradError, match="'multiply' needs was overwritten") as info:
        loss.backward()
    assert _line_of(WRITES[write]) in str(info.value)


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_saved_value_written_while_recording_raises_in_backward(write):
    x, w = _variable(), mv.array(W0)
    with ag.record():
        loss = (x * w).sum()
        WRITES[write](w.T[::-1])
    with pytest.raises(ag.AutogradError, match="'multiply'") as info:
        loss.backward()
    assert _line_of(WRITES[write]) in str(info.value)


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_a_saved_output_written_through_any_alias_raises_in_backward(alias):
    x = _variable()
    with ag.record():
        y = mv.exp(x)                 # exp saves its output
        loss = y.sum()
    _iadd(_alias(alias, y))
    with pytest.raises(ag.AutogradError, match="'exp' needs was overwritten") as info:
        loss.backward()
    assert _line_of(_iadd) in str(info.value)


def test_a_write_beside_a_saved_value_in_its_buffer_raises_too():
    x, buf = _variable(np.ones(3)), mv.array(W0)
    with ag.record():
        loss = (x * buf[0]).sum()
    _setitem_item(buf[1])
    with pytest.raises(ag.AutogradError, match="overwritten"):
        loss.backward()


# ---- recorded arrays: using one written through another handle raises --------------------

OTHER_ALIASES = sorted(set(ALIASES) - {"itself"})


@pytest.mark.parametrize("write", sorted(set(WRITES) - PARTIAL))
@pytest.mark.parametrize("alias", OTHER_ALIASES)
def test_a_recorded_array_written_through_another_alias_raises_when_used(alias, write):
    x = _variable()
    with ag.record():
        y = x * 2.0
        WRITES[write](_alias(alias, y))
        with pytest.raises(ag.AutogradError, match="written through another view"):
            (y * 3.0).sum()
    with pytest.raises(ag.AutogradError, match="written through another view"):
        y.backward()


@pytest.mark.parametrize("write", sorted(PARTIAL))
@pytest.mark.parametrize("alias", ["itself", "T", "view_of_view"])
def test_partial_writes_into_a_recorded_alias_raise_at_once(alias, write):
    x = _variable()
    with ag.record():
        y = x * 2.0
        with pytest.raises(ag.AutogradError, match="writes part of an array"):
            WRITES[write](_alias(alias, y))


# ---- arrays not recorded, written through a view with a recorded value -------------------

def _set_view(v, a):
    v[...] = a


def _set_rows(v, a):
    v[[2, 0, 1]] = a[[2, 0, 1]]


def _set_mask(v, a):
    v[np.ones(v.shape, dtype=bool)] = a.reshape(-1)


def _add_into(v, a):
    v += a


def _out_into(v, a):
    mv.multiply(a, 2.0, out=v)


def _numpy_out_into(v, a):
    np.multiply(a, 2.0, out=v)


def _copy_into(v, a):
    mv.copyto(v, a)


VALUE_WRITES = {"set_view": (_set_view, 1.0), "set_rows": (_set_rows, 1.0),
                "set_mask": (_set_mask, 1.0), "add_into": (_add_into, 1.0),
                "out_into": (_out_into, 2.0), "numpy_out_into": (_numpy_out_into, 2.0),
                "copy_into": (_copy_into, 1.0)}
"""Writes of a value that takes part in gradients, and the factor each applies to it."""


@pytest.mark.parametrize("write", sorted(VALUE_WRITES))
def test_an_array_written_through_a_view_with_a_recorded_value_refuses_its_base(write):
    x = _variable()
    with ag.record():
        y = mv.zeros((3, 3))
        others = y[1:]                          # a handle of y's memory made before
        VALUE_WRITES[write][0](y.T[:, 1:], x.T)
        for base in (y, others, y[:2]):
            with pytest.raises(ag.AutogradError, match="has no gradient info") as info:
                (base * 1.0).sum()
            assert "another view" in str(info.value)
    with pytest.raises(ag.AutogradError, match="has no gradient info"):
        y.backward()


@pytest.mark.parametrize("write", sorted(VALUE_WRITES))
def test_reading_the_written_view_gives_the_gradient(write):
    x = _variable()
    rng = np.random.default_rng(3)
    r = rng.standard_normal((3, 2))
    with ag.record():
        v = mv.zeros((3, 3)).T[1:].T           # a fresh array's view, not recorded
        VALUE_WRITES[write][0](v, x.T)
        loss = (v * v * mv.array(r)).sum()
    loss.backward()
    factor = VALUE_WRITES[write][1]
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * factor ** 2 * X0 * r.T)


def test_a_constant_write_through_a_view_leaves_the_base_free():
    x = _variable()
    with ag.record():
        y = mv.ones((2, 3))
        y.T[0][...] = 2.0                       # nothing to follow
        mv.exp(mv.zeros(3), out=y[1])
        loss = (x * y).sum()
    loss.backward()
    want = np.ones((2, 3))
    want[0, 0] = 2.0
    np.testing.assert_array_equal(x.grad.to_numpy(), want)


# ---- writes autograd follows: the gradients against finite differences ------------------

def _writes_into_fresh_arrays(a):
    y = mv.zeros((2, 3))
    y[...] = a
    y[0] *= 2.0
    y[:, 1:] += a[:, :2]
    y[[1, 1]] = a[0] * 3.0
    y[np.array([[True, False, True], [False, True, False]])] = a[1, 0]
    e = mv.empty((2, 3))
    mv.exp(a, out=e)
    c = mv.zeros((2, 3))
    mv.copyto(c, a * a)
    np.add(y, a, out=y)
    y -= c
    return y * e + c


def _first_writes_into_fresh_arrays_through_item_operators(a):
    y = mv.zeros((3, 3))
    y[1:] += a                                # the view's write, then the item write on y
    z = mv.ones((2, 3))
    z[[1, 0]] += a[::-1]
    return y[1:] * z + y[:2]


def _writes_through_views_of_results(a):
    y = a * 1.0
    v = y.T
    v[1:] = a.T[:2] * 2.0                    # v carries the write
    v += 1.0
    return v * v


def test_followed_writes_give_the_gradients():
    rng = np.random.default_rng(11)
    check_grad(_writes_into_fresh_arrays, uniform(rng, (2, 3), 0.2, 1.0))
    check_grad(_writes_through_views_of_results, uniform(rng, (2, 3), 0.2, 1.0))
    check_grad(_first_writes_into_fresh_arrays_through_item_operators,
               uniform(rng, (2, 3), 0.2, 1.0))
