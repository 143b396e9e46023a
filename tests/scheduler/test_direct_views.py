"""The direct path counts an input read through a view as the view's bytes, not its
buffer's: an op on a small view of a big array runs at once on the calling thread (with
NumPy's bits), one on a view of more than the device's inline limit takes the DAG path.

Each gated test holds the device's one worker thread with a pending op, so a result that
is computed at once was computed on the calling thread."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from minerva.builder import build
from minerva.scheduler import direct
from tests.conftest import ENGINES, start_engine
from tests.support.gates import gated_op

WAIT = 30.0
LIMIT = 1 << 20
PLANES = (9, 120, 400)
"""A 3.3 MiB float64 array: more than ``LIMIT`` as a whole."""


def _planes():
    """A big computed array (minerva, NumPy), distinct values."""
    host = np.random.default_rng(7).standard_normal(PLANES)
    planes = mv.array(host)
    planes.wait(timeout=WAIT)
    return planes, host


def _held_worker(name):
    """A pending op on the current device (its worker waits on the gate); the gate."""
    op, gate = gated_op(name)
    pending = build(op, [mv.zeros(4)])
    return pending, gate


def test_an_op_on_a_small_view_of_a_big_array_runs_at_once():
    """``f[7, 0, 1:399] - f[6, 0, 1:399]`` (398 elements of 3.3 MiB) is computed while
    the worker is held, with NumPy's bits; so is a reduction over such a view."""
    mv.init(inline_bytes=LIMIT)
    mv.set_device(mv.create_cpu_device())
    planes, host = _planes()
    pending, gate = _held_worker("test_gated_view_small")
    try:
        diff = planes[7, 0, 1:399] - planes[6, 0, 1:399]
        scaled = planes[2, 5:9, ::3] * 0.5
        total = mv.sum(planes[1, 3])
        assert diff._storage.current.done and scaled._storage.current.done
        assert total._storage.current.done
    finally:
        gate.set()
    np.testing.assert_array_equal(diff.to_numpy(timeout=WAIT),
                                  host[7, 0, 1:399] - host[6, 0, 1:399])
    np.testing.assert_array_equal(scaled.to_numpy(timeout=WAIT), host[2, 5:9, ::3] * 0.5)
    assert float(total) == np.sum(host[1, 3])
    pending.wait(timeout=WAIT)


def test_a_write_through_a_small_view_of_a_big_array_runs_at_once():
    """``f[3, 0, 1:399] += 1.0`` and ``out=`` into such a view: the next version of the
    big array is made at once (``+=`` in its own buffer, taking no block; ``out=`` after a copy
of its input, which shares the buffer), with NumPy's bits."""
    mv.init(inline_bytes=LIMIT)
    mv.set_device(mv.create_cpu_device())
    planes, host = _planes()
    pending, gate = _held_worker("test_gated_view_write")
    try:
        before = mv.memory_stats(0)
        planes[3, 0, 1:399] += 1.0
        assert planes._storage.current.done
        assert mv.memory_stats(0)["n_allocs"] == before["n_allocs"]
        mv.multiply(planes[4, 1], 2.0, out=planes[5, 2])   # its input copied first
        assert planes._storage.current.done
    finally:
        gate.set()
    host[3, 0, 1:399] += 1.0
    np.multiply(host[4, 1], 2.0, out=host[5, 2])
    np.testing.assert_array_equal(planes.to_numpy(timeout=WAIT), host)
    pending.wait(timeout=WAIT)


def test_an_op_on_a_big_view_takes_the_dag_path():
    """A view of more than the inline limit (two planes, 750 KiB, read twice) waits for
    the held worker; a small view read with it, the same."""
    mv.init(inline_bytes=LIMIT)
    mv.set_device(mv.create_cpu_device())
    planes, host = _planes()
    pending, gate = _held_worker("test_gated_view_big")
    try:
        both = planes[0:2] + planes[2:4]
        assert not both._storage.current.done
    finally:
        gate.set()
    np.testing.assert_array_equal(both.to_numpy(timeout=WAIT), host[0:2] + host[2:4])
    pending.wait(timeout=WAIT)


def test_input_bytes_counts_views_as_they_are_read():
    """A whole value's bytes, a view's elements at its itemsize, and at the itemsize of
    the dtype a view reads its buffer as (``x.view(dtype)``)."""
    mv.init(inline_bytes=LIMIT)
    planes, _ = _planes()
    row = planes[7, 0, 1:399]
    as_bytes = planes.view(np.uint8)[0, 0, :16]
    storages = [planes._storage] * 3
    assert direct.input_bytes(storages, None) == 3 * planes.nbytes
    assert direct.input_bytes(storages, [None, row._view, as_bytes._view]) == \
        planes.nbytes + 398 * 8 + 16
    assert direct.is_tiny(storages[1:], planes[0, 0]._spec, None, LIMIT,
                          [row._view, as_bytes._view])
    assert not direct.is_tiny(storages[1:], planes[0, 0]._spec, None, LIMIT)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", range(4))
def test_random_view_ops_of_a_big_array_give_numpys_bits(engine, seed):
    """Random element-wise ops, reductions and writes over random basic views of a big
    array, under every engine, equal NumPy's bit for bit."""
    start_engine(engine, inline_bytes=LIMIT)
    rng = np.random.default_rng(seed)
    planes, host = _planes()
    for _ in range(30):
        index = _random_index(rng)
        ours, theirs = planes[index], host[index]
        kind = rng.integers(4)
        if kind == 0:
            got, want = mv.exp(ours) - ours * 0.25, np.exp(theirs) - theirs * 0.25
        elif kind == 1:
            got, want = mv.sum(ours, axis=-1), np.sum(theirs, axis=-1)
        elif kind == 2:
            planes[index] *= 1.5
            host[index] *= 1.5
            got, want = planes, host
        else:
            got, want = mv.maximum(ours, 0.1), np.maximum(theirs, 0.1)
        np.testing.assert_array_equal(got.to_numpy(timeout=WAIT), want)
    np.testing.assert_array_equal(planes.to_numpy(timeout=WAIT), host)


def _random_index(rng):
    """A basic index of ``PLANES``: a plane, a row range and a strided column range."""
    start = int(rng.integers(0, 300))
    return (int(rng.integers(PLANES[0])), slice(int(rng.integers(0, 60)), None,
                                                int(rng.integers(1, 40))),
            slice(start, start + int(rng.integers(1, 100)), int(rng.integers(1, 4))))
