"""Shape rules that remember their answers (``registry.memoized``): the same specs and
attributes give the rule's own answer, calls that differ in any way (an attribute's type
included) are told apart, errors are raised every time, and what cannot be keyed is
computed afresh; the ops given such rules still give NumPy's results."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from minerva.common.errors import ShapeError
from minerva.ops import registry
from minerva.ops.registry import ArraySpec, memo_key, memoized

F8, I8 = np.dtype("f8"), np.dtype("i8")


def test_keys_tell_types_and_values_apart():
    a = ArraySpec((2, 3), F8)
    keys = [memo_key((a,), {"scalar": v}) for v in (1, 1.0, True, np.float64(1.0), "1")]
    assert len(set(keys)) == len(keys)
    assert memo_key((a,), {"axis": (1,)}) != memo_key((a,), {"axis": (1.0,)})
    assert memo_key((a,), {"axis": (0, 1)}) == memo_key((ArraySpec((2, 3), F8),),
                                                        {"axis": (0, 1)})
    assert memo_key((a,), {}) != memo_key((ArraySpec((2, 3), I8),), {})
    assert memo_key((a,), {"index": (slice(1, None), Ellipsis)}) == \
        memo_key((a,), {"index": (slice(1, None), Ellipsis)})
    assert memo_key((a,), {"index": slice(1, 2)}) != memo_key((a,), {"index": slice(1.0, 2)})


@pytest.mark.parametrize("value", [[1, 2], np.arange(3), {"a": 1}, (1, [2])])
def test_what_is_not_a_plain_value_is_not_keyed(value):
    assert memo_key((ArraySpec((2,), F8),), {"data": value}) is None
    assert memo_key(("not a spec",), {}) is None


def test_a_memoized_rule_answers_as_the_rule_and_computes_each_call_once():
    calls = []

    def rule(x, *, scale):
        calls.append(scale)
        if scale < 0:
            raise ShapeError("negative")
        return (ArraySpec(x.shape * scale, x.dtype),)

    memo = memoized(rule, limit=3)
    x = ArraySpec((2,), F8)
    assert memo(x, scale=2) == rule(x, scale=2)
    assert memo(x, scale=2)[0].shape == (2, 2)
    assert calls == [2, 2]   # the memo's first call and the direct one; then none
    for _ in range(2):
        with pytest.raises(ShapeError):
            memo(x, scale=-1)
    assert calls.count(-1) == 2          # an error is raised every time, never kept
    memo(x, scale=True)                  # True is not 1: computed anew
    assert calls[-1] is True
    for scale in (3, 4, 5):              # past the limit: starts afresh
        memo(x, scale=scale)
    assert len(memo.memo) <= 3


def test_unkeyed_calls_go_to_the_rule_every_time():
    calls = []

    def rule(x, *, data):
        calls.append(1)
        return (x,)

    memo = memoized(rule)
    x = ArraySpec((2,), F8)
    memo(x, data=np.zeros(2))
    memo(x, data=np.zeros(2))
    assert len(calls) == 2 and not memo.memo


def test_the_registered_rules_of_products_reductions_and_unary_ops_are_memoized():
    for name in ("matmul", "sum", "argmax", "tanh", "take_index", "put_index"):
        assert hasattr(registry.get(name).infer, "memo"), name
    matmul = registry.get("matmul").infer
    a, b = ArraySpec((3, 4), F8), ArraySpec((4, 5), np.dtype("f4"))
    assert matmul(a, b) == matmul.__wrapped__(a, b)
    with pytest.raises(ShapeError):
        matmul(b, b)
    with pytest.raises(ShapeError):   # still raised on a second call
        matmul(b, b)


def test_results_stay_numpys_through_remembered_rules(engine):
    rng = np.random.default_rng(3)
    for _ in range(3):   # each call again, past the first
        for shape, axis in (((4, 5), None), ((4, 5), 1), ((2, 3, 4), (0, 2)), ((6,), 0)):
            data = rng.standard_normal(shape)
            x = mv.array(data)
            for name in ("sum", "max", "mean", "argmax"):
                if name == "argmax" and isinstance(axis, tuple):
                    continue
                got = getattr(mv, name)(x, axis=axis).to_numpy()
                want = getattr(np, name)(data, axis=axis)
                np.testing.assert_array_equal(got, want)
                assert got.dtype == np.asarray(want).dtype
            np.testing.assert_array_equal(mv.tanh(x).to_numpy(), np.tanh(data))
        ints = rng.integers(0, 9, (3, 4))
        np.testing.assert_array_equal(mv.negative(mv.array(ints)).to_numpy(), -ints)
        assert mv.sqrt(mv.array(ints)).dtype == np.sqrt(ints).dtype
        w, v = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
        np.testing.assert_array_equal(mv.dot(mv.array(w), mv.array(v)).to_numpy(), w @ v)
        np.testing.assert_array_equal(mv.array(w)[1:, [0, 2]].to_numpy(), w[1:, [0, 2]])
        with pytest.raises(ShapeError):
            mv.dot(mv.array(v), mv.array(v))


def test_a_value_that_cannot_be_hashed_is_computed_every_time(engine):
    record = np.dtype([("a", "i4"), ("b", "f8")])
    want = np.zeros(4, dtype=record)
    x = mv.zeros(4, dtype=record)
    for index, value in (([0, 2], (1, 2.5)), ([1], (3, -1.0)), ([0, 2], (1, 2.5))):
        want[index] = value
        x[index] = value     # put_index with a record (np.void, unhashable) as its value
    np.testing.assert_array_equal(x.to_numpy(), want)
    rule = memoized(lambda x, *, value: (x,))
    spec = ArraySpec((2,), F8)
    assert rule(spec, value=np.zeros(1, record)[0]) == (spec,)
    assert not rule.memo


def test_an_answer_with_numpy_integer_dims_is_not_kept():
    rule = memoized(lambda x, *, n: (ArraySpec((n,), F8),))
    spec = ArraySpec((2,), F8)
    assert type(rule(spec, n=np.int64(3))[0].shape[0]) is np.int64
    assert not rule.memo            # kept, it would answer calls with n=3 too
    assert type(rule(spec, n=3)[0].shape[0]) is int
    assert len(rule.memo) == 1
