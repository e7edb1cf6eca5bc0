"""bench/vs_go.py runs end to end against both servers (at a small size) and prints every
figure it promises; the figures themselves are for `make bench`, not for tests."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "vs_go.py"


def test_go_comparison_prints_every_figure(go_programs: dict[str, Path]) -> None:
    run = subprocess.run(
        [sys.executable, str(BENCH), "--rows", "20000", "--table-rows", "20000"]
        + ["--changed", "2000", "--repeats", "1"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    number = r"\d+\.\d\d"
    for schema in ("dml_schema", "batch_schema"):
        assert re.search(rf"{schema}\.users\s+airport-go\s+{number} M rows/s\s+pyairport", out)
    for interface in ("legacy", "batch"):
        for op in ("UPDATE", "DELETE"):
            for batch in ("65536", "2048"):
                shape = rf"{op} {interface}\s+{batch}-row batches"
                assert re.search(rf"{shape}\s+airport-go.*ratio\s+{number}", out)
                assert re.search(rf"{shape}, RETURNING lock-step\s+airport-go.*ratio", out)
                on_off = rf"{shape}\s+airport-go\s+{number}\s+pyairport\s+{number}$"
                assert re.search(on_off, out, re.MULTILINE)
