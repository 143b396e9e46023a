"""Temporaries elided as NumPy elides them: from ``ELIDE_BYTES`` an operator's result goes
into its left operand's buffer when that operand is a temporary of the expression, with
NumPy's values; anything a name, a container, a view or a recording holds is never
written."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import minerva as mv
from minerva.api.core import ufuncs

N = ufuncs.ELIDE_BYTES // 8   # float64 elements at the threshold
WAIT = 30
pytestmark = pytest.mark.skipif(not ufuncs._ELIDES, reason="elision is CPython 3.11's")


@pytest.fixture
def operands():
    mv.init()
    rng = np.random.default_rng(0)
    hosts = [rng.standard_normal(N) for _ in range(3)]
    return hosts, [mv.array(h) for h in hosts]


def _allocs() -> int:
    return mv.memory_stats()["n_allocs"]


def test_a_temporary_takes_the_result_and_the_values_are_numpys(operands):
    (ha, hb, hc), (a, b, c) = operands
    mv.wait_for_all(timeout=WAIT)
    before = _allocs()
    got = ((a + b) * 0.5 - c) / 3.0 + a
    mv.wait_for_all(timeout=WAIT)
    assert _allocs() - before == 1   # the sum's buffer takes every later result
    np.testing.assert_array_equal(got.to_numpy(timeout=WAIT), ((ha + hb) * 0.5 - hc) / 3.0 + ha)
    for x, h in ((a, ha), (b, hb), (c, hc)):
        np.testing.assert_array_equal(x.to_numpy(timeout=WAIT), h)


def test_a_temporary_on_the_right_or_under_a_reflected_operator_takes_it(operands):
    (ha, hb, hc), (a, b, c) = operands
    mv.wait_for_all(timeout=WAIT)
    before = _allocs()
    got = 2.0 - (c - (a / (b * 0.5)))   # each right operand a temporary; 2.0 - t reflected
    mv.wait_for_all(timeout=WAIT)
    assert _allocs() - before == 1
    np.testing.assert_array_equal(got.to_numpy(timeout=WAIT), 2.0 - (hc - (ha / (hb * 0.5))))


def test_what_a_name_a_container_or_a_view_holds_is_never_written(operands):
    (ha, hb, _), (a, b, _) = operands
    named = a + b
    kept = [a * 2.0]
    base = a - b
    view = base[1:]
    results = [named + 1.0, kept[0] + 1.0, base * 3.0, a + 0.0, 1.0 - named, b - named]
    np.testing.assert_array_equal(named.to_numpy(timeout=WAIT), ha + hb)
    np.testing.assert_array_equal(kept[0].to_numpy(timeout=WAIT), ha * 2.0)
    np.testing.assert_array_equal(view.to_numpy(timeout=WAIT), (ha - hb)[1:])
    np.testing.assert_array_equal(a.to_numpy(timeout=WAIT), ha)
    expected = [ha + hb + 1.0, ha * 2.0 + 1.0, (ha - hb) * 3.0, ha, 1.0 - (ha + hb),
                hb - (ha + hb)]
    for got, value in zip(results, expected):
        np.testing.assert_array_equal(got.to_numpy(timeout=WAIT), value)
    assert all(r is not x for r, x in zip(results, (named, kept[0], base, a)))


def test_a_result_of_another_dtype_or_shape_is_fresh(operands):
    (ha, _, _), (a, _, _) = operands
    ints = mv.array(np.arange(N, dtype=np.int64))
    mixed = (ints + 1) * 0.5                       # int64 temporary, float64 result
    grown = (a[:1] + 0.0) + a                      # a small temporary broadcast up
    np.testing.assert_array_equal(mixed.to_numpy(timeout=WAIT), (np.arange(N) + 1) * 0.5)
    np.testing.assert_array_equal(grown.to_numpy(timeout=WAIT), ha[:1] + ha)


def test_nothing_is_elided_while_autograd_records(operands):
    from minerva import autograd as ag
    (ha, hb, _), (a, b, _) = operands
    a.attach_grad()
    with ag.record():
        loss = ((a * b) * 2.0).sum()
    loss.backward()
    np.testing.assert_allclose(a.grad.to_numpy(timeout=WAIT), 2.0 * hb)


def test_called_from_c_code_nothing_is_elided(operands):
    """``operator.add(t, 1.0)`` with a temporary: not the interpreter's ``BINARY_OP``, so
    a fresh result (a C caller may still use its operand)."""
    import operator
    (ha, _, _), (a, _, _) = operands
    mv.wait_for_all(timeout=WAIT)
    before = _allocs()
    got = operator.add(a * 1.0, 1.0)
    mv.wait_for_all(timeout=WAIT)
    assert _allocs() - before == 2 and sys.getrefcount(got) >= 2
    np.testing.assert_array_equal(got.to_numpy(timeout=WAIT), ha + 1.0)
