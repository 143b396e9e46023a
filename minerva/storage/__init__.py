"""Per-device memory stores: pooled allocation over an injected allocator, with stats."""
from __future__ import annotations

from minerva.common.hooks import NULL_HOOKS
from minerva.storage.base import Allocator, Block, DataStore
from minerva.storage.pooled import PooledDataStore
from minerva.storage.strategies import STRATEGIES, get_strategy

__all__ = ["Allocator", "Block", "DataStore", "PooledDataStore", "STRATEGIES", "get_strategy",
           "make_store"]


def make_store(allocator: Allocator, strategy: str = "pooled", limit_bytes: int | None = None,
               device_id: int = 0, hooks=NULL_HOOKS) -> DataStore:
    """The DataStore for one device: ``strategy`` is a ``MINERVA_MEM_POOL`` name
    (``pooled``, ``round``, ``naive``), ``limit_bytes`` the ``MINERVA_MEM_LIMIT`` (None: no
    limit), ``hooks`` the bus that hears ``mem_alloc``/``mem_free``."""
    return PooledDataStore(allocator, strategy=strategy, limit_bytes=limit_bytes,
                           device_id=device_id, hooks=hooks)
