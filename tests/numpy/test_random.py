"""``mv.random`` gives NumPy's numbers: for the same seed and the same calls, every function
returns exactly what NumPy's returns (scalars where NumPy gives scalars, NArrays of the
same dtype where it gives arrays), under every engine and on several devices."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv

DATA = np.arange(24.0).reshape(6, 4) * 1.5

LEGACY_CALLS = [
    ("rand", (3, 4), {}), ("rand", (), {}), ("randn", (3, 4), {}), ("randn", (), {}),
    ("randint", (0, 10, (5,)), {}), ("randint", (7,), {}),
    ("randint", (-3, 3), {"size": (2, 2), "dtype": np.int32}),
    ("random", ((2, 3),), {}), ("random", (), {}), ("random_sample", ((4,),), {}),
    ("random_sample", (), {}), ("uniform", (-1.0, 2.0, (3, 2)), {}), ("uniform", (), {}),
    ("normal", (1.0, 2.0, (5,)), {}), ("normal", (), {}), ("normal", (0.0, [1.0, 2.0]), {}),
    ("standard_normal", ((2, 2),), {}), ("standard_normal", (), {}),
    ("exponential", (2.0, 3), {}), ("binomial", (10, 0.3, 4), {}), ("poisson", (3.0,), {}),
    ("choice", (10, 4), {}), ("choice", (5, 3), {"replace": False}),
    ("choice", (4, 6), {"p": [0.1, 0.2, 0.3, 0.4]}), ("choice", (5,), {}),
    ("choice", ([1.5, 2.5, 3.5], 2), {}), ("permutation", (8,), {}),
    ("permutation", (DATA,), {}),
]
"""(name, args, kwargs) of one call sequence through NumPy's legacy functions."""

GENERATOR_CALLS = [
    ("integers", (0, 10), {"size": 5}), ("integers", (5,), {}),
    ("integers", (0, 100, (2, 3)), {"dtype": np.int16, "endpoint": True}),
    ("standard_normal", ((2, 3),), {}), ("standard_normal", (), {}),
    ("standard_normal", (4,), {"dtype": np.float32}),
    ("normal", (0.0, 1.0, 4), {}), ("normal", (), {}), ("uniform", (0.0, 1.0, (2, 2)), {}),
    ("uniform", (), {}), ("random", (3,), {}), ("random", (), {}),
    ("choice", (10, 3), {"replace": False}), ("choice", (DATA, 2), {}),
    ("choice", (4, 5), {"p": [0.4, 0.3, 0.2, 0.1]}), ("choice", (7,), {}),
    ("permutation", (10,), {}), ("permutation", (DATA,), {}), ("exponential", (1.0, 3), {}),
]
"""(name, args, kwargs) of one call sequence through a NumPy Generator."""


def same(got, want):
    """``got`` is exactly NumPy's ``want``: an NArray of its dtype, shape and values when
    ``want`` is an array, else a scalar of its type and value."""
    if isinstance(want, np.ndarray):
        assert isinstance(got, mv.NArray), type(got)
        values = got.to_numpy()
        assert values.dtype == want.dtype and values.shape == want.shape
        np.testing.assert_array_equal(values, want)
    else:
        assert type(got) is type(want) and got == want, (got, want)


def run_sequence(minerva_gen, numpy_gen, calls):
    for name, args, kwargs in calls:
        mv_args = [mv.array(a) if isinstance(a, np.ndarray) else a for a in args]
        same(getattr(minerva_gen, name)(*mv_args, **kwargs),
             getattr(numpy_gen, name)(*args, **kwargs))


def test_legacy_functions_give_numpys_numbers(engine):
    mv.random.seed(7)
    run_sequence(mv.random, np.random.RandomState(7), LEGACY_CALLS)


def test_legacy_functions_match_numpys_global_generator(engine):
    saved = np.random.get_state()
    try:
        mv.random.seed(11)
        np.random.seed(11)
        run_sequence(mv.random, np.random, LEGACY_CALLS[:12])
    finally:
        np.random.set_state(saved)


def test_float_draws_are_float64(engine):
    mv.random.seed(0)
    for draw in (mv.random.rand(2, 2), mv.random.randn(3), mv.random.random((2,)),
                 mv.random.uniform(size=2), mv.random.normal(size=2)):
        assert draw.dtype == np.float64
    assert type(mv.random.rand()) is float and type(mv.random.randint(3)) is int


