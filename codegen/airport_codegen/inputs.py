"""Where the generator's inputs and output are: in a checkout, its top folder and
generated/airport_contracts; in an installed wheel, the copy of the inputs the wheel carries
(airport_codegen/inputs/, see setup.py) and the installed airport_contracts package."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_PACKAGED = Path(__file__).parent / "inputs"
_CHECKOUT = Path(__file__).resolve().parents[2]


def inputs_root() -> Path:
    """The folder holding contracts.yaml, templates/ and proto/Flight.proto."""
    for root in (_PACKAGED, _CHECKOUT):
        if (root / "contracts.yaml").is_file():
            return root
    raise FileNotFoundError(
        f"contracts.yaml is neither in {_PACKAGED} (an installed wheel) nor in {_CHECKOUT}"
        " (a checkout)"
    )


def generated_package() -> Path:
    """The airport_contracts package this Python imports (found without importing it)."""
    spec = importlib.util.find_spec("airport_contracts")
    if spec is None or spec.origin is None:
        return inputs_root() / "generated" / "airport_contracts"
    return Path(spec.origin).parent
