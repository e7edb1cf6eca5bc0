"""The one thing pyproject.toml cannot say: the generator's inputs live at the top of the
checkout (contracts.yaml, templates/, proto/Flight.proto) and travel in the wheel as
airport_codegen/inputs/, so that `pyairport diff-upstream` and `python -m airport_codegen
check` work from an installed package. The checkout keeps the only copy."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent
INPUTS = [
    "contracts.yaml",
    *sorted(f"templates/{path.name}" for path in (ROOT / "templates").glob("*.j2")),
    "proto/Flight.proto",
]


class BuildWithContractInputs(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return  # an editable install reads them from the checkout
        target = Path(self.build_lib) / "airport_codegen" / "inputs"
        for name in INPUTS:
            self.mkpath(str((target / name).parent))
            self.copy_file(str(ROOT / name), str(target / name), preserve_mode=False)


setup(cmdclass={"build_py": BuildWithContractInputs})
