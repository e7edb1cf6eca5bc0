"""`python -m airport_codegen generate|check`: the Makefile's generate and check targets."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .load import ContractError, load_contract
from .render import RenderError, diff_package, inputs_hash, render_package, write_package


def _paths(args: argparse.Namespace) -> tuple[Path, Path, Path, Path]:
    root = Path(args.root)
    return (
        root / "contracts.yaml",
        root / "templates",
        root / "proto" / "Flight.proto",
        Path(args.out) if args.out else root / "generated" / "airport_contracts",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="airport_codegen", description=__doc__)
    parser.add_argument("command", choices=["generate", "check"])
    parser.add_argument("--root", default=".", help="project root holding contracts.yaml")
    parser.add_argument(
        "--out", default="", help="target package folder (default generated/airport_contracts)"
    )
    args = parser.parse_args(argv)
    contract_path, templates, proto, out = _paths(args)
    try:
        contract = load_contract(contract_path)
    except ContractError as exc:
        print(f"contracts.yaml: {exc}", file=sys.stderr)
        return 2
    try:
        files = render_package(
            contract, templates, proto, inputs_hash(contract_path, templates, proto)
        )
    except RenderError as exc:
        print(f"templates: {exc}", file=sys.stderr)
        return 2
    if args.command == "generate":
        write_package(files, out)
        print(f"generated {len(files)} files into {out}")
        return 0
    problems = diff_package(files, out)
    if problems:
        print(
            f"{out} does not match contracts.yaml + templates (run `make generate`):",
            file=sys.stderr,
        )
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    print(f"{out} matches contracts.yaml + templates ({len(files)} files)")
    return 0
