"""Train the CNN of mnist_cnn.py data parallel over several devices (two GPUs, or two CPU
devices when there is no GPU).

Each step cuts the batch into one part per device. The parameters live on the first
device; every other device works on replicas, copies made with ``w.to(dev)`` (a copy per
new value of ``w``, so once per step). Every device records the forward pass of its part
and runs ``backward`` (or the hand-written backward pass), writing the gradients into its
own gradient buffers. The gradients are added up onto the parameters' ``.grad`` on the
first device, in a fixed order (in pairs, a tree, when there are more than two devices),
and the optimizer updates the parameters there, in place. Nothing waits: the devices run
side by side.

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
from apps import common, mnist_cnn, train  # noqa: E402


def add_on(device: int, a, b, in_place: bool = False):
    """``a + b`` on ``device`` (for dicts: key by key); ``a += b`` when ``in_place``."""
    with mv.device(device):
        if isinstance(a, dict):
            return {name: add_on(device, a[name], b[name], in_place) for name in a}
        if in_place:
            a += b
            return a
        return a + b


def tree_reduce(devices: list[int], values: list, in_place: bool = False):
    """The sum of ``values`` (``values[i]`` lives on ``devices[i]``), on ``devices[0]``:
    neighbours are added in pairs, on the first of each pair, until one is left. With
    ``in_place`` each pair is added into its first value, and the sum is ``values[0]``."""
    items = list(zip(devices, values))
    while len(items) > 1:
        pairs = [items[i:i + 2] for i in range(0, len(items), 2)]
        items = [(p[0][0], add_on(p[0][0], p[0][1], p[1][1], in_place)) if len(p) == 2
                 else p[0] for p in pairs]
    return items[0][1]


class DataParallelStep(train.Step):
    """One data-parallel step over ``devices``: the parameters, their ``.grad`` and the
    optimizer's state on ``devices[0]``; on each other device, replicas (refreshed with
    ``.to``) and gradient buffers made once."""

    def __init__(self, app, devices, params: dict, opt, manual: bool = False,
                 jit: bool = False):
        super().__init__(app, devices, params, opt, manual, jit)
        self.replica_grads = {}
        for dev in self.devices[1:]:
            with mv.device(dev):
                self.replica_grads[dev] = {name: mv.zeros(p.shape, dtype=p.dtype)
                                           for name, p in params.items()}

    def variables(self, dev: int) -> dict:
        """The parameters as device ``dev`` sees them: themselves on the first device;
        elsewhere their copies there, marked as variables whose gradients go into that
        device's buffers."""
        if dev == self.devices[0]:
            return self.params
        copies = {name: p.to(dev) for name, p in self.params.items()}
        grads = self.replica_grads[dev]
        mv.autograd.mark_variables(list(copies.values()), [grads[n] for n in copies])
        return copies

    def upload(self, x, y) -> tuple:
        """Each device's part of the batch, on that device: images first, then labels."""
        n_parts = len(self.devices)
        xs, ys = [], []
        for dev, xd, yd in zip(self.devices, common.split(x, n_parts),
                               common.split(y, n_parts)):
            with mv.device(dev):
                xs.append(mv.array(xd))
                ys.append(mv.array(yd))
        return (*xs, *ys)

    def compute(self, *arrays):
        """The step on the uploaded parts (the last argument is the learning rate)."""
        *arrays, _lr = arrays
        half = len(arrays) // 2
        xs, ys = arrays[:half], arrays[half:]
        n_total = sum(y.shape[0] for y in ys)
        losses, grads = [], []
        for dev, xd, yd in zip(self.devices, xs, ys):
            with mv.device(dev):
                variables = self.variables(dev)
                losses.append(train.backward_pass(self.app, variables, xd, yd, n_total,
                                                  self.manual))
            grads.append({name: v.grad for name, v in variables.items()})
        used = self.devices[:len(grads)]
        with mv.autograd.pause():
            tree_reduce(used, grads, in_place=True)   # into the parameters' .grad
            loss = tree_reduce(used, losses)
        with mv.device(self.devices[0]):
            self.opt.step()
        return loss


APP = dataclasses.replace(mnist_cnn.APP, name="mnist_cnn_2gpu", make_step=DataParallelStep,
                          max_devices=None)


# ------------------------------------------- the functional step of tools/benchmarks/steps.py
def data_parallel_grads(devices, params, x, y) -> tuple:
    """Summed loss and hand-written gradients of the batch ``(x, y)`` (NumPy), each device
    doing its part; both on ``devices[0]``."""
    n_total, losses, grads = len(y), [], []
    for dev, xd, yd in zip(devices, common.split(x, len(devices)),
                           common.split(y, len(devices))):
        with mv.device(dev):
            loss, g = mnist_cnn.APP.loss_and_grads(params, mv.array(xd), mv.array(yd),
                                                   n_total)
        losses.append(loss)
        grads.append(g)
    used = devices[:len(grads)]
    return tree_reduce(used, losses), tree_reduce(used, grads)


def train_step(app, devices, params, opt, x, y):
    """One functional data-parallel step with ``train.SGD`` (new parameters, loss)."""
    loss, grads = data_parallel_grads(devices, params, x, y)
    with mv.device(devices[0]):
        return opt.step(params, grads), loss


def main(argv=None) -> int:
    """Run the app with command-line arguments ``argv``; the exit status."""
    return common.main(APP, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
