# The two comparisons every cross-check makes between ollie's reference and numpy, in one
# place so the example, corpus and random-program suites hold ollie to the same standard.
import numpy as np

# float64 agreement, per element: |numpy_f64 - ref| <= REL * (|numpy_f64| + FLOOR * max|numpy_f64|).
# Both sides compute in double, possibly in different orders and with different libm, so
# they differ by a few ulps of the terms; the floor covers elements that cancel to ~0.
REL = 1e-12
FLOOR = 1e-3


def describe(idx, **arrays):
    return ", ".join(f"{k}={v[idx]!r}" for k, v in arrays.items())


def _special_mismatch(ref, other, name):
    """Non-finite elements (a -inf mask, exp(-inf), NaN) must match exactly. Returns the
    mask of special elements and a failure text or None."""
    special = ~np.isfinite(ref) | ~np.isfinite(other)
    same = (ref == other) | (np.isnan(ref) & np.isnan(other))
    bad = special & ~same
    if bad.any():
        idx = tuple(int(j) for j in np.argwhere(bad)[0])
        return special, (f"special values differ on {bad.sum()} of {bad.size} elements; first at {idx}: "
                         + describe(idx, ollie=ref, **{name: other}))
    return special, None


# An f32 bound scaled to double precision: every term of a bound is proportional to the
# unit roundoff u (2^-24 for f32, 2^-53 for f64), so bound * 2^-29 is what a correct
# float64 implementation may be off by; x2 for slack.
F64_FROM_F32 = 2.0 ** -29 * 2


def float64_mismatch(ref, want, f64_bound=None):
    """None if ollie's reference `ref` agrees with numpy's float64 result `want`, else why not.
    With `f64_bound` (ollie's bound for a float64 implementation, e.g. an f32 bound times
    F64_FROM_F32), an ill-conditioned element (a variance of nearly equal values, cos near
    a zero) may also differ by that much: numpy in float64 is itself such an implementation."""
    ref = np.asarray(ref, np.float64)
    want = np.asarray(want, np.float64)
    if ref.shape != want.shape:
        return f"shapes differ: ollie {ref.shape}, numpy {want.shape}"
    special, why = _special_mismatch(ref, want, "numpy")
    if why:
        return why
    with np.errstate(invalid="ignore"):  # inf - inf on special elements, masked out
        diff = np.where(special, 0.0, np.abs(ref - want))
    finite = np.abs(np.where(special, 0.0, want))
    tol = REL * (finite + FLOOR * (finite.max() if finite.size else 0.0))
    if f64_bound is not None:
        tol = np.maximum(tol, np.where(special, 0.0, f64_bound))
    bad = diff > tol
    if not bad.any():
        return None
    idx = np.unravel_index(np.argmax(diff - tol), diff.shape)
    return (f"{bad.sum()} of {bad.size} elements differ from numpy float64 beyond {REL:g} relative; "
            f"worst at {idx}: " + describe(idx, ollie=ref, numpy=want))


def rounded_mismatch(ref, want, roundoff):
    """None if `ref` and numpy's `want` (an output rounded to a 16-bit float of unit roundoff
    `roundoff`) are equal but for at most one spacing of that type (2 * roundoff * |value|)
    on a few elements, else why not."""
    ref = np.asarray(ref, np.float64)
    want = np.asarray(want, np.float64)
    special, why = _special_mismatch(ref, want, "numpy")
    if why:
        return why
    with np.errstate(invalid="ignore"):
        diff = np.where(special, 0.0, np.abs(ref - want))
    spacing = 2 * roundoff * np.maximum(np.abs(ref), np.abs(want))
    off = diff > 0
    if np.all(diff <= spacing) and off.sum() <= max(1, off.size // 50):
        return None
    idx = np.unravel_index(np.argmax(diff / np.maximum(spacing, 1e-300)), diff.shape)
    return (f"{off.sum()} of {off.size} elements differ from numpy (at most a few may, by one "
            f"spacing); worst at {idx}: " + describe(idx, ollie=ref, numpy=want))


def bound_violation(ref, bound, got):
    """None if `got` (a correct implementation, e.g. numpy in float32) lies within `bound`
    of `ref` on every element, else where it does not."""
    got = np.asarray(got, np.float64)
    special, why = _special_mismatch(ref, got, "got")
    if why:
        return why
    with np.errstate(invalid="ignore"):
        err = np.where(special, 0.0, np.abs(got - ref))
    bad = err > bound
    if not bad.any():
        return None
    idx = np.unravel_index(np.argmax(err / np.maximum(bound, 1e-300)), err.shape)
    return (f"bound too tight on {bad.sum()} of {bad.size} elements; worst at {idx}: "
            + describe(idx, got=got, ref=ref, bound=bound))
