"""The ops of ``mv.nn``: ``conv`` (conv2d and its backward ops; ``conv_cpu`` holds its CPU
kernels), ``pool`` (max and average pooling), ``softmax`` (softmax, log_softmax,
cross-entropy) and ``activation`` (the activations' backward ops, LRN, dropout), each with
its gradient rules beside it; their checks and window helpers are in ``shared``.

Importing this package registers them all.
"""
from minerva.ops.nn import (  # noqa: F401  (registration: every op, then its rules)
    activation,
    activation_grad,
    conv,
    conv_grad,
    pool,
    pool_grad,
    softmax,
    softmax_grad,
)
