"""Intra-op threads of a CPU device: a big kernel whose output rows are independent runs
as row ranges side by side.

Only BLAS calls use several threads by themselves; the rest of NumPy (copies, ufuncs, the
im2col of a convolution, pooling) runs on the calling thread. A CPU device with ``threads
> 1`` therefore cuts the kernel of a *row-split* op into ``threads`` ranges of axis 0 and
runs them at once: one on the device's worker, the others on the device's helper threads
(NumPy releases the GIL inside its loops). Each range has one BLAS thread, so the device
still uses ``threads`` cores.

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

import queue
import threading

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


class _Job:
    """One range handed to a helper thread; ``done`` is set when it has run."""

    __slots__ = ("args", "done", "error", "fp_records")

    def __init__(self, args):
        self.args = args
        self.done = threading.Event()
        self.error = None
        self.fp_records = None


class _Helper:
    """One helper thread of a device: runs the ranges handed to it, one at a time."""

    def __init__(self, name: str):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.thread.start()

    def submit(self, job: _Job) -> None:
        """Run ``job`` (``(fp_state, blas_threads, *range arguments)``) soon."""
        self._jobs.put(job)

    def stop(self) -> None:
        """End the thread after the jobs already handed over."""
        self._jobs.put(None)

    def _loop(self) -> None:
        np.seterr(all="ignore")
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fp_state, blas_threads, *args = job.args
            try:
                BLAS.set_here(blas_threads)
                job.fp_records = fp_errors.run_range(fp_state, _run_range, *args)
            except BaseException as exc:  # raised by the op's own thread
                job.error = exc
            job.done.set()
            job = args = None   # keep none of the op's arrays while waiting for the next


class RowSplitter:
    """The helper threads of one CPU device (started on first use, ``threads - 1`` of
    them at most) and the splitting of its kernels. ``_lock`` guards the helper list."""

    def __init__(self, name: str):
        self._name = name
        self._helpers: list[_Helper] = []
        self._lock = threading.Lock()

    def run(self, threads: int, op_def, xp, arrays, out, attrs) -> bool:
        """Run the kernel as ``threads`` row ranges when it pays; False when it must run
        whole (the caller runs it)."""
        if threads < 2 or not BLAS.per_thread:
            return False
        cut = _row_cut(op_def, arrays, out)
        if cut is None:
            return False
        ranges = _ranges(arrays[cut[0]].shape[0], threads)
        if op_def.blas:
            BLAS.hold(1)
        try:
            if op_def.row_sum:
                outs = [out] + [np.empty_like(out) for _ in ranges[1:]]
                self._run_ranges(op_def.impl, xp, arrays, cut, outs, ranges, attrs)
                for partial in outs[1:]:   # in range order: the same sum every time
                    out += partial
            else:
                self._run_ranges(op_def.impl, xp, arrays, cut, [out] * len(ranges), ranges,
                                 attrs, cut_out=True)
        finally:
            if op_def.blas:
                BLAS.release()
        return True

    def _run_ranges(self, impl, xp, arrays, cut, outs, ranges, attrs,
                    cut_out: bool = False) -> None:
        """Range ``k`` into ``outs[k]`` (its rows of it when ``cut_out``), range 0 on the
        calling thread; the first error is raised once every range has finished."""
        jobs = [(out, rows, rows if cut_out else None) for out, rows in zip(outs, ranges)]
        helpers = self._helpers_for(len(ranges) - 1)
        fp_state = fp_errors.active()
        handed = []
        for helper, (out, rows, out_rows) in zip(helpers, jobs[1:]):
            job = _Job((fp_state, 1, impl, xp, arrays, cut, out, rows, out_rows, attrs))
            helper.submit(job)
            handed.append(job)
        error = None
        out, rows, out_rows = jobs[0]
        try:
            BLAS.set_here(1)
            _run_range(impl, xp, arrays, cut, out, rows, out_rows, attrs)
        except Exception as exc:  # the other ranges still finish before it is raised
            error = exc
        for job in handed:
            job.done.wait()
            error = error or job.error
            fp_errors.add(job.fp_records)
        if error is not None:
            raise error

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
