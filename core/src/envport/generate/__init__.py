"""``envport generate``: translate a reference module by module with a model, verify each step
with the hierarchy, feed the smallest failing case back as a repair prompt, record everything."""
