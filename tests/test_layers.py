"""The layers of DESIGN.md hold: nothing imports what is above it, a chapter of the NumPy
face imports no other chapter, the import graph has no cycle and is at most 12 imports
deep, no module imports minerva's own modules inside a function, no module reads another
module's private names, NArray's private fields are touched only by the modules of its
door, and cupy is imported in minerva/device/gpu/__init__.py and minerva/distributed/nccl.py alone."""
from __future__ import annotations

import ast
import functools
import pathlib

import minerva
from minerva.narray import NArray

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
    "current": {"current", "common"},
    "system": {"common", "current", "dag", "device", "scheduler", "ops", "storage",
               "tracing"},
    "distributed": {"distributed", "builder", "narray", "ops", "common", "system"},
    "seeding": {"seeding"},
    "narray": {"narray", "dag.nodes", "ops.views", "common"},
    "builder": {"builder", "narray", "current", "ops", "common"},
    "autograd": {"autograd", "builder", "narray", "ops.registry", "ops.views", "common"},
    "jit": {"jit", "builder", "narray", "seeding", "current", "ops.registry", "ops.views",
            "ops.jit_op", "ops.fusable", "common", "dag.nodes"},
}
"""Each layer below the public face and the layers it may import (autograd and jit record
at the seam; a jit replay also needs the runtime and a node id, and runs on a device
through the device's own interface; a plan fuses what ``ops.fusable`` says fuses, with the
kernels of the device's ``fusion_backend``). Every
other module is the public face, which may import anything below it and itself, without
cycles."""

CHAPTER_MAY_IMPORT = ("api.core", "builder", "narray", "seeding", "ops", "common")
"""What a chapter of ``minerva.api`` may import besides its own files."""
SUB_NAMESPACES = {
    "linalg": CHAPTER_MAY_IMPORT + ("api.missing", "api.fallback"),
    "random": CHAPTER_MAY_IMPORT + ("api.missing", "api.fallback"),
    "nn": CHAPTER_MAY_IMPORT,
    "optim": CHAPTER_MAY_IMPORT + ("autograd",),
}
"""The public sub-namespaces beside the chapters follow the chapters' rule."""
NARRAY_DOOR = ("narray", "builder", "api.core", "autograd", "jit")
"""The modules that may touch NArray's private fields; every other one uses its door."""
MAX_DEPTH = 12


