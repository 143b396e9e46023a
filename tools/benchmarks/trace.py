"""trace-overhead: the dispatch workload (a dependent chain of tiny ops and a batch of
independent ones) with tracing off and on, side by side, in turns; the ratio on/off.

Only the workload is timed, as wall time and as the process's CPU time (all threads; less
disturbed by other processes on a busy machine). Converting and writing the trace
(``mv.profiler.stop()``) happens after the run and is reported on its own, per recorded op.
"""
from __future__ import annotations

import os
import statistics
import tempfile
import time

import minerva as mv
from benchmarks.dispatch import minerva_chain, minerva_independent
from benchmarks.harness import scenario, table

GOAL = 1.10
"""Tracing on may cost at most this factor on the dispatch workload."""


def _one_run(workload, path: str | None) -> tuple[float, float, float]:
    """Wall and CPU seconds of one run of ``workload`` (traced into ``path`` when set),
    and wall seconds spent stopping the trace."""
    if path:
        mv.profiler.start(path)
    wall, cpu = time.perf_counter(), time.process_time()
    workload()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    start = time.perf_counter()
    if path:
        mv.profiler.stop()
    return wall, cpu, time.perf_counter() - start


def compare(workload, repeat: int, folder: str) -> dict:
    """Median seconds with tracing off and on (runs alternate, in both orders), and of
    writing the trace."""
    path = os.path.join(folder, "overhead.json")
    _one_run(workload, None)
    _one_run(workload, path)
    runs: dict[str, list] = {"off": [], "on": []}
    for i in range(repeat):
        for mode in (("off", "on") if i % 2 == 0 else ("on", "off")):  # no order bias
            runs[mode].append(_one_run(workload, path if mode == "on" else None))
    median = {mode: [statistics.median(column) for column in zip(*rows)]
              for mode, rows in runs.items()}
    return {"off_s": median["off"][0], "on_s": median["on"][0],
            "off_cpu_s": median["off"][1], "on_cpu_s": median["on"][1],
            "write_s": median["on"][2]}


def measure(engine: str, n_chain: int, n_independent: int, repeat: int) -> dict:
    """Off/on figures of both workloads on ``engine`` with one CPU device."""
    mv.shutdown()
    mv.init(engine=engine)
    mv.create_cpu_device()
    with tempfile.TemporaryDirectory() as folder:
        figures = {"chain": compare(minerva_chain(n_chain), repeat, folder),
                   "independent": compare(minerva_independent(n_independent), repeat,
                                          folder)}
    mv.shutdown()
    figures["chain"]["n_ops"] = n_chain + 1
    figures["independent"]["n_ops"] = n_independent + 1
    return figures


@scenario("trace-overhead")
def trace_overhead(args) -> dict:
    """Microseconds per op with tracing off and on; the ratio (goal: at most 1.10)."""
    n_chain, n_independent = (2_000, 500) if args.quick else (20_000, 2_000)
    results, rows, ratios = {}, [], {}
    for engine in ("dag", "naive"):
        results[engine] = measure(engine, n_chain, n_independent, args.repeat)
        for graph, fig in results[engine].items():
            rows.append(_row(engine, graph, fig, ratios))
    table(f"trace-overhead: us/op, tracing off vs on (chain of {n_chain}, "
          f"{n_independent} independent)", rows,
          ("system", "graph", "off us/op", "on us/op", "on/off", "cpu on/off",
           "stop+write us/op"))
    for kind in ("wall", "cpu"):
        worst = max(v for k, v in ratios.items() if ("_cpu_" in k) == (kind == "cpu"))
        print(f"  worst {kind} on/off ratio {worst:.3f}x (goal <= {GOAL:.2f}x): "
              f"{'ok' if worst <= GOAL else 'OVER'}")
    return {"figures": results, "ratios": ratios}


def _row(engine: str, graph: str, fig: dict, ratios: dict) -> tuple:
    per_op = 1e6 / fig["n_ops"]
    ratio = ratios[f"{engine}_{graph}_on_over_off"] = fig["on_s"] / fig["off_s"]
    cpu = ratios[f"{engine}_{graph}_cpu_on_over_off"] = fig["on_cpu_s"] / fig["off_cpu_s"]
    return (f"minerva-{engine}", graph, f"{fig['off_s'] * per_op:.2f}",
            f"{fig['on_s'] * per_op:.2f}", f"{ratio:.3f}x", f"{cpu:.3f}x",
            f"{fig['write_s'] * per_op:.2f}")
