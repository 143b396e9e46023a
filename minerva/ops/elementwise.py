"""Elementwise ops: NumPy ufuncs over two arrays, an array and a scalar, or one array;
plus ``where``, ``clip``, ``sigmoid``, ``relu``, ``divmod``, ``astype``, ``round``,
``angle``, real and imaginary parts, ``nan_to_num`` and ``sinc``. Broadcasting and result dtypes
follow NumPy (NEP 50: a Python scalar takes the array's dtype)."""
from __future__ import annotations

import functools
import warnings

import numpy as np

from minerva.ops import dtypes
from minerva.ops.dtypes import numpy_dtype
from minerva.ops.kernels import call
from minerva.ops.registry import ArraySpec, register, shape_error

BINARY = ("add", "subtract", "multiply", "divide", "floor_divide", "remainder", "fmod",
          "power", "float_power", "maximum", "minimum", "fmax", "fmin", "equal", "not_equal",
          "less", "less_equal", "greater", "greater_equal", "bitwise_and", "bitwise_or",
          "bitwise_xor", "left_shift", "right_shift", "arctan2", "hypot", "copysign",
          "logaddexp", "logaddexp2", "logical_and", "logical_or", "logical_xor", "nextafter",
          "heaviside", "gcd", "lcm", "ldexp")
UNARY = ("negative", "positive", "absolute", "fabs", "exp", "exp2", "expm1", "log", "log2",
         "log10", "log1p", "sqrt", "cbrt", "square", "reciprocal", "sign", "sin", "cos",
         "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
         "arctanh", "floor", "ceil", "trunc", "rint", "invert", "logical_not", "isnan",
         "isinf", "isfinite", "signbit", "conjugate", "deg2rad", "rad2deg")


def broadcast_shapes(*shapes: tuple) -> tuple:
    """``numpy.broadcast_shapes`` of shapes (tuples of ints), without its array machinery;
    ValueError when they do not broadcast."""
    result = list(max(shapes, key=len))
    for shape in shapes:
        at = len(result) - len(shape)
        for i, n in enumerate(shape, at):
            size = result[i]
            if n != size:
                if size == 1:
                    result[i] = n
                elif n != 1:
                    raise ValueError(f"shapes {shapes} do not broadcast")
    return tuple(result)


def broadcast_shape(name: str, *specs: ArraySpec) -> tuple:
    """The broadcast shape of ``specs``; ShapeError when they do not broadcast."""
    first = specs[0].shape
    if all(s.shape == first for s in specs):
        return first
    try:
        return broadcast_shapes(*(s.shape for s in specs))
    except ValueError:
        raise shape_error(name, "operands could not be broadcast together", *specs) from None


_WEAK_TYPES = (int, float, complex, bool)


def _binary_infer(name, ufunc):
    cache = {}

    def infer(a, b):
        try:
            dtype = cache[a.dtype, b.dtype]
        except KeyError:
            dtype = cache[a.dtype, b.dtype] = dtypes.result_dtype(name, ufunc, a, b)
        if a.shape == b.shape:
            return (a if dtype == a.dtype else ArraySpec(a.shape, dtype),)
        return (ArraySpec(broadcast_shape(name, a, b), dtype),)
    return infer


def _binary_impl(name):
    kernels = {}   # array module -> its function ``name`` (looked up once per module)

    def impl(xp, a, b, *, out):
        try:
            kernel = kernels[xp]
        except KeyError:
            kernel = kernels[xp] = getattr(xp, name)
        kernel(a, b, out=out)
    impl.kernel_name = name   # the C lean path calls ``numpy.<name>`` as this does
    return impl


def _scalar_infer(name, ufunc):
    cache = {}
    is_power = name == "power"

    def infer(a, *, scalar, reverse):
        kind = type(scalar)
        key = (a.dtype, kind if kind in _WEAK_TYPES else dtypes.cache_key(scalar), reverse)
        try:
            dtype = cache[key]
        except KeyError:
            operands = (scalar, a) if reverse else (a, scalar)
            dtype = cache[key] = dtypes.result_dtype(name, ufunc, *operands)
        if kind is int and a.dtype.kind in "iu":
            dtypes.check_scalar_fits(name, a.dtype, scalar)
        if is_power and not reverse:
            _check_integer_power(a, scalar)
        return (a if dtype == a.dtype else ArraySpec(a.shape, dtype),)
    return infer


def _scalar_impl(name):
    kernels = {}   # array module -> its function ``name`` (looked up once per module)

    def impl(xp, a, *, out, scalar, reverse):
        try:
            kernel = kernels[xp]
        except KeyError:
            kernel = kernels[xp] = getattr(xp, name)
        if reverse:
            kernel(scalar, a, out=out)
        else:
            kernel(a, scalar, out=out)
    impl.kernel_name = name   # the C lean path calls ``numpy.<name>`` as this does
    return impl


def _check_integer_power(base: ArraySpec, exponent) -> None:
    if base.dtype.kind in "biu" and isinstance(exponent, (int, np.integer)) and exponent < 0:
        raise shape_error("power", "integers to negative integer powers are not allowed",
                          base, exponent)


