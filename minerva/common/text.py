"""Small text helpers shared by the stores, the DAG printer and the trace tools."""
from __future__ import annotations


def format_bytes(nbytes: float) -> str:
    """``nbytes`` for people: ``512 B``, ``1.5 KiB``, ``3.0 MiB``, ``2.0 GiB``."""
    if abs(nbytes) < 1024:
        return f"{nbytes:.0f} B"
    value = float(nbytes)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if abs(value) < 1024 or unit == "TiB":
            break
    return f"{value:.1f} {unit}"


def dot_quote(text: str, limit: int | None = None) -> str:
    """A Graphviz DOT string literal of ``text``, each line cut to ``limit`` characters."""
    lines = str(text).split("\n")
    if limit is not None:
        lines = [line if len(line) <= limit else line[:limit - 1] + "\u2026"
                 for line in lines]
    body = "\\n".join(line.replace("\\", "\\\\").replace('"', '\\"') for line in lines)
    return f'"{body}"'
