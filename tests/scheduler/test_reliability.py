"""Regressions of the defects a new user found (issue 11): copies and pickling, fork,
cancelling shutdown, failed copies, the per-thread device, the copy-cache race, errors
raised at once, mv.nn on array-likes."""
from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import minerva as mv
from tests.conftest import assert_settled, minerva_threads, start_engine

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


# ---- 1. copy, deepcopy, pickle --------------------------------------------------------

def test_copy_copy_gives_a_counted_array_and_leaves_the_original_intact(engine):
    x = mv.arange(6.0).reshape(2, 3)
    c = copy.copy(x)
    del c
    np.testing.assert_array_equal(x.to_numpy(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal((x.sum()).to_numpy(), 15.0)
    assert_settled(x)


def test_deepcopy_is_independent(engine):
    x = mv.ones(3)
    d = copy.deepcopy(x)
    d += 1
    np.testing.assert_array_equal(x.to_numpy(), np.ones(3))
    np.testing.assert_array_equal(d.to_numpy(), np.full(3, 2.0))


def test_pickle_round_trip_by_value_onto_the_current_device(engine):
    mv.create_cpu_device()
    second = mv.create_cpu_device()
    x = mv.arange(5, dtype=np.int32) * 3
    payload = pickle.dumps(x)
    with mv.device(second):
        back = pickle.loads(payload)
    assert back.device == second and back.dtype == np.int32
    np.testing.assert_array_equal(back.to_numpy(), np.arange(5, dtype=np.int32) * 3)


# ---- 2. fork ---------------------------------------------------------------------------

def _child_script(body: str, prelude: str = "") -> str:
    """A script that imports minerva (after ``prelude``) and runs ``body``."""
    head = f"import os, sys, time\nsys.path.insert(0, {ROOT!r})\n"
    return (head + textwrap.dedent(prelude) + "import numpy as np\nimport minerva as mv\n"
            + textwrap.dedent(body))


def _run(script: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("engine_name", ["dag", "naive"])
def test_a_forked_child_starts_its_own_runtime(engine_name):
    done = _run(_child_script(f"""
        mv.init(engine={engine_name!r})
        x = mv.ones(4) * 2
        x.wait()
        pid = os.fork()
        if pid == 0:
            try:
                x + 1
                os._exit(3)
            except mv.MinervaError as exc:
                ok = "fork" in str(exc)
            y = (mv.arange(4.0) + 1).to_numpy()
            os._exit(0 if ok and y.tolist() == [1, 2, 3, 4] else 4)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status))
    """))
    assert done.returncode == 0, done.stderr
    assert "child 0" in done.stdout, done.stdout + done.stderr


def test_a_child_with_inherited_pending_work_exits_at_once():
    done = _run(_child_script("""
        a = mv.ones((600, 600))
        for _ in range(30):
            a = a @ a * 1e-3
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            sys.exit(0)  # a normal exit: atexit handlers run in the child
        _, status = os.waitpid(pid, 0)
        print("exit", os.waitstatus_to_exitcode(status), "seconds",
              round(time.perf_counter() - t0, 1))
        mv.shutdown(timeout=0)
    """))
    assert done.returncode == 0, done.stderr
    words = done.stdout.split()
    assert words[:2] == ["exit", "0"] and float(words[3]) < 10, done.stdout


# ---- 3. shutdown cancels ---------------------------------------------------------------

INLINE_BYTES = 1 << 20
"""The inline limit under which a chain of 300x300 or 400x400 products runs on the device's
thread (unset, the limit depends on the cores: configuration.md)."""


def _matmul_chain(n: int, size: int = 400):
    a = mv.ones((size, size))
    out = []
    for _ in range(n):
        a = a @ a * (1.0 / size)
        out.append(a)
    return out


@pytest.mark.parametrize("engine_name", ["dag", "dag-queued"])
def test_shutdown_with_a_timeout_cancels_what_has_not_started(engine_name):
    start_engine(engine_name, max_pending=1000, inline_bytes=INLINE_BYTES)
    chain = _matmul_chain(200)
    t0 = time.perf_counter()
    mv.shutdown(timeout=0.05)
    assert time.perf_counter() - t0 < 10
    assert minerva_threads() == []
    with pytest.raises(mv.OpError) as info:
        chain[-1].to_numpy()
    assert isinstance(info.value.__cause__, mv.CancelledError)
    assert "shutdown" in str(info.value)


_LAST_WORDS = """
    import atexit, threading  # registered before minerva's exit handler: runs after it
    def last_words():  # runs after minerva's own exit handler
        alive = [t.name for t in threading.enumerate() if t.name.startswith("minerva-")]
        print("alive", alive, flush=True)
    atexit.register(last_words)
"""


def test_exit_with_pending_work_and_ctrl_c_stops_every_thread():
    script = _child_script(prelude=_LAST_WORDS, body="""
        a = mv.ones((700, 700))
        for _ in range(60):
            a = a @ a * 1e-3
        print("ready", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    proc.send_signal(2)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode in (0, 1, -2, 130), err
    assert "alive []" in out, out + err


def test_exit_with_pending_work_finishes_it():
    done = _run(_child_script(prelude=_LAST_WORDS, body="""
        a = mv.ones((300, 300))
        for _ in range(20):
            a = a @ a * (1 / 300)
        print("done")
    """))
    assert done.returncode == 0 and "done" in done.stdout, done.stderr
    assert "alive []" in done.stdout, done.stdout


# ---- 4. failed copies are not cached ----------------------------------------------------

def test_a_failed_copy_is_made_again_once_memory_is_free(engine):
    mv.shutdown()
    start_engine(engine, mem_limit="1M")
    dev0, dev1 = mv.create_cpu_device(), mv.create_cpu_device()
    with mv.device(dev0):
        x = mv.ones(40_000)  # 320 kB: its copy does not fit beside the hog
    with mv.device(dev1):
        hog = mv.zeros(100_000)  # 800 kB
        hog.wait()
        failed = x + 1
        with pytest.raises(mv.OpError):
            failed.to_numpy()
        del hog, failed
        try:
            mv.wait_for_all(timeout=30)
        except mv.OpError:
            pass
        retried = x + 1
        np.testing.assert_array_equal(retried.to_numpy(), np.full(40_000, 2.0))


# ---- 5. trace paths --------------------------------------------------------------------

def test_a_bad_minerva_trace_path_refuses_to_start(monkeypatch, tmp_path):
    monkeypatch.setenv("MINERVA_TRACE", str(tmp_path / "missing" / "t.json"))
    with pytest.raises(ValueError, match="MINERVA_TRACE"):
        mv.zeros(3)
    assert minerva_threads() == []


def test_shutdown_stops_every_thread_when_the_trace_cannot_be_written(tmp_path):
    folder = tmp_path / "gone"
    folder.mkdir()
    mv.profiler.start(str(folder / "t.json"))
    (mv.ones(3) + 1).wait()
    folder.rmdir()
    with pytest.raises(OSError):
        mv.shutdown()
    assert minerva_threads() == []


# ---- 6. mv.nn takes array-likes ---------------------------------------------------------

NN_CALLS = {
    "conv2d": lambda f, r: f.conv2d(r.random((1, 2, 5, 5)), r.random((3, 2, 3, 3))),
    "conv2d_backward_data": lambda f, r: f.conv2d_backward_data(
        r.random((1, 3, 3, 3)), r.random((3, 2, 3, 3)), (1, 2, 5, 5)),
    "conv2d_backward_filter": lambda f, r: f.conv2d_backward_filter(
        r.random((1, 3, 3, 3)), r.random((1, 2, 5, 5)), (3, 2, 3, 3)),
    "conv2d_backward_bias": lambda f, r: f.conv2d_backward_bias(r.random((1, 3, 3, 3))),
    "max_pool2d": lambda f, r: f.max_pool2d(r.random((1, 2, 4, 4)), 2),
    "avg_pool2d": lambda f, r: f.avg_pool2d(r.random((1, 2, 4, 4)), 2),
    "softmax": lambda f, r: f.softmax(r.random((2, 5)).tolist()),
    "log_softmax": lambda f, r: f.log_softmax(r.random((2, 5))),
    "cross_entropy": lambda f, r: f.cross_entropy(r.random((2, 5)), [1, 3]),
    "relu_backward": lambda f, r: f.relu_backward(r.random(4), r.random(4) - 0.5),
    "sigmoid_backward": lambda f, r: f.sigmoid_backward(r.random(4), r.random(4)),
    "tanh_backward": lambda f, r: f.tanh_backward(r.random(4), r.random(4)),
    "lrn": lambda f, r: f.lrn(r.random((1, 6, 3, 3))),
}


@pytest.mark.parametrize("name", sorted(NN_CALLS))
def test_nn_functions_take_numpy_arrays_and_lists(engine, name):
    got = NN_CALLS[name](mv.nn, np.random.default_rng(0))
    wrapped = NN_CALLS[name](_Wrapping(mv.nn), np.random.default_rng(0))
    np.testing.assert_array_equal(got.to_numpy(), wrapped.to_numpy())


class _Wrapping:
    """mv.nn with every array-like argument made an NArray first."""

    def __init__(self, module):
        self.module = module

    def __getattr__(self, name):
        function = getattr(self.module, name)

        def call(*args):
            return function(*(mv.array(a) if isinstance(a, (np.ndarray, list)) else a
                              for a in args))
        return call


# ---- 8. the current device is per thread -------------------------------------------------

def test_each_thread_has_its_own_current_device(engine):
    devices = [mv.create_cpu_device() for _ in range(8)]
    wrong, barrier = [], threading.Barrier(len(devices))

    def work(device):
        with mv.device(device):
            barrier.wait(timeout=30)
            for _ in range(100):
                y = mv.ones(2) + 1
                if y.device != device or mv.current_device() != device:
                    wrong.append((device, y.device))
    threads = [threading.Thread(target=work, args=(d,)) for d in devices]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert wrong == []


def test_a_thread_that_never_chose_uses_the_default_device(engine):
    mv.create_cpu_device()
    mv.set_device(mv.create_cpu_device())
    seen = []
    thread = threading.Thread(target=lambda: seen.append((mv.ones(1) + 0).device))
    thread.start()
    thread.join(30)
    assert seen == [0] and mv.current_device() == 1


# ---- 9. the copy cache under two threads ---------------------------------------------------

def test_two_threads_copying_one_value_share_one_cached_copy(engine):
    dev0, dev1 = mv.create_cpu_device(), mv.create_cpu_device()
    for _ in range(150):
        with mv.device(dev0):
            x = mv.ones(8)
        copies, barrier = [], threading.Barrier(2)

        def take():
            barrier.wait(timeout=30)
            copies.append(x.to(dev1))
        threads = [threading.Thread(target=take) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert copies[0]._storage.current is copies[1]._storage.current
        del x, copies
    assert_settled()


# ---- 10. errors NumPy raises at once arrive at once ------------------------------------------

@pytest.mark.parametrize("build, error", [
    (lambda: mv.zeros((2 ** 40, 2 ** 40)), mv.ShapeError),
    (lambda: mv.ones((1,) * 65), mv.ShapeError),
    (lambda: mv.full((2,), object()), mv.ShapeError),
    (lambda: mv.full((2,), np.ones(3)), mv.ShapeError),
    (lambda: mv.randn((2,), dtype=int), mv.DTypeError),
    (lambda: mv.ones(3).wait(timeout="soon"), TypeError),
    (lambda: mv.init(log="verbose"), ValueError),
    (lambda: mv.init(dispatchers="x"), ValueError),
])
def test_bad_input_raises_at_once(build, error):
    with pytest.raises(error):
        build()


def test_full_broadcasts_an_array_value_as_numpy(engine):
    np.testing.assert_array_equal(mv.full((2, 3), np.arange(3)).to_numpy(),
                                  np.full((2, 3), np.arange(3)))
    assert mv.full((2,), 1).dtype == np.full((2,), 1).dtype


def test_softmax_of_an_empty_axis_is_empty(engine):
    assert mv.nn.softmax(mv.zeros((2, 0))).to_numpy().shape == (2, 0)


def test_expand_dims_takes_a_tuple(engine):
    assert mv.expand_dims(mv.ones((3, 4)), (0, 2)).shape == np.expand_dims(
        np.ones((3, 4)), (0, 2)).shape


@pytest.mark.parametrize("raw", ["NAIVE", "Naive"])
def test_settings_are_case_insensitive(monkeypatch, raw):
    monkeypatch.setenv("MINERVA_ENGINE", raw)
    assert mv.init() is None
    assert (mv.ones(2) + 1).to_numpy().tolist() == [2.0, 2.0]


def test_init_options_are_parsed_like_the_environment():
    mv.init(dispatchers="2")
    mv.shutdown()
    with pytest.raises(ValueError, match="MINERVA_DISPATCHERS"):
        mv.init(dispatchers="two")


def test_a_wait_timeout_names_the_array_for_people(engine):
    if engine == "naive":
        pytest.skip("the naive engine computes at once")
    mv.shutdown()
    start_engine(engine, inline_bytes=INLINE_BYTES)
    x = _matmul_chain(30, 300)[-1]
    with pytest.raises(mv.WaitTimeoutError) as info:
        x.wait(timeout=0)
    assert "DataNode(" not in str(info.value) and "created at" in str(info.value)


@pytest.mark.parametrize("build", [
    lambda x: x.reshape(7),
    lambda x: x.sum(axis=5),
    lambda x: mv.squeeze(x, 0),
    lambda x: mv.nn.dropout(x, 2.0),
    lambda x: mv.zeros(-1),
])
def test_shape_errors_name_the_users_line(engine, build):
    x = mv.ones((2, 3))
    with pytest.raises(mv.ShapeError) as info:
        build(x)
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert f"built at {os.path.basename(__file__)}:" in notes
