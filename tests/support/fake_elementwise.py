"""A stand-in for CuPy's ``ElementwiseKernel`` on the CUDA test double: it evaluates the
kernels minerva's jit generates (``minerva.device.gpu.fused``) with NumPy.

The operation must be one assignment ``out0 = <call>;`` of nested calls to the device
functions of ``minerva.device.gpu.fused.PREAMBLE`` (``mv_add(in0, in1)``)
over the kernel's inputs (``mv_f32(1069547520ULL)``: a float32 by its bits); the
stand-in parses it, checks that every input has the dtype
its parameter declares and that the result has the output's dtype (a real kernel would
convert silently), and writes it into the output (inputs broadcast as CuPy does)."""
from __future__ import annotations

import re

import numpy as np

_FUNCTIONS = {"mv_add": np.add, "mv_sub": np.subtract, "mv_mul": np.multiply,
              "mv_div": np.true_divide, "mv_neg": np.negative, "mv_gt": np.greater,
              "mv_ge": np.greater_equal, "mv_eq": np.equal, "mv_ne": np.not_equal,
              "mv_or": np.logical_or, "mv_where": np.where, "mv_sqrt": np.sqrt,
              "mv_abs": np.absolute, "mv_exp": np.exp, "mv_log": np.log, "mv_sin": np.sin,
              "mv_cos": np.cos, "mv_tanh": np.tanh, "mv_expm1": np.expm1,
              "mv_log1p": np.log1p}
_CONSTANTS = {"mv_f32": lambda bits: np.uint32(bits).view(np.float32),
              "mv_f64": lambda bits: np.uint64(bits).view(np.float64),
              "mv_i32": np.int32, "mv_i64": np.int64}
"""The constants' functions: a float's bits (``1069547520ULL``), an integer's value."""
_TOKEN = re.compile(r"\s*(?:(?P<name>[A-Za-z_]\w*)|(?P<number>-?\d+U?LL)|(?P<punct>[(),]))")


def _params(text: str) -> list:
    """``"float32 in0, bool in1"`` -> ``[("in0", dtype("float32")), ...]``."""
    return [(name, np.dtype(kind)) for kind, name in
            (part.split() for part in text.split(",") if part.strip())]


class FakeElementwiseKernel:
    """One kernel: ``__call__(*inputs, *outputs)``; ``n_calls`` counts its launches."""

    def __init__(self, in_params, out_params, operation, name, preamble):
        self.in_params, self.out_params = _params(in_params), _params(out_params)
        self.operation, self.name, self.preamble = operation, name, preamble
        match = re.fullmatch(r"\s*(\w+)\s*=\s*(.+);\s*", operation)
        assert match and len(self.out_params) == 1, operation
        self.target, self._tokens = match.group(1), _tokens(match.group(2))
        self.n_calls = 0

    def __call__(self, *args):
        ins, outs = args[:len(self.in_params)], args[len(self.in_params):]
        assert len(outs) == len(self.out_params), "the output must be passed"
        for (name, dtype), array in zip(self.in_params, ins):
            assert array.dtype == dtype, f"{self.name}: {name} is {array.dtype}, not {dtype}"
        env = {name: array for (name, _), array in zip(self.in_params, ins)}
        result, rest = _evaluate(self._tokens, env)
        assert not rest, f"{self.name}: trailing tokens {rest}"
        out = outs[0]
        assert np.asarray(result).dtype == out.dtype, \
            f"{self.name}: the body gives {np.asarray(result).dtype}, the output is {out.dtype}"
        np.copyto(out, np.broadcast_to(result, out.shape), casting="no")
        self.n_calls += 1


def _tokens(text: str) -> list:
    tokens, at = [], 0
    while at < len(text.rstrip()):
        match = _TOKEN.match(text, at)
        assert match, f"cannot read {text[at:]!r}"
        tokens.append(next(v for v in match.groupdict().values() if v is not None))
        at = match.end()
    return tokens


def _evaluate(tokens: list, env: dict):
    """The value of the call or name at the head of ``tokens``, and the tokens after it."""
    head, rest = tokens[0], tokens[1:]
    if head in env:
        return env[head], rest
    assert rest and rest[0] == "(", f"unknown name {head!r}"
    rest = rest[1:]
    if head in _CONSTANTS:
        value = int(rest[0].rstrip("UL"))
        assert rest[1] == ")"
        return _CONSTANTS[head](value), rest[2:]
    args = []
    while True:
        value, rest = _evaluate(rest, env)
        args.append(value)
        if rest[0] == ")":
            return _FUNCTIONS[head](*args), rest[1:]
        assert rest[0] == ",", rest[:3]
        rest = rest[1:]
