"""Softmax, log-softmax and cross-entropy (with its backward).

All are numerically stable: the maximum along the axis is subtracted before ``exp``.
``cross_entropy(logits (N, K), labels (N,) int)`` is ``-log_softmax(logits)[n, labels[n]]``
reduced by ``'mean'`` (a 0-d result), ``'sum'`` (0-d) or ``'none'`` (shape ``(N,)``). A label
outside ``[0, K)`` fails the op with ``IndexError``: at once on host (NumPy) arrays; on a GPU
the kernel computes a device-side flag and *returns* the check ``(flag, error)``, which the
device reads once the op's work completed (reading it in the kernel would make the GPU's
launcher wait for the whole stream). Callers that ignore the returned check (a jit replay)
get CuPy's wrapped indices instead of the error.
"""
from __future__ import annotations

import numpy as np

from minerva.ops.nn.shared import require_float, require_rank
from minerva.ops.registry import ArraySpec, register, shape_error, spec

REDUCTIONS = ("mean", "sum", "none")


def _norm_axis(op: str, x: ArraySpec, axis) -> int:
    ndim = len(x.shape)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) \
            or not -ndim <= axis < ndim:
        raise shape_error(op, f"axis {axis!r} is out of range", x)
    return int(axis) % ndim


def _softmax_infer(x: ArraySpec, *, axis=-1):
    require_float("softmax", x)
    _norm_axis("softmax", x, axis)
    return (spec(x.shape, x.dtype),)


def _log_softmax_infer(x: ArraySpec, *, axis=-1):
    require_float("log_softmax", x)
    _norm_axis("log_softmax", x, axis)
    return (spec(x.shape, x.dtype),)


def _softmax_impl(xp, x, *, out, axis=-1):
    if not x.size:
        return
    xp.subtract(x, x.max(axis=axis, keepdims=True), out=out)
    xp.exp(out, out=out)
    out /= out.sum(axis=axis, keepdims=True)


def _log_softmax_impl(xp, x, *, out, axis=-1):
    if not x.size:
        return
    xp.subtract(x, x.max(axis=axis, keepdims=True), out=out)
    out -= xp.log(xp.exp(out).sum(axis=axis, keepdims=True))


# ---------------------------------------------------------------- cross-entropy
def _check_ce(op: str, logits: ArraySpec, labels: ArraySpec, reduction) -> None:
    require_rank(op, "logits", logits, 2)
    require_float(op, logits)
    if not np.issubdtype(labels.dtype, np.integer):
        raise shape_error(op, "labels must be integer class ids", labels)
    if labels.shape != logits.shape[:1]:
        raise shape_error(op, "labels must have shape (N,) for logits (N, K)", logits, labels)
    if reduction not in REDUCTIONS:
        raise shape_error(op, f"reduction must be one of {REDUCTIONS}", reduction)


def _ce_infer(logits: ArraySpec, labels: ArraySpec, *, reduction="mean"):
    _check_ce("cross_entropy", logits, labels, reduction)
    shape = logits.shape[:1] if reduction == "none" else ()
    return (spec(shape, logits.dtype),)


def _label_check(logits, labels):
    """Whether every label is in ``[0, K)``: raises IndexError at once for host arrays;
    for device arrays returns the check ``(flag, error)`` for the device to read later
    (None when there is nothing to check)."""
    k = logits.shape[1]
    if not labels.size:
        return None
    bad = ((labels < 0) | (labels >= k)).any()
    error = IndexError(f"cross_entropy: a label is outside [0, {k})")
    if isinstance(bad, (bool, np.bool_)):
        if bad:
            raise error
        return None
    return bad, error


def _picked_rows(xp, labels):
    """The ``(arange(N), labels)`` index pair."""
    return xp.arange(labels.shape[0]), labels


def _ce_impl(xp, logits, labels, *, out, reduction="mean"):
    check = _label_check(logits, labels)
    rows = _picked_rows(xp, labels)
    lsm = xp.empty_like(logits)
    _log_softmax_impl(xp, logits, out=lsm, axis=1)
    losses = -lsm[rows]
    if reduction == "none":
        out[...] = losses
    elif reduction == "sum":
        out[...] = losses.sum()
    else:
        out[...] = losses.mean()
    return check


def _ce_bwd_infer(logits: ArraySpec, labels: ArraySpec, *dy: ArraySpec, reduction="mean"):
    op = "cross_entropy_backward"
    _check_ce(op, logits, labels, reduction)
    if dy:
        require_float(op, dy[0])
        expected = logits.shape[:1] if reduction == "none" else ()
        if dy[0].shape != expected:
            raise shape_error(op, f"dy must have shape {expected}", logits, dy[0])
    return (spec(logits.shape, logits.dtype),)


def _ce_bwd_impl(xp, logits, labels, *dy, out, reduction="mean"):
    check = _label_check(logits, labels)
    rows = _picked_rows(xp, labels)
    _softmax_impl(xp, logits, out=out, axis=1)
    out[rows] -= 1
    if reduction == "mean" and logits.shape[0]:
        out *= out.dtype.type(1.0 / logits.shape[0])
    if dy:
        scale = dy[0][:, None] if reduction == "none" else dy[0]
        out *= scale
    return check


register("softmax", _softmax_infer, _softmax_impl)
register("log_softmax", _log_softmax_infer, _log_softmax_impl)
register("cross_entropy", _ce_infer, _ce_impl)
register("cross_entropy_backward", _ce_bwd_infer, _ce_bwd_impl)
