"""The op a jit replay runs: one per segment of a plan, each replay (``minerva.jit``).

Its kernel runs the segment's captured kernels in order (``attrs["segment"].run``); the
op's inputs are what the segment reads, its outputs what it makes for later segments or
returns, then the values it writes, then its arena."""
from __future__ import annotations

from minerva.ops.registry import register


def _never_inferred(*_specs, **_attrs):
    raise RuntimeError("internal: a jit replay's outputs are planned, not inferred")


def _replay_impl(xp, *arrays, out, segment, seeds, device, trace=None):
    segment.run(xp, arrays, out if isinstance(out, tuple) else (out,), seeds, device, trace)


JIT_REPLAY = register("jit_replay", _never_inferred, _replay_impl)
JIT_REPLAY.nested = True
