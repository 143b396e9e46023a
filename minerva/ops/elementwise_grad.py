"""Gradient rules of the element-wise ops (``ops.elementwise``), over the injected
namespace ``ns``. Broadcast inputs get their gradient summed back to their shape.

``maximum``/``minimum`` (and ``fmax``/``fmin``, ``clip``): on a tie the gradient goes to
the first argument. Comparisons, bitwise and logical ops, and ops whose result is
piecewise constant (``sign``, ``floor``, ``ceil``, ``trunc``, ``rint``, ``floor_divide``,
``round``, ``angle``) have no gradient: asking one through them is an error; so do ufuncs
called with ``where=`` (``ufunc_where``). ``nan_to_num``
is the identity where its input is finite; the real and imaginary parts take the part of
the gradient back; ``sinc``'s is ``(cos(pi x) - sinc(x)) / x`` (0 at 0).
"""
from __future__ import annotations

import math

from minerva.ops.elementwise import ARRAY
from minerva.ops.grad_util import unbroadcast
from minerva.ops.registry import defvjp, nondifferentiable


def _both(ns, ctx, ga, gb):
    a, b = ctx.in_specs
    return [None if ga is None else unbroadcast(ns, ga, a.shape),
            None if gb is None else unbroadcast(ns, gb, b.shape)]


def _const(x):
    """``x`` cut from the recording: what a rule passes to an op without a gradient
    (``sign``, ``floor``), so that the rule's own ops can be differentiated again
    (``create_graph``) and the cut op contributes zero, as it should."""
    return x.detach()


def _inputs(ctx):
    return ctx.inputs[0], ctx.inputs[1]


# ---- binary ---------------------------------------------------------------------------

def _add(ns, ctx, g):
    return _both(ns, ctx, g[0], g[0])


def _subtract(ns, ctx, g):
    return _both(ns, ctx, g[0], -g[0])


def _multiply(ns, ctx, g):
    a, b = _inputs(ctx)
    return _both(ns, ctx, g[0] * ns.conj(b), g[0] * ns.conj(a))


def _divide(ns, ctx, g):
    a, b = _inputs(ctx)
    ga = g[0] / ns.conj(b)
    return _both(ns, ctx, ga, -ga * ns.conj(a / b))


def _power(ns, ctx, g):
    a, b = _inputs(ctx)
    out = ctx.outputs[0]
    ga = g[0] * b * a ** (b - 1)
    gb = g[0] * out * ns.log(ns.where(a > 0, a, 1))
    return _both(ns, ctx, ga, gb)


def _maximum(ns, ctx, g):
    a, b = _inputs(ctx)
    first = a >= b
    return _both(ns, ctx, ns.where(first, g[0], 0), ns.where(first, 0, g[0]))


def _minimum(ns, ctx, g):
    a, b = _inputs(ctx)
    first = a <= b
    return _both(ns, ctx, ns.where(first, g[0], 0), ns.where(first, 0, g[0]))


def _remainder(ns, ctx, g):
    a, b = _inputs(ctx)
    return _both(ns, ctx, g[0], -g[0] * ns.floor(_const(a / b)))


def _fmod(ns, ctx, g):
    a, b = _inputs(ctx)
    return _both(ns, ctx, g[0], -g[0] * ns.trunc(_const(a / b)))


def _arctan2(ns, ctx, g):
    a, b = _inputs(ctx)
    scale = g[0] / (a * a + b * b)
    return _both(ns, ctx, scale * b, -scale * a)


def _hypot(ns, ctx, g):
    a, b = _inputs(ctx)
    out = ctx.outputs[0]
    return _both(ns, ctx, g[0] * a / out, g[0] * b / out)


def _logaddexp(ns, ctx, g):
    a, b = _inputs(ctx)
    out = ctx.outputs[0]
    return _both(ns, ctx, g[0] * ns.exp(a - out), g[0] * ns.exp(b - out))


