"""Reading a list of L1 CheckResults in tests: which failed, and why."""

from __future__ import annotations

from envport.verify.checks import CheckResult


def failed(results: list[CheckResult]) -> set[str]:
    return {r.name for r in results if not r.passed}


def detail(results: list[CheckResult], name: str) -> str:
    return next(r.detail for r in results if r.name == name)


def assert_only(results: list[CheckResult], name: str, *in_detail: str) -> None:
    """``name`` is the one failing check and its detail mentions each of ``in_detail``."""
    summary = "\n".join(f"{r.name}: {r.passed} {r.detail}" for r in results)
    assert failed(results) == {name}, summary
    for text in in_detail:
        assert text in detail(results, name), summary
