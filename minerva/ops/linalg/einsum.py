"""``einsum``: the shape rule parses the subscripts by NumPy's rules (it never runs einsum).

Subscripts are letters; ``...`` stands for the dimensions a term does not name, which
broadcast across operands, right-aligned; a label repeated in one operand takes a diagonal
(its sizes there must agree); across operands a label of size 1 broadcasts. Implicit mode
(no ``->``) outputs ``...`` first, then the labels that appear once, in ASCII order. The
kernel always receives the explicit form ``in,in->out``.
"""
from __future__ import annotations

import string

import numpy as np

from minerva.ops.registry import ArraySpec, register, shape_error

LETTERS = string.ascii_letters
_DTYPES: dict = {}


def explicit_subscripts(subscripts: str, shapes: list) -> tuple:
    """``(explicit subscripts, output shape)`` for operands of ``shapes``: ShapeError
    where NumPy's einsum raises a ValueError."""
    inputs, output = _split(subscripts.replace(" ", ""), len(shapes))
    terms = [_labels(term, len(shape), k) for k, (term, shape) in
             enumerate(zip(inputs, shapes))]
    sizes = _sizes(terms, shapes)
    n_ellipsis = max((sum(1 for x in t if isinstance(x, int)) for t in terms), default=0)
    out_labels = _output(output, terms, n_ellipsis)
    explicit = ",".join(inputs) + "->" + ("" if output is None else output)
    if output is None:
        explicit += ("..." if n_ellipsis else "") + "".join(
            x for x in out_labels if isinstance(x, str))
    return explicit, tuple(sizes[x] for x in out_labels)


def _split(subscripts: str, n_operands: int) -> tuple:
    if subscripts.count("->") > 1 or subscripts.replace("->", "").count(">") \
            or subscripts.replace("->", "").count("-"):
        raise _error("einstein sum subscripts string may contain one '->' only")
    inputs, arrow, output = subscripts.partition("->")
    terms = inputs.split(",")
    if len(terms) != n_operands:
        more = "more" if n_operands > len(terms) else "fewer"
        raise _error(f"{more} operands provided to einstein sum function than specified "
                     "in the subscripts string")
    return terms, (output if arrow else None)


def _labels(term: str, ndim: int, k: int) -> tuple:
    """The labels of one term: letters, and for its ``...`` dimensions the ints -n..-1
    (right-aligned, so that broadcast dimensions share labels)."""
    head, dots, tail = term.partition("...")
    letters = head + tail
    for char in letters:
        if char == ".":
            raise _error("einstein sum subscripts string contains a '.' that is not part "
                         f"of an ellipsis ('...') in operand {k}")
        if char not in LETTERS:
            raise _error(f"invalid subscript '{char}' in einstein sum subscripts string, "
                         "subscripts must be letters")
    n_dots = ndim - len(letters)
    if n_dots < 0:
        raise _error("einstein sum subscripts string contains too many subscripts for "
                     f"operand {k}")
    if n_dots and not dots:
        raise _error("operand has more dimensions than subscripts given in einstein sum, "
                     "but no '...' ellipsis provided to broadcast the extra dimensions.")
    return tuple(head) + tuple(range(-n_dots, 0)) + tuple(tail)


def _sizes(terms: list, shapes: list) -> dict:
    sizes: dict = {}
    for k, (labels, shape) in enumerate(zip(terms, shapes)):
        own: dict = {}
        for label, n in zip(labels, shape):
            if own.setdefault(label, n) != n:
                raise _error(f"dimensions in operand {k} for collapsing index '{label}' "
                             f"don't match ({own[label]} != {n})")
        for label, n in own.items():
            seen = sizes.setdefault(label, n)
            if seen != n and 1 not in (seen, n):
                raise _error("operands could not be broadcast together with remapped "
                             f"shapes {[tuple(s) for s in shapes]}")
            sizes[label] = max(seen, n) if 0 not in (seen, n) else 0
    return sizes


def _output(output, terms: list, n_ellipsis: int) -> tuple:
    counts: dict = {}
    for labels in terms:
        for label in labels:
            counts[label] = counts.get(label, 0) + 1
    dims = tuple(range(-n_ellipsis, 0))
    if output is None:
        return dims + tuple(sorted(x for x, n in counts.items()
                                   if isinstance(x, str) and n == 1))
    head, dots, tail = output.partition("...")
    for char in head + tail:
        if char not in LETTERS:
            raise _error(f"invalid subscript '{char}' in einstein sum output")
        if (head + tail).count(char) > 1:
            raise _error("einstein sum subscripts string includes output subscript "
                         f"'{char}' multiple times")
        if char not in counts:
            raise _error(f"einstein sum subscripts string included output subscript "
                         f"'{char}' which never appeared in an input")
    if n_ellipsis and not dots:
        raise _error("output has more dimensions than subscripts given in einstein sum, "
                     "but no '...' ellipsis provided to broadcast the extra dimensions.")
    return tuple(head) + (dims if dots else ()) + tuple(tail)


def _error(message: str):
    return shape_error("einsum", message)


def einsum_dtype(*specs: ArraySpec) -> np.dtype:
    """The dtype NumPy's einsum gives operands of these dtypes (probed on 0-d arrays)."""
    key = tuple(s.dtype for s in specs)
    dtype = _DTYPES.get(key)
    if dtype is None:
        probes = [np.ones((), d) for d in key]
        dtype = _DTYPES[key] = np.einsum(",".join([""] * len(key)) + "->", *probes).dtype
    return dtype


def _einsum_infer(*specs, subscripts, dtype, optimize):
    _, shape = explicit_subscripts(subscripts, [s.shape for s in specs])
    return (ArraySpec(shape, dtype if dtype is not None else einsum_dtype(*specs)),)


def _einsum_impl(xp, *arrays, out, subscripts, dtype, optimize):
    if dtype is not None:
        arrays = [a.astype(dtype, copy=False) for a in arrays]
    if isinstance(optimize, tuple):
        optimize = list(optimize)
    out[...] = xp.einsum(subscripts, *arrays, optimize=optimize)


register("einsum", _einsum_infer, _einsum_impl)
