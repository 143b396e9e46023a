"""Ops: a registry of pure functions over an array module ``xp`` plus their shape rules.

Importing this package registers every op family.
"""
from minerva.ops import (  # noqa: F401  (registration side effects)
    copy,
    creation,
    elementwise,
    indexing,
    jit_op,
    linalg,
    linalg_extra,
    manipulation,
    nn_activation,
    nn_conv,
    nn_pool,
    nn_softmax,
    reduction,
    registry,
    shape,
    sorting,
    statistics,
    view_ops,
    views,
)

from minerva.ops import (  # noqa: F401,E402  (gradient rules, beside the ops they serve)
    elementwise_grad,
    linalg_grad,
    nn_grad,
    shape_grad,
)

registry.allow_inline(registry.names())

registry.use_blas((
    "matmul", "tensordot", "vdot", "inner", "vecdot", "einsum",            # products
    "inv", "det", "slogdet", "solve", "cholesky", "eigh", "eigvalsh", "svd", "qr", "pinv",
    "norm", "vector_norm", "cond", "matrix_power", "matrix_rank",          # linalg
    "conv2d", "conv2d_backward_data", "conv2d_backward_filter",            # im2col GEMMs
))
