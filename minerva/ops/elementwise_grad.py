"""Gradient rules of the element-wise ops (``ops.elementwise``), over the injected
namespace ``ns``. Broadcast inputs get their gradient summed back to their shape.

``maximum``/``minimum`` (and ``fmax``/``fmin``, ``clip``): on a tie the gradient goes to
the first argument. Comparisons, bitwise and logical ops, and ops whose result is
piecewise constant (``sign``, ``floor``, ``ceil``, ``trunc``, ``rint``, ``floor_divide``)
have no gradient: asking one through them is an error.
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
    return _both(ns, ctx, g[0], -g[0] * ns.floor(a / b))


def _fmod(ns, ctx, g):
    a, b = _inputs(ctx)
    return _both(ns, ctx, g[0], -g[0] * ns.trunc(a / b))


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
    return _both(ns, ctx, g[0] * ns.sign(a) * ns.where(ns.signbit(b), -1.0, 1.0), None)


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
    def rule(ns, ctx, g):
        s, reverse = ctx.attrs["scalar"], ctx.attrs["reverse"]
        a = ctx.inputs[0]
        return [_scalar_grad(ns, name, g[0], a, s, reverse, ctx.outputs[0])]
    return rule


def _scalar_grad(ns, name, g, a, s, reverse, out):
    if name in ("add", "subtract"):
        return -g if name == "subtract" and reverse else g
    if name == "multiply":
        return g * s
    if name == "divide":
        return -g * s / (a * a) if reverse else g / s
    if name in ("power", "float_power"):
        return g * out * math.log(s) if reverse else g * s * a ** (s - 1)
    if name in ("maximum", "fmax"):
        return ns.where(a >= s if not reverse else a > s, g, 0)
    if name in ("minimum", "fmin"):
        return ns.where(a <= s if not reverse else a < s, g, 0)
    if name == "remainder":
        return -g * ns.floor(s / a) if reverse else g
    raise NotImplementedError(name)


_SCALAR = ("add", "subtract", "multiply", "divide", "power", "float_power", "maximum",
           "minimum", "fmax", "fmin", "remainder")


# ---- one array ---------------------------------------------------------------------------

_LN2, _LN10 = math.log(2.0), math.log(10.0)

_UNARY = {
    "negative": (lambda ns, a, y, g: -g, False, False),
    "positive": (lambda ns, a, y, g: g, False, False),
    "conjugate": (lambda ns, a, y, g: ns.conj(g), False, False),
    "absolute": (lambda ns, a, y, g: g * ns.sign(a), True, False),
    "fabs": (lambda ns, a, y, g: g * ns.sign(a), True, False),
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
    "relu": (lambda ns, a, y, g: ns.where(a > 0, g, 0), True, False),
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


def _identity(ns, ctx, g):
    return [g[0]]


def _assign(ns, ctx, g):
    return [unbroadcast(ns, ns.astype(g[0], ctx.in_specs[0].dtype), ctx.in_specs[0].shape)]


def _register_all() -> None:
    for name, (rule, ins, outs) in _BINARY.items():
        defvjp(name, rule, ins, outs)
    for name in _SCALAR:
        defvjp(name + "_scalar", _scalar_rule(name), (0,), (0,))
    for name, (function, needs_a, needs_y) in _UNARY.items():
        defvjp(name, _unary_rule(function), (0,) if needs_a else (), (0,) if needs_y else ())
    defvjp("where", _where, (0,))
    defvjp("clip", _clip, (0, 1, 2))
    defvjp("astype", _astype)
    defvjp("copy", _identity)
    defvjp("assign", _assign)
    nondifferentiable(
        "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
        "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
        "logical_and", "logical_or", "logical_xor", "logical_not", "invert", "isnan",
        "isinf", "isfinite", "signbit", "sign", "floor", "ceil", "trunc", "rint",
        "floor_divide", "nextafter", "heaviside", "gcd", "lcm", "ldexp")
    nondifferentiable(*(n + "_scalar" for n in (
        "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
        "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
        "logical_and", "logical_or", "logical_xor", "floor_divide", "fmod", "arctan2",
        "hypot", "copysign", "logaddexp", "logaddexp2", "nextafter", "heaviside", "gcd",
        "lcm", "ldexp")))


_register_all()
