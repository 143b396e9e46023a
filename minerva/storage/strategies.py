"""Size-rounding strategies of the stores, selected by name (``MINERVA_MEM_POOL``).

A strategy turns a requested byte count into the size of the block the store hands out, and
says whether freed blocks are cached for reuse:

- ``pooled`` (default, like CuPy's pool): round up to a multiple of :data:`GRANULE` (512 B);
  cache freed blocks, split and merge them.
- ``round`` (MXNet's Round strategy): round up to a power of two up to :data:`ROUND_CUTOFF`
  (16 MiB, MXNet's default cutoff ``2**24``); above it, round up to a multiple of
  :data:`ROUND_PAGE` (4 KiB), so a large request wastes at most one page instead of up to half
  its size. Cached like ``pooled``.
- ``naive``: round up to a multiple of :data:`GRANULE` and cache nothing: every free goes
  straight back to the system. The baseline the others are measured against.

Every size is at least one granule: a zero-byte request gets a block of :data:`GRANULE` bytes,
so every block has its own address range. All rounded sizes are multiples of the granule.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

GRANULE = 512
"""Every block size is a multiple of this many bytes (and at least this many)."""

ROUND_CUTOFF = 1 << 24
"""``round`` strategy: requests up to this size (16 MiB) are rounded to a power of two."""

ROUND_PAGE = 4096
"""``round`` strategy: requests above :data:`ROUND_CUTOFF` are rounded to a multiple of this."""


def round_granule(nbytes: int) -> int:
    """``nbytes`` rounded up to a multiple of :data:`GRANULE`, at least one granule."""
    if nbytes <= GRANULE:
        return GRANULE
    return (nbytes + GRANULE - 1) // GRANULE * GRANULE


def round_power_of_two(nbytes: int) -> int:
    """The ``round`` strategy: a power of two up to :data:`ROUND_CUTOFF` (at least one
    granule), above it a multiple of :data:`ROUND_PAGE`."""
    if nbytes <= GRANULE:
        return GRANULE
    if nbytes <= ROUND_CUTOFF:
        return 1 << (nbytes - 1).bit_length()
    return (nbytes + ROUND_PAGE - 1) // ROUND_PAGE * ROUND_PAGE


@dataclasses.dataclass(frozen=True)
class Strategy:
    """A named rounding rule, and whether the store caches freed blocks under it."""

    name: str
    round_size: Callable[[int], int]
    caches: bool


STRATEGIES = {
    "pooled": Strategy("pooled", round_granule, caches=True),
    "round": Strategy("round", round_power_of_two, caches=True),
    "naive": Strategy("naive", round_granule, caches=False),
}
"""Every strategy by name; the names are those ``MINERVA_MEM_POOL`` accepts."""


def get_strategy(name: str | Strategy) -> Strategy:
    """The strategy called ``name`` (a Strategy is returned as it is); ValueError if unknown."""
    if isinstance(name, Strategy):
        return name
    try:
        return STRATEGIES[name]
    except KeyError:
        choices = ", ".join(STRATEGIES)
        raise ValueError(f"unknown memory pool strategy {name!r}; use one of {choices}") from None
