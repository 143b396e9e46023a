"""A tiny op whose kernel calls BLAS runs on the lean path with its device's BLAS thread
count, taken only when that needs no wait: while another count is held, the op waits
outside the engine lock (the general path), and other ops go on meanwhile."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import minerva as mv
from minerva.builder import build
from minerva.device.cpu.blas import BLAS, openblas_controllers
from minerva.ops import registry

WAIT = 30


def _same_infer(x, *, seen):
    return (x,)


def _noting_impl(xp, x, *, out, seen):
    openblas = openblas_controllers()   # NumPy's first
    seen.append((threading.current_thread(), openblas[0].get_num_threads()
                 if openblas else None))
    np.matmul(x, np.eye(x.shape[-1], dtype=x.dtype), out=out)


NOTING = registry.register("test_blas_noting", _same_infer, _noting_impl)
NOTING.blas = NOTING.tiny_inline = True


def test_a_tiny_blas_op_runs_on_the_calling_thread_with_its_devices_count():
    mv.init(cpu_threads=2)
    mv.set_device(mv.create_cpu_device())
    x, seen = mv.array(np.arange(6.0).reshape(2, 3)), []
    y = build(NOTING, [x], {"seen": seen})
    assert seen and seen[0][0] is threading.current_thread()
    assert seen[0][1] in (None, 2)
    np.testing.assert_array_equal(y.to_numpy(timeout=WAIT), np.arange(6.0).reshape(2, 3))
    small = mv.array(np.ones((3, 3)))
    np.testing.assert_array_equal((small @ small).to_numpy(timeout=WAIT),
                                  np.ones((3, 3)) @ np.ones((3, 3)))


@pytest.mark.skipif(not BLAS.process_wide, reason="per-thread BLAS counts never wait")
def test_a_tiny_blas_op_never_waits_for_blas_under_the_engine_lock():
    mv.init(cpu_threads=2)
    mv.set_device(mv.create_cpu_device())
    x, seen = mv.array(np.eye(3)), []
    x.wait(timeout=WAIT)
    BLAS.hold(3)   # another kernel holds another count
    try:
        y = build(NOTING, [x], {"seen": seen})   # queued, not run: it would wait
        z = (x + 1.0).wait(timeout=WAIT)         # the engine goes on meanwhile
        np.testing.assert_array_equal(z.to_numpy(timeout=WAIT), np.eye(3) + 1.0)
        assert not seen
    finally:
        BLAS.release()
    np.testing.assert_array_equal(y.to_numpy(timeout=WAIT), np.eye(3))
    assert seen and seen[0][0] is not threading.current_thread()
