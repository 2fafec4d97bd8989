"""The index test: every package of the workspace published to a real package index on
127.0.0.1 (pypiserver) through the publish session's own code path (``./dev publish-all
--index-url <local>``), then each installed alone with pip in a fresh venv outside the
repository, from that index (PyPI for the rest: jax, numpy, ...), and smoke-tested
(``smoke.py``: ``envport list`` shows the env, reset + jitted steps of a JAX env, an emulator
stepped; ``envport verify emurust --levels L1`` with ROMs built from the wheel's sources into a
fresh user cache). Also the refusals against that index: no credentials, a version it already
has. The index is stopped at the end; no process is left behind.

Built distributions are cached by content (tools/release/build.py), so a run whose packages did
not change spends its minutes on the installs.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.request
from pathlib import Path

import pytest

from tools.release.check import normalize, parse_filename

REPO = Path(__file__).resolve().parents[2]
SMOKE = Path(__file__).with_name("smoke.py")
PYPI = "https://pypi.org/simple"
USER, PASSWORD = "envport-ci", "index-test-password"
# extra steps after the generic smoke, per distribution: what a user of that package does next
EXTRA = {
    "emurust": [
        # the PyBoy-compatible API on a ROM assembled from the wheel's own sources
        ["python", "-c",
         "from emurust.port import rom_path; from emurust import PyBoy\n"
         "pb = PyBoy(str(rom_path('cpu_alu'))); pb.tick(120, True)\n"
         "assert pb.frame_count == 120 and pb.screen.ndarray.shape == (144, 160, 4)\n"
         "pb.stop(save=False); print('ok: emurust.PyBoy ran cpu_alu.gb 120 frames')"],
        ["envport", "install-reference", "emurust"],
        # `envport verify` from the installed wheel (L1: emurust's backend checks; the exit
        # status says "not equivalent" as L2/L3 were not run, the report says L1 passed)
        ["python", "-c",
         "import json, subprocess\n"
         "subprocess.run(['envport', 'verify', 'emurust', '--levels', 'L1', '--no-progress',\n"
         "                '--out', '{tmp}'])\n"
         "l1 = json.load(open('{tmp}/emurust/verify.json'))['levels']['L1']\n"
         "assert l1['passed'] > 0 and l1['failed'] == 0, l1\n"
         "print('ok: envport verify emurust --levels L1:', l1)"],
    ],
}


def workspace_packages() -> dict[str, Path]:
    """Distribution name -> folder of every workspace member (what publish-all publishes)."""
    with open(REPO / "pyproject.toml", "rb") as f:
        members = tomllib.load(f)["tool"]["uv"]["workspace"]["members"]
    out = {}
    for pattern in members:
        for folder in sorted(glob.glob(str(REPO / pattern))):
            if (Path(folder) / "pyproject.toml").is_file():
                with open(Path(folder) / "pyproject.toml", "rb") as f:
                    out[normalize(tomllib.load(f)["project"]["name"])] = Path(folder)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def index(tmp_path):
    """A pypiserver on 127.0.0.1 with password-protected uploads; stopped at the end."""
    from passlib.apache import HtpasswdFile

    pkgs = tmp_path / "index-packages"
    pkgs.mkdir()
    htpasswd = HtpasswdFile(str(tmp_path / "htpasswd"), new=True)
    htpasswd.set_password(USER, PASSWORD)
    htpasswd.save()
    port = _free_port()
    log = open(tmp_path / "pypiserver.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pypiserver", "run", "--host", "127.0.0.1", "--port", str(port),
         "--passwords", str(tmp_path / "htpasswd"), "--authenticate", "update",
         "--disable-fallback", str(pkgs)], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/simple/", timeout=2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("pypiserver did not start: "
                                + (tmp_path / "pypiserver.log").read_text()[-2000:])
                time.sleep(0.3)
        yield url, pkgs
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)
        log.close()
        assert proc.poll() is not None, "the index must not outlive the test"


def _dev(args: list[str], env: dict, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "dev"), *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("UV_PUBLISH_", "NOX_", "VIRTUAL_ENV", "PIP_", "UV_PROJECT"))}
    return {**env, **extra}


def _uploaded(pkgs: Path) -> list[str]:
    return sorted(p.name for p in pkgs.iterdir())


def _venv_run(venv: Path, cmd: list[str], cwd: Path, env: dict, timeout: int = 900) -> str:
    exe = venv / "bin" / cmd[0]
    # as with the venv activated: its console scripts (envport) come first on PATH
    env = {**env, "PATH": os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])}
    res = subprocess.run([str(exe), *cmd[1:]], cwd=cwd, env=env, capture_output=True, text=True,
                         timeout=timeout)
    assert res.returncode == 0, f"{' '.join(cmd)} failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    return res.stdout


def test_publish_all_to_a_local_index_then_install_each_package_alone(index, tmp_path):
    url, pkgs = index
    packages = workspace_packages()

    # no credentials: refused before anything is built or uploaded
    refused = _dev(["publish-all", "--index-url", url], _clean_env(), timeout=600)
    assert refused.returncode != 0
    assert "no credentials" in refused.stdout + refused.stderr, refused.stdout[-3000:]
    assert _uploaded(pkgs) == []

    creds = _clean_env(UV_PUBLISH_USERNAME=USER, UV_PUBLISH_PASSWORD=PASSWORD)
    done = _dev(["publish-all", "--index-url", url], creds, timeout=3000)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    files = _uploaded(pkgs)
    dists = [parse_filename(Path(f)) for f in files]
    assert {d.name for d in dists} == set(packages), files  # every package, nothing else
    for name in packages:
        kinds = sorted(d.kind for d in dists if d.name == name)
        assert kinds == ["sdist", "wheel"], (name, files)
    for d in dists:
        if d.kind == "wheel" and d.tags[2] != "any":
            assert d.tags[1] == "abi3" and d.tags[2].startswith("manylinux"), d.path.name

    # the same versions again: refused, nothing new on the index
    again = _dev(["publish-envport", "--index-url", url], creds, timeout=600)
    assert again.returncode != 0 and "already on" in again.stdout + again.stderr
    assert _uploaded(pkgs) == files

    # each package alone, in a fresh venv outside the repository, from the index
    outside = tmp_path / "user"
    outside.mkdir()
    for name in packages:
        venv = outside / f"venv-{name}"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        env = _clean_env(ENVPORT_CACHE=str(outside / f"cache-{name}"),
                         PIP_DISABLE_PIP_VERSION_CHECK="1")
        _venv_run(venv, ["pip", "install", "--no-compile", "--index-url", f"{url}/simple",
                         "--extra-index-url", PYPI, name], outside, env)
        installed = _venv_run(venv, ["pip", "list", "--format=freeze"], outside, env)
        got = {normalize(line.split("==")[0]) for line in installed.splitlines()}
        assert "envport" in got and name in got
        # the core's lean dependencies: no LLM client, no plotting library
        assert not {"anthropic", "matplotlib"} & got, sorted(got)
        print(_venv_run(venv, ["python", str(SMOKE), name], outside, env))
        for cmd in EXTRA.get(name, []):
            print(_venv_run(venv, [c.replace("{tmp}", str(outside / "reports")) for c in cmd],
                            outside, env))
        shutil.rmtree(venv)  # a venv with jax is ~1 GB: one at a time
