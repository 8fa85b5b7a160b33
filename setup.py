"""Build hook: a wheel carries the checkout's pins in ``sgrgym/_home/`` (the files
``sgrgym.suite.setup.shipped_files`` lists), so ``sgrgym setup`` can fill a data home from it.
An editable install reads the checkout itself and gets none."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildPyWithPins(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        sys.path.insert(0, str(ROOT))
        from sgrgym.suite.setup import SHIPPED_DIR, shipped_files

        target = Path(self.build_lib) / "sgrgym" / SHIPPED_DIR
        for relative in shipped_files(ROOT):
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / relative, target / relative)


setup(cmdclass={"build_py": BuildPyWithPins})
