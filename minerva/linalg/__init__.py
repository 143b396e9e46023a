"""``minerva.linalg``: ``numpy.linalg`` on NArrays.

``import minerva as np`` then ``np.linalg.norm(x)``, ``np.linalg.solve(a, b)``,
``np.linalg.svd(a)`` ... run as ops through the DAG, over stacks of matrices
``(..., M, N)`` where NumPy takes them. The functions live in ``products`` (``matmul``,
``tensordot``, ``einsum``, ... ``multi_dot``: NumPy's top-level products are also
minerva's), ``solvers`` (solvers and decompositions) and ``norms`` (norms, matrix
functions, ``diagonal``, ``trace``). See doc/numpy/linalg.md for the differences from
NumPy.
"""
from __future__ import annotations

import numpy as np

from minerva.api.fallback.resolve import attribute, numpy_names
from minerva.linalg.norms import (  # noqa: F401  (numpy.linalg's names)
    cond, diagonal, matrix_norm, matrix_power, matrix_rank, norm, trace, vector_norm)
from minerva.linalg.products import (  # noqa: F401  (numpy.linalg's names)
    cross, einsum, einsum_path, inner, kron, matmul, matrix_transpose, multi_dot, outer,
    tensordot, vdot, vecdot)
from minerva.linalg.solvers import (  # noqa: F401  (numpy.linalg's names)
    EigResult, EighResult, QRResult, SlogdetResult, SVDResult, cholesky, det, eig, eigh,
    eigvals, eigvalsh, inv, lstsq, pinv, qr, slogdet, solve, svd, svdvals, tensorinv,
    tensorsolve)
from minerva.ops.linalg.shared import LinAlgShapeError  # noqa: F401

LinAlgError = np.linalg.LinAlgError


def __getattr__(name):
    """``numpy.linalg``'s names minerva lacks: the host fallback
    (``minerva.api.fallback``); AttributeError for names NumPy lacks."""
    return attribute("linalg", name)


def __dir__() -> list:
    return sorted(set(globals()) | numpy_names("linalg"))
