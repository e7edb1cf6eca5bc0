"""tools/duckdb_client_build.py, which `make` builds DuckDB's two clients with: the shared
build script's compile step runs as a few translation units, files that cannot share one
are compiled apart, a file that does not compile fails the build with the compiler's words,
and a script whose compile step changed runs as it is."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "duckdb_client_build.py"
SHARED = ROOT.parent / "shared" / "duckdb-airport"

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ here")

# The shared scripts' shape: their folder, the compile step as they write it, then a link.
SCRIPT = """\
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
JOBS=${JOBS:-2}
NICE="nice -n 19"
mkdir -p "$WORK" && cd "$WORK"
rm -rf obj src-airport && mkdir -p obj && cp -r "$HERE/src" src-airport
CXXFLAGS="-std=c++17 -O1 -fPIC"
export CXXFLAGS NICE
find src-airport/src -name '*.cpp' | sort |
  xargs -P"$JOBS" -I{} sh -c 'o=obj/$(echo "{}" | sed "s#^src-airport/src/##; s#/#_#g; s#\\.cpp\\$#.o#"); $NICE g++ $CXXFLAGS -c "{}" -o "$o"'
g++ -shared -o lib.so obj/*.o
echo "built $(ls obj | wc -l) objects"
"""


def _sources(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / "src" / "src" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "src" / "src" / name).write_text(text)


def _build(script: Path, work: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, WORK=str(work), JOBS="2")
    return subprocess.run(
        [sys.executable, str(TOOL), "run", str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_files_share_units_and_those_that_clash_are_compiled_apart(tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "build.sh").write_text(SCRIPT)
    helper = "static int helper() {{ return {0}; }}\nint {1}() {{ return helper(); }}\n"
    # b and d both define helper(), and the files dealt in turn put them in one unit
    _sources(
        scripts,
        {
            "a.cpp": "int a() { return 1; }\n",
            "b.cpp": helper.format(2, "b"),
            "c.cpp": "int c() { return 3; }\n",
            "d.cpp": helper.format(4, "d"),
            "e/f.cpp": "int f() { return 5; }\n",
        },
    )
    work = tmp_path / "work"
    built = _build(scripts / "build.sh", work)
    assert built.returncode == 0, built.stderr
    assert "build.sh: its sources compiled as a few translation units" in built.stdout
    assert "5 files in 3 translation units" in built.stdout
    assert sorted(p.name for p in (work / "obj").iterdir()) == [
        "unity-0.o",
        "unity-1a.o",
        "unity-1b.o",
    ]
    symbols = subprocess.run(["nm", "-D", str(work / "lib.so")], capture_output=True, text=True)
    for function in ("_Z1av", "_Z1bv", "_Z1cv", "_Z1dv", "_Z1fv"):
        assert function in symbols.stdout

    _sources(scripts, {"c.cpp": "int c() { return undeclared; }\n"})
    broken = _build(scripts / "build.sh", tmp_path / "broken")
    assert broken.returncode != 0
    assert "c.cpp" in broken.stderr and "undeclared" in broken.stderr


def test_a_script_whose_compile_step_changed_runs_as_it_is(tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "build.sh").write_text(SCRIPT.replace("| sort |", "| sort -r |"))
    _sources(scripts, {"a.cpp": "int a() { return 1; }\n", "b.cpp": "int b() { return 2; }\n"})
    built = _build(scripts / "build.sh", tmp_path / "work")
    assert built.returncode == 0, built.stderr
    assert "its compile step is not as expected; running it unchanged" in built.stdout
    assert "built 2 objects" in built.stdout


@pytest.mark.skipif(not SHARED.is_dir(), reason="no ../shared/duckdb-airport beside the checkout")
@pytest.mark.parametrize("script", ["build.sh", "build-main.sh"])
def test_the_shared_scripts_compile_step_is_the_one_replaced(script: str) -> None:
    """Else `make` would build the clients file by file again, in silence but for a line."""
    spec = importlib.util.spec_from_file_location("duckdb_client_build", TOOL)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    text = (SHARED / script).read_text()
    assert len(tool.COMPILE_STEP.findall(text)) == 1
    assert len(tool.HERE.findall(text)) == 1
