"""Releases and deletes, a part of the engine: handles dropped by user code, dead values
removed from the DAG, their blocks returned to the stores (``Engine`` inherits it).

Two lock-free deques carry work from threads that must not take the lock: ``_releases``
(storages dropped by finalizers, which may run on any thread at any time) and ``_freed``
(counts of blocks returned to their stores outside the lock); both are applied the next
time an engine thread holds the lock. ``n_deleting`` (under the lock) counts dead values
whose block is not yet back in its store. Blocks are freed after the lock is released,
except on the lean direct path (``_reap_locked``), which frees them under it — a store's
lock is only ever taken inside the engine's, never around it — or hands one straight to
the op's new output.
"""
from __future__ import annotations

from minerva.dag.nodes import COMPLETED
from minerva.scheduler import state


class Releasing:
    """Handle releases and deletes of an engine (mixed into ``Engine``)."""

    def release(self, data) -> None:
        """One storage holding ``data`` is gone. Safe from any thread and from finalizers:
        it never takes the engine lock, only queues the release.

        Queued releases are applied by the next op registered or completed; only when no op
        is in flight (so no completion will come) is a RELEASE task posted. An op that
        completes concurrently decrements ``n_inflight`` before it drains the queue, so a
        release appended too late for its drain sees the decremented count."""
        if self.closed:
            return
        self._releases.append(data)
        if self.n_inflight == 0 and self.kicks_releases and not self._release_posted:
            self._kick_releases()   # (a stale flag only delays it to the next op's drain)

    def flush_releases(self) -> None:
        """Apply queued handle releases now and free what died."""
        if self._releases and not self.closed:
            with self._lock:
                blocks = self._delete_locked(self._drain_releases_locked())
            self._free_blocks(blocks)

    def _drain_releases_locked(self) -> list:
        return state.drain_releases(self._releases)

    def _reap_locked(self, device_id: int, nbytes: int):
        """The lean path's release, under the lock: apply the queued releases in one
        pass; a value that died gives its block straight back to its store (a store's lock
        is only ever taken inside the engine's, never around it) — all but one block of
        ``nbytes`` bytes on ``device_id``, which the caller takes over as it is (a free and
        an alloc in one step, counted by the store's ``n_recycled``).
        Returns ``(that block or None, blocks to free after the lock)``: the latter those
        of values that died with cached copies, taken the general way."""
        releases, values, table = self._releases, self.dag.data, self.devices.table
        kept = dead = None
        while releases:
            data = releases.popleft()
            data.extern_rc -= 1
            if data.rc or data.extern_rc or data.state < COMPLETED or data.dead:
                continue
            data.dead = True
            block = data.block
            if data.copies is not None or block is None:
                dead = [data] if dead is None else dead + [data]
                continue
            del values[data.node_id]
            data.block = data.array = None
            if kept is None and block.nbytes == nbytes and data.device_id == device_id:
                kept = block
            else:
                table[data.device_id].free(block)
        return kept, (self._delete_locked(dead) if dead is not None else None)

    def _delete_locked(self, dead: list) -> list:
        """Remove dead nodes (and copies that die with them); their blocks, to free after
        the lock is released (counted in ``n_deleting`` until then)."""
        blocks = []
        dag, hooks = self.dag, self.hooks
        for data in dead:  # grows while we walk it: cached copies die with their source
            block, more = state.delete_data(dag, data)
            if block is not None:
                blocks.append((data.device_id, block))
            if hooks.active:
                hooks.data_deleted(data)
            dead.extend(more)
        self.n_deleting += len(blocks)
        if self._freed:
            self._apply_freed_locked()
        return blocks

    def _free_blocks(self, blocks) -> None:
        """Return blocks to their stores (outside the lock); then count them freed."""
        if not blocks:
            return
        table = self.devices.table
        for device_id, block in blocks:
            table[device_id].free(block)
        self._freed.append(len(blocks))
        if self._n_sleepers:
            with self._lock:
                self._apply_freed_locked()

    def _apply_freed_locked(self) -> None:
        freed = self._freed
        n = 0
        while freed:
            n += freed.popleft()
        self.n_deleting -= n
        if n and self._n_sleepers and self._deletes_awaited():
            self._changed.notify_all()

    def _deletes_awaited(self) -> bool:
        """Whether the deletes just done may be what a sleeper waits for: all deletes are
        done and either nothing is in flight (wait_for_all) or a reclaimer waits."""
        return self.n_deleting == 0 and (self.n_inflight == 0 or self._n_reclaimers > 0)

    def _kick_releases(self) -> None:
        """Arrange for queued releases to be applied (subclasses)."""
