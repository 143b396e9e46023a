"""Gradient rules of the set ops (``ops.sets``): ``isin`` returns booleans and has no
gradient."""
from __future__ import annotations

from minerva.ops import sets  # noqa: F401  (registers the ops these rules are for)
from minerva.ops.registry import nondifferentiable

nondifferentiable("isin")
