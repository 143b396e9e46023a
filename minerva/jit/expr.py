"""The expression trees of fused kernels (``minerva.jit.fusion``), independent of backend.

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
