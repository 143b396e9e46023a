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
thread count. An op whose output sums over the rows of its cut inputs (``OpDef.row_sum``:
the filter and bias gradients) runs each range into a partial output; the partials are
added in range order, the same sum every time for a given thread count. Reductions are
not split. A jit replay (``OpDef.nested``) gets the device's kernel runner and sends its
big steps through it.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from minerva.device.blas import BLAS

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
    BLAS.apply(1)
    part = [a[rows] if i in cut else a for i, a in enumerate(arrays)]
    impl(xp, *part, out=out if out_rows is None else out[out_rows], **attrs)


def _init_helper() -> None:
    np.seterr(all="ignore")


class RowSplitter:
    """The helper threads of one CPU device (started on first use, ``threads - 1`` of
    them at most) and the splitting of its kernels."""

    def __init__(self, name: str):
        self._name = name
        self._pool: ThreadPoolExecutor | None = None
        self._size = 0
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
            BLAS.apply(threads)   # the caller's count again (a jit replay goes on with it)
        return True

    def _run_ranges(self, impl, xp, arrays, cut, outs, ranges, attrs,
                    cut_out: bool = False) -> None:
        """Range ``k`` into ``outs[k]`` (its rows of it when ``cut_out``), range 0 on the
        calling thread; the first error is raised once every range has finished."""
        jobs = [(out, rows, rows if cut_out else None) for out, rows in zip(outs, ranges)]
        pool = self._helpers(len(ranges) - 1)
        futures = [pool.submit(_run_range, impl, xp, arrays, cut, out, rows, out_rows, attrs)
                   for out, rows, out_rows in jobs[1:]]
        error = None
        out, rows, out_rows = jobs[0]
        try:
            _run_range(impl, xp, arrays, cut, out, rows, out_rows, attrs)
        except Exception as exc:  # the other ranges still finish before it is raised
            error = exc
        for future in futures:
            error = error or future.exception()
        if error is not None:
            raise error

    def _helpers(self, n: int) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None or self._size < n:
                old, self._size = self._pool, n
                self._pool = ThreadPoolExecutor(n, f"{self._name}-helper", _init_helper)
                if old is not None:
                    old.shutdown(wait=False)
            return self._pool

    def shutdown(self) -> None:
        """Stop the helper threads (after the ranges they run)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
