"""Linear algebra written out as textbooks teach it: Gaussian elimination with partial
pivoting and back substitution (row swaps by ``A[[k, p]] = A[[p, k]]``, one row at a
time), an LU factorisation with a permutation vector (the outer-product update of the
trailing block), the conjugate gradient method, and power iteration with a Rayleigh
quotient — each checked against ``numpy.linalg``. Plain NumPy; run by import swap."""
import numpy as np


def gauss_solve(A, b):
    A, b = A.astype(float), b.astype(float)
    n = len(b)
    for k in range(n - 1):
        p = k + np.argmax(np.abs(A[k:, k]))
        if p != k:
            A[[k, p]] = A[[p, k]]
            b[[k, p]] = b[[p, k]]
        for i in range(k + 1, n):
            factor = A[i, k] / A[k, k]
            A[i, k:] = A[i, k:] - factor * A[k, k:]
            b[i] = b[i] - factor * b[k]
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - np.dot(A[i, i + 1:], x[i + 1:])) / A[i, i]
    return x


def lu_factor(A):
    LU = A.copy()
    n = LU.shape[0]
    perm = np.arange(n)
    for k in range(n - 1):
        p = k + int(np.argmax(np.abs(LU[k:, k])))
        LU[[k, p], :] = LU[[p, k], :]
        perm[[k, p]] = perm[[p, k]]
        LU[k + 1:, k] /= LU[k, k]
        LU[k + 1:, k + 1:] -= np.outer(LU[k + 1:, k], LU[k, k + 1:])
    return LU, perm


def lu_solve(LU, perm, b):
    n = len(b)
    y = b[perm].astype(float)
    for i in range(1, n):
        y[i] -= LU[i, :i] @ y[:i]
    for i in range(n - 1, -1, -1):
        y[i] = (y[i] - LU[i, i + 1:] @ y[i + 1:]) / LU[i, i]
    return y


def conjugate_gradient(A, b, tol=1e-10):
    x = np.zeros_like(b)
    r = b - A @ x
    p = r.copy()
    rs = r @ r
    for it in range(1, len(b) + 1):
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        rs_new = r @ r
        if np.sqrt(rs_new) < tol:
            break
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x, it


def power_iteration(A, iterations=200):
    v = np.ones(A.shape[0]) / np.sqrt(A.shape[0])
    for _ in range(iterations):
        w = A @ v
        v = w / np.linalg.norm(w)
    return v @ A @ v, v


rng = np.random.default_rng(11)
n = 8
A = rng.standard_normal((n, n))
b = rng.standard_normal(n)
x_gauss = gauss_solve(A, b)
LU, perm = lu_factor(A)
x_lu = lu_solve(LU, perm, b)
L = np.tril(LU, -1) + np.eye(n)
U = np.triu(LU)
det_lu = np.prod(np.diag(U))

M = rng.standard_normal((n, n))
S = M @ M.T + n * np.eye(n)                     # symmetric positive definite
x_cg, cg_iterations = conjugate_gradient(S, b)
lam, v = power_iteration(S)

RESULT = {
    "x_gauss": x_gauss,
    "gauss_ok": bool(np.allclose(x_gauss, np.linalg.solve(A, b))),
    "x_lu": x_lu,
    "perm": perm,
    "reconstruct": float(np.abs(L @ U - A[perm]).max()),
    "det_ratio": float(abs(det_lu / np.linalg.det(A))),
    "x_cg": x_cg,
    "cg_iterations": cg_iterations,
    "cg_ok": bool(np.allclose(S @ x_cg, b)),
    "lambda_max": float(lam),
    "lambda_gap": float(abs(lam - np.linalg.eigvalsh(S)[-1])),
    "v": v,
    "cond": float(np.linalg.cond(S)),
}
