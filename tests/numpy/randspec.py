# Seeded random spec generator for differential testing of ollie against numpy: every
# program it writes is valid numpy by construction (shapes tracked symbolically, as ollie does).
from __future__ import annotations

import dataclasses
import itertools
import random

import numpy as np

# Inputs are drawn from [-INPUT_MAG, INPUT_MAG]; `mag` below is a proven upper bound on
# |value| of every node, which keeps exp and powers finite and cancellation modest.
INPUT_MAG = 2.0
MAG_CAP = 1e4
MAX_DEPTH = 6
DIM_NAMES = ["M", "N", "K", "P", "Q", "R"]
SCALARS = ["0.5", "2.0", "1.5", "3", "2", "0.1", "0.25", "-1.0", "1e-3", "0.7", "-2", "1"]
_opaque_ids = itertools.count()


# ---------------------------------------------------------------------------- dims

class Dim:
    """A size as ollie sees it: a polynomial over dim names (and opaque atoms standing for
    floor divisions), plus its value at DIMS. Two Dims compare equal only when ollie's
    canonical DimExprs would, so broadcasting decisions never rely on lucky sizes."""

    __slots__ = ("terms", "value")

    def __init__(self, terms: dict, value: int):
        self.terms = frozenset((k, v) for k, v in terms.items() if v != 0)
        self.value = value

    @staticmethod
    def const(c: int) -> "Dim":
        return Dim({(): c}, c)

    @staticmethod
    def sym(name: str, value: int) -> "Dim":
        return Dim({(name,): 1}, value)

    @staticmethod
    def opaque(value: int) -> "Dim":
        return Dim({(f"~{next(_opaque_ids)}",): 1}, value)

    def _combine(self, other: "Dim", sign: int) -> "Dim":
        t = dict(self.terms)
        for k, v in other.terms:
            t[k] = t.get(k, 0) + sign * v
        return Dim(t, self.value + sign * other.value)

    def __add__(self, other):
        return self._combine(other, 1)

    def __sub__(self, other):
        return self._combine(other, -1)

    def __mul__(self, other):
        t: dict = {}
        for (ka, va), (kb, vb) in itertools.product(self.terms, other.terms):
            k = tuple(sorted(ka + kb))
            t[k] = t.get(k, 0) + va * vb
        return Dim(t, self.value * other.value)

    def __eq__(self, other):
        return isinstance(other, Dim) and self.terms == other.terms

    def __hash__(self):
        return hash(self.terms)

    def is_const(self) -> bool:
        return all(k == () for k, _ in self.terms)

    def is_one(self) -> bool:
        return self.is_const() and self.value == 1

    def annotation(self) -> str | None:
        """How a return annotation writes this size, or None if it cannot."""
        if self.is_const():
            return str(self.value)
        if len(self.terms) == 1:
            (k, v), = self.terms
            if v == 1 and len(k) == 1 and not k[0].startswith("~"):
                return k[0]
        return None

    def monomial(self):
        """(coefficient, atoms) if this is a single term, else None."""
        if len(self.terms) != 1:
            return None
        (k, v), = self.terms
        return v, k


def broadcast(*shapes):
    """numpy broadcasting restricted to what holds for every value of the dims."""
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        d = None
        for s in shapes:
            j = i - (rank - len(s))
            if j < 0:
                continue
            c = s[j]
            if d is None or d.is_one():
                d = c
            elif not (c.is_one() or c == d):
                return None
        out.append(d)
    return tuple(out)


# ---------------------------------------------------------------------------- program

@dataclasses.dataclass
class Node:
    var: str
    shape: tuple
    dtype: str          # "f32" or "f64"
    depth: int
    mag: float
    # Where this node's values may coincide with another's: a layout op, max/min/where/abs
    # or a one-element reduction passes values through, and a scalar a max/min/where may
    # yield is recorded as "s:<value>". A comparison between nodes sharing an entry could
    # tie exactly, and a tie is rightly "uncertain" for ollie (a kernel may compute the two
    # sides differently), which makes the bounds downstream huge or infinite.
    ids: frozenset = frozenset()


