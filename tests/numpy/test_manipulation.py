"""NumPy's array-manipulation functions in minerva against NumPy itself: values, dtypes
and shapes identical, views where NumPy gives views, NumPy's error family raised at once,
under every engine."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minerva as mv

FAST = settings(max_examples=15, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
FAMILIES = (IndexError, TypeError, ValueError, ArithmeticError)
A34 = np.arange(12).reshape(3, 4)
A234 = np.arange(24.0).reshape(2, 3, 4)


def values_of(x):
    """Host values of a result: NArrays read back, sequences element by element."""
    if isinstance(x, (tuple, list)):
        return type(x)(values_of(y) for y in x)
    return x.to_numpy() if isinstance(x, mv.NArray) else np.asarray(x)


def assert_same(got, want):
    """Exactly NumPy's result: same structure, shapes, dtypes and values."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
        return
    values, want = values_of(got), np.asarray(want)
    assert (values.shape, values.dtype) == (want.shape, want.dtype)
    np.testing.assert_array_equal(values, want)


def compare(fn, *host):
    """``fn(np, *host)`` against ``fn(mv, *host with arrays on the device)``: the same
    result, or an error of the same family raised at the call."""
    try:
        want, error = fn(np, *host), None
    except Exception as exc:  # noqa: BLE001  (any NumPy error is the expectation)
        want, error = None, exc
    device = [mv.array(h) if isinstance(h, np.ndarray) else h for h in host]
    if error is not None:
        family = tuple(c for c in FAMILIES if isinstance(error, c))
        assert family, f"unexpected NumPy error {error!r}"
        with pytest.raises(family):
            fn(mv, *device)
        return
    assert_same(fn(mv, *device), want)


shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)


def host_array(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).integers(-9, 9, size=shape).astype(dtype)


# ---- flips, rotations, rolls ---------------------------------------------------------------

@FAST
@given(shape=shapes, axis=st.integers(-3, 3), k=st.integers(-2, 5))
def test_flips_rotations_and_rolls(engine, shape, axis, k):
    a = host_array(shape)
    compare(lambda m, x: m.flip(x), a)
    compare(lambda m, x: m.flip(x, axis), a)
    compare(lambda m, x: m.flip(x, (0, -1)), a)
    compare(lambda m, x: (m.fliplr(x), m.flipud(x)), a)
    compare(lambda m, x: m.rot90(x, k), a)
    compare(lambda m, x: m.rot90(x, k, axes=(axis, 0)), a)
    compare(lambda m, x: m.roll(x, k), a)
    compare(lambda m, x: m.roll(x, k, axis), a)
    compare(lambda m, x: m.roll(x, (k, 1), axis=(0, -1)), a)


def test_views_write_through_like_numpy(engine):
    host, base = A34.copy(), mv.array(A34)
    for fn in (lambda m, x: m.flip(x, 1), lambda m, x: m.rot90(x),
               lambda m, x: m.split(x, 2, axis=1)[1], lambda m, x: m.hsplit(x, [1])[0],
               lambda m, x: m.unstack(x, axis=1)[2], lambda m, x: m.atleast_3d(x),
               lambda m, x: m.flipud(m.atleast_2d(x[1]))):
        fn(np, host)[...] = -1
        fn(mv, base)[...] = -1
        fn(np, host)[0] += 5
        view = fn(mv, base)
        view[0] += 5
        assert_same(base, host)
        host[0, 0] = base[0, 0] = 100  # a write into the base is seen by the view
        assert_same(view, fn(np, host))


def test_meshgrid_copy_false_is_read_only(engine):
    xs, ys = mv.meshgrid(mv.arange(3), mv.arange(2), copy=False)
    with pytest.raises(ValueError):
        xs[...] = 5


# ---- tile, repeat, pad, resize ----------------------------------------------------------------

@FAST
@given(shape=shapes, reps=st.lists(st.integers(0, 3), min_size=0, max_size=4),
       n=st.integers(0, 3), axis=st.sampled_from([None, 0, -1]))
