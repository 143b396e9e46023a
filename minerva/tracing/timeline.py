"""A per-device timeline picture of a trace (``minerva-trace timeline --png``).

Needs matplotlib (``pip install 'minerva[plot]'``). Top panel: one row per track, a bar
per op coloured by op name (copies black, failures red, the critical path underlined);
then memory in use per device, then ops in flight.
"""
from __future__ import annotations

from minerva.tracing import analysis
from minerva.tracing.model import Trace

N_COLORED = 10
"""The op names with the most total time get their own colour; the rest are grey."""

FAILED_COLOR = "#d62728"
COPY_COLOR = "#222222"
CRITICAL_COLOR = "#8b0000"
"""The critical path is underlined in this colour."""


def _pyplot():
    try:
        import matplotlib
    except ImportError as exc:
        raise SystemExit("minerva-trace timeline needs matplotlib: "
                         "pip install 'minerva[plot]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def render(trace: Trace, out_path: str, width: float = 12.0, dpi: int = 100,
           title: str | None = None) -> None:
    """Draw ``trace`` into the PNG file ``out_path``."""
    plt = _pyplot()
    n_tracks = max(len(trace.tracks), 1)
    fig, axes = plt.subplots(3, 1, sharex=True, figsize=(width, 1.6 + 0.45 * n_tracks + 3.2),
                             gridspec_kw={"height_ratios": [0.45 * n_tracks + 0.6, 1.6, 1.0]})
    first = trace.span[0]
    colors = _colors(trace, plt)
    _draw_tracks(axes[0], trace, first, colors)
    _draw_memory(axes[1], trace, first)
    _draw_in_flight(axes[2], trace, first)
    axes[2].set_xlabel("time since the first op started (ms)")
    axes[0].set_title(title or "minerva trace")
    _legend(axes[0], colors, plt)
    fig.tight_layout()
    fig.savefig(out_path, dpi=dpi)
    plt.close(fig)


def _colors(trace: Trace, plt) -> dict:
    names = [name for name, *_ in analysis.top_ops(trace, N_COLORED + 1) if name != "copy"]
    strong = [c for i, c in enumerate(plt.get_cmap("tab10").colors) if i not in (3, 7)]
    light = [c for i, c in enumerate(plt.get_cmap("tab20").colors) if i % 2 and i not in (7, 15)]
    palette = strong + light
    colors = {name: palette[i % len(palette)] for i, name in enumerate(names[:N_COLORED])}
    colors["copy"] = COPY_COLOR
    return colors


def _draw_tracks(ax, trace: Trace, first: float, colors: dict) -> None:
    on_path = {op.node_id for op in analysis.critical_path(trace).ops}
    labels = []
    for row, ((device, track), ops) in enumerate(sorted(trace.tracks.items())):
        bars = [((op.start - first) / 1e3, max(op.dur / 1e3, 1e-4)) for op in ops]
        faces = [FAILED_COLOR if op.error else colors.get(op.name, "#b0b0b0") for op in ops]
        ax.broken_barh(bars, (row - 0.4, 0.7), facecolors=faces, linewidth=0)
        path = [bar for bar, op in zip(bars, ops) if op.node_id in on_path]
        ax.broken_barh(path, (row + 0.32, 0.1), facecolors=CRITICAL_COLOR, linewidth=0)
        labels.append(f"dev {device}: {track}")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_ylim(-0.6, max(len(labels), 1) - 0.4)
    ax.invert_yaxis()


def _draw_memory(ax, trace: Trace, first: float) -> None:
    for device, samples in sorted(trace.memory.items()):
        xs = [(t - first) / 1e3 for t, _n in samples]
        ys = [n / 2**20 for _t, n in samples]
        ax.step(xs, ys, where="post", label=f"device {device}", linewidth=1)
    ax.set_ylabel("in use (MiB)")
    ax.set_ylim(bottom=0)
    if trace.memory:
        ax.legend(loc="upper right", fontsize=7)


def _draw_in_flight(ax, trace: Trace, first: float) -> None:
    xs = [(t - first) / 1e3 for t, _n in trace.in_flight]
    ax.step(xs, [n for _t, n in trace.in_flight], where="post", color="#444444",
            linewidth=1)
    ax.set_ylabel("ops in flight")
    ax.set_ylim(bottom=0)


def _legend(ax, colors: dict, plt) -> None:
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colors.values()]
    handles.append(plt.Rectangle((0, 0), 1, 1, color=FAILED_COLOR))
    handles.append(plt.Rectangle((0, 0), 1, 1, color=CRITICAL_COLOR))
    ax.legend(handles, [*colors, "failed", "critical path"], loc="upper left", bbox_to_anchor=(1.0, 1.0),
              fontsize=7, frameon=False)
