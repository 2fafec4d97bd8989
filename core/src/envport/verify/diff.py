"""Field-by-field comparison of canonical states."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from envport.backend import CanonicalState


@dataclass
class FieldDiff:
    field: str
    env: int  # batch index of the first differing element
    index: tuple[int, ...]  # index inside that env's value
    reference: Any
    candidate: Any
    abs_err: float

    def to_json(self) -> dict:
        d = asdict(self)
        d["reference"], d["candidate"] = _jsonable(self.reference), _jsonable(self.candidate)
        return d

    def __str__(self) -> str:
        where = f"{self.field}[env {self.env}]" + (f"{list(self.index)}" if self.index else "")
        return f"{where}: reference {self.reference!r} != candidate {self.candidate!r}"


def _jsonable(x):
    x = np.asarray(x)
    return x.tolist() if x.dtype.kind != "f" else [float(v) for v in x.ravel()] if x.ndim else float(x)


def unequal(reference, candidate, tolerance: float = 0.0) -> np.ndarray:
    """Elementwise: where ``candidate`` differs from ``reference`` (cast to its dtype).

    ``tolerance`` 0 compares floats by their bits: -0.0 vs 0.0 is a real difference for a
    bit-exact port, and a NaN must equal an identical NaN. Otherwise an L∞ bound.
    """
    ref = np.asarray(reference)
    cand = np.asarray(candidate).astype(ref.dtype, copy=False)
    if tolerance:
        return np.abs(ref.astype(np.float64) - cand.astype(np.float64)) > tolerance
    if ref.dtype.kind == "f":
        bits = np.dtype(f"u{ref.itemsize}")
        ref, cand = ref.view(bits), cand.view(bits)
    return ref != cand


def unequal_rows(reference, candidate, tolerance: float = 0.0) -> np.ndarray:
    """bool[len(reference)]: which rows (envs, or steps) differ anywhere."""
    diff = unequal(reference, candidate, tolerance)
    return diff.reshape(len(diff), -1).any(axis=1)


def diff_states(
    reference: CanonicalState, candidate: CanonicalState, tolerance: float | dict[str, float] = 0.0
) -> list[FieldDiff]:
    """Every field that differs (first differing element of each), in the reference's order.

    ``tolerance`` 0 means bit-exact (floats compared by their bits); otherwise an L∞ bound,
    per field if a dict. A field missing on either side is itself a difference.
    """
    out: list[FieldDiff] = []
    for name in reference:
        if name not in candidate:
            out.append(FieldDiff(name, 0, (), "present", "missing", float("inf")))
            continue
        ref = np.asarray(reference[name])
        cand = np.asarray(candidate[name])
        if ref.shape != cand.shape:
            out.append(FieldDiff(name, 0, (), f"shape {ref.shape}", f"shape {cand.shape}", float("inf")))
            continue
        cand = cand.astype(ref.dtype, copy=False)
        tol = tolerance.get(name, 0.0) if isinstance(tolerance, dict) else tolerance
        differs = unequal(ref, cand, tol)
        if np.any(differs):
            flat = int(np.flatnonzero(np.ravel(differs))[0])
            idx = np.unravel_index(flat, ref.shape) if ref.ndim else ()
            err = float(np.max(np.abs(ref.astype(np.float64) - cand.astype(np.float64))))
            out.append(FieldDiff(name, int(idx[0]) if idx else 0, tuple(int(i) for i in idx[1:]),
                                 ref[idx].item() if ref.ndim else ref.item(),
                                 cand[idx].item() if cand.ndim else cand.item(), err))
    for name in candidate:
        if name not in reference:
            out.append(FieldDiff(name, 0, (), "missing", "present", float("inf")))
    return out


def max_abs_err(reference: CanonicalState, candidate: CanonicalState) -> float:
    err = 0.0
    for name, ref in reference.items():
        if name in candidate:
            ref = np.asarray(ref, np.float64)
            cand = np.asarray(candidate[name], np.float64)
            if ref.shape == cand.shape and ref.size:
                with np.errstate(invalid="ignore"):
                    e = np.nanmax(np.abs(ref - cand))
                err = max(err, float(e))
    return err
