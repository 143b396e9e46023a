"""The GPU benchmark compares like with like, checked in CI without a GPU: its per-op scenario
runs on a CPU device, with NumPy standing in for CuPy."""
from __future__ import annotations

import pathlib
import types

import numpy as np

import minerva as mv

TOOLS = pathlib.Path(__file__).resolve().parents[2] / "tools"


def test_the_per_op_scenario_uses_the_same_dtype_for_minerva_and_raw_cupy(monkeypatch):
    monkeypatch.syspath_prepend(str(TOOLS))
    from benchmarks import gpu as bench
    made = {"minerva": [], "cupy": []}
    real_zeros = mv.zeros

    def mv_zeros(*args, **kwargs):
        array = real_zeros(*args, **kwargs)
        made["minerva"].append(array.dtype)
        return array

    def cp_zeros(*args, **kwargs):
        array = np.zeros(*args, **kwargs)
        made["cupy"].append(array.dtype)
        return array
    monkeypatch.setattr(mv, "zeros", mv_zeros)
    cupy = types.SimpleNamespace(zeros=cp_zeros, cuda=types.SimpleNamespace(
        runtime=types.SimpleNamespace(deviceSynchronize=lambda: None)))
    costs = bench.per_op(cupy, n_ops=3, repeat=1)
    assert set(costs) == {"mv_chain", "cp_chain", "mv_batch", "cp_batch"}
    assert made["minerva"] and made["cupy"]
    assert set(made["minerva"]) == set(made["cupy"]) == {np.dtype(bench.PER_OP_DTYPE)}