def _unary_infer(name, ufunc):
    def infer(a):
        return (ArraySpec(a.shape, dtypes.result_dtype(name, ufunc, a)),)
    return infer


def _unary_impl(name):
    def impl(xp, a, *, out):
        getattr(xp, name)(a, out=out)
    impl.kernel_name = name   # the C lean path calls ``numpy.<name>`` as this does
    return impl


def _sigmoid_impl(xp, a, *, out):
    xp.negative(a, out=out)
    xp.exp(out, out=out)
    out += 1
    xp.reciprocal(out, out=out)


def _sigmoid_reference(a):
    return 1 / (1 + np.exp(-a))


def _relu_infer(a):
    return (ArraySpec(a.shape, dtypes.result_dtype("relu", np.maximum, a, 0)),)


def _relu_impl(xp, a, *, out):
    xp.maximum(a, 0, out=out)


def mixed_args(layout: tuple, arrays) -> list:
    """Rebuild an argument list: ``layout`` holds scalars, with ``ARRAY`` where the next
    array input goes."""
    arrays = iter(arrays)
    return [next(arrays) if item is ARRAY else item for item in layout]


class _ArraySlot:
    def __repr__(self) -> str:
        return "ARRAY"


ARRAY = _ArraySlot()


def _mixed_infer(name, function):
    def infer(*specs, layout):
        operands = mixed_args(layout, specs)
        dtype = dtypes.result_dtype(name, function, *operands)
        return (ArraySpec(broadcast_shape(name, *specs), dtype),)
    return infer


def _where_impl(xp, *arrays, out, layout):
    cond, x, y = mixed_args(layout, arrays)
    xp.copyto(out, y, casting="unsafe")
    xp.copyto(out, x, casting="unsafe", where=cond.astype(bool, copy=False)
              if hasattr(cond, "astype") else bool(cond))


def _clip_impl(xp, *arrays, out, layout):
    x, low, high = mixed_args(layout, arrays)
    xp.clip(x, low, high, out=out)


_KEYWORD_OUT = frozenset({"maximum", "minimum"})
"""Ufuncs that take ``out`` only by keyword (NumPy deprecates a positional one)."""


def _call(xp, name, operands, out):
    function = getattr(xp, name)
    if name in _KEYWORD_OUT:
        return functools.partial(function, *operands, out=out)
    return functools.partial(function, *operands, out)


def _bind_ufunc(name):
    def bind(xp, arrays, out, **attrs):
        return _call(xp, name, arrays, out)
    return bind


def _bind_scalar(name):
    """The ufunc with its scalar made once into a 0-d array of the dtype NumPy would give
    it (NEP 50: a Python scalar takes the array's kind), and ``out`` passed by position:
    the fastest call a ufunc has."""
    def bind(xp, arrays, out, *, scalar, reverse):
        array = arrays[0]
        if type(scalar) in _WEAK_TYPES:
            scalar = xp.asarray(scalar, dtype=np.result_type(array.dtype, scalar))
        operands = (scalar, array) if reverse else (array, scalar)
        return _call(xp, name, operands, out)
    return bind


def _register_all() -> None:
    for name in BINARY:
        ufunc = getattr(np, name)
        register(name, _binary_infer(name, ufunc), _binary_impl(name),
                 elementwise=True).bind = _bind_ufunc(name)
        register(name + "_scalar", _scalar_infer(name, ufunc), _scalar_impl(name),
                 elementwise=True).bind = _bind_scalar(name)
    for name in UNARY:
        ufunc = getattr(np, name)
        register(name, _unary_infer(name, ufunc), _unary_impl(name),
                 elementwise=True).bind = _bind_ufunc(name)
    register("sigmoid", _unary_infer("sigmoid", _sigmoid_reference), _sigmoid_impl,
             elementwise=True)
    register("relu", _relu_infer, _relu_impl, elementwise=True)
    register("where", _mixed_infer("where", np.where), _where_impl, elementwise=True)
    register("clip", _mixed_infer("clip", np.clip), _clip_impl, elementwise=True)


# ---- divmod: two outputs, the quotient and the remainder --------------------------------------

def _divmod_quotient(*operands):
    return np.divmod(*operands)[0]


_quotient_infer = _binary_infer("divmod", _divmod_quotient)
_quotient_scalar_infer = _scalar_infer("divmod", _divmod_quotient)


def _divmod_infer(a, b):
    (spec,) = _quotient_infer(a, b)
    return spec, spec


def _divmod_scalar_infer(a, *, scalar, reverse):
    (spec,) = _quotient_scalar_infer(a, scalar=scalar, reverse=reverse)
    return spec, spec


def _divmod_impl(xp, a, b, *, out):
    xp.divmod(a, b, out=out)


def _divmod_scalar_impl(xp, a, *, out, scalar, reverse):
    xp.divmod(*((scalar, a) if reverse else (a, scalar)), out=out)


_register_all()
register("divmod", _divmod_infer, _divmod_impl, n_outputs=2, elementwise=True)
register("divmod_scalar", _divmod_scalar_infer, _divmod_scalar_impl, n_outputs=2,
         elementwise=True)


