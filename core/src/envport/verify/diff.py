"""Field-by-field comparison of canonical states.

A canonical state is ``dict[str, np.ndarray]``; arrays are batch-leading (the first axis is
the env index), except 0-d arrays, which have no env axis (their differences are reported at
env 0, index ``()``).

How two arrays of one field are compared:

- **dtype first.** A dtype difference is a difference at every tolerance: a float32 candidate
  of a float64 reference, an int32 of a uint8 (where 256 would wrap to 0), a bool of an int are
  all reported as kind ``"dtype"``, and every element counts as unequal. Nothing is ever cast
  to the other side's dtype, because a cast can make different values equal; a port that
  needs another dtype casts explicitly in its backend.
- **Exact tolerance** (``atol == rtol == 0``): the raw bits of every element are compared, for
  any fixed-size dtype (bool, signed and unsigned ints, floats including float16, complex,
  fixed-width strings, void). So -0.0 != 0.0, NaNs with different payloads differ, and an
  identical NaN equals itself. Object (and variable-width string) arrays are refused with a
  TypeError: their elements are pointers, whose bits mean nothing.
- **Tolerance > 0** applies only to floating and complex fields. Integer, bool and all other
  fields are still compared exactly: a counter off by one is a bug, not rounding noise. A float
  element is equal iff ``numpy.isclose(candidate, reference, rtol=rtol, atol=atol,
  equal_nan=True)`` on float64 (complex128) copies, i.e. ``|cand - ref| <= atol + rtol*|ref|``
  (scaled by the reference, not the candidate); both NaN is equal, a NaN on one side only is
  unequal, and an inf equals only the same inf (also where ``atol + rtol*|ref|`` overflows to
  inf, which isclose alone would let through). A complex element is NaN if either component
  is.
- **Shapes** must be equal; ``(0, 3)`` vs ``(0, 4)`` is a shape difference. Empty arrays of
  equal shape and dtype are equal.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from envport.backend import CanonicalState
from envport.errors import EnvportError

_INF = math.inf
# dtype kinds whose elements are their bytes (no pointers): bool, ints, uints, floats, complex,
# datetimes, timedeltas, bytes, unicode, void
_FIXED_KINDS = frozenset("biufcmMSUV")
_NUMERIC_KINDS = frozenset("biufc")
_FLOAT_KINDS = frozenset("fc")


# -- tolerances ---------------------------------------------------------------------------------
def _is_real(x: object) -> bool:
    # bool is an int to Python, but Tolerance(True) is certainly a mistake
    return isinstance(x, numbers.Real) and not isinstance(x, bool | np.bool_)


def _checked(name: str, value: object) -> float:
    try:
        number = float(value) if _is_real(value) else math.nan
    except OverflowError:  # an int beyond float's range
        number = math.inf
    if not math.isfinite(number) or number < 0:
        raise EnvportError(f"Tolerance {name} must be a finite number >= 0, got {value!r} "
                           f"({type(value).__name__})")
    return number


@dataclass(frozen=True)
class Tolerance:
    """Where float fields may differ: ``|cand - ref| <= atol + rtol * |ref|`` elementwise.

    Only floating and complex fields use it; every other field is compared exactly."""

    atol: float = 0.0
    rtol: float = 0.0

    def __post_init__(self) -> None:
        for name in ("atol", "rtol"):
            # plain floats, so the tolerance goes into JSON as is (not a numpy scalar)
            object.__setattr__(self, name, _checked(name, getattr(self, name)))

    @property
    def exact(self) -> bool:
        return self.atol == 0 and self.rtol == 0


EXACT = Tolerance()
ToleranceSpec = float | Tolerance | Mapping[str, "float | Tolerance"]


def as_tolerance(x: float | Tolerance) -> Tolerance:
    """A number is an absolute tolerance; a Tolerance is taken as is."""
    if isinstance(x, Tolerance):
        return x
    if not _is_real(x):
        raise EnvportError(f"a tolerance must be a number >= 0 or a Tolerance(atol, rtol), got "
                           f"{x!r} ({type(x).__name__})")
    return Tolerance(atol=x)


def field_tolerances(spec: ToleranceSpec, fields: Iterable[str]) -> dict[str, Tolerance]:
    """Each field's tolerance; a mapping may only name fields that exist (a typo in a field
    name would otherwise silently leave that field exact, or worse, hide which was meant)."""
    fields = list(fields)
    if not isinstance(spec, Mapping):
        tol = as_tolerance(spec)
        return {name: tol for name in fields}
    unknown = sorted(set(spec) - set(fields), key=str)
    if unknown:
        raise EnvportError(f"tolerance given for unknown field(s) {unknown}; the state's fields "
                           f"are {sorted(fields)}")
    return {name: as_tolerance(spec[name]) if name in spec else EXACT for name in fields}


def tolerance_for(spec: ToleranceSpec, field: str) -> Tolerance:
    """One field's tolerance (a mapping without the field: exact); no check of unknown keys."""
    if isinstance(spec, Mapping):
        return as_tolerance(spec.get(field, EXACT))
    return as_tolerance(spec)


