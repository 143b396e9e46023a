"""Randomized differential test of mutation: seeded random programs with views, in-place
operators, item/slice/mask/integer-array assignment, overlapping updates, device switches
and dropped handles run on minerva and on plain NumPy — whose own views alias exactly as
minerva's must — and are compared exactly. Values are small integers in float64, kept
small by ``% 7``, so every result is exact whatever the order of evaluation. A failure
names its seed."""
from __future__ import annotations

import numpy as np
import pytest

import minerva as mv
from tests.scheduler import test_differential
from tests.conftest import assert_settled

N_SEEDS = 50
N_OPS = 300
MAX_LIVE = 16
SHAPES = [(4,), (3, 4), (4, 4), (2, 3, 4), (4, 1), (1, 4)]


class Program(test_differential.Program):
    """A pool of (NArray, NumPy array) pairs; the NumPy side may be views of each other,
    as the minerva side may (pool, pick, new value, drop, check and run as in
    test_differential)."""

    max_live = MAX_LIVE

    def pick_nd(self, ndim: int = 1):
        candidates = [p for p in self.pool if p[1].ndim >= ndim and p[1].shape[0]]
        return candidates[self.rng.integers(len(candidates))] if candidates else None

    def both(self, mv_fn, np_fn, *operands, keep=True):
        """Run one step both ways; a ShapeError where NumPy raises ValueError/IndexError."""
        try:
            want = np_fn(*(ref for _, ref in operands))
        except (ValueError, IndexError):
            with pytest.raises((mv.ShapeError, IndexError)):
                mv_fn(*(x for x, _ in operands))
            return
        got = mv_fn(*(x for x, _ in operands))
        if keep and got is not None:
            assert got.shape == np.shape(want)
            self.pool.append((got, _same_layout(got, want, operands)))

    def step(self) -> None:
        if len(self.pool) < 2:
            return self.new_value()
        steps = [self._fresh, self._view, self._reshape, self._inplace, self._inplace_scalar,
                 self._set_basic, self._set_advanced, self._set_mask, self._get_advanced,
                 self._overlap, self._switch, self._drop, self._check_one, self.new_value]
        steps[self.rng.integers(len(steps))]()

    # ---- steps ----------------------------------------------------------------------

    def _fresh(self):
        name = ["add", "subtract", "multiply", "maximum"][self.rng.integers(4)]
        self.both(lambda a, b: getattr(mv, name)(a, b) % 7,
                  lambda a, b: getattr(np, name)(a, b) % 7, self.pick(), self.pick())

    def _view(self):
        pair = self.pick_nd(1)
        if pair is None:
            return
        index = self._basic_index(pair[1])
        kind = self.rng.integers(3)
        if kind == 0:
            self.both(lambda a: a[index], lambda a: a[index], pair)
        elif kind == 1:
            self.both(lambda a: a.T, lambda a: a.T, pair)
        else:
            self.both(lambda a: a[None, ...], lambda a: a[None, ...], pair)

    def _basic_index(self, ref):
        items = []
        for n in ref.shape[:2]:
            start = int(self.rng.integers(max(n, 1)))
            step = [1, 2, -1][self.rng.integers(3)]
            items.append(slice(start, None, step) if step > 0 else slice(None, None, -1))
        return tuple(items)

    def _reshape(self):
        x, ref = self.pick()
        shapes = [s for s in SHAPES if np.prod(s) == ref.size] + [(-1,)]
        shape = shapes[self.rng.integers(len(shapes))]
        self.both(lambda a: a.reshape(shape), lambda a: a.reshape(shape), (x, ref))

    def _inplace(self):
        target, source = self.pick(), self.pick()
        op = self.rng.integers(3)

        def run(a, b):
            if op == 0:
                a += b
            elif op == 1:
                a *= b
            else:
                a -= b
            a %= 7
            return a
        self.both(run, run, target, source, keep=False)

    def _inplace_scalar(self):
        k = float(self.rng.integers(-3, 4))

        def run(a):
            a *= k
            a += 2
            a %= 5
            return a
        self.both(run, run, self.pick(), keep=False)

    def _set_basic(self):
        pair = self.pick_nd(1)
        if pair is None:
            return
        index = self._basic_index(pair[1])
        value = self.pick() if self.rng.integers(2) else None
        k = float(self.rng.integers(-5, 6))
        if value is None:
            self.both(lambda a: a.__setitem__(index, k), lambda a: a.__setitem__(index, k),
                      pair, keep=False)
        else:
            self.both(lambda a, v: a.__setitem__(index, v),
                      lambda a, v: a.__setitem__(index, v), pair, value, keep=False)

    def _set_advanced(self):
        pair = self.pick_nd(1)
        if pair is None:
            return
        n = pair[1].shape[0]
        rows = list(self.rng.integers(-n, n, size=int(self.rng.integers(1, 4))))
        k = float(self.rng.integers(-5, 6))

        def run(a):
            a[rows] += k
            a[rows] = a[rows] % 7
            return a
        self.both(run, run, pair, keep=False)

    def _set_mask(self):
        k = float(self.rng.integers(-3, 4))

        def run(a):
            a[a > k] = k - 1
            return a
        self.both(run, run, self.pick(), keep=False)

    def _get_advanced(self):
        pair = self.pick_nd(1)
        if pair is None:
            return
        n = pair[1].shape[0]
        rows = self.rng.integers(-n, n, size=int(self.rng.integers(1, 5)))
        self.both(lambda a: a[mv.array(rows)], lambda a: a[rows], pair)
        self.both(lambda a: a[a > 1], lambda a: a[a > 1], pair)

    def _overlap(self):
        pair = self.pick_nd(1)
        if pair is None or pair[1].shape[0] < 2:
            return

        def run(a):
            a[1:] += a[:-1]
            a %= 7
            return a
        self.both(run, run, pair, keep=False)

    def _switch(self):
        mv.set_device(self.devices[self.rng.integers(len(self.devices))])
        if self.rng.integers(2):
            x, ref = self.pick()
            target = self.devices[self.rng.integers(len(self.devices))]
            same = x.device == target  # to() gives the array itself, else a copy
            self.pool.append((x.to(target), ref if same else ref.copy()))



def _same_layout(got, want, operands):
    """``want`` stored as minerva stores ``got`` when ``got`` is a fresh array: the memory
    layout of a fresh result (not its values, nor which arrays alias) may differ from
    NumPy's (doc/numpy.md, "Layout"), and layout decides whether a later reshape copies."""
    if any(got._storage is x._storage for x, _ in operands):
        return want
    if got.strides == want.strides:
        return want
    laid = np.empty_like(want, order="C") if got._view is None else np.empty_like(want.T).T
    laid[...] = want
    return laid


@pytest.mark.parametrize("seed", range(N_SEEDS))
def test_random_mutating_program_matches_numpy(runtime, seed):
    _, devices = runtime
    program = Program(seed, devices)
    program.run(N_OPS)
    mv.wait_for_all(timeout=60)
    del program
    assert_settled()
