"""Static lists built while reading the spec: list literals of arrays, list comprehensions
(with an `if` on Python values, nested clauses), zip(*lists), map with a lambda, list(),
len() and slicing of lists, and np.hstack / np.vstack / np.concatenate of them."""
import numpy as np

DIMS = dict(M=4, N=6)


def split_heads(x, n):
    return np.split(x, n, axis=-1)


def static_lists(x: "f32[M, N]", y: "f32[M, N]") -> ("f32[M, N]", "f32[M, 2]", "f32[10, N]", "f32[M, 3]"):
    heads = split_heads(x, 2)                                   # a list of two [M, N/2]
    scaled = [h * (k + 1) for k, h in enumerate(heads)]
    merged = np.hstack(scaled)
    pairs = list(zip(*[heads, split_heads(y, 2)]))              # [(x0, y0), (x1, y1)]
    sums = list(map(lambda p: p[0] + p[1], pairs))
    merged = merged + np.concatenate(sums, axis=-1)
    add_bias = lambda t, b=1.0: t + b
    cols = [add_bias(x[:, k:k + 1]) for k in range(len(heads)) if k < 5]
    firsts = np.hstack(cols)
    rows = np.vstack([x[:2], y[:2], x[0], y[1], x[2:4] * 2.0, y[:2]][:len(heads) + 4])
    grid = [x[:, i:i + 1] * j for i in range(3) for j in (1.0, 2.0) if j > 1.0]
    return merged, firsts, rows, np.concatenate(grid, axis=1)
