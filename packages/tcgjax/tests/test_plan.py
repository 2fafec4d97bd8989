"""The translation plan names files that exist, in dependency order."""

from tcgjax.plan import PACKAGE_DIR, PLAN


def test_plan_targets_tests_and_order():
    seen = set()
    for m in PLAN.modules:
        assert (PACKAGE_DIR / m.target).is_file(), m.target
        for t in m.tests:
            assert (PACKAGE_DIR / t).is_file(), t
        assert set(m.depends_on) <= seen, (m.name, m.depends_on)
        assert m.reference_sources(), m.name
        seen.add(m.name)
