"""Gaussian naive Bayes and AdaBoost with decision stumps, from scratch, in the style of
Erik Linder-Noren's "ML-From-Scratch" (MIT — the ideas, not its code): per-class means,
variances and priors with ``np.unique``, the log-likelihood of every sample under every
class by broadcasting, predictions by ``np.argmax``; a decision stump chosen by trying
every threshold of every feature at once (a matrix of predictions from
``np.where``), sample weights updated by ``np.exp(-alpha * y * h)``. Plain NumPy; run by
import swap."""
import numpy as np

rng = np.random.RandomState(7)
n_per = 80
X = np.concatenate([rng.normal([0.0, 0.0, 1.0], [1.0, 0.5, 1.0], size=(n_per, 3)),
                    rng.normal([2.0, 1.0, 1.5], [0.8, 0.7, 1.0], size=(n_per, 3)),
                    rng.normal([-1.0, 2.5, 0.0], [0.6, 0.6, 1.2], size=(n_per, 3))])
y = np.repeat(np.arange(3), n_per)
shuffle = rng.permutation(len(y))
X, y = X[shuffle], y[shuffle]
train, test = slice(0, 180), slice(180, None)


class GaussianNB:
    def fit(self, X, y):
        self.classes = np.unique(y)
        self.mean = np.array([X[y == c].mean(axis=0) for c in self.classes])
        self.var = np.array([X[y == c].var(axis=0) for c in self.classes]) + 1e-9
        self.prior = np.array([np.mean(y == c) for c in self.classes])
        return self

    def log_posterior(self, X):
        diff = X[:, None, :] - self.mean[None, :, :]
        log_like = -0.5 * np.sum(np.log(2 * np.pi * self.var) + diff**2 / self.var, axis=2)
        return log_like + np.log(self.prior)

    def predict(self, X):
        return self.classes[np.argmax(self.log_posterior(X), axis=1)]


nb = GaussianNB().fit(X[train], y[train])
nb_pred = nb.predict(X[test])
nb_accuracy = np.mean(nb_pred == y[test])
log_post = nb.log_posterior(X[test])
evidence = np.logaddexp.reduce(log_post, axis=1)
probabilities = np.exp(log_post - evidence[:, None])


def best_stump(X, y, w):
    best = (np.inf, 0, 0.0, 1)
    for feature in range(X.shape[1]):
        thresholds = np.unique(X[:, feature])
        h = np.where(X[None, :, feature] < thresholds[:, None], -1, 1)
        for polarity in (1, -1):
            errors = ((polarity * h != y) * w).sum(axis=1)
            i = np.argmin(errors)
            if errors[i] < best[0]:
                best = (errors[i], feature, thresholds[i], polarity)
    return best


# One class against the rest: class 1 (+1) against 0 and 2 (-1).
yb = np.where(y == 1, 1, -1)
Xtr, ytr = X[train], yb[train]
w = np.full(len(ytr), 1.0 / len(ytr))
stumps, scores = [], np.zeros(len(ytr))
for round_ in range(8):
    error, feature, threshold, polarity = best_stump(Xtr, ytr, w)
    alpha = 0.5 * np.log((1 - error) / (error + 1e-10))
    h = polarity * np.where(Xtr[:, feature] < threshold, -1, 1)
    w *= np.exp(-alpha * ytr * h)
    w /= w.sum()
    scores += alpha * h
    stumps.append([int(feature), float(threshold), int(polarity), float(alpha)])
test_scores = sum(a * p * np.where(X[test][:, f] < t, -1, 1) for f, t, p, a in stumps)
boost_accuracy = np.mean(np.sign(test_scores) == yb[test])

RESULT = {
    "mean": nb.mean,
    "var": nb.var,
    "prior": nb.prior,
    "nb_pred": nb_pred,
    "nb_accuracy": float(nb_accuracy),
    "probabilities": probabilities,
    "stumps": stumps,
    "train_accuracy": float(np.mean(np.sign(scores) == ytr)),
    "boost_accuracy": float(boost_accuracy),
    "weights": w,
}
