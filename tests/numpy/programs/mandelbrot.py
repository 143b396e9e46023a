"""The Mandelbrot set by escape time, in the style of Nicolas P. Rougier's "From Python
to NumPy" (its NumPy version of the Mandelbrot set; the book is CC BY-NC-SA 4.0 — the
idea, not its code): a complex grid by broadcasting ``np.linspace`` rows and columns,
``Z = Z**2 + C`` restricted by a boolean mask of the points still bounded, escape counts
written through the mask, the smooth (normalised) iteration count with ``np.log2``, and
the area estimate of the set. Also a Julia set on the same grid, kept as a
``complex64`` array. Plain NumPy; run by import swap."""
import numpy as np


def mandelbrot(xmin, xmax, ymin, ymax, xn, yn, maxiter, horizon=2.0):
    X = np.linspace(xmin, xmax, xn, dtype=np.float64)
    Y = np.linspace(ymin, ymax, yn, dtype=np.float64)
    C = X + Y[:, None] * 1j
    N = np.zeros(C.shape, dtype=int)
    Z = np.zeros(C.shape, np.complex128)
    for n in range(maxiter):
        I = np.less(abs(Z), horizon)
        N[I] = n + 1
        Z[I] = Z[I] ** 2 + C[I]
    N[N == maxiter] = 0
    return Z, N


Z, N = mandelbrot(-2.25, 0.75, -1.25, 1.25, 60, 50, 40)
inside = N == 0
area = inside.mean() * 3.0 * 2.5

# Smooth colouring for the escaped points.
with np.errstate(invalid="ignore", divide="ignore"):
    log_abs = np.log(np.abs(Z))
    smooth = np.where(~inside, N + 1 - np.log2(log_abs / np.log(2.0)), 0.0)
smooth = np.nan_to_num(smooth, nan=0.0, posinf=0.0, neginf=0.0)

# A Julia set: every point iterated with the same c, in single precision.
c = np.complex64(-0.8 + 0.156j)
x = np.linspace(-1.5, 1.5, 48, dtype=np.float32)
J = (x[None, :] + 1j * x[:, None]).astype(np.complex64)
escape = np.full(J.shape, 30, dtype=np.int32)
for n in range(30):
    bounded = np.abs(J) <= 2
    J = np.where(bounded, J * J + c, J)
    escape[(np.abs(J) > 2) & (escape == 30)] = n

row_profile = N[N.shape[0] // 2]
histogram = np.bincount(N.ravel(), minlength=41)

RESULT = {
    "N": N,
    "area": float(area),
    "smooth_sum": float(smooth.sum()),
    "row_profile": row_profile,
    "histogram": histogram,
    "julia_dtype": str(J.dtype),
    "escape": escape,
    "julia_inside": int((escape == 30).sum()),
}
