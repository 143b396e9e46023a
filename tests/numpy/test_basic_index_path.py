"""The one-pass basic index (``views.basic_index``, the path of every ``x[i, j:k]``):
the same views as ``views.index`` and the same scalar rule, and reads and writes through
it equal to NumPy's on views of several layouts (strided, reversed, transposed, offset),
with NumPy's errors out of bounds."""
from __future__ import annotations

import random

import numpy as np
import pytest

import minerva as mv
from minerva.common.errors import ShapeIndexError
from minerva.ops import views


def random_item(rng: random.Random, n: int):
    """An int (in or out of bounds, negative) or a slice of an axis of length ``n``."""
    if rng.random() < 0.4:
        return rng.randint(-n - 1, n)
    pick = lambda: rng.choice([None, rng.randint(-n - 2, n + 2)])  # noqa: E731
    return slice(pick(), pick(), rng.choice([None, 1, 2, -1, -3]))


def layouts(rng: np.random.Generator):
    """Arrays of several layouts, each as (NumPy's, minerva's)."""
    base = rng.standard_normal((6, 7, 5))
    x = mv.asarray(base)
    yield base, x
    yield base[1:, ::2, 1:4], x[1:, ::2, 1:4]
    yield base[::-1, :, ::-2], x[::-1, :, ::-2]
    yield base.transpose(2, 0, 1), x.transpose(2, 0, 1)
    yield base[2], x[2]


@pytest.mark.parametrize("seed", range(4))
def test_one_pass_agrees_with_index_and_the_scalar_rule(seed):
    rng = random.Random(seed)
    for _ in range(400):
        shape = tuple(rng.randint(0, 5) for _ in range(rng.randint(1, 4)))
        strides = tuple(rng.choice([8, -8, 16, 24, 0]) for _ in shape)
        view = (shape, strides, 64)
        items = tuple(random_item(rng, max(n, 1)) for n in shape[:rng.randint(0, len(shape))])
        try:
            want = views.index(view, items), views.is_scalar_index(items, len(shape))
        except ShapeIndexError as err:
            with pytest.raises(ShapeIndexError, match=str(err)):
                views.basic_index(view, items)
            continue
        assert views.basic_index(view, items) == want


def test_other_items_take_the_general_rules():
    view = ((4, 3), (24, 8), 0)
    for items in [(None, 1), (Ellipsis, 2), (np.int64(1), slice(None)), (1, 2, 3)[:2]]:
        assert views.basic_index(view, items) == (views.index(view, items),
                                                  views.is_scalar_index(items, 2))
    assert views.basic_index(view, ([0, 1],)) is None
    assert views.basic_index(view, (True,)) is None
    with pytest.raises(ShapeIndexError, match="too many indices"):
        views.basic_index(view, (0, 0, 0))


@pytest.mark.parametrize("seed", range(3))
def test_reads_and_writes_equal_numpys_on_every_layout(engine, seed):
    rng = np.random.default_rng(seed)
    pick = random.Random(seed)
    for want, got in layouts(rng):
        for _ in range(40):
            key = tuple(random_item(pick, n) for n in want.shape[:pick.randint(1, want.ndim)])
            try:
                expected = want[key]
            except IndexError:
                with pytest.raises(IndexError):
                    got[key]
                continue
            read = got[key]
            if np.ndim(expected) == 0:
                assert np.asarray(read).item() == expected
                continue
            np.testing.assert_array_equal(np.asarray(read), expected)
            value = rng.standard_normal(expected.shape)
            want[key] = value
            got[key] = mv.asarray(value)
            want[key] += 1.5
            got[key] += 1.5
        np.testing.assert_array_equal(np.asarray(got), want)
