"""Random differentiable programs: compositions of element-wise ops, products, reductions,
views, indexing, item writes, joins and nn ops, with device switches, under every engine
with 1, 2 and 4 CPU devices. Their gradients are close to finite differences, and bitwise
equal across engines and device counts for the same seed."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from tests.conftest import DEVICE_COUNTS, ENGINES, start_engine

SHAPES = {"x": (3, 4), "w": (4, 4), "b": (4,), "c": (3, 1)}


def _unary(p, q, k):
    fs = [mv.tanh, mv.sin, mv.sigmoid, lambda v: v * v * 0.5, lambda v: mv.exp(v * 0.3)]
    return fs[k % len(fs)](p)


def _binary(p, q, k):
    return [p + q, p - q * 0.5, p * q, mv.maximum(p, q)][k % 4]


def _write(p, q, k):
    y = p * 1
    y[1] = q[2]
    y[:, 0] += 0.5 * q[:, 1]
    y[[0, 0, 2], [1, 1, 3]] = q[0, :3]
    return y


STEPS = {
    "unary": _unary,
    "binary": _binary,
    "broadcast": lambda p, q, k, P: p * P["b"] + P["c"],
    "matmul": lambda p, q, k, P: (p @ P["w"]) * 0.5,
    "gram": lambda p, q, k: p @ (p.T @ q) * 0.1,
    "einsum": lambda p, q, k: mv.einsum("ij,kj->ik", p, q) @ q * 0.2,
    "reduce": lambda p, q, k: p * mv.max(q, axis=1, keepdims=True) - mv.mean(q, axis=0),
    "views": lambda p, q, k: p[::-1] * 0.5 + p.T.T + p.reshape(4, 3).T.reshape(3, 4),
    "index": lambda p, q, k: p[:, [3, 0, 0, 1]] + q[[2, 2, 0]],
    "mask": lambda p, q, k: mv.where(p > 0, p, q * 0.5),
    "write": _write,
    "concat": lambda p, q, k: mv.concatenate([p[:2], q[2:]], axis=0),
    "stack": lambda p, q, k: mv.stack([p, q], axis=0).sum(axis=0),
    "softmax": lambda p, q, k: mv.nn.softmax(p, axis=1) + mv.nn.log_softmax(q, axis=0),
    "dropout": lambda p, q, k: mv.nn.dropout(p, 0.3),
    "cumsum": lambda p, q, k: mv.cumsum(p, axis=1) * 0.3,
    "sort": lambda p, q, k: mv.sort(p, axis=1) + mv.roll(q, 1, axis=1),
}
USES_PARAMS = ("broadcast", "matmul")


def make_plan(seed: int, n_steps: int = 10) -> list:
    """A random program: ``(step, first, second, variant, device)`` per step, where
    ``first``/``second`` pick earlier values and ``device`` is taken modulo the number of
    devices."""
    rng = np.random.default_rng(seed)
    names = sorted(STEPS)
    plan = []
    for i in range(n_steps):
        plan.append((names[rng.integers(len(names))], int(rng.integers(i + 1)),
                     int(rng.integers(i + 1)), int(rng.integers(8)), int(rng.integers(4))))
    return plan


def run_plan(plan, params: dict, devices: list, project: np.ndarray):
    """The loss of the program ``plan`` over ``params`` (NArrays)."""
    mv.random.seed(7)
    pool = [params["x"]]
    for name, i, j, k, d in plan:
        with mv.device(devices[d % len(devices)]):
            step = STEPS[name]
            args = (pool[i], pool[j], k) + ((params,) if name in USES_PARAMS else ())
            pool.append(step(*args))
    with mv.device(devices[-1]):
        head = (pool[-1] @ params["w"] + params["b"]) * params["c"]
    with mv.device(devices[0]):
        total = (head * mv.array(project)).sum() + mv.nn.cross_entropy(
            pool[-2], mv.array([0, 3, 1]))
    return total


def host_params(seed: int) -> dict:
    """The program's parameters as NumPy arrays."""
    rng = np.random.default_rng(seed + 1000)
    return {name: rng.uniform(-1, 1, shape) for name, shape in SHAPES.items()}


def gradients(plan, values: dict, devices: list, project) -> dict:
    """Each parameter's gradient (NumPy) by attach_grad / record / backward."""
    params = {}
    for name, value in values.items():
        params[name] = mv.array(value)
        params[name].attach_grad()
    with mv.autograd.record():
        loss = run_plan(plan, params, devices, project)
    loss.backward()
    return {name: p.grad.to_numpy() for name, p in params.items()}


def numeric(plan, values: dict, devices: list, project, eps=1e-6) -> dict:
    """Central differences of the program's loss for each parameter."""
    def loss(vals):
        return float(run_plan(plan, {n: mv.array(v) for n, v in vals.items()}, devices,
                              project))

    result = {}
    for name, value in values.items():
        grad = np.zeros(value.shape)
        for j in np.ndindex(value.shape):
            up = dict(values, **{name: value.copy()})
            up[name][j] += eps
            down = dict(values, **{name: value.copy()})
            down[name][j] -= eps
            grad[j] = (loss(up) - loss(down)) / (2 * eps)
        result[name] = grad
    return result


SEEDS = [0, 1, 2]


@pytest.mark.parametrize("seed", SEEDS)
def test_program_gradients_match_finite_differences(runtime, seed):
    _, devices = runtime
    plan = make_plan(seed)
    values = host_params(seed)
    project = np.random.default_rng(seed).standard_normal((3, 4))
    got = gradients(plan, values, devices, project)
    want = numeric(plan, values, devices, project)
    for name in values:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6,
                                   err_msg=f"seed {seed}, plan {plan}, parameter {name}")


@pytest.mark.parametrize("seed", SEEDS + [3, 4, 5, 6, 7])
def test_program_gradients_are_bitwise_equal_across_engines_and_devices(seed):
    plan = make_plan(seed, n_steps=14)
    values = host_params(seed)
    project = np.random.default_rng(seed).standard_normal((3, 4))
    first = None
    for engine in ENGINES:
        for n in DEVICE_COUNTS:
            mv.shutdown()
            start_engine(engine)
            devices = [mv.create_cpu_device() for _ in range(n)]
            mv.set_device(devices[0])
            got = gradients(plan, values, devices, project)
            if first is None:
                first = got
                continue
            for name in values:
                assert np.array_equal(got[name], first[name]), \
                    f"seed {seed}, {engine} with {n} devices, parameter {name}"
