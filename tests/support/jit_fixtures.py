"""Helpers of the jit tests: uploading calls, and bitwise comparison of arrays and of
result structures (tuples, lists, dicts, namedtuples, None, plain values)."""
from __future__ import annotations

import numpy as np

import minerva as mv


def upload(call) -> list:
    """A call's arguments with its NumPy arrays copied onto the current device."""
    return [mv.array(a) if isinstance(a, np.ndarray) else a for a in call]


def values(a) -> np.ndarray:
    """The values of an NArray or a NumPy array, on the host."""
    return a.to_numpy() if isinstance(a, mv.NArray) else np.asarray(a)


def assert_same(want, got) -> None:
    """Same dtype, shape and bytes (NaNs and signed zeros included)."""
    a, b = values(want), values(got)
    assert (a.dtype, a.shape) == (b.dtype, b.shape)
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes(), \
        f"values differ:\n{a}\n{b}"


def assert_trees_same(want, got) -> None:
    """Two results of a function: the same structure, arrays bitwise equal."""
    if isinstance(want, mv.NArray):
        assert isinstance(got, mv.NArray), got
        assert_same(want, got)
    elif isinstance(want, (tuple, list)):
        assert type(want) is type(got) and len(want) == len(got)
        for a, b in zip(want, got):
            assert_trees_same(a, b)
    elif isinstance(want, dict):
        assert type(got) is dict and list(want) == list(got)
        for key in want:
            assert_trees_same(want[key], got[key])
    else:
        assert want == got
