"""minerva.distributed in one process: a plain process is rank 0 of 1 (no MPI loaded),
the collectives' rules and errors, the header check every rank runs, bucketing, the
communication thread's reorder buffer and its skipping of collectives that never ran,
and the GPU path (host staging) on the CUDA test double. The runs across processes are
in test_distributed_mpi.py."""
from __future__ import annotations

import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import minerva as mv
import minerva.distributed as dist
from tests.conftest import start_engine
from minerva import builder
from minerva.distributed import header as headers
from minerva.distributed import session as sessions
from minerva.distributed.comm_thread import CommThread
from minerva.distributed.settings import launched_by_mpi, timeout_from_env
from minerva.ops import registry


@pytest.fixture
def local(monkeypatch):
    """A started one-rank session (as a plain process gets), shut down afterwards."""
    for var in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
                "HYDI_CONTROL_FD", "MV2_COMM_WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    dist.init(timeout=10)
    yield sessions.current()
    dist.shutdown()


# ---- a plain process ---------------------------------------------------------------------

def test_importing_never_loads_mpi():
    code = ("import sys, minerva, minerva.distributed as d; d.init(); "
            "print(d.rank(), d.size(), 'mpi4py' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env={"PATH": "/usr/bin:/bin"}, check=True).stdout
    assert out.split() == ["0", "1", "False"]


@pytest.mark.parametrize("name", ["naive", "dag", "dag-queued"])
def test_a_plain_process_is_rank_0_of_1(local, name):
    start_engine(name)
    assert (dist.rank(), dist.size(), dist.is_initialized()) == (0, 1, True)
    x = np.arange(12.0).reshape(3, 4)
    a = mv.array(x)
    for op in ("sum", "mean", "max", "min"):
        np.testing.assert_array_equal(dist.allreduce(a, op=op).to_numpy(), x)
    np.testing.assert_array_equal(dist.allreduce(a.T).to_numpy(), x.T)
    np.testing.assert_array_equal(dist.broadcast(a).to_numpy(), x)
    np.testing.assert_array_equal(dist.allgather(a).to_numpy(), x[None])
    got = dist.allreduce_many([a, a[1], mv.arange(3)], bucket_bytes=40)
    for g, want in zip(got, [x, x[1], np.arange(3)]):
        np.testing.assert_array_equal(g.to_numpy(), want)
    dist.barrier(timeout=10)
    mv.wait_for_all(timeout=10)


def test_not_initialized_says_so():
    dist.shutdown()
    with pytest.raises(dist.DistributedError, match="init"):
        dist.rank()
    with pytest.raises(dist.DistributedError, match="init"):
        dist.allreduce(mv.ones(3))


def test_bad_arguments_raise_at_the_call(local):
    with pytest.raises(ValueError, match="op must be"):
        dist.allreduce(mv.ones(3), op="prod")
    with pytest.raises(mv.DTypeError, match="bool"):
        dist.allreduce(mv.ones(3) > 0)
    with pytest.raises(mv.DTypeError, match="mean"):
        dist.allreduce(mv.arange(3), op="mean")
    with pytest.raises(mv.DTypeError, match="complex"):
        dist.allreduce(mv.ones(3) * 1j, op="max")
    with pytest.raises(ValueError, match="root"):
        dist.broadcast(mv.ones(3), root=1)
    with pytest.raises(ValueError, match="bucket_bytes"):
        dist.allreduce_many([mv.ones(3)], bucket_bytes=0)
    assert dist.allreduce(mv.ones(2)).to_numpy().tolist() == [1, 1]  # numbering in step


def test_settings_and_launcher_detection(monkeypatch):
    assert timeout_from_env({}) == 300
    assert timeout_from_env({"MINERVA_DIST_TIMEOUT": "2.5"}) == 2.5
    with pytest.raises(ValueError, match="MINERVA_DIST_TIMEOUT"):
        timeout_from_env({"MINERVA_DIST_TIMEOUT": "soon"})
    assert launched_by_mpi({"PMI_RANK": "0"}) and not launched_by_mpi({})


# ---- the header every rank checks --------------------------------------------------------

def table(*rows):
    return np.stack(rows)


def test_headers_of_the_same_collective_pass_and_mismatches_name_every_rank():
    a = headers.encode(4, "allreduce", "sum", 0, np.float32, [(64, 10)])
    headers.check(table(a, a.copy()), 4)
    b = headers.encode(4, "allreduce", "sum", 0, np.float32, [(32, 10)])
    with pytest.raises(dist.CollectiveMismatchError) as err:
        headers.check(table(a, b), 4)
    assert ("rank 0: allreduce(sum) of float32 (64, 10); rank 1: allreduce(sum) of "
            "float32 (32, 10)") in str(err.value)
    for other in (headers.encode(4, "allreduce", "max", 0, np.float32, [(64, 10)]),
                  headers.encode(4, "allreduce", "sum", 0, np.float64, [(64, 10)]),
                  headers.encode(4, "broadcast", None, 0, np.float32, [(64, 10)]),
                  headers.encode(4, "allreduce", "sum", 0, np.float32, [(10, 64)]),
                  headers.encode(4, "allreduce", "sum", 0, np.float32, [(64, 10), (1,)])):
        with pytest.raises(dist.CollectiveMismatchError):
            headers.check(table(a, other), 4)


def test_a_failed_input_on_one_rank_fails_the_collective_everywhere():
    a = headers.encode(2, "allgather", None, 0, np.int64, [(3,)])
    failed = headers.encode(2, "allgather", None, 0, np.uint8, [], status=headers.FAILED)
    with pytest.raises(dist.PeerInputError, match=r"rank\(s\) \[1\]"):
        headers.check(table(a, failed), 2)


def test_nccl_is_used_only_when_every_rank_can():
    def gpu(gpu_id):
        return headers.encode(0, "allreduce", "sum", 0, np.float32, [(3,)],
                              place=headers.GPU, nccl=True, ordinal=1, gpu_id=gpu_id)
    staged = headers.encode(0, "allreduce", "sum", 0, np.float32, [(3,)],
                            place=headers.GPU, nccl=False, ordinal=0)
    cpu = headers.encode(0, "allreduce", "sum", 0, np.float32, [(3,)])
    assert headers.use_nccl(table(gpu(7), gpu(8)))
    assert not headers.use_nccl(table(gpu(7), gpu(0)))  # a GPU not named
    assert headers.gpu_key(table(gpu(7), staged)) == (1, 0)
    assert not headers.use_nccl(table(gpu(7), staged))
    assert not headers.use_nccl(table(gpu(7), cpu))


# ---- buckets -----------------------------------------------------------------------------

def test_buckets_group_consecutive_arrays_of_one_dtype_within_the_budget():
    mv.init()
    arrays = [mv.ones(4, dtype="float32"), mv.ones(4, dtype="float32"),
              mv.ones(2, dtype="float64"), mv.ones(100, dtype="float32"),
              mv.ones(1, dtype="float32")]
    assert dist.plan_buckets(arrays, 32) == [[0, 1], [2], [3], [4]]
    assert dist.plan_buckets(arrays, 32, first_bucket_bytes=16) == [[0], [1], [2], [3], [4]]
    assert dist.plan_buckets(arrays, 1 << 20) == [[0, 1], [2], [3, 4]]


def test_the_gradient_reducer_reduces_last_parameters_first(local):
    params = {name: mv.ones(n, dtype="float32") for name, n in
              (("w1", 1000), ("b1", 10), ("w2", 50), ("b2", 5))}
    for p in params.values():
        p.attach_grad()
        p.grad[...] = 2.0
    reducer = dist.GradientReducer(params, bucket_bytes=4096, first_bucket_bytes=100)
    assert reducer.buckets() == [[3], [2, 1], [0]]
    reducer.reduce()
    for p in params.values():
        np.testing.assert_array_equal(p.grad.to_numpy(), np.full(p.shape, 2.0, np.float32))
    with pytest.raises(ValueError, match="attach_grad"):
        dist.GradientReducer([mv.ones(3)])


def test_sync_params_writes_root_values_in_place(local):
    w = mv.arange(6.0)
    before = w.label.split("@")[0]
    dist.sync_params([w])
    np.testing.assert_array_equal(w.to_numpy(), np.arange(6.0))
    assert w.label.split("@")[0] == before


# ---- the communication thread ------------------------------------------------------------

class FakeRunner:
    """Notes what the thread runs, and completes each job at once."""

    def __init__(self):
        self.order, self.skipped = [], []
        self.transport = type("T", (), {"interrupt": lambda self, r: None})()

    def run(self, job):
        self.order.append(job.seq)
        job.done(None)

    def skip(self, collective, error):
        self.skipped.append((collective.seq, error))

    def fail_all(self, reason):
        return dist.CommunicationLost(reason)


class FakeJob:
    def __init__(self, seq, done=lambda exc: None):
        self.seq, self.done = seq, done


class FakeCollective:
    def __init__(self, seq):
        self.seq = seq


class FailedHandle:
    def wait(self, timeout=None):
        raise mv.OpError("input failed", op="x", node_id=1, device=0, created_at="t")


def test_jobs_run_in_sequence_order_whatever_order_they_come_in():
    runner = FakeRunner()
    comm = CommThread(runner, name="minerva-dist-test")
    for seq in (2, 0, 3, 1):
        comm.post(FakeJob(seq))
    deadline = time.monotonic() + 5
    while len(runner.order) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert runner.order == [0, 1, 2, 3]
    assert comm.stop(5, close=True)


def test_a_collective_whose_op_never_ran_is_skipped_not_waited_for():
    runner = FakeRunner()
    comm = CommThread(runner, name="minerva-dist-test")
    comm.post(FakeJob(1))
    comm.issue(FakeCollective(0), FailedHandle())
    comm.cancel(FakeCollective(2), RuntimeError("not built"))
    comm.post(FakeJob(3))
    assert comm.stop(5, close=True)
    assert runner.order == [1, 3] and [s for s, _ in runner.skipped] == [0, 2]


def test_a_job_posted_after_close_fails_at_once():
    comm = CommThread(FakeRunner(), name="minerva-dist-test")
    comm.stop(1, close=True)
    errors = []
    comm.post(FakeJob(0, errors.append))
    assert isinstance(errors[0], dist.CommunicationLost)


def test_a_poisoned_collective_fails_and_the_next_ones_run(local):
    def infer(x):
        return (registry.ArraySpec(x.shape, x.dtype),)

    def impl(xp, x, *, out):
        raise RuntimeError("failed on purpose")
    fail = registry.get("test_dist_fail") if "test_dist_fail" in registry.names() else \
        registry.register("test_dist_fail", infer, impl)
    bad = dist.allreduce(builder.build(fail, [mv.ones(3)]))
    good = dist.allreduce(mv.full(3, 2.0))
    np.testing.assert_array_equal(good.to_numpy(), np.full(3, 2.0))
    with pytest.raises(mv.OpError, match="failed on purpose"):
        bad.wait(timeout=10)


def test_the_thread_stops_with_shutdown_and_comes_back(local):
    dist.allreduce(mv.ones(2)).wait(timeout=10)
    assert any(t.name == "minerva-dist-comm" for t in threading.enumerate())
    sessions.park()
    assert not any(t.name == "minerva-dist-comm" for t in threading.enumerate())
    assert dist.allreduce(mv.ones(2)).to_numpy().tolist() == [1, 1]


# ---- the GPU path on the CUDA test double ------------------------------------------------

def test_gpu_arrays_are_staged_through_pinned_memory_without_nccl(local, monkeypatch):
    from tests.distributed.programs import device_patches
    from tests.support.fake_cuda import FakeCuda
    from minerva.device import gpu
    from minerva.distributed import nccl
    device_patches.apply(cpu=False)
    layer = FakeCuda(n_devices=1)
    monkeypatch.setattr(gpu, "load_cuda_layer", lambda: layer)
    monkeypatch.setattr(nccl, "load_nccl", lambda: None)
    mv.init()
    with mv.device(mv.create_gpu_device(0)):
        x = np.arange(10, dtype=np.float32).reshape(2, 5)
        a = mv.array(x)
        results = [dist.allreduce(a, op="mean"), dist.broadcast(a), dist.allgather(a),
                   *dist.allreduce_many([a, a[1]], bucket_bytes=8)]
        wants = [x, x, x[None], x, x[1]]
        for got, want in zip(results, wants):
            np.testing.assert_array_equal(got.to_numpy(), want)
    link = next(iter(sessions.current().runner.gpu._links.values()))
    assert [c for c in layer.of("d2h") if c[1] is link.stream]
    mv.shutdown()
    dist.shutdown()