def test_tile_repeat_resize(engine, shape, reps, n, axis):
    a = host_array(shape, dtype=np.int32)
    compare(lambda m, x: m.tile(x, tuple(reps)), a)
    compare(lambda m, x: m.tile(x, n), a)
    compare(lambda m, x: m.repeat(x, n, axis), a)
    counts = list(range(a.size if axis is None else a.shape[axis]))
    compare(lambda m, x: m.repeat(x, counts, axis), a)
    compare(lambda m, x: x.repeat(n, axis=axis), a)
    compare(lambda m, x: m.resize(x, tuple(reps)), a)


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap",
                                  "linear_ramp", "maximum", "minimum", "mean", "median"])
@pytest.mark.parametrize("width", [0, 2, (1, 3), ((0, 1), (2, 0))])
def test_pad_modes(engine, mode, width):
    a = host_array((3, 4), dtype=np.float64)
    compare(lambda m, x: m.pad(x, width, mode), a)


@FAST
@given(shape=shapes, data=st.data())
def test_pad_random_widths(engine, shape, data):
    widths = data.draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)),
                                min_size=len(shape), max_size=len(shape)))
    mode = data.draw(st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap",
                                      "maximum", "linear_ramp"]))
    compare(lambda m, x: m.pad(x, widths, mode), host_array(shape))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.float32,
                                   np.complex128])
def test_dtypes_are_kept(engine, dtype):
    a = host_array((3, 4), dtype=dtype)
    compare(lambda m, x: (m.flip(x), m.roll(x, 2), m.tile(x, 2), m.repeat(x, 2, 1),
                          m.pad(x, 1), m.pad(x, 1, "wrap"), m.take(x, [1, 2], 1),
                          m.tril(x), m.diag(x[0]), m.insert(x, 1, 1, 0),
                          m.delete(x, 0, 1), m.hstack((x, x)), m.r_[x, x],
                          m.append(x, 1), m.resize(x, 7), m.diagonal(x)), a)


@pytest.mark.parametrize("kwargs", [{"constant_values": 7}, {"constant_values": (1, 2)},
                                    {"constant_values": ((1, 2), (3, 4))}])
def test_pad_constant_values(engine, kwargs):
    compare(lambda m, x: m.pad(x, (1, 2), **kwargs), A34)
    compare(lambda m, x: m.pad(x, 2, "reflect", reflect_type="odd"), A34)
    compare(lambda m, x: m.pad(x, 2, "linear_ramp", end_values=(5, -5)), A34.astype(float))
    compare(lambda m, x: m.pad(x, 3, "mean", stat_length=2), A34.astype(float))


# ---- splitting and joining -----------------------------------------------------------------

@FAST
@given(shape=shapes, sections=st.integers(1, 4), cuts=st.lists(st.integers(-5, 6),
                                                                max_size=3))
def test_split_family(engine, shape, sections, cuts):
    a = host_array(shape)
    for axis in range(-len(shape), len(shape)):
        compare(lambda m, x: m.array_split(x, sections, axis), a)
        compare(lambda m, x: m.split(x, sections, axis), a)
        compare(lambda m, x: m.split(x, cuts, axis), a)
        compare(lambda m, x: m.unstack(x, axis=axis), a)
    for name in ("hsplit", "vsplit", "dsplit"):
        compare(lambda m, x: getattr(m, name)(x, sections), a)


@pytest.mark.parametrize("shapes", [[(3,), (3,)], [(2, 3), (2, 3)], [(), ()],
                                    [(2, 3, 1), (2, 3, 2)], [(1, 3), (3,)]])
