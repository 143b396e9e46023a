"""minerva's broadcast rule (``ops.elementwise.broadcast_shapes``, the shape rule of every
element-wise op and assignment) against ``numpy.broadcast_shapes`` on random shapes."""
from __future__ import annotations

import numpy as np
import pytest

from minerva.ops.elementwise import broadcast_shapes


def _outcome(function, shapes):
    try:
        return tuple(function(*shapes))
    except ValueError:
        return "error"


@pytest.mark.parametrize("seed", range(20))
def test_broadcast_shapes_match_numpy(seed):
    rng = np.random.default_rng(seed)
    for _ in range(500):
        shapes = [tuple(int(n) for n in rng.choice([0, 1, 2, 3], size=rng.integers(0, 5)))
                  for _ in range(rng.integers(1, 4))]
        assert _outcome(broadcast_shapes, shapes) == _outcome(np.broadcast_shapes, shapes), \
            shapes
