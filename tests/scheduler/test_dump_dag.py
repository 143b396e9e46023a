"""mv.dump_dag: the live DAG as DOT, text and JSON, with a gate holding ops in flight so
the graph has pending, running and computed nodes on two devices."""
from __future__ import annotations

import io
import json

import pytest

import minerva as mv
from tests.support.dot_check import parse
from minerva.builder import build
from tests.support.gates import gated_op

HOLD, _gate = gated_op("dump_test_hold")


@pytest.fixture
def held_graph():
    """On device 0: x (computed), h = hold(x) (running), y = h + 1 (pending); on device 1:
    the copy of y and z = copy * 2 (pending). Yields the handles; opens the gate after."""
    _gate.clear()
    mv.init(max_pending=4096)  # ops pile up behind the held one: no backpressure here
    d0, d1 = mv.create_cpu_device(), mv.create_cpu_device()
    with mv.device(d0):
        x = mv.ones(4)
        x.wait(timeout=30)
        h = build(HOLD, [x])
        y = h + 1.0
    with mv.device(d1):
        z = y * 2.0
    yield {"x": x, "h": h, "y": y, "z": z}
    _gate.set()
    mv.wait_for_all(timeout=30)


def dump(fmt: str, **options) -> str:
    out = io.StringIO()
    mv.dump_dag(out, format=fmt, **options)
    return out.getvalue()


def test_json_lists_every_live_node_with_state_counts_and_device(held_graph):
    doc = json.loads(dump("json"))
    ops = {op["op"]: op for op in doc["ops"]}
    assert set(ops) == {"dump_test_hold", "add_scalar", "copy", "multiply_scalar"}
    assert ops["dump_test_hold"]["state"] == "running"
    assert ops["add_scalar"]["state"] == "pending" and ops["add_scalar"]["n_waiting"] == 1
    assert ops["copy"]["device"] == 1 and ops["multiply_scalar"]["device"] == 1
    data = {row["id"]: row for row in doc["data"]}
    x = data[held_graph["x"].node_id]
    assert (x["state"], x["rc"], x["extern_rc"], x["shape"]) == ("completed", 1, 1, [4])
    copy_out = data[ops["copy"]["outputs"][0]]
    assert copy_out["copy_of"] == held_graph["y"].node_id and copy_out["state"] == "pending"
    assert doc["stats"]["n_op_nodes"] == 4 and doc["devices"] == {"0": "cpu0", "1": "cpu1"}


def test_dot_parses_and_clusters_by_device(held_graph):
    graph = parse(dump("dot"))
    assert set(graph.clusters) == {"cluster_d0", "cluster_d1"}
    y = f"d{held_graph['y'].node_id}"
    assert y in graph.clusters["cluster_d0"]
    ops = [n for n in graph.nodes if n.startswith("o")]
    assert len(ops) == 4
    assert any(src == y for src, _dst, _a in graph.edges)
    assert "4 op nodes" in graph.attrs["label"]


def test_text_groups_by_device_with_counts(held_graph, tmp_path):
    path = tmp_path / "dag.txt"
    mv.dump_dag(str(path), format="text")
    text = path.read_text()
    assert text.startswith("live DAG: 4 op nodes (3 pending, 1 running)")
    assert "device 0 (cpu0): 2 ops (1 pending, 1 running)" in text
    assert "device 1 (cpu1): 2 ops (2 pending)" in text
    x = held_graph["x"]
    assert f"data #{x.node_id} ({x.label}) float64[4] completed rc=1 handles=1" in text
    assert "dump_test_hold running" in text and "test_dump_dag.py:" in text


def test_elide_completed_folds_values_only_handles_keep(held_graph):
    with mv.device(1):  # device 0's worker is held at the gate
        keep = [mv.ones(2) * i for i in range(30)]
    for k in keep:
        k.wait(timeout=30)
    text = dump("text", elide_completed=True)
    assert "computed values held only by handles" in text
    assert f"data #{held_graph['x'].node_id}" in text, "x is still read by a pending op"
    assert f"data #{keep[0].node_id} " not in text
    graph = parse(dump("dot", elide_completed=True))
    assert "elided1" in graph.nodes


def test_a_thousand_node_graph_stays_parseable_and_labels_are_capped(held_graph):
    h = held_graph["h"]
    with mv.device(0):
        outs = [h * float(i) for i in range(500)]
    text = dump("dot", max_label=12)
    graph = parse(text)
    assert len(graph.nodes) >= 1000
    assert all(len(line) <= 12 for attrs in graph.nodes.values()
               for line in attrs["label"].split("\\n"))
    assert len(outs) == 500


def test_unknown_format_is_refused():
    with pytest.raises(ValueError, match="dot"):
        mv.dump_dag(io.StringIO(), format="svg")
