"""matmul 2-D, batched, and with broadcast batch dims (missing, size-1, both sides)."""
import numpy as np

DIMS = dict(B=2, H=3, M=4, K=5, N=2)


def matmul_batched(a: "f32[M, K]", b: "f32[K, N]", ba: "f32[B, M, K]", bb: "f32[B, K, N]",
                   ha: "f32[B, 1, M, K]", hb: "f32[H, K, N]") -> ("f32[M, N]", "f32[B, M, N]", "f32[B, M, N]", "f32[B, H, M, N]", "f32[B, M, N]"):
    c = a @ b
    d = ba @ bb
    e = np.matmul(a, bb)              # 2-D broadcast against a batch
    f = ha @ hb                       # [B,1] batch vs [H] batch -> [B,H]
    g = ba @ b + a @ bb
    return c, d, e, f, g
