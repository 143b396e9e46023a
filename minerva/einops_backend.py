"""einops' backend for NArrays: ``einops.rearrange``, ``reduce``, ``repeat``, ``einsum``,
``pack`` and ``unpack`` take NArrays and return NArrays, computed by minerva's own
functions (asynchronous ops, on the arrays' device).

einops finds a backend by walking the subclasses of its ``AbstractBackend`` and keeping
those whose ``framework_name`` is an imported module, then asking each whether it takes
the tensor (``is_appropriate_type``). ``minerva/__init__.py`` imports this module, so when
einops is installed the subclass below exists as soon as minerva is imported (einops is
imported then, about 10 ms); without einops this module defines nothing.
"""
from __future__ import annotations

from minerva.api import interop
from minerva.narray import NArray

try:
    from einops._backends import AbstractBackend
except ImportError:  # einops is not installed: nothing to register
    AbstractBackend = None


class _Backend:
    """The operations einops asks of a backend, each minerva's function of that name
    (the ``minerva`` namespace, found when einops first meets an NArray)."""

    framework_name = "minerva"

    def __init__(self):
        self.mv = interop.namespace_module()

    def is_appropriate_type(self, tensor) -> bool:
        return isinstance(tensor, NArray)

    def from_numpy(self, x):
        return self.mv.array(x)

    def to_numpy(self, x):
        return x.to_numpy()

    def arange(self, start, stop):
        return self.mv.arange(start, stop)

    def stack_on_zeroth_dimension(self, tensors: list):
        return self.mv.stack(tensors)

    def tile(self, x, repeats):
        return self.mv.tile(x, repeats)

    def concat(self, tensors, axis: int):
        return self.mv.concatenate(tensors, axis=axis)

    def is_float_type(self, x) -> bool:
        return x.dtype.kind == "f"

    def add_axis(self, x, new_position):
        return self.mv.expand_dims(x, new_position)

    def einsum(self, pattern, *x):
        return self.mv.einsum(pattern, *x)


MinervaBackend = None if AbstractBackend is None else type(
    "MinervaBackend", (_Backend, AbstractBackend), {"__doc__": "einops' backend of NArrays."})
"""The registered subclass of einops' ``AbstractBackend`` (None without einops)."""

__all__: list = []
