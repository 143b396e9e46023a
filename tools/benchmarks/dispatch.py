"""dispatch: per-op cost of the runtime on tiny ops — a dependent chain and a batch of
independent ops — for minerva (dag and naive engines), plain NumPy running the same code,
and Dask's threaded scheduler on the same graph (when dask is installed); and a chain on
128 KiB operands, run at once on the calling thread (under the default inline limit of 1 MiB)
and through the DAG path (the limit set to 64 KiB, below the op's 256 KiB)."""
from __future__ import annotations

import numpy as np

import minerva as mv
from benchmarks.harness import scenario, table, timed


BIG = 16384
"""Elements of the big chain's operands (float64: 128 KiB)."""


def minerva_chain(n: int, size: int = 4):
    def run():
        x = mv.zeros(size)
        for _ in range(n):
            x = x + 1
        x.wait()
    return run


def minerva_independent(n: int):
    def run():
        base = mv.zeros(4)
        outs = [base + i for i in range(n)]
        mv.wait_for_all()
        del outs
    return run


def numpy_chain(n: int, size: int = 4):
    def run():
        x = np.zeros(size)
        for _ in range(n):
            x = x + 1
    return run


def numpy_independent(n: int):
    def run():
        base = np.zeros(4)
        [base + i for i in range(n)]
    return run


def dask_chain(n: int):
    import dask.threaded
    graph = {("x", 0): (np.zeros, 4)}
    for i in range(1, n + 1):
        graph[("x", i)] = (np.add, ("x", i - 1), 1)
    return lambda: dask.threaded.get(graph, ("x", n))


def dask_independent(n: int):
    import dask.threaded
    graph = {"base": (np.zeros, 4)}
    for i in range(n):
        graph[("y", i)] = (np.add, "base", i)
    keys = [("y", i) for i in range(n)]
    return lambda: dask.threaded.get(graph, keys)


def _with_engine(engine: str, build):
    def run():
        mv.shutdown()
        mv.init(engine=engine)
        mv.create_cpu_device()
        timing = build()
        return timing
    return run


