"""Dicts of arrays inside a spec, as picoGPT writes them: **kwargs from a dict built in the
spec, dict literals and dict(), dict.get with a default, f-strings as constant dict keys,
.items() in a loop and a dict comprehension."""
import numpy as np

DIMS = dict(M=4, N=6)


def linear(x, w, b):
    return x @ w + b


def norm(x, g, b, eps=1e-5):
    mu = np.mean(x, axis=-1, keepdims=True)
    var = np.var(x, axis=-1, keepdims=True)
    return g * (x - mu) / np.sqrt(var + eps) + b


def kwargs_dicts(x: "f32[M, N]", w0: "f32[N, N]", w1: "f32[N, N]", b: "f32[N]") -> ("f32[M, N]", "f32[M, N]"):
    weights = {"blocks.0.w": w0, "blocks.1.w": w1, "blocks.2.w": w0}
    params = {k: v for k, v in weights.items() if k != "blocks.2.w"}
    for i in range(2):
        c_fc = {"w": params[f"blocks.{i}.w"], "b": b * (i + 1)}
        x = linear(x, **c_fc)
    ln = dict(g=b, b=b * 0.5)
    opts = {"eps": 1e-3}
    y = norm(x, **ln, eps=opts.get("eps", 1e-5)) * opts.get("scale", 2.0)
    for name, v in {"a": 1.0, "b": 2.0}.items():
        if name == "b":
            y = y + v
    return x, y
