"""GPT-2's embedding and the first LayerNorm: the token rows of wte picked by id, plus the
position rows of wpe, normalized (picoGPT: `x = wte[inputs] + wpe[range(len(inputs))]`,
then `layer_norm(x, **ln_1)`). The ids are an input: numpy accepts ids in [-V, V) (a
negative id counts from the end), and so does the spec; others raise IndexError."""
import numpy as np

DIMS = dict(T=64, V=4096, D=256, P=512)

EPS = 1e-5


def embedding(ids: "i64[T]", wte: "f32[V, D]", wpe: "f32[P, D]", gamma: "f32[D]",
              beta: "f32[D]") -> "f32[T, D]":
    x = wte[ids] + wpe[range(len(ids))]
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * gamma + beta


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    ids = rng.integers(-DIMS["V"], DIMS["V"], DIMS["T"])
    wte = rng.standard_normal((DIMS["V"], DIMS["D"]), dtype=np.float32)
    wpe = rng.standard_normal((DIMS["P"], DIMS["D"]), dtype=np.float32)
    gamma = rng.standard_normal(DIMS["D"], dtype=np.float32)
    beta = rng.standard_normal(DIMS["D"], dtype=np.float32)
    out = embedding(ids, wte, wpe, gamma, beta)
    print("embedding", out.shape, out.dtype)
