"""Lifecycle: backpressure, shutdown with pending work, interpreter exit, no leaks."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import minerva as mv
from tests.conftest import assert_settled, minerva_threads


def test_shutdown_finishes_pending_work_and_stops_every_thread(engine):
    devices = [mv.create_cpu_device() for _ in range(3)]
    results = []
    for dev in devices:
        with mv.device(dev):
            x = mv.ones((64, 64))
            for _ in range(20):
                x = x @ x / 64
            results.append(x)
    assert minerva_threads()  # workers (and dispatchers under dag) are running
    mv.shutdown(timeout=60)
    assert minerva_threads() == []
    for x in results:  # finished before shutdown returned: still readable
        np.testing.assert_allclose(x.to_numpy(), np.ones((64, 64)), rtol=1e-5)


def test_runtime_restarts_after_shutdown():
    mv.init(engine="naive")
    assert float(mv.ones(3).sum()) == 3.0
    mv.shutdown()
    mv.init(engine="dag", dispatchers=1)
    assert float(mv.ones(3).sum()) == 3.0


def test_init_twice_with_options_is_an_error():
    mv.init(engine="dag")
    with pytest.raises(mv.MinervaError, match="already running"):
        mv.init(engine="naive")


def test_backpressure_bounds_ops_in_flight():
    mv.init(engine="dag", max_pending=16)
    from minerva.system import get_system
    engine = get_system().engine
    seen = []
    x = mv.ones((32, 32))
    for _ in range(500):
        x = x + 1
        seen.append(engine.n_inflight)
    assert max(seen) <= 16
    assert float(x[0, 0]) == 501.0


def test_max_pending_from_environment(monkeypatch):
    monkeypatch.setenv("MINERVA_MAX_PENDING", "8")
    from minerva.system import get_system
    assert get_system().engine.max_pending == 8


def test_a_long_program_without_sync_keeps_memory_bounded():
    mv.init(engine="dag", max_pending=64)
    x = mv.zeros((256, 256))  # 256 KiB per value
    for _ in range(2000):
        x = x + 1
    assert float(x[0, 0]) == 2000.0
    # without backpressure and prompt frees, 2000 values would hold 500 MiB
    assert mv.memory_stats()["peak_bytes"] < 200 * 256 * 256 * 4


def test_no_nodes_or_memory_left_after_many_dropped_handles(runtime, rng):
    _, devices = runtime
    keep = []
    for i in range(200):
        with mv.device(devices[i % len(devices)]):
            y = mv.array(rng.standard_normal((4, 4))) @ mv.ones((4, 4), dtype=np.float64)
            if i % 50 == 0:
                keep.append(y.sum())
    del y
    assert_settled(*keep)


def test_handles_released_from_another_thread(engine):
    arrays = [mv.ones((16,)) * i for i in range(50)]
    thread = threading.Thread(target=arrays.clear)
    thread.start()
    thread.join(10)
    assert_settled()


EXIT_SCRIPT = textwrap.dedent("""
    import minerva as mv
    devs = [mv.create_cpu_device() for _ in range(2)]
    for d in devs:
        with mv.device(d):
            x = mv.ones((128, 128))
            for _ in range(300):
                x = (x @ x) / 128
    print("issued", flush=True)
    # exit with all of that still pending
""")


@pytest.mark.parametrize("engine_name", ["dag", "naive"])
def test_interpreter_exit_with_pending_work_is_clean(engine_name):
    env = dict(os.environ, MINERVA_ENGINE=engine_name)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", EXIT_SCRIPT], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "issued"
    assert "Traceback" not in proc.stderr
    assert time.monotonic() - start < 100


def test_several_user_threads_build_ops_at_once(engine):
    results, errors = {}, []

    def work(k):
        try:
            x = mv.full((8,), float(k))
            for _ in range(300):
                x = (x * 2 + 1) % 7
            results[k] = x.to_numpy()
        except Exception as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == [] and len(results) == 4
    for k, values in results.items():
        want = np.full(8, float(k), np.float32)
        for _ in range(300):
            want = (want * 2 + 1) % 7
        np.testing.assert_array_equal(values, want)
    assert_settled()
