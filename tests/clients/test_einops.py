"""einops' plain API on NArrays (minerva's backend, minerva/einops_backend.py): the
results, dtypes and shapes einops gives on NumPy arrays, as NArrays."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv

einops = pytest.importorskip("einops")


def values():
    rng = np.random.default_rng(0)
    return rng.normal(size=(2, 4, 4, 6)), rng.normal(size=(6, 5)), np.arange(12).reshape(3, 4)


CALLS = {
    "rearrange": lambda a, x, w, k: einops.rearrange(a(x), "b c h w -> b h w c"),
    "merge": lambda a, x, w, k: einops.rearrange(a(x), "b c (h h2) (w w2) -> b (c h2 w2) h w",
                                                 h2=2, w2=2),
    "list": lambda a, x, w, k: einops.rearrange([a(x[0]), a(x[1])], "n c h w -> n (c h) w"),
    "mean": lambda a, x, w, k: einops.reduce(a(x), "b c h w -> b c", "mean"),
    "max pool": lambda a, x, w, k: einops.reduce(a(x), "b c (h 2) (w 2) -> b c h w", "max"),
    "sum": lambda a, x, w, k: einops.reduce(a(x), "b c h w -> c", "sum"),
    "prod": lambda a, x, w, k: einops.reduce(a(x), "b c h w -> b", "prod"),
    "min keep": lambda a, x, w, k: einops.reduce(a(x), "b c h w -> b c 1 1", "min"),
    "int sum": lambda a, x, w, k: einops.reduce(a(k), "a b -> a", "sum"),
    "repeat": lambda a, x, w, k: einops.repeat(a(k), "h w -> h w r", r=3),
    "repeat axis": lambda a, x, w, k: einops.repeat(a(k), "h w -> (r h) w", r=2),
    "einsum": lambda a, x, w, k: einops.einsum(a(x), a(w), "b c h w, w k -> b c h k"),
    "pack": lambda a, x, w, k: einops.pack([a(x), a(x[..., :2])], "b c h *")[0],
    "unpack": lambda a, x, w, k: einops.unpack(a(x), [[2], [4]], "b c h *")[1],
}


@pytest.mark.parametrize("name", CALLS)
def test_einops_on_narrays(engine, name):
    expected, got = (CALLS[name](a, *values()) for a in (np.asarray, mv.array))
    assert isinstance(got, mv.NArray)
    result = got.to_numpy()
    assert result.dtype == expected.dtype and np.array_equal(result, expected)


def test_mean_of_integers_is_refused_as_numpys(engine):
    k = values()[2]
    with pytest.raises(NotImplementedError) as numpys:
        einops.reduce(k, "a b -> a", "mean")
    with pytest.raises(NotImplementedError) as minervas:
        einops.reduce(mv.array(k), "a b -> a", "mean")
    assert str(minervas.value) == str(numpys.value)


def test_einops_finds_minervas_backend(engine):
    from einops._backends import get_backend
    backend = get_backend(mv.ones(2))
    assert backend.framework_name == "minerva"
    assert np.array_equal(einops.asnumpy(mv.arange(3)), np.arange(3))
