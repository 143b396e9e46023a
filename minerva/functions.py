"""Array functions of the public API: math, reductions, products and shape functions."""
from __future__ import annotations

import builtins

import numpy as np

from minerva.common.errors import ShapeError
from minerva.narray import OPS, NArray, apply_op, binary
from minerva.ops.dtypes import is_scalar
from minerva.ops.elementwise import ARRAY
from minerva.ops.reduction import normalize_axis
from minerva.ops.shape import normalize_axes, resolve_shape


def as_narray(value, what: str = "operand") -> NArray:
    """``value`` as an NArray: NArrays pass, NumPy arrays, lists and scalars are copied
    onto the current device; anything else is a TypeError."""
    if isinstance(value, NArray):
        return value
    if is_scalar(value) or isinstance(value, (np.ndarray, list, tuple)):
        from minerva.creation import array
        return array(value)
    raise TypeError(f"{what}: expected an NArray, a NumPy array or a scalar, got "
                    f"{type(value).__name__}")


def _unary(name):
    def function(x):
        return apply_op(OPS[name], [as_narray(x, name)])
    function.__name__ = name
    function.__doc__ = f"Elementwise ``{name}`` (as NumPy's)."
    return function


exp, log, sqrt, square, sign, tanh = map(_unary, ("exp", "log", "sqrt", "square", "sign",
                                                  "tanh"))
negative, floor, ceil, sin, cos = map(_unary, ("negative", "floor", "ceil", "sin", "cos"))
log1p, expm1, reciprocal = map(_unary, ("log1p", "expm1", "reciprocal"))
invert, logical_not = map(_unary, ("invert", "logical_not"))
sigmoid, relu = _unary("sigmoid"), _unary("relu")
abs = absolute = _unary("absolute")


def _binary_function(name):
    def function(a, b):
        if isinstance(a, NArray):
            return _checked(binary(name, a, b), name, b)
        return _checked(binary(name, as_narray(b, name), a, reverse=True), name, a)
    function.__name__ = name
    function.__doc__ = f"Elementwise ``{name}`` of two arrays or an array and a scalar."
    return function


def _checked(result, name, operand):
    if result is NotImplemented:
        raise TypeError(f"{name}: unsupported operand type {type(operand).__name__}")
    return result


add, subtract, multiply, divide, floor_divide, remainder, power = map(
    _binary_function, ("add", "subtract", "multiply", "divide", "floor_divide", "remainder",
                       "power"))
