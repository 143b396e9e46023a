"""How much of NumPy's public surface minerva has, and how.

For each NumPy namespace minerva stands for (``numpy``, ``numpy.linalg``, ``numpy.fft``,
``numpy.random``, ``numpy.lib.stride_tricks``, ``numpy.emath``) and for the public
attributes of ``numpy.ndarray`` (on NArray), it counts the public names that are

- **native**: minerva's own (NumPy's own dtypes and constants re-exported count here);
- **fallback**: given by the host fallback (``minerva.api.fallback``): *host* functions
  run NumPy's code on host copies of the inputs, *own* names are NumPy's own objects
  handed out (classes, constants, submodules' objects, functions taking no arrays);
- **missing**: neither (listed, with the reason ``minerva.api.missing`` gives).

A name is public as NumPy defines it: it is in ``dir(module)`` (``dir(numpy.ndarray)``),
does not start with ``_``, and is not a submodule.

    python tools/numpy_coverage.py                   # the table and the missing names
    python tools/numpy_coverage.py --list fallback   # also list the names of one kind
    python tools/numpy_coverage.py --json out.json   # every name by kind, as JSON
    python tools/numpy_coverage.py --check           # exit 1 if a namespace misses a name
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import minerva as mv  # noqa: E402
from minerva.api import fallback, missing  # noqa: E402

NAMESPACES = {"numpy": "", "numpy.linalg": "linalg", "numpy.fft": "fft",
              "numpy.random": "random", "numpy.lib.stride_tricks": "lib.stride_tricks",
              "numpy.emath": "emath"}
"""NumPy's namespace -> minerva's (the fallback's key: '' for the package)."""
NDARRAY = "numpy.ndarray (NArray)"
KINDS = ("native", "host", "own", "missing")


def minerva_module(namespace: str):
    """minerva's module for a fallback namespace key (``'lib.stride_tricks'`` ...)."""
    module = mv
    for part in filter(None, namespace.split(".")):
        module = getattr(module, part)
    return module


def kind_of(namespace: str, name: str) -> str:
    """How minerva gives NumPy's public ``name`` of ``namespace``: one of ``KINDS``."""
    try:
        obj = getattr(minerva_module(namespace), name)
    except AttributeError:
        return "missing"
    if not fallback.is_resolved(namespace, name, obj):
        return "native"
    return "host" if isinstance(obj, fallback.HostFunction) else "own"


def ndarray_kind(name: str) -> str:
    """How NArray gives ``numpy.ndarray``'s public attribute ``name``."""
    if name in dir(mv.NArray) and not isinstance(mv.NArray.__dict__.get(name),
                                                  fallback.HostAttribute):
        return "native"
    return "host" if name in fallback.fallback_attributes() else "missing"


def coverage() -> dict:
    """Namespace -> kind -> the sorted names of that kind."""
    table = {}
    for numpy_name, namespace in NAMESPACES.items():
        table[numpy_name] = _by_kind((kind_of(namespace, n), n)
                                     for n in fallback.public_names(namespace))
    names = sorted(n for n in dir(np.ndarray) if not n.startswith("_"))
    table[NDARRAY] = _by_kind((ndarray_kind(n), n) for n in names)
    return table


def _by_kind(pairs) -> dict:
    found = {kind: [] for kind in KINDS}
    for kind, name in pairs:
        found[kind].append(name)
    return found


def reason(numpy_name: str, name: str) -> str:
    """Why a missing name is missing (``minerva.api.missing.CANNOT_EXIST``), or ''."""
    namespace = "ndarray" if numpy_name == NDARRAY else NAMESPACES[numpy_name]
    return missing.CANNOT_EXIST.get(namespace, {}).get(name, "")


def report(table: dict, listed: tuple = ()) -> str:
    """The table as text: a line per namespace, then the missing names (and the names
    of the ``listed`` kinds)."""
    lines = [f"{'namespace':<26}{'public':>7}{'native':>8}{'fallback':>10}"
             f"{'(host':>7}{'own)':>6}{'missing':>9}"]
    for numpy_name, kinds in table.items():
        n = {kind: len(names) for kind, names in kinds.items()}
        lines.append(f"{numpy_name:<26}{sum(n.values()):>7}{n['native']:>8}"
                     f"{n['host'] + n['own']:>10}{n['host']:>7}{n['own']:>6}"
                     f"{n['missing']:>9}")
    for numpy_name, kinds in table.items():
        for name in kinds["missing"]:
            why = reason(numpy_name, name)
            lines.append(f"missing {numpy_name}: {name}" + (f" ({why})" if why else ""))
        for kind in listed:
            names = kinds["host"] + kinds["own"] if kind == "fallback" else kinds[kind]
            lines.append(f"{kind} {numpy_name}: {' '.join(sorted(names))}")
    return "\n".join(lines)


def main(argv=None) -> int:
    """Print the report; with ``--check``, 1 when a namespace (not ndarray) misses a
    name."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="append", default=[],
                        choices=("native", "fallback", "host", "own", "missing"),
                        help="also list the names of this kind")
    parser.add_argument("--json", metavar="PATH", help="write every name by kind as JSON")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a namespace misses a name")
    args = parser.parse_args(argv)
    table = coverage()
    print(report(table, tuple(args.list)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(table, out, indent=1)
    short = any(kinds["missing"] for name, kinds in table.items() if name != NDARRAY)
    return 1 if args.check and short else 0


if __name__ == "__main__":
    sys.exit(main())
