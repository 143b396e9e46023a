"""A tiny op of several outputs (``eigh``, ``svd``, ``divmod``, ``frexp``) whose inputs
are computed runs at once on the calling thread, as a one-output op does: its outputs are
computed when the call returns (so the ops after it take the direct path too), with
NumPy's bits; a failing one stores its error on every output, raised at a read with the
user's line.

Each test holds the device's one worker thread with a pending op, so a result computed at
once was computed on the calling thread."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import minerva as mv
from minerva.builder import build
from minerva.common.errors import OpError
from tests.support.gates import gated_op

WAIT = 30.0


def _held_worker(name):
    """A pending op on the current device (its worker waits on the gate); the gate."""
    op, gate = gated_op(name)
    return build(op, [mv.zeros(4)]), gate


def _done(*arrays) -> bool:
    return all(a._storage.current.done for a in arrays)


def _symmetric(seed: int):
    m = np.random.default_rng(seed).standard_normal((5, 5))
    return m @ m.T


@pytest.mark.parametrize("seed", range(3))
def test_several_outputs_are_computed_at_once_with_numpys_bits(seed):
    mv.init()
    mv.set_device(mv.create_cpu_device())
    host = _symmetric(seed)
    m = mv.array(host)
    pending, gate = _held_worker(f"test_gated_outputs_{seed}")
    try:
        w, v = mv.linalg.eigh(m)
        u, s, vt = mv.linalg.svd(m[:, :3], full_matrices=False)
        quotient, remainder = mv.divmod(m, 0.75)
        mantissa, exponent = mv.frexp(m)
        scaled = v * w          # reads two outputs of one op: direct as well
        assert _done(w, v, u, s, vt, quotient, remainder, mantissa, exponent, scaled)
    finally:
        gate.set()
    hw, hv = np.linalg.eigh(host)
    hu, hs, hvt = np.linalg.svd(host[:, :3], full_matrices=False)
    pairs = [(w, hw), (v, hv), (u, hu), (s, hs), (vt, hvt), (scaled, hv * hw)]
    pairs += list(zip((quotient, remainder), np.divmod(host, 0.75)))
    pairs += list(zip((mantissa, exponent), np.frexp(host)))
    for got, want in pairs:
        np.testing.assert_array_equal(got.to_numpy(timeout=WAIT), want)
        assert got.dtype == want.dtype
    pending.wait(timeout=WAIT)


def test_a_failing_op_of_several_outputs_fails_each_at_the_users_line():
    mv.init()
    mv.set_device(mv.create_cpu_device())
    m = mv.array(np.full((3, 3), np.nan))
    pending, gate = _held_worker("test_gated_outputs_failing")
    try:
        u, s, vt = mv.linalg.svd(m); line = inspect.currentframe().f_lineno  # noqa: E702
        assert _done(u, s, vt)
        after = mv.ones(3) * 2.0      # other work goes on
    finally:
        gate.set()
    for output in (u, s, vt):
        with pytest.raises(OpError, match="SVD did not converge") as info:
            output.to_numpy(timeout=WAIT)
        assert info.value.op == "svd"
        assert info.value.created_at.endswith(f"test_direct_outputs.py:{line}")
    np.testing.assert_array_equal(after.to_numpy(timeout=WAIT), np.full(3, 2.0))
    pending.wait(timeout=WAIT)
