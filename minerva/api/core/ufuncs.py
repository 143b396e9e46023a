"""Element-wise functions under NumPy's names (and the array API's), with ``out=``.

Each takes NArrays, NumPy arrays, lists or scalars, broadcasts them by NumPy's rules and
gives NumPy's result dtype (NEP 50: a Python scalar takes the array's dtype). ``out=``
writes into an NArray in place. NumPy's other call keywords (``where``, ``dtype``,
``casting``, ``order``, ``subok``, ``signature``) take the path of ``ufunc_keywords``.
``divmod`` has two outputs (``out=(q, r)``).

Each is a :class:`Ufunc`, as NumPy's are: it has NumPy's ``nin``, ``nout``, ``nargs``,
``identity``, ``ntypes``, ``types``, ``signature``, ``__name__`` and ``__doc__``, and the
five ufunc methods (``ufunc_methods``, ``ufunc_folds``). The comparisons also take what
minerva arrays cannot hold (None, strings, Decimal, out-of-range Python ints) and give
NumPy's answer (``comparisons``).

The functions are the values of ``FUNCTIONS`` (by NumPy's names: the names of
``ops.elementwise.BINARY`` and ``UNARY``, and the ``ALIASES``), which are also this
module's attributes (``ufuncs.add``).
"""
from __future__ import annotations

import dis
import sys
import types

import numpy as np

from minerva.api.core import comparisons, lean, ufunc_keywords
from minerva.api.core.powers import fast_power
from minerva.api.core.ufunc_methods import UfuncMethodError, methods_of
from minerva.builder import SEAM, build, to_narray
from minerva.common import fp_errors
from minerva.common.callsite import user_callsite
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.dtypes import NUMERIC_KINDS, is_scalar
from minerva.ops.elementwise import BINARY, UNARY

_PYTHON_SCALARS = (int, float, bool, complex)


def binary_op(name: str, a, b, out=None, reverse: bool = False):
    """``a <name> b`` (``b <name> a`` when ``reverse``) where ``a`` is an NArray and ``b`` an
    NArray, a scalar or an array-like; NotImplemented for other operand types."""
    kind = type(b)
    if kind is str or kind is bytes:  # NumPy's string scalar (``names + "!"``)
        b = np.asarray(b)[()]
        kind = type(b)
    if kind in _PYTHON_SCALARS or isinstance(b, np.generic):
        return build(_SCALAR_OPS[name], [a], {"scalar": b, "reverse": reverse}, out)
    if kind is NArray:
        return build(_OPS[name], [b, a] if reverse else [a, b], out=out)
    if is_scalar(b):
        return build(_SCALAR_OPS[name], [a], {"scalar": b[()], "reverse": reverse}, out)
    if isinstance(b, (np.ndarray, list, tuple)):
        b = to_narray(b, name)
        return build(_OPS[name], [b, a] if reverse else [a, b], out=out)
    return NotImplemented


def compare(name: str, a, b, out=None, reverse: bool = False, operator_form=False):
    """``binary_op`` for the six comparisons, with NumPy's answer for operands minerva's
    kernels do not take (``comparisons``); ``operator_form``: as ``a == b`` (an
    ``==`` NumPy cannot compute is all False), else as ``numpy.equal(a, b)``."""
    kind = type(b)
    if a.dtype.kind not in NUMERIC_KINDS or (
            kind is NArray and b.dtype.kind not in NUMERIC_KINDS):
        pass  # beyond numbers: NumPy's loops decide (``comparisons``)
    elif kind is int:
        if comparisons.fits(a.dtype, b):
            return binary_op(name, a, b, out, reverse)
    elif kind is NArray or kind in _PYTHON_SCALARS or (
            isinstance(b, np.generic) and b.dtype.kind in NUMERIC_KINDS):
        return binary_op(name, a, b, out, reverse)
    return comparisons.compare(name, a, b, out, reverse, operator_form, binary_op)


