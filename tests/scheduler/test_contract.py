"""The public contract of API.md, run against every engine with 1, 2 and 4 CPU devices."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from tests.conftest import assert_settled


def test_creation_defaults_and_metadata(runtime):
    x = mv.zeros((2, 3))
    assert (x.shape, x.dtype, x.ndim, x.size, x.nbytes) == ((2, 3), np.float64, 2, 6, 48)
    assert mv.ones(4, dtype=np.int32).dtype == np.int32
    assert mv.full((2,), 7).to_numpy().tolist() == [7.0, 7.0]
    assert mv.array([1.0, 2.0]).dtype == np.float64  # inferred as NumPy does
    assert mv.array(np.arange(3, dtype=np.int16)).dtype == np.int16
    np.testing.assert_array_equal(mv.arange(5).to_numpy(), np.arange(5))
    np.testing.assert_array_equal(mv.arange(1, 2, 0.25).to_numpy(), np.arange(1, 2, 0.25))
    assert x.device == runtime[1][0]


def test_values_follow_numpy(runtime, rng):
    a_np = rng.standard_normal((3, 4)).astype(np.float32)
    b_np = rng.standard_normal((4,)).astype(np.float32)
    a, b = mv.array(a_np), mv.array(b_np)
    checks = [
        (a + b, a_np + b_np), (a - 1, a_np - 1), (2 * a, 2 * a_np), (a / b, a_np / b_np),
        (a ** 2, a_np ** 2), (-a, -a_np), (abs(a), np.abs(a_np)), (a @ b, a_np @ b_np),
        (a.T @ a, a_np.T @ a_np), (a > 0, a_np > 0), (a.sum(axis=1), a_np.sum(axis=1)),
        (a.mean(), a_np.mean()), (a.max(axis=(0, 1)), a_np.max(axis=(0, 1))),
        (a.argmax(axis=0), a_np.argmax(axis=0)), (a[1:3, ::2], a_np[1:3, ::2]),
        (a.reshape(-1, 2), a_np.reshape(-1, 2)), (mv.exp(a), np.exp(a_np)),
        (mv.where(a > 0, a, 0.0), np.where(a_np > 0, a_np, np.float32(0))),
        (mv.concatenate([a, a], axis=1), np.concatenate([a_np, a_np], axis=1)),
        (mv.stack([b, b]), np.stack([b_np, b_np])), (a_np + a, a_np + a_np),
    ]
    for got, want in checks:
        values = got.to_numpy()
        assert values.dtype == np.asarray(want).dtype
        np.testing.assert_array_equal(values, want)


def test_scalars_and_numpy_interop(runtime):
    x = mv.array(np.array([[2.5]], dtype=np.float32))
    assert float(x) == 2.5 and int(x) == 2 and bool(x)
    assert np.asarray(x).shape == (1, 1)
    with pytest.raises(TypeError):
        float(mv.zeros(3))
    with pytest.raises(ValueError):
        bool(mv.zeros(3))


def test_inplace_operator_writes_into_the_array(runtime):
    x = mv.ones(3)
    y = x
    v = x[1:]
    x += 1
    assert x is y
    assert y.to_numpy().tolist() == [2.0] * 3 and v.to_numpy().tolist() == [2.0] * 2


def test_cross_device_inputs_are_copied_and_cached(runtime):
    _, devices = runtime
    with mv.device(devices[0]):
        w = mv.full((2, 2), 3.0)
    outs = []
    for dev in devices:
        with mv.device(dev):
            outs.append(w * 2 + w)  # w is used twice per device: copied once
            assert outs[-1].device == dev
    for out in outs:
        np.testing.assert_array_equal(out.to_numpy(), np.full((2, 2), 9.0, np.float32))
    mv.wait_for_all(timeout=30)
    stats = mv.dag_stats()
    # w, one cached copy per other device, and the outputs
    assert stats["n_data_nodes"] == 1 + (len(devices) - 1) + len(outs)


def test_to_moves_and_keeps_the_source(runtime):
    _, devices = runtime
    x = mv.arange(6).reshape(2, 3)
    y = x.to(devices[-1])
    assert y.device == devices[-1]
    np.testing.assert_array_equal(y.to_numpy(), np.arange(6).reshape(2, 3))
    assert x.to(x.device).node_id == x.node_id


def test_device_scoping(runtime):
    _, devices = runtime
    assert mv.current_device() == devices[0]
    with mv.device(devices[-1]):
        assert mv.current_device() == devices[-1]
        assert mv.zeros(1).device == devices[-1]
    assert mv.current_device() == devices[0]
    info = mv.device_info(devices[-1])
    assert info["kind"] == "cpu" and "name" in info


def test_dag_is_empty_after_wait_for_all_with_no_handles(runtime):
    _, devices = runtime
    x = mv.ones((8, 8))
    for dev in devices:
        with mv.device(dev):
            x = (x @ x) / 8 + 1
    del x
    assert_settled()


def test_held_arrays_are_exactly_what_stays_in_use(runtime):
    a = mv.ones((5, 5))
    b = a + 1
    c = (b * b).sum()
    del b
    assert_settled(a, c)
    assert c.to_numpy() == 100.0


def test_random_is_reproducible_across_engines_and_devices(runtime):
    mv.random.seed(42)
    values = [mv.randn((3, 3)).to_numpy(), mv.rand((4,)).to_numpy(), mv.randb((5,), 0.5)]
    expected = _random_reference()
    for got, want in zip(values, expected):
        np.testing.assert_array_equal(np.asarray(got), want)


def _random_reference():
    from minerva.ops.creation import draw
    return [draw("normal", (3, 3), np.float64, (0.0, 1.0), (42, 0)),
            draw("uniform", (4,), np.float64, (0.0, 1.0), (42, 1)),
            draw("bernoulli", (5,), np.float64, (0.5,), (42, 2))]


def test_wait_returns_self_and_timeouts_are_honoured(runtime):
    x = mv.ones(2)
    assert x.wait(timeout=10) is x
    mv.wait_for_all(timeout=10)


def test_repr_and_str_wait_and_show_numpys_text(runtime):
    x = mv.arange(3)
    assert repr(x) == repr(np.arange(3))
    assert str(x) == str(np.arange(3))
