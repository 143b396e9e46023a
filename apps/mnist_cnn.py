"""Train a convolutional network on MNIST with minerva, on one device.

    conv 3x3 (32) -> relu -> max pool 2 -> conv 3x3 (64) -> relu -> max pool 2
    -> dense 3136-256 -> relu -> dense 256-10

    python apps/mnist_cnn.py                  # 10 epochs on a CPU device (or GPU 0)
    python apps/mnist_cnn.py --smoke          # a few steps on a small subset
"""
from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a script: make ``import apps`` work
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from apps import common, layers  # noqa: E402

CHANNELS = (1, 32, 64)
KERNEL, PAD = 3, 1
HIDDEN = 256
FLAT = CHANNELS[2] * 7 * 7


def init_params() -> dict:
    """He-initialised weights and zero biases on the current device."""
    p = {}
    p["w1"], p["b1"] = layers.conv_params(CHANNELS[0], CHANNELS[1], KERNEL)
    p["w2"], p["b2"] = layers.conv_params(CHANNELS[1], CHANNELS[2], KERNEL)
    p["w3"], p["b3"] = layers.dense_params(FLAT, HIDDEN)
    p["w4"], p["b4"] = layers.dense_params(HIDDEN, 10)
    return p


def forward(p: dict, x) -> tuple:
    """Logits of images ``x`` (N, 1, 28, 28), and what :func:`backward` needs."""
    c = {"x": x}
    c["z1"] = layers.conv(x, p["w1"], p["b1"], PAD)
    c["a1"] = layers.relu(c["z1"])
    c["p1"] = layers.pool(c["a1"])
    c["z2"] = layers.conv(c["p1"], p["w2"], p["b2"], PAD)
    c["a2"] = layers.relu(c["z2"])
    c["p2"] = layers.pool(c["a2"])
    c["f"] = c["p2"].reshape(x.shape[0], FLAT)
    c["z3"] = layers.dense(c["f"], p["w3"], p["b3"])
    c["a3"] = layers.relu(c["z3"])
    return layers.dense(c["a3"], p["w4"], p["b4"]), c


def backward(p: dict, c: dict, dlogits) -> dict:
    """Gradients of every parameter, from the gradient of the logits."""
    g = {}
    da3, g["w4"], g["b4"] = layers.dense_backward(dlogits, c["a3"], p["w4"])
    dz3 = layers.relu_backward(da3, c["z3"])
    df, g["w3"], g["b3"] = layers.dense_backward(dz3, c["f"], p["w3"])
    da2 = layers.pool_backward(df.reshape(c["p2"].shape), c["a2"], c["p2"])
    dz2 = layers.relu_backward(da2, c["z2"])
    dp1, g["w2"], g["b2"] = layers.conv_backward(dz2, c["p1"], p["w2"], PAD)
    da1 = layers.pool_backward(dp1, c["a1"], c["p1"])
    dz1 = layers.relu_backward(da1, c["z1"])
    _, g["w1"], g["b1"] = layers.conv_backward(dz1, c["x"], p["w1"], PAD, need_dx=False)
    return g


APP = common.App(name="mnist_cnn", init_params=init_params, forward=forward,
                 backward=backward, image_shape=(1, 28, 28),
                 defaults=dict(epochs=10, batch_size=64, lr=0.02, lr_decay=0.8))


def main(argv=None) -> int:
    """Run the app with command-line arguments ``argv``; the exit status."""
    return common.main(APP, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
