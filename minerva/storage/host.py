"""Host memory for CPU devices: chunks are NumPy byte arrays."""
from __future__ import annotations

import numpy as np


class HostAllocator:
    """Allocator of host memory through NumPy; chunks are 1-D ``uint8`` arrays."""

    kind = "host"

    def malloc(self, nbytes: int) -> np.ndarray:
        """A new chunk of ``nbytes`` bytes."""
        return np.empty(max(nbytes, 1), dtype=np.uint8)

    def free(self, chunk: np.ndarray) -> None:
        """Drop the chunk; NumPy returns the memory when the last view is gone."""

    def view(self, chunk: np.ndarray, offset: int, nbytes: int, shape: tuple, dtype) -> np.ndarray:
        """``nbytes`` bytes of ``chunk`` at ``offset`` as an array of ``shape`` and ``dtype``."""
        return np.ndarray(shape, dtype, chunk, offset)
