"""pyairport as an installed package: the wheel built from this checkout, installed with
[spark] into a fresh virtual environment outside the checkout, serves the memory backend and
Delta tables on Spark (the Delta jars fetched by Spark itself, no --jars-dir) and runs
`pyairport diff-upstream` and `python -m airport_codegen check` with the contract it carries.
Nothing from the checkout is on that environment's path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from airport_contracts.contract import RECORDED_DIFFERENCES

from .conftest import CHECKOUT, env_of, start_installed

pytestmark = pytest.mark.slow

# A client run with the installed package: INSERT two rows, then read them back.
CLIENT = """
import sys
import pyarrow as pa
from pyairport.client import AirportClient

with AirportClient(sys.argv[1]) as client:
    rows = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["Ann", "Bo"], "email": ["a", "b"]})
    assert client.insert("dml_schema", "users", rows).total_changed == 2
    scanned = client.scan("dml_schema", "users", ["id", "name"]).read_all()
    print(sorted(scanned.to_pylist(), key=lambda r: r["id"]))
"""


def _serve_and_insert(bin_dir: Path, work: Path, *serve_args: str) -> str:
    """Start `pyairport serve` from the installed package, INSERT through its client."""
    server, location, _ = start_installed(bin_dir, work, "--port", "0", *serve_args)
    try:
        done = subprocess.run(
            [str(bin_dir / "python"), "-c", CLIENT, location],
            cwd=work,
            env=env_of(bin_dir),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()
    finally:
        server.terminate()
        # read what it prints while it stops: a full pipe would hold its last print
        server.communicate(timeout=60)


def test_the_package_comes_from_the_environment_not_the_checkout(
    installed: tuple[Path, Path],
) -> None:
    bin_dir, work = installed
    done = subprocess.run(
        [
            str(bin_dir / "python"),
            "-c",
            "import airport_codegen, airport_contracts, pyairport;"
            "print(airport_codegen.__file__, airport_contracts.__file__, pyairport.__file__)",
        ],
        cwd=work,
        env=env_of(bin_dir),
        capture_output=True,
        text=True,
        check=True,
    )
    assert str(CHECKOUT) not in done.stdout
    assert done.stdout.count(str(bin_dir.parent)) == 3


def test_the_installed_package_serves_memory_tables(installed: tuple[Path, Path]) -> None:
    bin_dir, work = installed
    answer = _serve_and_insert(bin_dir, work, "--backend", "memory")
    assert answer == "[{'id': 1, 'name': 'Ann'}, {'id': 2, 'name': 'Bo'}]"


@pytest.mark.spark
def test_the_installed_package_serves_delta_tables_without_a_jars_folder(
    installed: tuple[Path, Path],
) -> None:
    """Spark fetches the Delta jars that match the installed delta-spark from Maven Central."""
    bin_dir, work = installed
    answer = _serve_and_insert(
        bin_dir,
        work,
        "--backend",
        "spark",
        "--spark-master",
        "local[2]",
        "--warehouse",
        str(work / "warehouse"),
        "--demo",
    )
    assert answer == "[{'id': 1, 'name': 'Ann'}, {'id': 2, 'name': 'Bo'}]"
    assert (work / "warehouse" / "dml_schema" / "users" / "_delta_log").is_dir()


def test_the_installed_package_carries_its_contract(installed: tuple[Path, Path]) -> None:
    """`python -m airport_codegen check` regenerates the installed airport_contracts from the
    contract and templates the wheel carries (with the generator's tools, [dev]: put on the
    path from a folder of their own, so the environment stays as pip left it)."""
    bin_dir, work = installed
    tools = work.parent / "generator-tools"
    subprocess.run(
        [
            str(bin_dir / "pip"),
            "install",
            "-q",
            "--target",
            str(tools),
            "grpcio-tools==1.85.1",
            "jinja2==3.1.6",
            "ruff==0.17.6",
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    done = subprocess.run(
        [str(bin_dir / "python"), "-m", "airport_codegen", "check"],
        cwd=work,
        env={**env_of(bin_dir), "PYTHONPATH": str(tools)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(str(bin_dir.parent)) and "matches contracts.yaml" in done.stdout


@pytest.mark.skipif(shutil.which("go") is None, reason="diff-upstream needs the Go toolchain")
def test_the_installed_package_diffs_against_upstream(plain: tuple[Path, Path]) -> None:
    """From a plain install (no extras, no dev tools) the tool reads the contract the wheel
    carries: no drift against the pinned version, only recorded differences, and the same
    report as the checkout's."""
    bin_dir, work = plain
    runs = [
        subprocess.run(
            [str(program), "diff-upstream"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        for program, cwd, env in (
            (bin_dir / "pyairport", work, env_of(bin_dir)),
            (Path(sys.executable).parent / "pyairport", CHECKOUT, dict(os.environ)),
        )
    ]
    installed_run, checkout_run = runs
    assert installed_run.returncode == 0, installed_run.stdout + installed_run.stderr
    recorded = len(RECORDED_DIFFERENCES)
    assert installed_run.stdout.splitlines()[-1].startswith(f"no drift ({recorded} recorded")
    assert installed_run.stdout.startswith("upstream: github.com/hugr-lab/airport-go@v0.2.1")
    assert (installed_run.returncode, installed_run.stdout) == (
        checkout_run.returncode,
        checkout_run.stdout,
    )
