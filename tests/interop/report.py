"""The parity table of the README: every scenario run against airport-go and pyairport, and
how their answers compare. `make interop` prints it after the interop tests.

    python -m tests.interop.report
"""

from __future__ import annotations

import logging

from .conftest import pyairport_server
from .gobuild import binaries, go_server
from .parity import EXPECTED, differing_steps, observe
from .scenarios import SCENARIOS


def main() -> None:
    logging.disable(logging.CRITICAL)  # the servers' own logs (tracebacks of refused input)
    binaries()
    print("| scenario | steps | pyairport vs airport-go |")
    print("|---|---|---|")
    unexpected = 0
    for name in SCENARIOS:
        go = observe(go_server, name)
        py = observe(pyairport_server, name)
        differ = differing_steps(go, py)
        expected = EXPECTED.get(name, {})
        if not differ:
            verdict = "identical"
        else:
            deviations = sorted({expected[s][0] for s in differ if s in expected})
            verdict = "differs as intended: " + ", ".join(f"`{d}`" for d in deviations)
            if differ - expected.keys():
                unexpected += 1
                verdict += f" — **unexpected in {sorted(differ - expected.keys())}**"
        print(f"| {name} | {len(go)} | {verdict} |")
    if unexpected:
        raise SystemExit(f"{unexpected} scenarios differ in ways no deviation explains")


if __name__ == "__main__":
    main()
