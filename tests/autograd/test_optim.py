"""``mv.optim``: SGD and Adam against a NumPy reference, step by step, bit for bit in
float64 (and float32), with parameters on one and on two devices; the updates are in place
(same handle, storage and buffer) and allocate no parameter-sized buffer per step beyond
the state made at the first step; the optimizer never records and checks its arguments."""
from __future__ import annotations

import math

import numpy as np
import pytest

import minerva as mv
from tests.conftest import start_engine
from minerva import optim

WAIT = 30
SHAPES = [(7, 5), (5,), (3, 2, 4)]
N_STEPS = 4


# ---------------------------------------------------------------- NumPy references
class RefSGD:
    """PyTorch's SGD (no dampening, no Nesterov), in NumPy."""

    def __init__(self, lr, momentum=0.0, weight_decay=0.0):
        self.lr, self.momentum, self.wd = lr, momentum, weight_decay
        self.v = {}

    def step(self, i, w, g):
        d = g + self.wd * w if self.wd else g
        if self.momentum:
            d = self.v[i] = d.copy() if i not in self.v else self.momentum * self.v[i] + d
        return w - self.lr * d


class RefAdam:
    """PyTorch's Adam (L2 weight decay added to the gradient), in NumPy."""

    def __init__(self, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        self.lr, (self.b1, self.b2), self.eps, self.wd = lr, betas, eps, weight_decay
        self.m, self.v, self.t = {}, {}, 0

    def step(self, i, w, g):
        d = g + self.wd * w if self.wd else g
        m = self.m.get(i, np.zeros_like(w))
        v = self.v.get(i, np.zeros_like(w))
        self.m[i] = m = self.b1 * m + (1 - self.b1) * d
        self.v[i] = v = self.b2 * v + (1 - self.b2) * (d * d)
        bc1, bc2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
        denom = np.sqrt(v) / math.sqrt(bc2) + self.eps
        return w - (self.lr / bc1) * (m / denom)


CASES = {
    "sgd": (dict(lr=0.1), optim.SGD, RefSGD),
    "sgd-momentum": (dict(lr=0.05, momentum=0.9), optim.SGD, RefSGD),
    "sgd-momentum-decay": (dict(lr=0.05, momentum=0.8, weight_decay=0.01), optim.SGD, RefSGD),
    "sgd-decay": (dict(lr=0.05, weight_decay=0.1), optim.SGD, RefSGD),
    "adam": (dict(lr=0.01), optim.Adam, RefAdam),
    "adam-decay": (dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.05),
                   optim.Adam, RefAdam),
}


def host_problem(dtype, seed=0):
    """Initial weights and N_STEPS gradients per shape, NumPy."""
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(N_STEPS)]
    return weights, grads


def make_params(weights, devices):
    """The weights as attached variables, spread over ``devices`` in turn."""
    params = []
    for i, w in enumerate(weights):
        with mv.device(devices[i % len(devices)]):
            p = mv.array(w)
            p.attach_grad()
        params.append(p)
    return params


def set_grads(params, grads):
    """Write host gradients into each parameter's ``.grad`` (as backward would)."""
    for p, g in zip(params, grads):
        with mv.device(p.device):
            p.grad[...] = mv.array(g)


# ---------------------------------------------------------------- against the reference
@pytest.mark.parametrize("engine_name", ["naive", "dag"])
@pytest.mark.parametrize("n_devices", [1, 2])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_steps_match_numpy_bitwise(engine_name, n_devices, case, dtype):
    start_engine(engine_name)
    devices = [mv.create_cpu_device() for _ in range(n_devices)]
    mv.set_device(devices[0])
    kwargs, make, make_ref = CASES[case]
    weights, grads = host_problem(dtype)
    params = make_params(weights, devices)
    opt, ref = make(params, **kwargs), make_ref(**kwargs)
    for step in range(N_STEPS):
        set_grads(params, grads[step])
        opt.step()
        ref.t = step + 1
        weights = [ref.step(i, w, g) for i, (w, g) in enumerate(zip(weights, grads[step]))]
        for i, (p, w) in enumerate(zip(params, weights)):
            got = p.to_numpy(timeout=WAIT)
            assert got.dtype == dtype and p.device == devices[i % n_devices]
            np.testing.assert_array_equal(got, w, err_msg=f"{case} step {step} param {i}")
    for p, state in zip(params, opt.state):
        assert all(s.device == p.device and s.dtype == p.dtype for s in state.values())


def test_learning_rate_may_change_between_steps():
    weights, grads = host_problem(np.float64)
    params = make_params(weights, [mv.create_cpu_device()])
    opt, ref = optim.SGD(params, lr=0.1, momentum=0.5), RefSGD(0.1, momentum=0.5)
    for step, lr in enumerate((0.1, 0.05, 0.025)):
        opt.lr = ref.lr = lr
        set_grads(params, grads[step])
        opt.step()
        weights = [ref.step(i, w, g) for i, (w, g) in enumerate(zip(weights, grads[step]))]
    for p, w in zip(params, weights):
        np.testing.assert_array_equal(p.to_numpy(timeout=WAIT), w)