def _logaddexp2(ns, ctx, g):
    a, b = _inputs(ctx)
    out = ctx.outputs[0]
    return _both(ns, ctx, g[0] * ns.exp2(a - out), g[0] * ns.exp2(b - out))


def _copysign(ns, ctx, g):
    a, b = _inputs(ctx)
    sign_b = ns.where(ns.signbit(b), -1.0, 1.0)
    return _both(ns, ctx, g[0] * ns.sign(_const(a)) * sign_b, None)


_BINARY = {
    "add": (_add, (), ()), "subtract": (_subtract, (), ()),
    "multiply": (_multiply, (0, 1), ()), "divide": (_divide, (0, 1), ()),
    "power": (_power, (0, 1), (0,)), "float_power": (_power, (0, 1), (0,)),
    "maximum": (_maximum, (0, 1), ()), "minimum": (_minimum, (0, 1), ()),
    "fmax": (_maximum, (0, 1), ()), "fmin": (_minimum, (0, 1), ()),
    "remainder": (_remainder, (0, 1), ()), "fmod": (_fmod, (0, 1), ()),
    "arctan2": (_arctan2, (0, 1), ()), "hypot": (_hypot, (0, 1), (0,)),
    "logaddexp": (_logaddexp, (0, 1), (0,)), "logaddexp2": (_logaddexp2, (0, 1), (0,)),
    "copysign": (_copysign, (0, 1), ()),
}


# ---- an array and a scalar ------------------------------------------------------------

def _scalar_rule(name):
    forward, reverse_rule = _SCALAR[name]
    reads = (name not in _NO_OPERAND[0], name not in _NO_OPERAND[1])

    def rule(ns, ctx, g):
        reverse = ctx.attrs["reverse"]
        a = ctx.inputs[0] if reads[reverse] else None
        function = reverse_rule if reverse else forward
        return [function(ns, g[0], a, ctx.attrs["scalar"])]
    return rule


_NO_OPERAND = ({"add", "subtract", "multiply", "divide", "remainder", "fmod"},
               {"add", "subtract", "multiply", "copysign"})
"""The scalar rules that do not read the array operand: of ``op(a, s)``, of
``op(s, a)``."""


def _max_rule(first):
    return lambda ns, g, a, s: ns.where(a >= s if first else a > s, g, 0)


def _min_rule(first):
    return lambda ns, g, a, s: ns.where(a <= s if first else a < s, g, 0)


def _same(ns, g, a, s):
    return g


def _power(ns, g, a, s):
    return g * s * a ** (s - 1)


def _power_reverse(ns, g, a, s):
    return g * s ** a * math.log(s)


def _hypot(ns, g, a, s):
    return g * a / ns.hypot(a, s)


def _logaddexp(ns, g, a, s):
    return g * ns.exp(a - ns.logaddexp(a, s))


def _logaddexp2(ns, g, a, s):
    return g * ns.exp2(a - ns.logaddexp2(a, s))


def _atan2(ns, g, a, s):
    return g * s / (a * a + s * s)


_SCALAR = {
    # name: (gradient of op(a, s), gradient of op(s, a)), each f(ns, g, a, s)
    "add": (_same, _same),
    "subtract": (_same, lambda ns, g, a, s: -g),
    "multiply": (lambda ns, g, a, s: g * s, lambda ns, g, a, s: g * s),
    "divide": (lambda ns, g, a, s: g / s, lambda ns, g, a, s: -g * s / (a * a)),
    "power": (_power, _power_reverse), "float_power": (_power, _power_reverse),
    "maximum": (_max_rule(True), _max_rule(False)),
    "fmax": (_max_rule(True), _max_rule(False)),
    "minimum": (_min_rule(True), _min_rule(False)),
    "fmin": (_min_rule(True), _min_rule(False)),
    "remainder": (_same, lambda ns, g, a, s: -g * ns.floor(_const(s / a))),
    "fmod": (_same, lambda ns, g, a, s: -g * ns.trunc(_const(s / a))),
    "arctan2": (_atan2, lambda ns, g, a, s: -_atan2(ns, g, a, s)),
    "hypot": (_hypot, _hypot), "logaddexp": (_logaddexp, _logaddexp),
    "logaddexp2": (_logaddexp2, _logaddexp2),
    "copysign": (lambda ns, g, a, s: g * ns.sign(_const(a)) * math.copysign(1.0, s),
                 lambda ns, g, a, s: None),
}
"""Each array-and-scalar rule. A rule saves the array operand only, and reads it only
where it needs it (``y /= 2`` then needs nothing that the write overwrote); a result it
needs is recomputed, so writing into the result of ``x ** 2`` is fine. On a tie
``maximum``/``minimum`` give the gradient to the first argument; ``copysign(s, x)`` is
piecewise constant in ``x`` (no gradient flows to it)."""


