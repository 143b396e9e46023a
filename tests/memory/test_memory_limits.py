"""The memory limit and the out-of-memory ladder through the runtime, and the guarantee that
a buffer is never handed out while a pending op still reads it.

Sizes are float32 element counts: 5120 (20 KiB), 10240 (40 KiB), 12288 (48 KiB), under a
limit of 64 KiB per device.
"""
from __future__ import annotations

import inspect
import os
import threading

import numpy as np
import pytest

import minerva as mv
import minerva.ops  # noqa: F401
from tests.conftest import ENGINES, assert_settled, start_engine
from tests.support.fakes import build_scheduler, submit
from minerva import system as _system
from minerva.ops import registry
from minerva.ops.registry import spec
from minerva.scheduler.queue import TaskKind
from minerva.storage import make_store
from minerva.storage.host import HostAllocator

LIMIT = 64 << 10
WAIT = 10.0


def start(engine: str, strategy: str = "pooled", **options) -> int:
    """A runtime with one CPU device under ``LIMIT``; the device's id. Every op runs on the
    device's thread (no tiny op on the caller's), where the gates hold them."""
    start_engine(engine, mem_pool=strategy, mem_limit=LIMIT, default_dtype="float32",
                 inline_bytes=0, **options)
    dev = mv.create_cpu_device()
    mv.set_device(dev)
    return dev


def store_of(dev: int):
    """The DataStore of device ``dev``."""
    return _system.get_system().devices.get(dev).store


@pytest.mark.parametrize("strategy", ["pooled", "round"])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_cached_block_is_released_to_fit_a_request(engine, strategy):
    """20 KiB freed stays cached; 48 KiB fits beside it only once the cache is returned."""
    dev = start(engine, strategy)
    x = mv.zeros(5120)
    x.wait(timeout=WAIT)
    del x
    mv.wait_for_all(timeout=WAIT)
    assert mv.memory_stats(dev)["cached_bytes"] > 0
    y = mv.ones(12288)
    np.testing.assert_array_equal(y.to_numpy(timeout=WAIT), np.ones(12288, np.float32))
    stats = mv.memory_stats(dev)
    assert stats["n_releases"] == 1 and stats["n_ooms"] == 0
    assert stats["cached_bytes"] == 0 and stats["n_mallocs"] == 2
    assert_settled(y)


class Gates:
    """A hook listener that forces an interleaving. A device worker about to run an op whose
    output has a shape given to ``hold`` waits for that event; a dispatcher that has just
    handled a task of kind ``kind`` while armed (and ``when()``) sets ``blocked`` and waits
    until the store calls the reclaimer (installed with ``install``). Hooks never raise:
    a missed wait shows as a wrong count in the test."""

    def __init__(self, kind=None, when=lambda: True):
        self.system = _system.get_system()
        self.kind, self.when, self.armed = kind, when, False
        self.blocked, self.reclaiming = threading.Event(), threading.Event()
        self.holds, self.reached, self.sent = {}, {}, {}
        self.n_reclaims = 0

    def install(self, dev):
        """Subscribe to the runtime's hooks and wrap the reclaimer of ``dev``'s store."""
        self.system.hooks.subscribe(self)
        store_of(dev).set_reclaimer(self.reclaimer)
        return self

    def hold(self, shape, event):
        """Ops making ``shape`` wait for ``event``; the events set when one reaches its
        device, and when its RUN has been dispatched."""
        self.holds[shape] = event
        self.reached[shape], self.sent[shape] = threading.Event(), threading.Event()
        return self.reached[shape], self.sent[shape]

    def op_started(self, op, *_args):
        shape = op.outputs[0].spec.shape
        if shape in self.holds:
            self.reached[shape].set()
            self.holds[shape].wait(WAIT)

    def dispatch(self, kind, node, *_args):
        if kind is TaskKind.RUN and node.outputs[0].spec.shape in self.sent:
            self.sent[node.outputs[0].spec.shape].set()
        if self.armed and kind is self.kind and self.when():
            self.armed = False
            self.blocked.set()
            self.reclaiming.wait(WAIT)

    def reclaimer(self, timeout):
        """The engine's reclaimer, counted; it lets the blocked dispatcher go on."""
        self.n_reclaims += 1
        self.reclaiming.set()
        return self.system.engine.reclaim(timeout)