@functools.cache
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
    """``(line, module, at_top_level)`` of every import of a minerva module in ``path``: the
    most specific module each names (``from minerva.ops import registry`` imports
    ``ops.registry``; ``from minerva import autograd`` the package ``autograd``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        for target in _named(node):
            yield node.lineno, module_of(target, modules()) or target, id(node) in top


def _named(node) -> list[str]:
    """The minerva modules (or names in them) an import statement names."""
    if isinstance(node, ast.ImportFrom) and node.module:
        names = [f"{node.module}.{a.name}" for a in node.names]
    elif isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        return []
    return [n[len("minerva."):] for n in names if n.startswith("minerva.")]


def _within(target: str, allowed) -> bool:
    return any(target == a or target.startswith(a + ".") for a in allowed)


def permitted(layer: str, target: str) -> bool:
    if layer == "face":
        return True
    return _within(target, BELOW_FACE[layer])


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


def chapter_of(name: str) -> str | None:
    """The chapter of ``minerva.api`` module ``name`` belongs to (``api.manipulation`` for
    ``api.manipulation.joins``); None for ``api`` itself, ``api.core``, ``api.methods``
    (the table may import every chapter) and ``api.fallback`` (the host path of every
    chapter's missing names)."""
    parts = name.split(".")
    if parts[0] != "api" or len(parts) < 2 or parts[1] in ("core", "methods", "fallback"):
        return None
    return ".".join(parts[:2])


def chapter_permits(name: str, target: str) -> bool:
    """Whether module ``name`` (a chapter's, or a sub-namespace's) may import ``target``."""
    chapter = chapter_of(name)
    if chapter is not None:
        return _within(target, CHAPTER_MAY_IMPORT + (chapter,))
    top = name.split(".")[0]
    if top in SUB_NAMESPACES:
        return _within(target, SUB_NAMESPACES[top] + (top,))
    return True


def test_a_chapter_imports_the_core_the_seam_and_ops_only():
    broken = []
    for name, path in modules().items():
        for line, target, _ in imports(path):
            if not chapter_permits(name, target):
                broken.append(f"{path.relative_to(ROOT)}:{line} imports minerva.{target}")
    assert broken == []


def test_minerva_modules_are_imported_at_the_top_only():
    inside = [f"{path.relative_to(ROOT)}:{line} imports minerva.{target}"
              for name, path in modules().items()
              for line, target, at_top in imports(path) if not at_top]
    assert inside == []


def import_graph() -> dict:
    """Module -> the minerva modules it imports (see ``imports``), without the packages a
    module lies in."""
    graph = {name: set() for name in modules()}
    for name, path in modules().items():
        for _, used, _ in imports(path):
            if used in graph and used != name and not _is_package_of(used, name):
                graph[name].add(used)
    return graph


def test_the_import_graph_has_no_cycle():
    assert _cycle(import_graph()) is None


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


def layers(graph: dict) -> dict:
    """Each module's layer: 0 for a module that imports no minerva module, else one above
    the highest module it imports (the graph has no cycle)."""
    @functools.cache
    def layer(name: str) -> int:
        return max((layer(used) + 1 for used in graph[name]), default=0)
    return {name: layer(name) for name in graph}


def deepest_chain(graph: dict) -> list:
    """The longest chain of modules each importing the next, from the top."""
    depth = layers(graph)
    chain = [max(graph, key=depth.__getitem__)]
    while graph[chain[-1]]:
        chain.append(max(graph[chain[-1]], key=depth.__getitem__))
    return chain


def test_the_import_graph_is_at_most_twelve_imports_deep():
    graph = import_graph()
    chain = deepest_chain(graph)
    assert len(chain) - 1 <= MAX_DEPTH, " -> ".join(chain)


def test_no_module_reads_another_modules_private_names():
    reads = []
    for name, path in modules().items():
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


NARRAY_FIELDS = frozenset(name for name in NArray.__slots__ if not name.startswith("__"))
"""NArray's private fields (its ``__slots__``)."""


def test_narrays_private_fields_are_touched_only_behind_its_door():
    touched = []
    for name, path in modules().items():
        if _within(name, NARRAY_DOOR):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in NARRAY_FIELDS:
                touched.append(f"{path.relative_to(ROOT)}:{node.lineno} .{node.attr}")
    assert touched == []


def test_cupy_is_imported_only_by_the_gpu_device():
    importers = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "cupy" or n.startswith("cupy.") for n in names):
                importers.append(str(path.relative_to(ROOT)))
    assert set(importers) <= {"device/gpu/__init__.py", "distributed/nccl.py"}


def test_the_checkers_see_violations():
    assert not permitted("ops", "scheduler.state") and not permitted("dag", "device.cpu")
    assert permitted("scheduler", "device.base") and not permitted("scheduler", "device.cpu")
    assert permitted("jit", "dag.nodes") and not permitted("jit", "api.core.manipulation")
    assert not permitted("autograd", "system") and not permitted("builder", "system")
    assert chapter_permits("api.sorting", "api.core.manipulation")
    assert chapter_permits("api.manipulation.joins", "api.manipulation.views")
    assert not chapter_permits("api.statistics", "api.sorting")
    assert not chapter_permits("linalg.products", "api.sorting")
    assert chapter_permits("api.methods", "api.sorting")
    assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    assert layers({"a": {"b"}, "b": {"c"}, "c": set()}) == {"a": 2, "b": 1, "c": 0}
    assert deepest_chain({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == ["a", "b", "c"]
    assert "_storage" in NARRAY_FIELDS and "_view" in NARRAY_FIELDS
    tree = ast.parse("def f():\n    from minerva import system\n")
    assert [id(n) for n in tree.body] and not isinstance(tree.body[0], ast.ImportFrom)
