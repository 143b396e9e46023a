"""Fused kernels on CPU devices, of two kinds (``backend``):

- **tiny outputs** (at most ``NUMEXPR_MAX_ELEMENTS``) of kernels of at least
  ``NUMEXPR_MIN_OPS`` ops: the expression tree (``minerva.ops.fusable``) compiled once by
  numexpr, one call for the whole kernel where the unfused replay makes one per op;
- **outputs of ``BLOCKED_MIN_BYTES`` or more** (``minerva.device.cpu.blocked``): the steps' own NumPy
  kernels run block by block through cache-sized scratch buffers, bitwise NumPy's;
- in between (or without numexpr, for tiny outputs) the steps stay unfused: one pass of
  each NumPy kernel over data already in cache is faster than either (numexpr's virtual
  machine computes an element several times slower than NumPy's SIMD loops).

numexpr is optional (``available()``); without it tiny kernels are not fused. Each
primitive maps to one numexpr operation of the same dtype (float32 ``float``, float64
``double``, int32 ``int``, int64 ``long``): IEEE ``+ - * /`` and ``sqrt`` give NumPy's bits;
the transcendental functions call the C library's, which may differ from NumPy's own in the
last bits. Scalars are typed constants; no numexpr optimisation rewrites the tree (trees are
built from numexpr's nodes directly, never parsed from text).

numexpr's thread count is one for the whole process: before a kernel runs it is set to the
running device's thread count (``CpuDevice.threads``) when it differs. numexpr cuts the
elements into blocks, which changes no element's value: a kernel's bits do not depend on
the count.
"""
from __future__ import annotations

import functools
import threading
import weakref

import numpy as np

from minerva.device.cpu.blocked import BlockedKernel
from minerva.ops import fusable as expr

_NUMEXPR: list = []   # [the numexpr module, or None], once looked for


def numexpr_module():
    """numexpr, imported at the first fused kernel (not with minerva), or None."""
    if not _NUMEXPR:
        try:
            import numexpr
            import numexpr.expressions
            import numexpr.necompiler
        except ImportError:  # pragma: no cover - depends on the environment
            numexpr = None
        _NUMEXPR.append(numexpr)
    return _NUMEXPR[0]

_KINDS = {np.dtype(np.float32): "float", np.dtype(np.float64): "double",
          np.dtype(np.int32): "int", np.dtype(np.int64): "long", np.dtype(bool): "bool"}
_SIGNATURE_TYPES = {"float": float, "double": np.float64, "int": np.int32,
                    "long": np.int64, "bool": bool}
_COMPARE = {"gt": "gt", "ge": "ge", "eq": "eq", "ne": "ne"}
_THREADS = {"count": None}
_THREADS_LOCK = threading.Lock()


def available() -> bool:
    """Whether numexpr can be imported (else tiny CPU kernels are not fused)."""
    return numexpr_module() is not None


NUMEXPR_MAX_ELEMENTS = 4096
NUMEXPR_MIN_OPS = 3
BLOCKED_MIN_BYTES = 256 * 1024


def backend(device):
    """The kernel compiler of CPU ``device``: ``compile(spec)`` for a
    ``minerva.jit.fusion.KernelSpec``."""
    made = functools.partial(compile_kernel, device=weakref.ref(device))
    made.exact = lambda out_spec: not _tiny(out_spec)   # blocked kernels are NumPy's
    return made


def _tiny(out_spec) -> bool:
    return int(np.prod(out_spec.shape, dtype=np.int64)) <= NUMEXPR_MAX_ELEMENTS


