"""Intra-op threads of a CPU device: a big kernel whose output rows are independent runs
as row ranges side by side.

Only BLAS calls use several threads by themselves; the rest of NumPy (copies, ufuncs, the
im2col of a convolution, pooling) runs on the calling thread. A CPU device with ``threads
> 1`` therefore cuts the kernel of a *row-split* op into ranges of axis 0 (``threads``,
or ``RANGES_PER_THREAD`` per thread for an element-wise op) and runs them at once: the
thread that runs the op (the device's worker) wakes the device's helper threads, and each
thread claims the next range nobody has claimed yet until none is left (NumPy releases the
GIL inside its loops). A helper that wakes late (on a busy machine a woken thread may wait
milliseconds for a core) costs nothing: the op's thread has run the ranges meanwhile.
Each range has one BLAS thread, so the device still uses ``threads`` cores.

Whether a split pays is measured on the splits themselves: when the ranges of a split ran
one after the other rather than side by side (their threads' CPU time over the split's
wall time below ``PAYS``: the helpers found no free core), the next element-wise and
row-split kernels run whole for a while (``_Gauge``: 1, 2, 4 ... up to ``MAX_SKIP``
kernels, then a split probes again). Splitting or not never changes their numbers; a
``row_sum`` kernel, whose sum does depend on its ranges, and a kernel that calls BLAS,
whose numbers depend on its BLAS thread count (one a range, the device's whole), are
always split by the same rule (their size).

An op is row-split when its ``OpDef.row_split`` names the inputs whose axis 0 is the
output's axis 0 (output row ``i`` depends only on row ``i`` of those and on the whole of
the others): the convolution's forward and backward-data, pooling and its backward, the
activations' backward. ``elementwise`` ops are row-split by definition: an input whose
axis 0 has the output's length is cut, one that broadcasts is passed whole. Every element
is computed as the whole kernel would compute it, so the numbers do not depend on the
thread count; a kernel that calls BLAS holds one BLAS thread per range (``blas.BLAS``).
An op whose output sums over the rows of its cut inputs (``OpDef.row_sum``: the filter
and bias gradients) runs each range into a partial output; the partials are added in
range order, the same sum every time for a given thread count. Reductions are not split.
A jit replay (``OpDef.nested``) sends the steps this device routes to it
(``CpuDevice.routes_kernel``) through the same runner. The ranges run under the op's
floating-point error state (``common.fp_errors``), and the errors they meet are the op's.

The helper threads are the device's own (not a ``concurrent.futures`` pool, which refuses
work once the interpreter begins to exit): work pending at exit, ``atexit`` handlers and
threads that outlive the main thread all still split their kernels.
"""
from __future__ import annotations

import itertools
import queue
import threading
from time import perf_counter_ns, thread_time_ns

import numpy as np

from minerva.common import fp_errors
from minerva.common.logging import get_logger
from minerva.device.cpu.blas import BLAS

log = get_logger("minerva.device")

#: A kernel is split only when its output and cut inputs hold at least this many bytes:
#: below it, handing a range to another thread costs more than it saves.
MIN_SPLIT_BYTES = 1 << 20

#: An element-wise output smaller than this is never split: a quick test that keeps the
#: path of small ops short (the output and its cut inputs must reach MIN_SPLIT_BYTES).
SPLIT_OUT_BYTES = MIN_SPLIT_BYTES // 4

#: An element-wise kernel is cut into this many ranges per thread, so a helper that wakes
#: late still takes a share of what is left (other row-split kernels, whose ranges call
#: BLAS, into one per thread).
RANGES_PER_THREAD = 2

#: Whether the op's thread runs every range no helper claimed first (else only its first:
#: tests that need the helpers to run set it false).
CALLER_STEALS = True

#: A split *pays* when its ranges ran at least this many at once on average (their threads'
#: CPU time over the split's wall time); one that ran them one after the other (its
#: threads shared a core: a busy machine) makes the next kernels run whole for a while.
PAYS = 1.3

#: At most this many splittable element-wise kernels run whole before the next split
#: probes the machine again.
MAX_SKIP = 64

#: How long the op's thread waits for ranges a helper claimed (a kernel's range never takes
#: this long; reaching it is a bug, raised as such).
HELPER_TIMEOUT_S = 600.0


