"""``mv.dump_dag``: the live DAG now, as Graphviz DOT, plain text or JSON.

Shows every op node not yet finished and every data node still alive, with its state,
counts and device; nodes are grouped by device. ``elide_completed=True`` folds computed
values that no pending op reads (values kept only by user handles) into one line or box
per device, which keeps a 1,000-node graph readable.

The snapshot is taken under the engine's lock (node fields copied into plain rows), and
formatted after it is released.
"""
from __future__ import annotations

import json
import os

from minerva.common.text import dot_quote, format_bytes
from minerva.dag.nodes import COMPLETED, FAILED, STATE_NAMES

FORMATS = ("dot", "text", "json")
OP_COLORS = {"pending": "#ffffff", "ready": "#fff3b0", "running": "#b7e4a0",
             "completed": "#dddddd", "failed": "#f4a6a6"}
DATA_COLORS = {"pending": "#ffffff", "completed": "#e8e8e8", "failed": "#f4a6a6"}


def dump(system, path_or_file, format: str = "dot", elide_completed: bool = False,
         max_label: int = 40) -> None:
    """Write ``system``'s live DAG to a path or an open text file in ``format``."""
    if format not in FORMATS:
        raise ValueError(f"dump_dag format must be one of {FORMATS}, got {format!r}")
    view = snapshot(system)
    if elide_completed:
        view = elide(view)
    text = {"dot": to_dot, "text": to_text, "json": to_json}[format](view, max_label)
    if isinstance(path_or_file, (str, os.PathLike)):
        with open(path_or_file, "w", encoding="utf-8") as out:
            out.write(text)
    else:
        path_or_file.write(text)


# ---- the snapshot -----------------------------------------------------------------------

def snapshot(system) -> dict:
    """Plain rows of the live op and data nodes, the DAG's totals and the devices."""
    view = system.engine.snapshot(_rows)
    view["devices"] = {d.device_id: f"{d.kind}{getattr(d, 'ordinal', d.device_id)}"
                       for d in system.devices.all()}
    return view


def _rows(dag) -> dict:
    """Rows of every live node (called under the engine's lock)."""
    ops, data = dag.snapshot()
    return {"stats": dag.stats(), "ops": [_op_row(op) for op in ops],
            "data": [_data_row(node) for node in data], "elided": {}}


def _op_row(op) -> dict:
    return {"id": op.node_id, "op": op.name, "state": STATE_NAMES[op.state],
            "device": op.device_id, "n_waiting": op.n_waiting,
            "inputs": [d.node_id for d in op.inputs],
            "outputs": [d.node_id for d in op.outputs], "created_at": op.where,
            "error": None if op.error is None else str(op.error).splitlines()[0]}


def _data_row(node) -> dict:
    spec, producer, copy_of = node.spec, node.producer, node.copy_of
    return {"id": node.node_id, "label": node.label, "shape": list(spec.shape),
            "dtype": str(spec.dtype),
            "nbytes": int(spec.nbytes), "device": node.device_id,
            "state": STATE_NAMES[node.state], "rc": node.rc, "extern_rc": node.extern_rc,
            "producer": None if producer is None else producer.node_id,
            "copy_of": None if copy_of is None else copy_of.node_id,
            "failed": node.state == FAILED, "computed": node.state >= COMPLETED}


def elide(view: dict) -> dict:
    """``view`` without computed values that no live op reads; ``elided`` counts them
    per device as ``[n, bytes]``."""
    read = {i for op in view["ops"] for i in op["inputs"]}
    kept, elided = [], {}
    for row in view["data"]:
        if row["computed"] and not row["failed"] and row["id"] not in read:
            entry = elided.setdefault(row["device"], [0, 0])
            entry[0] += 1
            entry[1] += row["nbytes"]
        else:
            kept.append(row)
    return {**view, "data": kept, "elided": elided}


def _counts(rows: list) -> str:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["state"]] = counts.get(row["state"], 0) + 1
    return ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "none"


def _by_device(view: dict) -> dict[int, tuple[list, list]]:
    groups: dict[int, tuple[list, list]] = {d: ([], []) for d in view["devices"]}
    for row in view["ops"]:
        groups.setdefault(row["device"], ([], []))[0].append(row)
    for row in view["data"]:
        groups.setdefault(row["device"], ([], []))[1].append(row)
    for device in view["elided"]:
        groups.setdefault(device, ([], []))
    return dict(sorted(groups.items()))


def _headline(view: dict) -> str:
    stats = view["stats"]
    return (f"live DAG: {stats['n_op_nodes']} op nodes ({_counts(view['ops'])}), "
            f"{stats['n_data_nodes']} data nodes; {stats['n_completed_total']} ops "
            f"finished so far ({stats.get('n_failed_total', 0)} failed)")