def unary_op(name: str, x, out=None):
    """``name(x)`` for an NArray ``x``."""
    return build(_OPS[name], [x], out=out)


# ---- the operators of NArray (``x + y``, ``x += y``, ``x < y``, ``-x``) ----------------------

ELIDE_BYTES = 256 << 10
"""From this size (NumPy's own threshold) an operator's result goes into the buffer of
an operand that is a temporary of the user's expression (``_dying``),
as NumPy elides temporaries: ``(a + b) * c`` writes the product into the sum's buffer, still
in the cache, instead of a fresh one. Same kernels, same bits."""
lean.configure(ELIDE_BYTES)

_BINARY_OP = dis.opmap.get("BINARY_OP")
_ELIDES = sys.implementation.name == "cpython" and sys.version_info[:2] == (3, 11)
"""Temporaries are told by their reference counts, which differ between interpreters:
checked on CPython 3.11 only (elsewhere every result is fresh)."""


def _dying(x: NArray) -> bool:
    """Whether ``x``, an operand of the operator method that called this, is held by
    nothing but the interpreter's stack of the user's ``BINARY_OP``: no name, container,
    view or recording holds it or its storage, so it dies when the operator returns.
    (The references counted: the stack's, the method's ``self``, this function's ``x`` and
    ``getrefcount``'s argument.)"""
    if not _ELIDES or x._view is not None or x._readonly or x._numpy_scalar \
            or x._grad_info is not None or SEAM.hooks:
        return False
    if sys.getrefcount(x) != 4 or sys.getrefcount(x._storage) != 2:
        return False
    caller = sys._getframe(2)
    return caller.f_code.co_code[caller.f_lasti] == _BINARY_OP


def _into_dying(op_def, inputs: list, attrs: dict, target: NArray):
    """``op_def`` over ``inputs`` written into ``target``, one of them and a dying
    temporary, when the result has its shape and dtype (an element-wise op reading exactly
    what it writes); else a fresh result."""
    (spec,) = op_def.infer(*[x._spec for x in inputs], **attrs)
    if spec.shape == target._spec.shape and spec.dtype == target._spec.dtype:
        return build(op_def, inputs, attrs, out=target)
    return build(op_def, inputs, attrs)


def operator_method(name: str):
    """NArray's operator method for ufunc ``name`` (``__add__`` for ``add``): ``x <op> y``
    with a Python scalar, an NArray, or anything ``binary_op`` takes; into the buffer of
    ``x`` or ``y`` when it is a big temporary (``ELIDE_BYTES``)."""
    op, scalar_op = registry.get(name), registry.get(name + "_scalar")
    elides = op.elementwise and scalar_op.elementwise

    def method(self, other):
        kind = type(other)
        if kind is float or kind is int:  # the common cases, without a detour
            attrs = {"scalar": other, "reverse": False}
            if elides and self._spec.nbytes >= ELIDE_BYTES and _dying(self):
                return _into_dying(scalar_op, [self], attrs, self)
            return build(scalar_op, [self], attrs)
        if kind is NArray:
            if elides:
                if self._spec.nbytes >= ELIDE_BYTES and _dying(self):
                    return _into_dying(op, [self, other], {}, self)
                if other._spec.nbytes >= ELIDE_BYTES and _dying(other):
                    return _into_dying(op, [self, other], {}, other)
            return build(op, [self, other])
        return binary_op(name, self, other)
    return lean.operator(method, op, scalar_op, elides)


def comparison_method(name: str):
    """NArray's comparison operator for ufunc ``name`` (``__lt__`` for ``less``), with
    NumPy's answers for operands arrays cannot hold; in C where it can
    (``lean.comparison``)."""
    op, scalar_op = registry.get(name), registry.get(name + "_scalar")

    def method(self, other):
        kind = type(other)
        if self._spec.dtype.kind in NUMERIC_KINDS:  # else NumPy's loops decide (compare)
            if kind is float or kind is int and comparisons.fits(self._spec.dtype, other):
                return build(scalar_op, [self], {"scalar": other, "reverse": False})
            if kind is NArray and other._spec.dtype.kind in NUMERIC_KINDS:
                return build(op, [self, other])
        return compare(name, self, other, operator_form=True)
    return lean.comparison(method, op, scalar_op)


