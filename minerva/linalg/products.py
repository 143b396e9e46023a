"""NumPy's products: ``matmul``, ``dot``, ``tensordot``, ``einsum`` (and ``einsum_path``),
``vdot``, ``inner``, ``outer``, ``kron``, ``cross``, ``vecdot``, ``matrix_transpose``,
``convolve`` and ``correlate``
(NumPy's top-level names: this module's ``__all__``), and ``numpy.linalg``'s
``multi_dot``.

Arguments are normalized here (axes non-negative, subscripts in explicit form) and shape
errors raised at once, as NumPy raises them.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from minerva.api.core import lean
from minerva.api.core.manipulation import ravel, reshape, swapaxes
from minerva.builder import build, to_narray
from minerva.common.errors import DTypeError, ShapeError, ShapeIndexError
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.dtypes import NUMERIC_KINDS, supported_dtype
from minerva.ops.linalg.einsum import explicit_subscripts
from minerva.ops.linalg.products import SLIDING_LENGTHS
from minerva.ops.linalg.shared import LinAlgShapeError

_OPS = registry.get


def _pair(name, a, b) -> tuple:
    return to_narray(a, name), to_narray(b, name)


# ---- matmul, dot, tensordot -------------------------------------------------------------

def matmul(x1, x2, /, out=None, *, transpose_a: bool = False,
           transpose_b: bool = False) -> NArray:
    """Matrix product (1-D, 2-D and batched operands, as NumPy's ``matmul``).

    ``transpose_a``/``transpose_b`` swap the last two axes of that operand inside the
    kernel: ``matmul(x, dy, transpose_a=True)`` equals ``x.T @ dy``.
    """
    a, b = to_narray(x1, "matmul"), to_narray(x2, "matmul")
    for name, flag, x in (("transpose_a", transpose_a, a), ("transpose_b", transpose_b, b)):
        if flag and x.ndim < 2:
            raise ShapeError(f"matmul: {name} needs at least 2 dimensions, got shape "
                             f"{x.shape}")
    if transpose_a:
        a = swapaxes(a, -1, -2)
    if transpose_b:
        b = swapaxes(b, -1, -2)
    return build(_OPS("matmul"), [a, b], out=out)

def dot(a, b, out=None) -> NArray:
    """``numpy.dot``: the matrix product for 1-D and 2-D operands, a product with a scalar
    for 0-d ones, and a sum over the last axis of ``a`` and the second-to-last of ``b``
    otherwise."""
    a, b = to_narray(a, "dot"), to_narray(b, "dot")
    if a.ndim == 0 or b.ndim == 0:
        return build(_OPS("multiply"), [a, b], out=out)
    if b.ndim <= 2:
        return build(_OPS("matmul"), [a, b], out=out)
    return build(_OPS("tensordot"), [a, b], {"axes": ((a.ndim - 1,), (b.ndim - 2,))}, out)


def tensordot(a, b, axes=2) -> NArray:
    """Sum of products over ``axes``: an int ``n`` (the last ``n`` axes of ``a`` with the
    first ``n`` of ``b``) or a pair of axis sequences (``numpy.tensordot``)."""
    x, y = _pair("tensordot", a, b)
    return build(_OPS("tensordot"), [x, y], {"axes": tensordot_axes(axes, x.shape, y.shape)})


def tensordot_axes(axes, shape_a: tuple, shape_b: tuple) -> tuple:
    """``tensordot``'s ``axes`` as two tuples of non-negative axes, checked as NumPy does."""
    try:
        iter(axes)
    except TypeError:
        n = operator.index(axes)
        axes_a, axes_b = tuple(range(-n, 0)), tuple(range(0, n))
    else:
        axes_a, axes_b = axes
    axes_a, axes_b = _axis_tuple(axes_a), _axis_tuple(axes_b)
    if len(axes_a) != len(axes_b):
        raise ShapeError("tensordot: shape-mismatch for sum")
    axes_a = tuple(_in_range(i, shape_a) for i in axes_a)
    axes_b = tuple(_in_range(j, shape_b) for j in axes_b)
    if any(shape_a[i] != shape_b[j] for i, j in zip(axes_a, axes_b)):
        raise ShapeError(f"tensordot: shape-mismatch for sum ({shape_a} and {shape_b} "
                         f"over axes {axes_a} and {axes_b})")
    if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
        raise ShapeError("tensordot: repeated axis in axes")
    return axes_a, axes_b


def _axis_tuple(axes) -> tuple:
    try:
        return tuple(operator.index(i) for i in axes)
    except TypeError:
        return (operator.index(axes),)


def _in_range(axis: int, shape: tuple) -> int:
    if not -len(shape) <= axis < len(shape):
        raise ShapeIndexError(f"tensordot: axis {axis} is out of range for shape {shape}")
    return axis % len(shape)


# ---- einsum ---------------------------------------------------------------------------------

def einsum(*operands, out=None, dtype=None, order="K", casting="safe",
           optimize=False) -> NArray:
    """Einstein summation (``numpy.einsum``): subscripts with ``->`` or implicit output,
    ``...`` broadcasting, any number of operands, or the interleaved form
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])``. ``optimize`` goes to the kernel's einsum;
    ``order`` is accepted and ignored (results are C-contiguous)."""
    subscripts, arrays = _einsum_operands(operands)
    explicit, _ = explicit_subscripts(subscripts, [x.shape for x in arrays])
    if dtype is not None:
        dtype = _einsum_cast(arrays, supported_dtype(dtype), casting)
    attrs = {"subscripts": explicit, "dtype": dtype, "optimize": _frozen(optimize)}
    return build(_OPS("einsum"), arrays, attrs, out)


def _einsum_operands(operands) -> tuple:
    if not operands or (isinstance(operands[0], str) and len(operands) < 2):
        raise ValueError("must specify the einstein sum subscripts string and at least one "
                         "operand")
    if isinstance(operands[0], str):
        return operands[0], [to_narray(x, "einsum") for x in operands[1:]]
    end = len(operands) - len(operands) % 2
    arrays = [to_narray(x, "einsum") for x in operands[0:end:2]]
    subscripts = ",".join(_sublist(s) for s in operands[1:end:2])
    if len(operands) % 2:
        subscripts += "->" + _sublist(operands[-1])
    return subscripts, arrays


def _sublist(items) -> str:
    return "".join("..." if item is Ellipsis else _letter(item) for item in items)


def _letter(item) -> str:
    i = operator.index(item)
    if not 0 <= i < 52:
        raise ValueError("subscript is not within the valid range [0, 52)")
    return chr(ord("A") + i) if i < 26 else chr(ord("a") + i - 26)


def _einsum_cast(arrays, dtype: np.dtype, casting: str) -> np.dtype:
    if dtype.kind not in NUMERIC_KINDS:
        raise DTypeError(f"einsum: dtype {dtype} is no number")
    for k, x in enumerate(arrays):
        if not np.can_cast(x.dtype, dtype, casting):
            raise DTypeError(f"einsum: operand {k} dtype could not be cast from {x.dtype!r} "
                             f"to {dtype!r} according to the rule {casting!r}")
    return dtype


def _frozen(optimize):
    if isinstance(optimize, list):
        return tuple(tuple(p) if isinstance(p, list) else p for p in optimize)
    return optimize


def einsum_path(*operands, optimize="greedy", einsum_call=False):
    """``numpy.einsum_path``: the contraction order NumPy would choose for operands of these
    shapes and dtypes (computed on the host from the shapes alone; nothing waits)."""
    stand_ins = [np.broadcast_to(np.zeros((), x.dtype), x.shape) if isinstance(x, NArray)
                 else x for x in operands]
    return np.einsum_path(*stand_ins, optimize=optimize, einsum_call=einsum_call)


# ---- vdot, inner, outer, kron -----------------------------------------------------------------

def vdot(a, b, /) -> NArray:
    """Dot product of ``a`` and ``b`` flattened, ``a`` conjugated (``numpy.vdot``)."""
    return build(_OPS("vdot"), list(_pair("vdot", a, b)))


def inner(a, b, /) -> NArray:
    """Sum of products over the last axes (``numpy.inner``; a product with a 0-d
    operand)."""
    return build(_OPS("inner"), list(_pair("inner", a, b)))


def outer(a, b, out=None) -> NArray:
    """``a.ravel()[:, None] * b.ravel()[None, :]`` (``numpy.outer``)."""
    return build(_OPS("outer"), list(_pair("outer", a, b)), out=out)


def kron(a, b) -> NArray:
    """Kronecker product: blocks of ``b`` scaled by the elements of ``a``
    (``numpy.kron``)."""
    return build(_OPS("kron"), list(_pair("kron", a, b)))


# ---- convolve, correlate -----------------------------------------------------------------

def convolve(a, v, mode="full") -> NArray:
    """Discrete linear convolution of two 1-D arrays (``numpy.convolve``): ``mode``
    'full' (length n + m - 1), 'same' (max(n, m)) or 'valid' (where they overlap fully)."""
    return _sliding("convolve", a, v, mode)


def correlate(a, v, mode="valid") -> NArray:
    """Cross-correlation of two 1-D arrays, ``v`` conjugated (``numpy.correlate``); modes
    as ``convolve``'s."""
    return _sliding("correlate", a, v, mode)


EMPTY = {"convolve": ("a cannot be empty", "v cannot be empty"),
         "correlate": ("first array argument cannot be empty",
                       "second array argument cannot be empty")}
"""NumPy's errors for an empty first or second operand."""


def _sliding(name: str, a, v, mode) -> NArray:
    x, y = (reshape(z, (1,)) if z.ndim == 0 else z for z in _pair(name, a, v))
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError("object too deep for desired array")
    if x.size == 0 or y.size == 0:
        raise ValueError(EMPTY[name][x.size != 0])
    return build(_OPS(name), [x, y], {"mode": _sliding_mode(name, mode)})


def _sliding_mode(name: str, mode) -> str:
    """``mode`` as a name (NumPy also takes 0, 1, 2), or NumPy's error for it."""
    if isinstance(mode, str) and mode in SLIDING_LENGTHS:
        return mode
    if type(mode) is int and mode in (0, 1, 2):
        return ("valid", "same", "full")[mode]
    getattr(np, name)(np.ones(1), np.ones(1), mode=mode)  # raises NumPy's error
    raise ValueError("Use one of 'valid', 'same', or 'full' for convolve/correlate mode")


# ---- cross, vecdot, matrix_transpose ---------------------------------------------------------

def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None) -> NArray:
    """Cross product of 3-vectors (or 2-vectors, deprecated as in NumPy 2) along
    ``axisa``/``axisb``, written along ``axisc`` (all three ``axis`` when given)."""
    x, y = _pair("cross", a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    if x.ndim < 1 or y.ndim < 1:
        raise ShapeError("cross: At least one array has zero dimension")
    axisa, axisb = _axis("cross", axisa, x.ndim), _axis("cross", axisb, y.ndim)
    sizes = {x.shape[axisa], y.shape[axisb]}
    if 3 in sizes:
        axisc = _axis("cross", axisc, max(x.ndim, y.ndim))
    else:
        axisc = 0
    if 2 in sizes and sizes <= {2, 3}:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of "
                      "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
                      DeprecationWarning, stacklevel=2)
    return build(_OPS("cross"), [x, y], {"axisa": axisa, "axisb": axisb, "axisc": axisc})


