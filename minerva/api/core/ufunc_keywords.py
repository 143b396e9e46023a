"""A ufunc called with NumPy's keywords beyond ``out=``: ``where=``, ``dtype=``,
``casting=``, ``order=``, ``subok=`` and ``signature=``.

NumPy's own ufunc decides first, on 0-d stand-ins of the operands (arrays of their dtypes;
Python scalars as they are, so NEP 50 holds): it raises what NumPy raises (UFuncTypeError
for a cast the ``casting`` rule refuses, ValueError for a bad ``order`` ...), and its
``resolve_dtypes`` names the loop. The operands are cast to the loop's dtypes and the
ufunc's op runs on them; its result is written into ``out=`` (cast as NumPy allowed). With
``where=``, one op (``ufunc_where``) computes the elements the mask selects: the others keep
``out``'s values, or hold 0 in a fresh result (NumPy leaves them uninitialized, and warns so;
minerva warns the same). ``order='C'``/``'F'``/``'A'`` lays a fresh result out in that memory
order; ``subok`` changes nothing (NArrays have no subclasses). ``sigmoid`` and ``relu``,
which NumPy lacks, take ``dtype`` (cast the input) and ``where``.
"""
from __future__ import annotations

import warnings

import numpy as np

from minerva.api.core import layout
from minerva.api.core.ufunc_folds import mask_of
from minerva.builder import ASSIGN, build, to_narray
from minerva.narray import NArray
from minerva.ops import registry
from minerva.ops.dtypes import supported_dtype

DEFAULTS = {"where": True, "casting": "same_kind", "order": "K", "dtype": None,
            "subok": True, "signature": None}
"""NumPy's call keywords (besides ``out``) and their defaults."""
_WHERE = {1: registry.get("ufunc_where"), 2: registry.get("ufunc_where2")}
_SCALARS = (int, float, complex)


def plain(kwargs: dict) -> bool:
    """Whether ``kwargs`` ask for nothing beyond the defaults (the fast path)."""
    for key, value in kwargs.items():
        default = DEFAULTS.get(key, _UNKNOWN)
        if value is not default and not (isinstance(default, str) and value == default):
            return False
    return True


_UNKNOWN = object()


def call(name: str, operands: tuple, outs: tuple, kwargs: dict):
    """``numpy.<name>(*operands, out=outs, **kwargs)`` in minerva; ``outs`` holds one
    entry per output (None where none is given)."""
    unknown = sorted(set(kwargs) - set(DEFAULTS))
    if unknown:
        raise TypeError(f"{name}() got an unexpected keyword argument {unknown[0]!r}")
    if kwargs.get("dtype") is not None:
        kwargs = dict(kwargs, dtype=supported_dtype(kwargs["dtype"]))  # DTypeError first
    operands = [x if isinstance(x, NArray) or type(x) in _SCALARS or isinstance(
        x, (bool, np.generic)) else to_narray(x, name) for x in operands]
    mask = mask_of(kwargs.get("where", True))
    loop = _loop(name, operands, outs, mask, kwargs)
    operands = [_cast(x, dtype, name) for x, dtype in zip(operands, loop)]
    loop_outs = loop[len(operands):]
    if mask is not None:
        return _masked(name, operands, mask, outs, loop_outs)
    if all(o is None for o in outs):
        return _fresh(name, operands, loop_outs, _order(kwargs.get("order", "K"), operands))
    if any(o is None for o in outs):
        raise TypeError(f"{name}: out= must give every output array, or none")
    if all(d is None or np.can_cast(d, o.dtype, "same_kind") for d, o in zip(loop_outs, outs)):
        return build(registry.get(name), operands, out=outs[0] if len(outs) == 1 else outs)
    for target, value in zip(outs, _results(build(registry.get(name), operands))):
        build(ASSIGN, [value], {"dtype": target.dtype}, out=target)  # casting='unsafe'
    return outs[0] if len(outs) == 1 else outs


