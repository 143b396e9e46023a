"""Nothing is lost at interpreter exit: big (row-split) work still pending when the script
ends finishes and shows in the trace, ``atexit`` handlers registered after ``import
minerva`` read results, and threads that outlive the main thread compute until they end."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

_PRELUDE = f"""
import atexit, sys, threading, time
sys.path.insert(0, {ROOT!r})
import numpy as np
import minerva as mv
dev = mv.create_cpu_device(threads=2)     # big element-wise ops run as two row ranges
mv.set_device(dev)
a = mv.arange(1 << 18, dtype=np.float64).reshape(512, 512) / (1 << 18)
"""
EXPECTED = float(np.sum(np.exp(np.arange(1 << 18) / (1 << 18)) * 2.0))


def _run(body: str, **env) -> subprocess.CompletedProcess:
    script = _PRELUDE + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=90, env={**os.environ, **env})


def _printed(done, key: str) -> float:
    lines = [line for line in done.stdout.splitlines() if line.startswith(key)]
    assert lines, done.stdout + done.stderr
    return float(lines[-1].split()[1])


def test_an_atexit_handler_reads_pending_big_results():
    done = _run("""
        b = mv.exp(a) * 2.0
        atexit.register(lambda: print("sum", float(b.sum()), flush=True))
    """)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert np.isclose(_printed(done, "sum"), EXPECTED)


def test_a_thread_that_outlives_the_main_thread_computes_until_it_ends():
    done = _run("""
        def late():
            time.sleep(0.3)                 # the main thread has ended by now
            for _ in range(3):
                c = mv.exp(a) * 2.0
            print("sum", float(c.sum()), flush=True)
        threading.Thread(target=late).start()
    """)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert np.isclose(_printed(done, "sum"), EXPECTED)


def test_work_pending_at_exit_finishes_and_shows_in_the_trace(tmp_path):
    trace = tmp_path / "exit.json"
    done = _run("""
        b = a
        for _ in range(20):
            b = mv.sin(b) * 0.5
    """, MINERVA_TRACE=str(trace))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    finished = [e for e in events if e.get("ph") == "X" and e.get("name") == "sin"]
    assert len(finished) == 20
    assert not any("error" in json.dumps(e.get("args", {})).lower() for e in finished)
