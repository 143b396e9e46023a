"""Indexing by NumPy's rules, with NumPy as the oracle: 0-d boolean indices (a Python or
NumPy bool, a 0-d bool array) add an axis of length 1 or 0, alone or with other indices,
reading and writing; bounds are checked only for indices that pick an element."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv

SHAPES = [(), (3,), (2, 3)]
KEYS = [
    True, False, np.True_, np.False_, np.array(True), np.array(False),
    (Ellipsis, True), (Ellipsis, False), (None, np.False_), (True, True), (False, True),
    (True, 0), (0, np.False_), (slice(1, None), True), (True, slice(None), False),
    ([1, 0], True), (True, [0, 1]), ([[0], [1]], np.True_), (True, None, [1, 0]),
]


def keys_for(shape):
    """The keys of KEYS that NumPy accepts for an array of ``shape``."""
    probe = np.zeros(shape)
    for key in KEYS:
        try:
            probe[key]
        except IndexError:
            continue
        yield key


CASES = [(shape, key) for shape in SHAPES for key in keys_for(shape)]
IDS = [f"{shape}-{key!r}" for shape, key in CASES]


def values(shape):
    return np.arange(1, 1 + int(np.prod(shape)), dtype=np.float64).reshape(shape)


@pytest.mark.parametrize(("shape", "key"), CASES, ids=IDS)
def test_a_0d_boolean_index_reads_as_numpys(engine, shape, key):
    x = values(shape)
    got = mv.asarray(x)[key]
    want = x[key]
    assert got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize(("shape", "key"), CASES, ids=IDS)
@pytest.mark.parametrize("value", ["scalar", "array"])
def test_a_0d_boolean_index_writes_as_numpys(engine, shape, key, value):
    want = values(shape)
    got = mv.asarray(want)
    written = -7.0 if value == "scalar" else -np.arange(want[key].size).reshape(want[key].shape)
    want[key] = written
    got[key] = written
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("mask", [True, False])
def test_a_0d_narray_mask_is_a_0d_boolean_index(engine, mask):
    x = values((2, 3))
    got, want = mv.asarray(x), x.copy()
    assert np.asarray(got[mv.asarray(mask)]).shape == want[np.asarray(mask)].shape
    got[mv.asarray(mask)] = 5.0
    want[np.asarray(mask)] = 5.0
    np.testing.assert_array_equal(np.asarray(got), want)


def test_add_at_with_a_0d_boolean_index_is_numpys(engine):
    want = values((2, 3))
    got = mv.asarray(want)
    np.add.at(want, (True, 1), 10.0)
    mv.add.at(got, (True, 1), 10.0)
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("key", [([5], []), ([[5]], np.zeros((0, 1), int)),
                                 (np.array([[0], [1]]), False, slice(None))],
                         ids=["empty", "empty-2d", "false"])
def test_indices_that_pick_nothing_are_not_bounds_checked_as_numpys(engine, key):
    x = values((1, 2))
    want = x[key]
    got = mv.asarray(x)[key]
    assert got.shape == want.shape


def test_out_of_bounds_indices_that_pick_elements_still_raise(engine):
    x = values((1, 2))
    with pytest.raises(IndexError):
        x[[5], [0]]
    with pytest.raises(IndexError):
        mv.asarray(x)[[5], [0]]


@pytest.mark.parametrize("index", [1, -1, 0])
def test_a_computed_0d_integer_narray_indexes_as_numpys_int(engine, index):
    """``x[k]`` with ``k`` a 0-d integer NArray (``np.argmax(...)``) is ``x[int(k)]``, as
    NumPy reads a 0-d integer array: a row view of an N-D array, NumPy's scalar of a 1-D
    one, NumPy's error out of bounds."""
    host = np.arange(12.0).reshape(3, 4)
    x, k = mv.array(host), mv.array(np.int64(index))
    row = x[k]
    assert row.shape == host[index].shape and row.base is x
    np.testing.assert_array_equal(row.to_numpy(), host[np.array(index)])
    element = x[0][k]
    assert type(element) is type(host[0][np.array(index)]) and element == host[0][index]
    with pytest.raises(IndexError, match="out of bounds"):
        x[mv.array(7)]
