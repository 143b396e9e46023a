"""The PhysicalDag: the live op and data nodes, indexed by id, with running totals."""
from __future__ import annotations

from minerva.dag.nodes import DataNode, OpNode


class PhysicalDag:
    """Every op node not yet finished and every data node still alive.

    Not thread-safe by itself: the scheduler's lock guards it. ``register_op`` inserts an op
    node and its outputs (``ops``, ``data`` by id); an op node leaves when it finishes, a
    data node when it is dead (no pending consumer, no handle, computed). Its fields are
    slots, which the C lean path (``minerva._lean``) reads by offset.
    """

    __slots__ = ("ops", "data", "n_completed_total", "n_failed_total")

    def __init__(self):
        self.ops: dict[int, OpNode] = {}
        self.data: dict[int, DataNode] = {}
        self.n_completed_total = 0
        self.n_failed_total = 0

    def finish_op(self, op: OpNode) -> None:
        """Remove a finished op node and count it."""
        del self.ops[op.node_id]
        self.n_completed_total += 1
        if op.error is not None:
            self.n_failed_total += 1

    def stats(self) -> dict:
        """``n_op_nodes``, ``n_data_nodes``, ``n_pending`` and ``n_completed_total``."""
        return {"n_op_nodes": len(self.ops), "n_data_nodes": len(self.data),
                "n_pending": len(self.ops), "n_completed_total": self.n_completed_total,
                "n_failed_total": self.n_failed_total}

    def snapshot(self) -> tuple[list[OpNode], list[DataNode]]:
        """Lists of the live op and data nodes (copy, safe to walk after the lock)."""
        return list(self.ops.values()), list(self.data.values())
