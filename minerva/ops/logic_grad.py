"""Gradient rules of the logic ops (``ops.logic``): ``isclose`` returns booleans and has
no gradient."""
from __future__ import annotations

from minerva.ops import logic  # noqa: F401  (registers the ops these rules are for)
from minerva.ops.registry import nondifferentiable

nondifferentiable("isclose")