# ---- one array ---------------------------------------------------------------------------

_LN2, _LN10 = math.log(2.0), math.log(10.0)

_UNARY = {
    "negative": (lambda ns, a, y, g: -g, False, False),
    "positive": (lambda ns, a, y, g: g, False, False),
    "conjugate": (lambda ns, a, y, g: ns.conj(g), False, False),
    "absolute": (lambda ns, a, y, g: g * ns.sign(_const(a)), True, False),
    "fabs": (lambda ns, a, y, g: g * ns.sign(_const(a)), True, False),
    "exp": (lambda ns, a, y, g: g * y, False, True),
    "exp2": (lambda ns, a, y, g: g * y * _LN2, False, True),
    "expm1": (lambda ns, a, y, g: g * (y + 1), False, True),
    "log": (lambda ns, a, y, g: g / a, True, False),
    "log2": (lambda ns, a, y, g: g / (a * _LN2), True, False),
    "log10": (lambda ns, a, y, g: g / (a * _LN10), True, False),
    "log1p": (lambda ns, a, y, g: g / (a + 1), True, False),
    "sqrt": (lambda ns, a, y, g: g / (2 * y), False, True),
    "cbrt": (lambda ns, a, y, g: g / (3 * y * y), False, True),
    "square": (lambda ns, a, y, g: g * 2 * a, True, False),
    "reciprocal": (lambda ns, a, y, g: -g * y * y, False, True),
    "sin": (lambda ns, a, y, g: g * ns.cos(a), True, False),
    "cos": (lambda ns, a, y, g: -g * ns.sin(a), True, False),
    "tan": (lambda ns, a, y, g: g * (1 + y * y), False, True),
    "arcsin": (lambda ns, a, y, g: g / ns.sqrt(1 - a * a), True, False),
    "arccos": (lambda ns, a, y, g: -g / ns.sqrt(1 - a * a), True, False),
    "arctan": (lambda ns, a, y, g: g / (1 + a * a), True, False),
    "sinh": (lambda ns, a, y, g: g * ns.cosh(a), True, False),
    "cosh": (lambda ns, a, y, g: g * ns.sinh(a), True, False),
    "tanh": (lambda ns, a, y, g: g * (1 - y * y), False, True),
    "arcsinh": (lambda ns, a, y, g: g / ns.sqrt(a * a + 1), True, False),
    "arccosh": (lambda ns, a, y, g: g / ns.sqrt(a * a - 1), True, False),
    "arctanh": (lambda ns, a, y, g: g / (1 - a * a), True, False),
    "deg2rad": (lambda ns, a, y, g: g * (math.pi / 180), False, False),
    "rad2deg": (lambda ns, a, y, g: g * (180 / math.pi), False, False),
    "sigmoid": (lambda ns, a, y, g: g * y * (1 - y), False, True),
    "relu": (lambda ns, a, y, g: ns.nn.relu_backward(g, a), True, False),
}


def _unary_rule(function):
    def rule(ns, ctx, g):
        return [function(ns, ctx.inputs[0], ctx.outputs[0], g[0])]
    return rule


# ---- where, clip, casts, copies ----------------------------------------------------------

