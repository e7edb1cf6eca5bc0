"""Read the upstream Go source: fetch airport-go through the Go module proxy (or take a
checkout), and run the go/ast extractor in go/main.go over the packages the contract maps.

The extractor is built with the local Go toolchain into a cache folder keyed by its own
source hash, so after the first run a comparison takes well under a second.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

EXTRACTOR_SOURCE = Path(__file__).parent / "go"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pyairport"


class UpstreamError(RuntimeError):
    """The upstream source could not be read; the message is one line saying why."""


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise UpstreamError(
            "the Go toolchain (go) is not installed: it is needed to read the upstream Go source"
        )
    return go


def module_dir(module: str, ref: str) -> Path:
    """The module's source folder in the Go module cache (downloaded through the proxy)."""
    with tempfile.TemporaryDirectory() as scratch:  # outside any go.mod
        done = subprocess.run(
            [_go(), "mod", "download", "-json", f"{module}@{ref}"],
            cwd=scratch,
            capture_output=True,
            text=True,
            env={**os.environ, "GOFLAGS": "-mod=mod"},
            timeout=300,
        )
    try:
        info = json.loads(done.stdout)
    except json.JSONDecodeError:
        info = {}
    if info.get("Error") or not info.get("Dir"):
        reason = (
            info.get("Error")
            or done.stderr.strip().splitlines()[-1:]
            or ["no answer from go mod download"]
        )
        if isinstance(reason, list):
            reason = reason[0]
        reason = reason.splitlines()[0]
        raise UpstreamError(f"cannot download {module}@{ref}: {reason}")
    return Path(info["Dir"])


def _extractor() -> Path:
    source = sorted(EXTRACTOR_SOURCE.glob("*"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in source)).hexdigest()[:16]
    binary = CACHE / f"goextract-{digest}"
    if binary.exists():
        return binary
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as build:
        for path in source:
            shutil.copy(path, Path(build) / path.name)
        done = subprocess.run(
            [_go(), "build", "-o", str(binary), "."],
            cwd=build,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "GOFLAGS": "-mod=mod", "GOWORK": "off"},
        )
    if done.returncode != 0:
        raise UpstreamError(
            f"cannot build the Go extractor: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}"
        )
    return binary


def extract(root: Path, packages: list[str]) -> dict[str, Any]:
    """Declarations of each package folder under root, as goextract prints them."""
    if not root.is_dir():
        raise UpstreamError(f"{root} is not a folder")
    done = subprocess.run(
        [str(_extractor()), str(root), *packages], capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        detail = (
            done.stderr.strip().splitlines()[-1]
            if done.stderr.strip()
            else f"exit {done.returncode}"
        )
        raise UpstreamError(f"cannot parse the Go source in {root}: {detail}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result
