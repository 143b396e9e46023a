"""Train a 784-512-512-10 ReLU perceptron on MNIST with minerva, on one device.

    python apps/mnist_mlp.py                  # 20 epochs on a CPU device (or GPU 0)
    python apps/mnist_mlp.py --smoke          # a few steps on a small subset
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a script: make ``import apps`` work
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from apps import common, layers  # noqa: E402

SIZES = (784, 512, 512, 10)
N_LAYERS = len(SIZES) - 1


def init_params() -> dict:
    """He-initialised weights ``w0..w2`` and zero biases ``b0..b2`` on the current device."""
    params = {}
    for i in range(N_LAYERS):
        params[f"w{i}"], params[f"b{i}"] = layers.dense_params(SIZES[i], SIZES[i + 1])
    return params


def forward(params: dict, x) -> tuple:
    """Logits of images ``x`` (N, 784), and the layer inputs and pre-activations."""
    cache, h = [], x
    for i in range(N_LAYERS):
        z = layers.dense(h, params[f"w{i}"], params[f"b{i}"])
        cache.append((h, z))
        h = layers.relu(z) if i < N_LAYERS - 1 else z
    return h, cache


def backward(params: dict, cache: list, dlogits) -> dict:
    """Gradients of every parameter, from the gradient of the logits."""
    grads, dy = {}, dlogits
    for i in reversed(range(N_LAYERS)):
        h, z = cache[i]
        if i < N_LAYERS - 1:
            dy = layers.relu_backward(dy, z)
        dy, grads[f"w{i}"], grads[f"b{i}"] = layers.dense_backward(
            dy, h, params[f"w{i}"], need_dx=i > 0)
    return grads


APP = common.App(name="mnist_mlp", init_params=init_params, forward=forward,
                 backward=backward, image_shape=(784,),
                 defaults=dict(epochs=20, batch_size=100, lr=0.05, lr_decay=0.9))


def main(argv=None) -> int:
    """Run the app with command-line arguments ``argv``; the exit status."""
    return common.main(APP, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
