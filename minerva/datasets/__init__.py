"""Data sets for minerva's example apps, loaded as NumPy arrays.

``load_mnist()`` returns MNIST (50k train, 10k validation, 10k test; images float32
``(n, 784)`` in [0, 1), labels int64), downloading and caching it on first use. Nothing
is ever unpickled without a restricted unpickler; caches load with ``allow_pickle=False``.
See doc/datasets.md.
"""
from minerva.datasets.errors import DatasetError
from minerva.datasets.idx import parse_idx, read_idx
from minerva.datasets.mnist import default_data_dir, load_mnist, mnist_from_idx

__all__ = ["DatasetError", "default_data_dir", "load_mnist", "mnist_from_idx",
           "parse_idx", "read_idx"]
