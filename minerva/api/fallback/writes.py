"""Which arguments a NumPy function writes into: its ``out=`` arrays (by keyword, or by
position where its signature has an ``out`` parameter; a ufunc's outputs after its
inputs), and the argument of the functions and methods that write in place (``copyto``'s
``dst``, ``put``'s ``a``, ``ndarray.sort``'s array ...). The host fallback runs NumPy on
writable host copies of those NArrays and writes them back; every other NArray reaches
NumPy as a read-only copy, so a write this table does not know of fails in NumPy
(``assignment destination is read-only``) instead of being lost."""
from __future__ import annotations

import functools
import inspect

import numpy as np

from minerva.narray import NArray

WRITTEN = {
    "numpy.copyto": ("dst", 0), "numpy.put": ("a", 0), "numpy.place": ("arr", 0),
    "numpy.putmask": ("a", 0), "numpy.fill_diagonal": ("a", 0),
    "numpy.put_along_axis": ("arr", 0), "numpy.random.shuffle": ("x", 0),
    **{f"numpy.ndarray.{name}": ("self", 0) for name in (
        "fill", "put", "sort", "partition", "setfield", "itemset")},
}
"""NumPy's name of a function or method -> the parameter it writes in place (name and
position)."""

IN_PLACE_IF = {"numpy.ndarray.byteswap": ("inplace", 1), "numpy.nan_to_num": ("copy", 1)}
"""Functions that write their first argument only for one value of a flag: the flag's
name and position (``byteswap(inplace=True)``, ``nan_to_num(x, copy=False)``)."""


def written(label: str, function, args: tuple, kwargs: dict) -> list:
    """The NArrays a call of NumPy's ``function`` (named ``label``) writes into."""
    found = _outs(function, args, kwargs)
    rule = WRITTEN.get(label)
    if rule is None and label.endswith(".at") and isinstance(
            getattr(function, "__self__", None), np.ufunc):
        rule = ("a", 0)  # ufunc.at(a, indices, b) writes a
    if rule is None and _writes_first(label, args, kwargs):
        rule = ("self", 0)
    if rule is not None:
        found.append(_argument(args, kwargs, *rule))
    return [x for x in found if isinstance(x, NArray)]


def _writes_first(label: str, args: tuple, kwargs: dict) -> bool:
    flag = IN_PLACE_IF.get(label)
    if flag is None:
        return False
    value = _argument(args, kwargs, *flag)
    return bool(value) if label.endswith("byteswap") else value is False


def _argument(args: tuple, kwargs: dict, name: str, position: int):
    if name in kwargs:
        return kwargs[name]
    return args[position] if position < len(args) else None


def _outs(function, args: tuple, kwargs: dict) -> list:
    out = kwargs.get("out")
    if out is None:
        position = _out_position(function)
        out = args[position] if position is not None and position < len(args) else None
    if isinstance(function, np.ufunc) and len(args) > function.nin:
        return list(args[function.nin:])
    return list(out) if isinstance(out, tuple) else [out]


@functools.cache
def _out_position(function):
    """The position of ``function``'s ``out`` parameter, when it can be given by
    position; None otherwise (or when its signature is unknown)."""
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return None
    for position, parameter in enumerate(parameters):
        if parameter.name == "out":
            positional = parameter.kind in (parameter.POSITIONAL_ONLY,
                                            parameter.POSITIONAL_OR_KEYWORD)
            return position if positional else None
    return None
