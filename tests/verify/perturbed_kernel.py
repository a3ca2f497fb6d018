#!/usr/bin/env python3
"""Makes a subtly wrong twin of a correct kernel: the kernel runs unchanged, then every
element of its outputs is scaled by (1 + SCALE), the size of a formula that differs from
the spec by 1e-4.
Used by the tests and the bound-tightness bench to check that the verifier's
tolerance is tight enough to reject it.

usage: perturbed_kernel.py KERNEL.cpp HEADER.ollie.h OUT.cpp [--scale 1e-4]
"""
import argparse
import re
import sys


def parse_header(text):
    """(signature params, outputs as (name, shape-dims), dim names in order)."""
    sig = re.search(r'extern "C" void ollie_kernel\((.*?)\);', text, re.S)
    if not sig:
        sys.exit("no ollie_kernel declaration in the header")
    params = [p.strip() for p in sig.group(1).split(",")]
    outputs = []
    for m in re.finditer(r'//\s+(\w+): "\w+\[(.*?)\]"\s+\(result \d+\)', text):
        outputs.append((m.group(1), [d.strip() for d in m.group(2).split(",") if d.strip()]))
    dims = re.findall(r"constexpr int64_t (\w+) = -?\d+;\s+// dims\[(\d+)\]", text)
    return params, outputs, {name: int(i) for name, i in dims}


def size_expr(shape, dims):
    """A C++ expression for the element count, dims named by their index."""
    factors = []
    for d in shape:
        factors.append("(" + re.sub(r"[A-Za-z_]\w*", lambda m: f"dims[{dims[m.group(0)]}]", d) + ")")
    return " * ".join(factors) if factors else "1"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernel")
    ap.add_argument("header")
    ap.add_argument("out")
    ap.add_argument("--scale", type=float, default=1e-4)
    args = ap.parse_args()
    source = open(args.kernel).read()
    params, outputs, dims = parse_header(open(args.header).read())
    if not outputs:
        sys.exit("no results in the header")
    renamed, count = re.subn(r"\bollie_kernel\b", "ollie_kernel_unperturbed", source)
    if count == 0:
        sys.exit("the kernel defines no ollie_kernel")
    names = [re.split(r"[\s*&]+", p)[-1] for p in params]
    body = [f"  ollie_kernel_unperturbed({', '.join(names)});"]
    for name, shape in outputs:
        body.append(f"  for (int64_t i = 0, n = {size_expr(shape, dims)}; i < n; ++i)")
        body.append(f"    {name}[i] *= 1.0 + {args.scale!r};")
    wrapper = (
        f'\nextern "C" void ollie_kernel({", ".join(params)}) {{\n' + "\n".join(body) + "\n}\n"
    )
    open(args.out, "w").write(renamed + wrapper)


if __name__ == "__main__":
    main()
