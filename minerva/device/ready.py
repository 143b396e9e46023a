"""The queue of ops handed to one device, served oldest first."""
from __future__ import annotations

import heapq
import math
import queue

STOP = None
"""Put on a ReadyQueue to stop its consumer once the ops already queued have been served."""


class ReadyQueue:
    """Ops a device has been given, served in program order (oldest node id first) rather
    than arrival order.

    Ops that are ready when built (uploads, fills) arrive long before the compute that
    uses them becomes ready; served first come, first served they would run ahead and hold
    memory early. Served oldest first, the device finishes older work before it starts
    newer work — the order an eager program would run in. ``put`` may be called from any
    thread; ``get`` from the device's one consumer thread only (it owns the heap).
    """

    def __init__(self):
        self._inbox: queue.SimpleQueue = queue.SimpleQueue()
        self._heap: list = []

    def put(self, op) -> None:
        """Hand an op (or STOP) to the device."""
        self._inbox.put(op)

    def put_own(self, op) -> None:
        """Hand an op to the device from its own consumer thread (a worker that just made
        its next op ready): straight onto the heap, no lock, no wake-up."""
        heapq.heappush(self._heap, (op.node_id, op))

    def get(self):
        """The oldest op given so far (blocks while there is none); STOP comes last."""
        inbox, heap = self._inbox, self._heap
        if not heap:
            self._push(inbox.get())
        while not inbox.empty():
            self._push(inbox.get())
        return heapq.heappop(heap)[1]

    def _push(self, op) -> None:
        key = math.inf if op is STOP else op.node_id
        heapq.heappush(self._heap, (key, op))