maximum, minimum, arctan2 = map(_binary_function, ("maximum", "minimum", "arctan2"))
equal, not_equal, less, less_equal, greater, greater_equal = map(
    _binary_function, ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"))
logical_and, logical_or, bitwise_and, bitwise_or, bitwise_xor = map(
    _binary_function, ("logical_and", "logical_or", "bitwise_and", "bitwise_or", "bitwise_xor"))


def _mixed(name, operands):
    layout, arrays = [], []
    for value in operands:
        if value is None or is_scalar(value):
            layout.append(value[()] if isinstance(value, np.ndarray) else value)
        else:
            layout.append(ARRAY)
            arrays.append(as_narray(value, name))
    return apply_op(OPS[name], arrays, layout=tuple(layout))


def where(condition, x, y) -> NArray:
    """Elements of ``x`` where ``condition`` is true, else of ``y`` (arrays or scalars)."""
    return _mixed("where", (as_narray(condition, "where"), x, y))


def clip(x, low=None, high=None) -> NArray:
    """``x`` limited to ``[low, high]`` (scalars, arrays, or None for no bound)."""
    if low is None and high is None:
        raise ShapeError("clip: give low, high, or both")
    return _mixed("clip", (as_narray(x, "clip"), low, high))


def _reduction(name):
    def function(x, axis=None, keepdims=False):
        x = as_narray(x, name)
        axes = normalize_axis(name, axis, x.ndim)
        return apply_op(OPS[name], [x], axis=axes, keepdims=bool(keepdims))
    function.__name__ = name
    function.__doc__ = (f"``{name}`` over ``axis`` (None, an int or a tuple), keeping "
                        "reduced dimensions as size 1 when ``keepdims``.")
    return function


sum, prod, max, min, mean, any, all = map(
    _reduction, ("sum", "prod", "max", "min", "mean", "any", "all"))


def _arg_reduction(name):
    def function(x, axis=None, keepdims=False):
        x = as_narray(x, name)
        if axis is not None:
            if isinstance(axis, (tuple, list)):
                raise ShapeError(f"{name}: axis must be None or an int, got {axis!r}")
            (axis,) = normalize_axis(name, axis, x.ndim)
        return apply_op(OPS[name], [x], axis=axis, keepdims=bool(keepdims))
    function.__name__ = name
    function.__doc__ = f"Indices of the {name[3:]}imum along ``axis`` (flattened when None)."
    return function


argmax, argmin = _arg_reduction("argmax"), _arg_reduction("argmin")


def matmul(a, b, transpose_a: bool = False, transpose_b: bool = False) -> NArray:
    """Matrix product (1-D, 2-D and batched operands, as NumPy's ``matmul``).

    ``transpose_a``/``transpose_b`` swap the last two axes of that operand inside the
    kernel: ``matmul(x, dy, transpose_a=True)`` equals ``x.T @ dy`` without copying ``x.T``.
    """
    attrs = {}
    if transpose_a:
        attrs["transpose_a"] = True
    if transpose_b:
        attrs["transpose_b"] = True
    return apply_op(OPS["matmul"], [as_narray(a, "matmul"), as_narray(b, "matmul")], **attrs)


def reshape(x, shape) -> NArray:
    """``x`` with a new ``shape`` (an int or tuple; one entry may be -1)."""
    x = as_narray(x, "reshape")
    shape = (shape,) if not isinstance(shape, (tuple, list)) else shape
    return apply_op(OPS["reshape"], [x], shape=resolve_shape("reshape", x._node.spec, shape))


def transpose(x, axes=None) -> NArray:
    """``x`` with its dimensions permuted by ``axes`` (reversed when None)."""
    x = as_narray(x, "transpose")
    return apply_op(OPS["transpose"], [x], axes=normalize_axes(x._node.spec, axes))


def expand_dims(x, axis: int) -> NArray:
    """``x`` with a new size-1 dimension at ``axis``."""
    x = as_narray(x, "expand_dims")
    (axis,) = normalize_axis("expand_dims", axis, x.ndim + 1)
    return reshape(x, x.shape[:axis] + (1,) + x.shape[axis:])


def squeeze(x, axis=None) -> NArray:
    """``x`` without its size-1 dimensions (only those in ``axis`` when given)."""
    x = as_narray(x, "squeeze")
    axes = normalize_axis("squeeze", axis, x.ndim)
    axes = tuple(i for i, n in enumerate(x.shape) if n == 1) if axes is None else axes
    if builtins.any(x.shape[i] != 1 for i in axes):
        raise ShapeError(f"squeeze: cannot remove a dimension that is not 1 ({x.shape})")
    return reshape(x, tuple(n for i, n in enumerate(x.shape) if i not in axes))


def _join_inputs(name, arrays) -> list:
    arrays = [as_narray(a, name) for a in arrays]
    if not arrays:
        raise ShapeError(f"{name}: need at least one array")
    return arrays


def concatenate(arrays, axis=0) -> NArray:
    """``arrays`` joined along an existing ``axis`` (flattened first when None)."""
    arrays = _join_inputs("concatenate", arrays)
    if axis is not None:
        (axis,) = normalize_axis("concatenate", axis, arrays[0].ndim)
    return apply_op(OPS["concatenate"], arrays, axis=axis)


def stack(arrays, axis=0) -> NArray:
    """``arrays`` (same shape) joined along a new ``axis``."""
    arrays = _join_inputs("stack", arrays)
    (axis,) = normalize_axis("stack", axis, arrays[0].ndim + 1)
    return apply_op(OPS["stack"], arrays, axis=axis)


def astype(x, dtype) -> NArray:
    """``x`` cast to ``dtype``."""
    from minerva.creation import check_dtype
    return apply_op(OPS["astype"], [as_narray(x, "astype")], dtype=check_dtype(dtype))


def to_device(x: NArray, device) -> NArray:
    """``x`` on ``device``: the value itself when it lives there, else its cached copy."""
    from minerva.system import get_system
    system = get_system()
    system.devices.get(device)
    node = x._node
    target = node if node.device_id == device else system.copy_to(node, device)
    system.engine.retain(target)
    return NArray(target, system.engine)
