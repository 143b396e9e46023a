"""Randomized differential test (after MXNet's RandSumExpr): seeded random programs of
elementwise ops, matmul, reductions, reshapes, slicing, cross-device use and dropped handles
run on minerva and on plain NumPy, compared exactly. Values are small integers in float64,
so every result is exact whatever the order of evaluation. A failure names its seed."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from tests.conftest import assert_settled

N_SEEDS = 50
N_OPS = 500
MAX_LIVE = 24
SHAPES = [(4,), (3, 4), (4, 4), (2, 3, 4), (4, 1), (1, 4)]


class Program:
    """One random program: a pool of (NArray, NumPy reference) pairs grown op by op."""

    max_live = MAX_LIVE   # pairs kept at most (the oldest random ones are dropped)

    def __init__(self, seed: int, devices: list[int]):
        self.rng = np.random.default_rng(seed)
        self.devices = devices
        self.pool: list[tuple[mv.NArray, np.ndarray]] = []
        self.n_errors = 0

    def pick(self):
        return self.pool[self.rng.integers(len(self.pool))]

    def new_value(self):
        shape = SHAPES[self.rng.integers(len(SHAPES))]
        ref = self.rng.integers(-6, 7, size=shape).astype(np.float64)
        self.pool.append((mv.array(ref), ref))

    def apply(self, mv_fn, np_fn, *operands):
        """Run one op both ways: the same values, or a ShapeError where NumPy refuses."""
        try:
            want = np_fn(*(ref for _, ref in operands))
        except ValueError:
            with pytest.raises(mv.ShapeError):
                mv_fn(*(x for x, _ in operands))
            self.n_errors += 1
            return
        got = mv_fn(*(x for x, _ in operands))
        assert got.shape == np.shape(want)
        self.pool.append((got, np.asarray(want)))

    def step(self) -> None:
        choice = self.rng.integers(13)
        if choice == 12 or len(self.pool) < 2:
            return self.new_value()
        [self._binary, self._scalar, self._unary, self._matmul, self._reduce,
         self._reshape, self._transpose, self._slice, self._concat, self._switch,
         self._drop, self._check_one][choice]()

    def _binary(self):
        name = ["add", "subtract", "multiply", "maximum", "minimum"][self.rng.integers(5)]
        self.apply(lambda a, b: getattr(mv, name)(a, b) % 7,
                   lambda a, b: getattr(np, name)(a, b) % 7, self.pick(), self.pick())

    def _scalar(self):
        k = int(self.rng.integers(-3, 4))
        self.apply(lambda a: (k - a * 2) % 5, lambda a: (k - a * 2) % 5, self.pick())

    def _unary(self):
        self.apply(lambda a: mv.square(-abs(a)) % 11, lambda a: np.square(-abs(a)) % 11,
                   self.pick())

    def _matmul(self):
        self.apply(lambda a, b: (a @ b) % 7, lambda a, b: (a @ b) % 7, self.pick(),
                   self.pick())

    def _reduce(self):
        name = ["sum", "max", "min"][self.rng.integers(3)]
        axis = [None, 0, -1, (0, 1)][self.rng.integers(4)]
        keep = bool(self.rng.integers(2))
        operand = self.pick()
        if axis is not None and np.ndim(operand[1]) < (2 if axis == (0, 1) else 1):
            axis = None
        self.apply(lambda a: getattr(a, name)(axis=axis, keepdims=keep),
                   lambda a: getattr(a, name)(axis=axis, keepdims=keep), operand)

    def _reshape(self):
        x, ref = self.pick()
        shapes = [s for s in SHAPES if np.prod(s) == ref.size] + [(-1,)]
        shape = shapes[self.rng.integers(len(shapes))]
        self.apply(lambda a: a.reshape(shape), lambda a: a.reshape(shape), (x, ref))

    def _transpose(self):
        self.apply(lambda a: a.T, lambda a: a.T, self.pick())

    def _slice(self):
        x, ref = self.pick()
        if ref.ndim == 0:
            return
        start = int(self.rng.integers(ref.shape[0]))
        index = (slice(start, None),) + (slice(None, None, -1),) * (ref.ndim > 1)
        self.apply(lambda a: a[index], lambda a: a[index], (x, ref))

    def _concat(self):
        self.apply(lambda a, b: mv.concatenate([a, b], axis=0),
                   lambda a, b: np.concatenate([a, b], axis=0), self.pick(), self.pick())

    def _switch(self):
        mv.set_device(self.devices[self.rng.integers(len(self.devices))])
        if self.rng.integers(2):
            x, ref = self.pick()
            self.pool.append((x.to(self.devices[self.rng.integers(len(self.devices))]), ref))

    def _drop(self):
        self.pool.pop(self.rng.integers(len(self.pool)))

    def _check_one(self):
        x, ref = self.pick()
        np.testing.assert_array_equal(x.to_numpy(), ref)

    def run(self, n_ops: int) -> None:
        for _ in range(n_ops):
            self.step()
            while len(self.pool) > self.max_live:
                self._drop()
        for x, ref in self.pool:
            np.testing.assert_array_equal(x.to_numpy(), ref)


@pytest.mark.parametrize("seed", range(N_SEEDS))
def test_random_program_matches_numpy(runtime, seed):
    _, devices = runtime
    program = Program(seed, devices)
    program.run(N_OPS)
    assert_settled(*(x for x, _ in program.pool))
    del program
    assert_settled()
