"""`python -m airport_codegen generate|check|diff-upstream`: the Makefile's targets."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .inputs import generated_package, inputs_root
from .load import ContractError, load_contract


def _paths(args: argparse.Namespace) -> tuple[Path, Path, Path, Path]:
    root = Path(args.root) if args.root else inputs_root()
    if args.out:
        out = Path(args.out)
    elif args.root:
        out = root / "generated" / "airport_contracts"
    else:
        out = generated_package()
    return root / "contracts.yaml", root / "templates", root / "proto" / "Flight.proto", out


def diff_upstream(argv: list[str] | None = None, prog: str = "diff-upstream") -> int:
    """Compare contracts.yaml with airport-go's source. Differences the contract records on
    purpose (recorded_differences: deviations, pyairport's additions) are not drift. Exit 0:
    no drift; 1: drift; 2: it could not run (no Go toolchain, unknown version, parse
    failure)."""
    from .diff import api_map, diff, packages_to_read, render_text, report
    from .goextract import UpstreamError, extract, module_dir

    parser = argparse.ArgumentParser(prog=prog, description=diff_upstream.__doc__)
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--ref",
        help="airport-go version to fetch through the Go module proxy (default: contracts.yaml's)",
    )
    source.add_argument("--path", help="read a checkout of airport-go instead")
    parser.add_argument("--format", choices=["text", "json"], default="text")
    parser.add_argument(
        "--all",
        action="store_true",
        help="list the differences contracts.yaml records on purpose too (deviations,"
        " pyairport's additions), each with why",
    )
    parser.add_argument(
        "--contract",
        default=None,
        help="the contract file (default: the checkout's or the installed package's)",
    )
    args = parser.parse_args(argv)
    try:
        contract_path = Path(args.contract) if args.contract else inputs_root() / "contracts.yaml"
        contract = load_contract(contract_path)
    except FileNotFoundError as exc:
        missing = f"{exc.filename} not found" if exc.filename else str(exc)
        print(f"{prog}: error: {missing}", file=sys.stderr)
        return 2
    except ContractError as exc:
        print(f"{prog}: error: contracts.yaml: {exc}", file=sys.stderr)
        return 2
    try:
        if args.path:
            root, label = Path(args.path), args.path
        else:
            ref = args.ref or contract.upstream_ref
            root, label = (
                module_dir(contract.upstream_module, ref),
                f"{contract.upstream_module}@{ref}",
            )
        upstream = extract(root, packages_to_read(contract))
    except UpstreamError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    rep = report(diff(contract, upstream), label, contract.recorded, api_map(contract, upstream))
    if args.format == "json":
        import json

        print(json.dumps(rep, indent=2, sort_keys=True))
    else:
        print(render_text(rep, show_recorded=args.all), end="")
    return 1 if rep["drift"] else 0


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["diff-upstream"]:
        return diff_upstream(argv[1:])
    parser = argparse.ArgumentParser(prog="airport_codegen", description=__doc__)
    parser.add_argument("command", choices=["generate", "check", "diff-upstream"])
    parser.add_argument(
        "--root",
        default="",
        help="folder holding contracts.yaml, templates/ and proto/ (default: the checkout, or"
        " the installed package's copy)",
    )
    parser.add_argument(
        "--out",
        default="",
        help="target package folder (default: ROOT/generated/airport_contracts with --root,"
        " else the airport_contracts package Python imports)",
    )
    args = parser.parse_args(argv)
    try:
        contract_path, templates, proto, out = _paths(args)
        contract = load_contract(contract_path)
    except FileNotFoundError as exc:
        print(f"airport_codegen: error: {exc}", file=sys.stderr)
        return 2
    except ContractError as exc:
        print(f"contracts.yaml: {exc}", file=sys.stderr)
        return 2
    # The renderer (jinja2, a dev tool) only for generate and check: diff-upstream runs
    # from a plain install.
    from .render import RenderError, diff_package, render_package, write_package

    try:
        files = render_package(contract, contract_path, templates, proto)
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
