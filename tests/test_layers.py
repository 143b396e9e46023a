"""The layers of DESIGN.md hold: nothing imports what is above it, and cupy is imported in
minerva/device/gpu.py alone."""
from __future__ import annotations

import ast
import pathlib

import minerva

ROOT = pathlib.Path(minerva.__file__).parent
PUBLIC = {"__init__", "narray", "functions", "creation", "runtime", "nn", "random"}
ALLOWED = {
    "common": {"common"},
    "ops": {"ops", "common"},
    "storage": {"storage", "common"},
    "dag": {"dag", "common"},
    "trace": {"trace", "common"},
    "datasets": {"datasets", "common"},
    "device": {"device", "storage", "ops", "common"},
    "scheduler": {"scheduler", "dag", "device.base", "common"},
    "system": {"common", "dag", "device", "scheduler", "ops", "storage", "trace"},
}


PUBLIC_FILES = {("trace", "__init__")}  # mv.trace.start/stop: the trace package's face


def layer_of(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return "public" if parts[0] in PUBLIC or parts in PUBLIC_FILES else parts[0]


def minerva_imports(path: pathlib.Path):
    """``(line, module)`` of every import of a minerva module in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for name in names:
                if name.startswith("minerva."):
                    yield node.lineno, name[len("minerva."):]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("minerva."):
                    yield node.lineno, alias.name[len("minerva."):]


def permitted(layer: str, target: str) -> bool:
    allowed = ALLOWED[layer]
    return any(target == a or target.startswith(a + ".") for a in allowed)


def test_no_module_imports_a_layer_above_it():
    broken = []
    for path in sorted(ROOT.rglob("*.py")):
        layer = layer_of(path)
        if layer == "public":
            continue
        for line, target in minerva_imports(path):
            if not permitted(layer, target):
                broken.append(f"{path.relative_to(ROOT)}:{line} imports minerva.{target}")
    assert broken == []


def test_cupy_is_imported_only_by_the_gpu_device():
    importers = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "cupy" or n.startswith("cupy.") for n in names):
                importers.append(str(path.relative_to(ROOT)))
    assert set(importers) <= {"device/gpu.py"}


def test_the_checker_sees_a_violation(tmp_path):
    path = ROOT / "ops" / "registry.py"
    imports = dict(minerva_imports(path))
    assert all(permitted("ops", t) for t in imports.values())
    assert not permitted("ops", "scheduler.state") and not permitted("dag", "device.cpu")
    assert permitted("scheduler", "device.base") and not permitted("scheduler", "device.cpu")
