"""What the ``mv.nn`` ops share: checks of their arguments (``pair``, ``shape4``,
``require_rank``, ``require_float``) and the window helpers of convolution and pooling
(``out_size``, ``window_out_hw``, ``pad_hw``, ``tap``, ``grad_buffer``, ``crop_into``).

Layout is ``(N, C, H, W)`` for images; output sizes follow the floor rule
``Ho = (H + 2*ph - kh) // sh + 1``.
"""
from __future__ import annotations

import numpy as np

from minerva.ops.registry import ArraySpec, shape_error


# ---- checks ----------------------------------------------------------------------------

def pair(value, name: str, op: str, minimum: int) -> tuple[int, int]:
    """``value`` (an int or a pair of ints) as a pair; each at least ``minimum``."""
    items = value if isinstance(value, (tuple, list)) else (value, value)
    if len(items) != 2 or not all(_is_int(v) for v in items):
        raise shape_error(op, f"{name} must be an int or a pair of ints", value)
    if min(items) < minimum:
        raise shape_error(op, f"{name} must be >= {minimum}", value)
    return int(items[0]), int(items[1])

def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))

def shape4(op: str, name: str, shape) -> tuple:
    """``shape`` (an attr) as a tuple of 4 ints; raises unless it is one."""
    if not isinstance(shape, (tuple, list)) or len(shape) != 4 \
            or not all(_is_int(n) and n >= 0 for n in shape):
        raise shape_error(op, f"{name} must be a tuple of 4 non-negative ints", shape)
    return tuple(int(n) for n in shape)

def require_rank(op: str, name: str, s: ArraySpec, rank: int) -> None:
    """Raise unless ``s`` has ``rank`` dimensions."""
    if len(s.shape) != rank:
        raise shape_error(op, f"{name} must have rank {rank}", s)

def require_float(op: str, *specs: ArraySpec) -> None:
    """Raise unless every spec has a floating-point dtype."""
    if not all(np.issubdtype(s.dtype, np.floating) for s in specs):
        raise shape_error(op, "needs floating-point inputs", *specs)

# ---- windows ---------------------------------------------------------------------------

def out_size(n: int, k: int, s: int, p: int) -> int:
    """Windows of size ``k`` at stride ``s`` over ``n`` items padded by ``p`` (floor rule)."""
    return (n + 2 * p - k) // s + 1

def window_out_hw(op: str, x: ArraySpec, kernel, stride, pad) -> tuple[int, int]:
    """``(Ho, Wo)`` for windows over image ``x``; raises if a kernel exceeds the padded input."""
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, pad
    h, w = x.shape[2], x.shape[3]
    if kh > h + 2 * ph or kw > w + 2 * pw:
        raise shape_error(op, f"kernel {(kh, kw)} is larger than the input padded by "
                              f"{(ph, pw)}", x)
    return out_size(h, kh, sh, ph), out_size(w, kw, sw, pw)

def pad_hw(xp, x, pad: tuple[int, int], value: float = 0.0):
    """``x`` padded on its last two axes by ``pad`` with ``value``; ``x`` itself if no pad."""
    ph, pw = pad
    if ph == 0 and pw == 0:
        return x
    n, c, h, w = x.shape
    shape = (n, c, h + 2 * ph, w + 2 * pw)
    buf = xp.zeros(shape, x.dtype) if value == 0 else xp.full(shape, value, x.dtype)
    buf[:, :, ph:ph + h, pw:pw + w] = x
    return buf

def tap(a, i: int, j: int, stride: tuple[int, int], out_hw: tuple[int, int]):
    """View of ``a`` (padded image) at kernel offset ``(i, j)``: shape ``(N, C, Ho, Wo)``."""
    (sh, sw), (ho, wo) = stride, out_hw
    return a[:, :, i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw]

def grad_buffer(xp, out, pad):
    """A zeroed padded-image buffer for gradient scatter: ``out`` itself when no pad."""
    if pad == (0, 0):
        out[...] = 0
        return out
    n, c, h, w = out.shape
    return xp.zeros((n, c, h + 2 * pad[0], w + 2 * pad[1]), dtype=out.dtype)

def crop_into(out, dxpad, pad) -> None:
    """Copy the unpadded part of ``dxpad`` into ``out`` (nothing to do if it is ``out``)."""
    if dxpad is not out:
        (ph, pw), (h, w) = pad, out.shape[2:]
        out[...] = dxpad[:, :, ph:ph + h, pw:pw + w]
