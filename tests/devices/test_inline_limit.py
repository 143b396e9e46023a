"""The inline limit of CPU devices: ``MINERVA_INLINE_BYTES`` when it is set, else chosen by
the cores (``manager.auto_inline_limit``): one device whose threads take every one of at
most two cores runs ops of up to ``CALLER_BYTES`` on the caller's thread; devices side by
side, or cores to spare, keep ``INLINE_BYTES``. The results are NumPy's either way."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import minerva as mv
from minerva.builder import build
from minerva.current import get_system
from minerva.device import manager
from minerva.device.manager import CALLER_BYTES, INLINE_BYTES, auto_inline_limit
from minerva.ops import registry

WAIT = 30.0


def _same_infer(x, *, seen):
    return (x,)


def _noting_impl(xp, x, *, out, seen):
    seen.append(threading.current_thread())
    np.negative(x, out=out)


NOTING = registry.register("test_inline_limit_noting", _same_infer, _noting_impl)
NOTING.tiny_inline = True
CUT = registry.register("test_inline_limit_cut", _same_infer, _noting_impl)
CUT.tiny_inline, CUT.row_split = True, (0,)


@pytest.fixture
def cores(monkeypatch):
    """Set the cores the devices share: ``cores(n)``."""
    def set_cores(n: int) -> None:
        monkeypatch.setattr(manager, "cores_for_devices", lambda: n)
    return set_cores


def _limits() -> list:
    return [d.inline_limit for d in get_system().devices.all() if d.kind == "cpu"]


@pytest.mark.parametrize("n_cores, threads, expected", [
    (2, [2], CALLER_BYTES), (1, [1], CALLER_BYTES), (2, [3], CALLER_BYTES),
    (2, [1], INLINE_BYTES), (2, [1, 1], INLINE_BYTES), (2, [2, 2], INLINE_BYTES),
    (4, [4], INLINE_BYTES), (16, [16], INLINE_BYTES), (16, [2], INLINE_BYTES)])
def test_the_rule(n_cores, threads, expected):
    assert auto_inline_limit(n_cores, threads) == expected


def test_one_device_on_two_cores_runs_big_ops_on_the_caller(cores):
    """2 cores, one device of 2 threads (the default share): a 4 MiB op runs on the
    calling thread; a second device makes both hand it to their workers."""
    cores(2)
    mv.init()
    mv.set_device(mv.create_cpu_device())
    assert _limits() == [CALLER_BYTES]
    host = np.random.default_rng(3).standard_normal(1 << 19)   # 4 MiB
    x = mv.array(host)
    mv.wait_for_all(timeout=WAIT)
    seen = []
    y = build(NOTING, [x], {"seen": seen})
    assert seen == [threading.current_thread()]
    np.testing.assert_array_equal(y.to_numpy(timeout=WAIT), -host)
    other = mv.create_cpu_device()
    assert _limits() == [INLINE_BYTES, INLINE_BYTES]
    z = build(NOTING, [y], {"seen": seen})
    np.testing.assert_array_equal(z.to_numpy(timeout=WAIT), host)
    assert len(seen) == 2 and seen[1] is not threading.current_thread()
    assert other == 1


@pytest.mark.parametrize("n_cores, threads", [(16, None), (2, 1)])
def test_cores_to_spare_keep_the_default(cores, n_cores, threads):
    """16 cores, or one thread of 2 cores: ``INLINE_BYTES``, and a 4 MiB op runs on the
    device's worker."""
    cores(n_cores)
    mv.init(cpu_threads=threads)
    mv.set_device(mv.create_cpu_device())
    assert _limits() == [INLINE_BYTES]
    x = mv.ones(1 << 19)
    mv.wait_for_all(timeout=WAIT)
    seen = []
    y = build(NOTING, [x], {"seen": seen})
    np.testing.assert_array_equal(y.to_numpy(timeout=WAIT), -np.ones(1 << 19))
    assert seen and seen[0] is not threading.current_thread()


@pytest.mark.parametrize("how", ["env", "init"])
def test_a_set_limit_is_kept(cores, monkeypatch, how):
    """``MINERVA_INLINE_BYTES`` or ``mv.init(inline_bytes=...)``: every CPU device has it,
    however many there are and whatever the cores (``0`` too: the direct path off)."""
    cores(2)
    for limit in (0, 4096, 3 << 20):
        if how == "env":
            monkeypatch.setenv("MINERVA_INLINE_BYTES", str(limit))
            mv.init()
        else:
            mv.init(inline_bytes=limit)
        mv.create_cpu_device()
        assert _limits() == [limit]
        mv.create_cpu_device()
        assert _limits() == [limit, limit]
        mv.shutdown()


def test_unset_in_init_means_chosen(cores):
    """``mv.init(inline_bytes=None)`` is the limit unset: chosen by the cores."""
    cores(2)
    mv.init(inline_bytes=None)
    mv.create_cpu_device()
    assert _limits() == [CALLER_BYTES]


def test_an_op_the_device_cuts_runs_on_the_caller_only_below_the_cut(cores):
    """Under ``CALLER_BYTES``, an op the device cuts into row ranges (``row_split``,
    whose numbers may depend on the cut: the convolutions' filter gradients) runs on the
    caller only up to the device's ``whole_limit``, where the device never cuts it."""
    cores(2)
    mv.init()
    mv.set_device(mv.create_cpu_device())
    device = get_system().devices.get(0)
    assert device.inline_limit == CALLER_BYTES and device.whole_limit == INLINE_BYTES
    small, big = mv.ones((64, 512)), mv.ones((512, 512))   # 256 KiB, 2 MiB
    mv.wait_for_all(timeout=WAIT)
    seen = []
    outs = [build(CUT, [x], {"seen": seen}) for x in (small, big)]
    for out in outs:
        np.testing.assert_array_equal(out.to_numpy(timeout=WAIT), -np.ones(out.shape))
    assert seen[0] is threading.current_thread()
    assert all(t is not threading.current_thread() for t in seen[1:])
