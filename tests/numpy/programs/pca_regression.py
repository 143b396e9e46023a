"""PCA and linear regression from scratch, as data-science tutorials write them: PCA by
the eigen-decomposition of ``np.cov`` and again by ``np.linalg.svd`` of the centred data
(signs fixed as scikit-learn's ``svd_flip`` does — BSD-3, the idea, not its code), the
explained-variance ratio and a reconstruction; ordinary least squares in closed form by
``np.linalg.lstsq``, by the normal equations and by ``np.linalg.pinv``, ridge
regression, R^2 and ``np.corrcoef``. Plain NumPy; run by import swap."""
import numpy as np

rng = np.random.default_rng(0)
n = 200
latent = rng.standard_normal((n, 2)) * np.array([3.0, 1.0])
mixing = np.array([[1.0, 0.5, 0.2, 0.0], [0.0, 1.0, -0.4, 0.6]])
data = latent @ mixing + 0.1 * rng.standard_normal((n, 4)) + np.array([1.0, -2.0, 0.5, 3.0])

# PCA through the covariance matrix.
mean = data.mean(axis=0)
centred = data - mean
cov = np.cov(centred, rowvar=False)
eigenvalues, eigenvectors = np.linalg.eigh(cov)
order = np.argsort(eigenvalues)[::-1]
eigenvalues, eigenvectors = eigenvalues[order], eigenvectors[:, order]
explained = eigenvalues / eigenvalues.sum()

# PCA through the SVD, with deterministic signs.
U, s, Vt = np.linalg.svd(centred, full_matrices=False)
signs = np.sign(U[np.argmax(np.abs(U), axis=0), range(U.shape[1])])
U, Vt = U * signs, Vt * signs[:, np.newaxis]
svd_variance = s**2 / (n - 1)
scores = centred @ Vt[:2].T
reconstruction = scores @ Vt[:2] + mean
reconstruction_error = np.mean((data - reconstruction) ** 2)
axes_agree = np.allclose(np.abs(Vt[:2]), np.abs(eigenvectors[:, :2].T))

# Linear regression y = X w + b.
X = rng.uniform(-1, 1, size=(n, 3))
true_w = np.array([2.0, -1.0, 0.5])
y = X @ true_w + 0.7 + 0.1 * rng.standard_normal(n)
A = np.column_stack([np.ones(n), X])
coef, residuals, rank, singular = np.linalg.lstsq(A, y, rcond=None)
normal = np.linalg.inv(A.T @ A) @ A.T @ y
pinv = np.linalg.pinv(A) @ y
lam = 0.5
ridge = np.linalg.solve(A.T @ A + lam * np.diag([0.0, 1.0, 1.0, 1.0]), A.T @ y)
prediction = A @ coef
r2 = 1 - np.sum((y - prediction) ** 2) / np.sum((y - y.mean()) ** 2)
corr = np.corrcoef(X.T, y)

RESULT = {
    "mean": mean,
    "cov": cov,
    "eigenvalues": eigenvalues,
    "explained": explained,
    "singular_values": s,
    "variance_agrees": bool(np.allclose(svd_variance, eigenvalues)),
    "components": Vt,
    "scores_head": scores[:5],
    "reconstruction_error": float(reconstruction_error),
    "axes_agree": bool(axes_agree),
    "coef": coef,
    "residuals": residuals,
    "rank": int(rank),
    "normal_gap": float(np.abs(normal - coef).max()),
    "pinv_gap": float(np.abs(pinv - coef).max()),
    "ridge": ridge,
    "r2": float(r2),
    "corr": corr,
}