def test_stacks_and_atleast(engine, shapes):
    arrays = [host_array(s, seed=i) for i, s in enumerate(shapes)]
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        compare(lambda m, *xs: getattr(m, name)(*xs), *arrays)
        compare(lambda m, x: getattr(m, name)(x), arrays[0])
    for name in ("hstack", "vstack", "dstack", "column_stack"):
        compare(lambda m, *xs: getattr(m, name)(xs), *arrays)
    compare(lambda m, *xs: m.hstack(xs, dtype=np.float32), *arrays)
    compare(lambda m, *xs: m.vstack(xs, dtype=np.int32), *arrays)
    compare(lambda m, *xs: m.vstack(xs, dtype=np.int32, casting="unsafe"), *arrays)
    with pytest.warns(DeprecationWarning):
        assert_same(mv.row_stack([mv.array(x) for x in arrays[:1]]), np.vstack(arrays[:1]))


def test_index_tricks(engine):
    a, b = np.array([1, 2, 3]), np.array([[4.5], [5.5], [6.5]])
    cases = [
        lambda m, x, y: m.r_[1:4, 0, x], lambda m, x, y: m.r_[0:1:5j, x],
        lambda m, x, y: m.r_[-1:1:6j, [0] * 3, 5, 6], lambda m, x, y: m.c_[x, x],
        lambda m, x, y: m.c_[x, y[:, 0]], lambda m, x, y: m.r_["0,2", x, x],
        lambda m, x, y: m.r_["0,2,0", x, x], lambda m, x, y: m.r_["1,2,0", x, x],
        lambda m, x, y: m.r_["-1", y, y], lambda m, x, y: m.c_[y, x[:, None], 1:4],
        lambda m, x, y: m.r_[x.astype(np.int8), 3], lambda m, x, y: m.r_[np.int8(1), 300],
        lambda m, x, y: m.r_[x, "0"],
        lambda m, x, y: m.mgrid[0:3, 0:1:4j], lambda m, x, y: m.ogrid[0:3, 1:5:2],
        lambda m, x, y: m.ix_(x, [True, False, True]), lambda m, x, y: m.ix_([[1]]),
        lambda m, x, y: m.ix_(x, []),
    ]
    for fn in cases:
        compare(fn, a, b)
    with pytest.raises(ValueError):  # NumPy gives a numpy.matrix here
        mv.r_["r", mv.array(a)]


@pytest.mark.parametrize("indexing", ["xy", "ij", "zz"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("copy", [False, True])
def test_grids(engine, indexing, sparse, copy):
    xs = [np.arange(3.0), np.arange(2), np.array([[5, 6]])]
    for n in range(4):
        compare(lambda m, *v: m.meshgrid(*v, indexing=indexing, sparse=sparse, copy=copy),
                *xs[:n])
    compare(lambda m: m.indices((2, 3), sparse=sparse), )
    compare(lambda m: m.indices((4,), dtype=np.int8, sparse=sparse))


# ---- diagonals and triangles -------------------------------------------------------------------

@pytest.mark.parametrize("offset", [-4, -1, 0, 2, 5])
def test_diagonals_and_triangles(engine, offset):
    compare(lambda m, x: m.diagonal(x, offset), A34)
    compare(lambda m, x: m.diagonal(x, offset, 2, 0), A234)
    compare(lambda m, x: x.diagonal(offset, -1, 1), A234)
    compare(lambda m, x: (x.trace(offset), x.trace(offset, 1, 2)), A234)
    compare(lambda m, x: x.trace(offset, dtype=np.float32), A34.astype(np.int8))
    compare(lambda m, x: (m.diag(x, offset), m.diagflat(x, offset)), A34)
    compare(lambda m, x: (m.diag(x[0], offset), m.diagflat(x[:2, :2], offset)), A34)
    compare(lambda m, x: (m.tril(x, offset), m.triu(x, offset)), A234)
    compare(lambda m, x: (m.tril(x[0], offset), m.triu(x[:, 0], offset)), A34)
    compare(lambda m: (m.eye(3, k=offset), m.eye(2, 4, offset, dtype=np.int16)))
    compare(lambda m: (m.tri(3, 5, offset), m.tri(4, k=offset, dtype=bool), m.identity(3)))


def test_diagonal_is_a_copy_trace_reads_through_views(engine):
    base = mv.array(A34.astype(float))
    d = mv.diagonal(base)
    d[...] = 0  # NumPy refuses this write (read-only view); minerva's copy takes it
    assert_same(base, A34.astype(float))
    assert_same(mv.flip(base)[::2].trace(), np.trace(np.flip(A34.astype(float))[::2]))
    assert_same(mv.trace(base, 1, 1, 0), np.trace(A34.astype(float), 1, 1, 0))
    out = mv.zeros(())
    base.trace(out=out)
    assert_same(out, np.trace(A34).astype(float))


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4), (7, 3), (8, 3), (9, 3), (10, 2),
                                   (5, 1), (1, 5), (2, 2, 2), (3, 3, 3), (2, 2, 2, 2),
                                   (0, 0)])
