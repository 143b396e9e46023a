"""A selection of idioms from Nicolas P. Rougier's "100 NumPy exercises" (MIT — the
questions, answered in our own code): checkerboards by strided assignment and
``np.tile``, ``np.unravel_index``, ``np.ndenumerate``/``np.ndindex``, ``np.add.at``
against ``np.bincount``, the most frequent value, ``np.unique`` with counts and rows,
moving averages by ``np.cumsum`` and ``sliding_window_view``, the n largest values by
``np.argpartition``, ``np.meshgrid``, Cauchy matrices by ``np.subtract.outer``,
``np.einsum`` identities, closest values, ``np.where``, ``np.diff``, ``np.percentile``,
dtype limits, read-only arrays, and printing with ``np.set_printoptions``. Plain NumPy;
run by import swap."""
import numpy as np

R = {}
np.random.seed(100)
Z = np.zeros(10)
Z[4] = 1
R["reversed"] = np.arange(10, 50)[::-1][:5]
R["nonzero"] = np.nonzero([1, 2, 0, 0, 4, 0])[0]
C = np.zeros((8, 8), dtype=int)
C[1::2, ::2] = 1
C[::2, 1::2] = 1
R["checkerboard"] = C
R["tile_same"] = bool(np.array_equal(C, np.tile(np.array([[0, 1], [1, 0]]), (4, 4))))
R["bordered"] = np.pad(np.ones((3, 3)), pad_width=1, mode="constant", constant_values=0)
R["diag_below"] = np.diag(1 + np.arange(4), k=-1)
R["unravel"] = [int(i) for i in np.unravel_index(99, (6, 7, 8))]
R["ravel"] = int(np.ravel_multi_index((1, 5, 3), (6, 7, 8)))

X = np.random.random((5, 5))
R["normalized"] = (X - np.mean(X)) / np.std(X)
R["minmax"] = (X - X.min()) / (X.max() - X.min())
V = np.random.random(10)
V[V.argmax()] = 0
R["max_replaced"] = V
R["closest"] = float(V[np.abs(V - 0.5).argmin()])

P = np.random.random((10, 2))
x, y = P[:, 0], P[:, 1]
R["polar"] = np.stack([np.sqrt(x**2 + y**2), np.arctan2(y, x)], axis=1)
D = np.sqrt(((P[:, None, :] - P[None, :, :]) ** 2).sum(axis=-1))
R["distances"] = D
R["cauchy"] = 1.0 / np.subtract.outer(np.arange(1, 5), np.arange(5, 9) + 0.5)
gx, gy = np.meshgrid(np.linspace(-1, 1, 5), np.linspace(-1, 1, 5))
R["gaussian"] = np.exp(-((np.sqrt(gx * gx + gy * gy) - 0.0) ** 2 / (2.0 * 1.0**2)))

grid_sum = 0.0
for index, value in np.ndenumerate(np.arange(6).reshape(2, 3)):
    grid_sum += index[0] * 10 + index[1] * value
R["ndenumerate"] = grid_sum
R["ndindex"] = [list(i) for i in np.ndindex(2, 1, 2)]

I = np.random.randint(0, 10, 30)
F = np.zeros(10)
np.add.at(F, I, 1)
R["add_at"] = F
R["add_at_agrees"] = bool(np.array_equal(F, np.bincount(I, minlength=10)))
R["most_frequent"] = int(np.bincount(I).argmax())
values, counts = np.unique(I, return_counts=True)
R["unique"] = values
R["counts"] = counts
R["repeat_back"] = np.repeat(values, counts)
rows = np.random.randint(0, 2, (8, 3))
R["unique_rows"] = np.unique(rows, axis=0)

S = np.arange(20, dtype=float) ** 1.5
c = np.cumsum(S)
c[3:] = c[3:] - c[:-3]
R["moving_average"] = c[2:] / 3
R["windows_agree"] = bool(np.allclose(
    np.lib.stride_tricks.sliding_window_view(S, 3).mean(axis=-1), c[2:] / 3))
W = np.random.permutation(100)
R["largest5"] = np.sort(W[np.argpartition(-W, 5)[:5]])
R["smallest3"] = np.sort(W[np.argpartition(W, 3)[:3]])

A = np.random.uniform(0, 1, (4, 4))
B = np.random.uniform(0, 1, (4, 4))
R["trace"] = float(np.einsum("ii", A))
R["diag_product"] = np.einsum("ij,ji->i", A, B)
R["einsum_agrees"] = bool(np.allclose(np.einsum("ij,jk->ik", A, B), A @ B))
A[[0, 1]] = A[[1, 0]]
R["swapped"] = A
R["sorted_by_col"] = B[B[:, 1].argsort()]
R["where"] = np.where(A > 0.5, A, -1.0)
R["diff"] = np.diff(np.array([1, 4, 9, 16, 25]), n=2)
R["percentile"] = np.percentile(S, [10, 50, 90])
T = S.copy()
T[(3 < T) & (T < 8)] *= -1
R["sign_flip"] = T[:10]
R["isnan"] = int(np.isnan(np.array([0, np.nan, 1, np.nan])).sum())
R["int8_min"] = int(np.iinfo(np.int8).min)
R["f32_eps"] = float(np.finfo(np.float32).eps)

frozen = np.zeros(3)
frozen.flags.writeable = False
try:
    frozen[0] = 1
    R["read_only"] = False
except ValueError:
    R["read_only"] = True

np.set_printoptions(precision=3, suppress=True)
R["printed"] = str(np.array([1 / 3, 2e-6, 1e3]))
R["repr"] = repr(np.arange(4).reshape(2, 2))
np.set_printoptions(precision=8, suppress=False)
RESULT = R
