"""Example apps: MNIST models trained with minerva (see doc/apps.md).

Run them as scripts, e.g. ``python apps/mnist_cnn_2gpu.py --devices cpu:2 --epochs 1``.
"""

import minerva  # noqa: F401  (first, before NumPy: it sets OpenBLAS's thread timeout)
