"""Train the CNN of mnist_cnn.py data parallel over several devices (two GPUs, or two CPU
devices when there is no GPU).

Each step cuts the batch into one part per device. Every device runs the forward and the
backward pass of its part, reading the weights, which live on the first device, through
minerva's automatic copies (each weight is copied to a device once per step). The
gradients are added up onto the first device, in pairs (a tree) when there are more than
two devices, and the update runs there. Nothing waits: the devices run side by side.

    python apps/mnist_cnn_2gpu.py                        # every GPU, else cpu:2
    python apps/mnist_cnn_2gpu.py --devices cpu:2 --epochs 1
    python apps/mnist_cnn_2gpu.py --devices gpu:0,1
"""
from __future__ import annotations

import dataclasses
import os
import sys

if __package__ in (None, ""):  # run as a script: make ``import apps`` work
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import minerva as mv  # noqa: E402
from apps import common, mnist_cnn  # noqa: E402


def add_on(device: int, a, b):
    """``a + b`` on ``device`` (for dicts: key by key)."""
    with mv.device(device):
        if isinstance(a, dict):
            return {name: a[name] + b[name] for name in a}
        return a + b


def tree_reduce(devices: list[int], values: list):
    """The sum of ``values`` (``values[i]`` lives on ``devices[i]``), on ``devices[0]``:
    neighbours are added in pairs, on the first of each pair, until one is left."""
    items = list(zip(devices, values))
    while len(items) > 1:
        pairs = [items[i:i + 2] for i in range(0, len(items), 2)]
        items = [(p[0][0], add_on(p[0][0], p[0][1], p[1][1])) if len(p) == 2 else p[0]
                 for p in pairs]
    return items[0][1]


def data_parallel_grads(devices, params, x, y) -> tuple:
    """Summed loss and gradients of the batch ``(x, y)`` (NumPy), each device doing its
    part; both on ``devices[0]``."""
    n_total, losses, grads = len(y), [], []
    for dev, xd, yd in zip(devices, common.split(x, len(devices)),
                           common.split(y, len(devices))):
        with mv.device(dev):
            loss, g = mnist_cnn.APP.loss_and_grads(params, mv.array(xd), mv.array(yd), n_total)
        losses.append(loss)
        grads.append(g)
    used = devices[:len(grads)]
    return tree_reduce(used, losses), tree_reduce(used, grads)


def train_step(app, devices, params, opt, x, y):
    """One data-parallel SGD step; the update runs on ``devices[0]``."""
    loss, grads = data_parallel_grads(devices, params, x, y)
    with mv.device(devices[0]):
        return opt.step(params, grads), loss


APP = dataclasses.replace(mnist_cnn.APP, name="mnist_cnn_2gpu", train_step=train_step,
                          max_devices=None)


def main(argv=None) -> int:
    """Run the app with command-line arguments ``argv``; the exit status."""
    return common.main(APP, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