def test_a_recorded_loss_trains_through_backward():
    """The intended loop: record, backward, step; loss falls, as NumPy's gradient says."""
    rng = np.random.default_rng(1)
    x_host, y_host = rng.standard_normal((32, 4)), rng.standard_normal((32, 1))
    w = mv.zeros((4, 1))
    w.attach_grad()
    x, y = mv.array(x_host), mv.array(y_host)
    opt, w_ref = optim.SGD({"w": w}, lr=0.1), np.zeros((4, 1))
    for _ in range(3):
        with mv.autograd.record():
            loss = ((x @ w - y) ** 2).sum() / 32
        loss.backward()
        opt.step()
        w_ref = w_ref - 0.1 * (2 / 32 * x_host.T @ (x_host @ w_ref - y_host))
    np.testing.assert_allclose(w.to_numpy(timeout=WAIT), w_ref, rtol=1e-12)


# ---------------------------------------------------------------- in place
@pytest.mark.parametrize("engine_name", ["naive", "dag", "dag-queued"])
@pytest.mark.parametrize("case, n_state", [("sgd", 0), ("sgd-momentum", 1), ("adam", 2),
                                           ("sgd-momentum-decay", 1), ("adam-decay", 2)])
def test_steps_update_in_place_and_allocate_state_once(engine_name, case, n_state):
    start_engine(engine_name)
    mv.set_device(mv.create_cpu_device())
    kwargs, make, _ = CASES[case]
    n = 1 << 18                                   # 2 MiB of float64 per parameter
    params = [mv.ones(n), mv.ones((n // 2, 2))]
    for p in params:
        p.attach_grad()
        p.grad[...] = 0.5
    handles = [(p, p._storage) for p in params]
    opt = make(params, **kwargs)
    n_bytes = sum(p.nbytes for p in params)
    mv.wait_for_all(timeout=WAIT)
    blocks = [p._storage.current.block for p in params]
    opt.step()
    mv.wait_for_all(timeout=WAIT)
    first = mv.memory_stats()
    assert first["in_use_bytes"] == (2 + n_state) * n_bytes   # params, grads, state
    for _ in range(3):
        opt.step()
        mv.wait_for_all(timeout=WAIT)
    later = mv.memory_stats()
    assert later["in_use_bytes"] == first["in_use_bytes"]
    n_temps = 1 + bool(kwargs.get("weight_decay"))   # per parameter, freed after its step
    assert later["peak_bytes"] <= first["in_use_bytes"] + n_temps * n_bytes
    assert all(p is q and p._storage is storage for p, (q, storage) in zip(params, handles))
    assert all(p._storage.current.block is block for p, block in zip(params, blocks))
    assert all(p._storage.current.version >= 4 for p in params)   # written each step
    assert opt.n_steps == 4 and np.all(params[0].to_numpy(timeout=WAIT) < 1.0)


def test_replicas_made_with_to_see_each_new_value():
    devices = [mv.create_cpu_device() for _ in range(2)]
    mv.set_device(devices[0])
    w = mv.ones(3)
    w.attach_grad()
    w.grad[...] = 1.0
    opt = optim.SGD([w], lr=0.5)
    before = w.to(devices[1])
    opt.step()
    after = w.to(devices[1])
    assert before.device == after.device == devices[1]
    np.testing.assert_array_equal(before.to_numpy(timeout=WAIT), np.ones(3))
    np.testing.assert_array_equal(after.to_numpy(timeout=WAIT), np.full(3, 0.5))


# ---------------------------------------------------------------- recording, zero_grad, errors
def test_step_inside_record_is_not_recorded():
    w = mv.ones(4)
    w.attach_grad()
    opt = optim.Adam([w], lr=0.1)
    with mv.autograd.record():
        loss = (w * w).sum()
        loss.backward()
        opt.step()                    # would raise if its writes into w were recorded
        assert mv.autograd.is_recording()
    assert w.to_numpy(timeout=WAIT)[0] < 1.0


def test_zero_grad_clears_accumulated_gradients():
    w = mv.ones(3)
    w.attach_grad(grad_req="add")
    opt = optim.SGD([w], lr=1.0)
    for _ in range(2):
        with mv.autograd.record():
            (w * 2.0).sum().backward()
    np.testing.assert_array_equal(w.grad.to_numpy(timeout=WAIT), np.full(3, 4.0))
    opt.zero_grad()
    np.testing.assert_array_equal(w.grad.to_numpy(timeout=WAIT), np.zeros(3))
    opt.step()
    np.testing.assert_array_equal(w.to_numpy(timeout=WAIT), np.ones(3))


def test_a_parameter_without_a_gradient_buffer_is_refused():
    opt = optim.SGD([mv.ones(2)], lr=0.1)
    with pytest.raises(ValueError, match="attach_grad"):
        opt.step()
    with pytest.raises(TypeError, match="not an NArray"):
        optim.SGD([np.ones(2)], lr=0.1)


@pytest.mark.parametrize("make, kwargs", [
    (optim.SGD, dict(lr=-1.0)), (optim.SGD, dict(lr=0.1, momentum=-0.5)),
    (optim.SGD, dict(lr=0.1, weight_decay=-1.0)), (optim.Adam, dict(betas=(1.0, 0.9))),
    (optim.Adam, dict(betas=(0.9, -0.1))), (optim.Adam, dict(eps=-1e-8)),
    (optim.Adam, dict(lr=float("nan")))])
def test_bad_settings_are_refused(make, kwargs):
    with pytest.raises(ValueError):
        make([mv.ones(2)], **kwargs)
