"""``tools/gpu_check.sh`` without a GPU, and minerva's logging without structlog.

The GPU machine has no package index and not every package of the test venv (no structlog),
and its time is short, so its one check must work the first time. Here the whole check runs
as a dry run (every GPU test skips) in an interpreter holding only the packages that machine
has, linked from this venv: every stage runs, ``$OUT`` holds at most 8 files, the summary is
printed and minerva computes a CPU op there. Also: its time budget shortens and skips stages,
a GPU that nvidia-smi shows and minerva cannot use fails the check, and the standard
``logging`` module renders minerva's events where structlog is missing.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import logging
import os
import re
import subprocess
import sys
import sysconfig
import tarfile
import time
from pathlib import Path

import pytest

from minerva.common import logging as mv_logging

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "gpu_check.sh"
STAGES = ("bringup", "launch", "copies", "diff-1vgpu", "diff-2vgpu", "device", "suites", "bench")
TEST_STAGES = STAGES[1:-1]
GPU_MACHINE_DISTRIBUTIONS = (  # what the GPU machine has of what the check needs
    "numpy", "pytest", "pluggy", "iniconfig", "packaging", "pygments", "pytest-timeout",
    "hypothesis", "attrs", "sortedcontainers", "threadpoolctl", "mpi4py", "cupy-cuda13x",
    "scipy", "numba", "llvmlite")


# ---- the environment of the GPU machine ----------------------------------------------------

def _top_level_entries(distribution: str) -> set[str]:
    """The names in site-packages that an installed distribution owns (none when absent)."""
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        return set()
    return {file.parts[0] for file in files
            if file.parts and file.parts[0] not in ("..", "__pycache__")}


def gpu_machine_python(folder: Path) -> str:
    """A venv in ``folder`` holding links to this venv's copies of the GPU machine's packages
    alone: no structlog, no minerva (the check runs minerva from the checkout)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True,
                   timeout=60)
    python = str(folder / "bin" / "python")
    site = Path(subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=30).stdout.strip())
    ours = Path(sysconfig.get_paths()["purelib"])
    for distribution in GPU_MACHINE_DISTRIBUTIONS:
        for entry in _top_level_entries(distribution):
            if (ours / entry).exists() and not (site / entry).exists():
                (site / entry).symlink_to(ours / entry)
    return python


def run_check(out: Path, python: str, extra_env=None, path_prefix=None, timeout=100):
    """``tools/gpu_check.sh`` with ``python``, writing to ``out``: (completed, seconds)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "PYTEST_", "MINERVA_", "GPU_CHECK_", "VIRTUAL_ENV"))}
    env.update(OUT=str(out), PYTHON=python, **(extra_env or {}))
    if path_prefix:
        env["PATH"] = f"{path_prefix}{os.pathsep}{env['PATH']}"
    start = time.monotonic()
    done = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
    return done, time.monotonic() - start


def nvidia_smi(folder: Path, script: str) -> Path:
    """A folder holding an ``nvidia-smi`` that runs ``script`` (sh), to put first on PATH."""
    folder.mkdir()
    (folder / "nvidia-smi").write_text(f"#!/bin/sh\n{script}\n")
    (folder / "nvidia-smi").chmod(0o755)
    return folder


def stage_lines(summary: str) -> dict:
    """Each stage's line of the summary, by stage name."""
    return {line.split()[0]: line for line in summary.splitlines()
            if line and line.split()[0] in STAGES}