def _row_cut(op_def, arrays, out) -> tuple | None:
    """The indices of the inputs cut into row ranges, or None when the kernel runs whole
    (not row-split, one row, a tuple of outputs, or too small to pay)."""
    if type(out) is not np.ndarray or out.ndim == 0:
        return None
    if op_def.row_split is not None:
        cut = op_def.row_split
    elif op_def.elementwise:
        n = out.shape[0]
        cut = tuple(i for i, a in enumerate(arrays)
                    if isinstance(a, np.ndarray) and a.ndim == out.ndim and a.shape[0] == n)
    else:
        return None
    if not cut or arrays[cut[0]].shape[0] < 2 \
            or out.nbytes + sum(arrays[i].nbytes for i in cut) < MIN_SPLIT_BYTES:
        return None
    return cut


def _ranges(n: int, parts: int) -> list[slice]:
    """``parts`` contiguous, near-equal row ranges of ``n`` rows (none empty)."""
    parts = min(parts, n)
    bounds = [n * k // parts for k in range(parts + 1)]
    return [slice(bounds[k], bounds[k + 1]) for k in range(parts)]


def _run_range(impl, xp, arrays, cut, out, rows, out_rows, attrs) -> None:
    """The kernel on rows ``rows`` of the cut inputs, into rows ``out_rows`` of ``out``
    (None: the whole of ``out``, a partial sum of a kernel that sums over rows)."""
    part = [a[rows] if i in cut else a for i, a in enumerate(arrays)]
    impl(xp, *part, out=out if out_rows is None else out[out_rows], **attrs)


class _Task:
    """One split kernel: its ranges, claimed one at a time — by the thread that runs the
    op and by the helpers it woke — until none is left.

    A helper that has not woken yet when the op's own thread finished its range costs
    nothing: that thread claims the range itself (on a busy machine a woken thread may
    wait milliseconds for a core). Range ``k`` always covers the same rows and writes
    the same output, whichever thread runs it, so the numbers do not depend on who ran
    what. ``_lock`` guards ``n_left``, ``errors`` and ``fp_records``; ``done`` is set
    when the last range has run."""

    __slots__ = (
        "_lock",
        "arrays",
        "attrs",
        "claim",
        "cpu_ns",
        "cut",
        "cut_out",
        "done",
        "errors",
        "fp_records",
        "fp_state",
        "impl",
        "n_left",
        "outs",
        "ranges",
        "xp",
    )

    def __init__(self, impl, xp, arrays, cut, outs, ranges, attrs, cut_out, fp_state):
        self.impl, self.xp, self.arrays, self.cut = impl, xp, arrays, cut
        self.outs, self.ranges, self.attrs, self.cut_out = outs, ranges, attrs, cut_out
        self.fp_state = fp_state
        self.claim = itertools.count().__next__   # one call, atomic under the GIL
        self.n_left = len(ranges)
        self.errors: dict = {}
        self.fp_records: list = []
        self.cpu_ns = 0
        self._lock = threading.Lock()
        self.done = threading.Event()

    def work(self, helper: bool, steal: bool = True) -> None:
        """Run unclaimed ranges until none is left, or only the first one claimed when not
        ``steal`` (a helper under the op's error state, its errors kept for the op's
        thread; that thread's own are its kernel's)."""
        n, claim = len(self.ranges), self.claim
        k = claim()
        while k < n:
            self._run(k, helper)
            if not steal:
                return
            k = claim()

    def _run(self, k: int, helper: bool) -> None:
        rows = self.ranges[k]
        args = (self.impl, self.xp, self.arrays, self.cut, self.outs[k], rows,
                rows if self.cut_out else None, self.attrs)
        records = error = None
        t0 = thread_time_ns()
        try:
            if helper:
                records = fp_errors.run_range(self.fp_state, _run_range, *args)
            else:
                _run_range(*args)
        except BaseException as exc:  # noqa: BLE001  (raised by the op's thread, once all ran)
            error = exc
        spent = thread_time_ns() - t0
        with self._lock:
            self.cpu_ns += spent
            if error is not None:
                self.errors[k] = error
            if records:
                self.fp_records.extend(records)
            self.n_left -= 1
            last = self.n_left == 0
        if last:
            self.done.set()

    def first_error(self):
        """The error of the lowest range that failed (the same one, whoever ran it)."""
        return self.errors[min(self.errors)] if self.errors else None


class _Helper:
    """One helper thread of a device: works on the split kernels handed to it, one at a
    time."""

    def __init__(self, name: str):
        self._tasks: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.thread.start()

    def submit(self, task: _Task) -> None:
        """Work on ``task`` soon (its ranges still unclaimed then)."""
        self._tasks.put(task)

    def stop(self) -> None:
        """End the thread after the tasks already handed over."""
        self._tasks.put(None)

    def _loop(self) -> None:
        np.seterr(all="ignore")
        while True:
            task = self._tasks.get()
            if task is None:
                return
            BLAS.set_here(1)
            task.work(helper=True)
            task = None   # keep none of the op's arrays while waiting for the next


class _Gauge:
    """Whether splitting an element-wise kernel pays on this machine now, judged from the
    splits themselves (``judge``): after a split that did not pay (see ``PAYS``) the next
    ``skip`` splittable kernels run whole, ``skip`` doubling after each such split up to
    ``MAX_SKIP``; one that paid splits every kernel again. It decides only where ranges
    run, never what they compute: an element-wise kernel gives the same numbers whole or
    split. Read and written by the threads that run kernels without a lock (a race only
    moves a decision by one kernel)."""

    __slots__ = ("backoff", "skip")

    def __init__(self):
        self.skip = 0
        self.backoff = 0

    def wanted(self) -> bool:
        """Whether to split the next splittable kernel."""
        if self.skip:
            self.skip -= 1
            return False
        return True

    def judge(self, cpu_ns: int, wall_ns: int) -> None:
        """A split's ranges took ``cpu_ns`` of their threads' time in ``wall_ns``."""
        if cpu_ns >= PAYS * wall_ns:
            self.backoff = 0
        else:
            self.backoff = min(MAX_SKIP, 2 * self.backoff or 1)
            self.skip = self.backoff


class RowSplitter:
    """The helper threads of one CPU device (started on first use, ``threads - 1`` of
    them at most) and the splitting of its kernels. ``_lock`` guards the helper list;
    ``gauge`` judges whether splitting element-wise kernels pays now (``_Gauge``)."""

    def __init__(self, name: str):
        self._name = name
        self._helpers: list[_Helper] = []
        self._lock = threading.Lock()
        self.gauge = _Gauge()

    def run(self, threads: int, op_def, xp, arrays, out, attrs) -> bool:
        """Run the kernel as row ranges on ``threads`` threads when it pays; False when it
        must run whole (the caller runs it)."""
        if threads < 2 or not BLAS.per_thread:
            return False
        cut = _row_cut(op_def, arrays, out)
        if cut is None or not (op_def.row_sum or op_def.blas or self.gauge.wanted()):
            return False
        n_rows = arrays[cut[0]].shape[0]
        if op_def.blas:
            BLAS.hold(1)
        try:
            if op_def.row_sum:   # one partial output per thread, added in range order
                ranges = _ranges(n_rows, threads)
                outs = [out] + [np.empty_like(out) for _ in ranges[1:]]
                self._run_ranges(threads, op_def.impl, xp, arrays, cut, outs, ranges, attrs)
                for partial in outs[1:]:   # the same sum every time
                    out += partial
            else:
                per_thread = RANGES_PER_THREAD if op_def.elementwise else 1
                ranges = _ranges(n_rows, threads * per_thread)
                t0 = perf_counter_ns()
                task = self._run_ranges(threads, op_def.impl, xp, arrays, cut,
                                        [out] * len(ranges), ranges, attrs, cut_out=True)
                self.gauge.judge(task.cpu_ns, perf_counter_ns() - t0)
        finally:
            if op_def.blas:
                BLAS.release()
        return True

    def _run_ranges(self, threads, impl, xp, arrays, cut, outs, ranges, attrs,
                    cut_out: bool = False) -> _Task:
        """Range ``k`` into ``outs[k]`` (its rows of it when ``cut_out``), on the calling
        thread and up to ``threads - 1`` helpers, whoever claims it first; the error of
        the lowest failed range is raised once every range has run. The task, run."""
        task = _Task(impl, xp, arrays, cut, outs, ranges, attrs, cut_out, fp_errors.active())
        for helper in self._helpers_for(min(threads, len(ranges)) - 1):
            helper.submit(task)
        BLAS.set_here(1)
        task.work(helper=False, steal=CALLER_STEALS)
        if not task.done.wait(HELPER_TIMEOUT_S):
            raise RuntimeError(f"internal: a row range did not finish in {HELPER_TIMEOUT_S}s")
        fp_errors.add(task.fp_records)
        error = task.first_error()
        if error is not None:
            raise error
        return task

    def _helpers_for(self, n: int) -> list[_Helper]:
        with self._lock:
            while len(self._helpers) < n:
                name = f"{self._name}-helper_{len(self._helpers)}"
                self._helpers.append(_Helper(name))
            return self._helpers[:n]

    def shutdown(self, timeout: float | None = 60.0) -> None:
        """Stop the helper threads (after the ranges they run)."""
        with self._lock:
            helpers, self._helpers = self._helpers, []
        for helper in helpers:
            helper.stop()
        for helper in helpers:
            helper.thread.join(timeout)
            if helper.thread.is_alive():
                log.warning("cpu_helper_did_not_stop", thread=helper.thread.name)