def measure(n_chain: int, n_independent: int, repeat: int) -> dict:
    """Microseconds per op for each system and graph."""
    rows = {}
    for engine in ("dag", "naive"):
        mv.shutdown()
        mv.init(engine=engine)
        rows[f"minerva-{engine}"] = (timed(minerva_chain(n_chain), repeat),
                                     timed(minerva_independent(n_independent), repeat))
        mv.shutdown()
    rows["numpy"] = (timed(numpy_chain(n_chain), repeat),
                     timed(numpy_independent(n_independent), repeat))
    try:
        rows["dask-threaded"] = (timed(dask_chain(n_chain), max(1, repeat // 2)),
                                 timed(dask_independent(n_independent), max(1, repeat // 2)))
    except ImportError:
        pass
    return {name: (chain / n_chain * 1e6, indep / n_independent * 1e6)
            for name, (chain, indep) in rows.items()}


def measure_big(n: int, repeat: int) -> dict:
    """Microseconds per op of a chain on 128 KiB operands: minerva (each engine, the direct
    path and the DAG path) and NumPy."""
    rows = {}
    for engine in ("dag", "naive"):
        for path, inline in (("", None), (" DAG path", 64 << 10)):
            mv.shutdown()
            mv.init(engine=engine, **({} if inline is None else {"inline_bytes": inline}))
            rows[f"minerva-{engine}{path}"] = timed(minerva_chain(n, BIG), repeat) / n * 1e6
            mv.shutdown()
    rows["numpy"] = timed(numpy_chain(n, BIG), repeat) / n * 1e6
    return rows


def calls_per_op(engine: str, n: int = 2_000) -> float:
    """Python-level calls (cProfile's count, builtins included) per tiny op of a chain."""
    import cProfile
    import pstats
    mv.shutdown()
    mv.init(engine=engine)
    x = mv.zeros(4, dtype=np.float32)
    for _ in range(100):
        x = x + 1.0
    x.wait()
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(n):
        x = x + 1.0
    x.wait()
    profile.disable()
    mv.shutdown()
    return pstats.Stats(profile).total_calls / n


@scenario("dispatch")
def dispatch(args) -> dict:
    """Chain of 20k tiny ops and 2k independent ones; microseconds and calls per op."""
    n_chain, n_independent = (2_000, 500) if args.quick else (20_000, 2_000)
    per_op = measure(n_chain, n_independent, args.repeat)
    calls = {f"minerva-{e}": calls_per_op(e) for e in ("dag", "naive")}
    rows = [(name, f"{chain:.2f}", f"{indep:.2f}",
             f"{calls[name]:.0f}" if name in calls else "-")
            for name, (chain, indep) in per_op.items()]
    table(f"dispatch: us/op (chain of {n_chain}, {n_independent} independent)", rows,
          ("system", "chain us/op", "independent us/op", "calls/op"))
    ratios = {}
    if "dask-threaded" in per_op:
        dag, dask = per_op["minerva-dag"], per_op["dask-threaded"]
        ratios = {"dask_over_dag_chain": dask[0] / dag[0],
                  "dask_over_dag_independent": dask[1] / dag[1]}
    ratios["dag_over_numpy_chain"] = per_op["minerva-dag"][0] / per_op["numpy"][0]
    ratios["naive_over_numpy_chain"] = per_op["minerva-naive"][0] / per_op["numpy"][0]
    big = measure_big(n_chain // 10, args.repeat)
    table("dispatch: us/op, chain on 128 KiB operands (direct; DAG path)",
          [(name, f"{us:.2f}") for name, us in big.items()], ("system", "us/op"))
    for engine in ("dag", "naive"):
        ratios[f"{engine}_over_numpy_big_chain"] = big[f"minerva-{engine}"] / big["numpy"]
        ratios[f"{engine}_dag_path_over_numpy_big_chain"] = \
            big[f"minerva-{engine} DAG path"] / big["numpy"]
    print("  ratios: " + ", ".join(f"{k}={v:.2f}x" for k, v in ratios.items()))
    return {"us_per_op": per_op, "big_chain_us_per_op": big, "ratios": ratios,
            "calls_per_op": calls}


def _op_pieces() -> list[tuple[str, float]]:
    """Microseconds of the pieces of one tiny op (``x + 1.0`` on 4 floats) on the lean
    direct path, each timed alone, and the whole op."""
    import threading
    import timeit

    from minerva.common import fp_errors
    from minerva.common.callsite import user_callsite
    from minerva.dag.nodes import Storage
    from minerva.dag.physical_dag import PhysicalDag
    from minerva.narray import NArray
    from minerva.ops import registry
    from minerva.scheduler import state
    from minerva.storage import make_store
    from minerva.storage.host import HostAllocator

    op, spec = registry.get("add_scalar"), registry.spec((4,), np.float32)
    attrs = {"scalar": 1.0, "reverse": False}
    a, out, dag = np.zeros(4, np.float32), np.zeros(4, np.float32), PhysicalDag()
    store, lock = make_store(HostAllocator()), threading.Lock()
    mv.shutdown()
    mv.init(engine="dag")
    x = mv.zeros(4, dtype=np.float32)
    releases = []

    class Engine:   # a stand-in: a released storage's value goes to a list, as to the queue
        release = releases.append

    def value_and_handles():   # the output's node, its storage and handle, then their release
        data = state.settled_value(dag, spec, 0, False)
        NArray(Storage(data, Engine()), None, spec)
        del dag.data[data.node_id]
        releases.clear()

    def store_round_trip():
        block, _ = store.alloc_array(16, (4,), np.float32)
        store.free(block)

    def lock_round_trip():
        with lock:
            pass

    def kernel_under_errstate():   # as the lean path runs it (direct.run_kernel)
        errstate = fp_errors.caller_state()
        token = fp_errors.DIRECT.set(errstate.direct)
        try:
            op.impl(np, a, out=out, **attrs)
        finally:
            fp_errors.DIRECT.reset(token)

    pieces = [("the NumPy kernel np.add(a, 1.0, out=out)", lambda: np.add(a, 1.0, out=out)),
              ("the kernel under the caller's error state", kernel_under_errstate),
              ("shape/dtype rule (infer, dtype cached)", lambda: op.infer(spec, **attrs)),
              ("output node, storage, handle, release", value_and_handles),
              ("store: alloc_array + free (no hand-over)", store_round_trip),
              ("one lock round trip", lock_round_trip),
              ("the user's file:line (only for errors and deferred ops)", user_callsite),
              ("the whole op x + 1.0", lambda: x + 1.0)]
    n = 100_000
    result = [(name, min(timeit.repeat(f, number=n, repeat=3)) / n * 1e6)
              for name, f in pieces]
    mv.shutdown()
    return result


@scenario("op-cost")
def op_cost(args) -> dict:
    """What one tiny op's pieces cost, each timed alone (compare with ``dispatch``)."""
    pieces = _op_pieces()
    table("op-cost: pieces of one tiny op, each timed alone",
          [(name, f"{us:.2f}") for name, us in pieces], ("piece", "us"))
    return {"us": dict(pieces)}
