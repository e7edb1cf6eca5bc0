"""tools/import_cycles.py, the check `make lint` runs: it finds a circle however it is hidden
(inside a function, under TYPE_CHECKING), and the runtime has none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "import_cycles.py"


def run(*roots: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOL), *map(str, roots)], capture_output=True, text=True
    )


def test_a_circle_hidden_in_a_function_and_under_type_checking_is_found(tmp_path: Path) -> None:
    package = tmp_path / "shop"
    (package / "orders").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "orders" / "__init__.py").write_text("from .order import Order\n")
    (package / "orders" / "order.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..billing import Bill\n"
        "class Order: ...\n"
    )
    (package / "billing.py").write_text(
        "def bill():\n    from .orders.order import Order\n    return Order\n"
    )
    (package / "stock.py").write_text("from . import billing\n")

    found = run(package)

    assert found.returncode == 1
    assert "import circle: shop.billing, shop.orders.order" in found.stdout
    assert "shop.stock" not in found.stdout


def test_modules_that_import_each_other_one_way_pass(tmp_path: Path) -> None:
    package = tmp_path / "shop"
    package.mkdir()
    (package / "__init__.py").write_text("from .billing import bill\n")
    (package / "billing.py").write_text("from .stock import count\ndef bill(): return count\n")
    (package / "stock.py").write_text("count = 1\n")

    assert run(package).returncode == 0


def test_the_runtime_has_no_import_circle() -> None:
    found = run(ROOT / "runtime" / "pyairport")
    assert found.returncode == 0, found.stdout
