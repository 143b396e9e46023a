"""tools/numpy_coverage.py: every public name of NumPy's namespaces resolves in minerva
(missing 0), each counted once as native or fallback, by NumPy's own rule of what is
public; NArray's attributes are reported the same way."""
from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess
import sys
import types

import numpy as np
import pytest

import minerva as mv
from minerva.api import fallback
from minerva.api.fallback import HostFunction

TOOL = pathlib.Path(__file__).resolve().parents[2] / "tools" / "numpy_coverage.py"


def _load_tool():
    spec = importlib.util.spec_from_file_location("numpy_coverage", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


coverage_tool = _load_tool()


@pytest.fixture(scope="module")
def table():
    return coverage_tool.coverage()


NOT_NUMPYS = {"expm1x"}
"""Names other packages add to NumPy's namespace: numexpr (which pandas imports) sets
``numpy.expm1x = numpy.expm1`` and never uses it."""


def public(module) -> set:
    """NumPy's rule: in ``dir``, not starting with ``_``, not a submodule."""
    return {n for n in dir(module) if not n.startswith("_") and n not in NOT_NUMPYS
            and not isinstance(getattr(module, n), types.ModuleType)}


@pytest.mark.parametrize("numpy_name, module", [
    ("numpy", np), ("numpy.linalg", np.linalg), ("numpy.fft", np.fft),
    ("numpy.random", np.random), ("numpy.lib.stride_tricks", np.lib.stride_tricks),
    ("numpy.emath", np.emath)])
def test_every_public_name_of_a_namespace_resolves(table, numpy_name, module):
    kinds = table[numpy_name]
    assert kinds["missing"] == []
    counted = [n for names in kinds.values() for n in names]
    assert sorted(counted) == sorted(public(module))  # each name once, NumPy's rule


def test_kinds_are_what_minerva_hands_out(table):
    for numpy_name, namespace in coverage_tool.NAMESPACES.items():
        module = coverage_tool.minerva_module(namespace)
        numpy_module = fallback.resolve_module(namespace)
        for kind, names in table[numpy_name].items():
            for name in names:
                obj = getattr(module, name)
                assert isinstance(obj, HostFunction) == (kind == "host"), name
                if kind == "own":
                    assert obj is getattr(numpy_module, name), name
    assert "sum" in table["numpy"]["native"] and "busday_count" in table["numpy"]["host"]
    assert "busdaycalendar" in table["numpy"]["own"] and "PCG64" in table["numpy.random"]["own"]
    assert "fftshift" in table["numpy.fft"]["native"]
    assert table["numpy.emath"]["host"] == sorted(public(np.emath))
    assert table["numpy.lib.stride_tricks"]["native"] == ["as_strided",
                                                          "sliding_window_view"]


def test_narray_attributes_are_reported(table):
    kinds = table[coverage_tool.NDARRAY]
    assert sorted(n for names in kinds.values() for n in names) == sorted(
        n for n in dir(np.ndarray) if not n.startswith("_"))
    assert "shape" in kinds["native"]
    for name in kinds["missing"]:
        assert coverage_tool.reason(coverage_tool.NDARRAY, name)  # documented


def test_the_command_prints_missing_zero_and_checks(tmp_path):
    out = tmp_path / "coverage.json"
    run = subprocess.run([sys.executable, str(TOOL), "--check", "--list", "host", "--json",
                          str(out)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].split() == ["namespace", "public", "native", "fallback", "(host", "own)",
                                "missing"]
    rows = {line.split()[0]: line.split() for line in lines[1:7]}
    assert set(rows) == set(coverage_tool.NAMESPACES)
    for numpy_name, row in rows.items():
        public_n, native, fallback, host, own, missing = map(int, row[1:])
        assert missing == 0 and native + fallback == public_n and host + own == fallback
    assert any(line.startswith("host numpy.fft: fft fft2") for line in lines)
    assert json.loads(out.read_text())["numpy.fft"]["missing"] == []


def test_check_fails_when_a_namespace_misses_a_name(monkeypatch, capsys):
    monkeypatch.setattr(coverage_tool, "kind_of",
                        lambda namespace, name: "missing" if name == "fft" else "native")
    assert coverage_tool.main(["--check"]) == 1
    assert "missing numpy.fft: fft" in capsys.readouterr().out
