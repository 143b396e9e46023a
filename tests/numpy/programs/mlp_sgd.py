"""A small MLP on synthetic "digits", trained with minibatch SGD and in-place updates
through a parameter list (``for p, dp in zip(params, grads): p -= lr * dp``): the edit a
user makes that silently trained nothing when arrays were immutable. Plain NumPy; run by
import swap."""
import numpy as np

np.random.seed(3)
n, d, hidden, k = 512, 64, 32, 10
centers = np.random.randn(k, d)
labels = np.random.randint(0, k, size=n)
X = centers[labels] + 0.5 * np.random.randn(n, d)
Y = np.eye(k)[labels]

W1 = np.random.randn(d, hidden) * np.sqrt(2.0 / d)
b1 = np.zeros(hidden)
W2 = np.random.randn(hidden, k) * np.sqrt(2.0 / hidden)
b2 = np.zeros(k)
params = [W1, b1, W2, b2]
lr, batch = 0.05, 64
losses = []
for epoch in range(6):
    order = np.random.permutation(n)
    for start in range(0, n, batch):
        idx = order[start:start + batch]
        x, t = X[idx], Y[idx]
        h = x @ W1 + b1
        a = np.maximum(h, 0)
        z = a @ W2 + b2
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        p = e / e.sum(axis=1, keepdims=True)
        loss = -np.sum(t * np.log(p + 1e-12)) / len(idx)
        dz = (p - t) / len(idx)
        dW2 = a.T @ dz
        db2 = dz.sum(axis=0)
        da = dz @ W2.T
        da[h <= 0] = 0
        dW1 = x.T @ da
        db1 = da.sum(axis=0)
        for param, dparam in zip(params, [dW1, db1, dW2, db2]):
            param -= lr * dparam
    losses.append(float(loss))
accuracy = float(np.mean(np.argmax(np.maximum(X @ W1 + b1, 0) @ W2 + b2, axis=1) == labels))
RESULT = {"losses": losses, "accuracy": accuracy, "W2": np.asarray(W2)}