@pytest.mark.parametrize("wrap", [False, True])
def test_fill_diagonal_writes_numpys_elements_through_views(engine, shape, wrap):
    rng = np.random.default_rng(len(shape) * 10 + shape[0])
    for val in (5.0, [1.0, 2.0], np.arange(1.0, 4.0), 7, [9.0] * min(shape), []):
        for step in (1, 2):   # the whole array, and a strided view of a larger one
            host = rng.standard_normal(tuple(n * step for n in shape))
            x = mv.array(host)
            key = tuple(slice(None, None, step) for _ in shape)
            np.fill_diagonal(host[key], val, wrap=wrap)
            assert mv.fill_diagonal(x[key], val, wrap=wrap) is None
            assert x.to_numpy().tobytes() == host.tobytes()


def test_fill_diagonal_refuses_what_numpy_refuses(engine):
    with pytest.raises(ValueError, match="at least 2-d"):
        mv.fill_diagonal(mv.zeros(3), 1.0)
    with pytest.raises(ValueError, match="equal length"):
        mv.fill_diagonal(mv.zeros((2, 3, 2)), 1.0)
    with pytest.raises(OverflowError):
        mv.fill_diagonal(mv.zeros((2, 2), dtype=int), np.inf)


# ---- take, put, copyto -------------------------------------------------------------------

@FAST
@given(shape=shapes, data=st.data())
def test_take_and_along_axis(engine, shape, data):
    a = host_array(shape)
    axis = data.draw(st.integers(0, len(shape) - 1))
    idx = np.array(data.draw(st.lists(st.integers(-6, 6), max_size=5)), dtype=np.intp)
    for mode in ("raise", "wrap", "clip"):
        compare(lambda m, x: m.take(x, idx, axis, mode=mode), a)
        compare(lambda m, x: x.take(idx.tolist(), mode=mode), a)
        compare(lambda m, x: m.take(x, mv.array(idx) if m is mv else idx, mode=mode)
                if mode != "raise" else m.take(x, 0), a)
    order = np.argsort(a, axis=axis)
    compare(lambda m, x: m.take_along_axis(x, order, axis), a)
    compare(lambda m, x: m.take_along_axis(x, order.reshape(-1), None), a)
    host, device = a.copy(), mv.array(a)
    np.put_along_axis(host, order[..., :1] if axis == len(shape) - 1 else order, -1.5,
                      axis)
    mv.put_along_axis(device, order[..., :1] if axis == len(shape) - 1 else order, -1.5,
                      axis)
    assert_same(device, host)


def test_take_out_and_device_index_errors(engine):
    out = mv.zeros((2, 2), dtype=np.int32)
    assert mv.take(mv.array(A34), [[0, 5], [11, -1]], out=out) is out
    assert_same(out, np.take(A34, [[0, 5], [11, -1]]).astype(np.int32))
    bad = mv.take(mv.array(A34), mv.array([12]))  # checked when the op runs (CPU)
    with pytest.raises(mv.OpError):
        bad.to_numpy()
    with pytest.raises(TypeError):
        mv.take(mv.array(A34), mv.array([1.0]))


