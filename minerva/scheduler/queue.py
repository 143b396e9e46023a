"""The PriorityDispatcherQueue: tasks ordered by kind, then priority, then arrival."""
from __future__ import annotations

import heapq
import itertools
import threading
from enum import IntEnum


class TaskKind(IntEnum):
    """What a dispatcher does with a node; lower values are served first.

    DELETE comes first so memory returns to the pool before new ops allocate; COMPLETE
    before RUN so finished work unblocks its successors promptly. RELEASE drains handle
    releases that user code posted; STOP ends a dispatcher thread.
    """

    DELETE = 0
    COMPLETE = 1
    RELEASE = 2
    RUN = 3
    STOP = 9


class PriorityDispatcherQueue:
    """A blocking priority queue of ``(kind, node)`` tasks shared by the dispatcher threads.

    One condition variable guards the heap and the arrival counter. Its lock is reentrant
    so a handle finalizer that runs inside a put on the same thread cannot deadlock.
    """

    def __init__(self):
        self._heap: list = []
        self._arrival = itertools.count().__next__
        self._cond = threading.Condition(threading.RLock())

    def put(self, kind: TaskKind, node, priority: int = 0) -> None:
        """Add one task and wake one waiting dispatcher."""
        with self._cond:
            heapq.heappush(self._heap, (kind, priority, self._arrival(), node))
            self._cond.notify()

    def put_many(self, kind: TaskKind, nodes, priority_of=None) -> None:
        """Add several tasks of one kind at once, waking as many dispatchers."""
        if not nodes:
            return
        with self._cond:
            for node in nodes:
                prio = priority_of(node) if priority_of else 0
                heapq.heappush(self._heap, (kind, prio, self._arrival(), node))
            self._cond.notify(len(nodes))

    def get(self, timeout: float | None = None):
        """The first task as ``(kind, node)``; ``None`` when ``timeout`` passes first."""
        with self._cond:
            if not self._heap and not self._cond.wait_for(lambda: self._heap, timeout):
                return None
            kind, _, _, node = heapq.heappop(self._heap)
            return kind, node

    def __len__(self) -> int:
        return len(self._heap)
