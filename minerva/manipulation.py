"""NumPy's array-manipulation functions, under NumPy's names and signatures, plus the
simple array makers (``linspace``, ``logspace``, ``geomspace``, ``eye``, ``identity``,
``tri``) and NumPy's index tricks (``r_``, ``c_``, ``mgrid``, ``ogrid``, ``ix_`` ...).

Views where NumPy gives views (``flip``, ``fliplr``, ``flipud``, ``rot90``, ``atleast_Nd``,
the split family, ``unstack``, ``meshgrid(copy=False)``, ``ix_``); new arrays elsewhere.
``diagonal`` is a copy (NumPy's is a read-only view). See doc/numpy/manipulation.md.
The pieces live in ``minerva._manipulation``, one file per family.
"""
from __future__ import annotations

from minerva.functions import nonzero
from minerva._manipulation.diagonals import (diag, diagflat, diagonal, eye, identity,
                                              tri, tril, triu, trace)
from minerva._manipulation.joins import (append, column_stack, delete, dstack, hstack,
                                         insert, row_stack, vstack)
from minerva._manipulation.select import (copyto, put, put_along_axis, take,
                                          take_along_axis)
from minerva._manipulation.shaping import pad, repeat, resize, roll, tile
from minerva._manipulation.spaces import geomspace, linspace, logspace
from minerva._manipulation.tricks import (c_, index_exp, indices, ix_, meshgrid, mgrid,
                                          ogrid, r_, s_)
from minerva._manipulation.views import (array_split, atleast_1d, atleast_2d, atleast_3d,
                                         dsplit, flip, fliplr, flipud, hsplit, rot90, split,
                                         unstack, vsplit)

# ``trace`` is a method only: the top-level name ``mv.trace`` is the tracing module.
METHODS: dict = {
    "repeat": repeat, "take": take, "diagonal": diagonal, "trace": trace, "put": put,
    "nonzero": nonzero,
}
"""NArray methods this module adds (name -> function taking the array first)."""

__all__: list = [
    "append", "array_split", "atleast_1d", "atleast_2d", "atleast_3d", "c_",
    "column_stack", "copyto", "delete", "diag", "diagflat", "diagonal", "dsplit", "dstack",
    "eye", "flip", "fliplr", "flipud", "geomspace", "hsplit", "hstack", "identity",
    "index_exp", "indices", "insert", "ix_", "linspace", "logspace", "meshgrid", "mgrid",
    "ogrid", "pad", "put", "put_along_axis", "r_", "repeat", "resize", "roll", "rot90",
    "row_stack", "s_", "split", "take", "take_along_axis", "tile", "tri", "tril",
    "triu", "unstack", "vsplit", "vstack",
]