def power_method(in_place: bool = False):
    """NArray's ``__pow__`` (``__ipow__`` when ``in_place``): NumPy's ndarray power, which
    takes ``square``, ``sqrt`` or ``reciprocal`` for some exponents (``powers``)."""
    plain = in_place_method("power") if in_place else operator_method("power")

    def method(self, other):
        fast = None if self._numpy_scalar and not in_place else fast_power(
            self._spec.dtype, other)
        if fast is None:
            return plain(self, other)
        if not in_place:
            return FUNCTIONS[fast](self)   # ``np.square(x)``: in C where it can
        unary_op(fast, self, out=self)
        return self
    method.__name__ = method.__qualname__ = "__ipow__" if in_place else "__pow__"
    return method


def reflected_method(name: str):
    """NArray's reflected operator for ufunc ``name`` (``__radd__``: ``other + x``); with
    a Python scalar, into ``x``'s buffer when ``x`` is a big temporary."""
    op, scalar_op = registry.get(name), registry.get(name + "_scalar")

    def method(self, other):
        kind = type(other)
        if (kind is float or kind is int) and scalar_op.elementwise \
                and self._spec.nbytes >= ELIDE_BYTES and _dying(self):
            return _into_dying(scalar_op, [self], {"scalar": other, "reverse": True}, self)
        return binary_op(name, self, other, reverse=True)
    return lean.operator(method, op, scalar_op, scalar_op.elementwise, reverse=True)


def in_place_method(name: str):
    """NArray's in-place operator for ufunc ``name`` (``__iadd__``: ``x += other`` writes
    into ``x``)."""
    op, scalar_op = registry.get(name), registry.get(name + "_scalar")

    def method(self, other):
        kind = type(other)
        if kind is NArray:   # the common cases, as ``binary_op`` builds them
            build(op, [self, other], out=self)
            return self
        if kind is float or kind is int:
            build(scalar_op, [self], {"scalar": other, "reverse": False}, self)
            return self
        result = binary_op(name, self, other, out=self)
        if result is NotImplemented:
            return NotImplemented
        return self
    method.ufunc_name = name   # its C twin's ops (``lean.in_place``)
    return method


def unary_method(name: str):
    """NArray's unary operator for ufunc ``name`` (``__neg__`` for ``negative``); in C
    where the operator's lean path can run (``lean.unary``)."""
    def method(self):
        return unary_op(name, self)
    return lean.unary(method, _OPS[name])


def _binary_function(name: str):
    apply = compare if name in comparisons.OPERATORS else binary_op

    def positional(x1, x2):
        """``name(x1, x2)`` of an NArray ``x1``, with no ``out=`` and no keywords."""
        result = apply(name, x1, x2)
        if result is NotImplemented:
            raise TypeError(f"{name}: unsupported operand types {type(x1).__name__} and "
                            f"{type(x2).__name__}")
        return result

    def function(x1, x2, /, out=None, **kwargs):
        if out is None and not kwargs and type(x1) is NArray:   # the common call
            return positional(x1, x2)
        if kwargs and not ufunc_keywords.plain(kwargs):
            return ufunc_keywords.call(name, (x1, x2), _every_output(name, out), kwargs)
        out = _outputs(name, out)
        if isinstance(x1, NArray):
            result = apply(name, x1, x2, out)
        elif isinstance(x2, NArray):
            result = apply(name, x2, x1, out, reverse=True)
        else:
            result = apply(name, to_narray(x1, name), x2, out)
        if result is NotImplemented:
            raise TypeError(f"{name}: unsupported operand types {type(x1).__name__} and "
                            f"{type(x2).__name__}")
        return result
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Element-wise ``numpy.{name}`` of two arrays (or an array and a scalar)."
    if name == "divmod":
        function.__doc__ = ("Element-wise ``numpy.divmod``: the quotient and the remainder "
                            "of two arrays (or an array and a scalar), as a tuple.")
    return function


