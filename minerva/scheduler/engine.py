"""What both engines share (split by responsibility over five files): here, issuing ops —
registering them with their inputs, copies and overwritten versions — and completing them;
tiny ops run at once without an op node in ``direct``; releases and deletes in
``releases``; waiting in ``waiting``; shutdown, cancelling and the checks of old arrays in
``lifecycle``. ``Engine`` is one class over those parts: one owner of the state, one lock.

State owned by the engine, all guarded by ``_lock``: the PhysicalDag and every node's
runtime info, every storage's ``current`` version and every version's copy cache,
``n_inflight`` (ops registered and not finished), ``n_deleting`` (dead nodes whose block is
not yet back in its store) and ``_failures`` (op errors no ``wait_for_all`` has raised
yet). Decisions are made under the lock; blocks are freed after it is released. Two
lock-free deques (``_releases``, ``_freed``) carry work from threads that must not take the
lock (see ``releases``).

Devices that launch ahead (``Device.launches_ahead``: GPUs) learn of completions lazily,
in bulk; whoever needs one soon says so: a thread that waits (``wait``,
``wait_for_all``, room for more ops, memory, shutdown) *urges* them while it waits, and a
copy to another device of a value only launched, or a write that must wait for launched
readers, *expedites* them once (see doc/design.md, "Launching ahead").
"""
from __future__ import annotations

import collections
import threading
import time

from minerva.common.callsite import format_callsite, user_callsite
from minerva.common.errors import OpError
from minerva.common.fp_errors import capture as capture_errstate
from minerva.dag.nodes import FAILED, LAUNCHED, Storage
from minerva.scheduler import state
from minerva.scheduler.direct import DirectPath
from minerva.scheduler.fields import EngineFields
from minerva.scheduler.lifecycle import Lifecycle
from minerva.scheduler.nested import NestedNow
from minerva.scheduler.releases import Releasing
from minerva.scheduler.waiting import Waiting


