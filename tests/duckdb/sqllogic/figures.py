"""The Airport suite's figures from the JSON lines test_airport_suite.py appended
(AIRPORT_SUITE_RESULTS): files and records passed per backend and client, as markdown."""

from __future__ import annotations

import json
import sys
from collections import defaultdict


def main(path: str) -> int:
    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            result = json.loads(line)
            files_passed, files, passed, run = totals[result["backend"], result["client"]]
            totals[result["backend"], result["client"]] = [
                files_passed + (result["passed"] == result["run"]),
                files + 1,
                passed + result["passed"],
                run + result["run"],
            ]
    print("| backend | client | files passed | records passed |")
    print("|---|---|---|---|")
    for (backend, client), (files_passed, files, passed, run) in sorted(totals.items()):
        print(f"| {backend} | {client} | {files_passed} / {files} | {passed} / {run} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
