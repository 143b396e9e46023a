"""minerva.distributed across processes: the programs of ``tests/distributed/programs/`` run under
``mpiexec -n N`` (2 and 3 ranks, one machine, loopback/shared memory), each with a hard
timeout; every rank must end by itself.

- every collective against NumPy, issue order, overlap with compute (2 and 3 ranks);
- a data-parallel step equals a single-process step on the combined batch (bitwise with
  2 ranks), and the first gradient bucket travels while the backward pass runs;
- failures: a mismatch fails on every rank; a rank that leaves early makes the others
  fail within a short ``MINERVA_DIST_TIMEOUT``; Ctrl-C on mpiexec ends every rank;
- the job's exit status: non-zero when a rank failed (raised, exited non-zero, was killed
  or hung), though the others caught the loss and ended normally; 0 when every rank did;
- GPU collectives on the CUDA and NCCL test doubles (NCCL, and host staging);
- the app, a few steps.

Skipped, saying why, without mpi4py or mpiexec (``pip install 'minerva[dist]'``);
with ``MINERVA_TEST_REQUIRE_MPI=1`` (CI) their absence is an error instead.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).resolve().parent / "programs"
RUN_TIMEOUT = 60


def find_mpiexec() -> str | None:
    """``mpiexec`` beside this Python (the ``mpich`` wheel puts it there), else on PATH."""
    beside = Path(sys.executable).with_name("mpiexec")
    return str(beside) if beside.exists() else shutil.which("mpiexec")


MPIEXEC = find_mpiexec()
HAVE_MPI4PY = importlib.util.find_spec("mpi4py") is not None
MISSING = "needs mpi4py and mpiexec: pip install 'minerva[dist]' (mpi4py, mpich)"
if os.environ.get("MINERVA_TEST_REQUIRE_MPI") == "1" and not (MPIEXEC and HAVE_MPI4PY):
    raise RuntimeError(f"MINERVA_TEST_REQUIRE_MPI=1 but the distributed tests cannot run: "
                       f"{MISSING}")
pytestmark = pytest.mark.skipif(not (MPIEXEC and HAVE_MPI4PY), reason=MISSING)


def command(n: int, program: str, *args) -> list[str]:
    return [MPIEXEC, "-n", str(n), sys.executable, str(PROGRAMS / program), *args]


def environment(**extra) -> dict:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT),
               MINERVA_DIST_TIMEOUT="30")
    env.update(extra)
    return env


def run(n: int, program: str, *args, timeout: float = RUN_TIMEOUT, **env):
    """Run ``program`` on ``n`` ranks; ``(exit status, output, seconds)``. A run past
    ``timeout`` is killed (its whole process group) and fails the test."""
    start = time.monotonic()
    proc = subprocess.Popen(command(n, program, *args), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=environment(**env),
                            start_new_session=True, cwd=ROOT)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, _ = proc.communicate()
        pytest.fail(f"{program} {args} on {n} ranks did not end within {timeout} s:\n{out}")
    return proc.returncode, out, time.monotonic() - start


def kill_group(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def ranks_saying(word: str, out: str) -> list[int]:
    """The ranks that printed ``WORD <rank>`` (the launcher may merge the ranks' lines,
    even within a line: ``LOST 1`` then another rank's ``2026-...``; ranks are < 10)."""
    return sorted(int(rank) for rank in re.findall(word + r" (\d)", out))


def assert_all_ok(n: int, status: int, out: str) -> None:
    assert status == 0 and ranks_saying("OK", out) == list(range(n)), out


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


# ---- collectives and training ------------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3])
def test_every_collective_matches_numpy_in_issue_order(n):
    assert_all_ok(n, *run(n, "collectives.py")[:2])


@pytest.mark.parametrize("n", [2, 3])
def test_a_data_parallel_step_equals_the_single_process_step(n):
    assert_all_ok(n, *run(n, "dp_step.py")[:2])


@pytest.mark.parametrize("mode,n", [("nccl", 2), ("mixed", 3)])
def test_gpu_collectives_on_the_test_doubles(mode, n):
    assert_all_ok(n, *run(n, "gpu_fake.py", mode)[:2])


# ---- failures ----------------------------------------------------------------------------

def test_a_mismatch_fails_on_every_rank_and_the_ranks_go_on():
    assert_all_ok(3, *run(3, "failures.py", "mismatch")[:2])


def test_a_rank_that_leaves_early_makes_the_others_fail_within_the_timeout():
    status, out, seconds = run(3, "failures.py", "early", MINERVA_DIST_TIMEOUT="2")
    lost = re.findall(r"LOST (\d+) ([\d.]+)", out)
    assert status != 0 and sorted(int(rank) for rank, _ in lost) == [0, 1], out
    assert all(float(seconds) < 2 + 3 for _, seconds in lost), out  # one timeout
    assert "MINERVA_DIST_TIMEOUT" in out and seconds < 30, out


def test_ctrl_c_on_mpiexec_ends_every_rank():
    proc = subprocess.Popen(command(2, "failures.py", "loop"), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=environment(),
                            start_new_session=True, cwd=ROOT)
    try:
        ready = []
        deadline = time.monotonic() + RUN_TIMEOUT
        while len(ready) < 2 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            ready += re.findall(r"READY (\d+)", line)
        assert len(ready) == 2, "the ranks never started their loop"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
        deadline = time.monotonic() + 10
        while group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not group_alive(proc.pid), "a rank outlived Ctrl-C"
    finally:
        kill_group(proc)
        proc.communicate()


# ---- the job's exit status -------------------------------------------------------------

@pytest.mark.parametrize("mode,n,want", [("raise", 2, 1), ("raise", 3, 1), ("exit3", 2, 3),
                                         ("kernel", 2, 1)])
def test_a_job_with_a_failed_rank_fails_though_the_others_handled_the_loss(mode, n, want):
    status, out, seconds = run(n, "exits.py", mode, MINERVA_DIST_TIMEOUT="2")
    survivors = list(range(n - 1))
    assert ranks_saying("LOST", out) == ranks_saying("DONE", out) == survivors, out
    assert status == want and seconds < 30, out


def test_a_rank_that_lost_a_hung_rank_ends_by_itself_and_fails_the_job():
    # the hung rank would answer after 20 s; the others wait at exit for one timeout
    status, out, seconds = run(2, "exits.py", "hang", MINERVA_DIST_TIMEOUT="2")
    assert ranks_saying("LOST", out) == ranks_saying("DONE", out) == [0], out
    assert status == 1 and seconds < 15, out


def test_a_job_with_a_killed_rank_fails():
    status, out, seconds = run(2, "exits.py", "kill", MINERVA_DIST_TIMEOUT="2")
    assert status != 0 and seconds < 30, out


@pytest.mark.parametrize("n", [2, 3])
def test_a_job_whose_ranks_all_exit_0_exits_0(n):
    status, out, _ = run(n, "exits.py", "clean")
    assert status == 0 and ranks_saying("DONE", out) == list(range(n)), out


# ---- the app -----------------------------------------------------------------------------

def test_the_app_trains_a_few_steps_on_two_ranks(tmp_path):
    out_json = tmp_path / "results.json"
    status, out, _ = run(2, "../../../apps/mnist_cnn_dist.py", "--smoke", "--max-steps", "3",
                         "--json", str(out_json), timeout=90)
    if "could not load MNIST" in out:
        pytest.skip("MNIST is not available (downloaded once by the app tests)")
    assert status == 0 and "test accuracy" in out and "ranks: 2" in out, out
    assert out_json.exists()
