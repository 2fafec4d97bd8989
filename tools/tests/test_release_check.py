"""tools.release refuses what must not reach an index: direct references, ``linux_*`` wheels,
non-abi3 extensions, missing README/URLs; a publish without credentials; a version the index
has. Synthetic distributions: no build, no network."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tools.release import check, publish

REPO = Path(__file__).resolve().parents[2]

GOOD_METADATA = """\
Metadata-Version: 2.4
Name: {name}
Version: {version}
Summary: a test package
License-Expression: MIT
Classifier: Programming Language :: Python :: 3
Project-URL: Repository, https://example.invalid/repo
Requires-Dist: numpy>=1.26
{extra}Description-Content-Type: text/markdown

# {name}

A readme.
"""


def make_wheel(tmp_path: Path, name="demo", version="0.1.0", tags="py3-none-any",
               extra="") -> Path:
    path = tmp_path / f"{name}-{version}-{tags}.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}/__init__.py", "")
        z.writestr(f"{name}-{version}.dist-info/METADATA",
                   GOOD_METADATA.format(name=name, version=version, extra=extra))
        z.writestr(f"{name}-{version}.dist-info/WHEEL", "Wheel-Version: 1.0\n")
        z.writestr(f"{name}-{version}.dist-info/RECORD", "")
    return path


def test_a_good_wheel_passes(tmp_path):
    [d] = check.check_metadata([make_wheel(tmp_path)])
    assert (d.name, d.version, d.tags) == ("demo", "0.1.0", ("py3", "none", "any"))


def test_a_direct_reference_is_refused(tmp_path):
    bad = make_wheel(tmp_path, extra="Requires-Dist: envport @ file:///root/.cache/uv/core\n")
    with pytest.raises(check.ReleaseError) as e:
        check.check_metadata([bad])
    msg = str(e.value)
    assert "nothing uploaded" in msg and "envport @ file:///root/.cache/uv/core" in msg
    assert "direct reference" in msg
    # a marker or extra after a plain requirement is not a direct reference
    assert check.direct_references(check.read_metadata(check.parse_filename(make_wheel(
        tmp_path, name="ok", extra='Requires-Dist: pyboy==2.8.1; extra == "reference"\n')))) == []


def test_a_linux_tag_and_a_non_abi3_extension_are_refused(tmp_path):
    linux = make_wheel(tmp_path, tags="cp311-abi3-linux_x86_64")
    with pytest.raises(check.ReleaseError, match=r"platform tag 'linux_x86_64'.*manylinux"):
        check.check_metadata([linux])
    cp311 = make_wheel(tmp_path, name="ext", tags="cp311-cp311-manylinux_2_28_x86_64")
    with pytest.raises(check.ReleaseError, match="must be abi3"):
        check.check_metadata([cp311])
    ok = make_wheel(tmp_path, name="ext2", tags="cp311-abi3-manylinux_2_28_x86_64")
    assert check.check_metadata([ok])


def test_metadata_must_match_the_file_and_describe_the_package(tmp_path):
    path = tmp_path / "demo-0.2.0-py3-none-any.whl"
    make_wheel(tmp_path).rename(path)  # metadata says 0.1.0
    with pytest.raises(check.ReleaseError, match="Version '0.1.0' is not the file's '0.2.0'"):
        check.check_metadata([path])
    bare = tmp_path / "bare-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(bare, "w") as z:
        z.writestr("bare-0.1.0.dist-info/METADATA",
                   "Metadata-Version: 2.4\nName: bare\nVersion: 0.1.0\n")
    with pytest.raises(check.ReleaseError) as e:
        check.check_metadata([bare])
    for missing in ("long description", "project URLs", "classifiers", "licence"):
        assert missing in str(e.value)


def test_the_cli_refuses_with_exit_2(tmp_path):
    bad = make_wheel(tmp_path, tags="py3-none-linux_x86_64")
    res = subprocess.run([sys.executable, "-m", "tools.release", "check", str(bad)], cwd=REPO,
                         capture_output=True, text=True)
    assert res.returncode == 2 and "linux_x86_64" in res.stderr


def test_no_credentials_no_upload():
    with pytest.raises(check.ReleaseError, match="no credentials.*UV_PUBLISH_TOKEN"):
        publish.credentials(False, environ={})
    with pytest.raises(check.ReleaseError, match="id-token: write"):
        publish.credentials(True, environ={"UV_PUBLISH_TOKEN": "x"})
    assert publish.credentials(False, environ={"UV_PUBLISH_TOKEN": "pypi-x"})
    assert publish.credentials(False, environ={"UV_PUBLISH_USERNAME": "u",
                                               "UV_PUBLISH_PASSWORD": "p"})
    assert publish.credentials(True, environ={"ACTIONS_ID_TOKEN_REQUEST_URL": "https://x"}) == [
        "--trusted-publishing", "always"]


def test_simple_url_of_an_index():
    assert publish.simple_url_for(publish.PYPI_UPLOAD) == "https://pypi.org/simple/"
    assert publish.simple_url_for("http://127.0.0.1:8080") == "http://127.0.0.1:8080/simple/"
    assert publish.simple_url_for("http://h/simple") == "http://h/simple/"


def test_a_version_on_the_index_is_refused(tmp_path, monkeypatch):
    listing = {"demo": ["demo-0.1.0-py3-none-any.whl", "demo-0.1.0.tar.gz"],
               "other": ["other-0.10.0.tar.gz"]}
    monkeypatch.setattr(publish, "files_on_index", lambda simple, name: listing.get(name, []))
    d = check.parse_filename(make_wheel(tmp_path))
    with pytest.raises(check.ReleaseError, match="demo 0.1.0 is already on"):
        publish.check_not_on_index([d], "http://index/simple/")
    # 0.1.0 is not 0.10.0, and an unknown project is free
    other = check.parse_filename(make_wheel(tmp_path, name="other"))
    new = check.parse_filename(make_wheel(tmp_path, name="fresh"))
    publish.check_not_on_index([other, new], "http://index/simple/")