def test_put_and_copyto(engine):
    host, device = A34.copy(), mv.array(A34)
    for args in (([0, -1], [10]), ([1, 2, 3], [7.9, 8.1]), ([40, -30], [1, 2], "wrap"),
                 ([40, -30], 5, "clip"), ([3], []), (np.array([[2]]), [[6]])):
        np.put(host, *args)
        mv.put(device, *args)
        assert_same(device, host)
    device.put(mv.array([5, 6]), mv.array([-2, -3]))
    host.put([5, 6], [-2, -3])
    assert_same(device, host)
    host_f, dev_f = np.zeros((2, 3)), mv.zeros((2, 3))
    for src, kw in ((np.arange(3), {}), (1.5, {"where": np.array([True, False, True])}),
                    (np.ones((1, 2, 1)), {"where": [[True], [False]]}),
                    (np.float32(2), {"casting": "safe"}), (mv.ones(3), {"where": False})):
        np.copyto(host_f, values_of(src), **kw)
        mv.copyto(dev_f, src, **kw)
        assert_same(dev_f, host_f)
    mv.copyto(dev_f[::-1, 1], dev_f[:, 2])
    np.copyto(host_f[::-1, 1], host_f[:, 2])
    assert_same(dev_f, host_f)


# ---- append, insert, delete --------------------------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_append_insert_delete(engine, axis):
    a = A34
    for obj in (1, -1, 4, [1], [0, 2], [2, 0, 2], slice(1, 3), slice(None, None, 2),
                np.array([True, False, True]), []):
        compare(lambda m, x: m.delete(x, obj, axis), a)
        for values in (7, [7, 8], [[9], [8], [7]], np.arange(4.5)):
            compare(lambda m, x: m.insert(x, obj, values, axis), a)
    compare(lambda m, x: m.insert(x, mv.array([1, 2]) if m is mv else [1, 2], 0, axis), a)
    compare(lambda m, x: m.delete(x, mv.array([0]) if m is mv else [0], axis), a)
    for values in (a, a[:1], [[1, 2, 3, 4]], 5):
        compare(lambda m, x: m.append(x, values, axis), a)


# ---- creation helpers ----------------------------------------------------------------

def test_spaces(engine):
    compare(lambda m: m.linspace(0, 1, 7))
    compare(lambda m: m.linspace(2, -3.5, 4, endpoint=False, retstep=True))
    compare(lambda m: m.linspace([0, 1], [2, 3], 3, axis=1, dtype=np.float32))
    compare(lambda m: m.linspace(0, 10, 5, dtype=int))
    compare(lambda m: m.linspace(m.zeros(2) if m is mv else np.zeros(2), 1, 3, axis=-1))
    compare(lambda m: (m.logspace(0, 2, 3), m.logspace(0, 3, 4, base=2.0, endpoint=False)))
    compare(lambda m: (m.geomspace(1, 1000, 4), m.geomspace(-1, -16, 5, dtype=np.float32)))


# ---- errors: NumPy's family, at once ---------------------------------------------------------

