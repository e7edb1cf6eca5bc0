"""The package as a user installs it: the wheel built from this checkout (from its sdist),
installed into fresh virtual environments outside the checkout, shared by the packaging
tests (one build and one install per run)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from the sdist: what a package index would get, and nothing written
    into the checkout."""
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(CHECKOUT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (built,) = dist.glob("pyairport-*.whl")
    return built


def _install(where: Path, requirement: str) -> tuple[Path, Path]:
    """A fresh environment with requirement installed: (its bin folder, a work folder)."""
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "-q", requirement],
        check=True,
        capture_output=True,
        timeout=900,
    )
    work = where / "work"
    work.mkdir()
    return venv / "bin", work


@pytest.fixture(scope="session")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """pip install 'pyairport[spark]': (the environment's bin folder, a work folder outside
    the checkout). Tests only read it; none installs anything into it."""
    return _install(tmp_path_factory.mktemp("installed"), f"{wheel}[spark]")


@pytest.fixture(scope="session")
def plain(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """pip install pyairport, without extras."""
    return _install(tmp_path_factory.mktemp("plain"), str(wheel))


def env_of(bin_dir: Path) -> dict[str, str]:
    """The installed environment alone: no PYTHONPATH, no checkout on sys.path, no jars."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYAIRPORT_JARS")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(bin_dir.parent)
    return env


SERVING = re.compile(r"pyairport serving on (grpc://\S+) ")


def start_installed(
    bin_dir: Path, cwd: Path, *serve_args: str, last_line: str = "pyairport serving on "
) -> tuple[subprocess.Popen[str], str, list[str]]:
    """`pyairport serve ARGS` from the installed environment, its output read up to the line
    that starts with last_line (Spark's start-up may log first): the process, the address it
    serves on, and the lines read."""
    server = subprocess.Popen(
        [str(bin_dir / "pyairport"), "serve", *serve_args],
        cwd=cwd,
        env=env_of(bin_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert server.stdout is not None
    lines: list[str] = []
    for line in server.stdout:
        lines.append(line)
        if line.startswith(last_line):
            break
    found = [m.group(1) for s in lines if (m := SERVING.match(s))]
    if not found or not lines[-1].startswith(last_line):
        server.kill()
        raise AssertionError("the server did not start:\n" + "".join(lines[-20:]))
    return server, found[0], lines