def check_reclaimed(dev, gates, y, n_mallocs, n_releases):
    """y computed after exactly one reclaim, no OOM."""
    np.testing.assert_array_equal(y.to_numpy(timeout=WAIT), np.ones(12288, np.float32))
    assert gates.n_reclaims == 1
    stats = mv.memory_stats(dev)
    assert stats["n_ooms"] == 0
    assert (stats["n_mallocs"], stats["n_releases"]) == (n_mallocs, n_releases)


def test_a_queued_delete_is_reclaimed_when_an_alloc_needs_its_memory():
    """x (40 KiB) dies when its last reader finishes; its DELETE is still queued (the only
    dispatcher is held) when y (48 KiB) is allocated: the reclaimer lets it run."""
    dev = start("dag-queued", dispatchers=1)
    engine = _system.get_system().engine
    gates = Gates(TaskKind.COMPLETE, when=lambda: engine.n_deleting > 0).install(dev)
    y_sent = threading.Event()
    reader_reached, _ = gates.hold((), y_sent)  # x's reader runs once y's RUN is sent
    gates.hold((12288,), gates.blocked)  # y allocates once x's DELETE is queued
    x = mv.zeros(10240)
    total = mv.sum(x)
    assert reader_reached.wait(WAIT)  # y will queue behind it on the device
    del x
    mv.dag_stats()  # applies the release: only the reader keeps x now
    gates.armed = True
    y = mv.ones(12288)
    assert gates.sent[(12288,)].wait(WAIT)
    y_sent.set()
    check_reclaimed(dev, gates, y, n_mallocs=3, n_releases=1)
    assert gates.blocked.is_set() and float(total) == 0.0
    assert_settled(y, total)


@pytest.mark.parametrize("engine", ["dag", "dag-queued"])
def test_a_pending_release_is_reclaimed_when_an_alloc_needs_its_memory(engine):
    """x's handle is dropped while y is in flight, so the release waits in the queue (it is
    applied by the next op registered or completed) when y (48 KiB) is allocated: the
    reclaimer applies it and frees x (40 KiB)."""
    dev = start(engine)
    gates = Gates().install(dev)
    x_dropped = threading.Event()
    y_reached, _ = gates.hold((12288,), x_dropped)
    x = mv.zeros(10240)
    x.wait(timeout=WAIT)
    y = mv.ones(12288)
    assert y_reached.wait(WAIT)
    del x
    x_dropped.set()
    check_reclaimed(dev, gates, y, n_mallocs=2, n_releases=1)
    assert_settled(y)


def failure_of(array):
    """The error ``array.wait`` raises, without its traceback (whose frames would keep
    the array alive)."""
    try:
        array.wait(timeout=WAIT)
    except mv.MinervaError as exc:
        return exc.with_traceback(None)
    pytest.fail("the wait did not raise")


def line_here() -> int:
    """The caller's line number."""
    return inspect.currentframe().f_back.f_lineno


@pytest.mark.parametrize("engine", ENGINES)
def test_a_request_that_cannot_fit_fails_at_the_next_wait(engine):
    """48 KiB held, 32 KiB more asked: OutOfMemoryError (a MemoryError and an OpError) at
    the wait, naming the request, the limit and the held array's line; then work goes on."""
    dev = start(engine)
    held, line = mv.zeros(12288), line_here()
    held.wait(timeout=WAIT)
    big = mv.ones(8192)
    after = big + 1  # poisoned by big's failure
    err = failure_of(big)
    assert isinstance(err, mv.OutOfMemoryError) and isinstance(err, mv.OpError)
    assert isinstance(err, MemoryError)
    message = str(err)
    assert "32768 bytes" in message and f"limit 64.0 KiB ({LIMIT} bytes)" in message
    assert f"float32 (12288,) created at {os.path.basename(__file__)}:{line}" in message
    assert err.created_at == f"{os.path.basename(__file__)}:{line + 2}"
    assert isinstance(failure_of(after), mv.OutOfMemoryError)
    del big, after
    assert_settled(held)
    assert mv.memory_stats(dev)["n_ooms"] == 1
    assert float((held[:1024] + 2.0).sum()) == 2.0 * 1024


