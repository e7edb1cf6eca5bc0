"""Run DuckDB's Airport client build (../shared/duckdb-airport/build.sh or build-main.sh) with
its sources compiled as a few translation units instead of one per file.

Each of the extension's 36 .cpp files includes DuckDB's and Arrow Flight's headers, and
parsing them is most of the file's compile (airport_take_flight.cpp: 13 s of 21 s at -O2).
Compiled one by one, the two clients took 516 s and 639 s side by side on 2 cores, most of
a clean clone's set-up; compiled as JOBS groups of files, each group one translation unit,
160–190 s each (5–6 CPU minutes for both, pip and link included): the same sources,
flags and link, the headers parsed once per group.

    duckdb_client_build.py run BUILD_SCRIPT     the script, with its compile step replaced
    duckdb_client_build.py compile SRC OBJ      that step: SRC/**/*.cpp into OBJ/unity-*.o

`run` copies the script with two changes: its folder (for its source tarball) is written in,
and the step that compiles each file is replaced by this file's `compile`. Every other step,
version and checksum stays the script's own. If that step is not found as expected (the
script changed), the script runs unchanged and says so.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

COMPILE_STEP = re.compile(
    r"^find src-airport/src -name '\*\.cpp' \| sort \|\n"
    r"  xargs -P\"\$JOBS\" [^\n]*\$NICE g\+\+ \$CXXFLAGS -c [^\n]*\n",
    re.M,
)
HERE = re.compile(r"^HERE=\$\(cd [^\n]*\n", re.M)


def run(script: Path) -> int:
    text = script.read_text()
    patched, steps = COMPILE_STEP.subn(lambda _: _compile_call(), text)
    here = f"HERE={shlex.quote(str(script.parent.resolve()))}\n"
    patched, heres = HERE.subn(lambda _: here, patched)
    if steps != 1 or heres != 1:
        print(
            f"{script.name}: its compile step is not as expected; running it unchanged", flush=True
        )
        return subprocess.call(["bash", str(script)])
    print(
        f"{script.name}: its sources compiled as a few translation units ({Path(__file__).name})",
        flush=True,
    )
    with tempfile.NamedTemporaryFile("w", suffix=f"-{script.name}") as copy:
        copy.write(patched)
        copy.flush()
        return subprocess.call(["bash", copy.name])


def _compile_call() -> str:
    return (
        f"{shlex.quote(sys.executable)} {shlex.quote(str(Path(__file__).resolve()))}"
        " compile src-airport/src obj\n"
    )


def compile_groups(sources: Path, objects: Path) -> int:
    """Deal the sorted files round-robin into JOBS groups and compile the groups at once."""
    files = sorted(sources.rglob("*.cpp"))
    jobs = max(1, int(os.environ.get("JOBS", "2")))
    groups = [files[i::jobs] for i in range(jobs) if files[i::jobs]]
    with ThreadPoolExecutor(len(groups)) as pool:
        made = list(pool.map(lambda i: _compile(str(i), groups[i], objects), range(len(groups))))
    if any(count < 0 for count in made):
        return 1
    print(f"   {len(files)} files in {sum(made)} translation units")
    return 0


def _compile(name: str, group: list[Path], objects: Path) -> int:
    """Compile group as one unit; if it does not compile as one (two files define the same
    file-local helper), compile its halves apart. Returns the units made, or -1."""
    unit = objects / f"unity-{name}.cpp"
    unit.write_text("".join(f'#include "{path.resolve()}"\n' for path in group))
    command = [*shlex.split(os.environ.get("NICE", "")), "g++"]
    command += [*shlex.split(os.environ["CXXFLAGS"]), "-c", str(unit)]
    command += ["-o", str(objects / f"unity-{name}.o")]
    compiled = subprocess.run(command, capture_output=True, text=True)
    unit.unlink()
    if compiled.returncode == 0:
        return 1
    if len(group) == 1:
        sys.stderr.write(compiled.stderr)
        return -1
    half = len(group) // 2
    parts = [
        _compile(name + side, part, objects)
        for side, part in (("a", group[:half]), ("b", group[half:]))
    ]
    return -1 if min(parts) < 0 else sum(parts)


def main(argv: list[str]) -> int:
    if argv[:1] == ["run"] and len(argv) == 2:
        return run(Path(argv[1]))
    if argv[:1] == ["compile"] and len(argv) == 3:
        return compile_groups(Path(argv[1]), Path(argv[2]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
