"""Release tooling of the monorepo: build, check and publish each package (``python -m
tools.release``; the nox sessions ``build-<package>``, ``publish-<package>``, ``build-all``,
``publish-all`` run it). Generic: it knows package folders, never an env.

- :mod:`tools.release.build`: sdist, then the wheel built from the unpacked sdist alone, offline
  (a hatchling package through its PEP 517 backend; a maturin crate as an abi3 manylinux_2_28
  wheel with ``--zig``), cached by the package's content.
- :mod:`tools.release.check`: our metadata rules (no direct references, no ``linux_*`` tag,
  abi3, a README, project URLs, classifiers), ``twine check --strict``, ``auditwheel show``.
- :mod:`tools.release.publish`: credentials, "already on the index", ``uv publish``.
"""
