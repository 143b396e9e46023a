"""What both engines share: registering ops, storages and copies, handle counts, waiting,
failures, deletes, cancelling.

State owned here, all guarded by ``_lock``: the PhysicalDag and every node's runtime info,
every storage's ``current`` version and every version's copy cache, ``n_inflight`` (ops
registered and not finished), ``n_deleting`` (dead nodes whose block is not yet back in its
store) and ``_failures`` (op errors no ``wait_for_all`` has raised yet). Decisions are
made under the lock; blocks are freed after it is released. Two lock-free deques carry work from threads that must not take the lock:
``_releases`` (storages dropped by finalizers) and ``_freed`` (counts of blocks freed
outside the lock); both are applied the next time an engine thread holds the lock.

Devices that launch ahead (``Device.launches_ahead``: GPUs) learn of completions lazily,
in bulk; whoever needs one soon says so: a thread that waits (``wait``,
``wait_for_all``, room for more ops, memory, shutdown) *urges* them while it waits, and a
copy to another device of a value only launched, or a write that must wait for launched
readers, *expedites* them once (see doc/design.md, "Launching ahead").
"""
from __future__ import annotations

import collections
import contextlib
import threading
import time

from minerva.common.callsite import format_callsite
from minerva.common.fp_errors import capture as capture_errstate
from minerva.common.errors import CancelledError, MinervaError, OpError, WaitTimeoutError
from minerva.common.logging import get_logger
from minerva.dag.nodes import FAILED, LAUNCHED, Storage
from minerva.scheduler import state

log = get_logger("minerva.scheduler")