# ---- casts, rounding, complex parts, nan_to_num ----------------------------------------

def _astype_infer(x, *, dtype):
    return (ArraySpec(x.shape, dtypes.cast_dtype(x.dtype, dtype)),)

def _astype_impl(xp, x, *, out, dtype):
    xp.copyto(out, x, casting="unsafe")

def fits(value_shape: tuple, target: tuple) -> bool:
    """Whether a value of ``value_shape`` can be assigned to elements of shape ``target``
    (NumPy broadcasts it, dropping extra leading size-1 axes)."""
    while len(value_shape) > len(target) and value_shape[0] == 1:
        value_shape = value_shape[1:]
    try:
        return broadcast_shapes(value_shape, target) == target
    except ValueError:
        return False

def _numpy_unary_infer(name, function, dtype_attrs=()):
    """The shape rule of an element-wise NumPy function of one array (its dtype NumPy's)."""
    def infer(x, **attrs):
        dtypes.check_supported(name, x)
        probe = {key: attrs[key] for key in dtype_attrs}
        return (ArraySpec(x.shape, numpy_dtype(name, function, x, **probe)),)
    return infer

def _round_impl(xp, x, *, out, decimals):
    out[...] = call(xp, "round", x, decimals)

def _angle_impl(xp, x, *, out, deg):
    out[...] = call(xp, "angle", x, deg=deg)

def _part_impl(xp, x, *, out, part):
    out[...] = getattr(x, part)

def _real_part(x, part):
    return getattr(x, part)

def _nan_to_num_impl(xp, x, *, out, nan, posinf, neginf):
    out[...] = call(xp, "nan_to_num", x, copy=True, nan=nan, posinf=posinf,
                    neginf=neginf)

def _sinc_impl(xp, x, *, out):
    out[...] = call(xp, "sinc", x)


def _set_part_infer(value, *, part, shape, dtype):
    if not fits(value.shape, shape):
        raise shape_error(f"set {part}", f"could not broadcast input array from shape "
                          f"{value.shape} into shape {shape}")
    return (ArraySpec(shape, dtype),)

def _set_part_impl(xp, value, *, out, part, shape, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's ComplexWarning: the imaginary part goes
        getattr(out, part)[...] = value


register("astype", _astype_infer, _astype_impl, elementwise=True)
register("round", _numpy_unary_infer("round", np.round, ("decimals",)), _round_impl,
         elementwise=True)
register("angle", _numpy_unary_infer("angle", np.angle), _angle_impl, elementwise=True)
register("real_part", _numpy_unary_infer("real_part", _real_part, ("part",)), _part_impl,
         elementwise=True)
register("nan_to_num", _numpy_unary_infer("nan_to_num", np.nan_to_num), _nan_to_num_impl,
         elementwise=True)
register("set_part", _set_part_infer, _set_part_impl, elementwise=True)
register("sinc", _numpy_unary_infer("sinc", np.sinc), _sinc_impl, elementwise=True)


# ---- a ufunc called with where= (and the functions the ufunc methods fold) ----------------

_OWN_FUNCTIONS = {"sigmoid": lambda xp, a: 1 / (1 + xp.exp(-a)),
                  "relu": lambda xp, a: xp.maximum(a, 0)}


def ufunc_function(xp, name: str):
    """The element-wise function ``name`` over ``xp``, called on arrays (a new array
    back): ``xp``'s ufunc of that name, or minerva's own (``sigmoid``, ``relu``)."""
    own = _OWN_FUNCTIONS.get(name)
    return getattr(xp, name) if own is None else functools.partial(own, xp)


def _where_call_infer(*specs, name, dtypes, fresh):
    """``specs``: the operands (of the loop's dtypes) and the mask, last; ``dtypes``: the
    outputs' dtypes (the written arrays', or the loop's for fresh results)."""
    shape = broadcast_shape(name, *specs)
    return tuple(ArraySpec(shape, dtype) for dtype in dtypes)


def _where_call_impl(xp, *arrays, out, name, dtypes, fresh):
    """NumPy's ``ufunc(*operands, out=out, where=mask)``: elements where the mask is False
    keep ``out``'s values (a ``fresh`` result holds zeros there)."""
    *operands, mask = arrays
    outs = out if isinstance(out, tuple) else (out,)
    if fresh:
        for o in outs:
            o[...] = 0
    function = getattr(xp, name, None)
    if xp is np and function is not None:  # NumPy skips the masked elements
        function(*operands, out=outs, where=mask, casting="unsafe")
        return
    results = ufunc_function(xp, name)(*operands)
    for o, r in zip(outs, results if isinstance(results, tuple) else (results,)):
        xp.copyto(o, r, where=mask.astype(bool, copy=False), casting="unsafe")


register("ufunc_where", _where_call_infer, _where_call_impl, elementwise=True)
register("ufunc_where2", _where_call_infer, _where_call_impl, n_outputs=2, elementwise=True)
"""A ufunc called with ``where=``: one output (``ufunc_where``), or two (``divmod``)."""
