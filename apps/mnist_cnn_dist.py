"""Train the CNN of mnist_cnn.py data parallel over MPI ranks, with ``minerva.distributed``.

Each rank trains on its shard of every batch; the gradients are summed over the ranks
(bucketed, overlapped with the backward pass) and every rank takes the same step, so the
run follows the single-process one. ``--batch-size`` is the global batch (over all ranks
and devices). Several devices per rank combine with it (``--devices cpu:2``).

    mpiexec -n 2 python apps/mnist_cnn_dist.py                  # 2 ranks, 1 CPU device each
    mpiexec -n 2 python apps/mnist_cnn_dist.py --devices cpu:2  # 2 ranks x 2 CPU devices
    mpiexec -n 4 python apps/mnist_cnn_dist.py                  # GPUs: one per rank
    mpiexec -f hosts -n 8 python apps/mnist_cnn_dist.py         # several machines
    python apps/mnist_cnn_dist.py --smoke                       # one rank (no MPI)
"""
from __future__ import annotations

import dataclasses
import os
import sys

if __package__ in (None, ""):  # run as a script: make ``import apps`` work
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from apps import dist_train, mnist_cnn  # noqa: E402

APP = dataclasses.replace(mnist_cnn.APP, name="mnist_cnn_dist",
                          make_step=dist_train.DistStep, max_devices=None)


def main(argv=None) -> int:
    """Run the app on this rank with command-line arguments ``argv``; the exit status."""
    return dist_train.main(APP, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main())
