"""Conway's Game of Life in the style of Nicolas P. Rougier's "From Python to NumPy"
(chapter "Code vectorization"; the book is CC BY-NC-SA 4.0 — the idea, not its code):
neighbour counts as the sum of eight shifted slices of a zero-bordered board, the rules
as boolean masks written back through a view of the interior, and a toroidal board whose
neighbours come from ``np.roll``. Plain NumPy; run by import swap."""
import numpy as np


def iterate(Z):
    # Neighbours of every interior cell: eight slices of the bordered board.
    N = (Z[0:-2, 0:-2] + Z[0:-2, 1:-1] + Z[0:-2, 2:] +
         Z[1:-1, 0:-2] + Z[1:-1, 2:] +
         Z[2:, 0:-2] + Z[2:, 1:-1] + Z[2:, 2:])
    birth = (N == 3) & (Z[1:-1, 1:-1] == 0)
    survive = ((N == 2) | (N == 3)) & (Z[1:-1, 1:-1] == 1)
    Z[...] = 0
    Z[1:-1, 1:-1][birth | survive] = 1
    return Z


def step_torus(Z):
    N = sum(np.roll(np.roll(Z, i, axis=0), j, axis=1)
            for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0))
    return ((N == 3) | ((Z == 1) & (N == 2))).astype(Z.dtype)


# A glider on a bordered 12 x 12 board: after 4 generations it moved one cell diagonally.
Z = np.zeros((12, 12), dtype=int)
Z[1:4, 1:4] = [[0, 1, 0],
               [0, 0, 1],
               [1, 1, 1]]
start = np.argwhere(Z)
for _ in range(4):
    iterate(Z)
moved = np.argwhere(Z) - start
glider_ok = bool(np.all(moved == 1))
for _ in range(8):
    iterate(Z)
glider_cells = np.argwhere(Z)

# A random soup on a torus, with the population of every generation.
rng = np.random.default_rng(7)
T = rng.integers(0, 2, size=(32, 32))
populations = [int(T.sum())]
for generation in range(40):
    T = step_torus(T)
    populations.append(int(np.count_nonzero(T)))

# A random bordered board, and a blinker (period 2).
B = np.pad(rng.random((20, 20)) < 0.3, 1).astype(np.int8)
blinker = np.zeros((5, 5), dtype=np.int8)
blinker[2, 1:4] = 1
period = [np.array_equal(iterate(blinker.copy()), blinker),
          np.array_equal(iterate(iterate(blinker.copy())), blinker)]
for _ in range(10):
    iterate(B)
rows, cols = np.nonzero(B)

RESULT = {
    "glider_ok": glider_ok,
    "glider_cells": glider_cells,
    "populations": populations,
    "torus": T,
    "period": [bool(p) for p in period],
    "bordered": B,
    "centroid": [float(rows.mean()), float(cols.mean())],
    "dtype": str(B.dtype),
}