def compile_kernel(spec, device):
    """The kernel of ``spec`` (see the module docstring); NotImplementedError when its
    steps should stay unfused."""
    out = spec.out_spec
    if _tiny(out):
        if len(spec.program) < NUMEXPR_MIN_OPS or numexpr_module() is None:
            raise NotImplementedError("a tiny kernel of few ops, or no numexpr")
        if spec.level == "exact" and not spec.exact:
            raise NotImplementedError("numexpr's transcendental functions are not exact")
        return NumexprKernel(spec.tree, spec.in_dtypes, out.dtype, device)
    if out.nbytes < BLOCKED_MIN_BYTES:
        raise NotImplementedError("one block: the unfused steps are as fast")
    return BlockedKernel(spec.program, out.shape, spec.in_dtypes)


def use_threads(n: int) -> None:
    """Make numexpr use ``n`` threads (process-wide), when it does not already."""
    if _THREADS["count"] == n:
        return
    with _THREADS_LOCK:
        if _THREADS["count"] != n:
            numexpr_module().set_num_threads(n)
            _THREADS["count"] = n


class NumexprKernel:
    """One tree compiled by numexpr: ``impl(xp, *arrays, out=)`` and ``bind`` as ops have;
    ``source`` the expression as text (for reading)."""

    def __init__(self, tree, in_dtypes: list, out_dtype, device):
        self._device = device
        self.out_dtype = out_dtype
        nodes, compiler = numexpr_module().expressions, numexpr_module().necompiler
        names = [f"a{k}" for k in range(len(in_dtypes))]
        leaves = [nodes.VariableNode(n, _KINDS[d]) for n, d in zip(names, in_dtypes)]
        node = _numexpr_tree(nodes, tree, leaves, {})
        if not isinstance(node, (nodes.OpNode, nodes.FuncNode)):
            node = nodes.OpNode("copy", [node], kind=node.astKind)
        signature = [(n, _SIGNATURE_TYPES[_KINDS[d]]) for n, d in zip(names, in_dtypes)]
        try:
            self._program = compiler.NumExpr(node, signature=signature)
        except (ValueError, RuntimeError, KeyError, TypeError) as exc:  # limits, opcodes
            raise NotImplementedError(f"numexpr cannot compile it: {exc}") from exc
        if any(op[0].startswith(b"cast") for op in compiler.disassemble(self._program)):
            raise NotImplementedError("numexpr would cast an operand")  # not fused
        self.source = source_of(tree)

    def impl(self, xp, *arrays, out) -> None:
        """Evaluate into ``out`` on the device's thread count."""
        device = self._device()
        use_threads(device.threads if device is not None else 1)
        if out.size:
            self._program(*arrays, out=out, ex_uses_vml=False)

    def bind(self, xp, arrays, out, **_attrs):
        """The evaluation on these arrays, as a callable of no arguments."""
        return functools.partial(self.impl, xp, *arrays, out=out)


def _numexpr_tree(nodes, tree, leaves, memo):
    """``tree`` as numexpr's expression nodes (a shared subtree made once)."""
    key = id(tree)
    if key in memo:
        return memo[key]
    if isinstance(tree, expr.Leaf):
        made = leaves[tree.position]
    elif isinstance(tree, expr.Const):
        made = nodes.ConstantNode(tree.value)
    else:
        args = [_numexpr_tree(nodes, a, leaves, memo) for a in tree.args]
        made = _numexpr_node(nodes, tree.fn, args, _KINDS[tree.dtype])
    memo[key] = made
    return made


_OPCODES = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "neg": "neg",
            "or": "or"}


def _numexpr_node(nodes, fn, args, kind):
    if fn in _OPCODES:
        return nodes.OpNode(_OPCODES[fn], args, kind=kind)
    if fn in _COMPARE:
        return nodes.OpNode(_COMPARE[fn], args, kind="bool")
    return nodes.FuncNode("absolute" if fn == "abs" else fn, args, kind=kind)


def source_of(tree) -> str:
    """``tree`` as text: ``fn(args)``, leaves ``aK``, constants by value."""
    if isinstance(tree, expr.Leaf):
        return f"a{tree.position}"
    if isinstance(tree, expr.Const):
        return repr(tree.value.item())
    return f"{tree.fn}({', '.join(source_of(a) for a in tree.args)})"
