"""k-means (Lloyd's algorithm), one assignment-and-update step a call."""
import numpy as np


def kmeans_step(X, centers):
    d2 = ((X[:, None, :] - centers[None, :, :]) ** 2).sum(axis=-1)
    labels = np.argmin(d2, axis=1)
    k = centers.shape[0]
    onehot = (labels[:, None] == np.arange(k)[None, :]).astype(X.dtype)
    counts = onehot.sum(axis=0)
    sums = onehot.T @ X
    new = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], centers)
    inertia = d2[np.arange(X.shape[0]), labels].sum()
    return new, labels, inertia


def kmeans(X, k, iters=10, seed=0):
    rng = np.random.default_rng(seed)
    centers = X[rng.choice(len(X), k, replace=False)]
    for _ in range(iters):
        centers, labels, inertia = kmeans_step(X, centers)
    return centers, labels, inertia
