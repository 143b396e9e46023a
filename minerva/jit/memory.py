"""The memory plan of a segment (``minerva.jit.plan``): the order its steps replay in and
where its locals live in the arena.

- **Writes early** (``hoisted``): a step that writes in place (``w -= lr * g``, an
  ``out=``, an item write), with the steps just before it that make values only it reads
  (the ``lr * g`` of an unfused update), replays as early as its values allow: the block
  moves up past every earlier step that shares no value with it (reads or writes none of
  the values it reads or writes), ``MAX_HOIST`` steps at most. A write allocates nothing
  (its outputs are existing arrays), and the locals it reads last (the gradient ``g``)
  die earlier: a training step's updates of the later layers' weights then free their
  gradients before the first layer's is made. The move keeps every value's producer,
  readers and writers in their order, so each step reads what it read before and the
  numbers do not change.
- **Offsets by size** (``offsets``): the locals, largest first, each take the lowest
  offset whose bytes no local living at the same time already holds (the "greedy by size"
  placement of offline memory planners). A local lives from the step that makes it to the
  step that reads it last, both included, so an op's output never shares bytes with its
  inputs. The arena is the end of the highest local: on a training step it comes within
  the alignment of the most bytes live at once, where slots in issue order that are
  neither split nor merged leave holes. The placement compares each local with those
  already placed, so a segment of more than ``MAX_BY_SIZE`` locals is placed in issue
  order instead: each local takes the best-fitting free range (free ranges split and
  merge; the last one grows the arena).
"""
from __future__ import annotations

import bisect
import heapq

MAX_HOIST = 512
"""How many steps a write moves up at most (bounds the planning time of long plans)."""


def hoisted(steps: list) -> list:
    """``steps`` with each in-place write, and the steps just before it that make values
    only it reads, moved up past the earlier steps that share no value with them (see the
    module docstring)."""
    uses: dict = {}
    for step in steps:
        for vid in _vids(step):
            uses[vid] = uses.get(vid, 0) + 1
    out: list = []
    touched: list = []   # per step of ``out``: the vids it reads or writes
    for step in steps:
        out.append(step)
        touched.append(_vids(step))
        if step.write:
            _hoist_last(out, touched, uses)
    return out


def _vids(step) -> set:
    return {vid for vid, _ in step.ins + step.outs}


def _hoist_last(out: list, touched: list, uses: dict) -> None:
    """Move the last step of ``out`` (a write), with the steps just before it whose
    results only it and they use, up past the steps that share no value with them."""
    start = len(out) - 1
    inside = dict.fromkeys(touched[start], 1)   # vid -> steps of the block using it
    while start > 0 and _feeds_only(out[start - 1], touched[start - 1], inside, uses):
        start -= 1
        for vid in touched[start]:
            inside[vid] = inside.get(vid, 0) + 1
    at, stop = start, max(0, start - MAX_HOIST)
    while at > stop and not inside.keys() & touched[at - 1]:
        at -= 1
    if at < start:
        out[at:] = out[start:] + out[at:start]
        touched[at:] = touched[start:] + touched[at:start]


def _feeds_only(step, vids: set, inside: dict, uses: dict) -> bool:
    """Whether ``step`` writes nothing in place and every value it makes is used only by
    it and the steps of the block (``inside``)."""
    return not step.write and all(
        uses[vid] == inside.get(vid, 0) + 1 for vid, _ in step.outs)


MAX_BY_SIZE = 1024
"""Segments with more locals than this place them in issue order (``offsets``)."""


def offsets(lives: list) -> tuple:
    """Offsets for locals living ``(first, last, size)`` (steps, bytes): no two locals
    whose lives overlap share a byte; the offsets and the arena's size."""
    if len(lives) > MAX_BY_SIZE:
        return _in_issue_order(lives)
    order = sorted(range(len(lives)), key=lambda k: (-lives[k][2], lives[k][0], k))
    placed: list = []   # (first, last, offset, size) of the locals placed
    where = [0] * len(lives)
    total = 0
    for k in order:
        first, last, size = lives[k]
        taken = sorted((o, n) for f, l, o, n in placed if f <= last and first <= l)
        where[k] = _lowest_gap(taken, size)
        placed.append((first, last, where[k], size))
        total = max(total, where[k] + size)
    return where, total


def _in_issue_order(lives: list) -> tuple:
    """``offsets`` in issue order: each local takes the best-fitting free range, else
    grows the arena (from a free range that ends it, if any)."""
    free: list = []     # (offset, size), sorted, merged
    ending: list = []   # heap of (last step, local)
    where = [0] * len(lives)
    total = 0
    for k in sorted(range(len(lives)), key=lambda k: (lives[k][0], k)):
        first, last, size = lives[k]
        while ending and ending[0][0] < first:
            _, j = heapq.heappop(ending)
            _release(free, where[j], lives[j][2])
        where[k], total = _take(free, size, total)
        heapq.heappush(ending, (last, k))
    return where, total


def _release(free: list, offset: int, size: int) -> None:
    """Put ``size`` bytes at ``offset`` back into ``free``, merged with its neighbours."""
    i = bisect.bisect(free, (offset, size))
    if i < len(free) and offset + size == free[i][0]:
        size += free.pop(i)[1]
    if i > 0 and free[i - 1][0] + free[i - 1][1] == offset:
        offset, size = free[i - 1][0], free[i - 1][1] + size
        free.pop(i - 1)
        i -= 1
    free.insert(i, (offset, size))


def _take(free: list, size: int, total: int) -> tuple:
    """An offset for ``size`` bytes from ``free`` (best fit, the rest stays free) or at
    the arena's end; the offset and the arena's new size."""
    fits = [i for i, (_, n) in enumerate(free) if n >= size]
    if fits:
        i = min(fits, key=lambda i: free[i][1])
        offset, n = free.pop(i)
        if n > size:
            free.insert(i, (offset + size, n - size))
        return offset, total
    if free and free[-1][0] + free[-1][1] == total:
        offset = free.pop()[0]
        return offset, offset + size
    return total, total + size


def _lowest_gap(taken: list, size: int) -> int:
    """The lowest offset where ``size`` bytes fit between the ``(offset, size)`` ranges
    ``taken`` (sorted by offset)."""
    offset = 0
    for start, length in taken:
        if offset + size <= start:
            break
        offset = max(offset, start + length)
    return offset
