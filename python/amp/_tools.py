"""The console scripts of an installed amp (``pip install .``): ``amp-run``,
``amp-compile``, ``amp-opt`` and ``amp-train`` run the tools the package
holds in ``amp/bin``."""

from __future__ import annotations

import os
import sys
from typing import NoReturn, Optional


def _find_tool(name: str) -> Optional[str]:
    """The path of tool ``name``: the package's own (an installed amp), else
    the build tree's ``bin`` beside ``build/python/amp``; None if neither."""
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "bin", name),
                      os.path.normpath(os.path.join(here, "..", "..", "bin", name))):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def _tool(name: str) -> str:
    """``_find_tool``, or exit 127 saying where it looked."""
    found = _find_tool(name)
    if found is None:
        here = os.path.dirname(os.path.abspath(__file__))
        sys.stderr.write(f"{name}: not found in the amp package ({here}/bin): reinstall amp "
                         "(pip install .)\n")
        sys.exit(127)
    return found


def _run(name: str) -> NoReturn:
    path = _tool(name)
    os.execv(path, [name] + sys.argv[1:])


def amp_run() -> NoReturn:
    """``amp-run``: compile and train a model (docs/UserGuide.md)."""
    _run("amp-run")


def amp_compile() -> NoReturn:
    """``amp-compile``: compile a model's step into an artifact."""
    _run("amp-compile")


def amp_opt() -> NoReturn:
    """``amp-opt``: mlir-opt with amp's dialect and passes."""
    _run("amp-opt")


def amp_train() -> NoReturn:
    """``amp-train``: train from a compiled artifact (no MLIR)."""
    _run("amp-train")