class Engine:
    """Base of the DAG scheduler and the naive engine; subclasses decide *when* ops run
    (``_start``). ``copy_op`` is the op definition of a copy (the engine inserts copies of
    inputs that live on another device, and copies on write)."""

    kicks_releases = False
    """Whether a release with nothing in flight posts a task to apply it (an engine with
    threads); the naive engine applies releases at its next call instead."""

    def __init__(self, dag, devices, hooks, max_pending: int, copy_op):
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
        ``out_views``. Returns one storage per output: the written one, or a new one."""
        if writes is not None:
            self._refuse_foreign(writes)
        if (writes is None and out_views is None and len(out_specs) == 1
                and op_def.tiny_inline and not self.hooks.wants_nodes):
            device = self.devices.table[device_id]
            if device.inline_limit and _tiny(storages, out_specs[0], device.inline_limit):
                result = self._run_direct(op_def, attrs, storages, out_specs[0], device,
                                          created_at, views)
                if result is not None:
                    return result
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

    def _run_direct(self, op_def, attrs, storages, spec, device, created_at, views):
        """Run a tiny op now on this thread without an op node (``state.begin_direct``);
        its output storage, or None when it must take the normal path."""
        with self._lock:
            if self.closed or self.n_inflight >= self.max_pending:
                return None
            args = [storage.current for storage in storages]
            for i, data in enumerate(args):
                if data.device_id != device.device_id or storages[i].engine is not self:
                    return None
            out = state.begin_direct(self.dag, args, spec, device.device_id, created_at)
            if out is None:
                return None
            self.n_inflight += 1
            blocks = self._delete_locked(self._drain_releases_locked()) \
                if self._releases else None
        if blocks:
            self._free_blocks(blocks)
        hooks = self.hooks
        if hooks.active:   # the trace: the op as a record, on the caller's track
            record = state.DirectOp(op_def, args, out, created_at)
            hooks.op_started(record, device.device_id, device.caller_track,
                             record.t_created)
        exc = device.run_direct(op_def, attrs, args, views, out)
        if hooks.active:
            hooks.op_finished(record, device.device_id, device.caller_track,
                              time.perf_counter_ns(), exc)
        error = None if exc is None else OpError.from_failure(
            exc, op=op_def.name, node_id=out.node_id, device=device.device_id,
            created_at=format_callsite(created_at))
        with self._lock:
            ready, dead = state.end_direct(self.dag, args, out, error)
            if error is not None:
                self._failures.append(error)
            result = Storage(out, self)
            self._settle_inflight_locked()
            blocks = self._delete_locked(dead) if dead else None
        if blocks:
            self._free_blocks(blocks)
        if ready:
            self._start(ready)
        return [result]

    def _foreign_locked(self, storage, device_id: int, created_at, ready: list, dead: list):
        """The version of ``storage`` an op on ``device_id`` reads: its copy there when it
        lives on another device (MinervaError for an array of another runtime)."""
        self._refuse_foreign((storage,))
        return self._copy_locked(storage.current, device_id, created_at, ready, dead)

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
        if self.n_inflight == 0 and self.kicks_releases:
            self._kick_releases()

    def wait(self, data, timeout: float | None = None) -> None:
        """Block until ``data`` is computed; raise its stored error."""
        if data.state < state.COMPLETED or self.forked:
            self._check_usable()
            with self._urging():
                self._wait_pending(data, timeout)
        if data.error is not None:
            data.error.reported = True
            raise data.error.fresh()

    def wait_for_all(self, timeout: float | None = None) -> None:
        """Block until every registered op has finished and dead storage is freed; then
        raise the first failure not yet reported (once)."""
        self.flush_releases()
        with self._lock, self._urging():
            if not self._sleep_until(self._all_settled, timeout):
                raise WaitTimeoutError(
                    f"wait_for_all: {self.n_inflight} ops still pending after {timeout}s")
            failure = self._take_unreported()
        if failure is not None:
            raise failure

    def reclaim(self, timeout: float) -> bool:
        """Let devices that launch ahead settle what they launched, and pending deletes
        finish (memory pressure); True if any launched work, handle releases or deletes
        were pending (so memory may have been freed)."""
        had_releases = bool(self._releases)
        had_launched = self._flush_launched(timeout)
        self.flush_releases()
        with self._lock:
            had_pending = had_releases or had_launched or self.n_deleting > 0
            self._n_reclaimers += 1
            try:
                self._sleep_until(self._deletes_done, timeout)
            finally:
                self._n_reclaimers -= 1
        return had_pending

    def flush_releases(self) -> None:
        """Apply queued handle releases now and free what died."""
        if self._releases and not self.closed:
            with self._lock:
                blocks = self._delete_locked(self._drain_releases_locked())
            self._free_blocks(blocks)

    def snapshot(self, reader):
        """``reader(dag)`` called under the lock, after applying queued releases: a
        consistent view of the live DAG for printers and tracers (which must copy what
        they keep)."""
        self.flush_releases()
        with self._lock:
            return reader(self.dag)

    def stats(self) -> dict:
        """The DAG's counts (see ``PhysicalDag.stats``)."""
        return self.snapshot(lambda dag: dag.stats())

    def shutdown(self, timeout: float | None = None) -> None:
        """Finish pending work (up to ``timeout``); then cancel ops that have not started
        (their outputs fail with CancelledError), let running kernels finish, and stop
        this engine's threads. Ctrl-C while waiting cancels at once (then re-raises)."""
        if self.closed:
            return
        try:
            finished = self._settle(timeout)
        except KeyboardInterrupt:
            self.cancel("Ctrl-C during mv.shutdown() stopped the runtime before this op "
                        "started")
            raise
        else:
            if not finished:
                self.cancel(f"mv.shutdown(timeout={timeout}) stopped the runtime before "
                            "this op started")
        finally:
            self.closed = True
            self._stop_threads()

    def cancel(self, reason: str) -> None:
        """Cancel every op not yet started: devices report them failed without running
        them; wait for the kernels already running."""
        log.warning("shutdown_cancelled_pending", n_pending=self.n_inflight)
        error = CancelledError(reason)
        for device in self.devices.all():
            device.cancel(error)
        self._settle(None)

    def forget(self) -> None:
        """This engine was inherited by a forked child: it has no threads there, and its
        state must never be touched again (another thread may have held its lock)."""
        self.forked = True
        self.closed = True

    # ---- hooks for subclasses ---------------------------------------------------------

    def _start(self, ops: list) -> None:
        """Start ops that became ready (subclasses)."""

    def _kick_releases(self) -> None:
        """Arrange for queued releases to be applied (subclasses)."""

    def _stop_threads(self) -> None:
        """Stop any threads the engine owns (subclasses)."""

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

    # ---- completion and deletes -------------------------------------------------------

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

    def _drain_releases_locked(self) -> list:
        dead = []
        releases = self._releases
        while releases:
            data = releases.popleft()
            if state.release_handle(data):
                dead.append(data)
        return dead

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

    # ---- waiting ------------------------------------------------------------------------

    def _settle(self, timeout) -> bool:
        """Wait until nothing is in flight or being deleted (False on timeout)."""
        self.flush_releases()
        with self._lock, self._urging():
            return self._sleep_until(self._all_settled, timeout)

    def _wait_for_room_locked(self) -> None:
        if self.n_inflight >= self.max_pending:
            with self._urging():
                self._sleep_until(lambda: self.n_inflight <= self._low_water, None)

    # ---- devices that launch ahead --------------------------------------------------------

    def _ahead_devices(self) -> list:
        return [d for d in self.devices.table if d.launches_ahead]

    @contextlib.contextmanager
    def _urging(self):
        """While the caller waits, devices that launch ahead settle their completions
        promptly (they wait on their newest work instead of polling). Safe under the lock:
        ``Device.urge`` takes only the device's own lock."""
        devices = self._ahead_devices()
        for device in devices:
            device.urge(1)
        try:
            yield
        finally:
            for device in devices:
                device.urge(-1)

    def _expedite_all(self) -> None:
        """Ask every device that launches ahead to settle what it launched so far soon."""
        for device in self.devices.table:
            if device.launches_ahead:
                device.expedite()

    def _flush_launched(self, timeout) -> bool:
        """Let devices that launch ahead settle what they launched so far (the frees of
        what it read follow); True when any had unsettled work."""
        deadline = None if timeout is None else time.monotonic() + timeout
        had = False
        for device in self._ahead_devices():
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            had = device.flush_launched(left) or had
        return had

    def _sleep_until(self, predicate, timeout) -> bool:
        self._n_sleepers += 1
        try:
            return self._changed.wait_for(predicate, timeout)
        finally:
            self._n_sleepers -= 1

    def _all_settled(self) -> bool:
        if self._freed:
            self._apply_freed_locked()
        return self.n_inflight == 0 and self.n_deleting == 0

    def _deletes_done(self) -> bool:
        if self._freed:
            self._apply_freed_locked()
        return self.n_deleting == 0

    def _take_unreported(self):
        unreported = [err for err in self._failures if not getattr(err, "reported", False)]
        self._failures.clear()
        if not unreported:
            return None
        for err in unreported:
            err.reported = True
        first = unreported[0].fresh()
        if len(unreported) > 1:
            first.add_note(f"{len(unreported) - 1} more op(s) failed since the last "
                           "wait_for_all; the first is shown")
        return first

    def _wait_pending(self, data, timeout) -> None:
        with self._lock:
            if data.state >= state.COMPLETED:
                return
            if data.waiter is None:
                data.waiter = threading.Event()
            waiter = data.waiter
        if not waiter.wait(timeout):
            raise WaitTimeoutError(f"wait: {data.describe()} was not computed after "
                                   f"{timeout}s")

    def check_open(self, data=None) -> None:
        """MinervaError when this runtime was shut down (or inherited through fork), saying
        whether ``data`` (the value of an array of this runtime, when given) was computed."""
        if not self.closed:
            return
        if self.forked:
            self._check_usable()
        raise MinervaError(_shut_down_message(data))

    def _refuse_foreign(self, storages) -> None:
        """MinervaError for a storage (None: none) of another runtime (a new op of this one
        cannot read or write it)."""
        for storage in storages:
            if storage is not None and storage.engine is not self:
                storage.engine.check_open(storage.current)
                raise MinervaError("this NArray belongs to another minerva runtime")

    def _check_usable(self) -> None:
        if self.forked:
            raise MinervaError("this array belongs to the minerva runtime of the parent "
                               "process (inherited through fork); a forked child starts "
                               "its own runtime: make new arrays there")
        if self.closed:
            raise MinervaError("the minerva runtime was shut down before this array was "
                               "computed; its value is lost")


