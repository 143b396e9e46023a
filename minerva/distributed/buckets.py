"""Gradient bucketing: many small arrays reduced in a few collectives.

Arrays are grouped, in order, into buckets of consecutive arrays that share a dtype and
a device, up to a byte budget each (an array larger than the budget has a bucket of its
own). One collective runs per bucket: the communication thread packs the bucket into one
buffer, reduces it, and unpacks it into the results.

:class:`GradientReducer` is the data-parallel piece (PyTorch DDP's reducer, minus the
autograd hooks): after ``loss.backward()`` has been *issued*, ``reduce()`` issues the
bucketed reductions of every parameter's ``.grad``, last parameter first — the order in
which the backward pass produces them — with a small first bucket, so the last layers'
gradients travel while the earlier layers' backward pass still computes.
"""
from __future__ import annotations

from minerva.distributed.issue import as_arrays, build_collective
from minerva.distributed.settings import BUCKET_BYTES, FIRST_BUCKET_BYTES, check_bytes


def plan_buckets(arrays, bucket_bytes: int, first_bucket_bytes: int | None = None):
    """Indices of ``arrays`` grouped into buckets (lists of consecutive indices)."""
    buckets, current, used, budget = [], [], 0, first_bucket_bytes or bucket_bytes
    for i, x in enumerate(arrays):
        head = arrays[current[0]] if current else None
        fits = head is not None and x.dtype == head.dtype and x.device == head.device \
            and used + x.nbytes <= budget
        if current and not fits:
            buckets.append(current)
            current, used, budget = [], 0, bucket_bytes
        current.append(i)
        used += x.nbytes
    if current:
        buckets.append(current)
    return buckets


def collective_many(kind: str, arrays, op=None, root: int = 0,
                    bucket_bytes=BUCKET_BYTES, first_bucket_bytes=None) -> list:
    """``kind`` (allreduce or broadcast) of each array, in buckets; the results in the
    order of ``arrays``."""
    arrays = as_arrays(arrays, kind)
    budget = check_bytes(bucket_bytes, "bucket_bytes")
    first = None if first_bucket_bytes is None else check_bytes(first_bucket_bytes,
                                                                "first_bucket_bytes")
    results = [None] * len(arrays)
    for bucket in plan_buckets(arrays, budget, first):
        reduced = build_collective(kind, [arrays[i] for i in bucket], op, root)
        reduced = reduced if isinstance(reduced, tuple) else (reduced,)
        for i, r in zip(bucket, reduced):
            results[i] = r
    return results


def parameters(params) -> list:
    """The NArrays of ``params`` (a dict's values, or any iterable), in order."""
    return list(params.values() if isinstance(params, dict) else params)


class GradientReducer:
    """Reduces the ``.grad`` of ``params`` over every rank, in place, in buckets.

        reducer = dist.GradientReducer(params)       # once
        loss.backward(); reducer.reduce(); opt.step()  # every step; nothing waits

    ``op`` is ``"sum"`` (the loss is already divided by the global batch size) or
    ``"mean"`` (each rank divided by its own batch, as PyTorch DDP). Buckets hold about
    ``bucket_bytes`` (25 MB); the first one (the last parameters') ``first_bucket_bytes``
    (1 MB). Call ``reduce`` outside ``autograd.record()``.
    """

    def __init__(self, params, op: str = "sum", bucket_bytes=BUCKET_BYTES,
                 first_bucket_bytes=FIRST_BUCKET_BYTES):
        self.params = parameters(params)
        self.op = op
        self.bucket_bytes = check_bytes(bucket_bytes, "bucket_bytes")
        self.first_bucket_bytes = check_bytes(first_bucket_bytes, "first_bucket_bytes")
        for i, p in enumerate(self.params):
            if getattr(p, "grad", None) is None:
                raise ValueError(f"parameter {i} (shape {p.shape}) has no gradient buffer; "
                                 "call attach_grad() on it first")

    def buckets(self) -> list[list[int]]:
        """The parameter indices of each bucket, in the order they are reduced."""
        order = list(reversed(range(len(self.params))))
        grads = [self.params[i].grad for i in order]
        planned = plan_buckets(grads, self.bucket_bytes, self.first_bucket_bytes)
        return [[order[j] for j in bucket] for bucket in planned]

    def reduce(self) -> None:
        """Issue the reduction of every gradient, written back into each ``.grad``."""
        for bucket in self.buckets():
            grads = [self.params[i].grad for i in bucket]
            reduced = build_collective("allreduce", grads, self.op)
            reduced = reduced if isinstance(reduced, tuple) else (reduced,)
            for g, r in zip(grads, reduced):
                g[...] = r


def sync_params(params, root: int = 0, bucket_bytes=BUCKET_BYTES) -> None:
    """Overwrite every parameter with rank ``root``'s value (in buckets), so all ranks
    start from the same weights."""
    values = parameters(params)
    for p, value in zip(values, collective_many("broadcast", values, root=root,
                                                bucket_bytes=bucket_bytes)):
        p[...] = value
