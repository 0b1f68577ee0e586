"""A gravitational N-body system integrated by velocity Verlet (leapfrog),
with Plummer softening; the state is updated in place."""
import numpy as np

G = 1.0


def accelerations(pos, mass, eps=0.05):
    d = pos[None, :, :] - pos[:, None, :]
    r2 = (d ** 2).sum(-1) + eps ** 2
    inv_r3 = r2 ** -1.5
    np.fill_diagonal(inv_r3, 0.0)
    return G * (d * (inv_r3 * mass[None, :])[:, :, None]).sum(axis=1)


def step(pos, vel, mass, dt):
    acc = accelerations(pos, mass)
    vel += 0.5 * dt * acc
    pos += dt * vel
    acc = accelerations(pos, mass)
    vel += 0.5 * dt * acc
    kinetic = 0.5 * (mass * (vel ** 2).sum(-1)).sum()
    return kinetic
