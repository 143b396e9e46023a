"""The ordering rules of writes, forced with gated fake devices: a write waits for the
readers issued before it (write after read), two writes to one storage never reorder
(write after write), and a write reuses the buffer it overwrites. Plus the public face:
an in-place update allocates nothing new."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from tests.support.fakes import build_scheduler, submit
from minerva.ops import registry
from minerva.ops.registry import spec

F32 = spec((4,), np.float32)
FILL, NEG, ADD = registry.get("fill"), registry.get("negative"), registry.get("add_scalar")
WAIT = 10.0


def fill(scheduler, value):
    (out,) = submit(scheduler, FILL, dict(shape=(4,), dtype=F32.dtype, value=value), [],
                    [F32], 0, ("t.py", 1))
    return out


def write_add(scheduler, target, k):
    """``target += k`` (target: a data node made by ``fill``): the new version."""
    storage = scheduler.held.pop(target.node_id)
    scheduler.submit(ADD, {"scalar": k, "reverse": False}, [storage], [F32], 0,
                     ("t.py", 3), None, [storage])
    scheduler.held[storage.current.node_id] = storage
    return storage.current


def held_names(device):
    return [op.name for op in device.held]


def test_a_write_waits_for_an_earlier_reader():
    scheduler, (device,), log = build_scheduler(["gated"], n_dispatchers=2, dispatch="inline")
    x = fill(scheduler, 1.0)
    device.wait_held(1)
    device.finish(device.held[0])
    scheduler.wait(x, timeout=WAIT)
    (y,) = submit(scheduler, NEG, {}, [x], [F32], 0, ("t.py", 2))  # a reader of x
    assert device.wait_held(1) and held_names(device) == ["negative"]
    x2 = write_add(scheduler, x, 10.0)  # the write must not reach the device yet
    assert not device.wait_held(2, timeout=0.3)
    assert x2.block is None and x.block is not None
    device.finish(y.producer)
    assert device.wait_held(1) and held_names(device) == ["add_scalar"]
    device.finish(x2.producer)
    scheduler.wait(x2, timeout=WAIT)
    np.testing.assert_array_equal(y.array, np.full(4, -1.0, np.float32))
    np.testing.assert_array_equal(x2.array, np.full(4, 11.0, np.float32))
    scheduler.shutdown(timeout=WAIT)


def test_a_write_takes_over_the_buffer_it_overwrites():
    scheduler, (device,), _ = build_scheduler(["inline"], dispatch="inline", n_dispatchers=1)
    x = fill(scheduler, 2.0)
    scheduler.wait(x, timeout=WAIT)
    block, n_allocs = x.block, device.store.stats()["n_allocs"]
    x2 = write_add(scheduler, x, 1.0)
    scheduler.wait(x2, timeout=WAIT)
    assert x2.block is block and device.store.stats()["n_allocs"] == n_allocs
    assert (x2.storage_id, x2.version) == (x.storage_id, 1)
    scheduler.shutdown(timeout=WAIT)


def test_two_writes_to_one_storage_never_reorder():
    scheduler, (device,), _ = build_scheduler(["gated"], n_dispatchers=2, dispatch="queued")
    x = fill(scheduler, 0.0)
    first = write_add(scheduler, x, 1.0)
    second = write_add(scheduler, first, 2.0)
    third = write_add(scheduler, second, 3.0)
    order = []
    for node in (x, first, second, third):
        assert device.wait_held(1)
        assert len(device.held) == 1, "a later write reached the device early"
        op = device.held[0]
        order.append(op.outputs[0].version)
        device.finish(op)
    scheduler.wait(third, timeout=WAIT)
    assert order == [0, 1, 2, 3]
    np.testing.assert_array_equal(third.array, np.full(4, 6.0, np.float32))
    scheduler.shutdown(timeout=WAIT)


@pytest.mark.parametrize("engine_name", ["naive", "dag", "dag-queued"])
def test_an_in_place_update_allocates_no_new_weight(engine_name):
    from tests.conftest import start_engine
    start_engine(engine_name)
    w = mv.zeros(1 << 20, dtype=np.float32)  # 4 MiB
    g = mv.ones(1 << 20, dtype=np.float32)
    mv.wait_for_all(timeout=WAIT)
    before, block = mv.memory_stats(), w._storage.current.block
    for _ in range(5):
        w *= 0.5
        w += 1
    mv.wait_for_all(timeout=WAIT)
    scalar = mv.memory_stats()
    for _ in range(5):
        w -= 0.5 * g  # the temporary 0.5 * g is the only new buffer
    mv.wait_for_all(timeout=WAIT)
    after = mv.memory_stats()
    assert scalar["peak_bytes"] == before["peak_bytes"]
    assert after["in_use_bytes"] == before["in_use_bytes"] == 2 * 4 << 20
    assert after["n_allocs"] - scalar["n_allocs"] == 5
    assert w._storage.current.block is block
    np.testing.assert_array_equal(w.to_numpy(), np.full(1 << 20, 1.9375 - 2.5, np.float32))


def test_every_alias_sees_a_write(engine):
    x = mv.zeros((3, 4))
    y, row, col = x, x[1], x[:, 2]
    x += 1
    row[...] = 5
    col *= 2
    want = np.zeros((3, 4)) + 1
    want[1] = 5
    want[:, 2] *= 2
    for handle, ref in ((y, want), (row, want[1]), (col, want[:, 2])):
        np.testing.assert_array_equal(handle.to_numpy(), ref)


def test_an_op_reads_the_values_its_inputs_had_when_it_was_issued(engine):
    x = mv.arange(4.0)
    total = x.sum()
    doubled = x * 2
    x += 100
    x[0] = -1
    assert float(total) == 6.0
    np.testing.assert_array_equal(doubled.to_numpy(), [0, 2, 4, 6])
    np.testing.assert_array_equal(x.to_numpy(), [-1, 101, 102, 103])
