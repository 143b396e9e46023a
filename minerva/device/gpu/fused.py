"""Fused kernels on GPU devices: a jit plan's expression trees (``minerva.ops.fusable``)
written as the operation of a CuPy ``ElementwiseKernel``, compiled once per source (and
cached across plans).

The kernel's body is one assignment of nested calls, ``out0 = mv_add(mv_mul(in0, in1),
in2);``, to the device functions of ``PREAMBLE``: the float and double arithmetic is the
``__fadd_rn``/``__dmul_rn``-style intrinsics, which the compiler never contracts into a
fused multiply-add, so each operation is rounded once, as NumPy's (and CuPy's eager
ufuncs') are; ``sqrt`` is the correctly rounded ``__fsqrt_rn``/``__dsqrt_rn``; the
transcendental functions are CUDA's, within their documented ulp bounds of the exact
value. A float scalar is written as its bits (``mv_f32(1069547520ULL)`` is 1.5f, through
``__int_as_float``), so no literal is rounded by the compiler.

The layer makes the kernel: ``layer.elementwise_kernel(in_params, out_params, operation,
name, preamble)`` (``CupyLayer``: ``cupy.ElementwiseKernel``; the CUDA test double
evaluates the body with NumPy).
"""
from __future__ import annotations

import hashlib
import threading
import weakref

import numpy as np

from minerva.ops import fusable as expr

_CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double",
           np.dtype(np.int32): "int", np.dtype(np.int64): "long long",
           np.dtype(bool): "bool"}
_FLOAT_OPS = {"add": ("__fadd_rn", "__dadd_rn"), "sub": ("__fsub_rn", "__dsub_rn"),
              "mul": ("__fmul_rn", "__dmul_rn"), "div": ("__fdiv_rn", "__ddiv_rn")}
_INT_OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
_MATH = {"sqrt": ("__fsqrt_rn", "__dsqrt_rn"), "abs": ("fabsf", "fabs"),
         "exp": ("expf", "exp"), "log": ("logf", "log"), "sin": ("sinf", "sin"),
         "cos": ("cosf", "cos"), "tanh": ("tanhf", "tanh"), "expm1": ("expm1f", "expm1"),
         "log1p": ("log1pf", "log1p")}
