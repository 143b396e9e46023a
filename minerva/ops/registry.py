"""The op registry: each op is a shape rule (``infer``) plus a kernel (``impl``).

``infer(*in_specs, **attrs) -> tuple[ArraySpec, ...]`` runs on the user's thread and raises
:class:`ShapeError` for bad input. ``impl(xp, *inputs, out, **attrs)`` runs on a device with
``xp`` the array module (``numpy`` or ``cupy``) and writes its result into ``out`` (one array,
or a tuple of arrays for ops with several outputs). One implementation serves every device.
"""
from __future__ import annotations

import copy

import math
from typing import Any, Callable

import numpy as np

from minerva.common.errors import ShapeError


class ArraySpec:
    """Shape, dtype and byte size of an array that does not exist yet (immutable)."""

    __slots__ = ("shape", "dtype", "nbytes")

    def __init__(self, shape: tuple, dtype):
        if not isinstance(dtype, np.dtype):
            dtype = np.dtype(dtype)
        self.shape = shape
        self.dtype = dtype
        self.nbytes = math.prod(shape) * dtype.itemsize

    def __eq__(self, other) -> bool:
        return (isinstance(other, ArraySpec) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"ArraySpec(shape={self.shape}, dtype={self.dtype})"


class OpDef:
    """One registered op: its name, shape rule, kernel and number of outputs.

    ``elementwise`` ops compute each output element from the input elements at the same
    (broadcast) position only: they may write into an input they read through the same
    view, and into an ``out=`` their inputs broadcast to. ``vjp`` is the op's gradient rule
    (None: not differentiable). ``tiny_inline``: when it touches few bytes, the op may run
    on the thread that finds it ready (minerva's own ops; an op registered from outside,
    which might block, always runs on its device's thread). ``bind(xp, arrays, out,
    **attrs)``, when set, returns a callable of no arguments that runs the kernel on those
    arrays (a jit replay calls it again and again: one C call for a ufunc). A
    ``deferred`` op's kernel gets ``done`` too: it hands its work to another thread (the
    communication thread of ``minerva.distributed``) and returns; that thread calls
    ``done(exc=None)`` once the work is finished, and only then is the op complete.
    ``row_split``: the indices of the inputs whose axis 0 is the output's axis 0, when
    output row ``i`` depends on row ``i`` of those alone (and on the whole of the other
    inputs): a CPU device may then run the kernel as row ranges side by side
    (``minerva.device.cpu.split``; ``elementwise`` ops are row-split without it).
    ``row_sum``: the output is instead the sum over rows of the ``row_split`` inputs (a
    filter gradient): the ranges' partial outputs are added in range order. ``nested``:
    the kernel runs other ops' kernels (a jit replay); the device passes itself as
    ``device=`` (the replay runs through its interface: ``view``, ``routes_kernel``,
    ``run_kernel``) and, while a trace records, ``trace(name, created_at, t0_ns, t1_ns)``
    to time each of them. ``blas``: the kernel calls BLAS or LAPACK (products, solvers, the
    convolutions): a CPU device runs it holding its BLAS thread count
    (``minerva.device.cpu.blas``), so its bits never depend on what other threads run."""

    __slots__ = ("name", "infer", "impl", "n_outputs", "priority", "elementwise", "vjp",
                 "tiny_inline", "bind", "deferred", "row_split", "row_sum", "nested", "blas")

    def __init__(self, name: str, infer: Callable, impl: Callable, n_outputs: int = 1,
                 priority: int = 0, elementwise: bool = False):
        self.name = name
        self.infer = infer
        self.impl = impl
        self.n_outputs = n_outputs
        self.priority = priority
        self.elementwise = elementwise
        self.vjp = None
        self.tiny_inline = False
        self.bind = None
        self.deferred = False
        self.row_split = None
        self.row_sum = False
        self.nested = False
        self.blas = False

    def __repr__(self) -> str:
        return f"OpDef({self.name!r})"

    def twin(self, impl: Callable) -> "OpDef":
        """A copy of this op, not registered, whose kernel is ``impl``: the same name,
        shape rule and flags (no ``bind``), for a path that runs the op another way."""
        other = copy.copy(self)
        other.impl, other.bind = impl, None
        return other


_REGISTRY: dict[str, OpDef] = {}


def register(name: str, infer: Callable, impl: Callable, n_outputs: int = 1,
             priority: int = 0, elementwise: bool = False) -> OpDef:
    """Register op ``name``; a name can be registered once."""
    if name in _REGISTRY:
        raise ValueError(f"op {name!r} is already registered")
    op = OpDef(name, infer, impl, n_outputs, priority, elementwise)
    _REGISTRY[name] = op
    return op


class VJP:
    """An op's gradient rule: ``rule(ns, ctx, grads) -> input grads``.

    ``ns`` is the public array namespace (injected, as ``xp`` is into kernels: the ops
    layer imports nothing above it); ``ctx`` holds ``attrs``, ``in_specs``, ``out_specs``
    and the saved ``inputs``/``outputs`` (NArrays; only those listed in ``save_inputs`` and
    ``save_outputs`` are kept, the others are None); ``grads`` has one gradient per output
    (None where none flowed). The rule returns one gradient (or None) per input."""

    __slots__ = ("rule", "save_inputs", "save_outputs")

    def __init__(self, rule: Callable, save_inputs=(), save_outputs=()):
        self.rule = rule
        self.save_inputs = tuple(save_inputs)
        self.save_outputs = tuple(save_outputs)


def defvjp(name: str, rule: Callable, save_inputs=(), save_outputs=()) -> None:
    """Give op ``name`` its gradient rule (see :class:`VJP`); ``save_inputs`` and
    ``save_outputs`` are the indices of the values the rule reads."""
    _REGISTRY[name].vjp = VJP(rule, save_inputs, save_outputs)


NO_GRADIENT = VJP(None)
"""The rule of ops that have no gradient (comparisons, argmax): asking a gradient through
one is an error that names it."""


def nondifferentiable(*op_names) -> None:
    """Mark ops as having no gradient."""
    for name in op_names:
        _REGISTRY[name].vjp = NO_GRADIENT


def allow_inline(op_names) -> None:
    """Let the ops named run on the thread that finds them ready when they are tiny
    (``OpDef.tiny_inline``): done for minerva's own op families once they are registered."""
    for name in op_names:
        _REGISTRY[name].tiny_inline = True


def use_blas(op_names) -> None:
    """Mark the ops named as calling BLAS or LAPACK (``OpDef.blas``)."""
    for name in op_names:
        _REGISTRY[name].blas = True


def memoize_infer(op_names, limit: int = 4096) -> None:
    """Give the ops named a shape rule that remembers its answers (``memoized``): for ops
    whose rule is a pure function of the input specs and attributes and costs more than
    looking it up (products, reductions, indexing, the one-operand element-wise ops)."""
    for name in op_names:
        op = _REGISTRY[name]
        op.infer = memoized(op.infer, limit)


def memoized(infer: Callable, limit: int = 4096) -> Callable:
    """``infer`` remembering its results per (input shapes and dtypes, attributes), up to
    ``limit`` of them (then it starts afresh); a call it cannot key (an attribute that is
    not a plain value, ``memo_key``, or cannot be hashed) or that raises is never
    remembered."""
    memo: dict = {}

    def rule(*specs, **attrs):
        key = memo_key(specs, attrs)
        if key is None:
            return infer(*specs, **attrs)
        try:
            found = memo.get(key)
        except TypeError:   # a value that cannot be hashed (a record, ``np.void``)
            return infer(*specs, **attrs)
        if found is None:
            found = infer(*specs, **attrs)
            if _plain_shapes(found):   # (3,) == (np.int64(3),): kept only of Python ints
                if len(memo) >= limit:
                    memo.clear()
                memo[key] = found
        return found
    rule.__wrapped__ = infer
    rule.memo = memo
    return rule


def _plain_shapes(specs) -> bool:
    """Whether every spec of a rule's answer has a shape of Python ints (a NumPy integer
    equals its int, so a remembered answer would be handed to calls of either)."""
    for spec in specs:
        for n in getattr(spec, "shape", ()):
            if type(n) is not int:
                return False
    return True


_PLAIN = frozenset({int, float, bool, complex, str, bytes, type(None)})
_UNKEYED = object()


def memo_key(specs: tuple, attrs: dict):
    """A key telling apart every call of a shape rule that may answer differently: each
    spec's shape and dtype, each attribute's name, type and value (so ``1``, ``1.0`` and
    ``True`` differ); None when an argument is not a spec or an attribute is not a plain
    value (``_value_key``)."""
    key = []
    for spec in specs:
        if type(spec) is not ArraySpec:
            return None
        key.append(spec.shape)
        key.append(spec.dtype)
    if not attrs:
        return tuple(key)
    values = tuple(attrs.values())
    kinds = tuple(map(type, values))
    if _PLAIN.issuperset(kinds):   # plain values alone: their types tell them apart
        key += (tuple(attrs), values, kinds)
        return tuple(key)
    for name, value in attrs.items():
        item = _value_key(value)
        if item is _UNKEYED:
            return None
        key.append(name)
        key.append(item)
    return tuple(key)


def _value_key(value):
    """``value`` as a key with its type (tuples and slices item by item; dtypes, NumPy
    scalars and objects compared by identity as they are), or ``_UNKEYED``."""
    kind = type(value)
    if kind in _PLAIN:
        return kind, value
    if kind is tuple:
        for v in value:
            if type(v) is not int:
                break
        else:   # axes, shapes: ints alone
            return tuple, value
        items = []
        for v in value:
            item = _value_key(v)
            if item is _UNKEYED:
                return _UNKEYED
            items.append(item)
        return tuple, tuple(items)
    if kind is slice:
        items = (_value_key(value.start), _value_key(value.stop), _value_key(value.step))
        return _UNKEYED if any(item is _UNKEYED for item in items) else (slice, items)
    if isinstance(value, (np.dtype, np.generic)) or (
            kind.__eq__ is object.__eq__ and kind.__hash__ is object.__hash__):
        return kind, value
    return _UNKEYED


def get(name: str) -> OpDef:
    """The op registered as ``name``."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no op named {name!r}") from None


def names() -> list[str]:
    """Names of every registered op, sorted."""
    return sorted(_REGISTRY)


def spec(shape, dtype) -> ArraySpec:
    """An ArraySpec with a tuple shape of Python ints and a NumPy dtype."""
    return ArraySpec(tuple(int(n) for n in shape), np.dtype(dtype))


def shape_error(op: str, message: str, *specs: Any) -> ShapeError:
    """A ShapeError whose message names the op and the offending shapes and dtypes."""
    shown = ", ".join(_describe(s) for s in specs)
    return ShapeError(f"{op}: {message}" + (f" (got {shown})" if shown else ""))


def _describe(item: Any) -> str:
    if isinstance(item, ArraySpec):
        return f"{item.shape} {item.dtype}"
    return repr(item)
