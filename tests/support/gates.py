"""A gated op for tests that need a pending value: its kernel waits (at most 30 s) until the
test opens the gate, so its output stays pending meanwhile."""
from __future__ import annotations

import threading

from minerva.ops import registry


def gated_op(name: str):
    """``(op, gate)``: an op ``name`` copying its one input once ``gate`` (an Event) is set."""
    gate = threading.Event()

    def infer(x):
        return (x,)

    def impl(xp, x, *, out):
        assert gate.wait(30), "the test never opened the gate"
        out[...] = x
    return registry.register(name, infer, impl), gate
