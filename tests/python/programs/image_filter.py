"""An image filter: a separable Gaussian blur, then Sobel gradients and
their magnitude, then a threshold."""
import numpy as np


def gaussian_kernel(sigma, radius):
    x = np.arange(-radius, radius + 1)
    k = np.exp(-(x ** 2) / (2 * sigma ** 2))
    return k / k.sum()


def blur(img, kernel):
    r = len(kernel) // 2
    padded = np.pad(img, r, mode="edge")
    h, w = img.shape
    rows = sum(kernel[i] * padded[i:i + h, r:r + w] for i in range(len(kernel)))
    padded = np.pad(rows, r, mode="edge")
    return sum(kernel[i] * padded[r:r + h, i:i + w] for i in range(len(kernel)))


def edges(img, sigma=1.0, threshold=0.1):
    smooth = blur(img, gaussian_kernel(sigma, 2))
    p = np.pad(smooth, 1, mode="edge")
    gx = (p[:-2, 2:] + 2 * p[1:-1, 2:] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[1:-1, :-2] + p[2:, :-2])
    gy = (p[2:, :-2] + 2 * p[2:, 1:-1] + p[2:, 2:]) - (p[:-2, :-2] + 2 * p[:-2, 1:-1] + p[:-2, 2:])
    mag = np.sqrt(gx ** 2 + gy ** 2)
    mag /= max(mag.max(), 1e-12)
    return mag, (mag > threshold).astype(np.uint8) * 255