HOST_SCALARS = frozenset((float, complex) + tuple(
    t for t in set(np.sctypeDict.values()) if issubclass(t, (np.number, np.bool_))))
"""The scalar types a one-operand function computes at once on the host, as NumPy: a
Python float or complex, or a NumPy number or bool scalar."""


def on_host(ufunc, x, name: str):
    """``ufunc(x)`` of a host scalar, NumPy's own result, computed now on this thread under
    the caller's error state; what it meets reported at the user's line, as a direct op's
    (``fp_errors.caller_state``)."""
    errstate = fp_errors.caller_state()
    if errstate.quiet:
        return ufunc(x)
    token = fp_errors.DIRECT.set(errstate.direct)
    try:
        result = ufunc(x)
    finally:
        fp_errors.DIRECT.reset(token)
    if fp_errors.DIRECT_RECORDS:
        fp_errors.report(errstate, fp_errors.take_direct_records(), name, user_callsite())
    return result


def _unary_function(name: str):
    op = _OPS[name]
    host = getattr(np, name) if getattr(op.impl, "kernel_name", None) == name else None

    def function(x, /, out=None, **kwargs):
        if out is None and not kwargs:
            if type(x) is NArray and not x._storage.engine.closed:   # the common call
                return build(op, [x])
            if host is not None and type(x) in HOST_SCALARS:   # NumPy's scalar, now
                return on_host(host, x, name)
        if kwargs and not ufunc_keywords.plain(kwargs):
            return ufunc_keywords.call(name, (x,), _every_output(name, out), kwargs)
        return unary_op(name, to_narray(x, name), _outputs(name, out))
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Element-wise ``numpy.{name}``."
    return function


def _outputs(name: str, out):
    """``out=`` as the op takes it: one array (divmod: a pair of arrays), or None."""
    n_outputs = 2 if name == "divmod" else 1
    if out is None or n_outputs == 1 and not isinstance(out, tuple):
        return out
    if not isinstance(out, tuple) or len(out) != n_outputs:
        raise TypeError(f"{name}: out= must hold {n_outputs} array(s), got {out!r}")
    if all(o is None for o in out):
        return None
    if any(o is None for o in out):
        raise TypeError(f"{name}: out= must give every output array, or none")
    return out[0] if n_outputs == 1 else out


def _every_output(name: str, out) -> tuple:
    """``out=`` as one entry per output (None where none is given); TypeError for what is
    not an NArray."""
    n_outputs = 2 if name == "divmod" else 1
    outs = out if isinstance(out, tuple) else (out,) * (n_outputs if out is None else 1)
    if len(outs) != n_outputs:
        raise TypeError(f"{name}: out= must hold {n_outputs} array(s), got {out!r}")
    for o in outs:
        if o is not None and not isinstance(o, NArray):
            raise TypeError(f"{name}: out= must be an NArray, got {type(o).__name__}")
    return outs


class Ufunc:
    """One of minerva's element-wise functions, as NumPy's ufunc of its name: called, it
    runs element-wise; it has NumPy's ``nin``, ``nout``, ``nargs``, ``identity``,
    ``ntypes``, ``types``, ``signature`` and ``__doc__``, and the methods ``reduce``,
    ``accumulate``, ``reduceat``, ``outer`` and ``at``."""

    def __init__(self, name: str, function, attributes: dict):
        self.__name__ = self.__qualname__ = name
        self.__wrapped__ = function  # inspect.signature finds the parameters there
        for key, value in attributes.items():
            setattr(self, key, value)
        for method, implementation in methods_of(name, self, self.nin, self.nout).items():
            setattr(self, method, implementation)

    def __get__(self, array, owner=None):
        """As a function's: bound to the array when installed as an NArray method
        (``x.conj()``)."""
        return self if array is None else types.MethodType(self, array)

    def __repr__(self) -> str:
        return f"<minerva ufunc '{self.__name__}'>"

    def __reduce__(self) -> str:
        return self.__name__


