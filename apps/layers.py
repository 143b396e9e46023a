"""Layer forward and hand-written backward passes written with minerva's public ops.

By default the apps record the forward pass and let ``mv.autograd`` build the backward
pass. With ``--manual-backward`` a model calls these forward functions, keeps what the
backward passes need, and calls the backward functions in reverse order, as Minerva apps
always did; the gradient rules of ``mv.autograd`` use the same backward kernels. Every
function only builds ops and returns at once; nothing here waits for a result. Parameters
are float32, as the images are.
"""
from __future__ import annotations

import math

import numpy as np

import minerva as mv

DTYPE = np.float32


# ---------------------------------------------------------------- parameters
def he_normal(shape, fan_in: int):
    """Weights drawn from N(0, 2 / fan_in) (He init, for ReLU layers)."""
    return mv.randn(tuple(shape), sigma=math.sqrt(2.0 / fan_in), dtype=DTYPE)


def dense_params(n_in: int, n_out: int) -> tuple:
    """``(w, b)`` of a dense layer: w (n_in, n_out), b (n_out,) zero."""
    return he_normal((n_in, n_out), n_in), mv.zeros((n_out,), dtype=DTYPE)


def conv_params(c_in: int, c_out: int, k: int) -> tuple:
    """``(w, b)`` of a k x k convolution: w (c_out, c_in, k, k), b (c_out,) zero."""
    return he_normal((c_out, c_in, k, k), c_in * k * k), mv.zeros((c_out,), dtype=DTYPE)


# ---------------------------------------------------------------- dense
def dense(x, w, b):
    """``x @ w + b`` for x (N, n_in)."""
    return x @ w + b


def dense_backward(dy, x, w, need_dx: bool = True) -> tuple:
    """Gradients ``(dx, dw, db)`` of :func:`dense`; dx is None unless ``need_dx``.
    The transposes happen inside the matmul kernels (no copies of ``w.T`` or ``x.T``)."""
    dx = mv.matmul(dy, w, transpose_b=True) if need_dx else None
    return dx, mv.matmul(x, dy, transpose_a=True), dy.sum(axis=0)


# ---------------------------------------------------------------- convolution
def conv(x, w, b, pad: int):
    """Stride-1 convolution with zero padding ``pad``."""
    return mv.nn.conv2d(x, w, b, pad=pad)


def conv_backward(dy, x, w, pad: int, need_dx: bool = True) -> tuple:
    """Gradients ``(dx, dw, db)`` of :func:`conv`; dx is None unless ``need_dx``."""
    dx = mv.nn.conv2d_backward_data(dy, w, x.shape, pad=pad) if need_dx else None
    dw = mv.nn.conv2d_backward_filter(dy, x, w.shape, pad=pad)
    return dx, dw, mv.nn.conv2d_backward_bias(dy)


# ---------------------------------------------------------------- activations, pooling
def relu(x):
    """``max(x, 0)``."""
    return mv.relu(x)


def relu_backward(dy, x):
    """Gradient of :func:`relu` at ``x``."""
    return mv.nn.relu_backward(dy, x)


def pool(x, k: int = 2):
    """k x k max pooling with stride k."""
    return mv.nn.max_pool2d(x, k)


def pool_backward(dy, x, y, k: int = 2):
    """Gradient of :func:`pool` (``y`` is its output)."""
    return mv.nn.max_pool2d_backward(dy, x, y, k)


# ---------------------------------------------------------------- loss
def loss_sum(logits, labels):
    """Summed softmax cross-entropy of a batch (a 0-d array)."""
    return mv.nn.cross_entropy(logits, labels, reduction="sum")


def loss_backward(logits, labels, n_total: int):
    """Gradient of ``loss_sum(logits, labels) / n_total`` with respect to ``logits``.

    Dividing by the size of the *whole* batch, not of this part of it, makes the gradients
    of the parts of a batch add up to the gradient of the whole batch (data parallelism).
    """
    return mv.nn.cross_entropy_backward(logits, labels, reduction="sum") * (1.0 / n_total)


def n_correct(logits, labels):
    """How many rows of ``logits`` have their largest value at ``labels`` (0-d int)."""
    return (mv.argmax(logits, axis=1) == labels).sum()
