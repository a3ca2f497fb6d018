"""Python-level control flow unrolled while reading the spec: `for` over range (a constant
and a literal size from the annotation), over a tuple, zip and enumerate; the loop variable in
arithmetic and indexing; `if`/`elif`/`else` on constants, dims and loop variables; a return
inside a loop."""
import numpy as np

DIMS = dict(M=4, N=6)

N_STEPS = 3
MODE = "tanh"


def poly(x, degree):
    acc = np.zeros_like(x)
    for k in range(degree + 1):
        acc = acc + x ** k / (k + 1)
    return acc


def first_positive_scale(scales):
    for s in scales:
        if s > 0:
            return s
    return 1.0


def static_loops(x: "f32[M, N]", w: "f32[3, N]") -> ("f32[M, N]", "f32[M, N]", "f32[M, N]"):
    y = x
    for i in range(N_STEPS):
        if i == 0:
            y = y * 0.5
        elif i % 2 == 1:
            y = y + w[i]
        else:
            y = y - w[N_STEPS - 1 - i] * i
    for i in range(w.shape[0]):  # a literal size in the annotation: a constant count
        y = y + w[i, :] * (i + 1)
    if MODE == "tanh":
        z = np.tanh(x)
    else:
        z = x
    if x.shape[1] > 4 and len(x.shape) == 2:
        z = z * 2.0
    for a, b in zip((1.0, 2.0), (0.5, -0.5)):
        z = z * a + b
    for j, row in enumerate(w):
        z = z + row * j
    u = poly(x, 2) * first_positive_scale((-1.0, 0.0, 3.0))
    return y, z, u
