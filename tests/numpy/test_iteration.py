"""Python-level iteration at NumPy's pace and the functions of NumPy's indexing and sets
chapters, NumPy as the oracle: ``for v in x`` reads a 1-D array once (elements as NumPy's
iteration gives them), rows of an N-D array are views, a loop sees its own writes;
``ndenumerate``, ``ndindex``, ``nditer`` (read-only and ``readwrite``), ``unravel_index``,
``ravel_multi_index``, ``intersect1d``, ``union1d``, ``setdiff1d``, ``setxor1d``."""
from __future__ import annotations

import time

import numpy as np
import pytest

import minerva as mv
from minerva.api.core import exports
from tests.numpy.test_ndarray import check, outcome, same_as_numpy

HOSTS = {"float64": np.arange(5.0) - 1.5, "int32": np.arange(5, dtype=np.int32),
         "bool": np.arange(5) % 2 == 0, "complex": np.arange(3) * (1 + 2j),
         "uint8": np.arange(250, 256, dtype=np.uint8), "empty": np.zeros(0),
         "float32 strided": np.arange(10, dtype=np.float32)[::3]}


@pytest.mark.parametrize("kind", list(HOSTS))
def test_iterating_a_1d_array_gives_numpys_elements(engine, kind):
    host = HOSTS[kind]
    got, want = list(mv.array(host)), list(host)
    assert [type(v) for v in got] == [type(v) for v in want]
    assert got == want


@pytest.mark.parametrize("key", [1, (slice(None), 2), (0, slice(None, None, -2))])
def test_iterating_a_1d_view_gives_numpys_elements_and_sees_writes(engine, key):
    host = np.arange(24.0).reshape(4, 6)
    x = mv.array(host)
    got, want = list(x[key]), list(host[key])
    assert [type(v) for v in got] == [type(v) for v in want]
    assert got == want
    for a in (x[key], host[key]):
        for i, v in enumerate(a):
            if i + 1 < len(a):
                a[i + 1] += v
    check(x, host)


def test_iterating_reads_the_array_once(engine, monkeypatch):
    reads = []
    real = exports.host_values
    monkeypatch.setattr(exports, "host_values", lambda x: reads.append(x) or real(x))
    x = mv.arange(2000.0)
    assert sum(x) == sum(np.arange(2000.0))
    assert len(reads) == 1


def test_sum_over_2000_elements_runs_at_numpys_pace(engine):
    x = mv.arange(2000.0).wait()
    host = np.arange(2000.0)
    best, numpys = float("inf"), float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        total = sum(x)
        best = min(best, time.perf_counter() - t0)
        t0 = time.perf_counter()
        sum(host)
        numpys = min(numpys, time.perf_counter() - t0)
    assert total == sum(host)
    assert best < max(20 * numpys, 0.01), (best, numpys)  # was a tiny op per element


def test_a_loop_sees_its_own_writes_as_in_numpy(engine):
    host = np.arange(6.0)
    x = mv.array(host)
    for a in (x, host):
        for i, v in enumerate(a):
            if i + 1 < len(a):
                a[i + 1] += v
    check(x, host)


def test_rows_of_an_nd_array_are_views(engine):
    host = np.arange(12.0).reshape(3, 4)
    x = mv.array(host)
    for a in (x, host):
        for i, row in enumerate(a):
            row[...] = 0 if i == 1 else row
            row *= 2
    check(x, host)
    assert all(row.base is x for row in x)


@pytest.mark.parametrize("value", [mv.float64, None])
def test_zero_d_arrays_are_not_iterable(engine, value):
    x = mv.array(3.0)
    same_as_numpy(outcome(iter, x), outcome(iter, np.array(3.0)))


def test_elements_are_recorded_while_autograd_records(engine):
    x = mv.array(np.arange(4.0))
    x.attach_grad()
    with mv.autograd.record():
        total = sum(v * v for v in x)
    total.backward()
    check(x.grad, 2 * np.arange(4.0))


def test_a_jitted_function_may_iterate(engine):
    step = mv.jit(lambda x: sum(v for v in x))
    for _ in range(2):
        check(step(mv.arange(5.0)), np.float64(10.0))


# ---- ndenumerate, ndindex, nditer -----------------------------------------------------------

@pytest.mark.parametrize("pick", [lambda a: a, lambda a: a.T, lambda a: a[0, 1:2].reshape(()),
                                  lambda a: a[:0]], ids=["2-D", "T", "0-d", "empty"])
