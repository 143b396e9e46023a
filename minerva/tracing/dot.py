"""The executed DAG of a trace as Graphviz DOT: ops clustered by device, an edge per
dependency, the critical path in bold, failed ops red and poisoned ops orange."""
from __future__ import annotations

from minerva.common.text import dot_quote
from minerva.tracing import analysis
from minerva.tracing.model import Trace, TraceOp
from minerva.tracing.report import fmt_time

FAILED_COLOR = "#f4a6a6"
POISONED_COLOR = "#f9d7a6"
COPY_COLOR = "#cfe3f7"
OP_COLOR = "#eeeeee"


def executed_dag(trace: Trace, max_label: int = 48) -> str:
    """DOT source of the ops the trace saw run (and the poisoned ones)."""
    critical = analysis.critical_path(trace).ops
    on_path = {op.node_id for op in critical}
    path_edges = {(a.node_id, b.node_id) for a, b in zip(critical, critical[1:])}
    by_device: dict[int, list[TraceOp]] = {}
    for op in trace.ops + trace.poisoned:
        by_device.setdefault(op.device, []).append(op)
    lines = ["digraph executed {", "  rankdir=TB;", "  compound=true;",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", '
             'fontsize=10];', '  edge [color="#777777", arrowsize=0.6];']
    for device, ops in sorted(by_device.items()):
        lines += _cluster(device, trace.devices.get(device, f"device {device}"), ops,
                          on_path, max_label)
    known = trace.by_id()
    for op in trace.ops + trace.poisoned:
        for dep in dict.fromkeys(d for d in op.deps if d in known):
            bold = (dep, op.node_id) in path_edges
            style = ' [color="#c0392b", penwidth=2.5]' if bold else ""
            lines.append(f"  n{dep} -> n{op.node_id}{style};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _cluster(device: int, title: str, ops: list[TraceOp], on_path: set,
             max_label: int) -> list[str]:
    lines = [f"  subgraph cluster_device{device} {{", f"    label={dot_quote(title)};",
             '    style="rounded"; color="#999999";']
    for op in sorted(ops, key=lambda o: o.node_id):
        lines.append(f"    n{op.node_id} [{_node_attrs(op, op.node_id in on_path, max_label)}];")
    lines.append("  }")
    return lines


def _node_attrs(op: TraceOp, critical: bool, max_label: int) -> str:
    if op.poisoned_by is not None:
        text = f"{op.label}\npoisoned by #{op.poisoned_by}\n{op.created_at}"
        color, extra = POISONED_COLOR, ', style="rounded,filled,dashed"'
    else:
        text = f"{op.label}\n{fmt_time(op.dur)}\n{op.created_at}"
        if op.error:
            text += f"\n{op.error}"
        color = FAILED_COLOR if op.error else COPY_COLOR if op.name == "copy" else OP_COLOR
        extra = ", penwidth=2.5" if critical else ""
    return f"label={dot_quote(text, max_label)}, fillcolor=\"{color}\"{extra}"