def _attributes(name: str) -> dict:
    """NumPy's attributes of ufunc ``name``; for minerva's own (``sigmoid``, ``relu``),
    those of a one-operand ufunc with their loops."""
    numpy_ufunc = getattr(np, name, None)
    if isinstance(numpy_ufunc, np.ufunc):
        return {key: getattr(numpy_ufunc, key) for key in _NUMPY_ATTRIBUTES}
    like = np.tanh if name == "sigmoid" else np.positive
    loops = list(dict.fromkeys(t for t in like.types if "O" not in t))
    loops = (["?->?"] if name == "relu" else []) + loops
    return {"nin": 1, "nout": 1, "nargs": 2, "identity": None, "signature": None,
            "types": loops, "ntypes": len(loops)}


_NUMPY_ATTRIBUTES = ("nin", "nout", "nargs", "ntypes", "types", "identity", "signature")


def _ufunc(name: str, function, unary=None) -> Ufunc:
    """The Ufunc ``name`` that calls ``function`` (its own class's ``__call__``: a call
    costs one Python call more than the function's), with NumPy's docstring; for a
    one-operand op ``unary``, ``f(x)`` of an NArray runs in C where it can
    (``lean.unary``: then the call costs no Python call), as ``f(x, y)`` of a two-operand
    one but the comparisons does, where the operator ``x + y`` would, and ``f(2.0, x)``
    where ``2.0 + x`` would (``lean.operator``, ``swaps``)."""
    numpy_ufunc = getattr(np, name, None)
    doc = numpy_ufunc.__doc__ if isinstance(numpy_ufunc, np.ufunc) else function.__doc__
    if unary is not None:
        call = lean.unary(function, unary)
    elif name in _SCALAR_OPS and name not in comparisons.OPERATORS:
        call = lean.operator(function, _OPS[name], _SCALAR_OPS[name], False, swaps=True)
    else:
        call = function
    kind = type(name, (Ufunc,), {"__call__": staticmethod(call), "__doc__": doc,
                                 "__module__": __name__})
    return kind(name, function, _attributes(name))


_OPS = {name: registry.get(name) for name in BINARY + UNARY + ("sigmoid", "relu", "divmod")}
_SCALAR_OPS = {name: registry.get(name + "_scalar") for name in BINARY + ("divmod",)}
FUNCTIONS = {name: _ufunc(name, _binary_function(name)) for name in BINARY + ("divmod",)}
FUNCTIONS.update({name: _ufunc(name, _unary_function(name), _OPS[name])
                  for name in UNARY + ("sigmoid", "relu")})
ALIASES = {
    "abs": "absolute", "true_divide": "divide", "mod": "remainder", "pow": "power",
    "conj": "conjugate", "acos": "arccos", "asin": "arcsin", "atan": "arctan",
    "atan2": "arctan2", "acosh": "arccosh", "asinh": "arcsinh", "atanh": "arctanh",
    "bitwise_not": "invert", "bitwise_invert": "invert", "bitwise_left_shift": "left_shift",
    "bitwise_right_shift": "right_shift", "degrees": "rad2deg", "radians": "deg2rad",
}
FUNCTIONS.update({alias: FUNCTIONS[name] for alias, name in ALIASES.items()})
"""Every element-wise function by name (NumPy's names and their aliases)."""


def __getattr__(name: str):
    """The element-wise function ``name`` (``ufuncs.add``), from ``FUNCTIONS``."""
    try:
        return FUNCTIONS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}",
                             name=name) from None


def __dir__() -> list:
    return sorted(set(globals()) | set(FUNCTIONS))

ufunc = Ufunc
"""The class of minerva's element-wise functions (``isinstance(mv.add, mv.ufunc)``)."""

__all__ = sorted(FUNCTIONS) + ["binary_op", "unary_op", "ufunc", "UfuncMethodError"]
