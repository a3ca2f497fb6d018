"""Rotary position embedding (RoPE), interleaved form (GPT-J, original Llama): each
adjacent pair (x[2i], x[2i+1]) of a head vector at position p is rotated by the angle
p * BASE^(-2i/HD). The angle tables are built in float64 and cast to float32, as
model code does; ollie verifies kernels against that rounding."""
import numpy as np

DIMS = dict(S=512, H=8, HD=64)

BASE = 10000.0


def rope(x: "f32[S, H, HD]") -> "f32[S, H, HD]":
    s = x.shape[0]
    hd = x.shape[-1]
    inv_freq = 1.0 / (BASE ** (np.arange(0, hd, 2) / hd))          # [HD/2], float64
    angles = np.outer(np.arange(s), inv_freq)                        # [S, HD/2]
    cos = np.cos(angles).astype(np.float32)[:, None, :]              # [S, 1, HD/2]
    sin = np.sin(angles).astype(np.float32)[:, None, :]
    pairs = x.reshape(x.shape[:-1] + (-1, 2))                        # [S, H, HD/2, 2]
    even, odd = np.split(pairs, 2, axis=-1)
    even = even.squeeze(-1)
    odd = odd.squeeze(-1)
    rotated = np.stack([even * cos - odd * sin, even * sin + odd * cos], axis=-1)
    return rotated.reshape(x.shape)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x = rng.standard_normal((DIMS["S"], DIMS["H"], DIMS["HD"]), dtype=np.float32)
    out = rope(x)
    print("rope", out.shape, out.dtype)
