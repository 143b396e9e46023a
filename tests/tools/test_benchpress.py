"""The benchpress scenario of tools/bench.py at tiny sizes: each Benchpress program, run by
import swap and with its jit adapter, gives NumPy's results for the same program; skipped
where benchpress (the ``bench`` extra) is not installed."""
from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

import minerva as mv

if importlib.util.find_spec("benchpress") is None:
    pytest.skip("benchpress (the bench extra) is not installed", allow_module_level=True)

TOOLS = pathlib.Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(TOOLS))
from benchmarks import benchpress as bench

JITTED = [name for name, program in bench.PROGRAMS.items() if program.jit is not None]


def test_the_scenario_runs_the_seventeen_programs_that_run_on_numpy_2():
    assert len(bench.PROGRAMS) == 17
    for name in bench.PROGRAMS:
        assert (pathlib.Path(bench.benchmarks_folder()) / name / "python_numpy"
                / f"{name}.py").is_file()


@pytest.mark.parametrize("name", sorted(bench.PROGRAMS))
def test_a_program_by_import_swap_agrees_with_numpy(name):
    size = bench.PROGRAMS[name].tiny
    want = bench.run_program(name, "numpy", size)
    got = bench.run_program(name, "minerva", size)
    assert want.results, "the program's results were found"
    assert bench.check(name, want, got) == []


@pytest.mark.parametrize("name", sorted(JITTED))
def test_a_program_with_its_loop_body_jitted_agrees_with_numpy_and_replays(name, monkeypatch):
    made = []
    real_jit = mv.jit

    def jit(fn, **options):
        made.append(real_jit(fn, **options))
        return made[-1]
    monkeypatch.setattr(bench.mv, "jit", jit)
    size = bench.PROGRAMS[name].tiny
    want = bench.run_program(name, "numpy", size)
    got = bench.run_program(name, "jit", size)
    assert bench.check(name, want, got) == []
    assert made and sum(f.stats()["n_replays"] for f in made) > 0


def test_a_disagreement_is_reported_with_where_it_is():
    import numpy as np
    want = {"grid": np.ones(3), "R": [np.array(2.0)]}
    assert bench.disagreements(want, {"grid": np.ones(3), "R": [np.array(2.0)]}) == []
    wrong = bench.disagreements(want, {"grid": np.array([1.0, 1.1, 1.0]),
                                       "R": [np.array(2.0)]})
    assert len(wrong) == 1 and wrong[0].startswith(".grid")
    assert bench.disagreements(want, {"R": [np.array(2.0)]}) == [".grid: None for (3,)"]
