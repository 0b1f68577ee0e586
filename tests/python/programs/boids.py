"""A flock of boids: separation, alignment and cohesion from pairwise
offsets (np.subtract.outer), with divisions guarded by where=."""
import numpy as np


class Flock:
    def __init__(self, n, seed=0, radius=0.1, max_speed=0.03):
        rng = np.random.default_rng(seed)
        self.pos = rng.random((n, 2))
        self.vel = (rng.random((n, 2)) - 0.5) * max_speed
        self.radius, self.max_speed = radius, max_speed

    def step(self, dt=1.0):
        dx = np.subtract.outer(self.pos[:, 0], self.pos[:, 0])
        dy = np.subtract.outer(self.pos[:, 1], self.pos[:, 1])
        dist = np.hypot(dx, dy)
        near = (dist > 0) & (dist < self.radius)
        count = near.sum(axis=1)
        # Cohesion: toward the mean of the neighbours.
        mean = np.zeros_like(self.pos)
        np.divide(near @ self.pos, count[:, None], out=mean, where=count[:, None] > 0)
        cohesion = np.where(count[:, None] > 0, mean - self.pos, 0.0) * 0.01
        # Alignment: toward the neighbours' mean velocity.
        avg_vel = np.zeros_like(self.vel)
        np.divide(near @ self.vel, count[:, None], out=avg_vel, where=count[:, None] > 0)
        alignment = np.where(count[:, None] > 0, avg_vel - self.vel, 0.0) * 0.05
        # Separation: away from those too close, weighted by 1 / distance.
        close = near & (dist < self.radius / 2)
        w = np.divide(1.0, dist, out=np.zeros_like(dist), where=close)
        separation = np.stack([(dx * w).sum(axis=1), (dy * w).sum(axis=1)], axis=1) * 0.001
        self.vel += cohesion + alignment + separation
        speed = np.linalg.norm(self.vel, axis=1, keepdims=True)
        self.vel *= np.minimum(1.0, self.max_speed / np.maximum(speed, 1e-12))
        self.pos += self.vel * dt
        self.pos %= 1.0
        return self.pos
