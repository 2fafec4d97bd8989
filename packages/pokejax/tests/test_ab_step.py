"""The A/B timing tool's helpers (``pokejax.tools.ab_step``): the other version's records are
rebuilt with its own classes, and fusions are counted from compiled HLO text."""

import types
from typing import NamedTuple

import pytest

from pokejax.tools import ab_step


class Inner(NamedTuple):
    a: int
    b: int


class Outer(NamedTuple):
    inner: Inner
    c: int


def test_convert_rebuilds_nested_namedtuples_with_the_other_versions_classes():
    class Inner2(NamedTuple):
        a: int
        b: int

    class Outer2(NamedTuple):
        inner: Inner2
        c: int

    other = types.SimpleNamespace(Inner=Inner2, Outer=Outer2)
    out = ab_step._convert(Outer(Inner(1, 2), 3), {__name__: other})
    assert type(out) is Outer2 and type(out.inner) is Inner2
    assert out == Outer2(Inner2(1, 2), 3)


def test_convert_names_a_class_the_other_version_lacks():
    with pytest.raises(AttributeError):
        ab_step._convert(Inner(1, 2), {__name__: types.SimpleNamespace()})


def test_fusions_counts_fused_computations_only():
    text = "\n".join(
        [
            "%fused_computation.1 (p: s32[4]) -> s32[4] {",
            "  %x = s32[4] add(p, p)",
            "}",
            "fused_computation.2 (p: s32[4]) -> s32[4] {",
            "}",
            "%region_0.3 (p: s32[4]) -> s32[4] {",
            "}",
            "ENTRY %main (p: s32[4]) -> s32[4] {",
            "  %fusion = s32[4] fusion(p), kind=kLoop, calls=%fused_computation.1",
            "}",
        ]
    )
    assert ab_step._fusions(text) == 2
