"""The two DuckDB clients the extension's own suite runs with, each in the Python environment
its extension was built for: DuckDB 1.4.4 with the Airport extension's v1.4 line (this
checkout's .venv, `make duckdb-extension`) and DuckDB 1.5.5 with its main line, which also
sends the `airport-catalog` header (`make duckdb-extension-main`, a venv of its own)."""

from __future__ import annotations

import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SHARED = Path(os.environ.get("DUCKDB_AIRPORT", ROOT.parent / "shared" / "duckdb-airport"))


@dataclass(frozen=True)
class Client:
    name: str
    python: Path
    extension: Path
    extension_dir: Path | None
    tarball: str  # the extension's source, whose test/sql/*.test this client runs
    make_target: str

    def missing(self) -> str | None:
        """Why this client cannot run here, or None."""
        if not self.python.is_file():
            return f"no {self.python} (`make {self.make_target}`)"
        if not self.extension.is_file():
            return f"no {self.extension} (`make {self.make_target}`)"
        return None


def _site_packages(venv: Path) -> Path | None:
    found = sorted((venv / "lib").glob("python3*/site-packages"))
    return found[0] if found else None


def _v14() -> Client:
    venv = ROOT / ".venv"
    site = _site_packages(venv)
    return Client(
        "duckdb-1.4",
        venv / "bin" / "python",
        ROOT / ".cache" / "duckdb-airport" / "airport.duckdb_extension",
        site / "duckdb_ext" / "extensions" if site else None,  # httpfs, from duckdb-ext-httpfs
        "airport-v1.4-dc0cf5a.tar.gz",
        "duckdb-extension",
    )


def _main() -> Client:
    work = ROOT / ".cache" / "duckdb-airport-main"
    return Client(
        "duckdb-1.5",
        work / "venv" / "bin" / "python",
        work / "airport.duckdb_extension",
        work / "extensions",
        "airport-main-f52b27c.tar.gz",
        "duckdb-extension-main",
    )


CLIENTS = (_v14(), _main())


def suite_files(client: Client, into: Path) -> list[Path]:
    """The extension's test/sql/*.test of client's source, unpacked into `into`."""
    target = into / client.name
    if not target.is_dir():
        with tarfile.open(SHARED / client.tarball) as source:
            members = [
                m
                for m in source.getmembers()
                if m.isfile() and "/test/sql/" in m.name and m.name.endswith(".test")
            ]
            target.mkdir(parents=True)
            for member in members:
                extracted = source.extractfile(member)
                assert extracted is not None
                (target / Path(member.name).name).write_bytes(extracted.read())
    return sorted(target.glob("*.test"))


def suite_names() -> list[str]:
    """The suite's file names (from the v1.4 source: both lines ship the same files)."""
    if not (SHARED / CLIENTS[0].tarball).is_file():
        return []
    with tarfile.open(SHARED / CLIENTS[0].tarball) as source:
        return sorted(
            Path(m.name).name
            for m in source.getmembers()
            if "/test/sql/" in m.name and m.name.endswith(".test")
        )
