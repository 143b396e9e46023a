"""The scheduler's pure state transitions, driven by hand without threads or devices."""
from __future__ import annotations

import numpy as np

from minerva.dag.nodes import COMPLETED, FAILED, READY, RUNNING, STATE_NAMES
from minerva.dag.physical_dag import PhysicalDag
from minerva.ops.registry import OpDef, spec
from minerva.scheduler import state

OP = OpDef("test_op", infer=None, impl=None)
F32 = spec((2,), np.float32)


def register(dag, *inputs):
    return state.register_op(dag, OP, {}, list(inputs), [F32], 0, ("t.py", 1))


def table(dag, *nodes):
    """Runtime info of ``nodes`` as comparable tuples."""
    rows = []
    for node in nodes:
        if hasattr(node, "n_waiting"):
            rows.append(("op", STATE_NAMES[node.state], node.n_waiting))
        else:
            rows.append(("data", STATE_NAMES[node.state], node.rc, node.extern_rc, node.dead))
    return rows


def test_registration_holds_the_op_until_released():
    dag = PhysicalDag()
    a = register(dag)
    assert table(dag, a) == [("op", "pending", 1)]
    assert state.release_hold(a) is True
    assert table(dag, a, a.outputs[0]) == [("op", "ready", 0), ("data", "pending", 0, 1, False)]


def test_consumer_waits_for_pending_inputs_and_counts_references():
    dag = PhysicalDag()
    a = register(dag)
    state.release_hold(a)
    x = a.outputs[0]
    b = register(dag, x, x)
    assert state.release_hold(b) is False
    assert table(dag, b, x) == [("op", "pending", 2), ("data", "pending", 2, 1, False)]
    assert state.start_run(a) is None and a.state == RUNNING
    ready, dead = state.complete_op(dag, a, None)
    assert ready == [b] and dead == []
    assert table(dag, b, x) == [("op", "ready", 0), ("data", "completed", 2, 1, False)]
    assert dag.stats()["n_op_nodes"] == 1 and dag.stats()["n_completed_total"] == 1


def test_op_on_computed_input_is_ready_at_once():
    dag = PhysicalDag()
    a = register(dag)
    state.release_hold(a)
    state.start_run(a)
    state.complete_op(dag, a, None)
    b = register(dag, a.outputs[0])
    assert table(dag, b) == [("op", "pending", 1)]
    assert state.release_hold(b) is True and b.state == READY


def test_input_dies_when_last_consumer_finishes_without_handles():
    dag = PhysicalDag()
    a = register(dag)
    state.release_hold(a)
    x = a.outputs[0]
    b = register(dag, x)
    state.release_hold(b)
    assert state.release_handle(x) is False  # still pending and consumed
    state.start_run(a)
    ready, dead = state.complete_op(dag, a, None)
    assert dead == [] and ready == [b]
    state.start_run(b)
    ready, dead = state.complete_op(dag, b, None)
    assert dead == [x] and x.dead
    assert table(dag, x) == [("data", "completed", 0, 0, True)]
    block, more = state.delete_data(dag, x)
    assert more == [] and x.node_id not in dag.data


def test_output_nobody_holds_dies_on_completion_and_only_once():
    dag = PhysicalDag()
    a = register(dag)
    state.release_hold(a)
    y = a.outputs[0]
    assert state.release_handle(y) is False  # pending: producer not done
    state.start_run(a)
    _, dead = state.complete_op(dag, a, None)
    assert dead == [y] and y.dead
    y.extern_rc += 1  # a stray handle count coming back and going again
    assert state.release_handle(y) is False  # already marked: not handed out twice


def test_failure_is_stored_on_outputs_and_poisons_consumers():
    dag = PhysicalDag()
    a = register(dag)
    state.release_hold(a)
    b = register(dag, a.outputs[0])
    state.release_hold(b)
    error = RuntimeError("boom")
    state.start_run(a)
    ready, _ = state.complete_op(dag, a, error)
    assert ready == [b] and a.outputs[0].error is error and a.outputs[0].state == FAILED
    assert state.start_run(b) is error
    state.complete_op(dag, b, error)
    assert b.outputs[0].state == FAILED and dag.stats()["n_failed_total"] == 2


def test_deleting_a_source_drops_its_copy_cache_holds():
    dag = PhysicalDag()
    a = register(dag)
    state.release_hold(a)
    x = a.outputs[0]
    c = register(dag, x)  # plays the copy op; its output is the cached copy
    state.release_hold(c)
    copy = c.outputs[0]
    x.copies = {1: copy}
    for op in (a, c):
        state.start_run(op)
        state.complete_op(dag, op, None)
    assert table(dag, copy) == [("data", "completed", 0, 1, False)]
    assert state.release_handle(x) is True
    _, more = state.delete_data(dag, x)
    assert more == [copy] and copy.dead and x.copies is None


def test_waiter_is_woken_on_completion():
    import threading
    dag = PhysicalDag()
    a = register(dag)
    state.release_hold(a)
    a.outputs[0].waiter = threading.Event()
    state.start_run(a)
    state.complete_op(dag, a, None)
    assert a.outputs[0].waiter.is_set() and a.outputs[0].state == COMPLETED


# ---- launching ahead (devices that order their own work) ----------------------------------

def register_on(dag, device_id, *inputs, bases=None):
    op = state.register_op(dag, OP, {}, list(inputs), [F32], device_id, ("t.py", 1),
                           bases=bases)
    state.release_hold(op)
    return op