ERRORS = [
    lambda m, x: m.flip(x, 2), lambda m, x: m.flip(x, (0, 0)), lambda m, x: m.fliplr(x[0]),
    lambda m, x: m.flipud(x[0, 0]), lambda m, x: m.rot90(x, axes=(0, 0)),
    lambda m, x: m.rot90(x, axes=(0, 2)), lambda m, x: m.rot90(x, axes=(0,)),
    lambda m, x: m.roll(x, 1, axis=2), lambda m, x: m.roll(x, (1, 2), axis=(0, 1, 0)),
    lambda m, x: m.roll(x, [[1]], axis=[[0]]), lambda m, x: m.tile(x, -1),
    lambda m, x: m.tile(x, 1.5), lambda m, x: m.repeat(x, -1),
    lambda m, x: m.repeat(x, [1, 2]), lambda m, x: m.repeat(x, 2, axis=2),
    lambda m, x: m.repeat(x, np.array([1.5] * 12)), lambda m, x: m.pad(x, -1),
    lambda m, x: m.pad(x, 1.5), lambda m, x: m.pad(x, 1, "edge", constant_values=3),
    lambda m, x: m.pad(x[:0], 1, "edge"), lambda m, x: m.pad(x, 1, "foo"),
    lambda m, x: m.pad(x, ((1, 2, 3),)), lambda m, x: m.split(x, 2),
    lambda m, x: m.split(x, 0), lambda m, x: m.array_split(x, 0),
    lambda m, x: m.array_split(x, 2, axis=3), lambda m, x: m.vsplit(x[0], 1),
    lambda m, x: m.dsplit(x, 1), lambda m, x: m.hsplit(x[0, 0], 1),
    lambda m, x: m.unstack(x[0, 0]), lambda m, x: m.unstack(x, axis=2),
    lambda m, x: m.diagonal(x[0]), lambda m, x: m.diagonal(x, 0, 1, 1),
    lambda m, x: m.diagonal(x, 0, 0, 3), lambda m, x: x[0].trace(),
    lambda m, x: m.diag(x[None]), lambda m, x: m.tril(x[0, 0]),
    lambda m, x: m.take(x, 12), lambda m, x: m.take(x, [-13]),
    lambda m, x: m.take(x, [3], axis=0), lambda m, x: m.take(x, [1], axis=2),
    lambda m, x: m.take(x, [1], mode="foo"), lambda m, x: m.take(x, np.array([1.0])),
    lambda m, x: m.take(x[:0], [1], mode="wrap"),
    lambda m, x: m.take_along_axis(x, np.array([[1.0]]), 0),
    lambda m, x: m.take_along_axis(x, np.array([1]), 0),
    lambda m, x: m.take_along_axis(x, np.array([[5]]), 0),
    lambda m, x: m.take_along_axis(x, np.array([[1]]), None),
    lambda m, x: m.take_along_axis(x, np.ones((2, 2), int), 0),
    lambda m, x: m.put_along_axis(x, np.array([[9]]), 1, 1),
    lambda m, x: m.put(x, [12], 1), lambda m, x: m.put(x[:0], [1], 1, mode="clip"),
    lambda m, x: m.copyto(x, 1.5), lambda m, x: m.copyto(x, np.ones(4)),
    lambda m, x: m.copyto(x, np.ones(3, int), where=np.ones(4, int)),
    lambda m, x: m.copyto(x, 1, casting="bogus"), lambda m, x: m.copyto(x, np.ones(3)),
    lambda m, x: m.copyto(x.astype(np.float32), np.ones(4), casting="safe"),
    lambda m, x: m.copyto(x.astype(np.int8), 300),
    lambda m, x: m.meshgrid(x, indexing="zz"), lambda m, x: m.indices((2, -1)),
    lambda m, x: m.ix_(x), lambda m, x: m.insert(x, 5, 1, axis=1),
    lambda m, x: m.insert(x, [[1]], 1), lambda m, x: m.insert(x, 1, [1, 2], axis=1),
    lambda m, x: m.insert(x, 1.5, 1), lambda m, x: m.delete(x, 1.5),
    lambda m, x: m.delete(x, [4], axis=1), lambda m, x: m.append(x, [1, 2], axis=0),
    lambda m, x: m.resize(x, (-1, 2)), lambda m, x: m.linspace(0, 1, -1),
    lambda m, x: m.geomspace(0, 1, 3), lambda m, x: m.eye(-1), lambda m, x: m.eye(2.5),
    lambda m, x: m.hstack(y for y in (x, x)),
    lambda m, x: m.vstack((x, x[:, :1])), lambda m, x: m.hstack((x, x), casting="no",
                                                                dtype=np.float32),
    lambda m, x: m.r_["0,x", x], lambda m, x: m.r_[x, x[:, :1]], lambda m, x: m.c_[x, x[0]],
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_match_numpy_family(engine, index):
    x = A34.astype(np.int64)
    try:
        ERRORS[index](np, x.copy())
    except Exception:  # noqa: BLE001
        pass
    else:
        pytest.fail("NumPy raises no error here: not an error case")
    compare(ERRORS[index], x)


def test_writes_need_an_narray(engine):
    for fn in (lambda: mv.copyto([0, 0], [1, 2]), lambda: mv.put([0, 0], [1], 1),
               lambda: mv.put_along_axis(np.zeros((2, 2)), [[0]], 1, 0)):
        with pytest.raises(TypeError):
            fn()
    with pytest.raises(ValueError):  # a broadcast view is read-only, as in NumPy
        mv.copyto(mv.broadcast_to(mv.zeros(3), (2, 3)), 1.0)


def test_ops_on_every_device(device_kind):
    """A sample of every kernel on each kind of device (GPU runs need CuPy)."""
    a = host_array((3, 4), dtype=np.float32)
    order = np.argsort(a, 1)
    compare(lambda m, x: (m.roll(x, 1, 1), m.tile(x, (2, 1)), m.repeat(x, [1, 0, 2], 0),
                          m.pad(x, 1, "reflect"), m.pad(x, (1, 2), "median"),
                          m.tril(x, 1), m.triu(x), m.take(x, [5, -1]),
                          m.take_along_axis(x, order, 1),
                          m.eye(3, 4, 1), m.tri(3), m.indices((2, 2)),
                          m.insert(x, [1, 3], 0, axis=1), m.diag(x[0])), a)
    host, device = a.copy(), mv.array(a)
    np.put(host, [0, -1, 13], [5, 6], mode="wrap")
    mv.put(device, [0, -1, 13], [5, 6], mode="wrap")
    np.put_along_axis(host, np.array([[1], [2], [0]]), 9, 1)
    mv.put_along_axis(device, np.array([[1], [2], [0]]), 9, 1)
    np.copyto(host, 3, where=host > 4)
    mv.copyto(device, 3, where=device > 4)
    assert_same(device, host)


def test_broadcast_to_a_shape_of_numpy_integers_holds_python_ints(engine):
    """SciPy passes shapes of ``np.int64``: the view's shape (and its byte count, which
    the stores take) are Python ints, as NumPy's are."""
    x = mv.broadcast_to(mv.array([1.0, 2.0]), (np.int64(3), np.int64(2)))
    assert x.shape == (3, 2) and all(type(n) is int for n in x.shape)
    y = mv.moveaxis(x, 0, 1) + 1.0
    np.testing.assert_array_equal(y.to_numpy(), np.broadcast_to([1.0, 2.0], (3, 2)).T + 1.0)
    assert mv.broadcast_to(mv.array(1.0), np.int64(4)).shape == (4,)
    with pytest.raises(TypeError):
        mv.broadcast_to(mv.array([1.0]), (2.0,))


@pytest.mark.parametrize("shape", [-1, (4, 6), [2, -1, 3], (24,), (2, 3, 4), 24])
def test_reshaping_a_whole_value_again_is_a_view_as_numpys(engine, shape):
    """The second reshape of a value to a shape (memoised) behaves as the first: a view
    that writes through, based on the array, read-only when it is, NumPy's shape."""
    host = np.arange(24.0)
    x = mv.array(host)
    for _ in range(2):
        got, want = x.reshape(shape), host.reshape(shape)
        assert got.shape == want.shape and got.strides == want.strides
        assert got.base is x and not got.flags.owndata
        got[(0,) * got.ndim] += 1.0
        want[(0,) * want.ndim] += 1.0
        assert_same(x, host)
    x.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        x.reshape(shape)[(0,) * len(want.shape)] = 0.0


def test_a_reshape_numpy_refuses_is_refused_every_time(engine):
    x = mv.arange(6.0)
    for _ in range(2):
        with pytest.raises(ValueError, match="cannot reshape"):
            x.reshape(4)
        with pytest.raises(ValueError):
            x.reshape((-1, -1))