_COMPARE = {"gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def _preamble() -> str:
    lines = ["// minerva's fused kernels: one rounding per operation, no contraction"]
    for fn, (f32, f64) in _FLOAT_OPS.items():
        lines.append(f"__device__ __forceinline__ float mv_{fn}(float a, float b) "
                     f"{{ return {f32}(a, b); }}")
        lines.append(f"__device__ __forceinline__ double mv_{fn}(double a, double b) "
                     f"{{ return {f64}(a, b); }}")
    for fn in ("add", "sub", "mul"):
        for ctype in ("int", "long long"):
            lines.append(f"__device__ __forceinline__ {ctype} mv_{fn}({ctype} a, {ctype} b) "
                         f"{{ return a {_INT_OPS[fn]} b; }}")
    for ctype in ("float", "double", "int", "long long"):
        lines.append(f"__device__ __forceinline__ {ctype} mv_neg({ctype} a) {{ return -a; }}")
        for fn, op in _COMPARE.items():
            lines.append(f"__device__ __forceinline__ bool mv_{fn}({ctype} a, {ctype} b) "
                         f"{{ return a {op} b; }}")
        lines.append(f"__device__ __forceinline__ {ctype} mv_where(bool c, {ctype} a, "
                     f"{ctype} b) {{ return c ? a : b; }}")
    lines.append("__device__ __forceinline__ bool mv_or(bool a, bool b) { return a || b; }")
    for fn, (f32, f64) in _MATH.items():
        lines.append(f"__device__ __forceinline__ float mv_{fn}(float a) {{ return {f32}(a); }}")
        lines.append(f"__device__ __forceinline__ double mv_{fn}(double a) "
                     f"{{ return {f64}(a); }}")
    lines.append("__device__ __forceinline__ float mv_f32(unsigned long long bits) "
                 "{ return __int_as_float((int)(unsigned int)bits); }")
    lines.append("__device__ __forceinline__ double mv_f64(unsigned long long bits) "
                 "{ return __longlong_as_double((long long)bits); }")
    lines.append("__device__ __forceinline__ int mv_i32(long long a) { return (int)a; }")
    lines.append("__device__ __forceinline__ long long mv_i64(long long a) { return a; }")
    return "\n".join(lines) + "\n"


PREAMBLE = _preamble()
_CONST_CALLS = {np.dtype(np.float32): "mv_f32", np.dtype(np.float64): "mv_f64",
                np.dtype(np.int32): "mv_i32", np.dtype(np.int64): "mv_i64"}


def backend(device):
    """The kernel compiler of GPU ``device`` (its CUDA layer makes the kernels)."""
    layer = device.layer

    def compile_kernel(spec):
        """The kernel of ``spec``; NotImplementedError when its steps stay unfused."""
        if spec.level == "exact" and not spec.exact:
            raise NotImplementedError("CUDA's transcendental functions are not NumPy's")
        if spec.level == "exact" and _holds_power(spec):
            raise NotImplementedError("CuPy's eager power calls CUDA's pow")
        return CudaKernel(spec.tree, spec.in_dtypes, spec.out_spec.dtype, layer)
    compile_kernel.exact = lambda out_spec: False
    return compile_kernel


def _holds_power(spec) -> bool:
    """Whether a kernel holds a ``power`` step (``fusable.POWERS``: ``x ** 2.0`` as ``x *
    x``), which is NumPy's result but maybe not CuPy's, whose eager ``power`` calls CUDA's
    ``pow`` (so it fuses on a GPU at level "all" only)."""
    return any(op_def.name == "power_scalar" for op_def, *_ in spec.program)


def body_of(tree) -> str:
    """``tree`` as nested calls of ``PREAMBLE``'s functions over ``in0``, ``in1``..."""
    if isinstance(tree, expr.Leaf):
        return f"in{tree.position}"
    if isinstance(tree, expr.Const):
        if tree.dtype.kind == "f":   # the exact bits of the float, as an unsigned integer
            bits = int(tree.value.view(np.uint32 if tree.dtype.itemsize == 4 else np.uint64))
            literal = f"{bits}ULL"
        else:
            literal = f"{int(tree.value)}LL"
        return f"{_CONST_CALLS[tree.dtype]}({literal})"
    return f"mv_{tree.fn}({', '.join(body_of(a) for a in tree.args)})"


_KERNELS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # layer -> name -> kernel
_KERNELS_LOCK = threading.Lock()


class CudaKernel:
    """One tree as an ElementwiseKernel (made with the plan, cached by source; CuPy
    compiles it at its first launch): ``in_params``, ``out_params``, ``operation``,
    ``name`` as CuPy takes them."""

    def __init__(self, tree, in_dtypes: list, out_dtype, layer):
        self.in_params = ", ".join(f"{np.dtype(d).name} in{k}" for k, d in
                                   enumerate(in_dtypes))
        self.out_params = f"{np.dtype(out_dtype).name} out0"
        self.operation = f"out0 = {body_of(tree)};"
        digest = hashlib.sha1((self.in_params + self.out_params + self.operation).encode())
        self.name = f"minerva_fused_{digest.hexdigest()[:16]}"
        self.source = self.operation
        with _KERNELS_LOCK:
            kernels = _KERNELS.setdefault(layer, {})
            made = kernels.get(self.name)
            if made is None:   # NotImplementedError where the layer makes none
                made = kernels[self.name] = layer.elementwise_kernel(
                    self.in_params, self.out_params, self.operation, self.name, PREAMBLE)
        self._kernel = made

    def impl(self, xp, *arrays, out) -> None:
        """Launch the kernel on ``arrays`` into ``out`` (on the stream the replay runs)."""
        if out.size:
            self._kernel(*arrays, out)

    bind = None
