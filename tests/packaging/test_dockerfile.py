"""The Dockerfile's steps, run here as the image runs them: its `make jars`, its `pip install`
of the wheel with [spark] into a fresh environment, its entry point `pyairport serve --config`
with deploy/pyairport.toml (paths moved under a temporary folder, ports chosen free on the
command line, as `docker run … pyairport --port …` would), its health check, and a client's
INSERT. Where a container engine answers, the image itself is built and run."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from .conftest import CHECKOUT, env_of, start_installed

pytestmark = [pytest.mark.slow, pytest.mark.spark]

DOCKERFILE = CHECKOUT / "Dockerfile"
CONFIG = CHECKOUT / "deploy" / "pyairport.toml"
IN_IMAGE = "/etc/pyairport/pyairport.toml"

CLIENT = """
import sys
import pyarrow as pa
from pyairport.client import AirportClient

with AirportClient(sys.argv[1]) as client:
    client.create_schema("sales")
    client.create_table("sales", "orders", pa.schema([("id", pa.int64()), ("item", pa.string())]))
    rows = pa.table({"id": pa.array([1, 2], pa.int64()), "item": ["tea", "jam"]})
    assert client.insert("sales", "orders", rows).total_changed == 2
    print(client.scan("sales", "orders", ["id", "item"]).read_all().num_rows)
"""


def _instructions() -> list[tuple[str, str]]:
    """(instruction, its arguments) of the Dockerfile's last stage, continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    steps = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            steps.append((word.upper(), rest.strip()))
    last = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[last:]


def _exec_form(arguments: str) -> list[str]:
    parsed: list[str] = json.loads(arguments)
    return parsed


def test_the_image_runs_serve_config_with_its_health_check() -> None:
    steps = dict(_instructions())
    assert _exec_form(steps["ENTRYPOINT"]) == ["pyairport", "serve", "--config", IN_IMAGE]
    health = steps["HEALTHCHECK"].split("CMD", 1)[1].strip()
    assert _exec_form(health) == ["pyairport", "health", "--config", IN_IMAGE]
    assert f"COPY deploy/pyairport.toml {IN_IMAGE}" in [
        f"COPY {a}" for w, a in _instructions() if w == "COPY"
    ]
    assert steps["USER"] == "pyairport"
    assert any(w == "RUN" and "[spark]" in a and "pip install" in a for w, a in _instructions())
    assert "make jars JARS=/jars" in DOCKERFILE.read_text()


def test_the_images_steps_serve_a_lake(installed: tuple[Path, Path], tmp_path: Path) -> None:
    bin_dir, _ = installed
    jars = tmp_path / "jars"
    subprocess.run(
        ["make", "-C", str(CHECKOUT), "jars", f"JARS={jars}"],
        check=True,
        capture_output=True,
        timeout=600,
    )
    assert sorted(p.name for p in jars.glob("*.jar")) == [
        "delta-spark_4.2_2.13-4.4.0.jar",
        "delta-storage-4.4.0.jar",
    ]
    config = tmp_path / "etc" / "pyairport.toml"
    config.parent.mkdir()
    text = CONFIG.read_text()
    text = text.replace('"/var/lib/pyairport/warehouse"', f'"{tmp_path / "warehouse"}"')
    text = text.replace('"/opt/pyairport/jars"', f'"{jars}"')
    text = text.replace('"local[*]"', '"local[2]"')
    config.write_text(text)
    server, location, seen = start_installed(
        bin_dir,
        tmp_path,
        *("--config", str(config), "--host", "127.0.0.1", "--port", "0", "--metrics-port", "0"),
        last_line="pyairport metrics on ",
    )
    try:
        metrics = seen[-1].split(" on ", 1)[1].strip()
        port = location.rsplit(":", 1)[1]
        health = subprocess.run(
            [str(bin_dir / "pyairport"), "health", "--config", str(config), "--port", port],
            env=env_of(bin_dir),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (health.returncode, health.stdout) == (0, "SERVING\n"), health.stderr
        done = subprocess.run(
            [str(bin_dir / "python"), "-c", CLIENT, location],
            cwd=tmp_path,
            env=env_of(bin_dir),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert (done.returncode, done.stdout) == (0, "2\n"), done.stderr
        scraped = urllib.request.urlopen(metrics).read().decode()
        assert (
            'pyairport_rows_written_total{catalog="",operation="insert",schema="sales",table="orders"} 2.0'
            in scraped
        )
    finally:
        server.terminate()
        server.communicate(timeout=60)  # read while it stops: a full pipe holds a print
    assert (tmp_path / "warehouse" / "sales" / "orders" / "_delta_log").is_dir()


def _engine() -> str | None:
    docker = shutil.which("docker")
    if docker is None:
        return "no docker command"
    info = subprocess.run([docker, "info"], capture_output=True, text=True, timeout=60)
    return None if info.returncode == 0 else "no container engine answers (docker info failed)"


@pytest.mark.skipif(_engine() is not None, reason=f"the image itself: {_engine()}")
def test_the_image_builds_and_is_healthy(tmp_path: Path) -> None:
    tag = "pyairport:test"
    subprocess.run(["docker", "build", "-t", tag, str(CHECKOUT)], check=True, timeout=3600)
    run = ["docker", "run", "-d", "-p", "127.0.0.1::8815", tag]
    container = subprocess.run(run, check=True, capture_output=True, text=True).stdout.strip()
    try:
        for _ in range(120):
            status = subprocess.run(
                ["docker", "inspect", "-f", "{{.State.Health.Status}}", container],
                capture_output=True,
                text=True,
            ).stdout.strip()
            if status in ("healthy", "unhealthy"):
                break
            subprocess.run(["sleep", "2"], check=True)
        assert status == "healthy", shlex.join(run)
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)
