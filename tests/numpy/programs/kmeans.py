"""k-means clustering from scratch, as the common NumPy tutorials write it: blobs drawn
with ``default_rng().normal`` around given centres, k-means++ seeding with
``rng.choice(p=...)``, Lloyd iterations with a distance matrix by broadcasting and
``np.linalg.norm(..., axis=2)``, labels by ``np.argmin``, new centroids as per-cluster
means and again by ``np.bincount`` with weights, cluster sizes, inertia, and the elbow
over k. Plain NumPy; run by import swap."""
import numpy as np

rng = np.random.default_rng(42)
true_centers = np.array([[0.0, 0.0], [5.0, 5.0], [0.0, 6.0], [6.0, -1.0]])
X = np.vstack([rng.normal(loc=c, scale=0.8, size=(60, 2)) for c in true_centers])
rng.shuffle(X)


def kmeans_pp(X, k, rng):
    centroids = [X[rng.integers(len(X))]]
    for _ in range(1, k):
        d2 = np.min(((X[:, None, :] - np.array(centroids)[None, :, :]) ** 2).sum(-1), axis=1)
        centroids.append(X[rng.choice(len(X), p=d2 / d2.sum())])
    return np.array(centroids)


def kmeans(X, k, rng, max_iter=50):
    centroids = kmeans_pp(X, k, rng)
    for iteration in range(max_iter):
        distances = np.linalg.norm(X[:, np.newaxis, :] - centroids[np.newaxis, :, :], axis=2)
        labels = np.argmin(distances, axis=1)
        new_centroids = np.array([X[labels == j].mean(axis=0) for j in range(k)])
        if np.allclose(new_centroids, centroids):
            break
        centroids = new_centroids
    inertia = np.sum((X - centroids[labels]) ** 2)
    return centroids, labels, inertia, iteration + 1


K = 4
centroids, labels, inertia, iterations = kmeans(X, K, rng)
sizes = np.bincount(labels, minlength=K)
by_bincount = np.stack([np.bincount(labels, weights=X[:, d], minlength=K) for d in range(2)],
                       axis=1) / sizes[:, None]
order = np.lexsort((centroids[:, 1], centroids[:, 0]))

elbow = []
for k in range(1, 7):
    _, _, inertia_k, _ = kmeans(X, k, np.random.default_rng(k))
    elbow.append(float(inertia_k))

# Distance of each true centre to its nearest found centroid.
gaps = np.sqrt(((true_centers[:, None] - centroids[None]) ** 2).sum(-1)).min(axis=1)

RESULT = {
    "centroids": centroids[order],
    "labels": labels,
    "sizes": sizes,
    "same_means": bool(np.allclose(by_bincount, centroids)),
    "inertia": float(inertia),
    "iterations": iterations,
    "elbow": elbow,
    "gaps": gaps,
}