# -- elementwise comparison ---------------------------------------------------------------------
def _check_fixed_size(x: np.ndarray, what: str) -> None:
    if x.dtype.hasobject or x.dtype.kind not in _FIXED_KINDS:
        raise TypeError(f"{what} has dtype {x.dtype}: canonical states must hold fixed-size "
                        f"arrays (bool, numbers, fixed-width strings), whose bits are the value")


def _words(x: np.ndarray) -> np.ndarray:
    """The raw bits of each element as unsigned ints: shape ``x.shape``, or ``x.shape + (k,)``
    when the item is k words (complex128, strings, void)."""
    size = x.dtype.itemsize
    width = next(w for w in (8, 4, 2, 1) if size % w == 0)
    # views need contiguous memory; reshape(-1) also turns 0-d into 1-d for the view
    flat = np.ascontiguousarray(x).reshape(-1).view(np.dtype(f"u{width}"))
    words = size // width
    return flat.reshape(x.shape) if words == 1 else flat.reshape(*x.shape, words)


def _bits_unequal(ref: np.ndarray, cand: np.ndarray) -> np.ndarray:
    if ref.dtype.itemsize == 0:  # e.g. "S0": no bits, nothing can differ
        return np.zeros(ref.shape, bool)
    differs = _words(ref) != _words(cand)
    return differs.any(axis=-1) if differs.ndim > ref.ndim else differs


def _wide(x: np.ndarray, as_complex: bool = False) -> np.ndarray:
    """A float64 (complex128) copy, for arithmetic that loses nothing of the narrower floats."""
    wide = np.complex128 if as_complex or x.dtype.kind == "c" else np.float64
    with np.errstate(invalid="ignore"):  # a signaling NaN raises the flag as it is quieted
        return x.astype(wide)


def _close(ref: np.ndarray, cand: np.ndarray, tol: Tolerance) -> np.ndarray:
    r, c = _wide(ref), _wide(cand)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.asarray(np.isclose(c, r, rtol=tol.rtol, atol=tol.atol, equal_nan=True))
        # isclose lets an infinite candidate through when atol + rtol*|ref| overflows to inf
        # (rtol 2, ref 1e308); an inf is close only to the same inf
        close &= np.isfinite(c) | (c == r) | (np.isnan(c) & np.isnan(r))
    return close


def _prepare(reference, candidate, tolerance) -> tuple[np.ndarray, np.ndarray, Tolerance]:
    ref, cand = np.asarray(reference), np.asarray(candidate)
    _check_fixed_size(ref, "the reference")
    _check_fixed_size(cand, "the candidate")
    return ref, cand, as_tolerance(tolerance)


def _uses_tolerance(dtype: np.dtype, tol: Tolerance) -> bool:
    return not tol.exact and dtype.kind in _FLOAT_KINDS