def test_ndenumerate_is_numpys(engine, pick):
    host = np.arange(6.0).reshape(2, 3)
    got = list(mv.ndenumerate(pick(mv.array(host))))
    want = list(np.ndenumerate(pick(host)))
    assert got == want and [type(v) for _, v in got] == [type(v) for _, v in want]
    assert list(mv.ndenumerate([[1, 2]])) == list(np.ndenumerate([[1, 2]]))


def test_ndindex_is_numpys(engine):
    assert mv.ndindex is np.ndindex and list(mv.ndindex(2, 3)) == list(np.ndindex(2, 3))


@pytest.mark.parametrize("flags", [None, ["multi_index"], ["external_loop"], ["c_index"]],
                         ids=repr)
def test_a_read_only_nditer_is_numpys(engine, flags):
    host = np.arange(6.0).reshape(2, 3).T
    x = mv.array(host)
    got, want = mv.nditer(x, flags=flags), np.nditer(host, flags=flags)
    steps = 0
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
        steps += 1
        if flags == ["multi_index"]:
            assert got.multi_index == want.multi_index
    assert got.finished and steps == len(list(np.nditer(host, flags=flags)))


def test_nditer_readwrite_writes_back_at_the_end_of_a_with_block(engine):
    host = np.arange(6.0).reshape(2, 3)
    x = mv.array(host)
    with mv.nditer(x, op_flags=["readwrite"]) as it:
        for v in it:
            v[...] = 2 * v
    with np.nditer(host, op_flags=["readwrite"]) as it:
        for v in it:
            v[...] = 2 * v
    check(x, host)


def test_nditer_readwrite_in_a_plain_loop_writes_back_when_it_ends(engine):
    host = np.arange(4.0)
    x = mv.array(host)
    for it, a in ((mv.nditer([x, 3.0], op_flags=[["readwrite"], ["readonly"]]), x),
                  (np.nditer([host, 3.0], op_flags=[["readwrite"], ["readonly"]]), host)):
        for v, w in it:
            v[...] = v + w
    check(x, host)


def test_nditer_allocates_outputs_as_numpy(engine):
    host = np.arange(6.0).reshape(2, 3)
    results = []
    for a, module in ((mv.array(host), mv), (host, np)):
        with module.nditer([a, None], op_flags=[["readonly"], ["writeonly", "allocate"]]) \
                as it:
            for v, out in it:
                out[...] = v * v
            results.append(it.operands[1])
    np.testing.assert_array_equal(results[0], results[1])


def test_numpys_own_nditer_cannot_write_into_an_narray(engine):
    """``numpy.nditer`` reads an NArray through its read-only alias: NumPy's own error, never
    a silent write into a copy (``mv.nditer`` writes back)."""
    with pytest.raises(ValueError):
        np.nditer(mv.arange(3.0), op_flags=["readwrite"])


# ---- unravel_index, ravel_multi_index ------------------------------------------------------

UNRAVEL = [(5, (2, 3), "C"), ([1, 5], (2, 3), "F"), (np.array([[0, 7]]), (2, 4), "C"),
           (6, (2, 3), "C"), (-1, (2, 3), "C"), (3, 4, "C"), ([1.5], (2, 3), "C"),
           (1, (2, 3), "X")]


@pytest.mark.parametrize("indices, shape, order", UNRAVEL, ids=repr)
def test_unravel_index_of_host_positions_is_numpys(engine, indices, shape, order):
    same_as_numpy(outcome(lambda: mv.unravel_index(indices, shape, order)),
                  outcome(lambda: np.unravel_index(indices, shape, order)))


@pytest.mark.parametrize("order", ["C", "F"])
def test_unravel_index_of_narray_positions_is_one_op(engine, order):
    host = np.array([[0, 5], [3, 4]])
    check(mv.unravel_index(mv.array(host), (2, 3), order),
          np.unravel_index(host, (2, 3), order))
    bad = mv.unravel_index(mv.array([6]), (2, 3))
    with pytest.raises(mv.OpError) as caught:
        bad[0].wait()
    assert isinstance(caught.value.__cause__, ValueError)


RAVEL = [(([0, 1], [2, 0]), (2, 3), "raise", "C"), ((1, 2), (2, 3), "raise", "F"),
         (([3], [-1]), (2, 3), "wrap", "C"), (([3], [-1]), (2, 3), ("clip", "wrap"), "C"),
         (([2], [0]), (2, 3), "raise", "C"), (([0],), (2, 3), "raise", "C")]


