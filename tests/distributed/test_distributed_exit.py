"""How a rank finalizes MPI at exit, in one process (a recording double of mpi4py's
``MPI``): every rank finalizes, also after communication broke, so the launcher reports
each rank's own exit status; after a loss the wait is bounded, past it the process exits
with status 1. The runs across processes are in test_distributed_mpi.py."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from minerva.distributed import mpi_transport
from minerva.distributed.mpi_transport import MpiTransport

ROOT = Path(__file__).resolve().parents[2]


class RecordingMpi:
    """The few calls of mpi4py's ``MPI`` that finalizing makes, noted in ``calls``."""

    SUM = MAX = MIN = object()

    def __init__(self):
        self.calls: list = []

    def Is_finalized(self):
        return "Finalize" in self.calls

    def Finalize(self):
        self.calls.append("Finalize")


class RecordingComm:
    def __init__(self, calls: list):
        self.calls = calls

    def Get_rank(self):
        return 0

    def Get_size(self):
        return 2

    def Free(self):
        self.calls.append("Free")


@pytest.fixture
def transport(monkeypatch):
    """An MpiTransport over the doubles; its ``calls`` also note the watchdog's arming
    (``limit <seconds>``) and disarming."""
    mpi = RecordingMpi()

    def arm(seconds, exit, file):
        mpi.calls.append(f"limit {seconds} {exit}")
    watchdog = mpi_transport.faulthandler
    monkeypatch.setattr(watchdog, "dump_traceback_later", arm)
    monkeypatch.setattr(watchdog, "cancel_dump_traceback_later",
                        lambda: mpi.calls.append("no limit"))
    made = MpiTransport(mpi, RecordingComm(mpi.calls), timeout=7.0)
    made.calls = mpi.calls
    return made


def test_a_healthy_rank_frees_its_communicator_and_finalizes_without_a_limit(transport):
    transport.finalize(healthy=True)
    assert transport.calls == ["Free", "Finalize"]


def test_a_rank_that_lost_communication_still_finalizes_within_the_timeout(transport):
    transport.finalize(healthy=False)
    assert transport.calls == ["limit 7.0 True", "Finalize", "no limit"]


def test_a_rank_interrupted_by_ctrl_c_does_not_finalize(transport):
    transport.interrupt("interrupted by Ctrl-C (SIGINT)")
    transport.finalize(healthy=False, interrupted=True)
    assert transport.calls == []


def run_python(code: str, timeout: float = 30):
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], timeout=timeout,
                          capture_output=True, text=True, cwd=ROOT)
    return done, time.monotonic() - start


def test_a_block_past_its_limit_ends_the_process_with_status_1():
    done, seconds = run_python("""
        import time
        from minerva.distributed.mpi_transport import exit_after
        print("before", flush=False)       # flushed before the limit is armed
        with exit_after(0.5):
            time.sleep(20)
        print("never")
        """)
    assert done.returncode == 1 and seconds < 10, done
    assert done.stdout.split() == ["before"] and "Timeout" in done.stderr, done


def test_a_block_within_its_limit_leaves_the_exit_status_alone():
    done, _ = run_python("""
        import sys, time
        from minerva.distributed.mpi_transport import exit_after
        with exit_after(1.0):
            time.sleep(0.1)
        time.sleep(2.0)                    # past the limit: it was disarmed
        sys.exit(3)
        """)
    assert done.returncode == 3, done