def _shut_down_message(data) -> str:
    """Why an array of a shut-down runtime cannot be used in new ops (``data``: its value;
    None when it is not known)."""
    if data is None:
        return ("the minerva runtime was shut down; arrays made before mv.shutdown() cannot "
                "be used in new ops")
    if data.state == state.COMPLETED:
        return ("this array was computed but belongs to a minerva runtime that was shut "
                "down (mv.shutdown()): it cannot be used in new ops; its values stay "
                "readable (x.to_numpy()), and mv.array(x.to_numpy()) makes a new array")
    cancelled = isinstance(getattr(data.error, "__cause__", None), CancelledError)
    if data.error is not None and not cancelled:
        return ("this array belongs to a minerva runtime that was shut down, and its op "
                "failed (x.wait() raises the error): it cannot be used in new ops")
    return ("the minerva runtime was shut down before this array was computed; its value "
            "is lost, and it cannot be used in new ops")


def _tiny(storages, spec, limit: int) -> bool:
    """Whether an op reading ``storages`` and making ``spec`` touches at most ``limit``
    bytes."""
    total = spec.nbytes
    for storage in storages:
        total += storage.current.spec.nbytes
    return total <= limit


def op_failure(op, exc: BaseException) -> OpError:
    """Wrap an exception raised while running ``op`` into the OpError to store (naming the
    user's line of an inner op when the kernel says which: a jit replay)."""
    inner = getattr(exc, "minerva_created_at", None)
    where = op.where if inner is None else format_callsite(inner)
    return OpError.from_failure(exc, op=op.op_def.name, node_id=op.node_id,
                                device=op.device_id, created_at=where)