# ---- the dry run ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    """The default check, run once in the GPU machine's environment (without its GPU, even
    on a machine with one)."""
    folder = tmp_path_factory.mktemp("gpu_check")
    python = gpu_machine_python(folder / "env")
    no_gpu = nvidia_smi(folder / "bin", "echo 'NVIDIA-SMI has failed'; exit 9")
    done, seconds = run_check(folder / "out", python, path_prefix=no_gpu)
    return python, folder / "out", done, seconds


def test_the_dry_run_interpreter_has_the_checks_packages_alone_and_no_structlog(dry_run):
    python, *_ = dry_run  # (the GPU machine has tqdm and matplotlib; the check needs neither)
    probe = ("import importlib.util as u; "
             "print([n for n in ('structlog', 'minerva', 'tqdm', 'matplotlib') if u.find_spec(n)],"
             " [n for n in ('numpy', 'pytest', 'pytest_timeout', 'hypothesis', 'sortedcontainers',"
             " 'threadpoolctl') if not u.find_spec(n)])")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    found = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=60,
                           cwd="/", env=env)
    assert found.stdout.strip() == "[] []", found.stdout + found.stderr


def test_the_dry_run_runs_every_stage_and_passes_in_under_a_minute(dry_run):
    _, out, done, seconds = dry_run
    assert done.returncode == 0, done.stdout + done.stderr
    assert seconds < 60
    summary = (out / "summary.txt").read_text()
    lines = stage_lines(summary)
    assert set(lines) == set(STAGES), summary
    for name in STAGES:
        assert re.match(rf"{name} +exit +0 in", lines[name]), lines[name]
    for name in TEST_STAGES:  # each selection found its tests, which skip without a GPU
        assert re.search(r"\d+ skipped", lines[name]) and "passed" not in lines[name], lines[name]
    assert "skipped: no GPU" in lines["bench"]


def test_the_dry_run_prints_its_summary_and_minerva_computes_there(dry_run):
    _, out, done, _ = dry_run
    summary = (out / "summary.txt").read_text()
    assert summary.strip() and summary.strip() in done.stdout
    assert "bringup: cpu op ok" in summary
    assert "logging via logging" in summary  # structlog is missing there: the fallback logs
    assert "no GPU: a dry run" in summary
    assert re.search(r"gpu_check: exit 0 after \d+s of the 420s budget", summary)


def test_the_dry_run_returns_at_most_8_files(dry_run):
    _, out, _, _ = dry_run
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == ["bench_gpu.json", "logs.tar.gz", "summary.txt"]
    assert json.loads((out / "bench_gpu.json").read_text())["gpu"] == {"skipped": "no GPU"}
    with tarfile.open(out / "logs.tar.gz") as archive:
        names = set(archive.getnames())
    assert {f"logs/{name}.log" for name in STAGES} <= names
    assert {f"logs/{name}.xml" for name in TEST_STAGES} <= names
    assert "logs/environment.txt" in names


# ---- the budget, and a GPU minerva cannot use ----------------------------------------------

def test_the_budget_shortens_stages_and_skips_those_it_cannot_fit(tmp_path):
    done, _ = run_check(tmp_path / "short", sys.executable,
                        {"GPU_CHECK_BUDGET_SECONDS": "35", "GPU_CHECK_STAGES": "bringup launch"})
    assert done.returncode == 0, done.stdout + done.stderr
    lines = stage_lines(done.stdout)
    first = int(re.search(r"of (\d+)s \(shortened from 30s\)", lines["bringup"]).group(1))
    assert 20 <= first <= 25  # 35 s less the 10 s a stage may take to stop, less what ran
    limit, per_test = map(int, re.search(r"of (\d+)s \(shortened from 45s\), (\d+)s a test",
                                         lines["launch"]).groups())
    assert limit <= first and per_test <= limit // 2
    done, _ = run_check(tmp_path / "none", sys.executable, {"GPU_CHECK_BUDGET_SECONDS": "24"})
    assert done.returncode == 0, done.stdout + done.stderr
    lines = stage_lines(done.stdout)
    assert set(lines) == set(STAGES)
    assert all(re.search(r"skipped: (1\d|2[0-4])s of the 24s budget left", line)
               for line in lines.values()), lines


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_a_gpu_that_nvidia_smi_shows_and_minerva_cannot_use_fails_the_check(tmp_path):
    shim = nvidia_smi(tmp_path / "bin", "echo 'GPU 0: NVIDIA H200 (UUID: GPU-0)'")
    done, _ = run_check(tmp_path / "out", sys.executable, {"GPU_CHECK_STAGES": "bringup"},
                        path_prefix=shim)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "nvidia-smi: GPU 0: NVIDIA H200" in done.stdout
    assert "FAILED: nvidia-smi shows a GPU that minerva cannot use" in stage_lines(
        done.stdout)["bringup"]


# ---- logging without structlog -------------------------------------------------------------

@pytest.fixture
def logger_reset():
    """Each test configures minerva's logging itself; the next user gets a fresh one."""
    mv_logging._current.clear()
    yield
    mv_logging._current.clear()


def _events(setting: str) -> None:
    log = mv_logging.get_logger("minerva.test")
    mv_logging.configure_logging(setting)
    log.debug("hidden_below_info")
    log.info("runtime_started", engine="dag", dispatchers=2, path="/a b")
    try:
        raise ValueError("bad")
    except ValueError:
        log.exception("kernel_failed", op="add")


def _without_times(text: str) -> str:
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z", "<time>", text)
    return re.sub(r'File ".*", line \d+', "File", text)


def test_without_structlog_the_standard_logging_renders_the_events(monkeypatch, capsys,
                                                                   logger_reset):
    monkeypatch.setattr(mv_logging, "structlog", None)
    assert mv_logging.logging_backend() == "logging"
    _events("info")
    lines = capsys.readouterr().err.splitlines()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.]+Z \[info     \] runtime_started +"
                        r"\[minerva\.test\] dispatchers=2 engine=dag path='/a b'", lines[0])
    assert "[error    ] kernel_failed" in lines[1] and "op=add" in lines[1]
    assert lines[2] == "Traceback (most recent call last):" and lines[-1] == "ValueError: bad"
    assert not any("hidden" in line for line in lines)
    _events("json")
    started, failed = map(json.loads, capsys.readouterr().err.splitlines())
    assert started.pop("timestamp").endswith("Z")
    assert started == {"logger": "minerva.test", "engine": "dag", "dispatchers": 2,
                       "path": "/a b", "event": "runtime_started", "level": "info"}
    assert failed["level"] == "error" and "ValueError: bad" in failed["exception"]
    _events("error")
    err = capsys.readouterr().err
    assert "kernel_failed" in err and "runtime_started" not in err
    assert logging.getLogger("minerva").handlers == []  # ours stays out of logging's registry


@pytest.mark.parametrize("setting", ["info", "json"])
def test_both_backends_write_the_same_lines(monkeypatch, capsys, logger_reset, setting):
    pytest.importorskip("structlog")
    _events(setting)
    with_structlog = _without_times(capsys.readouterr().err)
    monkeypatch.setattr(mv_logging, "structlog", None)
    _events(setting)
    without = _without_times(capsys.readouterr().err)
    if setting == "json":  # the same fields, in whatever order
        with_structlog, without = ([json.loads(line) for line in text.splitlines()]
                                   for text in (with_structlog, without))
    assert without == with_structlog


def test_minerva_imports_computes_and_logs_where_structlog_is_missing():
    code = ("import sys; sys.modules['structlog'] = None\n"
            "import minerva as mv\n"
            "print(float((mv.arange(4.0) * 2).sum()))\n"
            "mv.shutdown(timeout=30)\n")
    env = dict(os.environ, MINERVA_LOG="info", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "12.0"
    assert re.search(r"\[info +\] runtime_started +\[minerva\.system\]", done.stderr)
