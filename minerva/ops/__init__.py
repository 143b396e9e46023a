"""Ops: a registry of pure functions over an array module ``xp`` plus their shape rules,
one file per chapter of NumPy's routines (the chapter names of ``minerva.api``), each with
its gradient rules in ``<chapter>_grad.py`` beside it.

Importing this package registers every op and every rule. Each ``<chapter>_grad.py``
imports the ``<chapter>.py`` whose ops it gives rules to, so the list below may come in
any order; the last steps mark the ops that may run inline when tiny, those that call
BLAS, and those whose shape rules remember their answers.
"""
from minerva.ops import (  # noqa: F401  (registration: every op, then its rules)
    copy,
    copy_grad,
    creation,
    creation_grad,
    elementwise,
    elementwise_grad,
    indexing,
    indexing_grad,
    jit_op,
    linalg,
    logic,
    logic_grad,
    manipulation,
    manipulation_grad,
    nn,
    reductions,
    reductions_grad,
    registry,
    sets,
    sets_grad,
    sorting,
    sorting_grad,
    statistics,
    statistics_grad,
    views,
    views_grad,
)

registry.allow_inline(registry.names())

registry.use_blas((
    "matmul", "tensordot", "vdot", "inner", "vecdot", "einsum",            # products
    "inv", "det", "slogdet", "solve", "cholesky", "eigh", "eigvalsh", "svd", "qr", "pinv",
    "norm", "vector_norm", "cond", "matrix_power", "matrix_rank",          # linalg
    "conv2d", "conv2d_backward_data", "conv2d_backward_filter",            # im2col GEMMs
))

registry.memoize_infer(
    reductions.REDUCTIONS + reductions.ARG_REDUCTIONS + elementwise.UNARY
    + ("matmul", "tensordot", "take_index", "put_index", "clip", "where")
    + ("norm", "vector_norm", "astype", "copy", "assign", "concatenate", "stack",   # joins,
       "roll", "outer", "pad", "repeat", "tile", "reshape", "transpose", "diff",    # copies
       "cumulative", "sort", "argsort", "isclose", "std", "var", "average", "median",
       "quantile", "percentile", "count_nonzero", "round", "nan_to_num", "real_part",
       "solve", "inv", "det", "einsum", "inner", "vdot", "cross", "kron", "tri",
       "triangle", "eye", "searchsorted"))
