"""What a jit plan may fuse (``minerva.jit.fusion``), as expression trees independent of
backend: which element-wise ops, on which dtypes (``tree_builder``), and the trees.

A tree is made of ``Leaf`` (the kernel's input ``position``), ``Const`` (a scalar of a
dtype) and ``Node`` (a primitive ``fn`` of ``args``). The primitives are few and each is
one operation a backend states exactly (``minerva.device.cpu.fused`` in numexpr,
``minerva.device.gpu.fused`` in CUDA C):

- ``add sub mul div neg``: IEEE arithmetic, rounded once per operation;
- ``gt ge eq ne or``: comparisons and the or of two booleans (bool results);
- ``where(c, x, y)``;
- ``sqrt abs``: exact (correctly rounded) in every backend;
- ``exp log sin cos tanh expm1 log1p``: transcendental functions, whose last bits may
  differ between backends and NumPy (``INEXACT``).

The minerva ops a kernel may hold are built from these in ``BINARY`` and ``UNARY``
(``maximum`` is NumPy's ``a > b or a is NaN ? a : b``, ``sigmoid`` minerva's
``1 / (exp(-a) + 1)``); ``INTEGER_OK`` lists those fused on integers.
"""
from __future__ import annotations

import numpy as np

INEXACT = frozenset({"exp", "log", "sin", "cos", "tanh", "expm1", "log1p"})
FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
INTS = (np.dtype(np.int32), np.dtype(np.int64))
BOOL = np.dtype(bool)


class Leaf:
    """Input ``position`` of the kernel, of ``dtype``."""

    __slots__ = ("position", "dtype")

    def __init__(self, position: int, dtype):
        self.position = position
        self.dtype = dtype


class Const:
    """A scalar ``value`` of ``dtype`` (a NumPy scalar of it)."""

    __slots__ = ("value", "dtype")

    def __init__(self, value, dtype):
        self.dtype = np.dtype(dtype)
        self.value = self.dtype.type(value)


class Node:
    """Primitive ``fn`` of ``args``, giving ``dtype``."""

    __slots__ = ("fn", "args", "dtype")

    def __init__(self, fn: str, args: tuple, dtype):
        self.fn = fn
        self.args = args
        self.dtype = dtype


def size(tree) -> int:
    """Operations of ``tree`` written out (a shared subtree counts at each use)."""
    if not isinstance(tree, Node):
        return 0
    return 1 + sum(size(a) for a in tree.args)


def depth(tree) -> int:
    """Levels of operations of ``tree``."""
    if not isinstance(tree, Node):
        return 0
    return 1 + max(depth(a) for a in tree.args)


def functions(tree) -> set:
    """The primitives ``tree`` uses."""
    if not isinstance(tree, Node):
        return set()
    return {tree.fn}.union(*(functions(a) for a in tree.args))


def _arith(fn):
    return lambda a, b: Node(fn, (a, b), a.dtype)


def _compare(fn, swap=False):
    return lambda a, b: Node(fn, (b, a) if swap else (a, b), BOOL)


def _extreme(greater: bool):
    def build(a, b):
        first = Node("gt", (a, b) if greater else (b, a), BOOL)
        if a.dtype in FLOATS:
            first = Node("or", (first, Node("ne", (a, a), BOOL)), BOOL)
        return Node("where", (first, a, b), a.dtype)
    return build


def _unary(fn):
    return lambda a: Node(fn, (a,), a.dtype)


def _sigmoid(a):
    one = Const(1, a.dtype)
    shifted = Node("add", (Node("exp", (Node("neg", (a,), a.dtype),), a.dtype), one), a.dtype)
    return Node("div", (one, shifted), a.dtype)


BINARY = {"add": _arith("add"), "subtract": _arith("sub"), "multiply": _arith("mul"),
          "divide": _arith("div"), "maximum": _extreme(True), "minimum": _extreme(False),
          "greater": _compare("gt"), "greater_equal": _compare("ge"),
          "less": _compare("gt", swap=True), "less_equal": _compare("ge", swap=True),
          "equal": _compare("eq"), "not_equal": _compare("ne")}
UNARY = {"negative": _unary("neg"), "absolute": _unary("abs"), "fabs": _unary("abs"),
         "sqrt": _unary("sqrt"), "exp": _unary("exp"), "log": _unary("log"),
         "sin": _unary("sin"), "cos": _unary("cos"), "tanh": _unary("tanh"),
         "expm1": _unary("expm1"), "log1p": _unary("log1p"),
         "square": lambda a: Node("mul", (a, a), a.dtype),
         "reciprocal": lambda a: Node("div", (Const(1, a.dtype), a), a.dtype),
         "relu": lambda a: _extreme(True)(a, Const(0, a.dtype)),
         "sigmoid": _sigmoid}
INTEGER_OK = frozenset({"add", "subtract", "multiply", "negative", "maximum", "minimum",
                        "greater", "greater_equal", "less", "less_equal", "equal",
                        "not_equal", "where"})
