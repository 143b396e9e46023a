"""RELEASE tasks in the ``inline`` dispatch mode: a dispatcher woken for released handles
watches while the user's ops apply the releases themselves, so a long chain of tiny ops
posts a few RELEASE tasks, not one a grace period; a release nothing else applies is still
applied within milliseconds, and a watching dispatcher stops at shutdown."""
from __future__ import annotations

import threading
import time

import numpy as np

import minerva as mv
from minerva.current import get_system
from minerva.scheduler import dag_scheduler
from minerva.scheduler.queue import TaskKind

WAIT = 30.0


def _count_release_posts(engine) -> list:
    """Count the RELEASE tasks ``engine`` posts from now on (the list's length)."""
    posts, put = [], engine.queue.put

    def counting(kind, node, *args, **kwargs):
        if kind is TaskKind.RELEASE:
            posts.append(time.perf_counter())
        return put(kind, node, *args, **kwargs)
    engine.queue.put = counting
    return posts


def test_a_long_chain_of_tiny_ops_posts_few_release_tasks():
    """0.3 s of ``z = y[3:40] * 2.0 + 1.0; y = y + 1.0`` (each drops the handles before:
    releases with no op in flight, applied by the next op); a post per grace period
    posted about 200."""
    mv.init(engine="dag", dispatch="inline")
    y = mv.zeros((64, 64))
    y.wait(timeout=WAIT)
    posts = _count_release_posts(get_system().engine)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < 0.3:
        for _ in range(20):
            z = y[3:40] * 2.0 + 1.0
            y = y + 1.0
        n += 20
    elapsed = time.perf_counter() - start
    np.testing.assert_array_equal(y.to_numpy(timeout=WAIT), np.full((64, 64), float(n)))
    np.testing.assert_array_equal(z.to_numpy(timeout=WAIT),
                                  np.full((37, 64), 2.0 * (n - 1) + 1.0))
    grace_periods = elapsed / dag_scheduler.RELEASE_GRACE_S
    assert len(posts) <= max(5, grace_periods / 20), (len(posts), n, elapsed)


def test_a_release_nothing_else_applies_is_applied_soon():
    """After a chain, a dropped handle with nothing issued after it: its bytes are free
    within milliseconds (two watches at most), without a wait."""
    mv.init(engine="dag", dispatch="inline")
    x = mv.zeros(16)
    for _ in range(2000):
        x = x + 1.0
    big = mv.ones(1 << 16)
    big.wait(timeout=WAIT)
    held = mv.memory_stats(0)["in_use_bytes"]
    del big
    start = time.perf_counter()
    while mv.memory_stats(0)["in_use_bytes"] > held - (1 << 19):
        assert time.perf_counter() - start < 5.0, "the release was never applied"
        time.sleep(0.001)
    assert time.perf_counter() - start < 1.0
    x.wait(timeout=WAIT)


def test_shutdown_stops_a_watching_dispatcher():
    """``mv.shutdown()`` while a dispatcher watches a chain: every thread is gone."""
    mv.init(engine="dag", dispatch="inline")
    x = mv.zeros(16)
    for _ in range(5000):
        x = x + 1.0
    mv.shutdown()
    time.sleep(0.05)
    assert not [t for t in threading.enumerate() if t.name.startswith("minerva-dispatcher")]