def test_reseeding_restarts_the_sequence(engine):
    mv.random.seed(3)
    first = mv.random.randn(4).to_numpy()
    mv.random.seed(3)
    np.testing.assert_array_equal(mv.random.randn(4).to_numpy(), first)


@pytest.mark.parametrize("data", [np.arange(10.0) * 2, DATA])
def test_shuffle_an_narray_in_place_as_numpy_does(engine, data):
    x, want = mv.array(data), data.copy()
    mv.random.seed(5)
    assert mv.random.shuffle(x) is None
    np.random.RandomState(5).shuffle(want)
    np.testing.assert_array_equal(x.to_numpy(), want)


def test_shuffle_a_view_writes_its_base(engine):
    base = mv.array(DATA)
    mv.random.seed(2)
    mv.random.shuffle(base[1:5])
    want = DATA.copy()
    np.random.RandomState(2).shuffle(want[1:5])
    np.testing.assert_array_equal(base.to_numpy(), want)


def test_random_state_gives_numpys_numbers(engine):
    run_sequence(mv.random.RandomState(42), np.random.RandomState(42), LEGACY_CALLS)
    rs, ref = mv.random.RandomState(1), np.random.RandomState(1)
    same(rs.normal(2.0, 0.5, size=(3, 3)), ref.normal(2.0, 0.5, size=(3, 3)))
    x, want = mv.array(DATA), DATA.copy()
    rs.shuffle(x)
    ref.shuffle(want)
    np.testing.assert_array_equal(x.to_numpy(), want)
    rs.seed(9)
    ref.seed(9)
    same(rs.rand(2), ref.rand(2))


def test_random_state_get_and_set_state(engine):
    rs = mv.random.RandomState(4)
    state = rs.get_state()
    first = rs.rand(3).to_numpy()
    rs.set_state(state)
    np.testing.assert_array_equal(rs.rand(3).to_numpy(), first)


def test_default_rng_gives_numpys_numbers(engine):
    run_sequence(mv.random.default_rng(123), np.random.default_rng(123), GENERATOR_CALLS)


def test_generator_shuffle_and_permutation_of_narrays(engine):
    gen, ref = mv.random.default_rng(8), np.random.default_rng(8)
    x, want = mv.array(DATA), DATA.copy()
    assert gen.shuffle(x) is None
    ref.shuffle(want)
    np.testing.assert_array_equal(x.to_numpy(), want)
    same(gen.permutation(x), ref.permutation(want))
    same(gen.choice(mv.array(np.arange(5.0)), 3, replace=False),
         ref.choice(np.arange(5.0), 3, replace=False))


def test_default_rng_accepts_numpy_seeds(engine):
    same(mv.random.default_rng(np.random.SeedSequence(5)).random(3),
         np.random.default_rng(np.random.SeedSequence(5)).random(3))
    same(mv.random.default_rng(np.random.PCG64(6)).integers(9, size=4),
         np.random.default_rng(np.random.PCG64(6)).integers(9, size=4))


def test_two_devices_draw_numpys_sequence(engine):
    devices = [mv.create_cpu_device(), mv.create_cpu_device()]
    mv.random.seed(21)
    ref = np.random.RandomState(21)
    gen, ref_gen = mv.random.default_rng(21), np.random.default_rng(21)
    for i in range(4):
        with mv.device(devices[i % 2]):
            a, b = mv.random.randn(2, 3), gen.integers(0, 50, size=4)
            assert a.device == b.device == devices[i % 2]
        same(a, ref.randn(2, 3))
        same(b, ref_gen.integers(0, 50, size=4))


def test_shuffle_an_narray_of_another_device(engine):
    d0, d1 = mv.create_cpu_device(), mv.create_cpu_device()
    with mv.device(d1):
        x = mv.array(DATA)
    with mv.device(d0):
        mv.random.seed(13)
        mv.random.shuffle(x)
        permuted = mv.random.permutation(x)
    assert x.device == d1 and permuted.device == d0
    ref, want = np.random.RandomState(13), DATA.copy()
    ref.shuffle(want)
    np.testing.assert_array_equal(x.to_numpy(), want)
    np.testing.assert_array_equal(permuted.to_numpy(), ref.permutation(want))


def test_legacy_aliases_ranf_and_sample(engine):
    mv.random.seed(17)
    ref = np.random.RandomState(17)
    same(mv.random.ranf(3), ref.random_sample(3))
    same(mv.random.sample((2, 2)), ref.random_sample((2, 2)))
    same(mv.random.ranf(), ref.random_sample())
