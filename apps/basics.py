"""What every part of the apps shares, below them all: the user's error, device names,
splitting a batch over devices."""
from __future__ import annotations

import numpy as np

import minerva as mv


class AppError(Exception):
    """A problem the user can fix (bad flag, missing extra): shown without a traceback."""


def device_names(devices: list[int]) -> str:
    """``"0:cpu:0 (2 cores on host), 1:cpu:1 (...)"``: each device's id and name."""
    return ", ".join(f"{d}:{mv.device_info(d)['name']}" for d in devices)


def split(array: np.ndarray, n_parts: int) -> list[np.ndarray]:
    """``array`` cut along its first axis into ``n_parts`` near-equal, non-empty parts."""
    parts = np.array_split(array, n_parts)
    return [part for part in parts if len(part)]