@pytest.mark.parametrize("engine", ENGINES)
def test_a_request_above_the_limit_fails_and_wait_for_all_reports_it(engine):
    """A request larger than the limit fails; wait_for_all raises it once; the next op works."""
    start(engine)
    huge = mv.zeros(LIMIT // 4 + 1)
    with pytest.raises(mv.OutOfMemoryError, match=f"{LIMIT + 4} bytes"):
        mv.wait_for_all(timeout=WAIT)
    mv.wait_for_all(timeout=WAIT)
    del huge
    small = mv.full(16, 3.0)
    np.testing.assert_array_equal(small.to_numpy(timeout=WAIT), np.full(16, 3.0, "f4"))
    assert_settled(small)


# ---- a buffer is never handed out while a pending op still reads it --------------------

VALUE = spec((256,), np.float32)  # 1 KiB
FILL, NEG = registry.get("fill"), registry.get("negative")


def fill(scheduler, value):
    """A new 1 KiB value full of ``value`` on the gated device."""
    (out,) = submit(scheduler, FILL, dict(shape=VALUE.shape, dtype=VALUE.dtype, value=value),
                    [], [VALUE], 0, ("t.py", 1))
    return out


def finish(device, op):
    """Wait until ``op`` is held on the gated ``device``, then run it there."""
    with device.arrived:
        assert device.arrived.wait_for(lambda: op in device.held, WAIT)
    device.finish(op)


def gated_scheduler(strategy, dispatch):
    """A DagScheduler with two dispatcher threads over one gated device using ``strategy``."""
    scheduler, (device,), log = build_scheduler(["gated"], n_dispatchers=2, dispatch=dispatch)
    device.store = make_store(HostAllocator(), strategy, hooks=device.hooks)
    device.store.set_reclaimer(scheduler.reclaim)
    return scheduler, device, log


def span(block) -> tuple:
    """Where ``block`` lies: ``(chunk id, start, end)`` (Block objects may be recycled)."""
    return (block.chunk_id, block.offset, block.offset + block.size)


def overlaps(block, x_span) -> bool:
    """Whether ``block`` shares a byte with the range ``x_span``."""
    chunk_id, start, end = span(block)
    return chunk_id == x_span[0] and start < x_span[2] and x_span[1] < end


def churn(scheduler, device, x_span, n):
    """``n`` values of x's size made, checked and dropped, then ``n`` raw allocs held at
    once: none may touch ``x_span``."""
    for i in range(n):
        z = fill(scheduler, float(i))
        finish(device, z.producer)
        scheduler.wait(z, timeout=WAIT)
        assert not overlaps(z.block, x_span), f"value {i} got the block of a pending input"
        np.testing.assert_array_equal(z.array, np.full(256, i, np.float32))
        del scheduler.held[z.node_id]  # its last handle goes
    raw = [device.store.alloc(VALUE.nbytes) for _ in range(n)]
    assert not any(overlaps(block, x_span) for block in raw)
    for block in raw:
        device.store.free(block)


def served_from_pool(store, x_span) -> bool:
    """Allocate x's size until x's range comes back; False if a malloc comes first."""
    taken, n_mallocs = [], store.stats()["n_mallocs"]
    try:
        while store.stats()["n_mallocs"] == n_mallocs:
            taken.append(store.alloc(VALUE.nbytes))
            if span(taken[-1])[:2] == x_span[:2]:
                return True
        return False
    finally:
        for block in taken:
            store.free(block)


@pytest.mark.parametrize("dispatch", ["inline", "queued"])
@pytest.mark.parametrize("strategy", ["pooled", "round"])
def test_a_buffer_is_not_reused_while_a_pending_op_reads_it(strategy, dispatch):
    """x's only reader is held running; with every handle to x gone, 200 allocations of
    x's size never get x's block; once the reader finishes, the block returns to the pool."""
    scheduler, device, log = gated_scheduler(strategy, dispatch)
    x = fill(scheduler, 7.0)
    finish(device, x.producer)
    scheduler.wait(x, timeout=WAIT)
    (y,) = submit(scheduler, NEG, {}, [x], [VALUE], 0, ("t.py", 2))
    reader = y.producer
    with device.arrived:
        assert device.arrived.wait_for(lambda: reader in device.held, WAIT)
    x_span = span(x.block)
    del scheduler.held[x.node_id]  # every handle to x is gone
    churn(scheduler, device, x_span, 100)
    assert ("data_deleted", x.node_id) not in log.events
    np.testing.assert_array_equal(x.array, np.full(256, 7.0, np.float32))
    device.finish(reader)
    scheduler.wait(y, timeout=WAIT)
    scheduler.wait_for_all(timeout=WAIT)
    assert ("data_deleted", x.node_id) in log.events
    np.testing.assert_array_equal(y.array, np.full(256, -7.0, np.float32))
    assert served_from_pool(device.store, x_span)
    scheduler.shutdown(timeout=WAIT)
