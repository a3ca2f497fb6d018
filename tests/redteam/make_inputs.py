#!/usr/bin/env python3
"""Writes an .npz of float32 inputs for an example spec, for `ollie run-kernel --inputs`.

Stands in, until `ollie verify` exists, for the verifier's input distributions, so that
red-team kernels that slip past run-kernel's normal(0, 1) inputs can be shown to fail:

  make_inputs.py EXAMPLE OUT.npz [--dims K=V,...] [--dist D] [--seed N]

  --dist normal   normal(0, 1), as run-kernel draws (default)
         scaled   normal(0, 1) with the weights scaled by 1/sqrt(fan-in) as each spec's
                  __main__ does (mha_causal, mla_decode, swiglu_mlp), keeping softmaxes
                  unsaturated and the derived bounds finite and meaningful
         large    normal(0, 1) * 300 (exp overflow, tanh overflow)
         offset   1000 + normal(0, 1) (cancellation in one-pass variance)
         tiny     normal(0, 1) * 1e-3
         special  normal(0, 1) with about 1% NaN, +inf and -inf sprinkled in
         special1 normal(0, 1) (weights scaled as in "scaled") with exactly one special
                  value (NaN, +inf or -inf, by seed) at one random position of one
                  random input: the fine-grained propagation semantics

No numpy needed (plain Python writes the .npy members)."""
import argparse
import io
import math
import random
import struct
import zipfile

DIMS = {
    "softmax": dict(M=256, N=1024),
    "layernorm": dict(T=128, D=1024),
    "rmsnorm": dict(T=128, D=1024),
    "gelu": dict(M=128, N=1024),
    "matmul": dict(M=256, K=512, N=256),
    "matmul_bias_relu": dict(M=256, K=512, N=256),
    "swiglu_mlp": dict(T=64, D=512, F=1024),
    "attention_causal": dict(S=512, D=64),
    "mha_causal": dict(S=256, DM=512, H=8, HD=64),
    "rope": dict(S=512, H=8, HD=64),
    "mla_decode": dict(B=1, H=16, S=4096, L=512, DR=64, DN=128, DV=128),
}

# Parameters in signature order: (name, shape as dim names, fan-in dims for "scaled").
PARAMS = {
    "softmax": [("x", "M N", None)],
    "layernorm": [("x", "T D", None), ("gamma", "D", None), ("beta", "D", None)],
    "rmsnorm": [("x", "T D", None), ("weight", "D", None)],
    "gelu": [("x", "M N", None)],
    "matmul": [("a", "M K", None), ("b", "K N", None)],
    "matmul_bias_relu": [("a", "M K", None), ("b", "K N", None), ("bias", "N", None)],
    "swiglu_mlp": [("x", "T D", None), ("w_gate", "D F", "D"), ("w_up", "D F", "D"), ("w_down", "F D", "F")],
    "attention_causal": [("q", "S D", None), ("k", "S D", None), ("v", "S D", None)],
    "mha_causal": [("x", "S DM", None), ("w_q", "DM H HD", "DM"), ("w_k", "DM H HD", "DM"),
                   ("w_v", "DM H HD", "DM"), ("w_o", "H HD DM", "H HD")],
    "rope": [("x", "S H HD", None)],
    "mla_decode": [("q_nope", "B H DN", None), ("q_pe", "B H DR", None), ("c_kv", "B S L", None),
                   ("k_pe", "B S DR", None), ("w_uk", "H DN L", "L"), ("w_uv", "H L DV", "L")],
}


def npy_bytes(shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join(f"{d}, " for d in shape) if len(shape) != 1 else f"{shape[0]},")
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    out = io.BytesIO()
    out.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    out.write(struct.pack(f"<{len(values)}f", *values))
    return out.getvalue()


def draw(rng, n, dist, scale):
    g = rng.gauss
    if dist == "large":
        return [g(0.0, 1.0) * 300.0 for _ in range(n)]
    if dist == "offset":
        return [1000.0 + g(0.0, 1.0) for _ in range(n)]
    if dist == "tiny":
        return [g(0.0, 1.0) * 1e-3 for _ in range(n)]
    vals = [g(0.0, 1.0) * scale for _ in range(n)]
    if dist == "special":
        for i in range(n):
            r = rng.random()
            if r < 0.004:
                vals[i] = math.nan
            elif r < 0.007:
                vals[i] = math.inf
            elif r < 0.010:
                vals[i] = -math.inf
    return vals


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("example")
    ap.add_argument("out")
    ap.add_argument("--dims", default="")
    ap.add_argument("--dist", default="normal", choices=["normal", "scaled", "large", "offset", "tiny", "special", "special1"])
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    dims = dict(DIMS[args.example])
    for item in filter(None, args.dims.split(",")):
        k, v = item.split("=")
        dims[k] = int(v)
    rng = random.Random(args.seed)
    params = PARAMS[args.example]
    victim = rng.randrange(len(params))
    special = [math.nan, math.inf, -math.inf][args.seed % 3]
    with zipfile.ZipFile(args.out, "w") as z:
        for p, (name, shape_names, fan_in) in enumerate(params):
            shape = [dims[d] for d in shape_names.split()]
            n = math.prod(shape)
            scale = 1.0
            if args.dist in ("scaled", "special1") and fan_in:
                scale = 1.0 / math.sqrt(math.prod(dims[d] for d in fan_in.split()))
            vals = draw(rng, n, "normal" if args.dist == "special1" else args.dist, scale)
            if args.dist == "special1" and p == victim:
                vals[rng.randrange(n)] = special
            z.writestr(name + ".npy", npy_bytes(shape, vals))


if __name__ == "__main__":
    main()