def _mixed_slots(layout) -> list:
    """For each layout entry: its input position when it is an array, else None."""
    slots, n = [], 0
    for item in layout:
        slots.append(n if item is ARRAY else None)
        n += item is ARRAY
    return slots


def _where(ns, ctx, g):
    slots = _mixed_slots(ctx.attrs["layout"])
    cond = ctx.inputs[slots[0]]
    grads = [None] * len(ctx.in_specs)
    for position, keep in ((slots[1], True), (slots[2], False)):
        if position is not None:
            part = ns.where(cond, g[0], 0) if keep else ns.where(cond, 0, g[0])
            grads[position] = unbroadcast(ns, part, ctx.in_specs[position].shape)
    return grads


def _clip(ns, ctx, g):
    slots = _mixed_slots(ctx.attrs["layout"])
    layout = ctx.attrs["layout"]
    x = ctx.inputs[slots[0]]
    low = ctx.inputs[slots[1]] if slots[1] is not None else layout[1]
    high = ctx.inputs[slots[2]] if slots[2] is not None else layout[2]
    below = x < low if low is not None else None
    above = x > high if high is not None else None
    inside = g[0]
    grads = [None] * len(ctx.in_specs)
    for mask, slot in ((below, slots[1]), (above, slots[2])):
        if mask is not None:
            inside = ns.where(mask, 0, inside)
            if slot is not None:
                grads[slot] = unbroadcast(ns, ns.where(mask, g[0], 0),
                                          ctx.in_specs[slot].shape)
    grads[slots[0]] = inside
    return grads


def _astype(ns, ctx, g):
    return [ns.astype(g[0], ctx.in_specs[0].dtype)]


def _nan_to_num(ns, ctx, g):
    """The identity where the input is finite; the replaced NaNs and infinities are
    constants."""
    return [ns.where(ns.isfinite(ctx.inputs[0]), g[0], 0)]

def _real_part(ns, ctx, g):
    spec = ctx.in_specs[0]
    if ctx.attrs["part"] == "real":
        return [ns.astype(g[0], spec.dtype)]
    if spec.dtype.kind == "c":
        return [ns.astype(g[0], spec.dtype) * 1j]
    return [ns.zeros(spec.shape, dtype=spec.dtype)]


def _sinc(ns, ctx, g):
    """``(cos(pi x) - sinc(x)) / x``, and 0 at ``x = 0`` (where sinc is flat)."""
    x, y = ctx.inputs[0], ctx.outputs[0]
    zero = x == 0
    slope = (ns.cos(math.pi * x) - y) / ns.where(zero, 1, x)
    return [g[0] * ns.where(zero, 0, slope)]


def _register_all() -> None:
    for name, (rule, ins, outs) in _BINARY.items():
        defvjp(name, rule, ins, outs)
    for name in _SCALAR:
        defvjp(name + "_scalar", _scalar_rule(name), (0,))
    for name, (function, needs_a, needs_y) in _UNARY.items():
        defvjp(name, _unary_rule(function), (0,) if needs_a else (), (0,) if needs_y else ())
    defvjp("where", _where, (0,))
    defvjp("clip", _clip, (0, 1, 2))
    defvjp("astype", _astype)
    defvjp("nan_to_num", _nan_to_num, (0,))
    defvjp("real_part", _real_part)
    defvjp("sinc", _sinc, (0,), (0,))
    nondifferentiable(
        "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
        "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
        "logical_and", "logical_or", "logical_xor", "logical_not", "invert", "isnan",
        "isinf", "isfinite", "signbit", "sign", "floor", "ceil", "trunc", "rint",
        "floor_divide", "nextafter", "heaviside", "gcd", "lcm", "ldexp", "round", "angle",
        "ufunc_where", "ufunc_where2")
    nondifferentiable(*(n + "_scalar" for n in (
        "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
        "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
        "logical_and", "logical_or", "logical_xor", "floor_divide", "nextafter",
        "heaviside", "gcd", "lcm", "ldexp")))


_register_all()
