"""Logistic regression by batch gradient descent, as in many NumPy tutorials. Plain
NumPy; run by import swap."""
import numpy as np

rng = np.random.RandomState(42)
n, d = 200, 5
X = rng.normal(size=(n, d))
true_w = rng.uniform(-2, 2, size=d)
y = (X.dot(true_w) + 0.3 * rng.standard_normal(n) > 0).astype(np.float64)
X = np.hstack([np.ones((n, 1)), X])


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


w = np.zeros(d + 1)
lr = 0.1
history = []
for epoch in range(200):
    p = sigmoid(X @ w)
    grad = X.T.dot(p - y) / n
    w -= lr * grad
    if epoch % 40 == 0:
        loss = -np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))
        history.append(float(loss))
pred = sigmoid(X.dot(w)) > 0.5
RESULT = {"history": history, "w": np.asarray(w), "accuracy": float((pred == y).mean())}
