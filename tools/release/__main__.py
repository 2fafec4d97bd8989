"""``python -m tools.release build|publish|upload FOLDER... [options]`` (the nox sessions run it).

``build``: each package's sdist and wheel (from the sdist, offline) into ``--out``, checked.
``publish``: credentials first, then build and check every package, then refuse if the index
has any of their versions, then upload them in the order given (envport first).
``upload``: as ``publish`` with the files already built in ``--out`` (the release workflow's
publish job uploads what its build job made). ``check FILE...``: the checks alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tools.release import build, check, publish


def built_files(folder: Path, dist: Path) -> list[Path]:
    """The sdist and wheel(s) of the package in ``folder`` that ``dist`` holds."""
    name = check.normalize(build.distribution(folder))
    files = sorted(f for f in Path(dist).iterdir() if f.name.endswith((".whl", ".tar.gz"))
                   and check.parse_filename(f).name == name)
    if not any(f.name.endswith(".tar.gz") for f in files) or not any(
            f.name.endswith(".whl") for f in files):
        raise check.ReleaseError(f"{dist} lacks the sdist or the wheel of {name}: build first "
                                 "(./dev build-all)")
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.release", description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=("build", "publish", "upload", "check"))
    ap.add_argument("paths", nargs="+", type=Path,
                    help="package folders (build, publish) or distribution files (check)")
    ap.add_argument("--out", type=Path, default=Path("dist"), help="output folder (default: dist)")
    ap.add_argument("--index-url", default=publish.PYPI_UPLOAD,
                    help=f"upload URL of the index (default: {publish.PYPI_UPLOAD})")
    ap.add_argument("--simple-url", default=None,
                    help="its simple API, to refuse versions already there (default: derived)")
    ap.add_argument("--trusted-publishing", action="store_true",
                    help="authenticate with the CI's OIDC token (GitHub Actions)")
    args = ap.parse_args(argv)
    try:
        if args.command == "check":
            check.check_all(args.paths)
            return 0
        options = None
        if args.command in ("publish", "upload"):  # before building: no credentials, no upload
            options = publish.credentials(args.trusted_publishing)
        per_package = []
        for folder in args.paths:
            if args.command == "upload":
                files = built_files(folder, args.out)
            else:
                files = build.build(folder, args.out)
            per_package.append((files, check.check_all(files)))
        if args.command == "build":
            return 0
        simple = args.simple_url or publish.simple_url_for(args.index_url)
        publish.check_not_on_index([d for _, dists in per_package for d in dists], simple)
        for files, _ in per_package:
            publish.upload(files, args.index_url, options)
            print(f"[release] uploaded {', '.join(f.name for f in files)} to {args.index_url}",
                  flush=True)
    except check.ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
