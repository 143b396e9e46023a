"""Cache-blocked fused kernels on CPU devices: the steps a fused kernel holds run with
their own NumPy kernels, block by block of output rows, through scratch buffers of one
block (``BLOCK_BYTES``), so no intermediate array is ever made whole and the data of a
block stays in the core's cache from one step to the next.

Each step runs exactly the kernel its eager op runs, on a slice of its operands: the
results are NumPy's bits for every op, transcendental functions included, and the NumPy
floating-point error state applies as for unfused steps. A block is a range of rows of the
output's axis 0; an input of the output's rank and row count is cut into the same rows,
the others (broadcast along axis 0) are passed whole, as the row splitter of a CPU device
cuts element-wise kernels (``minerva.device.cpu.split``) — which also cuts these kernels
over the device's threads (their OpDef is ``elementwise``). Scratch buffers are reused by
liveness within a block: a ufunc step writes in place into the buffer of an input that it
reads last (of the same item size: the overlap is exact, and NumPy's loops then give the
bits of an out-of-place call), so a block's steps touch few buffers; ``where`` and the
ops run by their own kernels never write over their inputs.

A division by a power of two (``x / 2.0``) runs as the multiplication by its reciprocal:
both round the same exact quotient, so the bits and the floating-point errors are the
division's, at the cost of a multiplication.
"""
from __future__ import annotations

import threading

import numpy as np

from minerva.ops.fusable import is_scalar

BLOCK_BYTES = 512 * 1024
"""The bytes of one block of the output (and of each scratch buffer): on the machine of
doc/performance.md, Black-Scholes' 61-step kernel takes the least CPU time with 512 KiB
blocks, on one thread and on each of two (256 KiB: 4 % more, 1 MiB: 15 % more)."""


