"""The trace analysis on a hand-built DAG whose schedule is known exactly: fake devices
report simulated times (an op starts when its device is free and its inputs are
computed, and lasts a fixed time), the real DagScheduler runs the ops, the Recorder
hears the hooks; busy fractions, idle gaps, copies and the critical path are then exact."""
from __future__ import annotations

import numpy as np
import pytest

import minerva.ops  # noqa: F401
from tests.support.fakes import DeviceTable, InlineDevice
from minerva.common.hooks import HookBus
from minerva.dag.physical_dag import PhysicalDag
from minerva.ops import registry
from minerva.ops.copy import COPY
from minerva.ops.registry import spec
from minerva.scheduler.dag_scheduler import DagScheduler
from minerva.tracing import analysis, chrome, model, report
from minerva.tracing.convert import convert
from minerva.tracing.recorder import Recorder
from tests.support.trace_checks import check_chrome_trace

F32 = spec((4,), np.float32)
FILL, NEG, ADD = registry.get("fill"), registry.get("negative"), registry.get("add")
US = 1000  # ns


COPY_US = 5
"""Duration of the copy the engine inserts (the only op not given one)."""


class ClockDevice(InlineDevice):
    """Runs ops inline and reports simulated start and end times (ns)."""

    def __init__(self, device_id, hooks, clock):
        super().__init__(device_id, hooks)
        self.clock = clock
        self.free_at = clock["base"]

    def run_inline(self, op):
        clock = self.clock
        start = max([self.free_at] + [clock["ready"][d.node_id] for d in op.inputs])
        end = start + clock["durations"].get(op.node_id, COPY_US) * US
        self.hooks.op_started(op, self.device_id, self.track, start)
        self.execute(op)
        self.hooks.op_finished(op, self.device_id, self.track, end, None)
        self.free_at = end
        for out in op.outputs:
            clock["ready"][out.node_id] = end
        return None


def run_hand_built_dag():
    """dev0: A=fill (10 us) -> B=neg(A) (20) -> C=neg(B) (30);
    dev1: D=fill (15), E=copy of B (5), F=add(E, D) (50). Returns the loaded trace and
    the op node ids by letter."""
    hooks, recorder = HookBus(), Recorder()
    hooks.subscribe(recorder)
    clock = {"base": recorder.t_start + 10**9, "ready": {}, "durations": {}}
    devices = [ClockDevice(i, hooks, clock) for i in range(2)]
    scheduler = DagScheduler(PhysicalDag(), DeviceTable(devices), hooks, 1 << 20, COPY, 0,
                             "queued")
    for device in devices:
        device.listener = scheduler.on_device_complete

    def submit(op_def, inputs, device, duration, **attrs):
        (out,) = scheduler.submit(op_def, attrs, inputs, [F32], device, ("dag.py", 1))
        clock["durations"][out.current.producer.node_id] = duration
        return out

    fill = dict(shape=(4,), dtype=F32.dtype, value=1.0)
    a = submit(FILL, [], 0, 10, **fill)
    b = submit(NEG, [a], 0, 20)
    c = submit(NEG, [b], 0, 30)
    d = submit(FILL, [], 1, 15, **fill)
    f = submit(ADD, [b, d], 1, 50)  # the engine copies b to dev1 first: E (COPY_US)
    ids = {name: s.current.producer.node_id for name, s in zip("ABCDF", [a, b, c, d, f])}
    ids["E"] = f.current.producer.inputs[0].producer.node_id
    scheduler.run_pending()
    assert all(s.current.state >= 3 for s in (c, f))
    hooks.unsubscribe(recorder)
    recorder.close()
    trace = chrome.build(convert(recorder.snapshot(), recorder.t_start, recorder.t_stop),
                         {0: "clock0", 1: "clock1"})
    scheduler.shutdown(10)
    return trace, ids


@pytest.fixture(scope="module")
def built():
    return run_hand_built_dag()


def test_the_trace_of_the_hand_built_dag_is_well_formed(built):
    trace, ids = built
    check_chrome_trace(trace)
    loaded = model.from_events(trace["traceEvents"])
    starts = {op.node_id: (op.start - loaded.span[0], op.dur) for op in loaded.ops}
    assert starts == {ids["A"]: (0, 10), ids["B"]: (10, 20), ids["C"]: (30, 30),
                      ids["D"]: (0, 15), ids["E"]: (30, 5), ids["F"]: (35, 50)}


def test_busy_fractions_and_idle_gaps_are_exact(built):
    loaded = model.from_events(built[0]["traceEvents"])
    assert loaded.active == pytest.approx(85)
    uses = {use.device: use for use in analysis.device_use(loaded)}
    assert uses[0].busy == pytest.approx(60) and uses[1].busy == pytest.approx(70)
    assert uses[0].busy_fraction == pytest.approx(60 / 85)
    assert uses[1].busy_fraction == pytest.approx(70 / 85)
    _start, length, before, after = uses[1].gaps[0]
    assert length == pytest.approx(15) and before.name == "fill" and after.name == "copy"
    _start, length, before, after = uses[0].gaps[0]
    assert length == pytest.approx(25) and before.name == "negative" and after is None
    assert uses[0].n_gaps_over(20) == 1 and uses[1].n_gaps_over(20) == 0


def test_critical_path_is_the_longest_chain_by_time(built):
    trace, ids = built
    loaded = model.from_events(trace["traceEvents"])
    path = analysis.critical_path(loaded)
    assert [op.node_id for op in path.ops] == [ids["A"], ids["B"], ids["E"], ids["F"]]
    assert path.work == pytest.approx(85) and path.fraction == pytest.approx(1.0)
    assert path.waits == pytest.approx([0, 0, 0, 0])
    lines = report.critical_path(loaded)
    assert "4 ops, 85.0 us of op time = 100.0% of the active 85.0 us" in lines[0]
    assert any("copy" in line and "dag.py:1" in line for line in lines)


def test_top_ops_copies_and_in_flight(built):
    loaded = model.from_events(built[0]["traceEvents"])
    top = {name: (count, total) for name, count, total, _mean in analysis.top_ops(loaded)}
    assert top == {"fill": (2, 25), "negative": (2, 50), "copy": (1, 5), "add": (1, 50)}
    assert analysis.copies(loaded) == {(0, 1): (1, 16, 5)}
    top_in_flight, _mean, buckets = analysis.in_flight(loaded)
    assert top_in_flight == 6 and buckets
    assert analysis.peak_memory(loaded)[0][0] == 3 * 16


def test_summary_report_names_every_figure(built):
    loaded = model.from_events(built[0]["traceEvents"])
    text = "\n".join(report.summary(loaded, "dag.json"))
    for expected in ("active 85.0 us", "70.6%", "82.4%", "15.0 us after #", "copies",
                     "0 -> 1", "memory in use", "ops in flight"):
        assert expected in text, expected