def _fit(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def _value(row: dict) -> str:
    return f"{row['dtype']}[{', '.join(str(n) for n in row['shape'])}]"


# ---- text -------------------------------------------------------------------------------

def to_text(view: dict, max_label: int = 40) -> str:
    """The view as indented lines, one per node, grouped by device."""
    lines = [_headline(view)]
    for device, (ops, data) in _by_device(view).items():
        name = view["devices"].get(device, "?")
        lines.append(f"device {device} ({name}): {len(ops)} ops ({_counts(ops)}), "
                     f"{len(data)} values ({_counts(data)})")
        lines += ["  " + _op_line(row, max_label) for row in sorted(ops, key=_id)]
        lines += ["  " + _data_line(row, max_label) for row in sorted(data, key=_id)]
        if device in view["elided"]:
            n, nbytes = view["elided"][device]
            lines.append(f"  ... {n} computed values held only by handles ({format_bytes(nbytes)})")
    return "\n".join(lines) + "\n"


def _id(row: dict) -> int:
    return row["id"]


def _op_line(row: dict, max_label: int) -> str:
    ins = ", ".join(f"#{i}" for i in row["inputs"]) or "-"
    outs = ", ".join(f"#{i}" for i in row["outputs"])
    text = (f"op   #{row['id']} {_fit(row['op'], max_label)} {row['state']}"
            f" waiting={row['n_waiting']} in=[{ins}] out=[{outs}] at {row['created_at']}")
    return text + (f" error: {_fit(row['error'], 2 * max_label)}" if row["error"] else "")


def _data_line(row: dict, max_label: int) -> str:
    origin = (f" from op #{row['producer']}" if row["producer"] is not None else "")
    origin += f" copy of #{row['copy_of']}" if row["copy_of"] is not None else ""
    return (f"data #{row['id']} ({row['label']}) {_fit(_value(row), max_label)} "
            f"{row['state']} "
            f"rc={row['rc']} handles={row['extern_rc']} {format_bytes(row['nbytes'])}{origin}")


# ---- json -------------------------------------------------------------------------------

def to_json(view: dict, max_label: int = 40) -> str:
    """The view as a JSON document (``stats``, ``devices``, ``ops``, ``data``, ``elided``)."""
    parts = {"stats": view["stats"],
             "devices": {str(k): v for k, v in view["devices"].items()},
             "ops": view["ops"], "data": view["data"],
             "elided": {str(k): {"n_values": v[0], "bytes": v[1]}
                        for k, v in view["elided"].items()}}
    body = [f' "{key}": {_json_value(value)}' for key, value in parts.items()]
    return "{\n" + ",\n".join(body) + "\n}\n"


def _json_value(value) -> str:
    """Lists of rows one row per line; anything else on one line."""
    if isinstance(value, list) and value:
        return "[\n" + ",\n".join("  " + json.dumps(row) for row in value) + "\n ]"
    return json.dumps(value)


# ---- dot --------------------------------------------------------------------------------

def to_dot(view: dict, max_label: int = 40) -> str:
    """The view as a Graphviz digraph: a cluster per device, boxes for ops, ellipses
    for values, colours by state, an edge per input and output."""
    lines = ["digraph live_dag {", f"  label={dot_quote(_headline(view))};", "  labelloc=t;",
             '  node [fontname="Helvetica", fontsize=9, style=filled];',
             '  edge [arrowsize=0.5, color="#777777"];', "  ranksep=0.3; nodesep=0.15;"]
    for device, (ops, data) in _by_device(view).items():
        lines += _dot_cluster(view, device, ops, data, max_label)
    known = {row["id"] for row in view["data"]}
    for row in view["ops"]:
        lines += [f"  d{i} -> o{row['id']};" for i in row["inputs"] if i in known]
        lines += [f"  o{row['id']} -> d{i};" for i in row["outputs"] if i in known]
    lines += [f"  d{row['copy_of']} -> d{row['id']} [style=dotted];"
              for row in view["data"] if row["copy_of"] in known and row["producer"] is None]
    return "\n".join(lines + ["}"]) + "\n"


def _dot_cluster(view, device, ops, data, max_label) -> list[str]:
    title = f"device {device} ({view['devices'].get(device, '?')})"
    lines = [f"  subgraph cluster_d{device} {{", f"    label={dot_quote(title)};",
             '    style=rounded; color="#999999";']
    for row in sorted(ops, key=_id):
        label = _fit(f"#{row['id']} {row['op']}", max_label) + f"\n{row['state']}"
        label += f"\n{_fit(row['created_at'], max_label)}"
        lines.append(f"    o{row['id']} [shape=box, label={dot_quote(label)}, "
                     f"fillcolor=\"{OP_COLORS.get(row['state'], '#ffffff')}\"];")
    for row in sorted(data, key=_id):
        label = (_fit(f"#{row['id']} ({row['label']})", max_label)
                 + f"\n{_fit(_value(row), max_label)}")
        lines.append(f"    d{row['id']} [shape=ellipse, label={dot_quote(label)}, "
                     f"fillcolor=\"{DATA_COLORS.get(row['state'], '#ffffff')}\"];")
    if device in view["elided"]:
        n, nbytes = view["elided"][device]
        label = f"{n} computed values\nheld only by handles\n{format_bytes(nbytes)}"
        lines.append(f"    elided{device} [shape=note, label={dot_quote(label)}, "
                     "fillcolor=\"#f4f4f4\"];")
    return lines + ["  }"]
