"""Stable fluids (Stam) on an n x n grid: diffusion by Gauss-Seidel-like
Jacobi sweeps, semi-Lagrangian advection that reads the field at integer
index arrays, and a pressure projection."""
import numpy as np


def set_bnd(b, x):
    x[0, 1:-1] = -x[1, 1:-1] if b == 2 else x[1, 1:-1]
    x[-1, 1:-1] = -x[-2, 1:-1] if b == 2 else x[-2, 1:-1]
    x[1:-1, 0] = -x[1:-1, 1] if b == 1 else x[1:-1, 1]
    x[1:-1, -1] = -x[1:-1, -2] if b == 1 else x[1:-1, -2]
    x[0, 0] = 0.5 * (x[1, 0] + x[0, 1])
    x[0, -1] = 0.5 * (x[1, -1] + x[0, -2])
    x[-1, 0] = 0.5 * (x[-2, 0] + x[-1, 1])
    x[-1, -1] = 0.5 * (x[-2, -1] + x[-1, -2])


def lin_solve(b, x, x0, a, c, iters=10):
    for _ in range(iters):
        x[1:-1, 1:-1] = (x0[1:-1, 1:-1] + a * (x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:])) / c
        set_bnd(b, x)


def diffuse(b, x, x0, diff, dt):
    n = x.shape[0] - 2
    a = dt * diff * n * n
    lin_solve(b, x, x0, a, 1 + 4 * a)


def advect(b, d, d0, u, v, dt):
    n = d.shape[0] - 2
    dt0 = dt * n
    i, j = np.meshgrid(np.arange(1, n + 1), np.arange(1, n + 1), indexing="ij")
    x = np.clip(i - dt0 * u[1:-1, 1:-1], 0.5, n + 0.5)
    y = np.clip(j - dt0 * v[1:-1, 1:-1], 0.5, n + 0.5)
    i0 = x.astype(int)
    j0 = y.astype(int)
    i1, j1 = i0 + 1, j0 + 1
    s1, t1 = x - i0, y - j0
    s0, t0 = 1 - s1, 1 - t1
    d[1:-1, 1:-1] = s0 * (t0 * d0[i0, j0] + t1 * d0[i0, j1]) + s1 * (t0 * d0[i1, j0] + t1 * d0[i1, j1])
    set_bnd(b, d)


def project(u, v, p, div):
    n = u.shape[0] - 2
    h = 1.0 / n
    div[1:-1, 1:-1] = -0.5 * h * (u[2:, 1:-1] - u[:-2, 1:-1] + v[1:-1, 2:] - v[1:-1, :-2])
    p[...] = 0
    set_bnd(0, div)
    set_bnd(0, p)
    lin_solve(0, p, div, 1, 4)
    u[1:-1, 1:-1] -= 0.5 * (p[2:, 1:-1] - p[:-2, 1:-1]) / h
    v[1:-1, 1:-1] -= 0.5 * (p[1:-1, 2:] - p[1:-1, :-2]) / h
    set_bnd(1, u)
    set_bnd(2, v)


def vel_step(u, v, u0, v0, visc, dt):
    u += dt * u0
    v += dt * v0
    u0, u = u.copy(), u0
    diffuse(1, u, u0, visc, dt)
    v0, v = v.copy(), v0
    diffuse(2, v, v0, visc, dt)
    project(u, v, u0, v0)
    u0[...], v0[...] = u, v
    advect(1, u, u0, u0, v0, dt)
    advect(2, v, v0, u0, v0, dt)
    project(u, v, u0, v0)
    return u, v


def dens_step(x, x0, u, v, diff, dt):
    x += dt * x0
    x0[...] = x
    diffuse(0, x, x0, diff, dt)
    x0[...] = x
    advect(0, x, x0, u, v, dt)
    return x
