"""matplotlib (Agg): NArrays and their 0-d results as the arguments of plotting calls give
the artists and the pixels the same calls on NumPy arrays give."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def values():
    rng = np.random.default_rng(0)
    return np.linspace(0.0, 1.0, 10), rng.normal(size=10), rng.random((4, 5))


def draw(a) -> tuple:
    """One figure of every kind of call, its arguments made by ``a`` (``np.asarray`` or
    ``mv.array``): the artists' data and the rendered RGBA pixels."""
    x, y, image = values()
    fig, axes = plt.subplots(2, 3, figsize=(4, 3), dpi=40)
    try:
        line, = axes[0, 0].plot(a(x), a(y))
        mean = axes[0, 0].axhline(a(y).mean())  # a 0-d result: NumPy's scalar
        top = axes[0, 0].axvline(a(x)[3])
        bars = axes[0, 1].bar(a(x), a(y), width=0.05)
        counts, edges, _ = axes[0, 2].hist(a(y), bins=4)
        shown = axes[1, 0].imshow(a(image))
        points = axes[1, 1].scatter(a(x), a(y))
        axes[1, 1].set_xlim(a(x).min(), a(x).max())
        axes[1, 2].errorbar(a(x), a(y), yerr=a(np.abs(y)))
        fig.canvas.draw()
        artists = [line.get_xydata(), mean.get_ydata(), top.get_xdata(),
                   [(r.get_x(), r.get_height(), r.get_width()) for r in bars],
                   counts, edges, shown.get_array(), points.get_offsets(),
                   axes[1, 1].get_xlim()]
        return [np.asarray(v, dtype=float) for v in artists], np.asarray(
            fig.canvas.buffer_rgba()).copy()
    finally:
        plt.close(fig)


def test_plots_of_narrays_are_numpys(engine):
    (expected, pixels), (got, drawn) = draw(np.asarray), draw(mv.array)
    for e, g in zip(expected, got, strict=True):
        assert np.array_equal(g, e)
    assert np.array_equal(drawn, pixels)


def test_a_zero_d_result_is_one_value(engine):
    x = mv.array(values()[1])
    fig, ax = plt.subplots()
    try:
        line = ax.axhline(x.mean())
        assert np.iterable(x.mean()) is False
        assert line.get_ydata() == [x.mean()] * 2
        ax.set_title(f"{x.mean():.3f}")
        assert ax.get_title() == f"{values()[1].mean():.3f}"
    finally:
        plt.close(fig)
