"""The ops of ``numpy.linalg`` and NumPy's products: ``products`` (matmul, tensordot,
vdot, inner, outer, kron, cross, vecdot), ``einsum``, ``solvers`` (inv, solve, det,
slogdet, cholesky, eigh, eigvalsh, svd, qr, pinv) and ``norms`` (norm, vector_norm, cond,
matrix_power, matrix_rank), each with its gradient rules beside it; what they share
(NumPy's shape checks, result dtypes, the SVD kernel) is in ``shared``.

Importing this package registers them all.
"""
from minerva.ops.linalg import (  # noqa: F401  (registration: every op, then its rules)
    einsum,
    einsum_grad,
    norms,
    norms_grad,
    products,
    products_grad,
    solvers,
    solvers_grad,
)