@pytest.mark.parametrize("multi, dims, mode, order", RAVEL, ids=repr)
def test_ravel_multi_index_is_numpys(engine, multi, dims, mode, order):
    want = outcome(lambda: np.ravel_multi_index(multi, dims, mode=mode, order=order))
    same_as_numpy(outcome(lambda: mv.ravel_multi_index(multi, dims, mode=mode, order=order)),
                  want)
    arrays = tuple(mv.array(np.atleast_1d(m)) for m in multi)
    got = outcome(lambda: mv.ravel_multi_index(arrays, dims, mode=mode, order=order).wait())
    if want[0] == "ok":
        check(got[1], np.atleast_1d(want[1]))
    else:
        assert got[0] == "raised"


# ---- the sets chapter ----------------------------------------------------------------------

SETS = {
    "intersect1d": lambda m, a, b: m.intersect1d(a, b),
    "intersect1d indices": lambda m, a, b: m.intersect1d(a, b, return_indices=True),
    "intersect1d unique": lambda m, a, b: m.intersect1d(m.unique(a), m.unique(b), True),
    "union1d": lambda m, a, b: m.union1d(a, b), "setdiff1d": lambda m, a, b:
    m.setdiff1d(a, b), "setxor1d": lambda m, a, b: m.setxor1d(a, b),
    "isin": lambda m, a, b: m.isin(a, b), "isin invert": lambda m, a, b: m.isin(a, b,
                                                                            invert=True)}


@pytest.mark.parametrize("name", list(SETS))
@pytest.mark.parametrize("inputs", ["narrays", "host"])
def test_set_routines_are_numpys(engine, name, inputs):
    a, b = np.array([[5, 1, 3], [3, 9, 1]]), np.array([3, 4, 5, 5])
    convert = mv.array if inputs == "narrays" else (lambda v: v)
    same_as_numpy(outcome(SETS[name], mv, convert(a), convert(b)),
                  outcome(SETS[name], np, a, b))


# ---- x[i]: one element of a computed CPU value is NumPy's scalar, read at once ----------------

ELEMENTS = {"float64": (np.arange(5.0) - 1.5, [0, 3, -1, -5]),
            "int32 2-D": (np.arange(12, dtype=np.int32).reshape(3, 4), [(1, 2), (-1, 0)]),
            "uint8": (np.arange(250, 256, dtype=np.uint8), [5]),
            "bool": (np.arange(4) % 2 == 0, [1]), "complex": (np.arange(3) * (1 + 2j), [2]),
            "dates": (np.array(["2024-01-01", "2024-03-05"], "datetime64[D]"), [1]),
            "strings": (np.array(["ab", "cde"]), [1])}


@pytest.mark.parametrize("kind", list(ELEMENTS))
def test_an_element_of_a_computed_array_is_numpys_own_scalar(engine, kind):
    host, keys = ELEMENTS[kind]
    x = mv.array(host).wait()
    for key in keys:
        got, want = x[key], host[key]
        assert type(got) is type(want) and got == want and repr(got) == repr(want)


def test_an_element_through_views_and_out_of_bounds_is_numpys(engine):
    host = np.arange(10.0)
    x = mv.array(host).wait()
    for got, want in ((x[::3][2], host[::3][2]), (x[2:][-1], host[2:][-1]),
                      (x.view(np.int64)[1], host.view(np.int64)[1]),
                      (x.reshape(2, 5)[1, 3], host.reshape(2, 5)[1, 3])):
        assert type(got) is type(want) and got == want
    same_as_numpy(outcome(lambda: x[10]), outcome(lambda: host[10]))
    same_as_numpy(outcome(lambda: x[-11]), outcome(lambda: host[-11]))


def test_an_element_read_at_once_is_a_copy(engine):
    x = mv.arange(4.0)
    v = x[1]
    x[1] = 7.0
    x += 1
    assert v == 1.0 and x[1] == 8.0


def test_an_element_stays_lazy_while_autograd_records(engine):
    x = mv.arange(4.0)
    x.attach_grad()
    with mv.autograd.record():
        y = x[2] * 3.0
    assert type(y) is mv.NArray and repr(y) == repr(np.float64(6.0))
    y.backward()
    check(x.grad, np.array([0.0, 0.0, 3.0, 0.0]))


def test_a_record_element_stays_lazy_as_numpys_is_a_view(engine):
    host = np.array([(1, 2.5), (3, 4.5)], dtype=[("a", "i4"), ("b", "f8")])
    got = mv.array(host)[1]
    assert type(got) is mv.NArray and got.item() == host[1].item()