@dataclasses.dataclass
class RandomSpec:
    seed: int
    text: str
    entry: str
    dims: dict          # all of DIMS
    used_dims: dict     # the dims the entry's annotations mention
    params: list        # (name, dtype, annotation string)
    returns: list       # (dtype, shape tuple of ints)


def _ann(dtype: str, shape) -> str:
    return f'"{dtype}[{", ".join(d.annotation() for d in shape)}]"'


def _promote(*dtypes) -> str:
    return "f64" if "f64" in dtypes else "f32"


def _axes_text(axes):
    return str(axes[0]) if len(axes) == 1 else "(" + ", ".join(map(str, axes)) + ")"


class _NoCandidate(Exception):
    """An op found no operand it applies to; the generator tries another op."""


class _Gen:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.seed = seed
        self.pool: list[Node] = []
        self.body: list[str] = []
        self.helpers: list[str] = []
        self.dim_vars: dict[str, str] = {}   # dim name -> "a.shape[0]" that defines it
        self.counter = 0

    # -- small helpers
    def pick(self, seq):
        return self.rng.choice(seq)

    def scalar(self) -> str:
        return self.pick(SCALARS)

    def live(self, pred=lambda n: True):
        # One level is kept back for finish(), which may add a reduction on top.
        return [n for n in self.pool if n.depth < MAX_DEPTH - 1 and pred(n)]

    def pick_live(self, pred=lambda n: True):
        cands = self.live(pred)
        if not cands:
            raise _NoCandidate
        # Favouring the newest node grows chains, so the output depends on most of the body.
        return cands[-1] if self.rng.random() < 0.5 else self.pick(cands)

    def emit(self, template: str, ops: list[Node], shape, dtype, mag, scalar=None, helper_ok=True,
             ids=None) -> Node:
        """Adds `tK = template` (or a helper call) to the body and the node to the pool."""
        self.counter += 1
        var = f"t{self.counter}"
        names = [o.var for o in ops]
        if helper_ok and ops and self.rng.random() < 0.2:
            hname = f"helper{len(self.helpers) + 1}"
            params = [f"x{i}" for i in range(len(ops))]
            if scalar is not None:
                default = scalar if self.rng.random() < 0.5 else self.scalar()
                sig = ", ".join(params) + f", s={default}"
                call_args = names + ([f"s={scalar}"] if default != scalar or self.rng.random() < 0.5 else [])
            else:
                sig = ", ".join(params)
                kw = self.rng.randrange(len(ops))   # from here on, arguments by keyword
                call_args = names[:kw] + [f"{p}={n}" for p, n in zip(params[kw:], names[kw:])]
            self.helpers.append(f"def {hname}({sig}):\n    return {template.format(*params, s='s')}\n")
            self.body.append(f"{var} = {hname}({', '.join(call_args)})")
        else:
            self.body.append(f"{var} = {template.format(*names, s=scalar)}")
        node = Node(var, tuple(shape), dtype, 1 + max((o.depth for o in ops), default=0), mag,
                    frozenset([var]) if ids is None else ids)
        self.pool.append(node)
        return node

    # -- ops: each returns the new node, or None when it does not apply
    def op_binary(self):
        x = self.pick_live()
        fn = self.pick(["+", "-", "*", "np.maximum", "np.minimum"])
        if self.rng.random() < 0.35:
            s = self.scalar()
            sv = abs(float(s))
            mag = x.mag * sv if fn == "*" else x.mag + sv
            if mag > MAG_CAP:
                return None
            if fn.startswith("np."):
                t = f"{fn}({{0}}, {{s}})" if self.rng.random() < 0.7 else f"{fn}({{s}}, {{0}})"
                mag = max(x.mag, sv)
            else:
                t = f"{{0}} {fn} {{s}}" if self.rng.random() < 0.6 else f"{{s}} {fn} {{0}}"
            passes = fn.startswith("np.") or (fn == "*" and float(s) == 1)
            ids = x.ids | {f"s:{float(s)}"} if passes else None
            return self.emit(t, [x], x.shape, x.dtype, mag, scalar=s, ids=ids)
        ys = self.live(lambda n: broadcast(x.shape, n.shape) is not None)
        y = self.pick(ys)
        shape = broadcast(x.shape, y.shape)
        mag = x.mag * y.mag if fn == "*" else x.mag + y.mag
        if mag > MAG_CAP:
            return None
        t = f"{fn}({{0}}, {{1}})" if fn.startswith("np.") else f"{{0}} {fn} {{1}}"
        return self.emit(t, [x, y], shape, _promote(x.dtype, y.dtype), mag,
                         ids=x.ids | y.ids if fn.startswith("np.") else None)

    def op_divide(self):
        # Denominators are >= 1 by construction: a near-zero one would make the f64
        # comparison (and any f32 bound) meaningless rather than test anything.
        x = self.pick_live()
        r = self.rng.random()
        if r < 0.25:
            s = self.pick(["2.0", "3", "7", "0.5", "-4.0", "10"])
            return self.emit("{0} / {s}", [x], x.shape, x.dtype, x.mag / abs(float(s)), scalar=s)
        if r < 0.4:
            s = self.pick(["1.0", "2", "0.5"])
            den = self.pick(["(np.abs({0}) + 1.0)", "(1 + {0} * {0})"])
            return self.emit(f"{{s}} / {den}", [x], x.shape, x.dtype, abs(float(s)), scalar=s)
        ys = self.live(lambda n: broadcast(x.shape, n.shape) is not None)
        y = self.pick(ys)
        den = self.pick(["(np.abs({1}) + 1.0)", "(1.0 + {1} ** 2)", "np.sqrt(np.abs({1}) + 1)",
                         "np.exp(np.tanh({1}))"])
        mag = x.mag * (np.e if "exp" in den else 1.0)
        return self.emit(f"{{0}} / {den}", [x, y], broadcast(x.shape, y.shape),
                         _promote(x.dtype, y.dtype), mag)

    def op_unary(self):
        x = self.pick_live()
        m = x.mag
        # sin/cos only of small arguments: near a zero of cos(x) with |x| in the tens, the
        # few-ulp argument differences of two double computations are 1e-12 of the result.
        trig = "{0}" if m <= 2 else "np.tanh({0})"
        choices = [("np.tanh({0})", 1.0), (f"np.sin({trig})", 1.0), (f"np.cos({trig})", 1.0),
                   ("np.abs({0})", m), ("-{0}", m), ("np.sqrt(np.abs({0}) + 1)", np.sqrt(m + 1)),
                   ("np.exp(np.tanh({0}))", np.e)]
        if m <= 5:
            choices.append(("np.exp({0})", np.exp(m)))
        if m <= 30:
            choices.append(("1 / (1 + np.exp(-{0}))", 1.0))
        if m * m <= MAG_CAP:
            choices.append(("{0} ** 2", m * m))
        if m ** 3 <= MAG_CAP:
            choices.append(("{0} ** 3", m ** 3))
        t, mag = self.pick(choices)
        return self.emit(t, [x], x.shape, x.dtype, mag, ids=x.ids if t == "np.abs({0})" else None)

    def op_where(self):
        a = self.pick_live()
        cmp_ = self.pick([">", "<", ">=", "<="])
        ops = [a]
        limits = [c for c in ["0", "0.5", "-0.25"] if f"s:{float(c)}" not in a.ids]
        if limits and self.rng.random() < 0.4:
            cond, cshape = f"{{0}} {cmp_} {self.pick(limits)}", a.shape
        else:
            b = self.pick_live(lambda n: a.ids.isdisjoint(n.ids) and broadcast(a.shape, n.shape) is not None)
            ops.append(b)
            cond, cshape = f"{{0}} {cmp_} {{1}}", broadcast(a.shape, b.shape)
        branches, shapes, dtypes, mags, ids = [], [cshape], [], [], frozenset()
        for _ in range(2):
            if self.rng.random() < 0.3:
                s = self.scalar()
                branches.append(s)
                mags.append(abs(float(s)))
                ids |= {f"s:{float(s)}"}
                continue
            cands = self.live(lambda n: broadcast(*shapes, n.shape) is not None)
            v = self.pick(cands)
            branches.append(f"{{{len(ops)}}}")
            ops.append(v)
            shapes.append(v.shape)
            dtypes.append(v.dtype)
            mags.append(v.mag)
            ids |= v.ids
        # NEP 50: two Python floats give float64; otherwise the arrays decide.
        dtype = _promote(*dtypes) if dtypes else "f64"
        if not dtypes and all(b.lstrip("-").isdigit() for b in branches):
            branches[0] = branches[0] + ".0"      # two Python ints would give an int array
        t = f"np.where({cond}, {branches[0]}, {branches[1]})"
        return self.emit(t, ops, broadcast(*shapes), dtype, max(mags), ids=ids)

    def _pick_axes(self, rank):
        """(axis text or None, normalized axes)."""
        r = self.rng.random()
        if r < 0.15:
            return None, list(range(rank))
        if r < 0.7 or rank == 1:
            ax = self.rng.randrange(rank)
            return str(ax - rank if self.rng.random() < 0.4 else ax), [ax]
        k = self.rng.randint(2, rank)
        axes = sorted(self.rng.sample(range(rank), k))
        texts = [a - rank if self.rng.random() < 0.4 else a for a in axes]
        self.rng.shuffle(texts)
        return _axes_text(texts) if len(texts) > 1 else f"({texts[0]},)", axes

    def op_reduce(self):
        xs = self.live(lambda n: len(n.shape) >= 1)
        if not xs:
            return None
        x = self.pick(xs)
        kind = self.pick(["sum", "max", "min", "mean", "var"])
        axis_text, axes = self._pick_axes(len(x.shape))
        keep = self.rng.random() < 0.35
        count = int(np.prod([x.shape[a].value for a in axes]))
        mag = {"sum": x.mag * count, "var": x.mag * x.mag}.get(kind, x.mag)
        if mag > MAG_CAP:
            return None
        args = []
        if axis_text is not None:
            args.append(f"axis={axis_text}" if self.rng.random() < 0.8 or kind == "var" else axis_text)
        if keep:
            args.append("keepdims=True")
        if self.rng.random() < 0.5:
            t = f"{{0}}.{kind}({', '.join(args)})"
        else:
            t = f"np.{kind}({', '.join(['{0}'] + args)})"
        shape = [Dim.const(1) if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes]
        passes = kind in ("max", "min") or (count == 1 and kind != "var")
        return self.emit(t, [x], shape, x.dtype, mag, ids=x.ids if passes else None)

    def op_matmul(self):
        pairs = []
        for x, y in itertools.product(self.live(lambda n: len(n.shape) >= 1), repeat=2):
            sx, sy = x.shape, y.shape
            if len(sx) == 1 and len(sy) == 1:
                out = () if sx[0] == sy[0] else None
            elif len(sx) == 1:
                out = sy[:-2] + sy[-1:] if sx[0] == sy[-2] else None
            elif len(sy) == 1:
                out = sx[:-1] if sx[-1] == sy[0] else None
            else:
                batch = broadcast(sx[:-2], sy[:-2]) if sx[-1] == sy[-2] else None
                out = None if batch is None else batch + (sx[-2], sy[-1])
            k = sx[-1].value
            if out is not None and x.mag * y.mag * k <= MAG_CAP:
                pairs.append((x, y, out, x.mag * y.mag * k))
        if not pairs:
            return None
        x, y, out, mag = self.pick(pairs)
        t = "{0} @ {1}" if self.rng.random() < 0.6 else "np.matmul({0}, {1})"
        return self.emit(t, [x, y], out, _promote(x.dtype, y.dtype), mag)

    def op_einsum(self):
        x = self.pick_live(lambda n: len(n.shape) >= 1)
        letters = iter("abcdefghij")
        lx = [next(letters) for _ in x.shape]
        label_dim = dict(zip(lx, x.shape))
        ops, specs = [x], ["".join(lx)]
        if self.rng.random() < 0.75:
            y = self.pick_live()
            ly, used = [], set()
            for d in y.shape:
                match = [c for c in lx if label_dim[c] == d and c not in used]
                if match and self.rng.random() < 0.7:
                    c = self.pick(match)
                else:
                    c = next(letters)
                    label_dim[c] = d
                used.add(c)
                ly.append(c)
            ops.append(y)
            specs.append("".join(ly))
        all_labels = list(dict.fromkeys("".join(specs)))
        out = [c for c in all_labels if self.rng.random() < 0.6]
        self.rng.shuffle(out)
        summed = [c for c in all_labels if c not in out]
        mag = float(np.prod([o.mag for o in ops])) * int(np.prod([label_dim[c].value for c in summed]))
        if mag > MAG_CAP:
            return None
        operands = ", ".join(f"{{{i}}}" for i in range(len(ops)))
        t = f"np.einsum('{','.join(specs)}->{''.join(out)}', {operands})"
        passes = len(ops) == 1 and all(label_dim[c].value == 1 for c in summed)
        return self.emit(t, ops, [label_dim[c] for c in out], _promote(*(o.dtype for o in ops)), mag,
                         ids=x.ids if passes else None)

    def op_transpose(self):
        xs = self.live(lambda n: len(n.shape) >= 2)
        if not xs:
            return None
        x = self.pick(xs)
        r = len(x.shape)
        kind = self.rng.random()
        if kind < 0.25:
            t, perm = self.pick(["{0}.T", "{0}.transpose()", "np.transpose({0})"]), list(range(r))[::-1]
        elif kind < 0.6:
            perm = list(range(r))
            self.rng.shuffle(perm)
            p = ", ".join(map(str, perm))
            t = self.pick([f"{{0}}.transpose({p})", f"np.transpose({{0}}, ({p}))", f"{{0}}.transpose(({p}))"])
        else:
            i, j = self.rng.sample(range(r), 2)
            perm = list(range(r))
            perm[i], perm[j] = perm[j], perm[i]
            ti, tj = (a - r if self.rng.random() < 0.5 else a for a in (i, j))
            t = self.pick([f"np.swapaxes({{0}}, {ti}, {tj})", f"{{0}}.swapaxes({ti}, {tj})"])
        return self.emit(t, [x], [x.shape[p] for p in perm], x.dtype, x.mag, ids=x.ids)

    def _dim_text(self, d: Dim, x: Node, axis: int | None) -> str | None:
        """Code for size d: a literal, products of dim variables, or x.shape[axis]."""
        if d.is_const():
            return str(d.value)
        mono = d.monomial()
        if mono and all(not a.startswith("~") and a in self.dim_vars for a in mono[1]):
            coeff, atoms = mono
            return " * ".join(([str(coeff)] if coeff != 1 else []) + list(atoms))
        return None if axis is None else f"{{0}}.shape[{axis}]"

    def op_reshape(self):
        xs = self.live(lambda n: len(n.shape) >= 1)
        if not xs:
            return None
        x = self.pick(xs)
        shape = list(x.shape)
        texts = [self._dim_text(d, x, i) for i, d in enumerate(shape)]
        r = self.rng.random()
        if r < 0.4 and len(shape) >= 2:          # merge adjacent axes
            i = self.rng.randrange(len(shape) - 1)
            if texts[i] is None or texts[i + 1] is None:
                return None
            merged = shape[i] * shape[i + 1]
            shape[i:i + 2] = [merged]
            texts[i:i + 2] = [f"{texts[i]} * {texts[i + 1]}"]
        elif r < 0.75:                             # split one axis at a factor
            cands = []
            for i, d in enumerate(shape):
                mono = d.monomial()
                if not mono:
                    continue
                coeff, atoms = mono
                named = [a for a in atoms if a in self.dim_vars]
                if len(atoms) >= 2 and named:
                    f = self.pick(named)
                    rest = list(atoms)
                    rest.remove(f)
                    cands.append((i, Dim.sym(f, self.dims[f]), Dim({tuple(rest): coeff}, d.value // self.dims[f]), f))
                if coeff > 1 and atoms:
                    div = self.pick([p for p in range(2, coeff + 1) if coeff % p == 0])
                    cands.append((i, Dim.const(div), Dim({atoms: coeff // div}, d.value // div), str(div)))
                if not atoms and coeff > 1:
                    divs = [p for p in range(2, coeff) if coeff % p == 0]
                    if divs:
                        div = self.pick(divs)
                        cands.append((i, Dim.const(div), Dim.const(coeff // div), str(div)))
            if not cands:
                return None
            i, f, rest, ftext = self.pick(cands)
            shape[i:i + 1] = [f, rest]
            texts[i:i + 1] = [ftext, self._dim_text(rest, x, None) or "-1"]
        else:                                      # add a unit axis
            i = self.rng.randint(0, len(shape))
            shape.insert(i, Dim.const(1))
            texts.insert(i, "1")
        if "-1" not in texts and self.rng.random() < 0.5:
            texts[self.rng.randrange(len(texts))] = "-1"
        if any(t is None for t in texts):
            return None
        args = ", ".join(texts)
        t = self.pick([f"{{0}}.reshape({args})", f"{{0}}.reshape(({args},))", f"np.reshape({{0}}, ({args},))"])
        return self.emit(t, [x], shape, x.dtype, x.mag, helper_ok=False, ids=x.ids)

    def op_unit_axis(self):
        x = self.pick_live()
        r = len(x.shape)
        ones = [i for i, d in enumerate(x.shape) if d.is_one()]
        if ones and self.rng.random() < 0.5:
            i = self.pick(ones)
            ti = i - r if self.rng.random() < 0.5 else i
            named_one = any(d.value == 1 and not d.is_const() for d in x.shape)
            forms = [f"np.squeeze({{0}}, axis={ti})", f"{{0}}.squeeze({ti})", f"{{0}}.squeeze(axis={ti})"]
            if not named_one and len(ones) == 1:
                forms.append("{0}.squeeze()")
            shape = x.shape[:i] + x.shape[i + 1:]
            return self.emit(self.pick(forms), [x], shape, x.dtype, x.mag, ids=x.ids)
        i = self.rng.randint(0, r)
        ti = i - r - 1 if self.rng.random() < 0.4 else i
        forms = [f"np.expand_dims({{0}}, {ti})", f"np.expand_dims({{0}}, axis={ti})"]
        forms.append("{0}[" + ", ".join([":"] * i + ["None"]) + "]")
        if i == r:
            forms.append("{0}[..., None]")
        if i == 0:
            forms.append("{0}[np.newaxis]")
        shape = x.shape[:i] + (Dim.const(1),) + x.shape[i:]
        return self.emit(self.pick(forms), [x], shape, x.dtype, x.mag, ids=x.ids)

    def _slice_dim(self, d: Dim, lo, hi, step):
        """Length of d[lo:hi:step] as ollie computes it (bounds resolved at DIMS)."""
        dv = d.value

        def bound(b, lower):
            if b is None:
                return (Dim.const(0), 0) if lower else (d, dv)
            e, ev = Dim.const(b), b
            if ev < 0:
                e, ev = d + e, ev + dv
            if ev < 0:
                return Dim.const(0), 0
            if ev > dv:
                return d, dv
            return e, ev

        (lo_d, lov), (hi_d, hiv) = bound(lo, True), bound(hi, False)
        if hiv < lov:
            hi_d, hiv = lo_d, lov
        n = -(-(hiv - lov) // step)
        ext = hi_d - lo_d
        if step == 1:
            return ext, n
        return (Dim.const(n) if ext.is_const() else Dim.opaque(n)), n

    def op_slice(self):
        xs = self.live(lambda n: len(n.shape) >= 1)
        if not xs:
            return None
        x = self.pick(xs)
        r = len(x.shape)
        i = self.rng.randrange(r)
        d = x.shape[i]
        if self.rng.random() < 0.2:                 # integer index drops the axis
            k = self.pick([0, 1, 2, -1, -2])
            if not -d.value <= k < d.value:
                return None
            item, shape = str(k), x.shape[:i] + x.shape[i + 1:]
        else:
            lo = self.pick([None, None, 0, 1, 2, -1, -2, -3])
            hi = self.pick([None, None, 1, 2, 3, 5, -1, -2])
            step = self.pick([1, 1, 1, 2, 3])
            new, n = self._slice_dim(d, lo, hi, step)
            if n < 1:
                return None
            item = ("" if lo is None else str(lo)) + ":" + ("" if hi is None else str(hi))
            if step != 1:
                item += f":{step}"
            shape = x.shape[:i] + (new,) + x.shape[i + 1:]
        if i == r - 1 and r > 1 and self.rng.random() < 0.5:
            idx = "..., " + item
        else:
            idx = ", ".join([":"] * i + [item])
        return self.emit("{0}[" + idx + "]", [x], shape, x.dtype, x.mag, ids=x.ids)

    def op_join(self):
        x = self.pick_live(lambda n: len(n.shape) >= 1)
        r = len(x.shape)
        stack = self.rng.random() < 0.4
        if stack:
            axis = self.rng.randint(0, r)
            same = lambda n: n.shape == x.shape  # noqa: E731
        else:
            axis = self.rng.randrange(r)
            same = lambda n: len(n.shape) == r and all(  # noqa: E731
                a == b for j, (a, b) in enumerate(zip(n.shape, x.shape)) if j != axis)
        parts = [x] + [self.pick_live(same) for _ in range(self.rng.randint(1, 2))]
        texts = [f"{{{i}}}" for i in range(len(parts))]
        if self.rng.random() < 0.3:                  # a derived copy, so it joins something new
            texts[-1] = self.pick(["np.tanh({0})", "{0} * 2.0", "np.cos(np.tanh({0}))"])
            parts = parts[:-1]
        ta = axis - (r + 1 if stack else r) if self.rng.random() < 0.4 else axis
        fn = "np.stack" if stack else "np.concatenate"
        axis_arg = self.pick([f"axis={ta}", str(ta)])
        t = f"{fn}([{', '.join(texts)}], {axis_arg})"
        if stack:
            shape = x.shape[:axis] + (Dim.const(len(texts)),) + x.shape[axis:]
        else:
            total = x.shape[axis]
            for p in parts[1:]:
                total = total + p.shape[axis]
            if len(parts) < len(texts):
                total = total + x.shape[axis]
            shape = x.shape[:axis] + (total,) + x.shape[axis + 1:]
        return self.emit(t, parts, shape, _promote(*(p.dtype for p in parts)), max(p.mag for p in parts) * 2,
                         ids=frozenset().union(*(p.ids for p in parts)) | {f"join{self.counter}"})

    OPS = [("op_binary", 5), ("op_divide", 2), ("op_unary", 4), ("op_where", 2), ("op_reduce", 3),
           ("op_matmul", 2), ("op_einsum", 2), ("op_transpose", 2), ("op_reshape", 2),
           ("op_unit_axis", 2), ("op_slice", 2), ("op_join", 1)]

    def finish(self, node: Node) -> Node:
        """Reduces away axes whose size an annotation cannot name (M - 1, 2*M, M*N, ...)."""
        bad = [i for i, d in enumerate(node.shape) if d.annotation() is None]
        if not bad:
            return node
        shape = [d for i, d in enumerate(node.shape) if i not in bad]
        kind = self.pick(["sum", "mean", "max"])
        axes = _axes_text(bad) if len(bad) > 1 else str(bad[0])
        self.counter += 1
        var = f"t{self.counter}"
        self.body.append(f"{var} = {node.var}.{kind}(axis={axes})")
        return Node(var, tuple(shape), node.dtype, node.depth + 1, node.mag, frozenset([var]))

    def build(self) -> RandomSpec:
        rng = self.rng
        names = rng.sample(DIM_NAMES, rng.randint(2, 4))
        self.dims = {n: rng.randint(1, 9) for n in names}
        params = []
        for pname in ["a", "b", "c"][:rng.randint(1, 3)]:
            shape = tuple(Dim.const(1) if rng.random() < 0.15 else Dim.sym(n, self.dims[n])
                          for n in (rng.choice(names) for _ in range(rng.randint(0, 3))))
            dtype = "f64" if rng.random() < 0.2 else "f32"
            params.append((pname, dtype, shape))
            self.pool.append(Node(pname, shape, dtype, 0, INPUT_MAG, frozenset([pname])))
            for axis, d in enumerate(shape):
                if not d.is_const() and d.annotation() not in self.dim_vars:
                    self.dim_vars[d.annotation()] = f"{pname}.shape[{axis}]"
        for _ in range(rng.randint(3, 12)):
            for _attempt in range(20):
                name = rng.choices([o for o, _ in self.OPS], [w for _, w in self.OPS])[0]
                try:
                    if getattr(self, name)() is not None:
                        break
                except _NoCandidate:
                    pass
        outs = [self.finish(self.pool[-1])]
        if rng.random() < 0.15:
            outs.append(self.finish(self.pick(self.pool)))
        used = {d.annotation() for _, _, s in params for d in s if not d.is_const()}
        entry = f"kernel_{self.seed}"
        sig = ", ".join(f"{p}: {_ann(dt, s)}" for p, dt, s in params)
        ret = ", ".join(_ann(o.dtype, o.shape) for o in outs)
        if len(outs) > 1:
            ret = f"({ret})"
        lines = ["import numpy as np", "", f"DIMS = dict({', '.join(f'{k}={v}' for k, v in self.dims.items())})", ""]
        for h in self.helpers:
            lines += ["", h]
        lines += ["", f"def {entry}({sig}) -> {ret}:"]
        lines += [f"    {k} = {v}" for k, v in self.dim_vars.items()]
        lines += [f"    {b}" for b in self.body]
        lines.append(f"    return {', '.join(o.var for o in outs)}")
        text = "\n".join(lines) + "\n"
        returns = [(o.dtype, tuple(d.value for d in o.shape)) for o in outs]
        return RandomSpec(self.seed, text, entry, dict(self.dims), {k: self.dims[k] for k in self.dims if k in used},
                          [(p, dt, _ann(dt, s)[1:-1]) for p, dt, s in params], returns)


def generate(seed: int) -> RandomSpec:
    """The random spec for `seed` (deterministic across runs and platforms)."""
    return _Gen(seed).build()


if __name__ == "__main__":
    import sys
    for s in sys.argv[1:] or ["0"]:
        print(f"# seed {s}")
        print(generate(int(s)).text)
