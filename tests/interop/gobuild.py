"""Building and running the Go side of the interop suite (tests/interop/go).

The programs are built once per content hash of the Go module (sources, go.mod, go.sum and
the Go version) into ~/.cache/pyairport/interop, so a second run starts at once. The Go
module proxy supplies airport-go and arrow-go at the versions go.sum pins.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MODULE = Path(__file__).parent / "go"
PROGRAMS = tuple(sorted(p.name for p in (MODULE / "cmd").iterdir() if p.is_dir()))
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pyairport" / "interop"


class GoUnavailable(RuntimeError):
    """No Go toolchain on PATH: the interop suite cannot run here."""


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise GoUnavailable("the Go toolchain (go) is not on PATH")
    return go


def _fingerprint(go: str) -> str:
    digest = hashlib.sha256()
    version = subprocess.run([go, "version"], capture_output=True, text=True, check=True)
    digest.update(version.stdout.encode())
    for path in sorted(MODULE.rglob("*")):
        if path.is_file() and (path.suffix == ".go" or path.name in ("go.mod", "go.sum")):
            digest.update(str(path.relative_to(MODULE)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


_lock = threading.Lock()


def binaries() -> dict[str, Path]:
    """{program: path}, building what the cache does not hold yet."""
    go = _go()
    with _lock:
        target = CACHE / _fingerprint(go)
        paths = {name: target / name for name in PROGRAMS}
        if all(p.exists() for p in paths.values()):
            return paths
        target.mkdir(parents=True, exist_ok=True)
        for name, path in paths.items():
            partial = path.with_suffix(".partial")
            result = subprocess.run(
                [go, "build", "-o", str(partial), f"./cmd/{name}"],
                cwd=MODULE,
                capture_output=True,
                text=True,
            )
            if result.returncode:
                raise RuntimeError(f"go build ./cmd/{name} failed:\n{result.stderr}")
            partial.rename(path)
        return paths


@contextmanager
def go_server(*args: str) -> Iterator[str]:
    """Run airport-go-server with the demo catalog; yields its grpc:// location."""
    process = subprocess.Popen(
        [str(binaries()["airport-go-server"]), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("listening on "):
            process.kill()
            raise RuntimeError(f"airport-go-server did not start: {line}{process.communicate()[1]}")
        yield line.removeprefix("listening on ").strip()
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
