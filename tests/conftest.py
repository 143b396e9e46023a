"""Shared fixtures: a fresh runtime per test, parametrized engines and device sets, and a
check that no minerva thread outlives ``mv.shutdown()``."""
from __future__ import annotations

import os
import threading

import numpy as np
import pytest

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import minerva as mv  # noqa: E402

ENGINES = ("naive", "dag", "dag-queued")
DEVICE_COUNTS = (1, 2, 4)


def start_engine(name: str, **options) -> None:
    """Start the runtime with engine ``name``: ``naive``, ``dag`` (inline dispatch) or
    ``dag-queued`` (every task through the dispatcher queue)."""
    if name == "dag-queued":
        mv.init(engine="dag", dispatch="queued", **options)
    else:
        mv.init(engine=name, **options)


def minerva_threads() -> list[str]:
    """Names of live threads the runtime started."""
    return [t.name for t in threading.enumerate() if t.name.startswith("minerva-")]


@pytest.fixture(autouse=True)
def fresh_runtime():
    """Each test starts without a runtime and leaves none running, nor any thread."""
    mv.shutdown()
    yield
    mv.shutdown(timeout=30)
    assert minerva_threads() == [], "a minerva thread outlived shutdown"


@pytest.fixture(params=ENGINES)
def engine(request) -> str:
    """A runtime started with each engine in turn."""
    start_engine(request.param)
    return request.param


@pytest.fixture(params=[(e, n) for e in ENGINES for n in DEVICE_COUNTS],
                ids=lambda p: f"{p[0]}-{p[1]}dev")
def runtime(request):
    """``(engine, device ids)`` for every engine with 1, 2 and 4 CPU devices."""
    engine_name, n_devices = request.param
    start_engine(engine_name)
    devices = [mv.create_cpu_device() for _ in range(n_devices)]
    mv.set_device(devices[0])
    return engine_name, devices


def live_values(held) -> dict:
    """Data nodes the runtime must keep for ``held`` arrays: each one's current value and,
    recursively, the copies of it cached on other devices; by node id."""
    nodes, todo = {}, [x._storage.current for x in held]
    while todo:
        node = todo.pop()
        if node.node_id not in nodes:
            nodes[node.node_id] = node
            todo.extend((node.copies or {}).values())
    return nodes


def assert_settled(*held) -> None:
    """After wait_for_all: nothing pending, nothing left in the DAG but the held arrays
    (and their cached copies), and memory in use equal to their bytes."""
    mv.wait_for_all(timeout=30)
    stats = mv.dag_stats()
    assert stats["n_pending"] == 0 and stats["n_op_nodes"] == 0
    nodes = live_values(held)
    assert stats["n_data_nodes"] == len(nodes)
    expected = sum(node.spec.nbytes for node in nodes.values())
    assert mv.memory_stats()["in_use_bytes"] == expected


@pytest.fixture
def rng():
    """A seeded NumPy generator."""
    return np.random.default_rng(1234)


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def device_kind(request) -> str:
    """A runtime whose current device is a CPU device, then a GPU (skipped without one).
    Op tests take this fixture so every op runs on every kind of device."""
    mv.init()
    if request.param == "gpu":
        if mv.get_gpu_device_count() == 0:
            pytest.skip("no GPU (CuPy with a CUDA driver) on this machine")
        mv.set_device(mv.create_gpu_device(0))
    else:
        mv.set_device(mv.create_cpu_device())
    return request.param
