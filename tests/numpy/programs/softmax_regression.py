"""Multinomial logistic (softmax) regression trained by full-batch gradient descent, in
the style of the UFLDL "Softmax Regression" exercise and the from-scratch tutorials that
follow it: one-hot targets by ``np.eye(K)[y]``, a numerically stable softmax
(``logits - logits.max(axis=1, keepdims=True)``), cross-entropy with L2 weight decay,
a numerical gradient check on a few entries, accuracy, and a confusion matrix filled
with ``np.add.at``. Plain NumPy; run by import swap."""
import numpy as np

rng = np.random.default_rng(3)
K, d, n = 4, 5, 240
means = rng.normal(0, 2.0, size=(K, d))
y = rng.integers(0, K, size=n)
X = means[y] + rng.standard_normal((n, d))
X = (X - X.mean(axis=0)) / X.std(axis=0)
Y = np.eye(K)[y]


def softmax(logits):
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=1, keepdims=True)


def loss_and_grad(W, b, X, Y, reg):
    P = softmax(X @ W + b)
    loss = -np.mean(np.sum(Y * np.log(P + 1e-12), axis=1)) + 0.5 * reg * np.sum(W * W)
    dlogits = (P - Y) / len(X)
    return loss, X.T @ dlogits + reg * W, dlogits.sum(axis=0)


W = 0.01 * rng.standard_normal((d, K))
b = np.zeros(K)
reg, lr = 1e-3, 0.5

# Check the analytic gradient against central differences at a few entries.
_, dW, _ = loss_and_grad(W, b, X, Y, reg)
checks = []
for i, j in [(0, 0), (2, 1), (4, 3)]:
    h = 1e-5
    W[i, j] += h
    plus, _, _ = loss_and_grad(W, b, X, Y, reg)
    W[i, j] -= 2 * h
    minus, _, _ = loss_and_grad(W, b, X, Y, reg)
    W[i, j] += h
    numeric = (plus - minus) / (2 * h)
    checks.append(float(abs(numeric - dW[i, j]) / max(1e-8, abs(numeric) + abs(dW[i, j]))))

history = []
for epoch in range(150):
    loss, dW, db = loss_and_grad(W, b, X, Y, reg)
    W -= lr * dW
    b -= lr * db
    if epoch % 30 == 0:
        history.append(round(float(loss), 12))

P = softmax(X @ W + b)
pred = np.argmax(P, axis=1)
confusion = np.zeros((K, K), dtype=np.int64)
np.add.at(confusion, (y, pred), 1)
per_class = np.diag(confusion) / confusion.sum(axis=1)
nll = -np.log(P[np.arange(n), y]).mean()
top2 = np.argsort(P, axis=1)[:, -2:][:, ::-1]

RESULT = {
    "gradient_check_ok": bool(max(checks) < 1e-6),
    "history": history,
    "W": W,
    "b": b,
    "accuracy": float(np.mean(pred == y)),
    "confusion": confusion,
    "per_class": per_class,
    "nll": float(nll),
    "top2_hit": float(np.mean(np.any(top2 == y[:, None], axis=1))),
    "one_hot_rows": Y[:3],
}