def test_a_launched_producer_frees_consumers_on_its_device_only():
    dag = PhysicalDag()
    a = register_on(dag, 0)
    x = a.outputs[0]
    same, other = register_on(dag, 0, x), register_on(dag, 1, x)
    state.start_run(a)
    ready, awaited = state.launch_op(a)
    assert ready == [same] and awaited is True  # ``other`` waits for the completion
    assert table(dag, a, x, same, other) == [
        ("op", "launched", 0), ("data", "launched", 2, 1, False), ("op", "ready", 0),
        ("op", "pending", 1)]
    assert x.waiting_ops == [other]
    assert state.start_run(same) is None and same.ahead  # it reads a launched input
    ready, dead = state.complete_op(dag, a, None)
    assert ready == [other] and dead == [] and x.waiting_ops is None


def test_a_consumer_registered_after_the_launch_counts_the_input_as_ready_on_its_device():
    dag = PhysicalDag()
    a = register_on(dag, 0)
    x = a.outputs[0]
    state.start_run(a)
    assert state.launch_op(a) == ([], False)  # nobody waits for it
    same, other = register_on(dag, 0, x), register_on(dag, 1, x)
    assert table(dag, same, other) == [("op", "ready", 0), ("op", "pending", 1)]


def test_a_host_waiter_or_a_writer_makes_the_completion_awaited():
    import threading
    dag = PhysicalDag()
    a = register_on(dag, 0)
    a.outputs[0].waiter = threading.Event()
    state.start_run(a)
    assert state.launch_op(a) == ([], True)
    assert not a.outputs[0].waiter.is_set()  # the host still waits for completion
    b = register_on(dag, 0)
    y = b.outputs[0]
    state.start_run(b)
    state.complete_op(dag, b, None)
    reader = register_on(dag, 0, y)
    writer = register_on(dag, 0, bases=[y])  # waits for ``reader`` (write after read)
    assert y.writer is writer and writer.n_waiting == 1
    state.start_run(reader)
    assert state.launch_op(reader) == ([], True)  # the writer waits for its completion
    assert y.writer is writer  # still held: write-after-read waits for completion
    ready, _ = state.complete_op(dag, reader, None)
    assert ready == [writer] and y.writer is None


def test_a_write_takes_the_buffer_over_when_launched():
    dag = PhysicalDag()
    a = register_on(dag, 0)
    v0 = a.outputs[0]
    state.start_run(a)
    state.complete_op(dag, a, None)
    v0.block, v0.array = "block", "array"
    w = register_on(dag, 0, bases=[v0])
    v1 = w.outputs[0]
    reader = register_on(dag, 0, v1)
    state.start_run(w)
    ready, _ = state.launch_op(w)
    assert ready == [reader]
    assert (v1.block, v1.array, v1.base) == ("block", "array", None) and v0.block is None
    state.complete_op(dag, w, None)  # nothing to take over any more
    assert v1.block == "block" and v1.state == COMPLETED


def test_a_consumer_started_on_a_launched_input_fails_with_it():
    dag = PhysicalDag()
    a = register_on(dag, 0)
    x = a.outputs[0]
    b = register_on(dag, 0, x)
    state.start_run(a)
    state.launch_op(a)
    state.start_run(b)
    state.launch_op(b)
    error = IndexError("a label is outside [0, 10)")
    state.complete_op(dag, a, error)  # found when its completion was settled
    state.complete_op(dag, b, None)
    assert b.outputs[0].error is error and b.outputs[0].state == FAILED
    assert dag.stats()["n_failed_total"] == 2


def test_an_input_is_freed_only_after_its_producer_completed():
    dag = PhysicalDag()
    a = register_on(dag, 0)
    x = a.outputs[0]
    b = register_on(dag, 0, x)
    assert state.release_handle(x) is False
    state.start_run(a)
    state.launch_op(a)
    state.start_run(b)
    _, dead = state.complete_op(dag, b, None)  # reported before its producer
    assert dead == [] and not x.dead and x.rc == 0
    _, dead = state.complete_op(dag, a, None)
    assert x in dead and x.dead


def _computed(dag):
    """A computed value held by one storage."""
    op = register(dag)
    state.release_hold(op)
    state.start_run(op)
    state.complete_op(dag, op, None)
    return op.outputs[0]


def test_a_direct_write_takes_over_the_buffer_of_the_version_it_overwrites():
    dag = PhysicalDag()
    base = _computed(dag)
    base.block, base.array = "block", "array"
    [out] = state.begin_direct(dag, [base], [F32], 0, ("t.py", 2), base)
    assert out.base is base and out.version == base.version + 1
    assert table(dag, base, out) == [("data", "completed", 1, 0, False),
                                     ("data", "pending", 0, 1, False)]
    ready, dead = state.end_direct(dag, [base], [out], None)
    assert ready == [] and dead == [base]
    assert (out.block, out.array, out.state) == ("block", "array", COMPLETED)
    assert state.delete_data(dag, base) == (None, [])   # the buffer lives on in out


def test_a_direct_write_refuses_a_value_with_pending_readers_or_other_holders():
    dag = PhysicalDag()
    base = _computed(dag)
    reader = register(dag, base)            # a pending reader: write after read
    assert state.begin_direct(dag, [], [F32], 0, None, base) is None
    state.release_hold(reader)
    state.start_run(reader)
    state.complete_op(dag, reader, None)
    base.extern_rc = 2                       # another storage holds it: copy on write
    assert state.begin_direct(dag, [], [F32], 0, None, base) is None
    base.extern_rc = 1
    assert state.begin_direct(dag, [], [F32], 0, None, base) is not None


def test_a_direct_writes_new_version_wakes_what_met_it_pending():
    dag = PhysicalDag()
    base = _computed(dag)
    [out] = state.begin_direct(dag, [], [F32], 0, None, base)
    consumer = register(dag, out)            # issued by another thread meanwhile
    assert state.release_hold(consumer) is False
    ready, dead = state.end_direct(dag, [], [out], None)
    assert ready == [consumer] and dead == [base]
