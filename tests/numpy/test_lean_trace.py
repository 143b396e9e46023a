"""Traces and the pooled store on the C lean path (minerva._lean): a traced tiny op and a
store's O(1) alloc and free run in C and record what the Python path records — the same
op slices, the same memory counters, the same store figures."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy
import pytest

import minerva as mv
from minerva.api.core import lean
from minerva.common.hooks import HookBus
from minerva.current import get_system
from minerva.storage.base import Block
from minerva.storage.pooled import PooledDataStore
from minerva.tracing import recorder
from tests.support.profiling import python_calls

accelerated = pytest.mark.skipif(not lean.ACTIVE, reason="the C accelerator is not built")
HERE = os.path.dirname(os.path.abspath(__file__))

PROGRAM = r"""
import json, os, sys, tempfile
import numpy
import minerva as mv
mv.init(engine=sys.argv[1])
mv.create_cpu_device()
path = os.path.join(tempfile.mkdtemp(), "trace.json")
x = mv.zeros(4)
mv.profiler.start(path)
for _ in range(6):
    x = x + 1.0                              # a chain: each dead block handed over
x += 1.0                                     # a write in place: the next version
kept = [x * float(i) for i in range(5)]      # fresh outputs: the store's fast path
y = kept[0] - kept[4]
m = mv.ones((3, 4)) @ mv.ones(4)             # a product, its BLAS count held
s = m.sum() + m.max(axis=0, keepdims=True)   # reductions, a scalar result
n = mv.linalg.norm(m) + mv.concatenate([m[1:], m[::-1]]).argmax()   # any op, views
v = mv.array([1.0, 2.0, 3.0, 4.0]).T * 2.0   # an array of plain numbers
m[1:] = 2.0                                  # basic-index writes: fill, assign
m[:1] = s
m[1:] -= 0.5                                 # in place through a view, written back
with numpy.errstate(divide="raise"):
    bad = mv.ones(3, dtype="int64") // 0     # a kernel that raises
del kept, bad, m, s, n, v
try:
    mv.wait_for_all()
except Exception as failure:                 # the failed op's error, raised once
    assert "floor_divide" in str(failure)
y = y * 2.0                                  # frees of the dead values, then an op
y.wait()
events = json.load(open(mv.profiler.stop()))["traceEvents"]
ops = [(e["name"], e["args"]["created_at"], len(e["args"]["inputs"]), e["args"]["outputs"],
        e["args"].get("error")) for e in events if e.get("cat") == "op"]
