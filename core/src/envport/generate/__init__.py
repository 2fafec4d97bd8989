"""``envport generate``: translate a reference module by module with a model, check each module
phase by phase (L1 tests, compose, L2, L3; at most T iterations per phase), feed the smallest
failing case back as a repair prompt that names the phase, record everything; replay a run,
resume an interrupted one in place. Generated code runs only in the sandbox (timeout, memory
limit, no secrets, a best-effort file-system jail)."""