def vecdot(x1, x2, /, out=None, *, axis=-1) -> NArray:
    """``sum(conj(x1) * x2)`` over ``axis`` of each operand, the other axes broadcast
    (``numpy.vecdot``)."""
    x, y = _pair("vecdot", x1, x2)
    if x.ndim == 0 or y.ndim == 0:
        raise ShapeError("vecdot: an input operand does not have enough dimensions (has 0, "
                         "gufunc core with signature (n),(n)->() requires 1)")
    axis_a, axis_b = _axis("vecdot", axis, x.ndim), _axis("vecdot", axis, y.ndim)
    return build(_OPS("vecdot"), [x, y], {"axis_a": axis_a, "axis_b": axis_b}, out)


def _axis(name: str, axis, ndim: int) -> int:
    """``axis`` of an array of ``ndim`` dimensions, non-negative (NumPy's AxisError is both
    a ValueError and an IndexError: so is ShapeIndexError)."""
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ShapeIndexError(f"{name}: axis {axis} is out of bounds for array of dimension "
                              f"{ndim}")
    return axis % ndim


def matrix_transpose(x, /) -> NArray:
    """A view of ``x`` with its last two axes swapped."""
    x = to_narray(x, "matrix_transpose")
    if x.ndim < 2:
        raise ShapeError("matrix_transpose: Input array must be at least 2-dimensional")
    return swapaxes(x, -1, -2)


