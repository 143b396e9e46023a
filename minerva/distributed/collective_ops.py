"""The collectives as ops of the DAG: shape rules, and one kernel that hands the work to
the communication thread.

Every collective op carries a :class:`Collective` (its ``collective`` attribute): its
sequence number, given on the user's thread when it is built, what it does, and where
its data live. The op is ``deferred``: its kernel, run by the device when the inputs are
ready, records what the communication thread needs (a :class:`Job`) and returns at once;
the communication thread runs the jobs strictly in sequence order and reports each op
finished through ``done``. The device's own thread never waits for the network.

``dist_allreduce`` and ``dist_broadcast`` take any number of arrays of one dtype (a
bucket) and give as many results, of the same shapes; ``dist_allgather`` stacks one
array of each rank on a new axis 0; ``dist_barrier`` reads nothing and gives a token.
"""
from __future__ import annotations

import numpy as np

from minerva.common.errors import DTypeError
from minerva.distributed.errors import DistributedError
from minerva.ops import registry
from minerva.ops.registry import ArraySpec


class Place:
    """Where a collective's arrays live: a CPU device (``layer`` None), or a GPU device's
    CUDA layer, physical ``ordinal`` and ``stream`` (the compute stream its kernels run on,
    which the transfer must follow)."""

    __slots__ = ("device_id", "layer", "ordinal", "stream")

    def __init__(self, device_id: int, layer=None, ordinal: int = -1, stream=None):
        self.device_id = device_id
        self.layer = layer
        self.ordinal = ordinal
        self.stream = stream

    @property
    def is_gpu(self) -> bool:
        """Whether the arrays live on a GPU."""
        return self.layer is not None


class Collective:
    """One collective as built: sequence number ``seq``, ``kind``, reduction ``op`` (or
    None), ``root`` (broadcast), the :class:`Place` of its arrays, and the ``session``
    whose communication thread runs it."""

    __slots__ = ("seq", "kind", "op", "root", "place", "session")

    def __init__(self, seq: int, kind: str, op, root: int, place: Place, session):
        self.seq, self.kind, self.op, self.root = seq, kind, op, root
        self.place, self.session = place, session

    def __repr__(self) -> str:
        detail = f"({self.op})" if self.op else (
            f"(root={self.root})" if self.kind == "broadcast" else "")
        return f"{self.kind}{detail}#{self.seq}"


class Job:
    """What the communication thread needs to run one collective: the input and output
    arrays (device arrays), the GPU event after which they may be touched (None on a
    CPU), and ``done(exc=None)``, which completes the op."""

    __slots__ = ("collective", "inputs", "outputs", "ready", "done")

    def __init__(self, collective, inputs, outputs, ready, done):
        self.collective, self.inputs, self.outputs = collective, inputs, outputs
        self.ready, self.done = ready, done

    @property
    def seq(self) -> int:
        """The collective's sequence number."""
        return self.collective.seq


def _run_kernel(xp, *arrays, out, done=None, collective):
    """Hand the collective to its session's communication thread (returns at once)."""
    if done is None:
        raise DistributedError(
            f"collective {collective!r} was run without a completion callback: a device "
            "that cannot run deferred ops, or a jit replay (collectives cannot be jitted)")
    outputs = out if isinstance(out, tuple) else (out,)
    place, ready = collective.place, None
    if place.is_gpu:  # the transfer must follow the work queued on the compute stream
        ready = place.layer.new_event(place.ordinal)
        place.layer.record(ready, place.stream)
    collective.session.post(Job(collective, list(arrays), list(outputs), ready, done))


def _same_infer(*specs, collective):
    return tuple(ArraySpec(s.shape, s.dtype) for s in specs)


def _allgather_infer(x, *, collective):
    return (ArraySpec((collective.session.size,) + x.shape, x.dtype),)


def _barrier_infer(*, collective):
    return (ArraySpec((), np.dtype(np.uint8)),)


def _define(name: str, infer, elementwise: bool) -> registry.OpDef:
    op = registry.register(name, infer, _run_kernel, elementwise=elementwise)
    op.deferred = True
    return op


ALLREDUCE = _define("dist_allreduce", _same_infer, elementwise=True)
BROADCAST = _define("dist_broadcast", _same_infer, elementwise=True)
ALLGATHER = _define("dist_allgather", _allgather_infer, elementwise=False)
BARRIER = _define("dist_barrier", _barrier_infer, elementwise=False)
registry.nondifferentiable("dist_allreduce", "dist_broadcast", "dist_allgather",
                           "dist_barrier")
OP_DEFS = {"allreduce": ALLREDUCE, "broadcast": BROADCAST, "allgather": ALLGATHER,
           "barrier": BARRIER}
REDUCE_OPS = ("sum", "mean", "max", "min")


def check_reduction(op, dtype: np.dtype) -> None:
    """ValueError for an unknown ``op``; DTypeError for a dtype it cannot reduce (bools;
    complex max/min; integer mean)."""
    if op not in REDUCE_OPS:
        raise ValueError(f"allreduce: op must be one of {', '.join(REDUCE_OPS)}, "
                         f"got {op!r}")
    kind = dtype.kind
    if kind == "b":
        raise DTypeError(f"allreduce: cannot reduce bool arrays with {op!r}; cast them to "
                         "an integer dtype first")
    if kind == "c" and op in ("max", "min"):
        raise DTypeError(f"allreduce: complex numbers have no {op}")
    if kind in "iu" and op == "mean":
        raise DTypeError(f"allreduce: the mean of {dtype} arrays is not {dtype}; use "
                         "op='sum' and divide, or cast to a float dtype first")