class BlockedKernel:
    """The ``program`` of a fused kernel (``(op_def, attrs, refs, spec)`` per step, ``refs``
    naming ``("leaf", k)`` inputs or ``("tmp", j)`` results of earlier steps) run block by
    block; ``impl(xp, *arrays, out=)``, ``bind`` as ops have. ``in_dtypes``: the inputs'
    dtypes.

    A block runs on **registers**: the inputs' rows, then each step's target (the last is
    the output's rows), then the buffer of ``where``'s masks; each step is a closure over
    the indices of its registers."""

    source = None

    def __init__(self, program: list, out_shape: tuple, in_dtypes: list):
        self.program = program
        self.blocked = len(out_shape) >= 1 and all(
            spec.shape == out_shape for *_, spec in program)
        self.elementwise = self.blocked   # a CPU device may cut it into row ranges
        n_in = len(in_dtypes)
        dtypes = list(in_dtypes) + [spec.dtype for *_, spec in program]
        made = []
        for k, (op_def, attrs, refs, spec) in enumerate(program):
            where = [j if kind == "leaf" else n_in + j for kind, j in refs]
            made.append(_caller(op_def, attrs, spec.dtype, where, n_in + k,
                                [dtypes[i] for i in where], n_in + len(program)))
        self.calls = [call for call, _ in made]
        self.slots, self.n_slots = _slots(program, [in_place for _, in_place in made])
        self._kept = threading.local()
        self.source = "; ".join(f"t{k} = {op.name}({', '.join(map(_ref, refs))})"
                                for k, (op, _, refs, _) in enumerate(program))

    def impl(self, xp, *arrays, out) -> None:
        """Run the program into ``out``, block by block of rows."""
        if not out.size:
            return
        if not self.blocked:
            targets = [np.empty(spec.shape, spec.dtype) for *_, spec in self.program[:-1]]
            self._run(arrays, targets + [out], np.empty(out.nbytes, np.uint8))
            return
        rows = out.shape[0]
        step = max(1, BLOCK_BYTES // max(1, out.nbytes // rows))
        block = (min(step, rows),) + out.shape[1:]
        targets, masks = self._scratch(block)
        cut = [a.ndim == out.ndim and a.shape[0] == rows and rows > 1 for a in arrays]
        for start in range(0, rows, step):
            stop = min(rows, start + step)
            if stop - start < block[0]:
                targets = [t[:stop - start] for t in targets]
            self._run([a[start:stop] if c else a for a, c in zip(arrays, cut)],
                      targets + [out[start:stop]], masks)

    def bind(self, xp, arrays, out, **_attrs):
        """The kernel on these arrays, as a callable of no arguments."""
        return lambda: self.impl(xp, *arrays, out=out)

    def _scratch(self, shape) -> tuple:
        """Each step's target but the last (a view of ``shape`` on its slot's buffer: one
        per slot, of the widest dtype the slot holds) and the buffer of ``where``'s masks;
        made once per thread and block shape, and kept (a replay writes them at once, in
        cache, with no page to fault in)."""
        kept = getattr(self._kept, "scratch", None)
        if kept is not None and kept[0] == shape:
            return kept[1], kept[2]
        made = self._made_scratch(shape)
        self._kept.scratch = (shape, *made)
        return made

    def _made_scratch(self, shape) -> tuple:
        widths = [0] * self.n_slots
        for k, (*_, spec) in enumerate(self.program[:-1]):
            widths[self.slots[k]] = max(widths[self.slots[k]], spec.dtype.itemsize)
        count = int(np.prod(shape, dtype=np.int64))
        buffers = [np.empty(count * w, np.uint8) for w in widths]
        targets = [buffers[self.slots[k]][:count * spec.dtype.itemsize].view(spec.dtype)
                   .reshape(shape) for k, (*_, spec) in enumerate(self.program[:-1])]
        has_where = any(op.name == "where" for op, *_ in self.program)
        return targets, np.empty(count if has_where else 0, np.uint8)

    def _run(self, arrays, targets, masks) -> None:
        """The steps once, step ``k`` into ``targets[k]`` (``masks``: a buffer for
        ``where``'s masks, a byte an element of the output)."""
        registers = [*arrays, *targets, masks]
        for call in self.calls:
            call(registers)


_KEYWORD_OUT = frozenset({"maximum", "minimum"})
"""Ufuncs whose ``out`` goes by keyword (NumPy deprecates a positional one)."""


def _caller(op_def, attrs, dtype, ins: list, out: int, in_dtypes: list, masks: int):
    """``(call, in_place)``: ``call(registers)`` runs the step's kernel on registers
    ``ins`` into register ``out`` (``masks``: the register of ``where``'s masks). The ufunc
    ops call their ufunc, with ``out`` by position and a scalar made once into a 0-d array
    of the dtype NumPy computes in (as the replay's bound steps,
    ``ops.elementwise._bind_scalar``); a division by a power of two multiplies by its
    reciprocal, in ``dtype`` (the result's); ``where`` selects bits; the other ops run
    their op's kernel. ``in_place`` tells whether ``out`` may be one of the operands (a
    ufunc's loop reads each element before it writes it). Few Python operations a call: a
    block runs every step, and the interpreter lock is held meanwhile."""
    name = op_def.name
    base = name.removesuffix("_scalar")
    ufunc = getattr(np, "maximum" if name == "relu" else base, None)
    if name == "where" and dtype.kind in "fiu":
        return (lambda r: _select(r[masks], *[r[i] for i in ins], out=r[out], **attrs)), False
    if name == "where" or not isinstance(ufunc, np.ufunc) \
            or op_def.bind is None and name != "relu":
        return (lambda r: op_def.impl(np, *[r[i] for i in ins], out=r[out], **attrs)), False
    keyword = base in _KEYWORD_OUT or name == "relu"
    if name == "relu" or name.endswith("_scalar"):
        scalar = 0 if name == "relu" else attrs["scalar"]
        reverse = name != "relu" and attrs["reverse"]
        inverse = _reciprocal(scalar, dtype) if name == "divide_scalar" and not reverse \
            else None
        if inverse is not None:
            ufunc, scalar, keyword = np.multiply, inverse, False
        return _scalar_call(ufunc, _scalar_value(scalar, in_dtypes[0]), reverse, keyword,
                            ins[0], out), True
    if len(ins) == 1:
        (a,) = ins
        return (lambda r: ufunc(r[a], out=r[out])) if keyword else \
            (lambda r: ufunc(r[a], r[out])), True
    a, b = ins
    return (lambda r: ufunc(r[a], r[b], out=r[out])) if keyword else \
        (lambda r: ufunc(r[a], r[b], r[out])), True


def _scalar_value(scalar, dtype):
    """``scalar`` as NumPy computes with it on ``dtype`` operands: a Python number as a
    0-d array of the result's dtype (NEP 50: of the array's kind), a NumPy one as it is."""
    if type(scalar) in (int, float, complex, bool):
        return np.asarray(scalar, np.result_type(dtype, scalar))
    return scalar


def _scalar_call(ufunc, value, reverse: bool, keyword: bool, a: int, out: int):
    if reverse:
        return (lambda r: ufunc(value, r[a], out=r[out])) if keyword else \
            (lambda r: ufunc(value, r[a], r[out]))
    return (lambda r: ufunc(r[a], value, out=r[out])) if keyword else \
        (lambda r: ufunc(r[a], value, r[out]))


def _reciprocal(scalar, dtype):
    """``1 / scalar`` as a 0-d array of ``dtype`` when ``scalar`` is a power of two whose
    reciprocal ``dtype`` holds exactly (then ``x * (1 / scalar)`` is ``x / scalar``,
    bitwise), else None."""
    if isinstance(scalar, (bool, np.bool_)) or not isinstance(
            scalar, (int, float, np.integer, np.floating)) or np.dtype(dtype).kind != "f":
        return None
    value = np.asarray(scalar, dtype)
    if value == 0 or not np.isfinite(value) or value != scalar \
            or abs(np.frexp(value)[0]) != 0.5:
        return None
    with np.errstate(all="ignore"):
        inverse = np.asarray(np.reciprocal(value), dtype)
    if not np.isfinite(inverse) or inverse == 0 or inverse * value != 1:
        return None
    return inverse


def _select(masks, *arrays, out, layout):
    """``where``'s kernel by bits: ``y ^ ((x ^ y) & m)`` with ``m`` all ones where the
    condition holds (an int8 mask in ``masks``, a scratch buffer, widened with its sign by
    the ``&``). A selection copies bits, so this gives ``_where_impl``'s result (a masked
    copy) exactly, several times faster on a random condition."""
    given = iter(arrays)
    cond, x, y = (item if is_scalar(item) else next(given) for item in layout)
    bits = np.dtype(f"i{out.dtype.itemsize}")
    mask = masks[:out.size].view(np.int8).reshape(out.shape)
    np.subtract(_ZERO_I8, cond, out=mask)   # 0, or all ones (-1) where cond is true
    x, y = (np.asarray(v, out.dtype).view(bits) for v in (x, y))
    picked = out.view(bits)
    np.bitwise_xor(x, y, out=picked)
    np.bitwise_and(picked, mask, out=picked)
    np.bitwise_xor(picked, y, out=picked)


_ZERO_I8 = np.zeros((), np.int8)


def _ref(ref) -> str:
    kind, j = ref
    return f"{'a' if kind == 'leaf' else 't'}{j}"


def _last_uses(program) -> dict:
    """Step index -> the last step that reads its result."""
    last = {}
    for k, (_, _, refs, _) in enumerate(program):
        for kind, j in refs:
            if kind == "tmp":
                last[j] = k
    return last


def _slots(program, in_place: list) -> tuple:
    """A scratch slot per step but the last (the output): a step that may write in place
    (``in_place[k]``) takes the slot of a tmp input of its item size that it reads last;
    otherwise a slot freed once its value was read last by an earlier step, or a new one.
    The slots and how many there are."""
    last = _last_uses(program)
    free, slots, n = [], {}, 0
    for k in range(len(program) - 1):
        dying = [j for kind, j in program[k][2] if kind == "tmp" and last.get(j) == k]
        reuse = next((j for j in dying if in_place[k] and program[j][3].dtype.itemsize
                      == program[k][3].dtype.itemsize), None)
        if reuse is not None:
            slots[k] = slots[reuse]
        elif free:
            slots[k] = free.pop()
        else:
            slots[k], n = n, n + 1
        free.extend(slots[j] for j in dict.fromkeys(dying) if j != reuse)
    return slots, n