"""The ops fused on int32/int64 (NumPy's and the backends' wrapping integer arithmetic
agree; division, remainders, powers and absolute values of integers are never fused)."""


INEXACT_OPS = frozenset({"exp", "log", "sin", "cos", "tanh", "expm1", "log1p", "sigmoid"})
"""The ops whose trees hold a transcendental function (``_scalar`` forms included)."""
COMPARISONS = frozenset({"greater", "greater_equal", "less", "less_equal", "equal",
                         "not_equal"})


def tree_builder(name: str, attrs: dict, in_dtypes: list, out_dtype):
    """A function of the input trees giving the tree of op ``name`` (``attrs``, operands
    of ``in_dtypes``, a result of ``out_dtype``), or None when the op does not fuse:
    its array operands must have one dtype (the result's, or bool for ``where``'s
    condition) and its scalar be finite and computed by NumPy in that dtype."""
    if name == "where":
        return _where_builder(attrs, in_dtypes, out_dtype)
    base = name.removesuffix("_scalar")
    operand = in_dtypes[0] if in_dtypes else None
    if operand is None or not _allowed(base, operand):
        return None
    if any(d != operand for d in in_dtypes) or out_dtype != (
            BOOL if base in COMPARISONS else operand):
        return None
    if name in BINARY and len(in_dtypes) == 2:
        return lambda args: BINARY[name](*args)
    if name in UNARY and len(in_dtypes) == 1:
        if operand not in FLOATS and name != "negative":
            return None
        return lambda args: UNARY[name](*args)
    if name == "power_scalar" and len(in_dtypes) == 1:
        return _power_builder(attrs, operand)
    if name.endswith("_scalar") and base in BINARY and len(in_dtypes) == 1:
        const = _scalar_const(attrs["scalar"], operand)
        if const is None:
            return None
        if attrs["reverse"]:
            return lambda args: BINARY[base](const, args[0])
        return lambda args: BINARY[base](args[0], const)
    return None


POWERS = {2: lambda a: Node("mul", (a, a), a.dtype), 0.5: _unary("sqrt"),
          -1: UNARY["reciprocal"]}
"""The float powers that fuse, by exponent: NumPy's ``power`` loop computes an array to a
scalar power of 2, 0.5 or -1 as ``x * x``, ``sqrt(x)`` and ``1 / x`` (its fast path, NumPy
2.x: so ``x ** 2.0``, which is ``power``, gives the bits of ``square``); other exponents
call the C library's ``pow``, which a numexpr or CUDA kernel would not compute bitwise."""


def _power_builder(attrs, operand):
    """``x ** c`` of a float array ``x`` for a scalar ``c`` of ``POWERS`` (not ``c ** x``)."""
    if attrs["reverse"] or operand not in FLOATS:
        return None
    const = _scalar_const(attrs["scalar"], operand)
    if const is None or const.value.item() not in POWERS:
        return None
    build = POWERS[const.value.item()]
    return lambda args: build(args[0])


def _allowed(name: str, dtype) -> bool:
    """Whether op ``name`` fuses on operands of ``dtype``."""
    if dtype in INTS:
        return name in INTEGER_OK
    return dtype in FLOATS


def _scalar_const(scalar, dtype):
    """``scalar`` as a Const of ``dtype`` when NumPy computes in ``dtype`` with it."""
    if not isinstance(scalar, (int, float, np.integer, np.floating)) or isinstance(
            scalar, (bool, np.bool_)):
        return None
    try:
        if np.result_type(dtype, scalar) != dtype:
            return None
    except (OverflowError, TypeError):
        return None
    if isinstance(scalar, (float, np.floating)) and not np.isfinite(scalar):
        return None
    if dtype.kind in "iu" and not isinstance(scalar, (int, np.integer)):
        return None
    return Const(scalar, dtype)


def is_scalar(item) -> bool:
    """Whether an item of a mixed op's ``layout`` is a scalar (else it is the slot of an
    array input: ``ops.elementwise.ARRAY``)."""
    return isinstance(item, (int, float, complex, np.generic))


def _where_builder(attrs, in_dtypes, out_dtype):
    layout = attrs.get("layout")
    if layout is None or is_scalar(layout[0]) or in_dtypes[0] != BOOL:
        return None
    if not _allowed("where", out_dtype):
        return None
    dtypes = iter(in_dtypes[1:])
    parts = []
    for item in layout[1:]:
        if not is_scalar(item):
            if next(dtypes) != out_dtype:
                return None
            parts.append(None)
        else:
            const = _scalar_const(item, out_dtype)
            if const is None:
                return None
            parts.append(const)

    def build(args):
        arrays = iter(args[1:])
        x, y = (next(arrays) if p is None else p for p in parts)
        return Node("where", (args[0], x, y), out_dtype)
    return build
