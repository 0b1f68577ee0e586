"""A small Mamba-style selective state-space block, written with einops."""
import numpy as np
from einops import einsum, rearrange, repeat


def silu(x):
    return x / (1 + np.exp(-x))


def softplus(x):
    return np.log1p(np.exp(x))


def init(d_model=16, d_state=8, d_conv=4, expand=2, seed=0):
    rng = np.random.default_rng(seed)
    d_inner = expand * d_model
    return {
        "in_proj": rng.standard_normal((d_model, 2 * d_inner)) * 0.1,
        "conv_w": rng.standard_normal((d_inner, d_conv)) * 0.1,
        "conv_b": np.zeros(d_inner),
        "x_proj": rng.standard_normal((d_inner, 1 + 2 * d_state)) * 0.1,
        "dt_proj": rng.standard_normal((1, d_inner)) * 0.1,
        "A_log": np.log(repeat(np.arange(1, d_state + 1, dtype=np.float64), "n -> d n", d=d_inner)),
        "D": np.ones(d_inner),
        "out_proj": rng.standard_normal((d_inner, d_model)) * 0.1,
    }


class Mamba:
    def __init__(self, params):
        self.p = params

    def __call__(self, x):
        p = self.p
        (b, l, d) = x.shape
        xz = x @ p["in_proj"]
        x, z = np.split(xz, 2, axis=-1)
        x = rearrange(x, "b l d -> b d l")
        k = p["conv_w"].shape[1]
        conv = np.zeros_like(x)
        for c in range(x.shape[1]):
            for bi in range(b):
                conv[bi, c] = np.convolve(x[bi, c], p["conv_w"][c], mode="full")[:l]
        x = rearrange(conv + p["conv_b"][:, None], "b d l -> b l d")
        x = silu(x)
        y = self.ssm(x)
        y = y * silu(z)
        return y @ p["out_proj"]

    def ssm(self, x):
        p = self.p
        A = -np.exp(p["A_log"])
        n = A.shape[1]
        dbc = x @ p["x_proj"]
        delta, B, C = np.split(dbc, [1, 1 + n], axis=-1)
        delta = softplus(delta @ p["dt_proj"])
        dA = np.exp(einsum(delta, A, "b l d, d n -> b l d n"))
        dBu = einsum(delta, B, x, "b l d, b l n, b l d -> b l d n")
        h = np.zeros((x.shape[0], x.shape[2], n))
        ys = []
        for i in range(x.shape[1]):
            h = dA[:, i] * h + dBu[:, i]
            ys.append(einsum(h, C[:, i, :], "b d n, b n -> b d"))
        y = np.stack(ys, axis=1)
        return y + x * p["D"]