def unequal(reference, candidate, tolerance: float | Tolerance = 0.0) -> np.ndarray:
    """bool array of the reference's shape: where the candidate differs (see the module doc).

    Shapes must be equal (ValueError otherwise); a dtype difference makes every element
    unequal."""
    ref, cand, tol = _prepare(reference, candidate, tolerance)
    if ref.shape != cand.shape:
        raise ValueError(f"unequal needs equal shapes: reference {ref.shape}, candidate "
                         f"{cand.shape}")
    if ref.dtype != cand.dtype:
        return np.ones(ref.shape, bool)
    if _uses_tolerance(ref.dtype, tol):
        return ~_close(ref, cand, tol)
    return _bits_unequal(ref, cand)


def _rows(x: np.ndarray) -> np.ndarray:
    # explicit row length: reshape(n, -1) is ambiguous when n == 0
    return x.reshape(len(x), math.prod(x.shape[1:]))


def _row_words(x: np.ndarray) -> np.ndarray:
    """Each row's raw bytes as the widest unsigned words that divide the row: comparing a
    uint8[144, 160, 4] frame as 11520 uint64 words instead of 92160 bytes."""
    row_bytes = x.dtype.itemsize * math.prod(x.shape[1:])
    width = next(w for w in (8, 4, 2, 1) if row_bytes % w == 0)
    flat = np.ascontiguousarray(x).reshape(-1).view(np.uint8).reshape(len(x), row_bytes)
    return flat.view(np.dtype(f"u{width}"))


def unequal_rows(reference, candidate, tolerance: float | Tolerance = 0.0) -> np.ndarray:
    """bool[len(reference)]: which rows (envs, or steps) differ anywhere. A dtype or shape
    difference makes every row differ."""
    ref, cand, tol = _prepare(reference, candidate, tolerance)
    if ref.ndim == 0:
        raise ValueError("unequal_rows needs a reference with a leading axis, got a 0-d array")
    n = len(ref)
    if ref.shape != cand.shape or ref.dtype != cand.dtype:
        return np.ones(n, bool)
    if _uses_tolerance(ref.dtype, tol):
        return ~_rows(_close(ref, cand, tol)).all(axis=1)
    if n == 0 or ref.dtype.itemsize * math.prod(ref.shape[1:]) == 0:
        return np.zeros(n, bool)
    return (_row_words(ref) != _row_words(cand)).any(axis=1)


