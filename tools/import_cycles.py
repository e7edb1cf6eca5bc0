"""Fail when the modules of a package import each other in a circle.

Every import counts — at module level, inside functions and under TYPE_CHECKING — because an
import moved into a function or a type-checking block still ties the two modules together: it
only hides the circle from Python. A package's ``__init__`` is not an edge of its submodules
(importing ``a.b.c`` runs ``a/__init__`` first, but that is the package's front door, not a
dependency of ``c``'s design).

Usage: python tools/import_cycles.py runtime/pyairport [more package roots]
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(module: str, is_package: bool, tree: ast.AST) -> set[str]:
    """The absolute names one module's import statements name."""
    names: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names.add(prefix)
            names.update(f"{prefix}.{alias.name}" for alias in node.names)
    return names


def graph(roots: list[Path]) -> dict[str, set[str]]:
    sources: dict[str, tuple[bool, ast.AST]] = {}
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            sources[module_name(root, path)] = (
                path.name == "__init__.py",
                ast.parse(path.read_text(), str(path)),
            )
    edges: dict[str, set[str]] = {}
    for module, (is_package, tree) in sources.items():
        targets = set()
        for name in imported(module, is_package, tree):
            # `from a.b import c` names a.b.c, a submodule or an attribute of a.b: the longest
            # known module prefix is what it depends on.
            while name and name not in sources:
                name = name.rpartition(".")[0]
            if name and name != module and not module.startswith(name + "."):
                targets.add(name)
        edges[module] = targets
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def main(argv: list[str]) -> int:
    edges = graph([Path(arg) for arg in argv])
    circles = cycles(edges)
    for circle in circles:
        members = set(circle)
        print("import circle:", ", ".join(circle))
        for module in circle:
            inside = sorted(edges[module] & members)
            print(f"  {module} -> {', '.join(inside)}")
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["runtime/pyairport"]))
