"""A two-layer MLP trained by minibatch gradient descent with momentum."""
import numpy as np


def init(n_in, n_hidden, n_out, seed=0):
    rng = np.random.default_rng(seed)
    return {"W1": rng.standard_normal((n_in, n_hidden)) * np.sqrt(2.0 / n_in), "b1": np.zeros(n_hidden),
            "W2": rng.standard_normal((n_hidden, n_out)) * np.sqrt(2.0 / n_hidden), "b2": np.zeros(n_out)}


def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def train_step(params, velocity, X, y, lr=0.1, momentum=0.9):
    n = X.shape[0]
    h = np.maximum(X @ params["W1"] + params["b1"], 0)
    probs = softmax(h @ params["W2"] + params["b2"])
    loss = -np.log(probs[np.arange(n), y] + 1e-12).mean()
    d = probs.copy()
    d[np.arange(n), y] -= 1
    d /= n
    grads = {"W2": h.T @ d, "b2": d.sum(axis=0)}
    dh = d @ params["W2"].T
    dh[h <= 0] = 0
    grads["W1"] = X.T @ dh
    grads["b1"] = dh.sum(axis=0)
    for k in params:
        velocity[k] *= momentum
        velocity[k] -= lr * grads[k]
        params[k] += velocity[k]
    return loss


def accuracy(params, X, y):
    h = np.maximum(X @ params["W1"] + params["b1"], 0)
    return (np.argmax(h @ params["W2"] + params["b2"], axis=1) == y).mean()
