"""The DagScheduler through its seams: no dispatcher threads (the test pumps the queue)
and fake devices, so the order of events is exact; gated devices force interleavings."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import minerva.ops  # noqa: F401
from minerva.ops import registry
from minerva.ops.registry import spec
from minerva.scheduler.queue import TaskKind
from tests.support.fakes import build_scheduler, submit

F32 = spec((4,), np.float32)
FILL, ADD, NEG = registry.get("fill"), registry.get("add"), registry.get("negative")


def fill(scheduler, value, device=0):
    (out,) = submit(scheduler, FILL, dict(shape=(4,), dtype=F32.dtype, value=value), [],
                              [F32], device, ("t.py", 1))
    return out


def add(scheduler, a, b, device=0):
    (out,) = submit(scheduler, ADD, {}, [a, b], [F32], device, ("t.py", 2))
    return out


def test_events_come_in_exact_order_when_pumped():
    scheduler, _, log = build_scheduler(["inline"])
    x = fill(scheduler, 1.0)
    y = add(scheduler, x, x)
    op_x, op_y = x.producer.node_id, y.producer.node_id
    assert log.events == [("op_created", op_x), ("op_ready", op_x), ("op_created", op_y)]
    assert scheduler.run_pending() == 4
    assert [e for e in log.events[3:] if not e[0].startswith("mem_")] == [
        ("op_started", op_x), ("op_finished", op_x), ("RUN", op_x),
        ("op_ready", op_y), ("COMPLETE", op_x),
        ("op_started", op_y), ("op_finished", op_y), ("RUN", op_y), ("COMPLETE", op_y)]
    np.testing.assert_array_equal(y.array, np.full(4, 2.0, np.float32))
    scheduler.shutdown(timeout=5)


def test_kinds_are_served_delete_then_complete_then_run():
    scheduler, _, log = build_scheduler(["gated"])
    a = fill(scheduler, 1.0)
    scheduler.queue.put(TaskKind.RUN, "r")
    scheduler.queue.put(TaskKind.COMPLETE, "c")
    scheduler.queue.put(TaskKind.DELETE, "d")
    order = [scheduler.queue.get(timeout=0)[1] for _ in range(4)]
    assert order == ["d", "c", a.producer, "r"]


def test_a_held_run_keeps_its_inputs_alive_and_their_blocks_unshared():
    scheduler, (device,), log = build_scheduler(["gated"])
    x = fill(scheduler, 3.0)
    y = add(scheduler, x, x)
    scheduler.release(x)  # the user drops x: only y's pending run keeps it
    scheduler.run_pending()
    device.finish(device.held[0])  # x computed
    scheduler.run_pending()
    assert device.held == [y.producer]  # y's RUN is held open on the device
    block = x.block
    z = fill(scheduler, 5.0)  # a new value of the same size while y is held
    scheduler.run_pending()
    device.finish(device.held[-1])
    scheduler.run_pending()
    assert ("data_deleted", x.node_id) not in log.events
    assert z.block.offset != block.offset or z.block.chunk is not block.chunk
    np.testing.assert_array_equal(x.array, np.full(4, 3.0, np.float32))
    device.finish(y.producer)
    scheduler.run_pending()
    assert ("data_deleted", x.node_id) in log.events
    np.testing.assert_array_equal(y.array, np.full(4, 6.0, np.float32))


def test_poisoned_op_skips_its_device_and_independent_work_completes():
    scheduler, (device,), _ = build_scheduler(["inline"])
    bad = registry.OpDef("raise_now", lambda: (F32,), _raise)
    (x,) = submit(scheduler, bad, {}, [], [F32], 0, ("t.py", 9))
    y = add(scheduler, x, x)
    z = fill(scheduler, 1.0)
    scheduler.run_pending()
    assert x.error is not None and y.error is x.error and z.error is None
    assert y.block is None  # poisoned: never allocated, never ran
    with pytest.raises(Exception, match="kaboom"):
        scheduler.wait_for_all(timeout=5)


def _raise(xp, *, out):
    raise ValueError("kaboom")


def test_two_devices_run_side_by_side_with_threads():
    scheduler, devices, _ = build_scheduler(["gated", "gated"], n_dispatchers=2)
    a, b = fill(scheduler, 1.0, device=0), fill(scheduler, 2.0, device=1)
    assert devices[0].wait_held(1) and devices[1].wait_held(1)  # both in flight at once
    for device in devices:
        device.finish(device.held[0])
    scheduler.wait(a, timeout=5)
    scheduler.wait(b, timeout=5)
    scheduler.shutdown(timeout=5)
    assert not [t for t in threading.enumerate() if t.name.startswith("minerva-disp")]


def test_backpressure_blocks_the_submitter_until_ops_drain():
    scheduler, (device,), _ = build_scheduler(["gated"], n_dispatchers=1, max_pending=4)
    for value in range(4):
        fill(scheduler, value)
    submitted = threading.Event()
    thread = threading.Thread(target=lambda: (fill(scheduler, 9.0), submitted.set()))
    thread.start()
    assert device.wait_held(4)
    assert not submitted.wait(0.2)  # the fifth op waits for room
    for op in list(device.held):
        device.finish(op)
    assert submitted.wait(5)
    thread.join(5)
    device.wait_held(1)
    device.finish(device.held[0])
    scheduler.wait_for_all(timeout=5)
    scheduler.shutdown(timeout=5)


@pytest.mark.parametrize("engine_name", ["dag", "naive"])
def test_tiny_writes_run_at_once_without_an_op_node(engine_name):
    import minerva as mv
    from minerva.dag.nodes import new_node_id
    mv.init(engine=engine_name)
    x = mv.arange(4.0)
    x.wait()
    first = new_node_id()
    x += 1
    x[1:3] = 7.0
    mv.exp(x, out=x)
    assert new_node_id() == first + 4       # one new version each, no op node
    assert mv.dag_stats()["n_pending"] == 0 and x.label.endswith("@3")
    expected = np.arange(4.0) + 1
    expected[1:3] = 7.0
    np.testing.assert_array_equal(x.to_numpy(), np.exp(expected))