# -- absolute error ---------------------------------------------------------------------------
def _real_err(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """|x - y| with the same inf counting as no error (inf - inf is NaN otherwise)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(x == y, 0.0, np.abs(x - y))


def _sign_magnitude(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(x < 0, |x| as uint64) of an integer array, exact for every int64 and uint64."""
    if x.dtype.kind != "i":
        return np.zeros(x.shape, bool), x.astype(np.uint64)
    signed = x.astype(np.int64)
    bits = signed.view(np.uint64)
    negative = signed < 0
    with np.errstate(over="ignore"):  # ~0 + 1 wraps, in the elements np.where drops
        return negative, np.where(negative, ~bits + np.uint64(1), bits)  # two's complement


def _int_err(ref: np.ndarray, cand: np.ndarray) -> float:
    """max |ref - cand| of two integer (or bool) arrays without going through float64, where
    2**56 vs 2**56 + 1 would be an error of 0."""
    size = max(ref.dtype.itemsize, cand.dtype.itemsize)
    if size <= 4:  # the difference of two k-bit ints fits a signed int of 2k bits
        diff = np.asarray(np.subtract(ref, cand, dtype=np.dtype(f"i{2 * size}")))  # 0-d: scalar
        return float(np.max(np.abs(diff, out=diff)))
    neg_r, mag_r = _sign_magnitude(ref)
    neg_c, mag_c = _sign_magnitude(cand)
    same_sign = (np.maximum(mag_r, mag_c) - np.minimum(mag_r, mag_c)).astype(np.float64)
    # opposite signs: |ref - cand| = |ref| + |cand|, which may not fit uint64 but has no
    # cancellation, so float64 loses nothing but rounding
    opposite = mag_r.astype(np.float64) + mag_c.astype(np.float64)
    return float(np.max(np.where(neg_r == neg_c, same_sign, opposite)))


def _abs_err(ref: np.ndarray, cand: np.ndarray) -> float:
    """max |ref - cand| of one numeric field: NaN if a NaN is on one side only; both NaN is no
    error; inf vs the same inf is none, vs anything else inf. Complex: the hypot of the
    errors of the components, so that inf+0j vs inf+1j is 1, not NaN. Integers: exact."""
    if ref.size == 0:
        return 0.0
    if ref.dtype.kind in "biu" and cand.dtype.kind in "biu":
        return _int_err(ref, cand)
    complex_ = ref.dtype.kind == "c" or cand.dtype.kind == "c"
    a, b = _wide(ref, complex_), _wide(cand, complex_)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    if np.any(nan_a ^ nan_b):
        return math.nan
    if complex_:
        err = np.hypot(_real_err(a.real, b.real), _real_err(a.imag, b.imag))
    else:
        err = _real_err(a, b)
    return float(np.max(np.where(nan_a & nan_b, 0.0, err)))


def _numeric_pair(ref: np.ndarray, cand: np.ndarray) -> bool:
    return (ref.shape == cand.shape and ref.dtype.kind in _NUMERIC_KINDS
            and cand.dtype.kind in _NUMERIC_KINDS)


def field_abs_errs(reference: CanonicalState, candidate: CanonicalState) -> dict[str, float]:
    """Per float or complex field present on both sides with equal shapes (what a tolerance
    applies to): :func:`_abs_err`, NaN when a NaN is on one side only."""
    out = {}
    for name in sorted(set(reference) & set(candidate)):
        r, c = np.asarray(reference[name]), np.asarray(candidate[name])
        if _numeric_pair(r, c) and (r.dtype.kind in "fc" or c.dtype.kind in "fc"):
            out[name] = _abs_err(r, c)
    return out


def max_abs_err(reference: CanonicalState, candidate: CanonicalState) -> float:
    """The largest |ref - cand| over the numeric fields present on both sides with equal shapes
    (dtypes may differ), computed in float64 / complex128 (integer pairs exactly, then rounded
    to float). A NaN on one side only makes the result NaN: it is the worst difference there
    is, and must not be skipped."""
    worst = 0.0
    for name, ref in reference.items():
        if name not in candidate:
            continue
        r, c = np.asarray(ref), np.asarray(candidate[name])
        if not _numeric_pair(r, c):
            continue
        err = _abs_err(r, c)
        if math.isnan(err):
            return math.nan
        worst = max(worst, err)
    return worst


# -- reports ------------------------------------------------------------------------------------
def _bits_hex(x: np.ndarray) -> str:
    """The bits of a 0-d float or complex array as hex; complex as the real part's digits
    followed by the imaginary part's."""
    x = x.astype(x.dtype.newbyteorder("="))  # the same digits on any machine
    parts = x.reshape(1).view(x.real.dtype)
    size = parts.dtype.itemsize
    return "0x" + "".join(f"{int.from_bytes(p.tobytes(), sys.byteorder):0{2 * size}x}"
                          for p in parts)


def _jsonable(x: Any) -> Any:
    if isinstance(x, bool | int | float | str) or x is None:
        return x
    if isinstance(x, complex):
        return [x.real, x.imag]
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    return repr(x) if isinstance(x, bytes) else str(x)  # bytes, datetimes, void items


@dataclass
class FieldDiff:
    """One field's difference: the first differing element for kind ``"value"``; otherwise
    ``"dtype"``, ``"shape"``, ``"missing"`` (in the candidate) or ``"extra"`` (only in the
    candidate), with a description of each side as ``reference``/``candidate``."""

    field: str
    kind: str
    env: int  # batch index of the first differing element (0 for other kinds, and for 0-d)
    index: tuple[int, ...]  # index inside that env's value
    reference: Any
    candidate: Any
    abs_err: float  # "value": max |ref - cand| over the field (NaN: one-sided NaN); else inf
    count: int = 1  # "value": how many elements differ
    bits: tuple[str, str] | None = None  # float "value": (reference bits, candidate bits) in hex

    def to_json(self) -> dict:
        out = {"field": self.field, "kind": self.kind, "env": int(self.env),
               "index": [int(i) for i in self.index],
               "reference": _jsonable(self.reference), "candidate": _jsonable(self.candidate),
               "abs_err": float(self.abs_err), "count": int(self.count)}
        if self.bits is not None:
            out["bits"] = list(self.bits)
        return out

    def __str__(self) -> str:
        if self.kind != "value":
            ref, cand = (self._description(v) for v in (self.reference, self.candidate))
            return f"{self.field}: {self.kind}: reference {ref}, candidate {cand}"
        where = f"{self.field}[env {self.env}]"
        if self.index:
            where += f"[{', '.join(str(i) for i in self.index)}]"
        text = f"{where}: reference {self.reference!r} != candidate {self.candidate!r}"
        if self.bits is not None and repr(self.reference) == repr(self.candidate):
            text += f" (bits {self.bits[0]} != {self.bits[1]})"  # e.g. two NaN payloads
        return text

    def _description(self, value: Any) -> str:
        # "dtype uint8" reads "x: dtype: reference uint8" without the repeated kind
        text = str(value)
        return text.removeprefix(f"{self.kind} ")


def _value_diff(name: str, ref: np.ndarray, cand: np.ndarray, differs: np.ndarray) -> FieldDiff:
    first = int(np.argmax(differs.reshape(-1)))
    where = np.unravel_index(first, ref.shape) if ref.ndim else ()
    env, index = (int(where[0]), tuple(int(i) for i in where[1:])) if ref.ndim else (0, ())
    r, c = ref[where], cand[where]
    numeric = ref.dtype.kind in _NUMERIC_KINDS
    bits = None
    if ref.dtype.kind in _FLOAT_KINDS:
        bits = (_bits_hex(np.asarray(r)), _bits_hex(np.asarray(c)))
    return FieldDiff(name, "value", env, index, r.item(), c.item(),
                     _abs_err(ref, cand) if numeric else _INF, int(np.count_nonzero(differs)),
                     bits)


def _field_diff(name: str, ref: np.ndarray, cand: np.ndarray, tol: Tolerance) -> FieldDiff | None:
    _check_fixed_size(ref, f"field {name!r} of the reference")
    _check_fixed_size(cand, f"field {name!r} of the candidate")
    if ref.shape != cand.shape:
        return FieldDiff(name, "shape", 0, (), f"shape {ref.shape}", f"shape {cand.shape}", _INF)
    if ref.dtype != cand.dtype:
        return FieldDiff(name, "dtype", 0, (), f"dtype {ref.dtype}", f"dtype {cand.dtype}", _INF)
    differs = unequal(ref, cand, tol)
    return _value_diff(name, ref, cand, differs) if differs.any() else None


def diff_states(reference: CanonicalState, candidate: CanonicalState,
                tolerance: ToleranceSpec = 0.0) -> list[FieldDiff]:
    """Every field that differs (the first differing element of each), in the reference's key
    order, then the fields only the candidate has (kind ``"extra"``). A mapping tolerance is
    looked up per field with :func:`tolerance_for`; unknown keys are the caller's to check
    (:func:`field_tolerances`)."""
    out: list[FieldDiff] = []
    for name, ref in reference.items():
        if name not in candidate:
            out.append(FieldDiff(name, "missing", 0, (), "present", "missing", _INF))
            continue
        diff = _field_diff(name, np.asarray(ref), np.asarray(candidate[name]),
                           tolerance_for(tolerance, name))
        if diff is not None:
            out.append(diff)
    out += [FieldDiff(name, "extra", 0, (), "missing", "present", _INF)
            for name in candidate if name not in reference]
    return out


def states_equal(reference: CanonicalState, candidate: CanonicalState,
                 tolerance: ToleranceSpec = 0.0) -> bool:
    return not diff_states(reference, candidate, tolerance)