memory = [e["args"] for e in events if e.get("name") == "memory in use"]
stats = {k: v for k, v in mv.memory_stats().items() if not isinstance(v, dict)}
print(json.dumps({"ops": ops, "memory": memory, "stats": stats, "y": y.to_numpy().tolist()}))
"""


def _traced_program(engine: str, accel: str) -> dict:
    env = dict(os.environ, MINERVA_ACCEL=accel)
    done = subprocess.run([sys.executable, "-c", PROGRAM, engine], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@accelerated
@pytest.mark.parametrize("engine", ["naive", "dag"])
def test_a_traced_program_records_the_python_paths_ops_and_memory(engine):
    c_path, python_path = _traced_program(engine, "1"), _traced_program(engine, "0")
    assert c_path["ops"] == python_path["ops"]
    assert c_path["stats"] == python_path["stats"]
    assert c_path["y"] == python_path["y"] == [-56.0] * 4   # (7 * 0 - 7 * 4) * 2
    if engine == "naive":   # no dispatcher thread: the same frees at the same points
        assert c_path["memory"] == python_path["memory"]
    else:
        assert c_path["memory"][-1] == python_path["memory"][-1]
    lines = {site for _name, site, *_rest in c_path["ops"]}
    assert all(site.startswith("<string>:") for site in lines)   # the program's own lines
    errors = [op for op in c_path["ops"] if op[4]]
    assert [op[0] for op in errors] == ["floor_divide_scalar"]
    assert "FloatingPointError" in errors[0][4]


@accelerated
def test_a_traced_tiny_chain_makes_no_python_call_per_op(tmp_path):
    x = mv.zeros(4)
    mv.profiler.start(str(tmp_path / "trace.json"))
    try:
        def chain():
            y = x
            for _ in range(500):
                y = y * 0.5 + 1.0
            return y
        result = chain()   # the shape rules cached, the first blocks made
        calls = python_calls(chain)
    finally:
        path = mv.profiler.stop()
    assert "run_lean" not in calls and "op_finished" not in calls
    assert sum(calls.values()) < 50   # for 1,000 ops
    expected = numpy.zeros(4)
    for _ in range(500):
        expected = expected * 0.5 + 1.0
    assert result.to_numpy().tobytes() == expected.tobytes()
    with open(path, encoding="utf-8") as trace:
        names = [e["name"] for e in json.load(trace)["traceEvents"] if e.get("cat") == "op"]
    assert names.count("multiply_scalar") >= 1000 and names.count("add_scalar") >= 1000


@accelerated
def test_a_c_record_reads_as_the_tuple_op_finished_makes(tmp_path):
    system = get_system()
    x = mv.ones(3)
    x.wait()
    rec = recorder.Recorder()
    system.hooks.subscribe(rec)
    try:
        y = x + 2.0
        line = sys._getframe().f_lineno - 1
    finally:
        system.hooks.unsubscribe(rec)
    (event,) = [e for e in rec.snapshot() if e[0] == recorder.FINISHED]
    assert type(event) is tuple
    raw = [e for e in rec.events if len(e) == len(event) and e[0] == recorder.FINISHED]
    assert type(raw[0]).__name__ == "Record" and tuple(raw[0]) == event
    (_tag, _op_id, name, device, _track, t_created, t_start, t_end, error, file, lineno,
     n_inputs, input_id, node_id, storage_id, version, dtype, ndim, size) = event
    assert (name, error, file, lineno, n_inputs) == ("add_scalar", None, __file__, line, 1)
    assert input_id == x._storage.current.node_id and node_id == y._storage.current.node_id
    assert (storage_id, version, dtype, ndim, size) == (node_id, 0, numpy.float64, 1, 3)
    assert rec.t_start <= t_created == t_start <= t_end


class _Listener:
    def op_finished(self, *args):
        pass


def test_the_bus_tells_the_c_path_what_to_do_about_listeners():
    bus = HookBus()
    assert bus.lean_trace is False
    rec = recorder.Recorder()
    bus.subscribe(rec)
    assert bus.lean_trace == rec.events.append
    other = _Listener()
    bus.subscribe(other)
    assert bus.lean_trace is None   # two listeners: the Python path announces to both
    bus.unsubscribe(rec)
    assert bus.lean_trace is None
    bus.unsubscribe(other)
    assert bus.lean_trace is False


class _Allocator:
    def malloc(self, nbytes):
        return numpy.empty(nbytes, numpy.uint8)

    def free(self, chunk):
        pass

    def view(self, chunk, offset, nbytes, shape, dtype):
        end = offset + int(numpy.prod(shape)) * numpy.dtype(dtype).itemsize
        return chunk[offset:end].view(dtype).reshape(shape)


def _drive(store: PooledDataStore, alloc_array, free, seed: int) -> list:
    """A random run of allocations and frees; the offsets and sizes handed out."""
    rng = numpy.random.default_rng(seed)
    live, seen = [], []
    for _ in range(300):
        if live and rng.random() < 0.45:
            free(store, live.pop(int(rng.integers(len(live)))))
        else:
            n = int(rng.choice([8, 32, 100, 512, 513, 4000]))
            block, array = alloc_array(store, n, (n // 8,), numpy.float64)
            assert array.shape == (n // 8,) and array.dtype == numpy.float64
            live.append(block)
            seen.append((block.offset, block.size, block.nbytes))
    return seen


@accelerated
@pytest.mark.parametrize("seed", range(4))
def test_the_stores_c_methods_keep_the_python_figures(seed):
    c_alloc, c_free = PooledDataStore.alloc_array, PooledDataStore.free
    assert type(PooledDataStore.__dict__["free"]).__name__ == "StoreMethod"
    py_alloc, py_free = c_alloc.python, c_free.python
    c_store, py_store = PooledDataStore(_Allocator()), PooledDataStore(_Allocator())
    assert _drive(c_store, c_alloc, c_free, seed) == _drive(py_store, py_alloc, py_free, seed)
    assert c_store.stats() == py_store.stats()


@accelerated
def test_the_stores_c_free_refuses_a_block_twice_as_python_does():
    store = PooledDataStore(_Allocator())
    block, _array = store.alloc_array(64, (8,), numpy.float64)
    store.free(block)
    with pytest.raises(ValueError, match="not a live block"):
        store.free(block)
    with pytest.raises(ValueError, match="not a live block"):
        store.free(Block(None, 0, 512, 64))


def test_the_python_path_alone_passes_the_trace_and_store_suites():
    env = dict(os.environ, MINERVA_ACCEL="0")
    files = [os.path.join(HERE, "..", "tracing"), os.path.join(HERE, "..", "memory")]
    files = [f for f in files if os.path.exists(f)]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-x", *files], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
