"""The layers of DESIGN.md hold: nothing imports what is above it, the public face has no
import cycle, no module imports minerva's own modules inside a function, no module reads
another module's private names, and cupy is imported in minerva/device/gpu.py alone."""
from __future__ import annotations

import ast
import pathlib

import minerva

ROOT = pathlib.Path(minerva.__file__).parent
BELOW_FACE = {
    "common": {"common"},
    "ops": {"ops", "common"},
    "storage": {"storage", "common"},
    "dag": {"dag", "common"},
    "tracing": {"tracing", "common"},
    "datasets": {"datasets", "common"},
    "device": {"device", "storage", "ops", "common"},
    "scheduler": {"scheduler", "dag", "device.base", "common"},
    "system": {"common", "dag", "device", "scheduler", "ops", "storage", "tracing"},
    "distributed": {"distributed", "builder", "narray", "ops", "common", "system"},
}
"""Each layer below the public face and the layers it may import. Every other module is
the public face, which may import anything below it and itself, without cycles."""


def modules() -> dict:
    """Module name (``scheduler.engine``, ``narray``) -> its path."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts) or "__init__"] = path
    return found


def layer_of(name: str) -> str:
    top = name.split(".")[0]
    return top if top in BELOW_FACE else "face"


def imports(path: pathlib.Path):
    """``(line, module, at_top_level)`` of every import of a minerva module in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        for name in _imported(node):
            if name.startswith("minerva."):
                yield node.lineno, name[len("minerva."):], id(node) in top


def _imported(node) -> list[str]:
    if isinstance(node, ast.ImportFrom) and node.module:
        return [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return []


def permitted(layer: str, target: str) -> bool:
    if layer == "face":
        return True
    return any(target == a or target.startswith(a + ".") for a in BELOW_FACE[layer])


def module_of(target: str, known: dict) -> str | None:
    """The module a dotted import target names (``ops.registry.get`` -> ``ops.registry``)."""
    parts = target.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in known:
            return ".".join(parts[:n])
    return None


def test_no_module_imports_a_layer_above_it():
    broken = []
    for name, path in modules().items():
        layer = layer_of(name)
        for line, target, _ in imports(path):
            if not permitted(layer, target):
                broken.append(f"{path.relative_to(ROOT)}:{line} imports minerva.{target}")
    assert broken == []


def test_minerva_modules_are_imported_at_the_top_only():
    inside = [f"{path.relative_to(ROOT)}:{line} imports minerva.{target}"
              for name, path in modules().items()
              for line, target, at_top in imports(path) if not at_top]
    assert inside == []


def test_the_import_graph_has_no_cycle():
    known = modules()
    graph = {name: set() for name in known}
    for name, path in known.items():
        for _, target, _ in imports(path):
            used = module_of(target, known)
            if used is not None and used != name and not _is_package_of(used, name):
                graph[name].add(used)
    assert _cycle(graph) is None


def _is_package_of(package: str, name: str) -> bool:
    return name.startswith(package + ".")


def _cycle(graph: dict):
    """A cycle of the graph as a list of names, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None
    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_module_reads_another_modules_private_names():
    known = modules()
    reads = []
    for name, path in known.items():
        tree = ast.parse(path.read_text())
        aliases = _module_aliases(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("minerva"):
                reads += [f"{name}: from {node.module} import {a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                reads.append(f"{name}: {node.value.id}.{node.attr}")
    assert reads == []


def _module_aliases(tree) -> set:
    """Names bound to minerva modules by ``import`` or ``from minerva import x``."""
    aliases = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and (
                node.module == "minerva" or node.module.startswith("minerva.")):
            aliases |= {a.asname or a.name for a in node.names
                        if f"{node.module}.{a.name}".replace("minerva.", "", 1) in modules()}
        elif isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names
                        if a.asname and a.name.startswith("minerva.")}
    return aliases


def test_cupy_is_imported_only_by_the_gpu_device():
    importers = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "cupy" or n.startswith("cupy.") for n in names):
                importers.append(str(path.relative_to(ROOT)))
    assert set(importers) <= {"device/gpu.py", "distributed/nccl.py"}


def test_the_checkers_see_violations():
    assert not permitted("ops", "scheduler.state") and not permitted("dag", "device.cpu")
    assert permitted("scheduler", "device.base") and not permitted("scheduler", "device.cpu")
    assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    tree = ast.parse("def f():\n    from minerva import system\n")
    assert [id(n) for n in tree.body] and not isinstance(tree.body[0], ast.ImportFrom)