# ---- multi_dot -------------------------------------------------------------------------

def multi_dot(arrays, *, out=None) -> NArray:
    """``dot`` of several arrays in the cheapest order (NumPy's choice); the first may be
    1-D (a row), the last 1-D (a column), the others must be 2-D."""
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    if len(arrays) == 2:
        return dot(arrays[0], arrays[1], out=out)
    arrays = [to_narray(a, "multi_dot") for a in arrays]
    first, last = arrays[0].ndim, arrays[-1].ndim
    if first == 1:
        arrays[0] = reshape(arrays[0], (1, -1))
    if last == 1:
        arrays[-1] = reshape(arrays[-1], (-1, 1))
    for a in arrays:
        if a.ndim != 2:
            raise LinAlgShapeError(f"multi_dot: {a.ndim}-dimensional array given. Array "
                                   "must be two-dimensional")
    result = _chain(arrays, _chain_order([a.shape for a in arrays]), 0, len(arrays) - 1,
                    out)
    if first == 1 and last == 1:
        return result[0, 0]
    return ravel(result) if 1 in (first, last) else result

def _chain_order(shapes) -> dict:
    """NumPy's matrix-chain order: ``split[i, j]`` where to split the product of arrays
    i..j (the cost of a product counted as NumPy counts it)."""
    n = len(shapes)
    dims = [s[0] for s in shapes] + [shapes[-1][1]]
    cost, split = {(i, i): 0 for i in range(n)}, {}
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i, j] = float("inf")
            for k in range(i, j):
                q = cost[i, k] + cost[k + 1, j] + dims[i] * dims[k + 1] * dims[j + 1]
                if q < cost[i, j]:
                    cost[i, j], split[i, j] = q, k
    return split

def _chain(arrays, split, i, j, out=None):
    if i == j:
        return arrays[i]
    k = split[i, j]
    return dot(_chain(arrays, split, i, k), _chain(arrays, split, k + 1, j), out=out)


matmul = lean.product(matmul, _OPS("matmul"))   # in C where it can: ``np.matmul(x, y)``
dot = lean.product(dot, _OPS("matmul"), dot=True)   # ``np.dot(x, y)``, ``x.dot(y)``

__all__ = ["convolve", "correlate", "cross", "dot", "einsum", "einsum_path", "inner", "kron", "matmul",
           "matrix_transpose", "outer", "tensordot", "vdot", "vecdot"]
"""NumPy's top-level products (minerva's namespace takes them); ``multi_dot`` is
``numpy.linalg``'s alone."""
