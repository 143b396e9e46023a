"""Random programs jitted: seeded programs of element-wise ops, matmuls, reductions, views,
in-place updates (of arguments, captured arrays and tmps, through views, overlapping),
item writes with basic, integer-array and mask indices, dropped handles and device
switches, called several times with new argument values, jitted (with ``check=True`` for
every other seed) and eager from equal states: every result and every array they update
must be bitwise equal. Values are small integers in float64 (kept small by ``% 7``), so
every result is exact. The memory plan is checked directly too: no two values live at the
same step share bytes of an arena. A failure names its seed."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from tests.support.jit_fixtures import assert_same, assert_trees_same, upload

N_SEEDS = 24
N_OPS = 40
N_CALLS = 3
SHAPES = [(4, 4), (3, 4), (4,), (2, 3, 4)]


class Program:
    """A random program over a pool of arrays: its arguments, its own state (captured
    arrays) and what it makes. Its choices come from a generator seeded anew at each call
    and from shapes alone, so every call builds the same ops."""

    def __init__(self, seed: int, devices: list):
        self.seed, self.devices = seed, devices
        rng = np.random.default_rng(seed + 1000)
        self.state = [mv.array(values(rng, shape)) for shape in SHAPES[:2] + [(16, 16)]]

    def __call__(self, *args):
        rng = np.random.default_rng(self.seed)
        self.pool, self.device = list(args) + list(self.state), self.devices[0]
        steps = [self._binary, self._scalar, self._matmul, self._reduce, self._view,
                 self._in_place, self._set_basic, self._set_index, self._set_mask,
                 self._overlap, self._drop, self._switch]
        for _ in range(N_OPS):
            with mv.device(self.device):
                steps[rng.integers(len(steps))](rng)
        picks = rng.integers(len(self.pool), size=3)
        return tuple(self.pool[i] for i in picks), self.pool[-1]

    def _pick(self, rng, ndim=0):
        fits = [x for x in self.pool if x.ndim >= ndim and (ndim == 0 or x.shape[0] > 1)]
        return fits[rng.integers(len(fits))] if fits else None

    def _like(self, rng, x):
        same = [y for y in self.pool if y.shape == x.shape]
        return same[rng.integers(len(same))]

    def _binary(self, rng):
        a = self._pick(rng)
        b = self._like(rng, a)
        op = [mv.add, mv.subtract, mv.multiply, mv.maximum][rng.integers(4)]
        self.pool.append(op(a, b) % 7)

    def _scalar(self, rng):
        a = self._pick(rng)
        self.pool.append([lambda: (a + 3.0) % 7, lambda: abs(a - 2.0), lambda: a * 2.0 % 7,
                          lambda: mv.where(a > 2.0, a, -a)][rng.integers(4)]())

    def _matmul(self, rng):
        a = self._pick(rng, 2)
        if a is not None and a.ndim == 2:
            self.pool.append((a @ a.T) % 7)

    def _reduce(self, rng):
        a = self._pick(rng, 1)
        if a is not None:
            axis = int(rng.integers(a.ndim))
            self.pool.append([a.sum, a.max, a.min][rng.integers(3)](axis=axis) % 7)

    def _view(self, rng):
        a = self._pick(rng, 1)
        if a is not None:
            self.pool.append([lambda: a[1:], lambda: a.T, lambda: a[::-2], lambda: a[None],
                              lambda: a.reshape(-1)][rng.integers(5)]())

    def _in_place(self, rng):
        a = self._pick(rng)
        a += self._like(rng, a)
        a %= 7

    def _set_basic(self, rng):
        a = self._pick(rng, 1)
        if a is not None:
            a[rng.integers(a.shape[0])] = float(rng.integers(7))

    def _set_index(self, rng):
        a = self._pick(rng, 1)
        if a is not None:
            index = rng.integers(0, a.shape[0], size=2).tolist()
            a[index] = (a[index] + 1.0) % 7

    def _set_mask(self, rng):
        a = self._pick(rng, 1)
        if a is not None:
            a[a > 3.0] = float(rng.integers(7))

    def _overlap(self, rng):
        a = self._pick(rng, 1)
        if a is not None:
            a[1:] += a[:-1]
            a %= 7

    def _drop(self, rng):
        if len(self.pool) > 6:
            del self.pool[int(rng.integers(len(self.state) + 2, len(self.pool)))]

    def _switch(self, rng):
        self.device = self.devices[rng.integers(len(self.devices))]


def values(rng, shape) -> np.ndarray:
    """Small integers as float64."""
    return rng.integers(0, 7, size=shape).astype(np.float64)


def calls(seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [(values(rng, SHAPES[0]), values(rng, SHAPES[3])) for _ in range(N_CALLS)]


def run_program(seed: int, devices: list):
    """The program eagerly and jitted from equal states; compared after every call."""
    eager, program = Program(seed, devices), Program(seed, devices)
    jitted = mv.jit(program, check=seed % 2 == 0)
    for call in calls(seed):
        args_eager, args_jit = upload(call), upload(call)
        assert_trees_same(eager(*args_eager), jitted(*args_jit))
        for a, b in zip(args_eager + eager.state, args_jit + program.state):
            assert_same(a, b)
    assert jitted.stats()["n_replays"] == N_CALLS - 1
    return jitted


@pytest.mark.parametrize("seed", range(N_SEEDS))
def test_random_programs_on_one_device(engine, seed):
    try:
        check_plan(run_program(seed, [mv.current_device()]))
    except AssertionError as exc:
        raise AssertionError(f"program seed {seed}: {exc}") from exc


@pytest.mark.parametrize("seed", range(N_SEEDS // 2))
def test_random_programs_on_three_devices(engine, seed):
    devices = [mv.create_cpu_device() for _ in range(3)]
    try:
        jitted = run_program(seed, devices)
    except AssertionError as exc:
        raise AssertionError(f"program seed {seed}: {exc}") from exc
    check_plan(jitted)


def check_plan(jitted) -> None:
    """No two locals whose lives overlap share a byte of their segment's arena."""
    for plan in jitted._plans.values():
        for run in plan.segments:
            p = run.plan
            first, last = {}, {}
            for i, step in enumerate(p.steps):
                for vid, _ in step.outs + step.ins:
                    first.setdefault(vid, i)
                    last[vid] = i
            spans = [(p.slots[v].offset, p.slots[v].offset + plan.values[v].spec.nbytes,
                      first[v], last[v]) for v in p.locals]
            for i, (start, end, born, dies) in enumerate(spans):
                assert 0 <= start and end <= p.arena_bytes
                for other in spans[:i]:
                    if start < other[1] and other[0] < end:
                        assert dies < other[2] or other[3] < born, (spans[i], other)