def _fresh(name: str, operands: list, loop_outs: tuple, order: str):
    """The ufunc's results, of the loop's dtypes, laid out in memory order ``order``."""
    results = _results(build(registry.get(name), operands))
    results = tuple(r if d is None or r.dtype == d else to_narray(r, name, d)
                    for r, d in zip(results, loop_outs))
    results = tuple(r if layout.laid_out_as(r, order) else layout.copy_in(r, order)
                    for r in results)
    return results[0] if len(results) == 1 else results


def _stand_in(x):
    """What NumPy's ufunc is probed with for operand ``x``."""
    return np.zeros((), x.dtype) if isinstance(x, NArray) else x


def _loop(name: str, operands: list, outs: tuple, mask, kwargs: dict) -> tuple:
    """The dtypes of the loop NumPy runs (inputs, then outputs), after NumPy's own checks
    of the keywords on stand-ins (raising NumPy's errors)."""
    ufunc = getattr(np, name, None)
    keywords = {k: v for k, v in kwargs.items() if k != "where"}
    if not isinstance(ufunc, np.ufunc):  # sigmoid, relu: minerva's own
        dtype = keywords.get("dtype")
        return tuple(x.dtype if dtype is None else np.dtype(dtype) for x in operands) + (
            None,) * len(outs)
    if any(o is not None for o in outs):
        keywords["out"] = tuple(None if o is None else np.zeros((), o.dtype) for o in outs)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ufunc(*map(_stand_in, operands), where=True if mask is None else np.ones((), bool),
              **keywords)
    signature = keywords.get("signature")
    if keywords.get("dtype") is not None:
        signature = (None,) * ufunc.nin + (np.dtype(keywords["dtype"]),) * ufunc.nout
    given = tuple(_given_dtype(x) for x in operands) + (None,) * ufunc.nout
    options = {} if signature is None else {"signature": signature}
    return ufunc.resolve_dtypes(given, casting=keywords.get("casting", "same_kind"),
                                **options)


def _given_dtype(x):
    if isinstance(x, (NArray, np.generic)):
        return x.dtype
    return np.dtype(bool) if type(x) is bool else type(x)


def _cast(x, dtype, name: str) -> NArray:
    """Operand ``x`` as an NArray of the loop's ``dtype`` (a Python scalar cast as NumPy
    casts it into the loop)."""
    if isinstance(x, NArray) or dtype is None:
        return to_narray(x, name, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return to_narray(np.asarray(x).astype(dtype), name)


def _masked(name: str, operands: list, mask: NArray, outs: tuple, loop_outs: tuple):
    """The ``ufunc_where`` op: into ``outs``, or fresh (zeros where the mask is False)."""
    op = _WHERE[len(outs)]
    if all(o is None for o in outs):
        warnings.warn("'where' used without 'out', expect unitialized memory in output. "
                      "If this is intentional, use out=None.", UserWarning, stacklevel=4)
        dtypes = loop_outs if all(d is not None for d in loop_outs) else tuple(
            spec.dtype for spec in registry.get(name).infer(operands[0]._spec))
        return build(op, operands + [mask], {"name": name, "dtypes": dtypes, "fresh": True})
    if any(o is None for o in outs):
        raise TypeError(f"{name}: out= must give every output array, or none")
    attrs = {"name": name, "dtypes": tuple(o.dtype for o in outs), "fresh": False}
    return build(op, operands + [mask], attrs, out=outs[0] if len(outs) == 1 else outs)


def _results(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def _order(order: str, operands: list) -> str:
    """The memory order of a fresh result: ``'A'`` is F when every array operand is
    F-contiguous (and not C-contiguous), else C."""
    if order != "A":
        return order
    arrays = [x for x in operands if x.ndim > 1]
    fortran = arrays and all(layout.laid_out_as(x, "F") and not layout.laid_out_as(x, "C")
                             for x in arrays)
    return "F" if fortran else "C"


__all__: list = []
