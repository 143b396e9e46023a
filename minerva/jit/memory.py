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
  neither split nor merged leave holes.
"""
from __future__ import annotations


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


def offsets(lives: list) -> tuple:
    """Offsets for locals living ``(first, last, size)`` (steps, bytes): no two locals
    whose lives overlap share a byte; the offsets and the arena's size."""
    order = sorted(range(len(lives)), key=lambda k: (-lives[k][2], lives[k][0], k))
    live_at: dict = {}   # step -> the placed locals living at it
    placed = [0] * len(lives)
    total = 0
    for k in order:
        first, last, size = lives[k]
        near = {j for i in range(first, last + 1) for j in live_at.get(i, ())}
        placed[k] = _lowest_gap(sorted((placed[j], lives[j][2]) for j in near), size)
        total = max(total, placed[k] + size)
        for i in range(first, last + 1):
            live_at.setdefault(i, []).append(k)
    return placed, total


def _lowest_gap(taken: list, size: int) -> int:
    """The lowest offset where ``size`` bytes fit between the ``(offset, size)`` ranges
    ``taken`` (sorted by offset)."""
    offset = 0
    for start, length in taken:
        if offset + size <= start:
            break
        offset = max(offset, start + length)
    return offset
