"""Neural-network ops (``mv.nn``): convolution, pooling, softmax, losses, activations, LRN,
dropout.

Images are ``(N, C, H, W)``, filters ``(O, C, kh, kw)``; ``stride``, ``pad`` and ``kernel``
take an int or a pair ``(h, w)``. Output sizes follow the floor rule
``Ho = (H + 2*ph - kh) // sh + 1``. Each function builds one op node and returns at once;
bad shapes raise :class:`minerva.ShapeError` here, at the caller's line. See ``doc/ops.md``.
"""
from __future__ import annotations

import numbers

from minerva import seeding
from minerva.builder import build, to_narray
from minerva.common.errors import ShapeError
from minerva.ops import registry


def _op(name: str, inputs: list, **attrs):
    """Build op ``name``; inputs may be NArrays or array-likes (copied to the device)."""
    return build(registry.get(name), [to_narray(x, name) for x in inputs], attrs)


def _pair(value):
    """An int as ``(v, v)``; a pair as a tuple; anything else as is (the op rejects it)."""
    if isinstance(value, (tuple, list)):
        return tuple(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return (int(value), int(value))
    return value


def _shape(shape):
    return tuple(int(n) for n in shape) if isinstance(shape, (tuple, list)) else shape


def _window(kernel, stride, pad) -> dict:
    return dict(kernel=_pair(kernel), stride=None if stride is None else _pair(stride),
                pad=_pair(pad))


# ---------------------------------------------------------------- convolution
def conv2d(x, w, b=None, stride=1, pad=0):
    """2-D convolution (cross-correlation) of ``x`` (N, C, H, W) with ``w`` (O, C, kh, kw),
    plus bias ``b`` (O,) when given; zero padding. Returns (N, O, Ho, Wo)."""
    inputs = [x, w] if b is None else [x, w, b]
    return _op("conv2d", inputs, stride=_pair(stride), pad=_pair(pad))


def conv2d_backward_data(dy, w, x_shape, stride=1, pad=0):
    """Gradient of ``conv2d`` with respect to its input, of shape ``x_shape``."""
    return _op("conv2d_backward_data", [dy, w], x_shape=_shape(x_shape),
               stride=_pair(stride), pad=_pair(pad))


def conv2d_backward_filter(dy, x, w_shape, stride=1, pad=0):
    """Gradient of ``conv2d`` with respect to its filters, of shape ``w_shape``."""
    return _op("conv2d_backward_filter", [dy, x], w_shape=_shape(w_shape),
               stride=_pair(stride), pad=_pair(pad))


def conv2d_backward_bias(dy):
    """Gradient of ``conv2d`` with respect to its bias: ``dy`` summed over N, H, W."""
    return _op("conv2d_backward_bias", [dy])


# ---------------------------------------------------------------- pooling
def max_pool2d(x, kernel, stride=None, pad=0):
    """Max over ``kernel`` windows (``stride=None``: stride = kernel); ``-inf`` padding of at
    most half the kernel; floor rule for the output size."""
    return _op("max_pool2d", [x], **_window(kernel, stride, pad))


def max_pool2d_backward(dy, x, y, kernel, stride=None, pad=0):
    """Gradient of ``max_pool2d``: each ``dy`` goes to its window's maximum in ``x`` (``y``
    is the forward output); on ties the first maximum in row-major window order."""
    return _op("max_pool2d_backward", [dy, x, y], **_window(kernel, stride, pad))


def avg_pool2d(x, kernel, stride=None, pad=0):
    """Mean over ``kernel`` windows; zero padding counts (divides by ``kh*kw`` always)."""
    return _op("avg_pool2d", [x], **_window(kernel, stride, pad))


def avg_pool2d_backward(dy, x_shape, kernel, stride=None, pad=0):
    """Gradient of ``avg_pool2d``: ``dy / (kh*kw)`` spread over each window."""
    return _op("avg_pool2d_backward", [dy], x_shape=_shape(x_shape),
               **_window(kernel, stride, pad))


# ---------------------------------------------------------------- softmax and loss
def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x))`` along ``axis``, computed stably."""
    return _op("softmax", [x], axis=axis)


def log_softmax(x, axis=-1):
    """``x - log(sum(exp(x)))`` along ``axis``, computed stably."""
    return _op("log_softmax", [x], axis=axis)


def cross_entropy(logits, labels, reduction="mean"):
    """Softmax cross-entropy of ``logits`` (N, K) against int class ids ``labels`` (N,);
    ``reduction`` is ``'mean'`` or ``'sum'`` (0-d result) or ``'none'`` (shape (N,))."""
    return _op("cross_entropy", [logits, labels], reduction=reduction)


def cross_entropy_backward(logits, labels, reduction="mean", dy=None):
    """Gradient of ``cross_entropy`` with respect to ``logits``, for upstream gradient
    ``dy`` (0-d, or (N,) for ``'none'``); ``dy=None`` means ones."""
    inputs = [logits, labels] if dy is None else [logits, labels, dy]
    return _op("cross_entropy_backward", inputs, reduction=reduction)


# ---------------------------------------------------------------- activations
def relu_backward(dy, x):
    """Gradient of ``relu``: ``dy * (x > 0)``."""
    return _op("relu_backward", [dy, x])


def sigmoid_backward(dy, y):
    """Gradient of ``sigmoid`` from its output ``y``: ``dy * y * (1 - y)``."""
    return _op("sigmoid_backward", [dy, y])


def tanh_backward(dy, y):
    """Gradient of ``tanh`` from its output ``y``: ``dy * (1 - y**2)``."""
    return _op("tanh_backward", [dy, y])


def lrn(x, size=5, alpha=1e-4, beta=0.75, k=2.0):
    """Cross-channel local response normalisation (Caffe/AlexNet):
    ``y = x * (k + alpha/size * sum(x[c']**2 over window(c)))**-beta``."""
    return _op("lrn", [x], size=size, alpha=alpha, beta=beta, k=k)


def lrn_backward(dy, x, y, size=5, alpha=1e-4, beta=0.75, k=2.0):
    """Gradient of ``lrn`` with respect to ``x`` (``y`` is the forward output)."""
    return _op("lrn_backward", [dy, x, y], size=size, alpha=alpha, beta=beta, k=k)


# ---------------------------------------------------------------- dropout
def _check_p(p) -> float:
    if not isinstance(p, numbers.Real) or isinstance(p, bool) or not 0.0 <= p < 1.0:
        raise ShapeError(f"dropout: p must be a number in [0, 1) (got {p!r})")
    return float(p)


def dropout(x, p, training=True, seed=None):
    """``x * mask / (1 - p)`` with ``mask ~ Bernoulli(1 - p)``; ``x`` itself when not
    ``training`` or ``p == 0``.

    The mask comes from ``seed`` (an int or a tuple of ints); ``None`` takes the next seed of
    ``mv.random`` (reproducible after ``mv.random.seed(n)``). To backpropagate, pass the same
    explicit seed to :func:`dropout_backward`.
    """
    p = _check_p(p)
    if not training or p == 0.0:
        return to_narray(x, "dropout")
    seed = seeding.next_seed() if seed is None else _seed_tuple(seed)
    return _op("dropout", [x], p=p, seed=seed)


def dropout_backward(dy, p, seed):
    """Gradient of ``dropout(x, p, seed=seed)``: ``dy`` times the same scaled mask."""
    p = _check_p(p)
    if p == 0.0:
        return to_narray(dy, "dropout_backward")
    return _op("dropout_backward", [dy], p=p, seed=_seed_tuple(seed))


def _seed_tuple(seed):
    """An int seed as ``(seed,)``; a sequence as a tuple of ints; else as is (rejected)."""
    if isinstance(seed, numbers.Integral):
        return (int(seed),)
    return tuple(int(s) for s in seed) if isinstance(seed, (tuple, list)) else seed