class Engine(EngineFields, DirectPath, NestedNow, Releasing, Waiting, Lifecycle):
    """Base of the DAG scheduler and the naive engine; subclasses decide *when* ops run
    (``_start``). ``copy_op`` is the op definition of a copy (the engine inserts copies of
    inputs that live on another device, and copies on write)."""

    kicks_releases = False
    """Whether a release with nothing in flight posts a task to apply it (an engine with
    threads); the naive engine applies releases at its next call instead."""

    def __init__(self, dag, devices, hooks, max_pending: int, copy_op):
        self._release_posted = False   # a posted RELEASE task is pending (kicks_releases)
        self.dag = dag
        self.copy_op = copy_op
        self.devices = devices
        self.hooks = hooks
        self.max_pending = max_pending
        self._low_water = max_pending // 2
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._n_sleepers = 0
        self._n_reclaimers = 0
        self._releases: collections.deque = collections.deque()
        self._freed: collections.deque = collections.deque()
        self._failures: list[OpError] = []
        self.n_inflight = 0
        self.n_deleting = 0
        self.closed = False
        self.forked = False

    # ---- called by user threads -------------------------------------------------------

    def submit(self, op_def, attrs, storages, out_specs, device_id, created_at,
               views=None, writes=None, out_views=None) -> list:
        """Register an op reading the current versions of ``storages`` (through ``views``)
        on ``device_id``, copying inputs that live elsewhere; ``writes`` (None, or a
        storage or None per output) are the storages the outputs overwrite, through
        ``out_views``. ``created_at`` is the user's line, or None to find it only when it
        is needed. Returns one storage per output: the written one, or a new one."""
        if writes is not None:
            self._refuse_foreign(writes)
        if op_def.tiny_inline and not self.hooks.wants_nodes:
            result = self._try_direct(op_def, attrs, storages, out_specs, device_id,
                                      created_at, views, writes, out_views)
            if result is not None:
                return result
        if created_at is None:   # the op is deferred: its user's line is wanted
            created_at = user_callsite()
        with self._lock:
            if self.closed or self.n_inflight >= self.max_pending:
                self.check_open()
                self._wait_for_room_locked()
            ready, dead = [], self._drain_releases_locked() if self._releases else []
            args = [storage.current for storage in storages]
            for i, data in enumerate(args):
                if data.device_id != device_id or storages[i].engine is not self:
                    args[i] = self._foreign_locked(storages[i], device_id, created_at,
                                                   ready, dead)
            bases = None if writes is None else \
                self._bases_locked(writes, created_at, ready, dead)
            op = self._register_locked(op_def, attrs, args, out_specs, device_id,
                                       created_at, views, bases, ready)
            op.out_views = out_views
            op.errstate = capture_errstate()
            if writes is None and len(out_specs) == 1:
                results = [Storage(op.outputs[0], self)]
            else:
                results = self._out_storages(op, writes)
            blocks = self._delete_locked(dead) if dead else None
        if blocks:
            self._free_blocks(blocks)
        if ready:
            self._start(ready)
        return results

    def _foreign_locked(self, storage, device_id: int, created_at, ready: list, dead: list):
        """The version of ``storage`` an op on ``device_id`` reads: its copy there when it
        lives on another device (MinervaError for an array of another runtime)."""
        self._refuse_foreign((storage,))
        return self._copy_locked(storage.current, device_id, created_at, ready, dead)

    def share(self, storage) -> Storage:
        """A second storage holding ``storage``'s current version: a hold on it, as a copy
        cache's, so the next write to ``storage`` copies first and this one keeps the
        value in its buffer (a NumPy array aliasing it sees no later write); released as
        any storage is, when it is dropped."""
        with self._lock:
            data = storage.current
            data.extern_rc += 1
            return Storage(data, self)

    def copy_to(self, storage, device_id: int, created_at) -> Storage:
        """A new storage holding ``storage``'s current value on ``device_id`` (copied at
        most once per value and device, while the value lives)."""
        self._refuse_foreign((storage,))
        with self._lock:
            self.check_open()
            ready, dead = [], []
            copy = self._copy_locked(storage.current, device_id, created_at, ready, dead)
            copy.extern_rc += 1
            result = Storage(copy, self)
            blocks = self._delete_locked(dead) if dead else None
        if blocks:
            self._free_blocks(blocks)
        self._start(ready)
        return result

    # ---- hooks for subclasses ---------------------------------------------------------

    def _start(self, ops: list) -> None:
        """Start ops that became ready (subclasses)."""

    # ---- registration, called with the lock held --------------------------------------

    def _register_locked(self, op_def, attrs, args, out_specs, device_id, created_at,
                         views, bases, ready: list):
        op = state.register_op(self.dag, op_def, attrs, args, out_specs, device_id,
                               created_at, views, bases)
        self.n_inflight += 1
        hooks = self.hooks
        if hooks.active:
            op.t_created = time.perf_counter_ns()
            hooks.op_created(op)
        if state.release_hold(op):
            ready.append(op)
        return op

    def _copy_locked(self, data, device_id: int, created_at, ready: list, dead: list):
        """``data``'s copy on ``device_id``: the cached one, or a new copy op (a failed
        copy is dropped from the cache and made again; appended to ``dead`` when nothing
        else holds it)."""
        copies = data.copies
        cached = copies.get(device_id) if copies else None
        if cached is not None:
            if cached.state != FAILED:
                return cached
            if state.uncache_copy(cached):
                dead.append(cached)
        self.devices.get(device_id)
        if data.state == LAUNCHED:  # it is needed on another device: learn of it soon
            self.devices.table[data.device_id].expedite()
        op = self._register_locked(self.copy_op, {}, [data], (data.spec,), device_id, created_at,
                                   None, None, ready)
        copy = op.outputs[0]
        copy.copy_of = data
        if data.copies is None:
            data.copies = {}
        data.copies[device_id] = copy
        return copy

    def _bases_locked(self, writes, created_at, ready: list, dead: list) -> list:
        """The versions the outputs overwrite. A version another storage or a copy cache
        also holds is copied first (copy on write): the copy becomes the storage's (and
        the version it replaced goes to ``dead`` when that was its last holder)."""
        bases = []
        for storage in writes:
            if storage is None:
                bases.append(None)
                continue
            base = storage.current
            if base.extern_rc != 1:
                op = self._register_locked(self.copy_op, {}, [base], (base.spec,), base.device_id,
                                           created_at, None, None, ready)
                if state.release_handle(base):
                    dead.append(base)
                base = storage.current = op.outputs[0]
            if base.rc and any(d.launches_ahead for d in self.devices.table):
                self._expedite_all()  # the write waits for readers that may be launched
            bases.append(base)
        return bases

    def _out_storages(self, op, writes) -> list:
        """One storage per output: the one written (now holding the new version), or a
        new one."""
        if writes is None:
            return [Storage(out, self) for out in op.outputs]
        results = []
        for out, storage in zip(op.outputs, writes):
            if storage is None:
                storage = Storage(out, self)
            else:
                storage.current = out
            results.append(storage)
        return results

    # ---- completion -------------------------------------------------------

    def _complete_locked(self, op, error, origin: bool):
        """COMPLETE under the lock: the ops that became ready and the blocks to free once
        the lock is released."""
        ready, dead = state.complete_op(self.dag, op, error)
        if origin:
            self._failures.append(error)
        self._settle_inflight_locked()
        if self._releases:
            dead.extend(self._drain_releases_locked())
        return ready, self._delete_locked(dead) if dead else None

    def _settle_inflight_locked(self) -> None:
        """One op left flight: wake sleepers waiting for room or for the end."""
        self.n_inflight -= 1
        if self._n_sleepers and self.n_inflight in (0, self._low_water):
            self._changed.notify_all()


def op_failure(op, exc: BaseException) -> OpError:
    """Wrap an exception raised while running ``op`` into the OpError to store (naming the
    user's line of an inner op when the kernel says which: a jit replay)."""
    inner = getattr(exc, "minerva_created_at", None)
    where = op.where if inner is None else format_callsite(inner)
    return OpError.from_failure(exc, op=op.op_def.name, node_id=op.node_id,
                                device=op.device_id, created_at=where)
