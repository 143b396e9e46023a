"""A small parser of the Graphviz DOT subset minerva writes (digraph, subgraphs, node and
edge statements with attribute lists, graph attributes), strict enough to catch broken
quoting, unbalanced braces and edges to undeclared nodes."""
from __future__ import annotations

import re

TOKEN = re.compile(r'\s*(?:(->)|([{}\[\];=,])|"((?:[^"\\]|\\.)*)"|([A-Za-z_0-9.#]+))', re.S)


def tokens(text: str) -> list[tuple[str, str]]:
    """``(kind, value)`` tokens: 'arrow', 'sym', 'str', 'id'; AssertionError on junk."""
    out, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        match = TOKEN.match(text, pos)
        assert match and match.end() > pos, f"bad DOT at {text[pos:pos + 40]!r}"
        arrow, sym, string, ident = match.groups()
        out.append(("arrow", arrow) if arrow else ("sym", sym) if sym else
                   ("str", string) if string is not None else ("id", ident))
        pos = match.end()
    return out


class Graph:
    """What a parsed digraph holds."""

    def __init__(self):
        self.nodes: dict[str, dict] = {}
        self.edges: list[tuple[str, str, dict]] = []
        self.clusters: dict[str, list[str]] = {}
        self.attrs: dict[str, str] = {}


def parse(text: str) -> Graph:
    """Parse a ``digraph``; edges must join declared nodes."""
    toks = tokens(text)
    graph = Graph()
    assert toks[0] == ("id", "digraph"), toks[:2]
    i = 2 if toks[1][0] in ("id", "str") else 1
    assert toks[i] == ("sym", "{")
    i = _body(toks, i + 1, graph, None)
    assert i == len(toks), "text after the closing brace"
    for src, dst, _attrs in graph.edges:
        assert src in graph.nodes and dst in graph.nodes, (src, dst)
    return graph


def _body(toks, i, graph, cluster) -> int:
    while toks[i] != ("sym", "}"):
        i = _statement(toks, i, graph, cluster)
        if toks[i] == ("sym", ";"):
            i += 1
    return i + 1


def _statement(toks, i, graph, cluster) -> int:
    kind, value = toks[i]
    if (kind, value) == ("id", "subgraph"):
        name = toks[i + 1][1]
        graph.clusters[name] = []
        assert toks[i + 2] == ("sym", "{")
        return _body(toks, i + 3, graph, name)
    assert kind in ("id", "str"), toks[i:i + 3]
    if toks[i + 1] == ("sym", "="):
        if cluster is None:  # the graph's own attributes, not a cluster's
            graph.attrs[value] = toks[i + 2][1]
        return i + 3
    if toks[i + 1][0] == "arrow":
        attrs, j = _attrs(toks, i + 3)
        graph.edges.append((value, toks[i + 2][1], attrs))
        return j
    attrs, j = _attrs(toks, i + 1)
    if value not in ("node", "edge", "graph"):
        graph.nodes[value] = attrs
        if cluster is not None:
            graph.clusters[cluster].append(value)
    return j


def _attrs(toks, i) -> tuple[dict, int]:
    attrs: dict[str, str] = {}
    if toks[i] != ("sym", "["):
        return attrs, i
    i += 1
    while toks[i] != ("sym", "]"):
        key, eq, val = toks[i], toks[i + 1], toks[i + 2]
        assert key[0] == "id" and eq == ("sym", "=") and val[0] in ("id", "str"), toks[i:i + 3]
        attrs[key[1]] = val[1]
        i += 3
        if toks[i] == ("sym", ","):
            i += 1
    return attrs, i + 1
