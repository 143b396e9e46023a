"""einsum and NumPy's other products (tensordot, vdot, inner, outer, kron, cross, vecdot,
matrix_transpose) against NumPy: the same values, dtypes and shapes, the same errors at
once, under every engine."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minerva as mv

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def check(got, want):
    values, want = got.to_numpy(), np.asarray(want)
    assert values.dtype == want.dtype and values.shape == want.shape, (values, want)
    np.testing.assert_array_equal(values, want)


def data(rng, shape, dtype=np.float64):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-5, 6, size=shape).astype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    values = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


# ---- einsum -----------------------------------------------------------------------------------

EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("ii", [(4, 4)]),
    ("ii->i", [(3, 3)]), ("ij->", [(2, 3)]), ("ij->ji", [(2, 3)]), ("ba", [(2, 3)]),
    ("Ba", [(2, 3)]), ("i,i", [(5,), (5,)]), ("i,j->ij", [(2,), (3,)]), ("i,j", [(2,), (3,)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]), ("...ij,...jk", [(3, 4), (2, 4, 5)]),
    ("i...->...", [(2, 3, 4)]), ("...i,...i", [(2, 3), (4, 1, 3)]), ("...", [()]),
    ("...->...", [(2, 3)]), ("ijk,ikl->ijl", [(2, 3, 4), (2, 4, 5)]), ("iij->ij", [(3, 3, 2)]),
    ("iji->j", [(2, 3, 2)]), ("ij,ij->ij", [(2, 3), (2, 3)]), ("i,i->i", [(1,), (3,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("ij,jk,kl", [(2, 1), (3, 4), (4, 5)]),
    (" i j -> j i ", [(2, 3)]), ("i...j,j->i...", [(2, 3, 4, 5), (5,)]),
    ("a,b,c,d->dcba", [(1,), (2,), (3,), (2,)]), ("->", [()]), ("i->", [(0,)]),
    ("ij,j->ij", [(2, 1), (3,)]), ("i,...->...", [(3,), (2,)]), ("ii->", [(0, 0)]),
]


@pytest.mark.parametrize("subscripts, shapes", EINSUM)
def test_einsum_matches_numpy(engine, rng, subscripts, shapes):
    for dtype in (np.float64, np.float32, np.int32, np.complex64, np.bool_):
        arrays = [data(rng, s, dtype) for s in shapes]
        check(mv.einsum(subscripts, *map(mv.array, arrays)), np.einsum(subscripts, *arrays))


def test_einsum_options(engine, rng):
    a, b = data(rng, (3, 4)), data(rng, (4, 5), np.int8)
    x, y = mv.array(a), mv.array(b)
    for optimize in (True, "greedy", "optimal", ["einsum_path", (0, 1)]):
        check(mv.einsum("ij,jk", x, y, optimize=optimize),
              np.einsum("ij,jk", a, b, optimize=optimize))
    check(mv.einsum("ij,jk", x, y, dtype=np.complex128),
          np.einsum("ij,jk", a, b, dtype=np.complex128))
    check(mv.einsum("ij,jk", x, y, dtype=np.float32, casting="same_kind"),
          np.einsum("ij,jk", a, b, dtype=np.float32, casting="same_kind"))
    with pytest.raises(TypeError):
        mv.einsum("ij,jk", x, y, dtype=np.float32)
    out = mv.zeros((3, 5))
    assert mv.einsum("ij,jk", x, y, out=out) is out
    check(out, np.einsum("ij,jk", a, b))
    check(mv.einsum("ij,ij", x, x), np.einsum("ij,ij", a, a))  # one array, twice
    mixed = mv.einsum("i,i", [1, 2], np.array([3.5, 4]))
    check(mixed, np.einsum("i,i", [1, 2], np.array([3.5, 4])))


def test_einsum_interleaved_form(engine, rng):
    a, b = data(rng, (2, 3)), data(rng, (3, 4))
    x, y = mv.array(a), mv.array(b)
    check(mv.einsum(x, [0, 1], y, [1, 2], [0, 2]), np.einsum(a, [0, 1], b, [1, 2], [0, 2]))
    check(mv.einsum(x, [0, 1], y, [1, 2]), np.einsum(a, [0, 1], b, [1, 2]))
    check(mv.einsum(x, [30, 0]), np.einsum(a, [30, 0]))
    check(mv.einsum(x, [Ellipsis, 1], [Ellipsis]), np.einsum(a, [Ellipsis, 1], [Ellipsis]))


BAD_EINSUM = [
    ("ii", [(2, 3)]), ("ii->i", [(1, 3)]), ("...i->i", [(2, 3)]), ("ij->ii", [(2, 2)]),
    ("ij->k", [(2, 2)]), ("ij", [(2, 2, 2)]), ("ij", [(2,)]), ("i.i", [(2, 2)]),
    ("i->i->i", [(2,)]), ("i,i", [(2,)]), ("i", [(2,), (2,)]), ("i1", [(2, 2)]),
    ("...i,...i", [(2, 3), (4, 3, 3)]), ("i,i", [(2,), (3,)]), ("...i...", [(3,)]),
    ("a->A", [(2,)]), ("i...j", [(2,)]), ("ij,jk", [(2, 3), (4, 5)]),
]


@pytest.mark.parametrize("subscripts, shapes", BAD_EINSUM)
def test_bad_einsum_raises_valueerror_at_once(engine, subscripts, shapes):
    arrays = [np.ones(s) for s in shapes]
    with pytest.raises(ValueError):
        np.einsum(subscripts, *arrays)
    with pytest.raises(ValueError):
        mv.einsum(subscripts, *map(mv.array, arrays))


def test_bad_einsum_calls(engine):
    for args in ((), ("ij",), (mv.ones(2), [60])):
        with pytest.raises(ValueError):
            mv.einsum(*args)


@st.composite
def einsum_cases(draw):
    """Random operands (1 to 3) and subscripts over a few labels of random sizes, some
    repeated, some broadcast (size 1), with or without an explicit output."""
    sizes = dict(zip("abcde", draw(st.lists(st.integers(1, 3), min_size=5, max_size=5))))
    terms, shapes = [], []
    for _ in range(draw(st.integers(1, 3))):
        term = draw(st.lists(st.sampled_from("abcde"), max_size=4))
        shapes.append(tuple(1 if draw(st.integers(0, 4)) == 0 else sizes[x] for x in term))
        terms.append("".join(term))
    subscripts = ",".join(terms)
    used = sorted(set("".join(terms)))
    if draw(st.booleans()):
        subscripts += "->" + "".join(draw(st.permutations(used))[:draw(st.integers(0,
                                                                                   len(used)))])
    return subscripts, shapes


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=einsum_cases(), seed=st.integers(0, 2**16))
def test_einsum_random_expressions(engine, case, seed):
    subscripts, shapes = case
    rng = np.random.default_rng(seed)
    arrays = [rng.integers(-4, 5, size=s) for s in shapes]
    try:
        want = np.einsum(subscripts, *arrays)
    except ValueError:
        with pytest.raises(ValueError):
            mv.einsum(subscripts, *map(mv.array, arrays))
        return
    check(mv.einsum(subscripts, *map(mv.array, arrays)), want)


def test_einsum_path_is_numpys(engine, rng):
    a, b, c = data(rng, (2, 30)), data(rng, (30, 5)), data(rng, (5, 60))
    for optimize in ("greedy", "optimal"):
        got = mv.einsum_path("ij,jk,kl", mv.array(a), mv.array(b), mv.array(c),
                             optimize=optimize)
        want = np.einsum_path("ij,jk,kl", a, b, c, optimize=optimize)
        assert got[0] == want[0] and got[1] == want[1]


# ---- tensordot, vdot, inner, outer, kron ---------------------------------------------------------

@pytest.mark.parametrize("shapes, axes", [
    (((2, 3, 4), (3, 4, 5)), 2), (((2, 3), (3, 4)), 1), (((2, 3), (4, 5)), 0),
    (((2, 3, 4), (4, 3, 5)), ([1, 2], [1, 0])), (((2, 3, 4), (4, 5)), (-1, 0)),
    (((3, 4), (4, 3)), ((0, 1), (1, 0))), (((3,), (3,)), 1), (((2, 3), (3,)), [[1], [0]])])
def test_tensordot(engine, rng, shapes, axes):
    for dtype in (np.float64, np.int64, np.complex64):
        a, b = data(rng, shapes[0], dtype), data(rng, shapes[1], dtype)
        check(mv.tensordot(mv.array(a), mv.array(b), axes), np.tensordot(a, b, axes))
        check(mv.linalg.tensordot(mv.array(a), mv.array(b), axes=axes),
              np.linalg.tensordot(a, b, axes=axes))


@pytest.mark.parametrize("shapes, axes", [
    (((2, 3), (4, 5)), 1), (((2, 3), (3, 4)), 3), (((2, 3), (3, 4)), ([0], [0])),
    (((2, 3), (3, 4)), ([1, 0], [0])), (((2, 3), (3, 4)), ([5], [0]))])
def test_tensordot_errors(engine, shapes, axes):
    a, b = np.ones(shapes[0]), np.ones(shapes[1])
    with pytest.raises((ValueError, IndexError)) as numpy_error:
        np.tensordot(a, b, axes)
    with pytest.raises(type(numpy_error.value).__mro__[1] if isinstance(
            numpy_error.value, IndexError) else ValueError):
        mv.tensordot(mv.array(a), mv.array(b), axes)


PAIRS = [((3,), (3,)), ((2, 3), (4, 3)), ((2, 3), (3,)), ((), (2, 3)), ((2, 2), ()),
         ((3, 1, 2), (2,))]


@pytest.mark.parametrize("name", ["vdot", "inner", "outer", "kron"])
def test_pairwise_products(engine, rng, name):
    for a_shape, b_shape in PAIRS:
        for dtypes in ((np.float64, np.float64), (np.complex128, np.complex64),
                       (np.int32, np.float32), (np.bool_, np.bool_), (np.int8, np.uint8)):
            a, b = data(rng, a_shape, dtypes[0]), data(rng, b_shape, dtypes[1])
            try:
                want = getattr(np, name)(a, b)
            except ValueError:
                with pytest.raises(ValueError):
                    getattr(mv, name)(mv.array(a), mv.array(b))
                continue
            check(getattr(mv, name)(mv.array(a), mv.array(b)), want)


def test_outer_into_out_and_on_views(engine, rng):
    a, b = data(rng, (2, 3)), data(rng, (4,))
    out = mv.zeros((6, 4))
    assert mv.outer(mv.array(a), mv.array(b), out=out) is out
    check(out, np.outer(a, b))
    check(mv.outer(mv.array(a).T, mv.array(b)[::-1]), np.outer(a.T, b[::-1]))
    check(mv.linalg.outer(mv.array(b), mv.array(b)), np.linalg.outer(b, b))


# ---- cross, vecdot, matrix_transpose ------------------------------------------------------------

@pytest.mark.parametrize("a_shape, b_shape, kwargs", [
    ((3,), (3,), {}), ((4, 3), (3,), {}), ((2, 1, 3), (5, 3), {}), ((3, 4), (3, 4), {"axis": 0}),
    ((3, 2), (2, 3), {"axisa": 0, "axisb": 1, "axisc": 0}), ((5, 3), (5, 3), {"axisc": 0})])
def test_cross(engine, rng, a_shape, b_shape, kwargs):
    for dtype in (np.float64, np.int32, np.complex64):
        a, b = data(rng, a_shape, dtype), data(rng, b_shape, dtype)
        check(mv.cross(mv.array(a), mv.array(b), **kwargs), np.cross(a, b, **kwargs))
    if set(kwargs) <= {"axis"}:
        check(mv.linalg.cross(mv.array(a), mv.array(b), **kwargs),
              np.linalg.cross(a, b, **kwargs))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_cross_of_2_vectors_warns_as_numpy_does(engine, rng):
    for a_shape, b_shape in (((2,), (2,)), ((4, 2), (3,)), ((3,), (4, 2)), ((2, 2), (2,))):
        a, b = data(rng, a_shape), data(rng, b_shape)
        with pytest.warns(DeprecationWarning):
            got = mv.cross(mv.array(a), mv.array(b))
        check(got, np.cross(a, b))


def test_cross_errors(engine):
    for a, b, kwargs in ((np.ones(4), np.ones(3), {}), (np.ones(()), np.ones(3), {}),
                         (np.ones((3, 2)), np.ones(3), {"axisa": 2}),
                         (np.ones((2, 3)), np.ones((3, 3)), {})):
        with pytest.raises(ValueError):
            np.cross(a, b, **kwargs)
        with pytest.raises(ValueError):
            mv.cross(mv.array(a), mv.array(b), **kwargs)
    with pytest.raises(IndexError):  # NumPy's AxisError is an IndexError too
        mv.cross(mv.ones((3, 2)), mv.ones(3), axisa=2)
    with pytest.raises(TypeError):
        mv.cross(mv.ones(3, dtype=bool), mv.ones(3, dtype=bool))


@pytest.mark.parametrize("a_shape, b_shape, axis", [
    ((3,), (3,), -1), ((2, 3), (3,), -1), ((4, 1, 3), (5, 3), -1), ((3, 2), (3,), 0),
    ((3, 2), (3, 1), 0), ((2, 3, 4), (2, 3, 4), 1)])
def test_vecdot(engine, rng, a_shape, b_shape, axis):
    for dtype in (np.float64, np.complex128, np.int16, np.float32):
        a, b = data(rng, a_shape, dtype), data(rng, b_shape, dtype)
        check(mv.vecdot(mv.array(a), mv.array(b), axis=axis), np.vecdot(a, b, axis=axis))
        check(mv.linalg.vecdot(mv.array(a), mv.array(b), axis=axis),
              np.linalg.vecdot(a, b, axis=axis))


def test_vecdot_errors(engine):
    for a_shape, b_shape, axis in (((2, 3), (3,), 0), ((), (), -1), ((3,), (3,), 1)):
        a, b = np.ones(a_shape), np.ones(b_shape)
        with pytest.raises(ValueError):
            np.vecdot(a, b, axis=axis)
        with pytest.raises(ValueError):
            mv.vecdot(mv.array(a), mv.array(b), axis=axis)


def test_matrix_transpose_is_a_view(engine, rng):
    a = data(rng, (2, 3, 4))
    x = mv.array(a)
    t = mv.matrix_transpose(x)
    check(t, np.matrix_transpose(a))
    check(mv.linalg.matrix_transpose(x), np.linalg.matrix_transpose(a))
    t[0, 0, 0] = 100.0
    assert x.to_numpy()[0, 0, 0] == 100.0
    with pytest.raises(ValueError):
        mv.matrix_transpose(mv.ones(3))
