"""The comparator of canonical states (envport.verify.diff) cannot be fooled: property tests over
every numeric dtype and odd shapes (0-d, zero-length axes), and named cases for the traps (casts
that wrap, -0.0, NaN payloads, one-sided NaN under a tolerance, infinities)."""

from __future__ import annotations

import json
import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from envport.errors import EnvportError
from envport.verify.diff import (
    EXACT,
    FieldDiff,
    Tolerance,
    as_tolerance,
    diff_states,
    field_abs_errs,
    field_tolerances,
    max_abs_err,
    states_equal,
    tolerance_for,
    unequal,
    unequal_rows,
)

DTYPES = [np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                "uint32", "uint64", "float16", "float32", "float64", "complex64",
                                "complex128")]
FLOATS = [d for d in DTYPES if d.kind in "fc"]
INTEGERS = [d for d in DTYPES if d.kind in "biu"]
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
NONEMPTY = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4)
TOL = Tolerance(atol=1e-3, rtol=1e-3)
PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def f32(bits: int) -> np.ndarray:
    return np.array(bits, np.uint32).view(np.float32)


def cast(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    # NaN -> int and complex -> real warn; the test only needs some array of that dtype
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return a.astype(dtype)


def wide(a: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # a signaling NaN sets the flag as it is quieted
        return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


@st.composite
def arrays(draw, dtype: np.dtype | None = None, shape: tuple[int, ...] | None = None):
    """Either hypothesis's values (0, -0.0, NaN, inf, extremes) or arbitrary bits (every NaN
    payload, subnormals); bools only as real bools."""
    dtype = draw(st.sampled_from(DTYPES)) if dtype is None else dtype
    shape = draw(SHAPES) if shape is None else shape
    if dtype.kind == "b" or draw(st.booleans()):
        return draw(hnp.arrays(dtype, shape))
    n = math.prod(shape) * dtype.itemsize
    return np.frombuffer(draw(st.binary(min_size=n, max_size=n)), dtype).reshape(shape).copy()


POOL = [0.0, -0.0, 1.0, -1.0, 1.5, 2.0, 1.0000001, 100.0, 110.0, 1e-30, math.nan, math.inf,
        -math.inf]


@st.composite
def pool_arrays(draw, dtype: np.dtype, shape: tuple[int, ...]):
    """Values from a small pool, so pairs often sit on a tolerance's boundary."""
    def part():
        return draw(hnp.arrays(np.float64, shape, elements=st.sampled_from(POOL)))
    out = np.empty(shape, np.complex128 if dtype.kind == "c" else np.float64)
    if dtype.kind == "c":
        out.real, out.imag = part(), part()
    else:
        out[...] = part()
    return cast(out, dtype)


@st.composite
def nearby(draw, a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` with some elements redrawn (possibly to the same value), and perhaps
    another dtype or shape over the same bytes' worth of elements."""
    b = a.copy()
    if draw(st.booleans()):
        np.copyto(b, draw(arrays(a.dtype, a.shape)), where=draw(hnp.arrays(np.bool_, a.shape)))
    change = draw(st.sampled_from(["none", "none", "dtype", "shape"]))
    if change == "dtype":
        b = cast(b, draw(st.sampled_from(DTYPES)))
    elif change == "shape":
        b = draw(st.sampled_from([b.reshape(-1), b[None], b[..., None]]))
    return b


def flip_bit(a: np.ndarray, flat: int, bit: int) -> np.ndarray:
    if a.dtype.kind == "b":
        b = a.copy()
        b.flat[flat] = not a.flat[flat]
        return b
    raw = bytearray(a.tobytes())
    raw[flat * a.dtype.itemsize + bit // 8] ^= 1 << (bit % 8)
    return np.frombuffer(bytes(raw), a.dtype).reshape(a.shape).copy()


def simple_abs_err(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| by a loop over Python numbers: the definition, written the obvious way."""
    complex_ = "c" in (a.dtype.kind, b.dtype.kind)

    def isnan(z) -> bool:
        return math.isnan(z.real) or math.isnan(z.imag) if complex_ else math.isnan(z)

    def part_err(x: float, y: float) -> float:
        return 0.0 if x == y else abs(x - y)

    if a.dtype.kind in "biu" and b.dtype.kind in "biu":  # exactly, as Python ints
        pairs = zip(a.ravel().tolist(), b.ravel().tolist(), strict=True)
        return max((float(abs(int(x) - int(y))) for x, y in pairs), default=0.0)
    worst = 0.0
    for x, y in zip(a.ravel().tolist(), b.ravel().tolist(), strict=True):
        x, y = (complex(x), complex(y)) if complex_ else (float(x), float(y))
        if isnan(x) or isnan(y):
            if isnan(x) != isnan(y):
                return math.nan
            continue
        err = (math.hypot(part_err(x.real, y.real), part_err(x.imag, y.imag)) if complex_
               else part_err(x, y))
        worst = max(worst, err)
    return worst


def same_float(x: float, y: float) -> bool:
    return (math.isnan(x) and math.isnan(y)) or x == y or math.isclose(x, y, rel_tol=1e-12)


# -- properties -------------------------------------------------------------------------------
@PROPS
@given(arrays(), arrays(), st.sampled_from([0.0, TOL, 0.5, Tolerance(rtol=0.1)]))
def test_a_state_equals_its_copy(a, b, tol):
    state = {"a": a, "b": b}
    # a transposed copy, transposed back: same values in other memory, must still be equal
    copy = {"a": a.T.copy().T, "b": b.copy()}
    assert diff_states(state, copy, tol) == []
    assert states_equal(state, copy, tol)
    assert max_abs_err(state, copy) == 0.0
    assert unequal(a, copy["a"], tol).shape == a.shape
    assert not unequal(a, copy["a"], tol).any()


@PROPS
@given(st.data())
def test_exact_equal_iff_same_dtype_shape_and_bytes(data):
    a = data.draw(arrays())
    b = data.draw(nearby(a))
    same = a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    diffs = diff_states({"x": a}, {"x": b})
    assert (diffs == []) == same
    assert states_equal({"x": a}, {"x": b}) == same
    if a.shape == b.shape and a.size:
        assert unequal(a, b).any() == (not same)


@PROPS
@given(st.data())
def test_a_dtype_change_is_always_a_dtype_difference(data):
    a = data.draw(arrays())
    other = data.draw(st.sampled_from([d for d in DTYPES if d != a.dtype]))
    b = cast(a, other)
    for tol in (0.0, Tolerance(atol=1e9, rtol=1.0)):
        diffs = diff_states({"x": a}, {"x": b}, tol)
        assert [(d.kind, d.reference, d.candidate) for d in diffs] == [
            ("dtype", f"dtype {a.dtype}", f"dtype {other}")]
        assert unequal(a, b, tol).shape == a.shape and unequal(a, b, tol).all()
        if a.ndim:
            assert unequal_rows(a, b, tol).tolist() == [True] * len(a)


@PROPS
@given(st.data())
def test_one_changed_bit_is_found_where_it_is(data):
    a = data.draw(arrays(shape=data.draw(NONEMPTY)))
    flat = data.draw(st.integers(0, a.size - 1))
    b = flip_bit(a, flat, data.draw(st.integers(0, 8 * a.dtype.itemsize - 1)))
    where = np.unravel_index(flat, a.shape)
    (d,) = diff_states({"x": a}, {"x": b})
    assert (d.kind, d.count) == ("value", 1)
    assert (d.env, d.index) == ((int(where[0]), tuple(int(i) for i in where[1:])) if a.ndim
                                else (0, ()))
    assert np.flatnonzero(unequal(a, b)).tolist() == [flat]
    if a.ndim:
        assert np.flatnonzero(unequal_rows(a, b)).tolist() == [int(where[0])]
    if a.dtype.kind == "f":  # the reported bits are the elements' bits
        uint = np.dtype(f"u{a.dtype.itemsize}")
        assert [int(h, 16) for h in d.bits] == [int(a.view(uint)[where]), int(b.view(uint)[where])]


@PROPS
@given(st.data())
def test_a_tolerance_is_isclose_on_wide_copies(data):
    dtype = data.draw(st.sampled_from(FLOATS))
    shape = data.draw(SHAPES)
    a = data.draw(st.one_of(pool_arrays(dtype, shape), arrays(dtype, shape)))
    b = data.draw(pool_arrays(dtype, shape))
    number = st.one_of(st.sampled_from([0.0, 1e-7, 0.5, 1.0, 10.0]), st.floats(0, 2))
    atol, rtol = data.draw(number), data.draw(number)
    assume(atol or rtol)
    tol = Tolerance(atol, rtol)
    r, c = wide(a), wide(b)
    with np.errstate(all="ignore"):
        expected = ~np.isclose(c, r, rtol=rtol, atol=atol, equal_nan=True)
        # but an inf is never close to a finite reference, not even where atol + rtol*|ref|
        # overflows to inf and isclose would say so
        expected |= ~(np.isfinite(c) | (c == r) | (np.isnan(c) & np.isnan(r)))
    got = unequal(a, b, tol)
    assert got.shape == a.shape and np.array_equal(got, expected)
    if dtype.kind == "f":  # and the same, elementwise by hand

        def close(cand: float, ref: float) -> bool:
            if math.isnan(cand) or math.isnan(ref):
                return math.isnan(cand) and math.isnan(ref)
            if math.isinf(cand) or math.isinf(ref):
                return cand == ref
            return abs(cand - ref) <= atol + rtol * abs(ref)

        by_hand = [not close(c, r) for r, c in zip(a.ravel().tolist(), b.ravel().tolist(),
                                                      strict=True)]
        assert got.ravel().tolist() == by_hand
    diffs = diff_states({"x": a}, {"x": b}, tol)
    assert len(diffs) == int(expected.any())
    if diffs:
        first = np.unravel_index(int(np.flatnonzero(expected)[0]), shape)
        assert diffs[0].count == int(expected.sum())
        assert (diffs[0].env, diffs[0].index) == ((int(first[0]), tuple(map(int, first[1:])))
                                                  if shape else (0, ()))


@PROPS
@given(st.data())
def test_integers_and_bools_are_exact_even_with_a_tolerance(data):
    dtype = data.draw(st.sampled_from(INTEGERS))
    a = data.draw(arrays(dtype, data.draw(NONEMPTY)))
    flat = data.draw(st.integers(0, a.size - 1))
    b = flip_bit(a, flat, 0)  # the value changes by exactly 1
    for tol in (Tolerance(atol=1e6, rtol=1.0), 100.0):
        assert np.flatnonzero(unequal(a, b, tol)).tolist() == [flat]
        (d,) = diff_states({"x": a}, {"x": b}, {"x": tol})
        assert (d.kind, d.count, d.abs_err) == ("value", 1, 1.0)


@PROPS
@given(st.data())
def test_max_abs_err_is_the_simple_computation(data):
    shape = data.draw(SHAPES)
    a, b, c, e = (data.draw(arrays(shape=shape)) for _ in range(4))
    ref = {"x": a, "y": c, "skipped": np.zeros(2), "text": np.array(["a"])}
    cand = {"x": b, "y": e, "skipped": np.full(3, 1e9), "text": np.array(["b"])}
    errs = [simple_abs_err(a, b), simple_abs_err(c, e)]
    expected = math.nan if any(map(math.isnan, errs)) else max(errs)
    got = max_abs_err(ref, cand)
    assert same_float(got, expected)
    one_sided = any(np.any(np.isnan(wide(p)) ^ np.isnan(wide(q))) for p, q in ((a, b), (c, e)))
    assert math.isnan(got) == one_sided
    diffs = {d.field: d for d in diff_states({"x": a}, {"x": b})}
    if "x" in diffs and diffs["x"].kind == "value":  # a value diff reports the same error
        assert same_float(diffs["x"].abs_err, errs[0])


@PROPS
@given(st.data())
def test_unequal_rows_is_unequal_per_row(data):
    dtype = data.draw(st.sampled_from(DTYPES))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=4))
    a = data.draw(arrays(dtype, shape))
    b = a.copy()
    np.copyto(b, data.draw(arrays(dtype, shape)), where=data.draw(hnp.arrays(np.bool_, shape)))
    for tol in (0.0, Tolerance(0.5, 0.1)):
        rows = unequal(a, b, tol).reshape(len(a), math.prod(shape[1:])).any(axis=1)
        assert unequal_rows(a, b, tol).tolist() == rows.tolist()
        # views of other strides (reversed, every other row) give what their copies give
        for view in (np.s_[::-1], np.s_[::2]):
            assert np.array_equal(unequal_rows(a[view], b[view], tol),
                                  unequal_rows(a[view].copy(), b[view].copy(), tol))
            assert np.array_equal(unequal(a[view].T, b[view].T, tol),
                                  unequal(a[view], b[view], tol).T)


# -- named cases ------------------------------------------------------------------------------
def test_negative_zero_differs_exactly_not_with_a_tolerance():
    ref, cand = {"x": np.array([0.0, 1.0])}, {"x": np.array([-0.0, 1.0])}
    (d,) = diff_states(ref, cand)
    assert (d.env, d.reference, d.candidate) == (0, 0.0, -0.0)
    assert str(d) == "x[env 0]: reference 0.0 != candidate -0.0"
    assert d.to_json()["bits"] == ["0x0000000000000000", "0x8000000000000000"]
    for tol in (1e-9, Tolerance(rtol=1e-9)):
        assert diff_states(ref, cand, tol) == []


def test_nan_payloads_differ_exactly_and_say_so_in_bits():
    ref, cand = {"x": f32(0x7FC00000)}, {"x": f32(0x7FC00001)}
    (d,) = diff_states(ref, cand)
    assert d.kind == "value" and d.bits == ("0x7fc00000", "0x7fc00001")
    assert "0x7fc00000" in str(d) and "0x7fc00001" in str(d)  # "nan != nan" alone says nothing
    assert d.to_json()["bits"] == ["0x7fc00000", "0x7fc00001"]
    assert d.abs_err == 0.0  # both NaN: no numeric error, but still a difference
    assert diff_states(ref, ref) == []  # an identical NaN equals itself
    assert diff_states(ref, cand, 1e-6) == []  # with a tolerance, NaN equals NaN


def test_a_cast_that_would_wrap_is_a_dtype_difference():
    ref, cand = {"x": np.array([256], np.int32)}, {"x": np.array([0], np.uint8)}
    assert ref["x"].astype(np.uint8)[0] == cand["x"][0]  # the trap: a cast makes them equal
    (d,) = diff_states(ref, cand)
    assert str(d) == "x: dtype: reference int32, candidate uint8"
    assert (d.kind, d.env, d.index, d.abs_err) == ("dtype", 0, (), math.inf)
    assert unequal(ref["x"], cand["x"]).tolist() == [True]


def test_same_bits_of_another_signedness_is_a_dtype_difference():
    a, b = np.array([255], np.uint8), np.array([-1], np.int8)
    assert a.tobytes() == b.tobytes()  # the trap: comparing bits alone makes them equal
    assert [d.kind for d in diff_states({"x": a}, {"x": b})] == ["dtype"]
    assert unequal_rows(a, b).tolist() == [True]


def test_bool_vs_int_and_byte_order_are_dtype_differences():
    assert [d.kind for d in diff_states({"x": np.array([True])},
                                        {"x": np.array([1], np.uint8)})] == ["dtype"]
    big = np.array([1.5], np.dtype(">f8"))  # same value, other byte order
    assert [d.kind for d in diff_states({"x": np.array([1.5])}, {"x": big}, 1.0)] == ["dtype"]


def test_float32_candidate_of_float64_reference_is_a_dtype_difference_at_any_tolerance():
    ref, cand = {"x": np.array([0.5])}, {"x": np.array([0.5], np.float32)}
    assert [d.kind for d in diff_states(ref, cand, Tolerance(atol=1e9, rtol=1e9))] == ["dtype"]


def test_0d_arrays():
    ref, cand = {"x": np.array(1.0)}, {"x": np.array(2.0)}
    (d,) = diff_states(ref, cand)
    assert (d.env, d.index, d.abs_err, d.count) == (0, (), 1.0, 1)
    assert str(d) == "x[env 0]: reference 1.0 != candidate 2.0"
    assert unequal(ref["x"], cand["x"]).shape == ()
    assert diff_states(ref, cand, 1.0) == [] and max_abs_err(ref, cand) == 1.0
    assert [d.kind for d in diff_states({"x": np.array(3)}, {"x": np.array([3])})] == ["shape"]
    with pytest.raises(ValueError, match="0-d"):
        unequal_rows(ref["x"], cand["x"])


def test_empty_arrays():
    for shape in ((0,), (0, 3), (3, 0), (2, 0, 4)):
        e = np.zeros(shape, np.float32)
        assert diff_states({"x": e}, {"x": e.copy()}) == []
        assert diff_states({"x": e}, {"x": e.copy()}, 0.5) == []
        assert unequal_rows(e, e.copy()).tolist() == [False] * shape[0]
        assert unequal(e, e.copy()).shape == shape
    (d,) = diff_states({"x": np.zeros((0, 3))}, {"x": np.zeros((0, 4))})
    assert (d.kind, d.reference, d.candidate) == ("shape", "shape (0, 3)", "shape (0, 4)")
    assert max_abs_err({"x": np.zeros((0, 3)), "y": np.array([1.0])},
                       {"x": np.zeros((0, 3)), "y": np.array([1.25])}) == 0.25
    assert max_abs_err({}, {}) == 0.0


def test_a_nan_on_one_side_differs_even_with_a_tolerance():
    for ref, cand in (([1.0, math.nan], [1.0, 1.0]), ([1.0, 1.0], [1.0, math.nan])):
        r, c = {"x": np.array(ref)}, {"x": np.array(cand)}
        (d,) = diff_states(r, c, Tolerance(atol=1e6, rtol=1e6))
        assert (d.env, d.count) == (1, 1) and math.isnan(d.abs_err)
        assert math.isnan(max_abs_err(r, c))
    # NaN dominates a larger finite error elsewhere, in any field order
    r = {"a": np.array([0.0]), "b": np.array([math.nan]), "c": np.array([0.0])}
    c = {"a": np.array([1e300]), "b": np.array([0.0]), "c": np.array([math.inf])}
    assert math.isnan(max_abs_err(r, c))


def test_complex_nan_is_nan_in_either_component():
    a, b = np.array([complex(math.nan, 0)]), np.array([complex(0, math.nan)])
    assert unequal(a, b).tolist() == [True]  # other bits
    assert unequal(a, b, 0.5).tolist() == [False]  # both NaN
    assert max_abs_err({"x": a}, {"x": b}) == 0.0
    c = np.array([complex(1, math.nan)])
    assert unequal(c, np.array([1 + 0j]), 0.5).tolist() == [True]
    assert math.isnan(max_abs_err({"x": c}, {"x": np.array([1 + 0j])}))
    # hypot(nan, inf) is inf: the NaN must be found before the components are combined
    half = np.array([complex(math.nan, math.inf)])
    assert math.isnan(max_abs_err({"x": half}, {"x": np.array([complex(1, 5)])}))
    inf = np.array([complex(math.inf, 0)])
    assert max_abs_err({"x": inf}, {"x": np.array([complex(math.inf, 1)])}) == 1.0


def test_infinities():
    inf, ninf = np.array([math.inf]), np.array([-math.inf])
    big = np.array([1e308])
    # atol + rtol*|ref| overflows to inf here; an inf candidate must still differ
    assert unequal(big, inf, Tolerance(rtol=2.0)).tolist() == [True]
    assert unequal(big, -big, Tolerance(rtol=2.0)).tolist() == [False]  # 2e308 <= 2 * 1e308
    for tol in (0.0, Tolerance(atol=1e300, rtol=1e300)):
        assert diff_states({"x": inf}, {"x": inf.copy()}, tol) == []
        for other in (ninf, big):
            (d,) = diff_states({"x": inf}, {"x": other}, tol)
            assert d.abs_err == math.inf
            assert max_abs_err({"x": inf}, {"x": other}) == math.inf
    assert max_abs_err({"x": inf}, {"x": inf.copy()}) == 0.0
    assert max_abs_err({"x": big}, {"x": -big}) == math.inf  # overflow is an infinite error


def test_missing_and_extra_fields_in_order():
    ref = {"b": np.array([1]), "a": np.array([1]), "z": np.array([1])}
    cand = {"c": np.array([1]), "z": np.array([2]), "b": np.array([1])}
    diffs = diff_states(ref, cand)
    assert [(d.field, d.kind) for d in diffs] == [("a", "missing"), ("z", "value"),
                                                  ("c", "extra")]
    assert (diffs[0].reference, diffs[0].candidate) == ("present", "missing")
    assert (diffs[2].reference, diffs[2].candidate) == ("missing", "present")
    assert str(diffs[0]) == "a: missing: reference present, candidate missing"
    assert not states_equal(ref, cand) and states_equal(ref, dict(ref))


def test_shape_differences():
    a, b = np.zeros((2, 3)), np.zeros((3, 2))
    (d,) = diff_states({"x": a}, {"x": b})
    assert (d.kind, d.abs_err) == ("shape", math.inf)
    assert str(d) == "x: shape: reference (2, 3), candidate (3, 2)"
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(3, 2\)"):
        unequal(a, b)
    assert unequal_rows(a, b).tolist() == [True, True]
    assert unequal_rows(a, np.zeros((2, 4))).tolist() == [True, True]  # same first axis


def test_str_of_a_value_difference():
    d = FieldDiff("obs", "value", 3, (1, 2), 0.5, 0.25, 0.25)
    assert str(d) == "obs[env 3][1, 2]: reference 0.5 != candidate 0.25"
    ref = np.zeros((5, 2, 3))
    cand = ref.copy()
    cand[3, 1, 2], cand[4, 0, 0] = 0.25, -2.0
    (got,) = diff_states({"obs": ref}, {"obs": cand})
    assert (got.env, got.index, got.count, got.abs_err) == (3, (1, 2), 2, 2.0)
    assert str(got) == "obs[env 3][1, 2]: reference 0.0 != candidate 0.25"


def test_rtol_scales_with_the_reference_not_the_candidate():
    tol = Tolerance(rtol=0.1)
    # |110.5 - 100| = 10.5: over 0.1 * 100 (the reference), under 0.1 * 110.5
    assert unequal(np.array([100.0]), np.array([110.5]), tol).tolist() == [True]
    assert unequal(np.array([110.5]), np.array([100.0]), tol).tolist() == [False]
    assert unequal(np.array([100.0]), np.array([110.0]), tol).tolist() == [False]  # boundary


def test_atol_and_rtol_add_up():
    tol = Tolerance(atol=0.5, rtol=0.1)  # allowed at 10: 0.5 + 1.0
    assert unequal(np.full(2, 10.0), np.array([11.5, 11.6]), tol).tolist() == [False, True]


def test_per_field_tolerance_leaves_other_fields_exact():
    ref = {"a": np.array([1.0]), "b": np.array([1.0])}
    cand = {"a": np.array([1.25]), "b": np.array([1.25])}
    assert [d.field for d in diff_states(ref, cand, {"a": 0.5})] == ["b"]
    assert [d.field for d in diff_states(ref, cand, {"a": 0.5, "b": Tolerance(rtol=0.5)})] == []
    # an unknown key is not diff_states' business (callers check with field_tolerances)
    assert [d.field for d in diff_states(ref, cand, {"nope": 1.0})] == ["a", "b"]


def test_strings_void_and_structured_are_compared_by_bits():
    u = np.array(["ab", "cd"])
    assert [(d.index, d.env) for d in diff_states({"s": u}, {"s": np.array(["ab", "ce"])},
                                                  1e9)] == [((), 1)]
    assert diff_states({"s": u}, {"s": u.copy()}) == []
    rec = np.zeros(2, [("a", "i4"), ("b", "f8")])
    neg = rec.copy()
    neg["b"][1] = -0.0
    assert unequal(rec, neg).tolist() == [False, True]
    assert unequal(np.zeros(3, "V3"), np.zeros(3, "V3")).tolist() == [False] * 3
    (d,) = diff_states({"s": np.array([b"xy"])}, {"s": np.array([b"xz"])})
    assert json.dumps(d.to_json()) and math.isinf(d.abs_err)


def test_object_arrays_are_refused():
    obj = np.array([1, "a"], dtype=object)
    with pytest.raises(TypeError, match="fixed-size"):
        unequal(obj, obj)
    with pytest.raises(TypeError, match="fixed-size"):
        unequal_rows(obj, obj)
    with pytest.raises(TypeError, match="'x'"):
        diff_states({"x": obj}, {"x": obj})


def test_non_contiguous_inputs():
    a = np.arange(48.0).reshape(4, 12)[:, ::2]  # strided
    b = a.copy()
    b[2, 1] = -1.0
    assert np.flatnonzero(unequal(a, b)).tolist() == [13]
    assert unequal_rows(np.asfortranarray(a), b).tolist() == [False, False, True, False]
    (d,) = diff_states({"x": a}, {"x": np.asfortranarray(b)})
    assert (d.env, d.index) == (2, (1,))


def test_unequal_rows_on_a_frame_sized_chunk():
    frames = np.zeros((16, 144, 160, 4), np.uint8)
    other = frames.copy()
    other[11, -1, -1, -1] = 1  # the very last byte of row 11
    assert np.flatnonzero(unequal_rows(frames, other)).tolist() == [11]
    odd = np.zeros((4, 3), np.uint8)  # rows of 3 bytes: no wide words
    odd2 = odd.copy()
    odd2[1, 2] = 7
    assert unequal_rows(odd, odd2).tolist() == [False, True, False, False]


@pytest.mark.parametrize("bad", [-1.0, -1e-300, math.nan, math.inf, True, np.bool_(False),
                                 "0.1", None, 10**400])
def test_bad_tolerances_are_refused_naming_the_value(bad):
    for make in (lambda: Tolerance(atol=bad), lambda: Tolerance(rtol=bad),
                 lambda: as_tolerance(bad)):
        with pytest.raises(EnvportError, match=re.escape(repr(bad)[:6])):
            make()


def test_good_tolerances():
    assert as_tolerance(0.5) == Tolerance(atol=0.5) and not as_tolerance(0.5).exact
    t = Tolerance(1e-3, 1e-5)
    assert as_tolerance(t) is t
    assert as_tolerance(0) == EXACT and EXACT.exact and not Tolerance(rtol=1e-9).exact
    assert type(Tolerance(np.float32(1), 2).atol) is float and Tolerance(1, 2).rtol == 2.0


def test_field_tolerances():
    fields = ["obs", "a", "score"]
    assert field_tolerances(0.5, fields) == dict.fromkeys(fields, Tolerance(atol=0.5))
    t = Tolerance(rtol=0.1)
    assert field_tolerances({"obs": t, "a": 1.0}, iter(fields)) == {
        "obs": t, "a": Tolerance(atol=1.0), "score": EXACT}
    with pytest.raises(EnvportError, match=r"'obz'.*\['a', 'obs', 'score'\]"):
        field_tolerances({"obz": 0.1}, fields)
    with pytest.raises(EnvportError, match="-1"):
        field_tolerances({"obs": -1}, fields)


def test_tolerance_for():
    t = Tolerance(atol=2.0)
    assert tolerance_for({"x": t}, "x") is t
    assert tolerance_for({"x": t}, "y") == EXACT
    assert tolerance_for(0.25, "anything") == Tolerance(atol=0.25)
    with pytest.raises(EnvportError, match="'big'"):
        tolerance_for({"x": "big"}, "x")


def test_to_json_is_plain_json():
    ref = {"f": np.array([1.0, math.nan]), "c": np.array([1 + 2j]), "i": np.array([[1, 2]]),
           "b": np.array(True), "s": np.array(["ab"]), "gone": np.zeros(1),
           "dt": np.zeros(2, np.uint8), "sh": np.zeros(2)}
    cand = {"f": np.array([1.0, 0.0]), "c": np.array([1 + 3j]), "i": np.array([[1, 3]]),
            "b": np.array(False), "s": np.array(["ac"]), "new": np.zeros(1),
            "dt": np.zeros(2, np.int8), "sh": np.zeros(3)}
    diffs = diff_states(ref, cand)
    assert len(diffs) == 9
    for d in diffs:
        j = d.to_json()
        text = json.dumps(j)
        assert json.dumps(json.loads(text)) == text  # survives the round trip unchanged
        assert set(j) >= {"field", "kind", "env", "index", "reference", "candidate", "abs_err",
                          "count"}
    by = {d.field: d.to_json() for d in diffs}
    assert by["c"]["reference"] == [1.0, 2.0] and by["c"]["candidate"] == [1.0, 3.0]
    assert by["c"]["bits"] == ["0x3ff00000000000004000000000000000",
                               "0x3ff00000000000004008000000000000"]
    assert by["i"]["index"] == [1] and by["i"]["abs_err"] == 1.0 and "bits" not in by["i"]
    assert by["b"]["reference"] is True and by["dt"]["reference"] == "dtype uint8"
    assert math.isnan(by["f"]["abs_err"])


def test_field_abs_errs_measures_float_fields_as_max_abs_err_does():
    ref = {"x": np.array([1.0, np.inf, np.nan]), "y": np.array([0.5, 2.0], np.float32),
           "n": np.array([3, 4]), "only_ref": np.array([1.0])}
    cand = {"x": np.array([1.25, np.inf, np.nan]), "y": np.array([0.5, np.nan], np.float32),
            "n": np.array([3, 9])}
    errs = field_abs_errs(ref, cand)
    assert set(errs) == {"x", "y"}  # float fields on both sides; integers stay exact
    assert errs["x"] == 0.25  # inf vs the same inf and NaN vs NaN are no error
    assert math.isnan(errs["y"])  # a NaN on one side only
